"""OVERLAP: an output axis of size n that amt does not divide loops to `padded` (n rounded up to a multiple of amt) as PADTO does, but its
last block of amt starts amt before the axis's end instead of running past it: index i of the padded loop is element
`i - max(0, (i//amt)*amt + amt - n)`, so the last block overlaps the one before it and writes the elements they share again, with the
same values. Nothing is gated: where PADTO leaves the last block's loads clamped and its stores gated (a row of 28 in tiles of 16: its
second vector stored as 8 + 4 lanes, the loads and math of those lanes as two vectors too), every block is whole vectors (a depthwise 3x3
conv over rows of 28, b8 256x28x28 at 2 threads, the conv kernel's median: 0.60-0.62 -> 0.47-0.53 ms). Only where writing an element twice gives the same
result: no buffer the kernel stores to is also read by it (an accumulation into the output would add twice)."""
from __future__ import annotations
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp

def _buffer(idx:UOp) -> UOp:
  b = idx.src[0]
  while b.op is Ops.AFTER: b = b.src[0]
  return b

def overlap_refusal(ast:UOp, rng:UOp, amt:int) -> str|None:
  """why OVERLAP by amt does not fit the axis rng (None where it does)"""
  n = rng.src[0].arg
  if rng.arg[1] is not AxisType.LOOP: return f"OVERLAP shifts the last block of an output (LOOP) axis, the axis is {rng.arg[1].name}"
  if not 2 <= amt < n or n % amt == 0: return f"OVERLAP needs a block of 2 to {n-1} that does not divide the axis size {n}, got {amt}"
  access = [u for u in ast.toposort() if u.op in (Ops.LOAD, Ops.STORE) and u.src[0].op is Ops.INDEX]
  stored = {_buffer(u.src[0]) for u in access if u.op is Ops.STORE}
  if any(u.op is Ops.LOAD and _buffer(u.src[0]) in stored for u in access):
    return "OVERLAP writes some elements twice: the kernel reads a buffer it stores to"
  return None

def overlap_axis(ast:UOp, rng:UOp, amt:int) -> UOp:
  n = rng.src[0].arg
  new = rng.replace(src=(rng.src[0].const_like(-(-n // amt) * amt),))
  at = new - ((new // amt) * amt + (amt - n)).maximum(0)
  ast = ast.substitute({rng: new})
  # the loop runs over the padded range; what its body reads and writes is at the shifted index
  return ast.substitute({e: e.replace(src=(e.src[0].substitute({new: at}),) + e.src[1:]) for e in ast.toposort() if e.op is Ops.END and new in e.src[1:]})
