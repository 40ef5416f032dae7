"""Reductions shared by UOp and Tensor. A class using it provides: shape, dtype, _rop(op, axes) (keepdim result), and the elementwise and
movement mixins."""
from __future__ import annotations
import math
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes
from tinygrad.helpers import prod
from tinygrad.mixin.movement import _show_shape, _value_range, _repeated_axis

# summed in sum_acc_dtype (float32) but answered in their own dtype, like numpy and upstream tinygrad
_NARROW_FLOATS = (dtypes.float16, dtypes.bfloat16, dtypes.fp8e4m3, dtypes.fp8e5m2)

class ReduceMixin:
  def _axes(self, axis) -> tuple[int, ...]:
    if axis is None: return tuple(range(len(self.shape)))
    axes = tuple(self._resolve_dim(a) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(axes)) != len(axes): _repeated_axis("reduce", axis, axes)  # as torch and numpy: (0, -2) of a 2-D tensor is no double sum
    return axes if self.shape else ()  # a 0-d tensor takes axis 0 or -1, like torch, and has nothing to reduce
  def _count(self, axis) -> int: return prod(self.shape[a] for a in self._axes(axis))
  def _reduce(self, op:Ops, axis=None, keepdim=False):
    if axis is None:  # every axis (the usual sum() or max()): sorted already, and nothing is left but a scalar
      ret = self._rop(op, tuple(range(len(self.shape))))
      return ret if keepdim else ret.reshape(())
    axes, shape = self._axes(axis), self.shape
    ret = self._rop(op, tuple(sorted(axes)))
    return ret if keepdim else ret.reshape(tuple([s for i, s in enumerate(shape) if i not in axes]))
  def sum(self, axis=None, keepdim=False, dtype=None):
    dt = self.dtype
    ret = self.cast(dtype or dtypes.sum_acc_dtype(dt))._reduce(Ops.ADD, axis, keepdim)
    return ret.cast(dt) if dtype is None and dt in _NARROW_FLOATS else ret
  def prod(self, axis=None, keepdim=False, dtype=None):
    """multiplied in sum_acc_dtype, answered in self's dtype unless dtype is given (upstream's rule: int8 stays int8, wrapping as it
    would have multiplied in int8)"""
    if dtype is not None: return self.cast(dtype)._reduce(Ops.MUL, axis, keepdim)
    return self.cast(dtypes.sum_acc_dtype(self.dtype))._reduce(Ops.MUL, axis, keepdim).cast(self.dtype)
  def max(self, axis=None, keepdim=False): return self._reduce(Ops.MAX, axis, keepdim)
  def min(self, axis=None, keepdim=False): return self._inverse().max(axis, keepdim)._inverse()

  # *** statistics: accumulate in sum_acc_dtype, answer in self's float dtype (ints give default_float) ***
  def mean(self, axis=None, keepdim=False):
    out = self.dtype if dtypes.is_float(self.dtype) else dtypes.default_float
    return self.sum(axis, keepdim, dtypes.sum_acc_dtype(self.dtype)).div(self._count(axis)).cast(out)  # 0 elements: 0/0 is nan, like numpy
  def var(self, axis=None, keepdim=False, correction=1):
    from tinygrad.uop.ops import smax  # the UOp class is built from these mixins
    sq = (self - self.mean(axis, keepdim=True)).square()
    # smax: a symbolic axis's count has no python max
    return sq.sum(axis, keepdim, dtypes.sum_acc_dtype(sq.dtype)).div(smax(0, self._count(axis) - correction)).cast(sq.dtype)
  def std(self, axis=None, keepdim=False, correction=1): return self.var(axis, keepdim, correction).sqrt()
  def var_mean(self, axis=None, keepdim=False, correction=1) -> tuple: return self.var(axis, keepdim, correction), self.mean(axis, keepdim)
  def std_mean(self, axis=None, keepdim=False, correction=1) -> tuple: return self.std(axis, keepdim, correction), self.mean(axis, keepdim)

  # *** boolean reductions ***
  def any(self, axis=None, keepdim=False): return self.bool().max(axis, keepdim)
  def all(self, axis=None, keepdim=False): return self.logical_not().any(axis, keepdim).logical_not()

  # *** arg reductions: the first index of the extreme value (or of the first NaN, like numpy), as int32 ***
  def argmax(self, axis=None, keepdim=False):
    if axis is None or not self.shape: return self.flatten().argmax(0).reshape((1,)*len(self.shape) if keepdim else ())
    axis = self._resolve_dim(axis)
    # a symbolic axis is checked at its current binding (x[:n.bind(0)]), as a slice is
    if (n := self.shape[axis]) == 0 or (not isinstance(n, int) and _value_range(n)[1] == 0):
      raise ValueError(f"argmax over the empty axis {axis} of shape {_show_shape(self.shape)}: there is no index to return")
    # n - i is largest for the first hit, so a max over it finds the first index
    rev = (self._arange(n) * -1 + n).reshape((n,) + (1,)*(len(self.shape)-axis-1))
    hit = self.eq(self.max(axis, keepdim=True))
    if dtypes.is_float(self.dtype): hit = hit | self.isnan()  # a NaN wins MAX and equals nothing, itself included
    return (n - hit.where(rev, 0).max(axis, keepdim)).cast(dtypes.int32)
  def argmin(self, axis=None, keepdim=False): return self._inverse().argmax(axis, keepdim)

  # *** softmax family: subtract the max first so exp never overflows ***
  def softmax(self, axis=-1, dtype=None):
    x = self.cast(dtype) if dtype is not None else self._float_cast()
    e = (x - x.max(axis, keepdim=True)).exp()
    return e.div(e.sum(axis, keepdim=True))
  def softmin(self, axis=-1, dtype=None): return (-self).softmax(axis, dtype)
  def normalize(self, p:float=2.0, dim:int=1, eps:float=1e-12):
    """self divided by its p-norm along dim (at least eps), like torch.nn.functional.normalize"""
    x = self._float_cast()
    # a narrow float's norm in float32: half's sum of squares overflows once the norm passes 256, and eps=1e-12 is 0 in half
    wide = x.cast(dtypes.float32) if x.dtype in _NARROW_FLOATS else x
    return (wide / wide._p_norm(p, dim).maximum(eps)).cast(x.dtype)
  def _p_norm(self, p:float, dim:int):
    """torch.norm's p-norm along dim (keepdim): max |x| for inf, min for -inf, the count of nonzeros for 0"""
    a = self.abs()
    if p == math.inf: return a.max(dim, keepdim=True)
    if p == -math.inf: return a.min(dim, keepdim=True)
    if p == 0: return a.ne(0).sum(dim, keepdim=True).cast(self.dtype)
    return (a ** p).sum(dim, keepdim=True) ** (1 / p)
  def log_softmax(self, axis=-1, dtype=None):
    x = self.cast(dtype) if dtype is not None else self._float_cast()
    m = x - x.max(axis, keepdim=True)
    return m - m.exp().sum(axis, keepdim=True).log()
  def logsumexp(self, axis=None, keepdim=False):
    x = self._float_cast()
    m = x.max(axis, keepdim=True)
    m = m.abs().eq(math.inf).where(0, m)  # an infinite max would make x - m nan: shift by 0 there (torch's choice)
    ret = (x - m).exp().sum(axis, keepdim=True).log() + m
    return ret if keepdim else ret.reshape(tuple(s for i, s in enumerate(self.shape) if i not in self._axes(axis)))
