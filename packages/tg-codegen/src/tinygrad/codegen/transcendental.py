"""EXP2, LOG2 and SIN as polynomials built from + * and bit ops, for targets that lack them (or everywhere with TRANSCENDENTAL>=2).
float32 and float64 have their own constants; narrower floats are computed in float32 and rounded back. Max error seen (float32 over
every input, float64 over 1e7 random ones): exp2 1.23 / 1.22 ulp on every input, log2 0.91 / 0.82 ulp on every positive one, subnormals
too, sin 0.97 / 1.15 ulp for |x| < 2**24 (float32) / 2**53 (float64), by an exact Cody-Waite reduction. Float32 past that reduces by
Payne-Hanek (0.81 ulp seen); float64 past 2**53 returns NaN rather than a wrong number (figures with two roundings per Horner step; the fused steps of a target with MULACC stay within
the same bounds, tests/codegen/test_transcendental.py). Polynomial coefficients are minimax fits (Remez exchange, relative error) on the
intervals named above each table."""
from __future__ import annotations
import functools, math, struct
from fractions import Fraction
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite
from tinygrad.dtype import DType, dtypes
from tinygrad.helpers import TRANSCENDENTAL

# float dtype -> (int of the same width, mantissa bits, exponent bias)
_BITS: dict[DType, tuple[DType, int, int]] = {dtypes.float32: (dtypes.int32, 23, 127), dtypes.float64: (dtypes.int64, 52, 1023)}

def _split(v:Fraction, *bits:int) -> tuple[float, ...]:
  """v as a sum of floats, largest first, each rounded to the given number of significant bits: a short part times a short
  integer is an exact product (Cody-Waite), the last part carries the rest"""
  parts = []
  for b in bits:
    e = abs(v.numerator).bit_length() - v.denominator.bit_length()
    if abs(v) < Fraction(2)**e: e -= 1  # now 2**e <= |v| < 2**(e+1)
    part = Fraction(round(v * Fraction(2)**(b-1-e))) / Fraction(2)**(b-1-e)
    parts.append(float(part))
    v -= part
  return tuple(parts)

PI_2 = Fraction("1.57079632679489661923132169163975144209858469968755291048747229615")
INV_LN2 = Fraction("1.44269504088896340735992468100189213742664595415298593413544940693")

# the polynomials' Horner steps are fused multiply-adds where the target has them (MULACC): half the instructions of the polynomial, one
# rounding a step instead of two (same-process A/B on the CPU: softmax 2048x512 402 -> 347 us, exp of 4M floats 1.84 -> 1.68 ms). The
# exact products of the argument reductions around them stay apart: their roundings are what the reductions count on
def _poly(x:UOp, cs:tuple[float, ...], fused:bool) -> UOp:
  """cs[0] + x*(cs[1] + x*(cs[2] + ...)), Horner; each step one MULACC when fused"""
  step = (lambda acc, c: UOp(Ops.MULACC, x.dtype, (acc, x, x.const_like(c)))) if fused else (lambda acc, c: acc * x + c)
  return functools.reduce(step, reversed(cs[:-1]), x.const_like(cs[-1]))

def _rint(v:UOp) -> UOp:
  """v rounded to the nearest integer, ties to even: adding 2**mant pushes the fraction out of the mantissa. From 2**mant on every
  float is an integer already"""
  big = v.const_like(2.0 ** _BITS[v.dtype][1])
  m = (v < 0).where(-big, big)
  return (v.abs() < big).where((v + m) - m, v)

def _rint_small(v:UOp) -> UOp:
  """_rint for |v| < 2**(mant-1): adding 1.5*2**mant lands every such v in [2**mant, 2**(mant+1)), where the float's ulp is 1, for both
  signs; two ops instead of _rint's seven, and no sign test, which LLVM's SLP vectorizer packs badly (exp2 lanes became scalar compares)"""
  magic = v.const_like(1.5 * 2.0 ** _BITS[v.dtype][1])
  return (v + magic) - magic

def _pow2(k:UOp, dt:DType) -> UOp:
  """2**k as dt, for k in dt's normal exponent range: k+bias goes straight into the exponent field"""
  _, mant, bias = _BITS[dt]
  return ((k + bias) << mant).bitcast(dt)

# *** exp2(x) = 2**k * 2**r, k = rint(x), |r| <= 0.5; 2**r = 1 + r*P(r) ***
_EXP2_P = {
  dtypes.float32: (0.6931472028549496, 0.24022647913625175, 0.05550332471321488, 0.00961843735904423, 0.001339887435699999,
                   0.00015353361435181147),
  dtypes.float64: (0.6931471805599453, 0.2402265069591013, 0.055504108664820084, 0.00961812910759412, 0.001333355814677465,
                   0.00015403530457111376, 1.5252733493093523e-05, 1.3215435282675494e-06, 1.017819958739895e-07, 7.07378318529507e-09,
                   4.43476880082252e-10)}

def _exp2(x:UOp, fused:bool) -> UOp:
  it, mant, bias = _BITS[x.dtype]
  lim = bias + mant + 10  # past +-lim the result is inf or 0 anyway; within, 2**(k/2) stays a normal float
  xc = (x > -lim).where(x, -lim)  # NaN takes the -lim side here and is put back at the end
  xc = (xc < lim).where(xc, lim)
  q = _rint_small(xc)  # |xc| <= lim
  p = _poly(xc - q, (1.0, *_EXP2_P[x.dtype]), fused)
  k = q.cast(it)
  k1 = k >> 1
  # scale in two steps: p*2**k1 is exact, the second multiply rounds once, into the subnormals or to inf
  return x.ne(x).where(x, p * _pow2(k1, x.dtype) * _pow2(k - k1, x.dtype))

# an EXP2 whose argument is known to be <= 0 or NaN (codegen/nonpositive_exp.py: softmax's x - max)
NONPOSITIVE = "nonpositive"

def _exp2_nonpositive(x:UOp, fused:bool) -> UOp:
  """_exp2 for x <= 0 or NaN: no upper clamp; the lower one lets NaN through and NaN stays NaN in every op after, so no fix-up. 2**k is
  built at 2**(k+s), a normal float for every k down to -lim, and the polynomial's coefficients carry the 2**-s (exact: powers of two),
  so p * 2**(k+s) is the one rounding, into the subnormals where the result is one. The rounding constant's low bits are bias+s, so the
  bits of the rounded sum, shifted into the exponent field, are 2**(k+s) by themselves: no float-to-int conversion (LLVM calls its NaN
  result poison) and no integer add"""
  it, mant, bias = _BITS[x.dtype]
  lim, s = bias + mant + 10, mant + 11
  magic = 1.5 * 2.0 ** mant + (bias + s)  # an integer below 2**(mant+1): adding it still rounds to an integer; bias+s+k fits its low bits
  xc = (x < -lim).where(-lim, x)
  t = xc + magic
  p = _poly(xc - (t - magic), tuple(c * 2.0 ** -s for c in (1.0, *_EXP2_P[x.dtype])), fused)
  return p * (t.bitcast(it) << mant).bitcast(x.dtype)

# *** log2(x) = k + log2(m), m in [sqrt(1/2), sqrt(2)), f = m-1, s = f/(2+f): ln(1+f) = f - f*f/2 + s*(f*f/2 + R), R = z*P(z), z = s*s.
# Only s*R carries the rounding of s, and it is small next to f. P on z in [0, (3-2*sqrt(2))**2] ***
_LOG_P = {
  dtypes.float32: (0.666666850999789, 0.39988764050159537, 0.2958051161424085),
  dtypes.float64: (0.666666666666667, 0.3999999999989918, 0.2857142862610617, 0.22222211115826548, 0.18182890369365234, 0.15331683999875245,
                   0.14616875770228988)}
# 1/ln(2) = hi + lo, hi with h = (mant+1)//2 bits: times ln(1+f) cut to mant+1-h bits below, an exact product
_IVLN2 = {dt: _split(INV_LN2, (mant + 1) // 2, mant + 1) for dt, (_, mant, _) in _BITS.items()}
_SQRT_HALF = {dt: struct.unpack(f"<{it.fmt}", struct.pack(f"<{dt.fmt}", math.sqrt(0.5)))[0] for dt, (it, _, _) in _BITS.items()}

def _log2(x:UOp, fused:bool) -> UOp:
  dt = x.dtype
  it, mant, bias = _BITS[dt]
  sub = x < 2.0 ** (1 - bias)  # subnormal (zero and negatives are settled at the end): scaled up into the normals first
  bits = sub.where(x * 2.0 ** (mant + 1), x).bitcast(it)
  # subtracting sqrt(1/2)'s bits moves the exponent up by one exactly when the mantissa is >= sqrt(1/2)'s
  ix = bits - _SQRT_HALF[dt]
  k = (ix >> mant) - sub.where(ix.const_like(mant + 1), ix.const_like(0))
  f = ((ix & ((1 << mant) - 1)) + _SQRT_HALF[dt]).bitcast(dt) - 1.0
  s = f * (f + 2.0).reciprocal()
  z = s * s
  hfsq = 0.5 * f * f
  # hi = f - f*f/2 with its low mantissa bits cleared, so hi*ivln2 hi is exact; what is cut off goes to lo
  hi = ((f - hfsq).bitcast(it) & -(1 << ((mant + 1) // 2))).bitcast(dt)
  lo = (f - hi) - hfsq + s * (hfsq + z * _poly(z, _LOG_P[dt], fused))
  ivhi, ivlo = _IVLN2[dt]
  y, vhi = k.cast(dt), hi * ivhi
  w = y + vhi
  ret = (lo + hi) * ivlo + lo * ivhi + ((y - w) + vhi) + w  # k + log2(1+f), the rounding of k + vhi added back (|k| >= 1 > |vhi| or k = 0)
  ret = (x < math.inf).where(ret, x)  # inf, NaN
  return (x < 0).where(math.nan, x.eq(0).where(-math.inf, ret))

# *** sin: x = q*pi/2 + r, |r| <= pi/4, and q mod 4 picks sin(r), cos(r), -sin(r) or -cos(r). r is kept as hi + lo, z = hi*hi:
# sin(r) = hi + (hi*z*S(z) + lo), cos(r) = 1 - z/2 + (z*z*C(z) - hi*lo) with the rounding of 1 - z/2 added back. S and C on
# z in [0, (pi/4)**2] ***
_SIN_S = {
  dtypes.float32: (-0.16666654609536966, 0.008332160761324975, -0.00019515283133820778),
  dtypes.float64: (-0.1666666666666663, 0.008333333333322118, -0.00019841269829589536, 2.755731362138461e-06, -2.5050747762664594e-08,
                   1.5896230146027927e-10)}
_COS_C = {
  dtypes.float32: (0.04166664568298848, -0.001388731625487426, 2.4433157106914746e-05),
  dtypes.float64: (0.041666666666666595, -0.0013888888888873056, 2.48015872888517e-05, -2.7557314179295803e-07, 2.0875700841858007e-09,
                   -1.1358536515703759e-11)}
# pi/2 = a + b + c + d + e, a..d with h = half the mantissa bits: q = qh + ql with qh a multiple of 2**h, and for |q| < 2**(mant+1)
# both qh/2**h and ql have at most h bits, so each product with a..d is exact
_HALF = {dt: (mant + 2) // 2 for dt, (_, mant, _) in _BITS.items()}
_PI_2 = {dt: _split(PI_2, h, h, h, h, _BITS[dt][1] + 1) for dt, h in _HALF.items()}

def _sub2(a:UOp, p:UOp, lo) -> tuple[UOp, UOp]:
  """a - p as hi + lo, lo plus what hi - p lost to rounding (exact as |a| >= |p| or no rounding: Fast2Sum)"""
  hi = a - p
  return hi, ((a - hi) - p) + lo

def _cody_waite(x:UOp) -> tuple[UOp, UOp, UOp]:
  """x - q*pi/2 as hi + lo, and q, for |x| < 2**(mant+1)"""
  dt, (a, b, c, d, e) = x.dtype, _PI_2[x.dtype]
  q = _rint(x * float(1 / PI_2))
  hbig = 1.5 * 2.0 ** (_BITS[dt][1] + _HALF[dt])
  qh = (q + hbig) - hbig  # q rounded to a multiple of 2**h
  ql = q - qh
  r = (x - qh * a) - ql * a  # exact
  # once x*(2/pi) is rounded to halves, q can be one off: taking off b as well shows it (-1, 0 or 1)
  fix = _rint((r - q * b) * float(1 / PI_2))
  q, ql = q + fix, ql + fix
  hi, lo = _sub2((r - fix * a) - qh * b, ql * b, 0.0)  # the first subtraction is still exact
  for p in (qh * c, ql * c, qh * d, ql * d, q * e): hi, lo = _sub2(hi, p, lo)
  return hi, lo, ql.cast(dtypes.int32)  # q mod 4 is ql mod 4

# *** float32 past 2**24: Payne-Hanek. |x| = m * 2**k, m a 24-bit integer, k >= 1; 2/pi's bits before the (k-1)th after the point
# give x*2/pi multiples of 4, so 96 bits of 2/pi from there times m (32-bit limbs, 64-bit products) hold q mod 4 and a 62-bit
# fraction. k <= 104: 2/pi's first 224 bits behind a zero word (k = 1 starts a bit before the point), as 64-bit pairs of words ***
def _atan_inv(n:int, one:int) -> int:
  """atan(1/n) * one by its series, each term cut to an integer"""
  total, term, k, sign = 0, one // n, 1, 1
  while term:
    total, term, k, sign = total + sign * (term // k), term // (n * n), k + 2, -sign
  return total

def _two_over_pi_bits(n:int) -> int:
  """floor(2/pi * 2**n); pi by Machin's formula with 64 guard bits"""
  one = 1 << (2 * n + 64)
  return (2 * one << n) // (16 * _atan_inv(5, one) - 4 * _atan_inv(239, one))

_TWO_OVER_PI = _two_over_pi_bits(224)  # 256 bits with the zero word
_WORD_PAIRS = tuple((_TWO_OVER_PI >> (256 - 64 - 32 * j)) & ((1 << 64) - 1) for j in range(7))
_PI_2_OVER_2_62 = _split(PI_2 / 2**62, 12, 12, 24)  # 12-bit parts times 12-bit parts of the fraction are exact

def _payne_hanek(x:UOp) -> tuple[UOp, UOp, UOp]:
  """x - q*pi/2 as hi + lo, and q mod 4, for float32 |x| >= 2**24 (finite)"""
  u32, u64 = dtypes.uint32, dtypes.uint64
  bits = x.bitcast(u32)
  m = ((bits & 0x7fffff) | 0x800000).cast(u64)
  start = ((bits >> 23) & 0xff).cast(dtypes.int32) - 120  # the window's first bit in the padded bits: k - 2 + 32, 31..134
  j, shift = start >> 5, (32 - (start & 31)).cast(u64)
  def pair(i:int) -> UOp:  # the padded words j+i and j+i+1, j in 0..4
    return functools.reduce(lambda acc, jj: j.eq(jj).where(acc.const_like(_WORD_PAIRS[jj + i]), acc), (3, 2, 1, 0),
                            m.const_like(_WORD_PAIRS[4 + i]))
  w2, w1, w0 = ((pair(i) >> shift) & 0xffffffff for i in range(3))
  low = m * w0
  mid = m * w1 + (low >> 32)
  high = m * w2 + (mid >> 32)  # m * window = high * 2**64 + mid's and low's low words; x*2/pi is that times 2**-94
  frac = ((high & 0x3fffffff) << 32) | (mid & 0xffffffff)  # the top 62 bits of the fraction
  up = frac >= (1 << 61)  # rounded to the nearest quadrant, the fraction goes negative
  q = ((high >> 30) + up.cast(u64)).cast(dtypes.int32)
  f = frac.cast(dtypes.int64) - up.where(1 << 62, 0).cast(dtypes.int64)
  fhi = f.cast(x.dtype)
  flo = (f - fhi.cast(dtypes.int64)).cast(x.dtype)
  fh = (fhi.bitcast(u32) & 0xfffff000).bitcast(x.dtype)  # fhi's top 12 bits
  fl = fhi - fh
  c1, c2, c3 = _PI_2_OVER_2_62
  hi, lo = _sub2(fh * c1, -(fh * c2), 0.0)
  hi, lo = _sub2(hi, -(fl * c1), lo)
  lo = lo + (fl * c2 + fhi * c3 + flo * (c1 + c2))
  neg = x < 0  # computed for |x|: sin is odd, and -x's quadrant is -q
  return neg.where(-hi, hi), neg.where(-lo, lo), neg.where(-q, q)

# a SIN whose argument is known to be finite and far inside Cody-Waite's range (codegen/small_sin.py: randn's cos(2*pi*u))
SMALL = "small"

def _sin(x:UOp, fused:bool, known_small:bool=False) -> UOp:
  dt = x.dtype
  small = x.abs() < 2.0 ** (_BITS[dt][1] + 1)  # false for inf, NaN and past the exact Cody-Waite reduction
  hi, lo, quadrant = _cody_waite(x if known_small else small.where(x, 0.0))
  if known_small: ok = None
  elif dt is dtypes.float32:
    large = (x.abs() < math.inf) & small.logical_not()
    big = _payne_hanek(large.where(x, 2.0 ** 24))
    hi, lo, quadrant = (large.where(b, v) for b, v in zip(big, (hi, lo, quadrant)))
    ok = small | large
  else: ok = small  # float64 past 2**53 would need 128-bit products: NaN there rather than a wrong number
  hi, lo = _sub2(hi, -lo, 0.0)  # lo gathered a few roundings of hi: renormalise
  z = hi * hi
  hz = 0.5 * z
  w = 1.0 - hz
  sin_r = hi + (hi * z * _poly(z, _SIN_S[dt], fused) + lo)
  cos_r = w + (((1.0 - w) - hz) + (z * z * _poly(z, _COS_C[dt], fused) - hi * lo))
  ret = (quadrant & 1).ne(0).where(cos_r, sin_r)
  ret = (quadrant & 2).ne(0).where(-ret, ret)
  ret = x.eq(0).where(x, ret)  # sin(-0.0) is -0.0
  return ret if ok is None else ok.where(ret, math.nan)

def _in_f32(fn, fused:bool):
  """narrow floats are computed in float32 and rounded back"""
  return lambda x: fn(x, fused) if x.dtype in _BITS else fn(x.cast(dtypes.float32), fused).cast(x.dtype)

def _rules(fused:bool, f64_sin:bool=True) -> list:
  return [
    (UPat(Ops.EXP2, dtypes.floats, (UPat.var("x"),), name="e"),
     lambda e, x: _in_f32(_exp2_nonpositive if e.arg == NONPOSITIVE else _exp2, fused)(x)),
    (UPat(Ops.LOG2, dtypes.floats, (UPat.var("x"),)), _in_f32(_log2, fused)),
    (UPat(Ops.SIN, dtypes.floats if f64_sin else tuple(dt for dt in dtypes.floats if dt is not dtypes.float64), (UPat.var("x"),), name="s"),
     lambda s, x: _in_f32(functools.partial(_sin, known_small=s.arg == SMALL), fused)(x)),
  ]

@functools.cache
def _matcher(ops:frozenset[Ops], fused:bool, f64_sin:bool=True) -> PatternMatcher:
  return PatternMatcher([(p, f) for p, f in _rules(fused, f64_sin) if p.op & ops])

_TRANSCENDENTAL = (Ops.EXP2, Ops.LOG2, Ops.SIN)

def lower_transcendental(sink:UOp, renderer) -> UOp:
  """replace the transcendentals the renderer has no code for, or all of them with TRANSCENDENTAL>=2 (read now, not at import), or all
  of them in a kernel that has no more of the others than the renderer's polynomial_budget. Without a renderer there is nothing to go by: only
  TRANSCENDENTAL>=2 replaces them"""
  ops = frozenset(op for op in _TRANSCENDENTAL if TRANSCENDENTAL.value >= 2 or (renderer is not None and op not in renderer.code_for_op))
  # a float64 sin the target has keeps it under the budget: past 2**53 the polynomial gives NaN where libm gives the value
  f64_sin = Ops.SIN in ops
  if len(ops) < len(_TRANSCENDENTAL) and (budget := getattr(renderer, "polynomial_budget", 0)) and \
     sum(1 for u in sink.toposort() if u.op in _TRANSCENDENTAL and u.op not in ops) <= budget: ops = frozenset(_TRANSCENDENTAL)
  fused = renderer is not None and Ops.MULACC in renderer.code_for_op
  return graph_rewrite(sink, _matcher(ops, fused, f64_sin), name="transcendental") if ops else sink
