"""Tensor's random initialisers and samplers, built on Tensor.rand/normal/_random_bits (the threefry RNG in tensor.py). Mixed into Tensor."""
from __future__ import annotations
import math
from tinygrad.dtype import DType, dtypes, to_dtype
from tinygrad.helpers import prod

# randperm ranks up to this many words with n^2 compares, and sorts more: the sort's kernels are faster past ~8192 (CPU, warm: 16384
# 99 ms ranked, 51 sorted; 65536 1.3 s, 59 ms), but its ~30 new kernels cost seconds to compile on a first call (16384: 8.6 s, 0.35 ranked)
RANDPERM_RANK_MAX = 16384

def _shape(shape:tuple) -> tuple:
  from tinygrad.tensor import _shape_arg  # tensor.py imports this module
  return _shape_arg(shape)

class TensorRandomMixin:
  @classmethod
  def scaled_uniform(cls, *shape, **kwargs):
    """uniform in [-1, 1) scaled by 1/sqrt(number of elements)"""
    bound = max(prod(_shape(shape)), 1) ** -0.5
    return cls.uniform(*shape, low=-bound, high=bound, **kwargs)
  @classmethod
  def glorot_uniform(cls, *shape, **kwargs):
    """Xavier/Glorot: uniform in +-sqrt(6 / (fan_in + fan_out)), fan_out = shape[0], fan_in = prod(shape[1:])"""
    s = _shape(shape)
    bound = math.sqrt(6 / max(s[0] + prod(s[1:]), 1)) if s else 1.0
    return cls.uniform(*shape, low=-bound, high=bound, **kwargs)
  @classmethod
  def kaiming_uniform(cls, *shape, a:float=0.01, **kwargs):
    """He: uniform in +-sqrt(3) * gain / sqrt(fan_in), gain = sqrt(2 / (1 + a^2)) for a leaky relu of slope a"""
    bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + a**2)) / math.sqrt(max(prod(_shape(shape)[1:]), 1))
    return cls.uniform(*shape, low=-bound, high=bound, **kwargs)
  @classmethod
  def kaiming_normal(cls, *shape, a:float=0.01, **kwargs):
    """He: normal with std gain / sqrt(fan_in), gain = sqrt(2 / (1 + a^2))"""
    std = math.sqrt(2.0 / (1 + a**2)) / math.sqrt(max(prod(_shape(shape)[1:]), 1))
    return cls.normal(*shape, mean=0.0, std=std, **kwargs)

  @classmethod
  def randperm(cls, n:int, device:str|None=None, dtype:DType|str=dtypes.int32):
    """a random permutation of 0..n-1: the rank of each of n random words (ties broken by position), O(n^2) compares in one kernel; past
    RANDPERM_RANK_MAX the order of the words (a sort: 60000, a dataset's shuffle, took 1.6 s of compares, 1M minutes)"""
    (n,) = _shape((n,))
    bits = cls._random_bits(n, device)
    if n > RANDPERM_RANK_MAX: return bits.argsort().cast(to_dtype(dtype))
    idx = cls(0, device)._arange(n)
    before = (bits.reshape(1, n) < bits.reshape(n, 1)) | (bits.reshape(1, n).eq(bits.reshape(n, 1)) & (idx.reshape(1, n) < idx.reshape(n, 1)))
    return before.sum(1).cast(to_dtype(dtype))

  def multinomial(self, num_samples:int=1, replacement:bool=False):
    """int32 indices drawn with probability proportional to self's (non-negative) weights, per row of a 2-D self"""
    if not 1 <= self.ndim <= 2: raise ValueError(f"multinomial needs 1-D or 2-D weights, got shape {tuple(self.shape)}")
    if num_samples < 1: raise ValueError(f"multinomial needs num_samples >= 1, got {num_samples}")
    w = self.unsqueeze(0) if self.ndim == 1 else self
    if not replacement and num_samples > 1:
      if num_samples > w.shape[1]: raise ValueError(f"multinomial without replacement draws at most {w.shape[1]} samples, not {num_samples}")
      # exponential races: each class draws an Exp(1) time divided by its weight; the first num_samples to finish are a weighted
      # sample without replacement (zero weights finish at +inf, never before a positive one)
      finish = -(1 - type(self).rand(*w.shape, device=self.device)).log() / w.float()
      ret = finish.topk(num_samples, dim=1, largest=False)[1].cast(dtypes.int32)
      return ret.reshape(num_samples) if self.ndim == 1 else ret
    cdf = w.float().cumsum(1)
    cdf = cdf / cdf[:, -1:]  # the last entry is exactly 1, and u < 1, so every draw lands on a class
    u = type(self).rand(w.shape[0], num_samples, 1, device=self.device)
    ret = (u >= cdf.unsqueeze(1)).sum(2).cast(dtypes.int32)
    return ret.reshape(num_samples) if self.ndim == 1 else ret
