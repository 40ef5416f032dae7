"""Exact float remainders from ALU ops alone (no libm: every renderer has them): C's fmod, and python's // and % built on it, for the
elementwise mixin (Tensor and UOp nodes alike)."""
from __future__ import annotations
import math, struct
from tinygrad.dtype import DType, dtypes, truncate

def _float_fmod(a, b, b_const:float|None=None):
  """C's fmod of two floats of one dtype, exact as C's is, from ALU ops alone (no libm: every renderer has them); b_const is b's value
  where b is a python number. a - trunc(a/b)*b rounds once |a/b| passes 2**mantissa (1e8 fmod 3 gave 0, not 1). Here |a| is reduced by
  d = |b| * 2**(step*j), the largest first, each step taking q*d for q, the integer part of r/d or one more (|q| <= 2**step): q*d_hi and
  q*d_lo, d's top `step` mantissa bits and the rest, are exact products, and r - q*d_hi and the remainder r - q*d are exact too (|them|
  <= |r|, or multiples of d_hi's unit below 2**mantissa of it). The steps cover the whole exponent range (float32 24, float64 81); for a
  python number b only those whose d is finite, and where b has few mantissa bits, longer steps with no d_lo (float32's 1.0: 7)"""
  if b_const is not None: b_const = truncate[a.dtype](b_const)
  if a.dtype.itemsize < 4: return _float_fmod(a.cast(dtypes.float32), b.cast(dtypes.float32), b_const).cast(a.dtype)  # exact there too
  exp_bits, mant_bits = dtypes.finfo(a.dtype)
  bias, step = (1 << (exp_bits - 1)) - 1, (mant_bits + 1) // 2
  x, y = a.abs(), b.abs() if b_const is None else abs(b_const)
  const = isinstance(y, float)
  if const and not 0 < y < math.inf: return (x < y).where(a, math.nan)  # b = inf leaves a finite a, 0 and NaN give NaN
  if const and (few := mant_bits + 1 - _mantissa_bits(y)) >= step: step, y_hi = min(few, mant_bits - 4), y  # q*y is exact itself
  # y's low mantissa bits cleared, never rounded up (a rounded split of the largest float was inf): no scaled copy of y_hi overflows
  else: y_hi = _clear_low_bits(y, a.dtype, mant_bits + 1 - step)
  # q = trunc(r/d) of a quotient grown by 2**-(step+2), never below |r/d| after its roundings. 1/d of a subnormal d overflows: the steps
  # whose d can be subnormal (j < scaled) take the quotient of r and d scaled up by 2**mant_bits where y is subnormal. One division per
  # element: the steps' 1/d are powers of two apart
  grow, tiny, scaled = 1 + 2.0 ** -(step + 2), y < 2.0 ** (1 - bias), -(-mant_bits // step)
  up = (2.0 ** mant_bits if tiny else 1.0) if const else tiny.where(y.const_like(2.0 ** mant_bits), 1.0)
  recip = grow / (y * up) if const else (y * up).reciprocal() * grow
  steps, d_hi, d_lo = [], -y_hi, y_hi - y  # negated: r + q*-d_hi, no negation in the chain
  for j in range(-(-(2 * bias + mant_bits) // step)):  # 2**(2*bias + mant_bits): the largest float over the smallest
    if (fits := j == 0 or y < 2.0 ** (bias + 1 - step * j)) is False: break  # d = y * 2**(step*j) is finite
    if j == scaled: recip = recip * up
    steps.append((d_hi, d_lo, up if j < scaled and not (const and up == 1.0) else None, recip, fits))
    d_hi, d_lo, recip = d_hi * 2.0 ** step, d_lo * 2.0 ** step, recip * 2.0 ** -step
  # q*d_hi can pass the largest float where r is in the top binade: there half of |a| is reduced, and then twice that remainder
  top = x >= 2.0 ** bias
  r = top.where(x * 0.5, x)
  for d_hi, d_lo, up, recip, fits in reversed(steps):
    q = ((r if up is None else r * up) * recip).trunc()
    rem = r + q * d_hi if isinstance(d_lo, float) and d_lo == 0 else (r + q * d_hi) + q * d_lo  # r keeps its sign between steps
    r = rem if fits is True else fits.where(rem, r)  # an infinite d takes nothing (and its d_hi would make NaN)
  r = (r < 0).where(r + y, r)
  r = top.where(((twice := r * 2) < y).where(twice, twice - y), r)
  # |a| < |b| (b = inf too) is a itself; inf % b, a % 0 and NaNs are NaN
  ok = x < math.inf if const else (x < math.inf) & (y > 0)
  return ok.where((x < y).where(a, (a < 0).where(-r, r)), math.nan)

def _mantissa_bits(y:float) -> int:
  """the significant bits of a positive python float's mantissa (1.0: 1, 3.0: 2, 0.1: 53)"""
  m = int(math.ldexp(math.frexp(y)[0], 53))
  return 53 - ((m & -m).bit_length() - 1)

def _clear_low_bits(y, dt:DType, n:int):
  """y (non-negative, of float dtype dt: a node or a python float) with the low n bits of its mantissa cleared"""
  if not isinstance(y, float): return (y.bitcast(_as_int(dt)) & -(1 << n)).bitcast(dt)
  fmt, int_fmt = ("<f", "<I") if dt.itemsize == 4 else ("<d", "<Q")
  return struct.unpack(fmt, struct.pack(int_fmt, struct.unpack(int_fmt, struct.pack(fmt, y))[0] >> n << n))[0]

def _float_divmod(a, b, b_const:float|None=None):
  """python's (a // b, a % b) for floats, as numpy and torch compute them (a narrow float's in float32) from the exact fmod: the
  remainder moved into the divisor's sign, the quotient (a - fmod) / b rounded to the integer it is near (1.0 // 0.1 is 9, not 10)"""
  if a.dtype.itemsize < 4:
    if b_const is not None: b_const = truncate[a.dtype](b_const)
    return tuple(t.cast(a.dtype) for t in _float_divmod(a.cast(dtypes.float32), b.cast(dtypes.float32), b_const))
  mod = _float_fmod(a, b, b_const)
  moved = mod.ne(0) & (mod < 0).ne(b < 0)
  div = moved.where((a - mod) / b - 1, (a - mod) / b)
  rounded = (div - (fl := div.floor()) > 0.5).where(fl + 1, fl)
  # a zero quotient or remainder takes the sign a / b or b has (numpy's copysign); a python number's sign bit is read here (OpenCL's
  # renderer gave a double inf's bitcast as_long(INFINITY), a float)
  a_neg, b_neg, zero = _signbit(a), _signbit(b if b_const is None else b_const), a.const_like(0.0)
  def signed_zero(neg): return (-zero if neg else zero) if isinstance(neg, bool) else neg.where(-zero, zero)
  div = b.eq(0).where(a / b, div.ne(0).where(rounded, signed_zero(a_neg.ne(b_neg))))
  return div, moved.where(mod + b, mod.eq(0).where(signed_zero(b_neg), mod))

def _signbit(x):
  """whether x's sign bit is set (-0.0 too): a bool node, or a python bool for a python float"""
  return math.copysign(1.0, x) < 0 if isinstance(x, float) else x.bitcast(_as_int(x.dtype)) < 0

def _as_int(dt:DType) -> DType: return {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}[dt.itemsize]
