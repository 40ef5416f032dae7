"""Reductions shared by UOp and Tensor. A class using it provides: shape, dtype, _rop(op, axes) (keepdim result), reshape."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes

class ReduceMixin:
  def _reduce(self, op:Ops, axis=None, keepdim=False):
    nd = len(self.shape)
    axes = tuple(range(nd)) if axis is None else tuple(self._resolve_dim(a) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    ret = self._rop(op, tuple(sorted(set(axes))))
    return ret if keepdim else ret.reshape(tuple(s for i, s in enumerate(self.shape) if i not in axes))
  def sum(self, axis=None, keepdim=False, dtype=None):
    x = self.cast(dtype) if dtype is not None else self.cast(dtypes.sum_acc_dtype(self.dtype))
    return x._reduce(Ops.ADD, axis, keepdim)
  def prod(self, axis=None, keepdim=False, dtype=None):
    x = self.cast(dtype) if dtype is not None else self.cast(dtypes.sum_acc_dtype(self.dtype))
    return x._reduce(Ops.MUL, axis, keepdim)
  def max(self, axis=None, keepdim=False): return self._reduce(Ops.MAX, axis, keepdim)
  def min(self, axis=None, keepdim=False):
    if dtypes.is_unsigned(self.dtype): return dtypes.max(self.dtype) - (dtypes.max(self.dtype) - self).max(axis, keepdim)
    if self.dtype is dtypes.bool: return self.logical_not().max(axis, keepdim).logical_not()
    return -((-self).max(axis, keepdim))
