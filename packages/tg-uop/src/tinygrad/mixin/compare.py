"""Closeness, sign transfer and log-sum of two values, and diagonals: small methods shared by UOp and Tensor."""
from __future__ import annotations
from tinygrad.dtype import dtypes
from tinygrad.mixin.math import log1p

class CompareMixin:
  def isclose(self, other, rtol:float=1e-05, atol:float=1e-08, equal_nan:bool=False):
    """|self - other| <= atol + rtol * |other| elementwise, like numpy; equal infinities are close, NaN only with equal_nan"""
    a, b = self._broadcasted(other)
    if not dtypes.is_float(a.dtype):
      # ints: a - b wraps in their dtype (uint8 0 - 5 is 251, int8 127 - -128 is -1) and bools don't subtract. max - min taken in the
      # unsigned dtype of their width is the exact distance (it is below 2**bits); it meets the tolerance in the default float, as in torch
      if a.dtype is dtypes.bool: a, b = a.cast(dtypes.uint8), b.cast(dtypes.uint8)
      u = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[a.dtype.itemsize]
      dist = (a.maximum(b).cast(u) - a.minimum(b).cast(u)).cast(dtypes.default_float)
      return dist <= atol + rtol * b.cast(dtypes.default_float).abs()
    close = self.eq(other) | ((self - other).abs() <= (other - other + atol) + rtol * self.ufix(other).abs())
    return close | (self.isnan() & self.ufix(other).isnan()) if equal_nan else close
  def copysign(self, other):
    """|self| with the sign of other; -0.0 counts as negative (its reciprocal is -inf)"""
    other = self.ufix(other)
    negative = (other < 0) | (other.eq(0) & (other.reciprocal() < 0))
    mag = self.abs()
    return negative.where(-mag, mag)
  def logaddexp(self, other):
    """log(exp(self) + exp(other)) without overflow: max + log1p(exp(-|self - other|)). Equal values (infinities too, whose difference
    is NaN) have the difference 0: max splits a tie's gradient in half and |d| as max(d, -d) has none at 0, so each side gets 0.5"""
    a, b = self._broadcasted(other)
    if not a.dtype.name.startswith(("float", "half", "bfloat", "double")): a, b = a.float(), b.float()
    d = a.eq(b).where(0, a - b)
    return a.maximum(b) + log1p((-d.maximum(-d)).exp())
  def diagonal(self, offset:int=0, dim1:int=0, dim2:int=1):
    """the diagonal of the (dim1, dim2) planes, as a last axis (numpy and torch): entries [i, i+offset]"""
    d1, d2 = self._resolve_dim(dim1), self._resolve_dim(dim2)
    if d1 == d2: raise ValueError(f"diagonal needs two different dims, got {dim1} and {dim2}")
    x = self.permute([i for i in range(self.ndim) if i not in (d1, d2)] + [d1, d2])
    rows, cols = x.shape[-2], x.shape[-1]
    x = x[..., :, offset:] if offset >= 0 else x[..., -offset:, :]
    n = max(0, min(x.shape[-2], x.shape[-1]))
    x = x[..., :n, :n]
    if n == 0: return x.reshape(tuple(x.shape[:-2]) + (0,))
    return x.flatten(-2)[..., ::n+1]
