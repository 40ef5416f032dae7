"""Reading and writing elements at computed positions, shared by UOp and Tensor: gather, scatter, scatter_reduce, masked_fill.
A position is compared with an arange of the axis (a one-hot mask) and the mask selects by where and a reduce: gather is one lazy graph
and fuses like any other; the scatters store each one-hot fold on its own, the kernel the compiler runs as one pass over the index.
A class using it provides the elementwise, movement and reduce mixins."""
from __future__ import annotations
from tinygrad.dtype import dtypes
from tinygrad.mixin.movement import _exceeds, _show_shape

_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_IDENTITY = {"sum": lambda dt: 0, "prod": lambda dt: 1, "amax": lambda dt: dt.min}  # x folded with it is x

class SelectMixin:
  def _one_hot_at(self, n:int, axis:int):
    """self (int positions) compared with 0..n-1 along a new axis at `axis`: True where the position is that index"""
    return self.unsqueeze(axis).eq(self._arange(n).reshape(tuple(n if i == axis else 1 for i in range(len(self.shape)+1))))
  def _pick(self, mask, axis:int):
    """the element of self where mask is True along axis (at most one True: 0 or False where none), in self's dtype"""
    if self.dtype is dtypes.bool: return (mask & self).any(axis)
    return mask.where(self, 0).sum(axis, dtype=self.dtype)  # one term: exact in any dtype
  def gather(self, dim:int, index):
    """out[i][j] = self[index[i][j]][j] for dim=0 (and likewise for other dims); index has self's rank and fits inside self off dim"""
    if not (self.shape and index.shape) and len(self.shape) + len(index.shape) <= 1:
      # torch's: a 0-d self or index (the other at most 1-d) is one of a single element; the result has index's shape
      return self.reshape(self.shape or (1,)).gather(dim, index.reshape(index.shape or (1,))).reshape(index.shape)
    dim = self._resolve_dim(dim)
    self._check_index(index, dim, "gather")
    x = self.shrink(tuple(None if d == dim else (0, s) for d, s in enumerate(index.shape)))
    return x.unsqueeze(dim)._pick(index._one_hot_at(self.shape[dim], dim+1), dim+1)
  def _check_index(self, index, dim:int, what:str):
    if dtypes.is_float(index.dtype) or index.dtype is dtypes.bool: raise TypeError(f"{what} needs an int index tensor, got {index.dtype}")
    # a symbolic size (a bound Variable's) is compared at its current binding
    if len(index.shape) != len(self.shape) or any(_exceeds(i, s) for d, (i, s) in enumerate(zip(index.shape, self.shape)) if d != dim):
      raise ValueError(f"{what} index of shape {_show_shape(index.shape)} needs {len(self.shape)} dims, each at most self's "
                       f"{_show_shape(self.shape)} off dim {dim}")
  def _scatter_parts(self, dim:int, index, src, what:str):
    """(dim, mask, src): mask laid out as index's shape with self's axis `dim` added after dim (mask[.., i, k, ..] says element i goes to
    position k), src as index's shape in self's dtype, a constant or a tensor at least index's size off dim"""
    dim = self._resolve_dim(dim)
    self._check_index(index, dim, what)
    if not isinstance(src, type(self)): src = self._scalar_like(src)
    elif len(src.shape) == len(self.shape) and any(_exceeds(i, s) for s, i in zip(src.shape, index.shape)):
      raise ValueError(f"{what} src of shape {_show_shape(src.shape)} is smaller than index's {_show_shape(index.shape)}")
    src = src.cast(self.dtype)
    if len(src.shape) == len(self.shape): src = src.shrink(tuple((0, s) for s in index.shape))
    return dim, index._one_hot_at(self.shape[dim], dim+1), src.expand(index.shape)
  def _padded(self, x, fill=0):
    """x (index's shape, self's size on dim) padded out to self's shape with `fill`"""
    return x.pad(tuple((0, s - xs) for s, xs in zip(self.shape, x.shape)), value=fill)
  # Each one-hot reduce below is stored on its own (contiguous): a kernel that is just that reduce is a scatter the compiler loops over
  # the index once for (codegen/onehot_scatter.py); fused with what follows it would compare every index with every position.
  def _scatter_fold(self, mask, x, dim:int, op:str):
    """x's elements folded by op (sum, prod or amax) into the positions mask names along dim, the fold's identity where none lands. A
    float sum is in sum_acc_dtype, like sum (3000 ones into one half slot stopped at 2048), and the caller casts back; an int one wraps in
    x's dtype, as torch's does (its mean divides that)"""
    x = x.unsqueeze(dim+1) if x.shape else x  # a constant broadcasts as it is
    folded = mask.where(x, _IDENTITY[op](x.dtype))
    if op == "sum": return folded.sum(dim, dtype=dtypes.sum_acc_dtype(x.dtype) if dtypes.is_float(x.dtype) else x.dtype).contiguous()
    return (folded.prod(dim, dtype=x.dtype) if op == "prod" else folded.max(dim)).contiguous()
  def _last_write(self, mask, dim:int):
    """the last i along dim that mask (laid out (.., i, k, ..)) sends to each position k, int32's minimum where none does (numpy's rule
    for repeated write positions: the last write wins); the value written is a gather at it"""
    n = mask.shape[dim]
    return self._scatter_fold(mask, self._arange(n).reshape(tuple(n if a == dim else 1 for a in range(len(mask.shape) - 1))), dim, "amax")
  def scatter(self, dim:int, index, src, reduce:str|None=None):
    """self with self[index[i][j]][j] = src[i][j] for dim=0 (likewise for other dims); reduce "add" or "multiply" combines instead.
    Where index repeats a position, the last write wins (reduce=None)"""
    if reduce not in (None, "add", "multiply"): raise ValueError(f"scatter reduce must be None, 'add' or 'multiply', not {reduce!r}")
    if reduce is not None: return self.scatter_reduce(dim, index, src, {"add": "sum", "multiply": "prod"}[reduce])
    dim, mask, src = self._scatter_parts(dim, index, src, "scatter")
    last = self._last_write(mask, dim)
    return self._padded(last.ge(0), False).where(self._padded(src.gather(dim, last.maximum(0))), self)
  def scatter_reduce(self, dim:int, index, src, reduce:str, include_self:bool=True):
    """self with src's elements reduced into the positions index names along dim: reduce is sum, prod, mean, amax or amin, and
    include_self=False leaves self's value at a written position out of the reduction"""
    if reduce not in _SCATTER_REDUCES: raise ValueError(f"scatter_reduce reduce must be one of {_SCATTER_REDUCES}, not {reduce!r}")
    dim, mask, src = self._scatter_parts(dim, index, src, "scatter_reduce")
    # amin is amax of the order-reversed values (-x, or ~x for ints), as min() is
    fold = {"mean": "sum", "amin": "amax"}.get(reduce, reduce)
    part = self._padded(self._scatter_fold(mask, src._inverse() if reduce == "amin" else src, dim, fold), _IDENTITY[fold](self.dtype))
    if reduce == "amin": part = part._inverse()
    if include_self: part = {"sum": part + self, "mean": part + self, "prod": part * self, "amax": part.maximum(self), "amin": part.minimum(self)}[reduce]
    # where nothing lands the fold's identity combined with self is self again (x * 1, max(x, lowest)), except +0.0 + -0.0 and where self
    # is left out: only then is the count of what lands needed
    if include_self and reduce != "mean" and not (reduce == "sum" and dtypes.is_float(self.dtype)):
      return part.cast(self.dtype)  # a float sum's part is in sum_acc_dtype
    count = self._padded(self._scatter_fold(mask, src._scalar_like(1).cast(dtypes.int32), dim, "sum"))
    if reduce == "mean": part = part.div((count + int(include_self)).maximum(1), rounding_mode=None if dtypes.is_float(self.dtype) else "floor")
    return count.gt(0).where(part.cast(self.dtype), self)
  def masked_fill(self, mask, value):
    """value where mask is True, self elsewhere (mask broadcasts); the dtype is where()'s, as tinygrad's: a python float into an int
    tensor gives a float one (torch keeps self's dtype and truncates)"""
    return mask.where(value, self)
