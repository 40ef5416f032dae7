"""How a multi-device value is laid out over its devices, read off the tensor graph. A MULTI node holds one piece per device, sharded
on an axis (the pieces joined along it) or replicated (every piece whole). Every node above it has a layout too: `shard_of` gives
(axis, per-device sizes on that axis) for a sharded value, None for a replicated or single-device one. The scheduler's multi pass
(tinygrad.schedule.multi) builds each device's piece to this layout, so the two must agree: both use the rules here."""
from __future__ import annotations
import itertools
from tinygrad.uop import Ops, GroupOp
from tinygrad.helpers import prod, sint_eq

def split_sizes(n:int, parts:int) -> tuple[int, ...]:
  """balanced split of n into `parts` sizes (the first n % parts get one more): 7 over 3 is (3, 2, 2), never a size 0"""
  return tuple(n // parts + (i < n % parts) for i in range(parts))

def bounds(sizes:tuple) -> list[tuple]:
  """(begin, end) of each piece along the shard axis"""
  offs = [0, *itertools.accumulate(sizes)]
  return list(zip(offs[:-1], offs[1:]))

def _same_shape(a:tuple, b:tuple, skip:int|None=None) -> bool:
  return len(a) == len(b) and all(sint_eq(x, y) for i, (x, y) in enumerate(zip(a, b)) if i != skip)

def multi_shape(u) -> tuple|None:
  from tinygrad.uop.ops import ssimplify
  if u.op is Ops.MSELECT:
    _, axis, (b, e) = u.arg
    ss = u.src[0].shape
    return ss if axis is None else tuple(ssimplify(e - b) if i == axis else s for i, s in enumerate(ss))
  if (ss := u.src[0]._shape) is None: return None  # a MULTI of stores
  if u.arg is None:
    if any(not _same_shape(s.shape, ss) for s in u.src): raise ValueError(f"replicated pieces differ in shape: {[s.shape for s in u.src]}")
    return ss
  if any(not _same_shape(s.shape, ss, skip=u.arg) for s in u.src):
    raise ValueError(f"pieces sharded on axis {u.arg} differ off that axis: {[s.shape for s in u.src]}")
  return tuple(ssimplify(sum(s.shape[u.arg] for s in u.src)) if i == u.arg else d for i, d in enumerate(ss))

def shard_of(u) -> tuple|None:
  """(axis, per-device sizes on it) of a sharded multi-device value; None when replicated or on one device"""
  if "_shard_c" not in u.__dict__:
    for x in u.toposort(lambda x: "_shard_c" not in x.__dict__):
      if "_shard_c" not in x.__dict__: x.__dict__["_shard_c"] = _infer_shard(x)
  return u.__dict__["_shard_c"]

def source_axis(out_axis:int, out_ndim:int, src_shape:tuple) -> int|None:
  """the implicit-broadcast rule: a source keeps its own rank and lines up with the output from the right, so the output's shard axis
  is the source's axis out_axis - (out_ndim - src_ndim); None where the source has no such axis or is broadcast along it (size 1):
  such a source stays whole on every device"""
  a = out_axis - (out_ndim - len(src_shape))
  return None if a < 0 or (isinstance(src_shape[a], int) and src_shape[a] == 1) else a

def reshape_shard(old:tuple, new:tuple, axis:int, sizes:tuple) -> tuple|None:
  """where a reshape takes a shard: each device's block of axis `axis` (a contiguous run of every row of the axes before it) must be a
  whole number of slices of one new axis after the same row prefix. (new axis, new sizes), or None when no axis can keep it"""
  outer, inner = prod(old[:axis]), prod(old[axis+1:])
  for a in range(len(new)):
    if not sint_eq(prod(new[:a]), outer): continue
    step = prod(new[a+1:])
    if sint_eq(step, inner) and sint_eq(new[a], old[axis]): return a, sizes
    if not all(isinstance(x, int) for x in (step, inner, new[a], *sizes)) or step == 0: continue
    if all(s * inner % step == 0 and s * inner // step > 0 for s in sizes) and sum(s * inner // step for s in sizes) == new[a]:
      return a, tuple(s * inner // step for s in sizes)
  return None

def _touches(u, axis:int) -> bool:
  """a PAD, SHRINK or FLIP that changes the shard axis (it needs every device's data)"""
  arg = u.marg
  if u.op is Ops.FLIP: return arg[axis]
  if u.op is Ops.PAD: return tuple(arg[axis]) != (0, 0)
  return tuple(arg[axis]) != (0, u.src[0].shape[axis])

def _infer_shard(u) -> tuple|None:
  if not isinstance(u.device, tuple): return None
  op = u.op
  if op is Ops.MULTI: return None if u.arg is None or u.src[0]._shape is None else (u.arg, tuple(s.shape[u.arg] for s in u.src))
  if op in (Ops.ALLREDUCE, Ops.MSELECT, Ops.CONST, Ops.BUFFER, Ops.COPY, Ops.DEVICE) or not u.src: return None
  if op in GroupOp.ALU:
    for s in u.src:
      if (sh := shard_of(s)) is not None: return (sh[0] + len(u.shape) - len(s.shape), sh[1])
    return None
  if (sh := shard_of(u.src[0])) is None: return None
  axis, sizes = sh
  if op is Ops.REDUCE_AXIS: return None if axis in u.arg[1] else sh
  if op is Ops.RESHAPE: return reshape_shard(u.src[0].shape, u.shape, axis, sizes)
  if op is Ops.PERMUTE: return (u.arg.index(axis), sizes)
  if op in (Ops.PAD, Ops.SHRINK, Ops.FLIP): return None if _touches(u, axis) else sh
  return sh  # EXPAND (never of the shard axis), casts, CONTIGUOUS, DETACH, AFTER, STORE
