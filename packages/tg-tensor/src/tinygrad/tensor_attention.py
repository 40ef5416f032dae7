"""Building blocks of networks as Tensor methods: scaled dot product attention, layer and batch normalisation (tinygrad.nn's layers
hold the parameters and call these)."""
from __future__ import annotations
import math
from tinygrad.dtype import dtypes

class TensorAttentionMixin:
  def scaled_dot_product_attention(self, key, value, attn_mask=None, dropout_p:float=0.0, is_causal:bool=False, enable_gqa:bool=False):
    """softmax(self @ key^T / sqrt(d) + mask) @ value, like torch. A bool attn_mask keeps where True; a float one is added.
    is_causal lets position i see keys 0..i. enable_gqa repeats key and value heads (axis -3) to the query's head count"""
    if is_causal and attn_mask is not None: raise ValueError("scaled_dot_product_attention takes attn_mask or is_causal, not both")
    if enable_gqa and key.shape[-3] != self.shape[-3]:
      if self.shape[-3] % key.shape[-3]: raise ValueError(f"enable_gqa needs query heads {self.shape[-3]} to be a multiple of key heads {key.shape[-3]}")
      key, value = key.repeat_interleave(self.shape[-3] // key.shape[-3], -3), value.repeat_interleave(self.shape[-3] // value.shape[-3], -3)
    qk = self.matmul(key.transpose(-2, -1)) / math.sqrt(self.shape[-1])
    if is_causal:
      L, S = qk.shape[-2:]
      # a buffer of its own (L*S bytes): compared in place, the lanes of a register tile (the matmul's epilogue, where the scheduler puts
      # the mask) are pairs of positions LLVM's SLP vectorizer packs into gathers and shuffles, the whole reduce loop with them (attention
      # 8x8x256x64, q @ k.T with the mask: 3.9 ms of CPU loading it, 21 ms comparing)
      attn_mask = (self._arange(L).reshape(L, 1) >= self._arange(S).reshape(1, S)).contiguous()
    if attn_mask is not None: qk = attn_mask.where(qk, -math.inf) if attn_mask.dtype is dtypes.bool else qk + attn_mask
    w = qk.softmax(-1)
    return (w.dropout(dropout_p) if dropout_p else w) @ value
  def layernorm(self, axis=-1, eps:float=1e-5):
    """(x - mean) / sqrt(var + eps) over axis (no affine parameters: nn.LayerNorm has them). A half or bfloat16 x is normalised in
    float32, as torch does, and returned in its dtype: (x - mean)**2 overflows half past 256"""
    if self.dtype in (dtypes.half, dtypes.bfloat16): return self.float().layernorm(axis, eps).cast(self.dtype)
    y = self - self.mean(axis, keepdim=True)
    return y * ((y * y).mean(axis, keepdim=True) + eps).rsqrt()
  def batchnorm(self, weight, bias, mean, invstd, axis=1):
    """(x - mean) * weight * invstd + bias, the statistics given per element of `axis` (an int or tuple); weight and bias may be None"""
    axes = tuple(self._resolve_dim(a) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    shape = tuple(s if i in axes else 1 for i, s in enumerate(self.shape))
    x = self - mean.reshape(shape)
    if weight is not None: x = x * weight.reshape(shape)
    ret = x * invstd.reshape(shape)
    return ret + bias.reshape(shape) if bias is not None else ret
