"""Running reductions shared by UOp and Tensor: cumprod, cummax/cummin (with indices), logcumsumexp. Each reduces a square of prefixes
(row i holds x[:i+1] after a fill that changes nothing), a view of the input, so a scan is one fused kernel of O(n^2) work.
A class using it provides the elementwise, movement and reduce mixins."""
from __future__ import annotations
import math
from tinygrad.dtype import dtypes

class ScanMixin:
  def _prefixes(self, axis:int, fill):
    """self with axis moved last, widened to a square: row i = [fill]*(n-1-i) + x[:i+1]"""
    x = self.transpose(axis, -1)
    lead, n = tuple(x.shape[:-1]), x.shape[-1]
    # copy i of the front-filled row, read from offset i: rows of length 2n step one further into each copy
    p = x.pad(((0, 0),)*len(lead) + ((n-1, 0),), value=fill)
    w = p.repeat((1,)*len(lead) + (n,))._pad(((0, 0),)*len(lead) + ((0, n),)).reshape(lead + (n, 2*n))
    return w.shrink(tuple((0, s) for s in lead) + ((0, n), (0, n)))
  def _scannable(self, axis:int) -> bool: return bool(self.shape) and self.shape[self._resolve_dim(axis)] != 0
  def cumprod(self, axis:int):
    """running product along axis, in prod's dtype"""
    if not self._scannable(axis): return self.prod(())
    axis = self._resolve_dim(axis)
    return self._prefixes(axis, 1).prod(-1).transpose(axis, -1)
  def cummax(self, axis:int=0) -> tuple:
    """(running max along axis, the index of the last element equal to it) like torch; indices are int32 like argmax"""
    if not self._scannable(axis): return self, self.cast(dtypes.int32)
    axis = self._resolve_dim(axis)
    n = self.shape[axis]
    values = self._prefixes(axis, self.dtype.min).max(-1)
    at = self._arange(n)._prefixes(0, -1)  # (n, n): the index of each window element, -1 in the fill
    idx = self._prefixes(axis, self.dtype.min).eq(values.unsqueeze(-1)).where(at, -1).max(-1)
    return values.transpose(axis, -1), idx.cast(dtypes.int32).transpose(axis, -1)
  def cummin(self, axis:int=0) -> tuple:
    values, idx = self._inverse().cummax(axis)
    return values._inverse(), idx
  def logcumsumexp(self, axis:int=0):
    """log of the running sum of exp along axis, shifted by the axis max so exp never overflows"""
    x = self._float_cast()
    if not self._scannable(axis): return x.sum(())
    m = x.max(axis, keepdim=True)
    m = m.abs().eq(math.inf).where(0, m)
    return (x - m).exp().cumsum(axis).log() + m
