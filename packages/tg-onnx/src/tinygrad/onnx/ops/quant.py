"""Quantisation: (De)QuantizeLinear with per-tensor, per-axis and blocked scales, DynamicQuantizeLinear, the QLinear* and *Integer ops."""
from __future__ import annotations
from tinygrad.dtype import dtypes
from tinygrad.onnx.ops.registry import op
from tinygrad.onnx.ops.common import norm_axis, onnx_dtype
from tinygrad.onnx.ops.elementwise import cast_to, _SMALL_FLOATS

_INT_RANGE = {21: (0, 15), 22: (-8, 7), 25: (0, 3), 26: (-2, 1)}

def _per_axis(s, x, axis, block_size):
  """a scale or zero point broadcastable against x: scalar, one per element of `axis`, or one per block of `block_size` along it"""
  if s.ndim == 0 or (s.numel() == 1 and not block_size): return s.reshape(())
  a = norm_axis(axis, x.ndim)
  if block_size: return s.repeat_interleave(block_size, a).shrink(tuple((0, n) for n in x.shape))
  return s.reshape([-1 if i == a else 1 for i in range(x.ndim)])

@op("QuantizeLinear", ctx=True)
def quantize_linear(ctx, x, y_scale, y_zero_point=None, axis=1, block_size=0, output_dtype=0, saturate=1, precision=0):
  # the output type is the zero point's ONNX type (int4 and float8 zero points compute as int8 and float32 here)
  to = output_dtype or (ctx.onnx_type_id(y_zero_point) if y_zero_point is not None else 2)
  scale = _per_axis(y_scale, x, axis, block_size)
  y = x.cast(scale.dtype) / scale
  if to in _SMALL_FLOATS:
    zp = 0 if y_zero_point is None else _per_axis(y_zero_point, x, axis, block_size).cast(dtypes.float32)
    return cast_to(y + zp, to, saturate)
  y = y.round()
  if y_zero_point is not None: y = y + _per_axis(y_zero_point, x, axis, block_size).cast(y.dtype)
  lo, hi = _INT_RANGE.get(to) or (dtypes.min(onnx_dtype(to)), dtypes.max(onnx_dtype(to)))
  return y.clip(lo, hi).cast(onnx_dtype(to))

@op("DequantizeLinear")
def dequantize_linear(x, x_scale, x_zero_point=None, axis=1, block_size=0, output_dtype=0):
  scale = _per_axis(x_scale, x, axis, block_size)
  y = x.cast(dtypes.float32)
  if x_zero_point is not None: y = y - _per_axis(x_zero_point, x, axis, block_size).cast(dtypes.float32)
  return (y * scale.cast(dtypes.float32)).cast(onnx_dtype(output_dtype) if output_dtype else scale.dtype)

@op("DynamicQuantizeLinear")
def dynamic_quantize_linear(x):
  lo, hi = x.min().minimum(0), x.max().maximum(0)
  scale = (hi - lo) / 255
  zp = (-lo / scale).round().clip(0, 255)
  y = ((x / scale).round() + zp).clip(0, 255).cast(dtypes.uint8)
  return y, scale, zp.cast(dtypes.uint8)

def _requant(y, y_scale, y_zp):
  out = (y / y_scale).round() + y_zp.cast(dtypes.float32)
  return out.clip(dtypes.min(y_zp.dtype), dtypes.max(y_zp.dtype)).cast(y_zp.dtype)

@op("QLinearMatMul")
def qlinear_matmul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
  af = a.cast(dtypes.float32) - a_zp.cast(dtypes.float32).reshape(-1, 1) if a_zp.numel() > 1 else a.cast(dtypes.float32) - a_zp.cast(dtypes.float32)
  bf = b.cast(dtypes.float32) - b_zp.cast(dtypes.float32)
  sa = a_scale.reshape(-1, 1) if a_scale.numel() > 1 else a_scale
  return _requant((af * sa) @ (bf * b_scale), y_scale, y_zp)

@op("QLinearConv")
def qlinear_conv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, b=None, **attrs):
  from tinygrad.onnx.ops.nn import conv
  xf = (x.cast(dtypes.float32) - x_zp.cast(dtypes.float32)) * x_scale
  ws = w_scale.reshape(-1, *[1] * (w.ndim - 1)) if w_scale.numel() > 1 else w_scale
  wz = w_zp.cast(dtypes.float32).reshape(-1, *[1] * (w.ndim - 1)) if w_zp.numel() > 1 else w_zp.cast(dtypes.float32)
  wf = (w.cast(dtypes.float32) - wz) * ws
  bf = None if b is None else b.cast(dtypes.float32) * (x_scale * w_scale.flatten())
  return _requant(conv(xf, wf, bf, **attrs), y_scale, y_zp)

@op("ConvInteger")
def conv_integer(x, w, x_zero_point=None, w_zero_point=None, **attrs):
  from tinygrad.onnx.ops.nn import conv
  xi = x.cast(dtypes.int32) - (0 if x_zero_point is None else x_zero_point.cast(dtypes.int32))
  wz = 0 if w_zero_point is None else w_zero_point.cast(dtypes.int32).reshape(-1, *[1] * (w.ndim - 1)) if w_zero_point.numel() > 1 else \
    w_zero_point.cast(dtypes.int32)
  return conv(xi, w.cast(dtypes.int32) - wz, **attrs)
