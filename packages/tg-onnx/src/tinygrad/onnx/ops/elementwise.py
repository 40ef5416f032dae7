"""Elementwise ops: unary math, activations, binary arithmetic, comparisons, logic and bit ops, casts."""
from __future__ import annotations
import math
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.onnx.ops.registry import op
from tinygrad.onnx.ops.common import onnx_dtype, is_float

# *** unary: a Tensor method each ***
for _name, _fn in {"Abs": Tensor.abs, "Neg": Tensor.neg, "Reciprocal": Tensor.reciprocal, "Floor": Tensor.floor, "Ceil": Tensor.ceil,
                   "Sqrt": Tensor.sqrt, "Relu": Tensor.relu, "Exp": Tensor.exp, "Log": Tensor.log, "Tanh": Tensor.tanh, "Sigmoid": Tensor.sigmoid,
                   "Sin": Tensor.sin, "Cos": Tensor.cos, "Tan": Tensor.tan, "Asin": Tensor.asin, "Acos": Tensor.acos, "Atan": Tensor.atan,
                   "Sinh": Tensor.sinh, "Cosh": Tensor.cosh, "Asinh": Tensor.asinh, "Acosh": Tensor.acosh, "Atanh": Tensor.atanh,
                   "Erf": Tensor.erf, "Sign": Tensor.sign, "Not": Tensor.logical_not, "IsNaN": Tensor.isnan, "Round": Tensor.round,
                   "Softsign": Tensor.softsign, "Softplus": Tensor.softplus, "Mish": Tensor.mish, "BitwiseNot": Tensor.bitwise_not}.items():
  op(_name)(lambda x, _fn=_fn: _fn(x))

@op("Identity")
def identity(x): return x

@op("IsInf")
def isinf(x, detect_positive=1, detect_negative=1):
  return (x.eq(math.inf) & bool(detect_positive)) | (x.eq(-math.inf) & bool(detect_negative))

@op("HardSigmoid")
def hardsigmoid(x, alpha=0.2, beta=0.5): return (x * alpha + beta).clip(0, 1)

@op("HardSwish")
def hardswish(x): return x * (x * (1 / 6) + 0.5).clip(0, 1)

@op("Elu")
def elu(x, alpha=1.0): return (x > 0).where(x, (x.exp() - 1) * alpha)

@op("Celu")
def celu(x, alpha=1.0): return x.maximum(0) + ((x / alpha).exp() - 1).minimum(0) * alpha

@op("Selu")
def selu(x, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875): return (x > 0).where(x, (x.exp() - 1) * alpha) * gamma

@op("LeakyRelu")
def leaky_relu(x, alpha=0.01): return (x >= 0).where(x, x * alpha)

@op("ThresholdedRelu")
def thresholded_relu(x, alpha=1.0): return (x > alpha).where(x, 0)

@op("PRelu")
def prelu(x, slope): return (x < 0).where(x * slope, x)

@op("Gelu", since=20)
def gelu(x, approximate="none"):
  if approximate == "tanh": return x * 0.5 * (1 + (math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)).tanh())
  return x * 0.5 * (1 + (x * (1 / math.sqrt(2))).erf())

@op("Swish", since=24)
def swish(x, alpha=1.0): return x * (x * alpha).sigmoid()

@op("Shrink")
def shrink(x, bias=0.0, lambd=0.5):
  return (x < -lambd).where(x + bias, (x > lambd).where(x - bias, 0)).cast(x.dtype)

# *** binary ***
@op("Add")
def add(a, b): return a + b
@op("Sub")
def sub(a, b): return a - b
@op("Mul")
def mul(a, b): return a * b

@op("Div")
def div(a, b): return a / b if is_float(a) else a.div(b, rounding_mode="trunc")  # ints: C division, like numpy's int cast

@op("Mod")
def mod(a, b, fmod=0):
  if not fmod: return a.mod(b)  # python's %: the divisor's sign
  if not is_float(a): return a - a.div(b, rounding_mode="trunc") * b  # C's %: the dividend's sign
  return a.fmod(b)  # exact, as C's fmod is

@op("Pow")
def pow_(base, exponent):
  """(T, T1) -> T: an int base with a float exponent is the float power cast back to the base's type (truncated, 2 ** 2.5 -> 5)"""
  if is_float(base): return base.pow(exponent.cast(base.dtype))
  if is_float(exponent): return _int_float_pow(base, exponent)
  return base._int_pow(exponent.cast(base.dtype))

def _int_float_pow(base, exponent):
  # an integral exponent powers exactly in ints (3 ** 19.0 has more digits than float32); otherwise the float power, which goes
  # through exp2(log2) and can land just below an exact result (9 ** 0.5 -> 2.9999998), is snapped to an integer within rounding
  # error of it (exp2(log2) loses about log2(p) ulps) before the truncation
  work, rel = (dtypes.float64, 2.0 ** -44) if exponent.dtype is dtypes.float64 else (dtypes.float32, 2.0 ** -18)
  e = exponent.cast(work)
  p = base.cast(work).pow(e)
  near = p.round()
  p = ((p - near).abs() <= near.abs().maximum(1) * rel).where(near, p)
  return e.eq(e.trunc()).where(base._int_pow(e.cast(base.dtype)), p.trunc().cast(base.dtype))

def _variadic(fn):
  def run(*xs):
    ret = xs[0]
    for x in xs[1:]: ret = fn(ret, x)
    return ret
  return run

op("Max")(_variadic(Tensor.maximum))
op("Min")(_variadic(Tensor.minimum))
op("Sum")(_variadic(Tensor.add))

@op("Mean")
def mean(*xs): return _variadic(Tensor.add)(*xs) / len(xs)

for _name, _fn in {"Equal": Tensor.eq, "Less": Tensor.__lt__, "Greater": Tensor.__gt__, "LessOrEqual": Tensor.__le__,
                   "GreaterOrEqual": Tensor.__ge__, "And": Tensor.__and__, "Or": Tensor.__or__, "Xor": Tensor.__xor__,
                   "BitwiseAnd": Tensor.__and__, "BitwiseOr": Tensor.__or__, "BitwiseXor": Tensor.__xor__}.items():
  op(_name)(lambda a, b, _fn=_fn: _fn(a, b))

@op("BitShift")
def bitshift(x, y, direction="LEFT"):
  # a shift by the bit width or more shifts every bit out (Tensor's rule, where C leaves it undefined)
  return x.lshift(y) if direction == "LEFT" else x.rshift(y)

@op("Where")
def where(cond, x, y): return cond.where(x, y)

# *** casts ***
@op("Cast")
def cast(x, to, saturate=1, round_mode="up"): return cast_to(x, to, saturate, round_mode)

@op("CastLike", ctx=True)
def cast_like(ctx, x, like, saturate=1, round_mode="up"): return cast_to(x, ctx.onnx_type_id(like), saturate, round_mode)

@op("Clip", since=1)
def clip_v1(x, min=None, max=None): return x.clip(min, max)

@op("Clip", since=11)
def clip(x, lo=None, hi=None):
  ret = x if lo is None else x.maximum(lo)
  return ret if hi is None else ret.minimum(hi)

# float8/float4 targets compute in float32 here: the value is rounded to the nearest representable one (saturating or to inf/nan)
_SMALL_FLOATS = {17: (4, 3, 7, 448.0, "fn"), 18: (4, 3, 8, 240.0, "fnuz"), 19: (5, 2, 15, 57344.0, "ieee"), 20: (5, 2, 16, 57344.0, "fnuz"),
                 23: (2, 1, 1, 6.0, "none")}

def round_to_small_float(x, e_bits:int, m_bits:int, bias:int, max_val:float, kind:str, saturate:bool):
  x = x.cast(dtypes.float32)
  ax = x.abs()
  # the spacing of representable values at |x| is 2^(floor(log2|x|) - m_bits), never below the subnormals' spacing
  finite = ax.isinf().where(0.0, ax)
  step = (finite.maximum(2.0 ** (1 - bias)).log2().floor() - m_bits).exp2()
  r = (finite / step).round() * step
  r = (ax.isinf() | (r > max_val)).where(max_val if saturate or kind == "none" else math.inf if kind == "ieee" else math.nan, r)
  return x.isnan().where(math.nan, x.sign() * r)

def _to_e8m0(x, round_mode:str):
  """FLOAT8E8M0 holds powers of two 2^-127 .. 2^127: the exponent is rounded up, down or to the nearest, then clamped"""
  lg = x.cast(dtypes.float32).maximum(2.0 ** -127).log2()
  e = lg.ceil() if round_mode == "up" else lg.floor() if round_mode == "down" else lg.round()
  return (x.isnan() | (x < 0)).where(math.nan, e.clip(-127, 127).exp2())

def cast_to(x, to:int, saturate=1, round_mode="up"):
  if to == 24: return _to_e8m0(x, round_mode)
  if to in _SMALL_FLOATS:
    e, m, b, mx, kind = _SMALL_FLOATS[to]
    return round_to_small_float(x, e, m, b, mx, kind, bool(saturate))
  if to in (21, 22, 25, 26):  # 4/2-bit ints wrap into their range
    bits, signed = (4 if to in (21, 22) else 2), to in (22, 26)
    v = x.round().cast(dtypes.int32) if is_float(x) else x.cast(dtypes.int32)
    v = v & ((1 << bits) - 1)
    if signed: v = (v >= 1 << (bits - 1)).where(v - (1 << bits), v)
    return v.cast(onnx_dtype(to))
  dt = onnx_dtype(to)
  if dtypes.is_int(dt) and is_float(x): x = x.trunc()
  return x.cast(dt)
