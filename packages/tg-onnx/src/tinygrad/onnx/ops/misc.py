"""Ops that fit no family: Unique, Det, windows, random numbers, RMS normalisation, rotary embeddings, crop/pad, affine grids."""
from __future__ import annotations
import math
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.onnx.ops.registry import op
from tinygrad.onnx.ops.common import norm_axis, norm_axes, onnx_dtype

@op("Unique", ctx=True)
def unique(ctx, x, axis=None, **attrs):
  # data-dependent output sizes: computed from the values in python (the input is read once)
  vals = ctx.vals(x)
  if axis is None: items, shape_rest = [(v,) for v in vals], ()
  else:
    a = norm_axis(axis, x.ndim)
    xt = x.transpose(0, a) if a else x
    n, rest = xt.shape[0], xt.shape[1:]
    flat = ctx.vals(xt.contiguous())
    step = math.prod(rest)
    items, shape_rest = [tuple(flat[i*step:(i+1)*step]) for i in range(n)], rest
  first, counts, order = {}, {}, []
  for i, it in enumerate(items):
    if it not in first: first[it], counts[it] = i, 0; order.append(it)
    counts[it] += 1
  keys = sorted(order) if attrs.get("sorted", 1) else order
  pos = {k: i for i, k in enumerate(keys)}
  inverse = [pos[it] for it in items]
  if axis is None: y = Tensor([k[0] for k in keys], dtype=x.dtype)
  else:
    y = Tensor([list(k) for k in keys], dtype=x.dtype).reshape(len(keys), *shape_rest)
    if a: y = y.transpose(0, a)
  i64 = lambda v: Tensor(v, dtype=dtypes.int64)
  return y, i64([first[k] for k in keys]), i64(inverse), i64([counts[k] for k in keys])

@op("Det")
def det(x):
  # Gaussian elimination with partial pivoting, unrolled over the (static) matrix size
  n = x.shape[-1]
  a = x.cast(dtypes.float32) if x.dtype != dtypes.float64 else x
  sign, ret = Tensor.ones(*x.shape[:-2], dtype=a.dtype), Tensor.ones(*x.shape[:-2], dtype=a.dtype)
  for k in range(n):
    col = a[..., k:, k].abs()
    p = col.argmax(-1) + k  # pivot row
    rows = Tensor.arange(n).reshape(*([1] * (x.ndim - 2)), n)
    pk = rows.eq(p.unsqueeze(-1))
    rk = rows.eq(k)
    prow, krow = (pk.unsqueeze(-1) * a).sum(-2), a[..., k, :]
    swapped = p.ne(k)
    sign = swapped.where(-sign, sign)
    a = rk.unsqueeze(-1).where(prow.unsqueeze(-2), pk.unsqueeze(-1).where(krow.unsqueeze(-2), a))
    piv = a[..., k, k]
    ret = ret * piv
    f = (a[..., :, k] / piv.unsqueeze(-1)) * (rows > k)
    a = a - f.unsqueeze(-1) * a[..., k, :].unsqueeze(-2)
  return (ret * sign).cast(x.dtype)

def _window(size, periodic, coeffs, dtype):
  n = size
  denom = n if periodic else n - 1
  i = Tensor.arange(n, dtype=dtypes.float32)
  w = Tensor.zeros(n, dtype=dtypes.float32) + coeffs[0]
  for k, c in enumerate(coeffs[1:], 1): w = w + (-1) ** k * c * (i * (2 * math.pi * k / max(denom, 1))).cos()
  return w.cast(onnx_dtype(dtype))

@op("HannWindow", ctx=True)
def hann(ctx, size, output_datatype=1, periodic=1): return _window(ctx.ints(size)[0], periodic, (0.5, 0.5), output_datatype)
@op("HammingWindow", ctx=True)
def hamming(ctx, size, output_datatype=1, periodic=1): return _window(ctx.ints(size)[0], periodic, (25 / 46, 21 / 46), output_datatype)
@op("BlackmanWindow", ctx=True)
def blackman(ctx, size, output_datatype=1, periodic=1): return _window(ctx.ints(size)[0], periodic, (0.42, 0.5, 0.08), output_datatype)

@op("RandomUniform")
def random_uniform(dtype=1, high=1.0, low=0.0, seed=None, shape=()):
  if seed is not None: Tensor.manual_seed(int(seed))
  return (Tensor.rand(*shape) * (high - low) + low).cast(onnx_dtype(dtype))
@op("RandomNormal")
def random_normal(dtype=1, mean=0.0, scale=1.0, seed=None, shape=()):
  if seed is not None: Tensor.manual_seed(int(seed))
  return (Tensor.randn(*shape) * scale + mean).cast(onnx_dtype(dtype))
@op("RandomUniformLike")
def random_uniform_like(x, dtype=None, high=1.0, low=0.0, seed=None):
  return random_uniform(dtype or _onnx_id(x.dtype), high, low, seed, x.shape)
@op("RandomNormalLike")
def random_normal_like(x, dtype=None, mean=0.0, scale=1.0, seed=None):
  return random_normal(dtype or _onnx_id(x.dtype), mean, scale, seed, x.shape)
@op("Bernoulli")
def bernoulli(x, dtype=None, seed=None):
  if seed is not None: Tensor.manual_seed(int(seed))
  return (Tensor.rand(*x.shape) < x).cast(onnx_dtype(dtype) if dtype is not None else x.dtype)

def _onnx_id(dt) -> int:
  from tinygrad.onnx.tensor_data import ONNX_TYPES
  return next(k for k, v in ONNX_TYPES.items() if v.dtype is dt and v.fmt is not None)

@op("RMSNormalization", since=23)
def rms_norm(x, scale, axis=-1, epsilon=1e-5, stash_type=1):
  ax = tuple(range(norm_axis(axis, x.ndim), x.ndim))
  xf = x.cast(dtypes.float32) if stash_type == 1 and x.dtype != dtypes.float64 else x
  return (xf * ((xf * xf).mean(ax, keepdim=True) + epsilon).rsqrt()).cast(x.dtype) * scale

def rotary(x, cos, sin, interleaved, rotary_dim):
  """x (..., D) with cos/sin (..., rotary_dim/2) broadcast against it: rotate pairs (halves, or adjacent elements when interleaved)"""
  rot, rest = x[..., :rotary_dim], x[..., rotary_dim:]
  if interleaved:
    a, b = rot[..., 0::2], rot[..., 1::2]
    out = Tensor.stack(a * cos - b * sin, b * cos + a * sin, dim=-1).reshape(rot.shape)
  else:
    h = rotary_dim // 2
    a, b = rot[..., :h], rot[..., h:]
    out = (a * cos - b * sin).cat(b * cos + a * sin, dim=-1)
  return out.cat(rest, dim=-1) if rest.shape[-1] else out

@op("RotaryEmbedding", since=23)
def rotary_embedding(x, cos_cache, sin_cache, position_ids=None, interleaved=0, num_heads=0, rotary_embedding_dim=0):
  three = x.ndim == 3  # (B, S, H*D) -> (B, H, S, D)
  if three: x = x.reshape(x.shape[0], x.shape[1], num_heads, -1).permute(0, 2, 1, 3)
  d = x.shape[-1]
  rd = rotary_embedding_dim or d
  if position_ids is not None: cos, sin = cos_cache[position_ids], sin_cache[position_ids]  # (B, S, rd/2)
  else: cos, sin = cos_cache, sin_cache
  # (B, S, rd/2) tables broadcast over the heads axis
  cos, sin = (t[..., :rd // 2].unsqueeze(-3) if t.ndim == 3 else t[..., :rd // 2] for t in (cos, sin))
  y = rotary(x, cos, sin, interleaved, rd)
  return y.permute(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1) if three else y

@op("CenterCropPad", ctx=True)
def center_crop_pad(ctx, x, shape, axes=None):
  ax = norm_axes(axes, x.ndim) if axes is not None else list(range(x.ndim))
  for a, want in zip(ax, ctx.ints(shape)):
    n = x.shape[a]
    if want < n:
      s = (n - want) // 2
      x = x.shrink(tuple((s, s + want) if i == a else None for i in range(x.ndim)))
    elif want > n:
      p = (want - n) // 2
      x = x.pad(tuple((p, want - n - p) if i == a else None for i in range(x.ndim)))
  return x

@op("AffineGrid", ctx=True)
def affine_grid(ctx, theta, size, align_corners=0):
  sz = ctx.ints(size)
  n, spatial = sz[0], sz[2:]
  def lin(k):
    v = Tensor.arange(k, dtype=dtypes.float32)
    return (v * 2 / (k - 1) - 1 if k > 1 else v * 0) if align_corners else (v * 2 + 1) / k - 1
  if len(spatial) == 2:
    h, w = spatial
    ys, xs = lin(h).reshape(h, 1).expand(h, w), lin(w).reshape(1, w).expand(h, w)
    base = Tensor.stack(xs, ys, Tensor.ones(h, w), dim=-1).reshape(1, h * w, 3)
    return (base @ theta.transpose(1, 2).cast(dtypes.float32)).reshape(n, h, w, 2).cast(theta.dtype)
  d, h, w = spatial
  zs = lin(d).reshape(d, 1, 1).expand(d, h, w)
  ys = lin(h).reshape(1, h, 1).expand(d, h, w)
  xs = lin(w).reshape(1, 1, w).expand(d, h, w)
  base = Tensor.stack(xs, ys, zs, Tensor.ones(d, h, w), dim=-1).reshape(1, d * h * w, 4)
  return (base @ theta.transpose(1, 2).cast(dtypes.float32)).reshape(n, d, h, w, 3).cast(theta.dtype)

@op("SwiGLU")
def swiglu(a, b, alpha=1.0):
  if a.shape != b.shape: raise ValueError(f"SwiGLU needs equal shapes (no broadcasting), got {a.shape} and {b.shape}")
  return a * (a * alpha).sigmoid().cast(a.dtype) * b

@op("BitCast")
def bitcast(x, to): return x.bitcast(onnx_dtype(to))

@op("CumProd", ctx=True)
def cumprod(ctx, x, axis_t, exclusive=0, reverse=0):
  a = norm_axis(ctx.ints(axis_t)[0], x.ndim)
  if reverse: x = x.flip(a)
  if exclusive:  # shift right by one along the axis, a 1 in front
    x = x.pad([(1, -1) if i == a else None for i in range(x.ndim)], value=1)
  y = x.cumprod(a)
  return y.flip(a) if reverse else y

@op("TensorScatter")
def tensor_scatter(past, update, write_indices=None, mode="linear", axis=-2):
  # cache position p of batch entry b takes update position p - write_indices[b] (mod the cache length when circular)
  a = norm_axis(axis, past.ndim)
  m, l = past.shape[a], update.shape[a]
  w = Tensor.zeros(past.shape[0], dtype=dtypes.int64) if write_indices is None else write_indices.cast(dtypes.int64)
  p = Tensor.arange(m, dtype=dtypes.int64).reshape([m if i == a else 1 for i in range(past.ndim)])
  src = p - w.reshape([-1] + [1] * (past.ndim - 1))
  if mode == "circular": src = src.mod(m)
  valid = (src >= 0) & (src < l)
  shape = [m if i == a else s for i, s in enumerate(past.shape)]
  idx = valid.where(src, 0).expand(shape).cast(dtypes.int32)
  return valid.expand(shape).where(update.gather(a, idx), past)

@op("CausalConvWithState")
def causal_conv_with_state(x, w, b=None, past_state=None, activation="none"):
  n, c, _ = x.shape
  k = w.shape[2]
  pad = Tensor.zeros(n, c, k - 1, dtype=x.dtype) if past_state is None else past_state
  xp = pad.cat(x, dim=2)
  # depthwise, no padding (the state is the left context), accumulated in float32
  y = xp.float().conv2d(w.float(), None if b is None else b.float(), groups=c).cast(x.dtype)
  if activation in ("silu", "swish"): y = (y.cast(dtypes.float32) * y.cast(dtypes.float32).sigmoid()).cast(x.dtype)
  return y, xp[:, :, xp.shape[2] - (k - 1):]

def _corners(b:list[float], center:int) -> tuple[float, float, float, float]:
  """(y1, x1, y2, x2) ordered so the first is the smaller; center_point_box boxes are (x_center, y_center, width, height)"""
  if center: return (b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2)
  return (min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3]))

def _iou(a, b) -> float:
  ih, iw = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
  if ih <= 0 or iw <= 0: return 0.0
  inter = ih * iw
  union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
  return inter / union if union > 0 else 0.0

@op("NonMaxSuppression", ctx=True)
def non_max_suppression(ctx, boxes, scores, max_output_boxes_per_class=None, iou_threshold=None, score_threshold=None, center_point_box=0):
  # the output's length depends on the values: computed in python from the (read once) boxes and scores
  limit = ctx.ints(max_output_boxes_per_class)[0] if max_output_boxes_per_class is not None and max_output_boxes_per_class.numel() else 0
  iou_t = float(ctx.vals(iou_threshold)[0]) if iou_threshold is not None and iou_threshold.numel() else 0.0
  score_t = float(ctx.vals(score_threshold)[0]) if score_threshold is not None and score_threshold.numel() else None
  nb, nc, n = scores.shape
  bv, sv = ctx.vals(boxes), ctx.vals(scores)
  out = []
  for b in range(nb):
    bx = [_corners(bv[(b * n + i) * 4:(b * n + i + 1) * 4], center_point_box) for i in range(n)]
    for c in range(nc):
      s = sv[(b * nc + c) * n:(b * nc + c + 1) * n]
      cand = sorted((i for i in range(n) if score_t is None or s[i] > score_t), key=lambda i: (-s[i], i))
      kept = []
      for i in cand:
        if len(kept) >= limit: break
        if all(_iou(bx[i], bx[k]) <= iou_t for k in kept): kept.append(i)
      out += [[b, c, i] for i in kept]
  return Tensor(out, dtype=dtypes.int64) if out else Tensor.zeros(0, 3, dtype=dtypes.int64)

def _dft(x, length, axis, inverse, onesided):
  """x (..., n, ..., 1 or 2): a real or (re, im) signal along `axis`; the transform as matmuls with cos/sin tables"""
  a = norm_axis(axis, x.ndim)
  re = x[..., 0].float()
  im = x[..., 1].float() if x.shape[-1] == 2 else re * 0
  re, im = re.transpose(a, -1), im.transpose(a, -1)
  n = re.shape[-1]
  if inverse and onesided:  # a half spectrum in, a real signal out: rebuild the other half from Hermitian symmetry
    L = length or 2 * (n - 1)
    re, im = re.cat(re[..., 1:L - n + 1].flip(-1), dim=-1), im.cat(-im[..., 1:L - n + 1].flip(-1), dim=-1)
    out = _dft(Tensor.stack(re.transpose(a, -1), im.transpose(a, -1), dim=-1), L, a, 1, 0)
    return out[..., :1]
  L = length or n
  if L != n: re, im = (t.pad([None] * (t.ndim - 1) + [(0, L - n)]) for t in (re, im))
  k = L // 2 + 1 if onesided else L
  sign = 1.0 if inverse else -1.0
  ang = [[2 * math.pi * i * t / L for t in range(L)] for i in range(k)]
  cos, sin = Tensor([[math.cos(v) for v in r] for r in ang]).T, Tensor([[sign * math.sin(v) for v in r] for r in ang]).T
  out_re, out_im = re @ cos - im @ sin, re @ sin + im @ cos
  if inverse: out_re, out_im = out_re / L, out_im / L
  return Tensor.stack(out_re.transpose(a, -1), out_im.transpose(a, -1), dim=-1).cast(x.dtype)

@op("DFT", since=17, ctx=True)
def dft_v17(ctx, x, dft_length=None, axis=1, inverse=0, onesided=0):
  return _dft(x, None if dft_length is None else ctx.ints(dft_length)[0], axis, inverse, onesided)

@op("DFT", since=20, ctx=True)
def dft(ctx, x, dft_length=None, axis=None, inverse=0, onesided=0):
  return _dft(x, None if dft_length is None or not dft_length.numel() else ctx.ints(dft_length)[0],
              -2 if axis is None else ctx.ints(axis)[0], inverse, onesided)

@op("STFT", ctx=True)
def stft(ctx, signal, frame_step, window=None, frame_length=None, onesided=1):
  step = ctx.ints(frame_step)[0]
  flen = ctx.ints(frame_length)[0] if frame_length is not None else window.shape[0]
  n = signal.shape[1]
  frames = Tensor.stack(*[signal[:, s:s + flen] for s in range(0, n - flen + 1, step)], dim=1)  # (B, F, flen, c)
  if window is not None: frames = frames * window.reshape(1, 1, -1, 1)
  return _dft(frames, None, 2, 0, onesided)

@op("MelWeightMatrix", ctx=True)
def mel_weight_matrix(ctx, num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz, output_datatype=1):
  """triangular filters evenly spaced on the mel scale (mel = 2595 log10(1 + f/700)), as (dft_length//2 + 1, num_mel_bins)"""
  n_mel, n_dft, rate = ctx.ints(num_mel_bins)[0], ctx.ints(dft_length)[0], ctx.vals(sample_rate)[0]
  lo, hi = (2595 * math.log10(1 + float(ctx.vals(t)[0]) / 700) for t in (lower_edge_hertz, upper_edge_hertz))
  step = (hi - lo) / (n_mel + 2)
  edges = [int((n_dft + 1) * (700 * (10 ** ((lo + i * step) / 2595) - 1)) // rate) for i in range(n_mel + 2)]  # spectrogram bin of each edge
  w = [[0.0] * n_mel for _ in range(n_dft // 2 + 1)]
  for m in range(n_mel):
    left, center, right = edges[m:m + 3]
    if center == left: w[center][m] = 1.0
    for j in range(left, center + 1):
      if center > left: w[j][m] = (j - left) / (center - left)
    for j in range(center, right): w[j][m] = (right - j) / (right - center)
  return Tensor(w, dtype=onnx_dtype(output_datatype))
