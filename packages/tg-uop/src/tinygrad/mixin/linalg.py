"""Matrix products shared by UOp and Tensor, built from reshape, implicit broadcasting and one sum: the scheduler fuses them into one kernel."""
from __future__ import annotations
from tinygrad.dtype import DType, least_upper_dtype
from tinygrad.helpers import sint_eq
from tinygrad.mixin.elementwise import _type_name

class LinalgMixin:
  def dot(self, w, dtype=None):
    """numpy matmul semantics: 1-D operands act as a row (left) or column (right) that is dropped after; batch dims broadcast"""
    self._check_operand(w)
    n1, n2 = len(self.shape), len(w.shape)
    if n1 == 0 or n2 == 0: raise RuntimeError(f"matmul needs operands with at least 1 dim, got shapes {tuple(self.shape)} and {tuple(w.shape)}")
    if not sint_eq(self.shape[-1], w.shape[-min(n2, 2)]):
      raise RuntimeError(f"matmul shapes {tuple(self.shape)} and {tuple(w.shape)} don't fit: {self.shape[-1]} != {w.shape[-min(n2, 2)]}")
    out = dtype or least_upper_dtype(self.dtype, w.dtype)
    # dtype is the accumulation's: the products too (int8 100*2 wrapped before the sum, half 300*300 overflowed), as numpy's and tinygrad's
    x, w = (self.cast(dtype), w.cast(dtype)) if dtype is not None else (self, w)
    # (..., n, k) x (..., k, m) -> (..., n, 1, k) * (..., 1, m, k), summed over k
    x = x.unsqueeze(-2) if n1 > 1 and n2 > 1 else x
    if n2 > 1: w = w.transpose(-1, -2).unsqueeze(-3) if n1 > 1 else w.transpose(-1, -2)
    return (x * w).sum(-1, dtype=dtype).cast(out)
  def matmul(self, x, reverse=False, dtype=None):
    self._check_operand(x)  # reversed (2 @ t), x has no dot of its own to complain
    return x.dot(self, dtype) if reverse else self.dot(x, dtype)
  def _check_operand(self, x):
    name = type(self).__name__
    # by its dtype, not its class: a subclass's instance (and self's own class) is an operand, numpy's and torch's arrays are not
    if not isinstance(getattr(x, "dtype", None), DType):
      raise TypeError(f"matmul needs a {name} operand, got a {_type_name(x)}: wrap it with {name}(...)")
  def __matmul__(self, x): return self.matmul(x)
  def __rmatmul__(self, x): return self.matmul(x, True)
