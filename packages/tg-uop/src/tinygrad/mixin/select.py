"""Reading and writing elements at computed positions, shared by UOp and Tensor: gather, scatter, scatter_reduce, masked_fill.
A position is compared with an arange of the axis (a one-hot mask) and the mask selects by where and a reduce: gather is one lazy graph
and fuses like any other; the scatters store each one-hot fold on its own, the kernel the compiler runs as one pass over the index.
A class using it provides the elementwise, movement and reduce mixins."""
from __future__ import annotations
from tinygrad.dtype import dtypes
from tinygrad.mixin.movement import _exceeds, _show_shape
from tinygrad.mixin.sorting import _same_size_int

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
    rounding = None if dtypes.is_float(self.dtype) else "floor"
    if not include_self:  # where nothing lands the fold's identity is no value of self's: only the count of what lands tells them apart
      count = self._landed(mask, dim)
      if reduce == "mean": part = part.div(count.maximum(1), rounding_mode=rounding)
      return count.gt(0).where(part.cast(self.dtype), self)
    if fold == "sum" and dtypes.is_float(self.dtype):
      # where only -0.0s land (or nothing) self plus them is self, -0.0 being the identity of +, but the fold starts at +0.0 as every sum
      # does (the scatter gives the dense one-hot sum's bits), and self -0.0 + +0.0 is +0.0. There the fold is +0.0, and so is fold - fold:
      # subtracted, that leaves self as it is (-0.0 - +0.0 is -0.0) and carries the fold's gradient to what landed
      if reduce == "mean": count, only_negative_zeros = self._landed(mask, dim, src)
      else: only_negative_zeros = self._only_negative_zeros_land(mask, src, dim)
      part = only_negative_zeros.where(self - (part.detach() - part), part + self)
    else:  # where nothing lands the fold's identity combined with self is self again (x + 0, x * 1, max(x, lowest))
      count = self._landed(mask, dim) if reduce == "mean" else None
      part = {"sum": part + self, "mean": part + self, "prod": part * self, "amax": part.maximum(self), "amin": part.minimum(self)}[reduce]
    if reduce == "mean": part = part.div(count + 1, rounding_mode=rounding)
    return part.cast(self.dtype)  # a float sum's part is in sum_acc_dtype
  def _landed(self, mask, dim:int, x=None):
    """how many elements mask sends to each position of self, int32 laid out as self; given x (floats), also True where every element of
    x sent there is -0.0, or none is, from the same pass: in an int64 sum each element adds 1, and 2**32 more where it is not -0.0"""
    if x is None: return self._padded(self._scatter_fold(mask, self._scalar_like(1, dtypes.int32), dim, "sum"))
    bits = x.bitcast(_same_size_int(x.dtype))
    both = self._padded(self._scatter_fold(mask, bits.eq(bits.dtype.min).where(1, self._scalar_like(1 + 2**32, dtypes.int64)), dim, "sum"))
    return (both & 0xFFFFFFFF).cast(dtypes.int32), both < 2**32
  def _only_negative_zeros_land(self, mask, x, dim:int):
    """True where every element of x (floats) that mask sends to a position of self is -0.0, or none is. As signed ints -0.0's bits are
    the lowest value, amax's identity: the largest bits that land are those exactly there (a pass in x's width, not _landed's int64)"""
    bits = x.bitcast(_same_size_int(x.dtype))
    return self._padded(self._scatter_fold(mask, bits, dim, "amax"), bits.dtype.min).eq(bits.dtype.min)
  def masked_fill(self, mask, value):
    """value where mask is True, self elsewhere (mask broadcasts); the dtype is where()'s, as tinygrad's: a python float into an int
    tensor gives a float one (torch keeps self's dtype and truncates)"""
    return mask.where(value, self)
