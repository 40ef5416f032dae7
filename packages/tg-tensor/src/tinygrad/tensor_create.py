"""Tensor's triangular masks of an existing tensor (tril/triu over the last two axes). Mixed into Tensor."""
from __future__ import annotations

class TensorCreateMixin:
  def _tri_keep(self, diagonal:int, lower:bool):
    """bool (rows, cols): True where column - row <= diagonal (lower) or >= diagonal (upper)"""
    if self.ndim < 2: raise ValueError(f"{'tril' if lower else 'triu'} needs at least 2 dims, got shape {tuple(self.shape)}")
    r, c = self.shape[-2], self.shape[-1]
    d = self._arange(c).reshape(1, c) - self._arange(r).reshape(r, 1)
    return (d <= diagonal) if lower else (d >= diagonal)
  def tril(self, diagonal:int=0): return self._tri_keep(diagonal, True).where(self, self.const_like(0))
  def triu(self, diagonal:int=0): return self._tri_keep(diagonal, False).where(self, self.const_like(0))
