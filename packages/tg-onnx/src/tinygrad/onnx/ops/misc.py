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
  cos, sin = cos[..., :rd // 2].unsqueeze(-3) if cos.ndim == 3 else cos[..., :rd // 2], sin[..., :rd // 2].unsqueeze(-3) if sin.ndim == 3 else sin[..., :rd // 2]
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
