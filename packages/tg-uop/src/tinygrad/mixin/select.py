"""Reading and writing elements at computed positions, shared by UOp and Tensor: gather, scatter, scatter_reduce, masked_fill.
A position is compared with an arange of the axis (a one-hot mask) and the mask selects by where and a reduce, so each op is one
lazy graph and fuses like any other. A class using it provides the elementwise, movement and reduce mixins."""
from __future__ import annotations
from tinygrad.dtype import dtypes

_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")

class SelectMixin:
  def _one_hot_at(self, n:int, axis:int):
    """self (int positions) compared with 0..n-1 along a new axis at `axis`: True where the position is that index"""
    return self.unsqueeze(axis).eq(self._arange(n).reshape(tuple(n if i == axis else 1 for i in range(len(self.shape)+1))))
  def _pick(self, mask, axis:int):
    """the element of self where mask is True along axis (at most one True: 0 or False where none), in self's dtype"""
    if self.dtype is dtypes.bool: return (mask & self).any(axis)
    return mask.where(self, 0).sum(axis, dtype=self.dtype)  # one term: exact in any dtype
  def _last_of(self, mask, axis:int):
    """mask keeping only its last True along axis (numpy's rule for repeated write positions: the last write wins)"""
    n = mask.shape[axis]
    order = self._arange(n).reshape(tuple(n if i == axis else 1 for i in range(len(mask.shape))))
    return mask & order.eq(mask.where(order, -1).max(axis, keepdim=True))

  def gather(self, dim:int, index):
    """out[i][j] = self[index[i][j]][j] for dim=0 (and likewise for other dims); index has self's rank and fits inside self off dim"""
    dim = self._resolve_dim(dim)
    self._check_index(index, dim, "gather")
    x = self.shrink(tuple(None if d == dim else (0, s) for d, s in enumerate(index.shape)))
    return x.unsqueeze(dim)._pick(index._one_hot_at(self.shape[dim], dim+1), dim+1)
  def _check_index(self, index, dim:int, what:str):
    if dtypes.is_float(index.dtype) or index.dtype is dtypes.bool: raise TypeError(f"{what} needs an int index tensor, got {index.dtype}")
    if len(index.shape) != len(self.shape) or any(i > s for d, (i, s) in enumerate(zip(index.shape, self.shape)) if d != dim):
      raise ValueError(f"{what} index of shape {tuple(index.shape)} needs {len(self.shape)} dims, each at most self's {tuple(self.shape)} off dim {dim}")
  def _scatter_parts(self, dim:int, index, src, what:str):
    """(mask, src) laid out as index's shape with self's axis `dim` added last: mask[..., k] says the element goes to position k"""
    dim = self._resolve_dim(dim)
    self._check_index(index, dim, what)
    if not isinstance(src, type(self)): src = self.const_like(src)
    src = src.cast(self.dtype)
    if len(src.shape) == len(self.shape): src = src.shrink(tuple((0, s) for s in index.shape))
    mask = index._one_hot_at(self.shape[dim], len(index.shape))
    return dim, mask, src.expand(index.shape).unsqueeze(-1)
  def _scatter_back(self, x, dim:int, fill=0):
    """a reduced (index shape off dim, self's axis dim last) result moved to self's layout, padded out to self's shape with `fill`"""
    x = x.permute(tuple(range(dim)) + (len(x.shape)-1,) + tuple(range(dim, len(x.shape)-1)))
    return x.pad(tuple((0, s - xs) for s, xs in zip(self.shape, x.shape)), value=fill)
  def scatter(self, dim:int, index, src, reduce:str|None=None):
    """self with self[index[i][j]][j] = src[i][j] for dim=0 (likewise for other dims); reduce "add" or "multiply" combines instead.
    Where index repeats a position, the last write wins (reduce=None)"""
    if reduce not in (None, "add", "multiply"): raise ValueError(f"scatter reduce must be None, 'add' or 'multiply', not {reduce!r}")
    if reduce is not None: return self.scatter_reduce(dim, index, src, {"add": "sum", "multiply": "prod"}[reduce])
    dim, mask, src = self._scatter_parts(dim, index, src, "scatter")
    last = self._last_of(mask, dim)
    written = self._scatter_back(last.any(dim), dim)
    return written.where(self._scatter_back(src._pick(last, dim), dim), self)
  def scatter_reduce(self, dim:int, index, src, reduce:str, include_self:bool=True):
    """self with src's elements reduced into the positions index names along dim: reduce is sum, prod, mean, amax or amin, and
    include_self=False leaves self's value at a written position out of the reduction"""
    if reduce not in _SCATTER_REDUCES: raise ValueError(f"scatter_reduce reduce must be one of {_SCATTER_REDUCES}, not {reduce!r}")
    dim, mask, src = self._scatter_parts(dim, index, src, "scatter_reduce")
    written = self._scatter_back(mask.any(dim), dim)
    if reduce in ("sum", "mean"): part = self._scatter_back(mask.where(src, 0).sum(dim, dtype=self.dtype), dim)
    if reduce == "prod": part = self._scatter_back(mask.where(src, 1).prod(dim, dtype=self.dtype), dim, 1)
    if reduce in ("amax", "amin"):
      ident = self.dtype.min if reduce == "amax" else self.dtype.max
      part = mask.where(src, ident).max(dim) if reduce == "amax" else mask.where(src, ident).min(dim)
      part = self._scatter_back(part, dim, ident)
    if include_self: part = {"sum": part + self, "mean": part + self, "prod": part * self, "amax": part.maximum(self), "amin": part.minimum(self)}[reduce]
    if reduce == "mean":
      count = self._scatter_back(mask.sum(dim), dim) + int(include_self)
      part = part.div(count.maximum(1), rounding_mode=None if dtypes.is_float(self.dtype) else "floor").cast(self.dtype)
    return written.where(part, self)
  def masked_fill(self, mask, value):
    """value where mask is True, self elsewhere (mask broadcasts); the dtype is where()'s, as tinygrad's: a python float into an int
    tensor gives a float one (torch keeps self's dtype and truncates)"""
    return mask.where(value, self)
