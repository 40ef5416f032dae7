"""Tensors made from an existing one: triangular masks (tril/triu over the last two axes), a diagonal matrix, a padded or shrunk
copy, and small conveniences (clone, linear, sequential). Mixed into Tensor."""
from __future__ import annotations
import functools, operator
from tinygrad.uop.ops import UOp

class TensorCreateMixin:
  def _tri_keep(self, diagonal:int, lower:bool):
    """bool (rows, cols): True where column - row <= diagonal (lower) or >= diagonal (upper)"""
    if self.ndim < 2: raise ValueError(f"{'tril' if lower else 'triu'} needs at least 2 dims, got shape {tuple(self.shape)}")
    if not isinstance(diagonal, UOp):  # a bound Variable is a diagonal too; a float would silently act as its ceiling or floor
      try: diagonal = operator.index(diagonal)
      except TypeError: raise TypeError(f"{'tril' if lower else 'triu'} diagonal must be an int, got {type(diagonal).__name__} {diagonal!r}") from None
    r, c = self.shape[-2], self.shape[-1]
    d = self._arange(c).reshape(1, c) - self._arange(r).reshape(r, 1)
    return (d <= diagonal) if lower else (d >= diagonal)
  def tril(self, diagonal:int=0): return self._tri_keep(diagonal, True).where(self, self._scalar_like(0))
  def triu(self, diagonal:int=0): return self._tri_keep(diagonal, False).where(self, self._scalar_like(0))
  def diag(self):
    """a 1-D tensor as the diagonal of a square matrix, zeros elsewhere"""
    if self.ndim != 1: raise ValueError(f"diag needs a 1-D tensor, got shape {tuple(self.shape)}")
    n = self.shape[0]
    return (self._arange(n).reshape(n, 1).eq(self._arange(n).reshape(1, n))).where(self.reshape(1, n), self._scalar_like(0))
  def pad_to(self, shape, *args, value=0):
    """padded with `value` at the end of each axis to shape (None keeps an axis)"""
    new = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,) + args
    if len(new) != self.ndim: raise ValueError(f"pad_to {new} needs one size per axis of {tuple(self.shape)}")
    if any(n is not None and n < s for n, s in zip(new, self.shape)): raise ValueError(f"pad_to {new} is smaller than {tuple(self.shape)}: use shrink_to")
    pairs = tuple((0, 0 if n is None else n - s) for n, s in zip(new, self.shape))
    return self._pad(pairs) if value == 0 else self.pad(pairs, value=value)
  def shrink_to(self, shape, *args):
    """the leading part of each axis, of size shape (None keeps an axis)"""
    new = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,) + args
    if len(new) != self.ndim: raise ValueError(f"shrink_to {new} needs one size per axis of {tuple(self.shape)}")
    return self.shrink(tuple(None if n is None else (0, n) for n in new))
  def clone(self, device:str|None=None):
    """a copy in a buffer of its own, on `device` if given (lazy, like every op: it copies when realized, so realize it before an
    assign to self)"""
    return self.contiguous() if device is None else self.to(device).contiguous()
  def linear(self, weight, bias=None, dtype=None):
    """self @ weight + bias; a 1-D weight scales elementwise; dtype is the matmul's accumulation dtype"""
    x = self * weight if weight.ndim == 1 else self.matmul(weight, dtype=dtype)
    return x if bias is None else x + bias
  def sequential(self, ll):
    """self passed through each callable of the list ll in turn"""
    return functools.reduce(lambda x, f: f(x), ll, self)
  def allclose(self, other, rtol:float=1e-05, atol:float=1e-08, equal_nan:bool=False):
    """a 0-d bool Tensor: whether every element isclose (tinygrad's; read it with .item(), a Tensor has no truth value)"""
    return self.isclose(other, rtol, atol, equal_nan).all()
