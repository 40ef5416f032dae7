"""Sorting shared by UOp and Tensor: sort, argsort, topk, stable and exact in every dtype. Short rows: an element's rank is how many
elements come before it (smaller, or equal and earlier), and output position r picks the element of rank r through a one-hot mask:
O(n^2) compares, one kernel. Long rows: a bitonic network over (value, original index) pairs padded to a power of two, O(n log^2 n)
compares in log2(n)(log2(n)+1)/2 materialized stages. Padding is marked by its index (>= n), never by a value, so nothing can collide
with the data. A class using it provides the elementwise, movement, reduce and select mixins."""
from __future__ import annotations
from tinygrad.dtype import dtypes

# rows longer than this use the bitonic network. Each of its stages is a kernel of its own to compile, so below this the single O(n^2)
# kernel costs less in all
BITONIC_MIN = 2048

class SortingMixin:
  def sort(self, dim:int=-1, descending:bool=False) -> tuple:
    """(values, indices) sorted along dim, ascending unless descending; equal elements keep their order (stable). Indices are int32"""
    if not self.shape: return self, self.const_like(0, dtypes.int32)
    dim = self._resolve_dim(dim)
    n = self.shape[dim]
    x = self.transpose(dim, -1)
    if n > BITONIC_MIN:
      values, indices = x._bitonic_sort(descending)
      return values.transpose(dim, -1), indices.transpose(dim, -1)
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
  def _before(self, idx, other, other_idx, n:int, descending:bool):
    """whether (self, idx) sorts before (other, other_idx): real elements before padding (index >= n), then NaN last (first when
    descending), then by value, then by original index (stability)"""
    pad, other_pad = idx >= n, other_idx >= n
    by_value = (self > other) if descending else (self < other)
    same = self.eq(other)
    if dtypes.is_float(self.dtype):
      nan, other_nan = self.isnan(), other.isnan()
      same = same | (nan & other_nan)
      by_value = (nan != other_nan).where(nan if descending else other_nan, by_value)
    return (pad != other_pad).where(other_pad, same.where(idx < other_idx, by_value))
  def _bitonic_sort(self, descending:bool) -> tuple:
    """(values, int32 indices) of the last axis sorted by a bitonic network"""
    n = self.shape[-1]
    p, lead = 1 << (n - 1).bit_length(), tuple(self.shape[:-1])
    vals = self.pad(((0, 0),)*len(lead) + ((0, p - n),))
    idx = self._arange(p, dtypes.int32).reshape((1,)*len(lead) + (p,)).expand(lead + (p,))
    k = 2
    while k <= p:
      j = k // 2
      while j >= 1:
        # partners i and i^j sit on a size-2 axis: (..., p/2j, 2, j); a block of k sorts up when bit k of i is clear
        shape = lead + (p // (2*j), 2, j)
        v, ix = vals.reshape(shape), idx.reshape(shape)
        lo, hi, ilo, ihi = v[..., 0:1, :], v[..., 1:2, :], ix[..., 0:1, :], ix[..., 1:2, :]
        up = (self._arange(p // (2*j), dtypes.int32) // (k // (2*j)) % 2).eq(0).reshape((p // (2*j), 1, 1))
        swap = lo._before(ilo, hi, ihi, n, descending) != up
        vals = swap.where(hi, lo).cat(swap.where(lo, hi), dim=-2).reshape(lead + (p,)).contiguous()
        idx = swap.where(ihi, ilo).cat(swap.where(ilo, ihi), dim=-2).reshape(lead + (p,)).contiguous()
        j //= 2
      k *= 2
    keep = (None,)*len(lead) + ((0, n),)
    return vals.shrink(keep), idx.shrink(keep)
  def argsort(self, dim:int=-1, descending:bool=False): return self.sort(dim, descending)[1]
  def topk(self, k:int, dim:int=-1, largest:bool=True, sorted_:bool=True) -> tuple:
    """(values, indices) of the k largest (or smallest) elements along dim, in sorted order"""
    dim = self._resolve_dim(dim)
    if not 0 <= k <= (n := self.shape[dim] if self.shape else 1):
      raise ValueError(f"topk k={k} is out of range for axis {dim} of shape {tuple(self.shape)} (0 <= k <= {n})")
    values, indices = self.sort(dim, descending=largest)
    keep = tuple((0, k) if d == dim else None for d in range(len(self.shape)))
    return values.shrink(keep), indices.shrink(keep)
