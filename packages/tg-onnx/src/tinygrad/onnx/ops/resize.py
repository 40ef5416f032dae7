"""Resize (and the older Upsample): per axis, each output position maps back to a source coordinate (coordinate_transformation_mode);
nearest picks one source index, linear and cubic weigh a window of them. The weights are a small (out x in) matrix built in python
and applied with a matmul, so every mode is one lazy graph."""
from __future__ import annotations
import math
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.onnx.ops.registry import op
from tinygrad.uop.ops import UOp
from tinygrad.onnx.ops.common import norm_axes, show

_MODES = ("nearest", "linear", "cubic")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_CTMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn")
_POLICIES = ("stretch", "not_larger", "not_smaller")

def _source(x:int, scale:float, n_in:int, n_out:int, mode:str, roi:tuple[float, float]) -> float:
  """the source coordinate of output position x; ONNX measures the output by scale * n_in (a float), not by its integer size"""
  out_f = scale * n_in
  if mode == "half_pixel": return (x + 0.5) / scale - 0.5
  if mode == "half_pixel_symmetric":
    adj = n_out / (scale * n_in)
    return n_in / 2 * (1 - adj) + (x + 0.5) / scale - 0.5
  if mode == "pytorch_half_pixel": return (x + 0.5) / scale - 0.5 if out_f > 1 else 0.0
  if mode == "align_corners": return 0.0 if out_f == 1 else x * (n_in - 1) / (out_f - 1)
  if mode == "asymmetric": return x / scale
  if mode == "tf_half_pixel_for_nn": return (x + 0.5) / scale  # opset 11 only
  if mode == "tf_crop_and_resize":
    lo, hi = roi
    return lo * (n_in - 1) + x * (hi - lo) * (n_in - 1) / (out_f - 1) if out_f > 1 else 0.5 * (lo + hi) * (n_in - 1)
  raise ValueError(f"Resize coordinate_transformation_mode {mode!r} is not one ONNX defines")

def _nearest(xo:float, mode:str) -> int:
  f = math.floor(xo)
  if mode == "floor": return f
  if mode == "ceil": return math.ceil(xo)
  if xo - f == 0.5: return f if mode == "round_prefer_floor" else f + 1
  return round(xo)

def _kernel(t:float, mode:str, a:float) -> float:
  t = abs(t)
  if mode == "linear": return max(0.0, 1 - t)
  if t <= 1: return (a + 2) * t**3 - (a + 3) * t**2 + 1
  return a * t**3 - 5 * a * t**2 + 8 * a * t - 4 * a if t < 2 else 0.0

def _weights(n_in, n_out, scale, mode, ctm, roi, a, exclude_outside, antialias) -> list[list[float]]:
  s = min(scale, 1.0) if antialias else 1.0  # antialiasing widens the filter by 1/scale when shrinking
  radius = (1 if mode == "linear" else 2) / s
  rows = []
  for x in range(n_out):
    xo, row = _source(x, scale, n_in, n_out, ctm, roi), [0.0] * n_in
    taps = [(j, _kernel((j - xo) * s, mode, a)) for j in range(math.floor(xo - radius), math.ceil(xo + radius) + 1)]
    if exclude_outside: taps = [(j, w) for j, w in taps if 0 <= j < n_in]
    total = sum(w for _, w in taps)
    for j, w in taps: row[min(max(j, 0), n_in - 1)] += w / total if antialias or exclude_outside else w
    rows.append(row)
  return rows

def resize_nd(x, out_sizes, scales, axes, mode="nearest", ctm="half_pixel", nearest_mode="round_prefer_floor", cubic_coeff_a=-0.75,
              exclude_outside=0, extrapolation_value=0.0, antialias=0, roi=None):
  outside = None
  for k, a in enumerate(axes):
    n_in, n_out = x.shape[a], out_sizes[k]
    r = (roi[k], roi[k + len(axes)]) if roi else (0.0, 1.0)
    if n_in == n_out and ctm != "tf_crop_and_resize" and scales[k] == 1: continue
    if isinstance(n_in, UOp) or isinstance(n_out, UOp): raise _symbolic_resize(n_in, n_out)
    src = [_source(i, scales[k], n_in, n_out, ctm, r) for i in range(n_out)]
    if ctm == "tf_crop_and_resize":
      m = Tensor([not 0 <= v <= n_in - 1 for v in src]).reshape([-1 if i == a else 1 for i in range(x.ndim)])
      outside = m if outside is None else outside | m
    if mode == "nearest":
      idx = [min(max(_nearest(v, nearest_mode), 0), n_in - 1) for v in src]
      x = x[(slice(None),) * a + (Tensor(idx, dtype=dtypes.int32),)]
    else:
      w = Tensor(_weights(n_in, n_out, scales[k], mode, ctm, r, cubic_coeff_a, exclude_outside, antialias), dtype=dtypes.float32)
      dt = x.dtype
      y = (x.cast(dtypes.float32).transpose(a, -1) @ w.T).transpose(a, -1)
      x = y.round().clip(dtypes.min(dt), dtypes.max(dt)).cast(dt) if not dtypes.is_float(dt) else y.cast(dt)
  return x if outside is None else outside.where(extrapolation_value, x).cast(x.dtype)

@op("Resize", since=10, ctx=True)
def resize(ctx, x, roi=None, scales=None, sizes=None, antialias=0, axes=None, coordinate_transformation_mode="half_pixel",
           cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0, keep_aspect_ratio_policy="stretch", mode="nearest",
           nearest_mode="round_prefer_floor"):
  if ctx.opsets.get("", 1) < 11:  # opset 10: (X, scales), Upsample's asymmetric coordinates and flooring nearest
    scales, roi, coordinate_transformation_mode, nearest_mode = roi, None, "asymmetric", "floor"
  for name, v, allowed in [("mode", mode, _MODES), ("nearest_mode", nearest_mode, _NEAREST_MODES),
                           ("coordinate_transformation_mode", coordinate_transformation_mode, _CTMS),
                           ("keep_aspect_ratio_policy", keep_aspect_ratio_policy, _POLICIES)]:
    if v not in allowed: raise ValueError(f"{ctx.describe()}: {name} {v!r} is not one of {', '.join(allowed)}")
  ax = norm_axes(axes, x.ndim) if axes is not None else list(range(x.ndim))
  roi_v = ctx.vals(roi) if roi is not None and roi.numel() else None
  if roi_v is not None and len(roi_v) == 2 * x.ndim and len(ax) != x.ndim: roi_v = [roi_v[a] for a in ax] + [roi_v[a + x.ndim] for a in ax]
  if sizes is not None and sizes.numel():
    sz = _per_axis(ctx, "sizes", ctx.ints(sizes), x.ndim, ax)
    if keep_aspect_ratio_policy == "stretch": sc = [_ratio(o, x.shape[a]) for o, a in zip(sz, ax)]
    else:
      pick = min if keep_aspect_ratio_policy == "not_larger" else max
      s = pick(_ratio(o, x.shape[a]) for o, a in zip(sz, ax))
      sc, sz = [s] * len(ax), [_scaled(x.shape[a], s, 0.5) for a in ax]
  elif scales is not None and scales.numel():
    sc = _per_axis(ctx, "scales", [float(v) for v in ctx.vals(scales)], x.ndim, ax)
    sz = [_scaled(x.shape[a], s) for a, s in zip(ax, sc)]
  else: raise ValueError(f"{ctx.describe()}: Resize needs scales or sizes")
  return resize_nd(x, sz, sc, ax, mode, coordinate_transformation_mode, nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value,
                   antialias, roi_v)

def _per_axis(ctx, name:str, vals:list, ndim:int, ax:list[int]) -> list:
  """one value per resized axis: a full-rank list given with axes picks those axes' values"""
  if len(vals) == ndim and len(ax) != ndim: vals = [vals[a] for a in ax]
  if len(vals) != len(ax): raise ValueError(f"{ctx.describe()}: {name} has {len(vals)} values {vals}; the {len(ax)} resized axes need {len(ax)}")
  return vals

def _ratio(out, n) -> float:
  if out is n: return 1.0  # an axis of symbolic size (dynamic=) can only keep its size
  if isinstance(out, UOp) or isinstance(n, UOp): raise _symbolic_resize(n, out)
  return out / n

def _symbolic_resize(n_in, n_out) -> NotImplementedError:
  return NotImplementedError(f"Resize of an axis of symbolic size {show(n_in)} to {show(n_out)} (dynamic=): the weights are built in python "
                             "for known sizes, so such an axis can only keep its size (scale 1)")

def _scaled(n, scale:float, rounding:float=0.0):
  """n * scale, floored (or rounded half up): a symbolic size keeps itself at scale 1"""
  if scale == 1: return n
  if isinstance(n, UOp): raise _symbolic_resize(n, f"{scale} times it")
  return math.floor(n * scale + rounding)

@op("Upsample", since=7)
def upsample_v7(x, mode="nearest", scales=()): return _upsample(x, list(scales), mode)
@op("Upsample", since=9, ctx=True)
def upsample(ctx, x, scales, mode="nearest"): return _upsample(x, [float(v) for v in ctx.vals(scales)], mode)

def _upsample(x, sc, mode):
  if mode not in ("nearest", "linear", "bilinear"): raise ValueError(f"Upsample: mode {mode!r} is not one of nearest, linear, bilinear")
  if len(sc) != x.ndim: raise ValueError(f"Upsample: scales has {len(sc)} values {sc}; the input's rank {x.ndim} needs {x.ndim}")
  ax = list(range(x.ndim))
  return resize_nd(x, [_scaled(x.shape[a], s) for a, s in zip(ax, sc)], sc, ax, "linear" if mode in ("linear", "bilinear") else "nearest",
                   "asymmetric", "floor")
