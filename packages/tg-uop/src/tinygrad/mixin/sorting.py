"""Sorting shared by UOp and Tensor: sort, argsort, topk. An element's rank is how many elements come before it (smaller, or equal
and earlier: a stable order), and output position r picks the element of rank r through a one-hot mask. O(n^2) compares per row,
one lazy graph, exact in every dtype (no padding values, so nothing can collide with the data). A class using it provides the
elementwise, movement, reduce and select mixins."""
from __future__ import annotations
from tinygrad.dtype import dtypes

class SortingMixin:
  def sort(self, dim:int=-1, descending:bool=False) -> tuple:
    """(values, indices) sorted along dim, ascending unless descending; equal elements keep their order (stable). Indices are int32"""
    if not self.shape: return self, self.const_like(0, dtypes.int32)
    dim = self._resolve_dim(dim)
    n = self.shape[dim]
    x = self.transpose(dim, -1)
    a, b = x.unsqueeze(-1), x.unsqueeze(-2)   # a: element i (rows), b: element j (columns)
    pos = self._arange(n)
    earlier = pos.reshape(n, 1) > pos.reshape(1, n)  # j comes before i
    less, tie = (b > a if descending else b < a), b.eq(a)
    if dtypes.is_float(self.dtype):  # NaN is above everything, like torch and numpy: last ascending, first descending
      na, nb = a.isnan(), b.isnan()
      less, tie = less | ((nb & na.logical_not()) if descending else (na & nb.logical_not())), tie | (na & nb)
    rank = (less | (tie & earlier)).sum(-1)  # (..., n): where element i goes
    onehot = rank._one_hot_at(n, len(rank.shape))  # (..., i, r)
    values = x.unsqueeze(-1)._pick(onehot, -2)
    indices = pos.reshape(n, 1)._pick(onehot, -2)
    return values.transpose(dim, -1), indices.cast(dtypes.int32).transpose(dim, -1)
  def argsort(self, dim:int=-1, descending:bool=False): return self.sort(dim, descending)[1]
  def topk(self, k:int, dim:int=-1, largest:bool=True, sorted_:bool=True) -> tuple:
    """(values, indices) of the k largest (or smallest) elements along dim, in sorted order"""
    dim = self._resolve_dim(dim)
    if not 0 <= k <= (n := self.shape[dim] if self.shape else 1):
      raise ValueError(f"topk k={k} is out of range for axis {dim} of shape {tuple(self.shape)} (0 <= k <= {n})")
    values, indices = self.sort(dim, descending=largest)
    keep = tuple((0, k) if d == dim else None for d in range(len(self.shape)))
    return values.shrink(keep), indices.shrink(keep)
