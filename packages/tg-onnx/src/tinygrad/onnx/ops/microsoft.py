"""The com.microsoft contrib ops that exported transformer models use (onnxruntime's fusions)."""
from __future__ import annotations
import math
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.onnx.ops.registry import op
from tinygrad.onnx.ops.misc import rotary

MS = "com.microsoft"

@op("Gelu", domain=MS)
def gelu(x): return x * 0.5 * (1 + (x * (1 / math.sqrt(2))).erf())
@op("BiasGelu", domain=MS)
def bias_gelu(x, bias): return gelu(x + bias)
@op("FastGelu", domain=MS)
def fast_gelu(x, bias=None):
  if bias is not None: x = x + bias
  return x * 0.5 * (1 + (math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)).tanh())
@op("QuickGelu", domain=MS)
def quick_gelu(x, alpha=1.702): return x * (x * alpha).sigmoid()
@op("BiasAdd", domain=MS)
def bias_add(x, bias, skip): return x + bias + skip

@op("FusedMatMul", domain=MS)
def fused_matmul(a, b, alpha=1.0, transA=0, transB=0, transBatchA=0, transBatchB=0):
  return (a.transpose(-1, -2) if transA else a) @ (b.transpose(-1, -2) if transB else b) * alpha

def _layer_norm(x, gamma, beta, eps, simplified):
  xf = x.cast(dtypes.float32)
  if simplified: y = xf * ((xf * xf).mean(-1, keepdim=True) + eps).rsqrt()
  else: y = xf.layernorm(-1, eps)
  y = y.cast(x.dtype) * gamma
  return y + beta if beta is not None else y

@op("SkipLayerNormalization", domain=MS)
def skip_layer_norm(x, skip, gamma, beta=None, bias=None, epsilon=1e-12):
  s = x + skip + (bias if bias is not None else 0)
  return _layer_norm(s, gamma, beta, epsilon, False), None, None, s
@op("SkipSimplifiedLayerNormalization", domain=MS)
def skip_simplified_layer_norm(x, skip, gamma, bias=None, epsilon=1e-12):
  s = x + skip + (bias if bias is not None else 0)
  return _layer_norm(s, gamma, None, epsilon, True), None, None, s
@op("SimplifiedLayerNormalization", domain=MS)
def simplified_layer_norm(x, scale, axis=-1, epsilon=1e-5, stash_type=1): return _layer_norm(x, scale, None, epsilon, True)

@op("EmbedLayerNormalization", domain=MS)
def embed_layer_norm(input_ids, segment_ids, word_emb, pos_emb, seg_emb=None, gamma=None, beta=None, mask=None, position_ids=None,
                     epsilon=1e-12, mask_index_type=1):
  b, s = input_ids.shape
  pos = position_ids if position_ids is not None else Tensor.arange(s).reshape(1, s).expand(b, s)
  x = word_emb[input_ids] + pos_emb[pos]
  if seg_emb is not None and segment_ids is not None: x = x + seg_emb[segment_ids]
  mask_index = mask.cast(dtypes.int32).sum(-1) if mask is not None else Tensor.zeros(b, dtype=dtypes.int32)
  return _layer_norm(x, gamma, beta, epsilon, False), mask_index, x

@op("Attention", domain=MS)
def ms_attention(x, weights, bias=None, mask_index=None, past=None, attention_bias=None, past_sequence_length=None, num_heads=1,
                 unidirectional=0, scale=None, mask_filter_value=-10000.0, qkv_hidden_sizes=None, do_rotary=0, past_present_share_buffer=0):
  b, s, _ = x.shape
  qkv = x @ weights + (bias if bias is not None else 0)
  hq, hk, hv = qkv_hidden_sizes or [weights.shape[1] // 3] * 3
  q, k, v = qkv[..., :hq], qkv[..., hq:hq + hk], qkv[..., hq + hk:]
  heads = lambda t: t.reshape(b, s, num_heads, -1).permute(0, 2, 1, 3)
  q, k, v = heads(q), heads(k), heads(v)
  present = None
  if past is not None:
    k, v = past[0].cat(k, dim=2), past[1].cat(v, dim=2)
  present = Tensor.stack(k, v)
  sc = scale or 1 / math.sqrt(q.shape[-1])
  att = (q @ k.transpose(-1, -2)) * sc
  L, S = att.shape[-2:]
  if mask_index is not None:
    m = mask_index
    if m.ndim == 2: att = att + (1 - m.reshape(b, 1, 1, -1).cast(att.dtype)) * mask_filter_value
    elif m.ndim == 1:  # the number of valid tokens per batch entry
      att = att + (Tensor.arange(S).reshape(1, 1, 1, S) >= m.reshape(b, 1, 1, 1)).cast(att.dtype) * mask_filter_value
    else: att = att + (1 - m.reshape(b, 1, *m.shape[-2:]).cast(att.dtype)) * mask_filter_value
  if attention_bias is not None: att = att + attention_bias
  if unidirectional: att = (Tensor.arange(L).reshape(L, 1) + (S - L) >= Tensor.arange(S).reshape(1, S)).where(att, -math.inf)
  y = att.softmax(-1) @ v
  return y.permute(0, 2, 1, 3).reshape(b, s, -1), present

@op("RotaryEmbedding", domain=MS)
def ms_rotary(x, position_ids, cos_cache, sin_cache, interleaved=0, num_heads=0, rotary_embedding_dim=0, scale=1.0, is_packed_batching=0):
  b, s = x.shape[:2]
  four = x.ndim == 4  # (B, S, N, H) layout; 3-D (B, S, N*H)
  xh = x.permute(0, 2, 1, 3) if four else x.reshape(b, s, num_heads or 1, -1).permute(0, 2, 1, 3)
  pos = position_ids if position_ids.ndim == 2 else (Tensor.arange(s).reshape(1, s) + position_ids.reshape(-1, 1))
  rd = rotary_embedding_dim or xh.shape[-1]
  cos, sin = cos_cache[pos][..., :rd // 2].unsqueeze(1), sin_cache[pos][..., :rd // 2].unsqueeze(1)
  y = rotary(xh, cos, sin, interleaved, rd).permute(0, 2, 1, 3)
  return y if four else y.reshape(b, s, -1)
