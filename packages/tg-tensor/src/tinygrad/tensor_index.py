"""Indexing with tensors, lists and boolean masks (numpy's advanced indexing), writing through an index (__setitem__), and
masked_select. Each tensor index is compared with an arange of its axis (a one-hot mask) and the mask selects by where and a sum,
so x[idx] is one lazy graph. A boolean mask becomes the positions of its True elements, which needs its values: it is realized."""
from __future__ import annotations
from typing import Any
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, broadcast_shape
from tinygrad.dtype import dtypes
from tinygrad.helpers import prod, all_int
from tinygrad.tensor_multi import is_multi_buffer

def _broadcast_shape(*shapes:tuple) -> tuple:
  nd = max((len(s) for s in shapes), default=0)
  out = []
  for sizes in zip(*[(1,)*(nd-len(s)) + tuple(s) for s in shapes]):
    # only the int 1 broadcasts: a symbolic size (a bound Variable's, a UOp) compared with != has no truth value
    if len(big := {s for s in sizes if not (isinstance(s, int) and s == 1)}) > 1:
      raise IndexError(f"index tensors of shapes {[tuple(s) for s in shapes]} don't broadcast together")
    out.append(big.pop() if big else 1)
  return tuple(out)

_WHOLE = slice(None)

def _has_no_elements(t) -> bool:
  # a symbolic size (a bound Variable's, at least 1) is a UOp with no truth value: only the int 0 is empty
  return isinstance(n := t.numel(), int) and n == 0

def _plain_view(view:UOp, of:UOp) -> bool:
  """view is of's elements through movement ops that give each its own place (no pad, no expand): a write through it lands in of.
  An index tensor's pick on an axis of size 1 is a computed graph that needs neither, whose write went to a buffer of its own"""
  while view is not of:
    if view.op not in GroupOp.Movement or view.op in (Ops.PAD, Ops.EXPAND): return False
    view = view.src[0]
  return True

def _is_array(i) -> bool:
  """a numpy array with axes: an index tensor, as in torch (a 0-d one is an int, numpy's __index__)"""
  return type(i).__name__ == "ndarray" and i.ndim > 0

class TensorIndexMixin:
  def _index_tensors(self, idx:tuple) -> tuple:
    """idx with lists as tensors, '...' spelled out as slices, and each boolean mask replaced by one int tensor per axis it covers"""
    from tinygrad.tensor import Tensor
    idx = tuple(Tensor(i, self.device) if isinstance(i, list) or _is_array(i) else i for i in idx)
    for i in idx:
      if isinstance(i, Tensor) and (dtypes.is_float(i.dtype) and not _has_no_elements(i)):
        raise IndexError(f"index tensors must be int or bool, got {i.dtype}")
      if isinstance(i, Tensor) and i.device != self.device:
        raise RuntimeError(f"an index tensor on {i.device} for a tensor on {self.device}: index and tensor must be on the same devices; "
                           f"move the index with .to({self.device!r}) (several devices: a copy on each)")
      if isinstance(i, Tensor) and i.dtype is dtypes.bool and not i.ndim:
        raise IndexError("a 0-d boolean index (x[Tensor(True)]) is not supported: x[None] adds the axis it would, x[None][:0] the empty one")
    width = sum(i.ndim if isinstance(i, Tensor) and i.dtype is dtypes.bool else 1 for i in idx if i is not None and i is not Ellipsis)
    if sum(i is Ellipsis for i in idx) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
    if width > self.ndim: raise IndexError(f"too many indices for a tensor of shape {tuple(self.shape)}: {width} given")
    fill = (slice(None),) * (self.ndim - width)
    idx = tuple(x for i in idx for x in (fill if i is Ellipsis else (i,))) + (() if any(i is Ellipsis for i in idx) else fill)
    out, dim = [], 0
    for i in idx:
      if isinstance(i, Tensor) and i.dtype is dtypes.bool:
        if tuple(i.shape) != tuple(self.shape[dim:dim+i.ndim]):
          raise IndexError(f"boolean mask of shape {tuple(i.shape)} doesn't match axes {dim}..{dim+i.ndim-1} of shape {tuple(self.shape)}")
        out.extend(i.nonzero().contiguous().realize().T)  # the True elements' coordinates, one index tensor per axis it covers
      elif isinstance(i, Tensor) and _has_no_elements(i): out.append(i.cast(dtypes.int32))  # Tensor([]) is float
      else: out.append(i)
      dim += 0 if i is None else i.ndim if isinstance(i, Tensor) and i.dtype is dtypes.bool else 1
    return tuple(out)

  def _getitem(self, idx:tuple):
    from tinygrad.tensor import Tensor, _handle
    if not any(isinstance(i, (Tensor, list)) or _is_array(i) for i in idx): return super()._getitem(idx)
    idx = self._index_tensors(idx)
    # the basic part first (tensor axes kept whole), noting where each tensor's axis lands in its result. The graph is built on the
    # nodes, wrapped in one handle at the end: a handle per step costs as much again as the step (x[ids] is ~15 of them)
    basic = tuple(slice(None) if isinstance(i, Tensor) else i for i in idx)
    x = (self if all([type(i) is slice and i == _WHOLE for i in basic]) else super()._getitem(basic)).uop  # an embedding's w[ids] has nothing to slice
    tdims, tensors, first, odim = [], [], None, 0
    # an int (or a symbolic position, a UOp) takes its axis away first, as in tinygrad and torch (numpy counts it as an advanced index):
    # x[1, :, ids] puts the ids' axes where ids stands, and only a slice or None between index tensors sends their axes to the front
    adv = [p for p, i in enumerate(idx) if isinstance(i, Tensor)]
    apart = any([not isinstance(i, (Tensor, int, UOp)) for i in idx[adv[0]:adv[-1]]])
    for p, i in enumerate(idx):
      if p == adv[0]: first = odim
      if isinstance(i, Tensor): tdims.append(odim); tensors.append(i.uop)
      if not isinstance(i, (int, UOp)): odim += 1
    sizes = [x.shape[d] for d in tdims]
    B = _broadcast_shape(*[t.shape for t in tensors])
    rest = [d for d in range(len(x.shape)) if d not in tdims]
    # one-hot over the indexed axes, flattened into one: (B..., N, 1 per rest axis) against x's (N, rest...). Leading axes of size 1 are
    # implicit (broadcasting is right-aligned): a single index tensor's mask is made in that layout and x is not reshaped (w[ids]: two
    # nodes fewer to build, schedule and replay on every call)
    lay = (1,)*len(rest) if (single := len(tensors) == 1) else ()
    mask = None
    for k, (t, n) in enumerate(zip(tensors, sizes)):
      t = (t < 0).where(t + n, t)
      hit = t.reshape(tuple(t.shape) + (1,)*len(sizes) + lay).eq(x._arange(n).reshape(tuple(n if j == k else 1 for j in range(len(sizes))) + lay))
      mask = hit if mask is None else mask & hit
    if tdims != list(range(len(tdims))): x = x.permute(tdims + rest)  # the indexed axes first (w[ids] has them there)
    if not single:
      N = prod(sizes)
      mask, x = mask.reshape(B + (N,) + (1,)*len(rest)), x.reshape((N,) + tuple(x.shape[len(sizes):]))
    ret = x._pick(mask, len(B))
    if apart or not first: return _handle(ret)  # index tensors apart: their axes go first
    return _handle(ret.permute(list(range(len(B), len(B) + first)) + list(range(len(B))) + list(range(len(B) + first, len(ret.shape)))))

  def __setitem__(self, indices, v:Any):
    """self[indices] = v writes into self's buffer (v broadcasts to the indexed shape and takes self's dtype). With tensor or list
    indices (or a step other than 1) the whole tensor is rewritten; where an index repeats a position the last write wins.
    A lazy self a gradient flows through takes the written value as its graph instead (torch's setitem on a non-leaf): the overwritten
    elements pass no gradient back, v's get it; written into a buffer, the path would be cut (a backward over it then raises)"""
    from tinygrad.tensor import Tensor, _share_with_views, _own_if_equal, _compute_device
    _own_if_equal(self)  # a value equal to another handle's, in its buffer: written in a copy of its own
    idx = indices if isinstance(indices, tuple) else (indices,)
    v = (v if isinstance(v, Tensor) else Tensor(v, _compute_device(self.device), self.dtype)).cast(self.dtype)
    # a one-device value written into a sharded tensor is copied to its devices first (tinygrad's t[1:4] = Tensor.ones(3, 4))
    if isinstance(self.device, tuple) and isinstance(v.device, str): v = v.to(self.device)
    if lazy := not (self.uop.base.op is Ops.BUFFER or is_multi_buffer(self.uop.base)):  # a view of a realized sharded tensor writes it too
      # writes go into a buffer: a lazy tensor gets its own first; a view of a lazy value, the one it shares with that value's handle
      if not (lazy := self._grad_flows() or v._grad_flows()) and not _share_with_views(self): self.realize()
      elif lazy and self.uop is not self.uop.base:
        raise NotImplementedError(f"setitem into a view of a {tuple(self.uop.base.shape)} value a gradient flows through: the write would not "
                                  f"reach the value; index the value itself (x[...] = v), or detach() it")
    if len(idx) == 1 and isinstance(m := idx[0], Tensor) and m.dtype is dtypes.bool and m.device == self.device and \
       tuple(m.shape) == tuple(self.shape) and v.numel() == 1 and all_int(self.shape):
      # x[x > 0] = 0, the usual mask write: one where over x, no positions to find
      written = m.where(v.reshape(()), self)
      if lazy: self.replace(written)
      else: self._assign(written, value_private=True)
      return
    view = self._getitem(idx)
    try: v = v.expand(view.shape)
    except ValueError: raise ValueError(f"cannot assign a value of shape {tuple(v.shape)} to the indexed shape {tuple(view.shape)}") from None
    if not lazy and _plain_view(view.uop, self.uop):
      view.assign(v)
      return
    if not all_int(self.shape): raise ValueError(f"setitem through tensor indices or steps needs a concrete shape, got {self.shape}")
    # each written element's flat position, one-hot against every position of self; counted from 1, so an index tensor's value out of
    # range (whose pick reads 0) is -1 here and writes nowhere (it wrote element 0)
    pos = (self._arange(self.numel()) + 1).reshape(self.shape)._getitem(idx).flatten() - 1
    last = self._last_write(pos._one_hot_at(self.numel(), 1), 0)
    written = last.ge(0).reshape(self.shape).where(v.flatten().gather(0, last.maximum(0)).reshape(self.shape), self)
    if lazy: self.replace(written)
    else: self._assign(written, value_private=True)

  def _compacted(self, size:int|None, what:str):
    """the flat positions of the nonzero elements of self in row-major order, (size,) int32, -1 past the last one. size=None counts them
    (a realize), so the result's shape is the count. Each element's rank among them (a cumsum) is where a scatter puts its position: one
    pass over the elements (codegen/onehot_scatter.py), where picking the r-th one for every r compared each element with every slot"""
    nz = (self != 0).flatten()
    if size is None: size = int(nz.sum().item())
    elif not isinstance(size, int) or size < 0: raise ValueError(f"{what} size must be an int >= 0, got {size!r}")
    rank = nz.where(nz.cast(dtypes.int32).cumsum() - 1, -1)  # -1 (no slot) for a zero, and a rank past size names none either
    return rank._scalar_like(-1).reshape((1,)).expand((size,)).scatter(0, rank, self._arange(nz.shape[0], dtypes.int32))
  def nonzero(self, size:int|None=None, fill_value=0):
    """(count, ndim) int32 coordinates of the nonzero elements in row-major order; size fixes the count (padded with fill_value
    or cut), which needs no realize"""
    flat = self._compacted(size, "nonzero")
    strides = [prod(self.shape[d+1:]) for d in range(self.ndim)]
    if not self.ndim: return flat.unsqueeze(1).shrink((None, (0, 0)))  # a scalar has no coordinates: (count, 0)
    coords = [(flat // st) % n for st, n in zip(strides, self.shape)]
    return flat.ge(0).unsqueeze(1).where(coords[0].stack(*coords[1:], dim=1), fill_value).cast(dtypes.int32)
  def masked_select(self, mask, size:int|None=None, fill_value=0):
    """the elements where mask is True, self and mask broadcast together (torch's), as a 1-D tensor in row-major order; without size the
    mask is realized to count them, with size the result has that many elements (padded with fill_value or cut)"""
    from tinygrad.tensor import Tensor
    mask = mask if isinstance(mask, Tensor) else Tensor(mask, self.device)
    if mask.dtype is not dtypes.bool: raise TypeError(f"masked_select needs a bool mask, got {mask.dtype}")
    shape = broadcast_shape(tuple(self.shape), tuple(mask.shape))
    x, mask = self.expand(shape), mask.expand(shape)
    flat = mask._compacted(size, "masked_select")
    return flat.ge(0).where(x.flatten().gather(0, flat.maximum(0)), fill_value).cast(self.dtype)
