"""Views that are a run of a buffer's bytes: a slice of whole rows, a reshape, a bitcast of one. Such a node needs no kernel to become a
buffer: it is a view of its buffer's memory at a byte offset (Buffer.view), made by a "view" item of the schedule. A copy reads its source
that way (a row of a weight moved to another device, no gather kernel first), and a device that runs no kernels (DISK) holds every such
node as one."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.helpers import all_int, prod

# ops that never move a byte: the node is its source's bytes, read as another shape or dtype
_SAME_BYTES = frozenset({Ops.RESHAPE, Ops.CONTIGUOUS, Ops.DETACH, Ops.BITCAST})

def byte_range(u:UOp, realized:dict[UOp, UOp]) -> tuple[UOp, int]|None:
  """(the BUFFER u's elements lie in, in order, and the byte offset of the first), or None where they are not one run of it"""
  chain: list[UOp] = []
  while True:
    u = realized.get(u, u)
    if u.op is Ops.AFTER: u = u.src[0]
    elif u.op is Ops.BUFFER: break
    elif u.op in _SAME_BYTES or u.op in (Ops.SHRINK, Ops.PERMUTE, Ops.EXPAND, Ops.PAD, Ops.FLIP):
      chain.append(u)
      u = u.src[0]
    else: return None
  if not isinstance(u.arg.device, str): return None
  buf, shape, itemsize, offset = u, tuple(u.arg.shape), u.dtype.itemsize, 0
  for v in reversed(chain):
    if v._shape is None or not all_int(v.shape): return None
    if v.op is Ops.SHRINK:
      if (start := _run_start(shape, v.marg)) is None: return None
      offset += start * itemsize
    elif v.op not in _SAME_BYTES and not _no_move(v, shape): return None
    elif prod(v.shape) * v.dtype.itemsize != prod(shape) * itemsize: return None  # a bitcast that is no reinterpretation of these bytes
    shape, itemsize = tuple(v.shape), v.dtype.itemsize
  if not prod(shape): return (buf, 0) if itemsize <= buf.dtype.itemsize * buf.arg.shape[0] else None  # no bytes: one element's place
  return buf, offset

def _run_start(shape:tuple, bounds:tuple) -> int|None:
  """the first element (row-major) of a shrink of `shape` that is one run of elements, else None: every axis after the last one it
  cuts is whole, and every axis before that one is cut to a single index"""
  if not all_int([x for b in bounds for x in b]): return None
  cut = [i for i, (s, (b, e)) in enumerate(zip(shape, bounds)) if e - b != s]
  if cut and any(e - b != 1 for b, e in bounds[:cut[-1]]): return None
  start, stride = 0, 1
  for s, (b, _) in reversed(list(zip(shape, bounds))):
    start, stride = start + b * stride, stride * s
  return start

def _no_move(v:UOp, shape:tuple) -> bool:
  """a permute, expand, pad or flip that leaves every element where it was: it only moves, repeats or reverses axes of size 1"""
  if v.op is Ops.PERMUTE: return [a for a in v.arg if shape[a] != 1] == sorted(a for a in v.arg if shape[a] != 1)
  if v.op is Ops.EXPAND: return tuple(v.shape) == shape
  if v.op is Ops.PAD: return all(b == 0 and a == 0 for b, a in v.marg)
  return v.op is Ops.FLIP and all(shape[i] == 1 for i, f in enumerate(v.arg) if f)
