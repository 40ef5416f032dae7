"""Network layers: convolution, pooling, normalisation, Gemm/MatMul, dropout, losses, attention."""
from __future__ import annotations
import itertools, math
from tinygrad.tensor import Tensor
from tinygrad.tensor_conv import _windows
from tinygrad.dtype import dtypes
from tinygrad.onnx.ops.registry import op
from tinygrad.onnx.ops.common import norm_axis, norm_axes, onnx_dtype

_AUTO_PAD = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")

def _check_spatial(op_name:str, nd:int, auto_pad:str, **per_axis):
  """auto_pad one ONNX names, and each per-axis attribute (pads: a begin and an end) sized for the nd spatial axes: onnxruntime refuses
  others, and a short list would silently leave axes unpadded"""
  if auto_pad not in _AUTO_PAD: raise ValueError(f"{op_name}: auto_pad {auto_pad!r} is not one of {', '.join(_AUTO_PAD)}")
  for name, v in per_axis.items():
    if v is not None and len(v) != (want := 2 * nd if name == "pads" else nd):
      raise ValueError(f"{op_name}: attribute {name} {list(v)} has {len(v)} values; {nd} spatial axes need {want}")

def _auto_pads(in_shape, kernel, strides, dilations, auto_pad, pads):
  """ONNX pads (all begins, then all ends) for the spatial axes, auto_pad resolved"""
  nd = len(kernel)
  if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
    begins, ends = [], []
    for i, k, s, d in zip(in_shape, kernel, strides, dilations):
      total = max((math.ceil(i / s) - 1) * s + (k - 1) * d + 1 - i, 0)
      lo = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
      begins.append(lo); ends.append(total - lo)
    return begins + ends
  if auto_pad == "VALID": return [0] * 2 * nd
  return list(pads) if pads is not None else [0] * 2 * nd

def _torch_pads(pads):
  """ONNX (b1, b2, .., e1, e2, ..) -> pad()'s flat form, last axis first: (b_last, e_last, ...)"""
  n = len(pads) // 2
  return [p for i in reversed(range(n)) for p in (pads[i], pads[i + n])]

@op("Conv")
def conv(x, w, b=None, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, pads=None, strides=None):
  nd = w.ndim - 2
  _check_spatial("Conv", nd, auto_pad, dilations=dilations, kernel_shape=kernel_shape, pads=pads, strides=strides)
  if kernel_shape is not None and tuple(kernel_shape) != tuple(w.shape[2:]):
    raise ValueError(f"Conv: kernel_shape {list(kernel_shape)} is not the weight's spatial shape {list(w.shape[2:])}")
  strides, dilations = strides or [1] * nd, dilations or [1] * nd
  p = _auto_pads(x.shape[2:], w.shape[2:], strides, dilations, auto_pad, pads)
  dt = x.dtype
  if dt in (dtypes.float16, dtypes.bfloat16): x, w, b = x.float(), w.float(), None if b is None else b.float()  # accumulate in float32
  return x.conv2d(w, b, groups=group, stride=strides, dilation=dilations, padding=_torch_pads(p)).cast(dt)

@op("ConvTranspose")
def conv_transpose(x, w, b=None, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None, output_padding=None, output_shape=None,
                   pads=None, strides=None):
  nd = w.ndim - 2
  _check_spatial("ConvTranspose", nd, auto_pad, dilations=dilations, output_padding=output_padding, pads=pads, strides=strides)
  strides, dilations, output_padding = strides or [1] * nd, dilations or [1] * nd, output_padding or [0] * nd
  ks = w.shape[2:]
  if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
    out = output_shape[-nd:] if output_shape is not None else [i * s for i, s in zip(x.shape[2:], strides)]
    total = [s * (i - 1) + op_ + ((k - 1) * d + 1) - o for i, s, op_, k, d, o in zip(x.shape[2:], strides, output_padding, ks, dilations, out)]
    lo = [_transpose_pad_begin(t, auto_pad) for t in total]
    pads = lo + [t - l for t, l in zip(total, lo)]
  pads = pads or [0] * 2 * nd
  # conv_transpose2d takes symmetric padding: compute with none, then crop begins and ends (and extend by output_padding)
  y = x.conv_transpose2d(w, None, groups=group, stride=strides, dilation=dilations, padding=0, output_padding=output_padding)
  y = y.pad([None, None] + [(-pads[i], -pads[i + nd]) for i in range(nd)])  # positive pads crop; negative ones (a larger output_shape) extend
  return y if b is None else y + b.reshape(1, -1, *[1] * nd)

def _transpose_pad_begin(total:int, auto_pad:str) -> int:
  """the begin's share of ConvTranspose's total padding (negative: the output grows); SAME_UPPER gives the odd unit to the end"""
  if auto_pad == "SAME_UPPER": return total // 2
  if auto_pad == "SAME_LOWER": return total - total // 2
  # an output_shape alone: an odd crop starts at the begin, but growth all goes to the end (onnxruntime, the reference evaluator)
  return max(total - total // 2, 0)

def _pool_pads(x, kernel_shape, strides, dilations, auto_pad, pads, op_name):
  if kernel_shape is None or len(kernel_shape) != x.ndim - 2:
    raise ValueError(f"{op_name}: kernel_shape {kernel_shape} must give a size for each of the input's {x.ndim - 2} spatial axes")
  nd = len(kernel_shape)
  _check_spatial(op_name, nd, auto_pad, dilations=dilations, pads=pads, strides=strides)
  strides, dilations = strides or [1] * nd, dilations or [1] * nd
  return strides, dilations, _auto_pads(x.shape[2:], kernel_shape, strides, dilations, auto_pad, pads)

def _ceil_extra(x, kernel_shape, strides, dilations, p, ceil_mode):
  """extra padding at the end for ceil_mode; ONNX drops a last window that would start in the end padding"""
  nd, extra = len(kernel_shape), []
  for i, (n, k, s, d) in enumerate(zip(x.shape[2:], kernel_shape, strides, dilations)):
    eff, total = (k - 1) * d + 1, n + p[i] + p[i + nd]
    out = (math.ceil if ceil_mode else math.floor)((total - eff) / s) + 1
    if ceil_mode and (out - 1) * s >= n + p[i]: out -= 1
    extra.append(max((out - 1) * s + eff - total, 0))
  return extra

def _windows_reduce(x, kernel_shape, strides, dilations, p, extra, value, reduce):
  nd = len(kernel_shape)
  flat = _torch_pads([p[i] for i in range(nd)] + [p[i + nd] + extra[i] for i in range(nd)])
  w = _windows(x.pad(flat, value=value), tuple(kernel_shape), tuple(strides), tuple(dilations))
  return reduce(w, tuple(range(-nd, 0)))

@op("MaxPool")
def max_pool(x, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, pads=None, storage_order=0, strides=None):
  strides, dilations, p = _pool_pads(x, kernel_shape, strides, dilations, auto_pad, pads, "MaxPool")
  extra = _ceil_extra(x, kernel_shape, strides, dilations, p, ceil_mode)
  lowest = -math.inf if dtypes.is_float(x.dtype) else dtypes.min(x.dtype)
  out = _windows_reduce(x, kernel_shape, strides, dilations, p, extra, lowest, lambda w, a: w.max(a))
  # indices: flat position in the unpadded input (row-major, or column-major with storage_order=1)
  nd, sp = len(kernel_shape), x.shape[2:]
  pos = Tensor.arange(math.prod(sp), dtype=dtypes.int64).reshape(sp)
  if storage_order: pos = Tensor.arange(math.prod(sp), dtype=dtypes.int64).reshape(sp[::-1]).permute(list(range(nd))[::-1])
  pos = pos.reshape(1, 1, *sp).expand(x.shape)
  big = _windows_reduce(x, kernel_shape, strides, dilations, p, extra, lowest, lambda w, a: w)
  pw = _windows_reduce(pos, kernel_shape, strides, dilations, p, extra, -1, lambda w, a: w)
  # the padding (position -1) holds the lowest value too: a window of only -inf must still point at one of its real elements
  hit = big.eq(out.reshape(*out.shape, *[1] * nd)) & (pw >= 0)
  n = x.shape[0] * x.shape[1] * math.prod(sp)
  cand = hit.where(pw, n + 1).min(tuple(range(-nd, 0)))
  base = (Tensor.arange(x.shape[0] * x.shape[1], dtype=dtypes.int64) * math.prod(sp)).reshape(x.shape[0], x.shape[1], *[1] * nd)
  return out, cand + base

@op("AveragePool")
def avg_pool(x, auto_pad="NOTSET", ceil_mode=0, count_include_pad=0, dilations=None, kernel_shape=None, pads=None, strides=None):
  strides, dilations, p = _pool_pads(x, kernel_shape, strides, dilations, auto_pad, pads, "AveragePool")
  extra = _ceil_extra(x, kernel_shape, strides, dilations, p, ceil_mode)
  s = _windows_reduce(x, kernel_shape, strides, dilations, p, extra, 0, lambda w, a: w.sum(a))
  # the divisor: every in-bounds tap (count_include_pad counts the explicit padding too, never ceil_mode's extra)
  nd = len(kernel_shape)
  ones = Tensor.ones(1, 1, *x.shape[2:], dtype=x.dtype)
  if count_include_pad: ones, p2 = ones.pad(_torch_pads(p), value=1), [0] * 2 * nd
  else: p2 = p
  cnt = _windows_reduce(ones, kernel_shape, strides, dilations, p2, extra, 0, lambda w, a: w.sum(a))
  return s / cnt

@op("LpPool")
def lp_pool(x, auto_pad="NOTSET", ceil_mode=0, dilations=None, kernel_shape=None, p=2, pads=None, strides=None):
  strides, dilations, pd = _pool_pads(x, kernel_shape, strides, dilations, auto_pad, pads, "LpPool")
  extra = _ceil_extra(x, kernel_shape, strides, dilations, pd, ceil_mode)
  return _windows_reduce(x.abs().pow(p), kernel_shape, strides, dilations, pd, extra, 0, lambda w, a: w.sum(a)).pow(1 / p)

@op("GlobalAveragePool")
def global_avg_pool(x): return x.mean(tuple(range(2, x.ndim)), keepdim=True)
@op("GlobalMaxPool")
def global_max_pool(x): return x.max(tuple(range(2, x.ndim)), keepdim=True)
@op("GlobalLpPool")
def global_lp_pool(x, p=2): return x.abs().pow(p).sum(tuple(range(2, x.ndim)), keepdim=True).pow(1 / p)

@op("MaxUnpool", ctx=True)
def max_unpool(ctx, x, indices, output_shape=None, kernel_shape=None, pads=None, strides=None):
  nd = len(kernel_shape)
  strides, pads = strides or [1] * nd, pads or [0] * 2 * nd
  out = list(x.shape[:2]) + [(i - 1) * s - pads[j] - pads[j + nd] + k for j, (i, s, k) in enumerate(zip(x.shape[2:], strides, kernel_shape))]
  y = Tensor.zeros(math.prod(out), dtype=x.dtype).scatter(0, indices.flatten(), x.flatten()).reshape(out)
  if output_shape is None: return y
  # indices address the default output; a larger output_shape gets the extra room at the end of each axis
  return y.pad([(0, o - s) for o, s in zip(ctx.ints(output_shape), out)])

@op("BatchNormalization")
def batch_norm(x, scale, b, mean, var, epsilon=1e-5, momentum=0.9, training_mode=0, spatial=1, is_test=0):
  if training_mode:
    ax = tuple(i for i in range(x.ndim) if i != 1)
    bm, bv = x.mean(ax), x.var(ax, correction=0)
    y = x.batchnorm(scale, b, bm, (bv + epsilon).rsqrt()).cast(x.dtype)
    return y, mean * momentum + bm * (1 - momentum), var * momentum + bv * (1 - momentum)
  # Y is X's type (T): float32 parameters (T1, T2) with a float16 X promote the computation, not the result
  return x.batchnorm(scale, b, mean, (var + epsilon).rsqrt()).cast(x.dtype)

def _stash(x, stash_type:int):
  """the dtype the normalisations' first stage (mean, variance) runs in: stash_type's (float32 by default, so float16 sums of squares
  cannot overflow); float64 stays float64, as onnxruntime and the reference compute it"""
  return x.dtype if x.dtype is dtypes.float64 else onnx_dtype(stash_type)

@op("InstanceNormalization")
def instance_norm(x, scale, b, epsilon=1e-5):
  y = x.cast(_stash(x, 1)).layernorm(tuple(range(2, x.ndim)), epsilon).cast(x.dtype)  # no stash_type: float32 as onnxruntime
  shape = (1, -1) + (1,) * (x.ndim - 2)
  return y * scale.reshape(shape) + b.reshape(shape)

@op("LayerNormalization")
def layer_norm(x, scale, b=None, axis=-1, epsilon=1e-5, stash_type=1):
  a = norm_axis(axis, x.ndim)
  ax = tuple(range(a, x.ndim))
  xf = x.cast(_stash(x, stash_type))
  mean = xf.mean(ax, keepdim=True)
  inv = ((xf - mean) * (xf - mean)).mean(ax, keepdim=True).add(epsilon).rsqrt()
  y = ((xf - mean) * inv).cast(x.dtype) * scale
  # Mean and InvStdDev are of stash_type's type (U), whatever X's
  return (y if b is None else y + b), mean.cast(onnx_dtype(stash_type)), inv.cast(onnx_dtype(stash_type))

@op("GroupNormalization")
def group_norm(x, scale, bias, epsilon=1e-5, num_groups=1, stash_type=1):
  n, c = x.shape[:2]
  g = x.cast(_stash(x, stash_type)).reshape(n, num_groups, -1).layernorm(-1, epsilon).reshape(x.shape).cast(x.dtype)
  shape = (1, c) + (1,) * (x.ndim - 2)
  if scale.shape[0] != c:  # opset 18 had one scale per group
    scale, bias = scale.repeat_interleave(c // num_groups, 0), bias.repeat_interleave(c // num_groups, 0)
  return g * scale.reshape(shape) + bias.reshape(shape)

@op("MeanVarianceNormalization")
def mvn(x, axes=(0, 2, 3)):
  ax = tuple(norm_axes(axes, x.ndim))
  y = x - x.mean(ax, keepdim=True)
  return y / ((y * y).mean(ax, keepdim=True).sqrt() + 1e-9)

@op("LRN")
def lrn(x, size, alpha=1e-4, beta=0.75, bias=1.0):
  # the sum of squares over a window of `size` channels around each channel
  n, c = x.shape[:2]
  sq = (x * x).reshape(n, c, -1).permute(0, 2, 1).pad(((0, 0), (0, 0), ((size - 1) // 2, (size - 1) - (size - 1) // 2)))
  s = _windows(sq, (size,), (1,), (1,)).sum(-1).permute(0, 2, 1).reshape(x.shape)
  return x / (s * (alpha / size) + bias).pow(beta)

@op("LpNormalization")
def lp_norm(x, axis=-1, p=2):
  n = x.abs().sum(axis, keepdim=True) if p == 1 else (x * x).sum(axis, keepdim=True).sqrt()
  return n.eq(0).where(0, x / n)

@op("Gemm")
def gemm(a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0, broadcast=0):
  y = (a.T if transA else a) @ (b.T if transB else b)
  if alpha != 1.0: y = y * alpha
  return y if c is None else y + (c * beta if beta != 1.0 else c)

_HALF = (dtypes.float16, dtypes.bfloat16)

@op("MatMul")
def matmul(a, b): return (a.float() @ b.float()).cast(a.dtype) if a.dtype in _HALF else a @ b  # half products accumulate in float32

@op("MatMulInteger")
def matmul_integer(a, b, a_zero_point=None, b_zero_point=None):
  a = a.cast(dtypes.int32) - (0 if a_zero_point is None else a_zero_point.cast(dtypes.int32).reshape(-1, 1) if a_zero_point.ndim == 1 and
                               a_zero_point.shape[0] > 1 else a_zero_point.cast(dtypes.int32))
  b = b.cast(dtypes.int32) - (0 if b_zero_point is None else b_zero_point.cast(dtypes.int32))
  return a @ b

@op("Einsum")
def einsum(*xs, equation): return Tensor.einsum(equation, *xs)

@op("Dropout", since=1)
def dropout_v1(x, ratio=0.5, is_test=0, seed=None): return x, Tensor.ones(*x.shape, dtype=dtypes.bool)
@op("Dropout", since=12, ctx=True)
def dropout(ctx, x, ratio=None, training_mode=None, seed=None):
  train = training_mode is not None and bool(ctx.vals(training_mode)[0])
  r = 0.5 if ratio is None else float(ctx.vals(ratio)[0])
  if not train or r == 0: return x, Tensor.ones(*x.shape, dtype=dtypes.bool)
  if seed is not None: Tensor.manual_seed(seed)
  mask = Tensor.rand(*x.shape) >= r
  return mask.where(x / (1 - r), 0).cast(x.dtype), mask

def _nll(logp, target, weight, ignore_index, reduction):
  """logp (N, C, *d), target (N, *d)"""
  t = target.cast(dtypes.int64)
  valid = t.ne(ignore_index) if ignore_index is not None else Tensor.ones(*t.shape, dtype=dtypes.bool)
  tc = valid.where(t, 0)
  picked = logp.gather(1, tc.unsqueeze(1)).squeeze(1)
  w = (weight[tc.cast(dtypes.int32)] if weight is not None else Tensor.ones(*t.shape, dtype=logp.dtype)) * valid.cast(logp.dtype)
  loss = -picked * w
  if reduction == "none": return loss
  if reduction == "sum": return loss.sum()
  return loss.sum() / w.sum()

@op("NegativeLogLikelihoodLoss")
def nll_loss(x, target, weight=None, ignore_index=None, reduction="mean"): return _nll(x, target, weight, ignore_index, reduction)

@op("SoftmaxCrossEntropyLoss")
def softmax_ce(scores, labels, weights=None, ignore_index=None, reduction="mean"):
  logp = scores.log_softmax(1)
  return _nll(logp, labels, weights, ignore_index, reduction), logp

@op("Attention", since=23)
def attention(q, k, v, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None, is_causal=0, kv_num_heads=None, q_num_heads=None,
              qk_matmul_output_mode=0, scale=None, softcap=None, softmax_precision=None, left_window_size=-1, right_window_size=-1):
  three, out_dt = q.ndim == 3, q.dtype
  if out_dt in (dtypes.float16, dtypes.bfloat16):  # half inputs are computed in float32 and rounded once at the end
    q, k, v = q.float(), k.float(), v.float()
    past_key, past_value = (None if t is None else t.float() for t in (past_key, past_value))
    attn_mask = attn_mask.float() if attn_mask is not None and attn_mask.dtype is not dtypes.bool else attn_mask
  if three:  # (B, S, H*D) -> (B, H, S, D)
    q, k, v = (t.reshape(t.shape[0], t.shape[1], n, -1).permute(0, 2, 1, 3) for t, n in ((q, q_num_heads), (k, kv_num_heads), (v, kv_num_heads)))
  if past_key is not None: k, v = past_key.cat(k, dim=2), past_value.cat(v, dim=2)
  present_k, present_v = k, v
  L, S = q.shape[2], k.shape[2]
  # one additive bias: the mask (bool: keep where True; padded with "masked" up to S), causal and sliding windows, kv padding
  bias = Tensor.zeros(L, S, dtype=q.dtype)
  if attn_mask is not None:
    m = attn_mask.where(0, -math.inf).cast(q.dtype) if attn_mask.dtype is dtypes.bool else attn_mask
    if m.shape[-1] < S: m = m.pad([None] * (m.ndim - 1) + [(0, S - m.shape[-1])], value=-math.inf)
    bias = bias + m
  i, j = Tensor.arange(L).reshape(L, 1), Tensor.arange(S).reshape(1, S)
  # query i sits at position i + offset of the keys: after the past cache, or at the end of each batch entry's valid keys
  offset = nonpad_kv_seqlen.reshape(-1, 1, 1, 1) - L if nonpad_kv_seqlen is not None and past_key is None else \
    (past_key.shape[2] if past_key is not None else 0)
  diff = i + offset - j
  if is_causal: bias = (diff >= 0).where(bias, -math.inf)
  if left_window_size >= 0: bias = (diff <= left_window_size).where(bias, -math.inf)
  if right_window_size >= 0: bias = (-diff <= right_window_size).where(bias, -math.inf)
  if nonpad_kv_seqlen is not None: bias = (j < nonpad_kv_seqlen.reshape(-1, 1, 1, 1)).where(bias, -math.inf)
  if k.shape[1] != q.shape[1]: k, v = k.repeat_interleave(q.shape[1] // k.shape[1], 1), v.repeat_interleave(q.shape[1] // v.shape[1], 1)
  root = math.sqrt(scale if scale is not None else 1 / math.sqrt(q.shape[-1]))  # both sides scaled by its root, as the spec's function does
  qk = (q * root) @ (k * root).transpose(-2, -1)
  if softcap: qk = (qk / softcap).tanh() * softcap
  qk_out, qkb = qk, qk + bias
  if qk_matmul_output_mode == 2: qk_out = qkb
  if softmax_precision is not None: qkb = qkb.cast(onnx_dtype(softmax_precision))
  # a row with every key masked gives zeros, not the NaN of softmax over -inf
  w = (bias.max(-1, keepdim=True) == -math.inf).where(0, qkb.softmax(-1))
  if qk_matmul_output_mode == 3: qk_out = w
  y = w.cast(q.dtype) @ v
  if three: y = y.permute(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
  return y.cast(out_dt), present_k.cast(out_dt), present_v.cast(out_dt), qk_out.cast(out_dt)

@op("LinearAttention")
def linear_attention(q, k, v, past_state=None, decay=None, beta=None, chunk_size=None, kv_num_heads=None, q_num_heads=None, scale=None,
                     update_rule="gated_delta"):
  # a recurrent state S (d_k x d_v) per head, stepped over time: decay gates it, the delta rule corrects v by what S already recalls
  gating, delta = update_rule in ("gated", "gated_delta"), update_rule in ("delta", "gated_delta")
  b, t, _ = q.shape
  heads = lambda x, h: x.reshape(b, t, h, -1).permute(0, 2, 1, 3).float()
  q4, k4, v4 = heads(q, q_num_heads), heads(k, kv_num_heads), heads(v, kv_num_heads)
  dk, dv, group = q4.shape[-1], v4.shape[-1], q_num_heads // kv_num_heads
  g4 = heads(decay, kv_num_heads) if gating else None  # (B, H, T, 1 or d_k)
  b4 = beta.reshape(b, t, beta.shape[-1], 1).permute(0, 2, 1, 3).float() if delta else None
  state = past_state.float() if past_state is not None else Tensor.zeros(b, kv_num_heads, dk, dv)
  sc = scale if scale else 1 / math.sqrt(dk)
  outs = []
  for i in range(t):
    kt, vt = k4[:, :, i], v4[:, :, i]
    if gating: state = state * g4[:, :, i].exp().unsqueeze(-1)
    if delta: vt = b4[:, :, i] * (vt - (state * kt.unsqueeze(-1)).sum(-2))
    state = state + kt.unsqueeze(-1) * vt.unsqueeze(-2)
    read = state.repeat_interleave(group, 1) if group > 1 else state
    outs.append((q4[:, :, i].unsqueeze(-1) * read).sum(-2) * sc)
  y = Tensor.stack(*outs, dim=2).permute(0, 2, 1, 3).reshape(b, t, -1)
  return y.cast(q.dtype), state.cast(past_state.dtype if past_state is not None else q.dtype)

@op("Col2Im", ctx=True)
def col2im(ctx, x, image_shape, block_shape, dilations=None, pads=None, strides=None):
  """the sum of sliding blocks back into an image: for each kernel offset, its column of values is spread over the output grid with
  the stride and shifted by offset * dilation (the inverse of an im2col)"""
  img, blk = ctx.ints(image_shape), ctx.ints(block_shape)
  nd = len(img)
  dil, st, pd = dilations or [1] * nd, strides or [1] * nd, pads or [0] * 2 * nd
  n, ck, _ = x.shape
  c = ck // math.prod(blk)
  padded = [i + pd[d] + pd[d + nd] for d, i in enumerate(img)]
  grid = [(p - (k - 1) * dl - 1) // s + 1 for p, k, dl, s in zip(padded, blk, dil, st)]
  cols = x.reshape(n, c, math.prod(blk), *grid)
  out = None
  for j, offs in enumerate(itertools.product(*[range(k) for k in blk])):
    v = cols[:, :, j]
    for d in range(nd):  # spread axis d by its stride: (g) -> (g*s), values at multiples of s
      a = 2 + d
      s = st[d]
      v = v.unsqueeze(a + 1).pad([None] * (a + 1) + [(0, s - 1)] + [None] * (v.ndim - a - 1)).flatten(a, a + 1)
      begin = offs[d] * dil[d]
      v = v.pad([None] * a + [(begin, padded[d] - begin - v.shape[a])] + [None] * (v.ndim - a - 1))
    out = v if out is None else out + v
  return out.shrink(((0, n), (0, c)) + tuple((pd[d], pd[d] + img[d]) for d in range(nd)))
