"""DeformConv (deformable convolution v1/v2, N-D): every kernel tap of every output position reads the input at its regular place
plus a learned fractional offset, by (multi)linear interpolation with zeros outside the input, scaled by an optional mask. The
sampled taps form a (N, C, K, out) column tensor that a grouped matmul with the weights turns into the output."""
from __future__ import annotations
import itertools, math
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.onnx.ops.registry import op

def _check(x, w, offset, mask, nd:int, kernel, group:int, offset_group:int, out):
  n, c = x.shape[:2]
  k = math.prod(kernel)
  if group < 1 or offset_group < 1 or c % group or w.shape[0] % group or c % offset_group:
    raise ValueError(f"DeformConv needs C ({c}) and oC ({w.shape[0]}) divisible by group ({group}) and C by offset_group ({offset_group})")
  if w.shape[1] * group != c: raise ValueError(f"DeformConv weight {w.shape} takes {w.shape[1] * group} input channels, X {x.shape} has {c}")
  if any(o < 1 for o in out): raise ValueError(f"DeformConv output would be empty: spatial size {tuple(out)} for X {x.shape}")
  if offset.shape != (n, offset_group * k * nd, *out):
    raise ValueError(f"DeformConv offset must have shape {(n, offset_group * k * nd, *out)}, got {offset.shape}")
  if mask is not None and mask.shape != (n, offset_group * k, *out):
    raise ValueError(f"DeformConv mask must have shape {(n, offset_group * k, *out)}, got {mask.shape}")

@op("DeformConv", since=19)
def deform_conv(x, w, offset, b=None, mask=None, dilations=None, group=1, kernel_shape=None, offset_group=1, pads=None, strides=None):
  nd = x.ndim - 2
  if nd < 1 or w.ndim != x.ndim: raise ValueError(f"DeformConv needs X (N, C, D1..Dn) and W of the same rank, got {x.shape} and {w.shape}")
  kernel = list(kernel_shape or w.shape[2:])
  if tuple(kernel) != tuple(w.shape[2:]): raise ValueError(f"DeformConv kernel_shape {kernel} does not match W {w.shape}")
  strides, dilations, pads = strides or [1] * nd, dilations or [1] * nd, pads or [0] * 2 * nd
  n, c, *sizes = x.shape
  out = [(s + pads[i] + pads[i + nd] - d * (k - 1) - 1) // st + 1 for i, (s, k, st, d) in enumerate(zip(sizes, kernel, strides, dilations))]
  _check(x, w, offset, mask, nd, kernel, group, offset_group, out)
  k, q, og = math.prod(kernel), math.prod(out), offset_group
  work = dtypes.float64 if x.dtype is dtypes.float64 else dtypes.float32
  # sample position per axis: out index * stride - pad begin + kernel index * dilation + offset, laid out (N, og, K, q)
  off = offset.cast(work).reshape(n, og, k, nd, q)
  taps_per_axis = []
  for a in range(nd):
    o_shape, k_shape = [1] * nd, [1] * nd
    o_shape[a], k_shape[a] = out[a], kernel[a]
    base = (Tensor.arange(out[a], device=x.device).reshape(o_shape).expand(out) * strides[a] - pads[a]).reshape(1, 1, 1, q) \
         + (Tensor.arange(kernel[a], device=x.device).reshape(k_shape).expand(kernel) * dilations[a]).reshape(1, 1, k, 1)
    v = base.cast(work) + off[:, :, :, a]
    low = v.floor()
    frac = v - low
    taps_per_axis.append([(low, 1 - frac), (low + 1, frac)])
  flat_x = x.reshape(n, og, c // og, math.prod(sizes))
  cols = None
  for combo in itertools.product(*taps_per_axis):
    flat, valid, weight = None, None, None
    for (idx, wt), s in zip(combo, sizes):
      ok = (idx >= 0) & (idx <= s - 1)
      idx = ok.where(idx, 0).cast(dtypes.int32)
      flat = idx if flat is None else flat * s + idx
      valid = ok if valid is None else valid & ok
      weight = wt if weight is None else weight * wt
    m = k * q
    vals = flat_x.gather(3, flat.reshape(n, og, 1, m).expand(n, og, c // og, m)).cast(work)
    term = vals * valid.where(weight, 0).reshape(n, og, 1, m)
    cols = term if cols is None else cols + term
  if mask is not None: cols = cols * mask.cast(work).reshape(n, og, 1, k * q)
  # grouped contraction over (input channel of the group, kernel tap)
  cg = c // group
  cols = cols.contiguous().reshape(n, group, cg * k, q)  # once: fused into the matmul it would be rebuilt for every output channel
  wg = w.cast(work).reshape(group, w.shape[0] // group, cg * k)
  y = (wg.unsqueeze(0) @ cols).reshape(n, w.shape[0], *out)
  if b is not None: y = y + b.cast(work).reshape(1, -1, *[1] * nd)
  return y.cast(x.dtype)
