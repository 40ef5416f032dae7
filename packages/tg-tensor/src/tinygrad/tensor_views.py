"""Which movement ops over memory torch makes views (an in-place write into the memory shows in them) and which copies (it does not):
the elements at non-negative strides are a view, as torch computes strides."""
from __future__ import annotations
from tinygrad.uop import Ops, GroupOp
from tinygrad.helpers import prod

def _reshaped_strides(old:tuple, strides:tuple, new:tuple) -> tuple|None:
  """strides that show the elements at `strides` (shape old) as shape new without moving them, as torch's view computes them; None
  where the new shape needs a copy (merging axes that are not laid out one after the other: a transposed or expanded axis)"""
  if prod(old) == 0 or not old: return tuple(prod(new[i+1:]) for i in range(len(new)))
  out, view_d, base_stride, numel, view_numel = [0] * len(new), len(new) - 1, strides[-1], 1, 1
  for d in range(len(old) - 1, -1, -1):
    numel *= old[d]
    # old[d-1:] is one run of memory (a chunk) unless the axis before breaks it: each chunk maps onto whole axes of the new shape
    if d == 0 or (old[d-1] != 1 and strides[d-1] != numel * base_stride):
      while view_d >= 0 and (view_numel < numel or new[view_d] == 1):
        out[view_d] = view_numel * base_stride
        view_numel *= new[view_d]
        view_d -= 1
      if view_numel != numel: return None
      if d > 0: base_stride, numel, view_numel = strides[d-1], 1, 1
  return tuple(out) if view_d == -1 else None

def _sliced_strides(pad, reshape, shrink, strides:tuple) -> tuple|None:
  """getitem's slice with steps (mixin/movement.py): each axis padded by step-1 at its end, split into (n, step) and cut to (n, 1), which
  keeps in-bounds elements only: strides (stride*step, stride) per axis; None for any other pad"""
  pairs = pad.marg
  steps = tuple(a + 1 for _, a in pairs)
  if any(b != 0 for b, _ in pairs) or any(p % s for p, s in zip(pad.shape, steps)): return None
  if reshape.op is not Ops.RESHAPE or reshape.shape != tuple(v for p, s in zip(pad.shape, steps) for v in (p // s, s)): return None
  if shrink.op is not Ops.SHRINK or shrink.marg != tuple(b for p, s in zip(pad.shape, steps) for b in ((0, p // s), (0, 1))): return None
  return tuple(v for st, s in zip(strides, steps) for v in (st * s, st))

def torch_view(u) -> bool:
  """u, movement ops over memory, is what torch makes a view: the elements at non-negative strides (a permute, an expand, a slice with
  steps, a reshape the strides allow). A flip, a pad and a reshape needing a copy (merging a transposed or expanded axis) are copies
  in torch: an in-place write into the memory after does not show in them"""
  chain = []
  while u.op in GroupOp.Movement: chain, u = chain + [u], u.src[0]
  shape = tuple(u.shape)
  if not all(isinstance(s, int) for v in chain for s in v.shape) or not all(isinstance(s, int) for s in shape): return True
  strides, i = tuple(prod(shape[d+1:]) for d in range(len(shape))), len(chain) - 1
  while i >= 0:
    v = chain[i]
    if v.op is Ops.PERMUTE: strides = tuple(strides[p] for p in v.arg)
    elif v.op is Ops.EXPAND: strides = tuple(0 if o != n else s for o, n, s in zip(shape, v.shape, strides))
    elif v.op is Ops.RESHAPE: strides = _reshaped_strides(shape, strides, v.shape)
    elif v.op is Ops.PAD:
      if i < 2: return False
      strides, i, v = _sliced_strides(v, chain[i-1], chain[i-2], strides), i - 2, chain[i-2]
    elif v.op is not Ops.SHRINK: return False  # a flip
    if strides is None: return False
    shape, i = tuple(v.shape), i - 1
  return True
