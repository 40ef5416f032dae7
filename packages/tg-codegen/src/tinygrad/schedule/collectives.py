"""Collectives over one piece per device, spelled in the graph's own nodes: COPY moves a piece between devices (the scheduler runs it
through the destination device's transfer path, or through the host) and ALU nodes combine pieces, so every kernel they need is an
ordinary kernel of the normal pipeline.

allreduce: every device gets the reduction of all pieces, either
  naive: each device copies every other piece and reduces them (n-1 full copies into each device), or
  ring:  reduce-scatter then allgather of n chunks around the ring (2(n-1)/n of a piece into each device, in 2(n-1) steps);
  ring pays off with more than two devices and big pieces: RING_ALLREDUCE_THRESHOLD (elements, default 65536) decides, RING=0/1 forces
  (both ContextVars: `with Context(RING=1):`)."""
from __future__ import annotations
import functools
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.uop.multi import split_sizes, bounds
from tinygrad.helpers import ContextVar, prod

RING, RING_ALLREDUCE_THRESHOLD = ContextVar("RING", -1), ContextVar("RING_ALLREDUCE_THRESHOLD", 65536)

def to_device(x:UOp, device:str) -> UOp: return x if x.device == device else x.copy_to_device(device)

def _combine(op:Ops, xs:list[UOp]) -> UOp: return functools.reduce(lambda a, b: a.alu(op, b), xs)

def allgather(pieces:list[UOp], axis:int, device:str) -> UOp:
  """the whole value on `device`: every piece copied there and joined along the shard axis"""
  parts = [to_device(p, device) for p in pieces]
  return parts[0].cat(*parts[1:], dim=axis)

def reduce_scatter(op:Ops, flat:list[UOp]) -> list[UOp]:
  """flat: one 1-d piece of n elements per device. Chunk c (of a balanced split in len(flat) chunks) reduced over every device, ending
  on device c: it starts on device c+1 and each step copies the partial result one device on round the ring and adds that device's chunk"""
  k, devs = len(flat), [p.device for p in flat]
  chunks = bounds(split_sizes(flat[0].shape[0], k))
  ret = []
  for c, (b, e) in enumerate(chunks):
    acc = flat[(c+1) % k].shrink(((b, e),))
    for step in range(2, k+1):
      d = (c + step) % k
      acc = to_device(acc, devs[d]).alu(op, flat[d].shrink(((b, e),)))
    ret.append(acc)
  return ret

def ring_allgather(chunks:list[UOp]) -> list[list[UOp]]:
  """chunk c lives on device c; each is passed on around the ring (c -> c+1 -> ...), so a device only ever copies from its neighbour.
  Returns, per device, every chunk on that device in chunk order"""
  k, devs = len(chunks), [c.device for c in chunks]
  have = [[None]*k for _ in range(k)]
  for c, chunk in enumerate(chunks):
    have[c][c] = cur = chunk
    for step in range(1, k):
      d = (c + step) % k
      have[d][c] = cur = to_device(cur, devs[d])
  return have

def _use_ring(pieces:list[UOp]) -> bool:
  n = prod(pieces[0].shape)
  if not isinstance(n, int) or n < len(pieces): return False  # every device needs a chunk of at least one element
  if RING.value >= 0: return bool(RING.value)
  return len(pieces) > 2 and n >= RING_ALLREDUCE_THRESHOLD.value

def allreduce(op:Ops, pieces:list[UOp]) -> list[UOp]:
  """each device's copy of op(piece_0, ..., piece_n-1), elementwise"""
  devs = [p.device for p in pieces]
  if not _use_ring(pieces): return [_combine(op, [to_device(p, d) for p in pieces]) for d in devs]
  shape = pieces[0].shape
  gathered = ring_allgather(reduce_scatter(op, [p.reshape((prod(shape),)) for p in pieces]))
  return [parts[0].cat(*parts[1:]).reshape(shape) for parts in gathered]
