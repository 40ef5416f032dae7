"""FlexAttention (ai.onnx.preview): scaled dot-product attention whose scores (before softmax) and probabilities (after it) pass
through optional subgraphs, score_mod and prob_mod, run on the whole (B, Hq, L, S) tensor. K/V heads are shared by contiguous groups
of query heads (GQA). Everything from the scores on is computed in softmax_precision."""
from __future__ import annotations
import math
from tinygrad.dtype import dtypes
from tinygrad.onnx.ops.registry import op
from tinygrad.onnx.ops.common import onnx_dtype

def _modify(ctx, graph, x, what:str):
  if graph is None: return x
  if len(graph.inputs) != 1 or len(graph.outputs) != 1:
    raise ValueError(f"FlexAttention {what} must take one input and give one output, not {len(graph.inputs)} and {len(graph.outputs)}")
  y = ctx.run_graph(graph, [x], ctx.scope)[0]
  if y.shape != x.shape: raise ValueError(f"FlexAttention {what} must keep the shape {x.shape}, it gave {y.shape}")
  return y.cast(x.dtype)

@op("FlexAttention", domain="ai.onnx.preview", ctx=True)
def flex_attention(ctx, q, k, v, prob_mod=None, scale=None, score_mod=None, softmax_precision=None):
  if q.ndim != 4 or k.ndim != 4 or v.ndim != 4: raise ValueError(f"FlexAttention needs rank-4 Q, K, V, got {q.shape}, {k.shape}, {v.shape}")
  (b, hq, _, d), (_, hkv, s, _) = q.shape, k.shape
  if k.shape[0] != b or v.shape[:3] != k.shape[:3] or k.shape[3] != d or hq % hkv:
    raise ValueError(f"FlexAttention shapes do not fit: Q {q.shape}, K {k.shape}, V {v.shape} (q heads must be a multiple of kv heads)")
  if softmax_precision is not None: work = onnx_dtype(softmax_precision)
  elif dtypes.is_float(q.dtype): work = dtypes.float64 if q.dtype is dtypes.float64 else dtypes.float32
  else: raise TypeError(f"FlexAttention on {q.dtype} inputs needs softmax_precision")
  out_dt = q.dtype
  if hq != hkv: k, v = k.repeat_interleave(hq // hkv, 1), v.repeat_interleave(hq // hkv, 1)
  q, k, v = q.cast(work), k.cast(work), v.cast(work)
  scores = (q @ k.transpose(-2, -1)) * (scale if scale is not None else 1 / math.sqrt(d))
  probs = _modify(ctx, prob_mod, _modify(ctx, score_mod, scores, "score_mod").softmax(-1), "prob_mod")
  return (probs @ v).cast(out_dt)
