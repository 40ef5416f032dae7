"""Elementwise math composed from the core ops of ElementwiseMixin: named arithmetic, comparisons and bitwise ops, hyperbolic and inverse
trigonometric functions, erf, inf/nan tests. Every function of an int or bool tensor answers in default_float, like upstream."""
from __future__ import annotations
import math
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes
from tinygrad.mixin.elementwise import in_float32, _unwrap_numpy

# asin(x) = pi/2 - sqrt(1-x) * poly(x) on [0, 1], |error| <= 2e-8 (Abramowitz & Stegun 4.4.46)
_ASIN = (1.5707963050, -0.2145988016, 0.0889789874, -0.0501743046, 0.0308918810, -0.0170881256, 0.0066700901, -0.0012624911)
# erf(x) = 1 - poly(t) * exp(-x^2), t = 1/(1 + p*x) on x >= 0, |error| <= 1.5e-7 (Abramowitz & Stegun 7.1.26)
_ERF_P, _ERF = 0.3275911, (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)

# near 0 an odd function is its Taylor series x * (c0 + c1 x^2 + ...): the approximations below have an absolute error (2e-8 for asin's,
# 1.5e-7 for erf's) that was a relative one of 1% at 1e-5 (atan(1e-5) 1.0133e-5, erf(1e-8) 0), and tanh's 2 sigmoid(2x) - 1 and sinh's
# (e^x - e^-x) / 2 cancel to 0 there. (series, |x| below which it is used: its next term is under 1e-9 of x there, ~1e-11 in float64)
_ASIN_0 = ((1.0, 1/6, 3/40, 5/112, 35/1152), 0.1)
_ASINH_0 = ((1.0, -1/6, 3/40, -5/112, 35/1152), 0.1)
_ATAN_0 = ((1.0, -1/3, 1/5, -1/7, 1/9), 0.1)
_ERF_0 = (tuple(2 / math.sqrt(math.pi) * c for c in (1.0, -1/3, 1/10, -1/42, 1/216, -1/1320, 1/9360)), 0.5)
_TANH_0 = ((1.0, -1/3, 2/15, -17/315, 62/2835), 0.1)
_SINH_0 = ((1.0, 1/6, 1/120, 1/5040, 1/362880), 0.1)

# float64 wants ~1e-16 where the approximations above give 1e-7: atan(u) = u * poly(u^2) for |u| <= tan(pi/12), its next term under
# 1e-17 of u there (3 ulp); erf(x) = 2/sqrt(pi) e^-x^2 x * sum 2^n x^2n / (2n+1)!! below 2.5 (positive terms, no cancellation), and
# 1 - e^-x^2 / (sqrt(pi) K(x)) from 2.5, K erfc's continued fraction x + (1/2)/(x + 1/(x + (3/2)/(x + ...))) to 30 terms (checked
# against math.erf in float64: within 2e-15 on [0, 7])
_ATAN_64 = tuple((-1) ** k / (2 * k + 1) for k in range(14))
_ERF_64_SERIES, _ERF_64_SPLIT, _ERF_64_CF_TERMS = tuple(2 ** n / math.prod(range(1, 2 * n + 2, 2)) for n in range(45)), 2.5, 30

def _near_zero(x, y, series:tuple):
  """y, but x's Taylor series where |x| is below its cutoff: relative accuracy near 0, 0 with x's sign at 0, and f'(0) its gradient"""
  coeffs, cutoff = series
  if x.dtype is dtypes.float64: cutoff /= 4  # the series' next term under 1e-16 of x; outside, the cancellation costs ~1e-14
  small = (x < cutoff) & (x > -cutoff)
  s = small.where(x, 0)  # the series of 0 elsewhere: x^8 of a large x overflows (half), and 0 * inf in its gradient would be NaN
  return small.where(s * _poly(s * s, coeffs), y)

def _odd(x, y, series:tuple):
  """the odd function f with f(|x|) = y: -y below 0, y above, its series near 0. Selects, not y * sign(x): sign's gradient is 0, so at
  0 the product's gradient was 0"""
  return _near_zero(x, (x < 0).where(-y, y), series)

def _signed64(x, y):
  """the odd function f with f(|x|) = y in float64, whose approximations are accurate down to 0: -y below 0, and x itself at +-0 (the
  sign of a zero; the slope 1 of asin and atan there, erf's gradient is its own)"""
  return (x < 0).where(-y, x.eq(0).where(x, y))

def log1p(u):
  """ln(1 + u), accurate for small u: 1 + u rounds to w, and ln(w) * u / (w - 1) cancels that rounding; u itself where w is 1, ln(w)
  where w - 1 is u exactly (no rounding, and u = inf, where the quotient was inf/inf). The denominator is 1 where w is 1, so the branch
  not taken stays finite and its gradient is not 0 * inf = NaN"""
  w = u + 1
  d = w - 1
  one = d.eq(0)
  return one.where(u, d.eq(u).where(w.log(), w.log() * u / one.where(1, d)))

def _atan_unit64(t):
  """atan of t in [0, 1] in float64: above tan(pi/12) one step of the tangent's subtraction formula (atan t = pi/6 + atan u, u = (t sqrt3
  - 1) / (t + sqrt3)) brings the argument within it"""
  mid = t > math.tan(math.pi / 12)
  u = mid.where((t * math.sqrt(3) - 1) / (t + math.sqrt(3)), t)
  return mid.where(u._scalar_like(math.pi / 6), 0) + u * _poly(u * u, _ATAN_64)  # pi/6 in float64: a python float pair is float32

def _erf64(a):
  """erf of a >= 0 in float64: each branch computed on the values it takes (e^(a^2) of the series stays bounded, and no inf * 0 in a
  gradient)"""
  near = a < _ERF_64_SPLIT
  s, g = near.where(a, 0), near.where(_ERF_64_SPLIT, a)
  series = s * _poly(s * s, _ERF_64_SERIES) * (-(s * s)).exp() * (2 / math.sqrt(math.pi))
  k = g
  for n in range(_ERF_64_CF_TERMS, 0, -1): k = g + (n / 2) / k
  return near.where(series, 1 - (-(g * g)).exp() * (1 / math.sqrt(math.pi)) / k)

def _log_x_plus_hypot(a, sign:int):
  """log(a + sqrt(a^2 + sign)) for a >= 0 (asinh, acosh) as log1p of its excess over 1, a + a^2 / (1 + sqrt(a^2 + 1)) and (a - 1) +
  sqrt((a - 1)(a + 1)): near 0 and 1 the sum rounded to 1 and lost the argument (acosh(1 + 4e-7) 984 ulp off in float32); log(2a) where
  the square overflows (inf from a = 1.8e19 in float32). Each branch on the values it takes"""
  big = a > (2 ** 28 if a.dtype is dtypes.float64 else 2 ** 12)
  s = big.where(1, a)
  excess = s + s.square() / (1 + (s.square() + 1).sqrt()) if sign > 0 else (s - 1) + ((s - 1) * (s + 1)).sqrt()
  return big.where(big.where(a, 1).log() + math.log(2), log1p(excess))

def _poly(x, coeffs):
  """coeffs[0] + coeffs[1]*x + ... by Horner's rule"""
  ret = x._scalar_like(coeffs[-1])
  for c in reversed(coeffs[:-1]): ret = ret * x + c
  return ret

class MathMixin:
  # *** named arithmetic, with upstream's keywords (div and mod are in ElementwiseMixin) ***
  def add(self, x, reverse=False): return x + self if reverse else self + x
  def sub(self, x, reverse=False): return x - self if reverse else self - x
  def mul(self, x, reverse=False): return x * self if reverse else self * x
  def idiv(self, x, reverse=False):
    """integer division rounding toward zero (C's /): ints only"""
    a, _ = self._broadcasted(x, reverse)
    if dtypes.is_float(a.dtype): raise RuntimeError(f"idiv needs int operands, got {a.dtype}: use div(x, rounding_mode='trunc') for floats")
    return self.div(x, reverse, rounding_mode="trunc")
  def neg(self): return -self

  # *** named comparisons: always bool ***
  def lt(self, x): return self < x
  def le(self, x): return self <= x
  def gt(self, x): return self > x
  def ge(self, x): return self >= x

  # *** named bitwise ops (ints and bools) ***
  def bitwise_and(self, x, reverse=False): return x & self if reverse else self & x
  def bitwise_or(self, x, reverse=False): return x | self if reverse else self | x
  def bitwise_xor(self, x, reverse=False): return x ^ self if reverse else self ^ x
  def bitwise_not(self):
    if dtypes.is_float(self.dtype): raise RuntimeError(f"bitwise_not needs an int or bool tensor, got {self.dtype}")
    return ~self
  def lshift(self, x, reverse=False): return self._bitop(Ops.SHL, x, reverse)
  def rshift(self, x, reverse=False): return self._bitop(Ops.SHR, x, reverse)
  def __rlshift__(self, x): return self.lshift(x, True)
  def __rrshift__(self, x): return self.rshift(x, True)

  # *** inf and nan tests ***
  def isinf(self, detect_positive=True, detect_negative=True):
    if not dtypes.is_float(self.dtype): return self.ne(self)  # ints are never inf: all False
    return (self.eq(math.inf) & detect_positive) | (self.eq(-math.inf) & detect_negative)
  def isfinite(self): return (self.isinf() | self.isnan()).logical_not()

  # *** hyperbolic ***
  @in_float32
  def sinh(self):
    x = self._float_cast()
    return _near_zero(x, (x.exp() - (-x).exp()) * 0.5, _SINH_0)
  @in_float32
  def tanh(self):
    x = self._float_cast()
    return _near_zero(x, 2.0 * (2.0 * x).sigmoid() - 1.0, _TANH_0)
  @in_float32
  def cosh(self): return (self.exp() + (-self._float_cast()).exp()) * 0.5
  @in_float32
  def asinh(self):
    x = self._float_cast()
    return _odd(x, _log_x_plus_hypot(x.abs(), 1), _ASINH_0)
  @in_float32
  def acosh(self):
    x = self._float_cast()
    return _log_x_plus_hypot(x, -1)
  @in_float32
  def atanh(self):
    # log((1 + x) / (1 - x)) / 2, whose quotient rounded near 1 (3e-10 off in float64 at 2e-7): there as log1p(2x / (1 - x)), which near
    # -1 rounds 1 - x where the quotient's 1 + x is exact
    x = self._float_cast()
    inner = (x < 0.5) & (x > -0.5)
    return inner.where(log1p(2 * x / (1 - x)), ((1 + x) / (1 - x)).log()) * 0.5

  # *** inverse trigonometric: odd functions, approximated on [0, 1] ***
  @in_float32
  def asin(self):
    x = self._float_cast()
    a = x.abs()
    if x.dtype is dtypes.float64: return _signed64(x, (a / ((1 - a) * (1 + a)).sqrt()).atan())
    return _odd(x, math.pi / 2 - (1 - a).sqrt() * _poly(a, _ASIN), _ASIN_0)
  @in_float32
  def acos(self):
    """2 atan(sqrt((1-x) / (1+x))): pi/2 - asin(x) cancelled near x = 1 (911 ulp in float32 at 0.9999998)"""
    x = self._float_cast()
    return 2 * ((1 - x) / (1 + x)).sqrt().atan()
  @in_float32
  def atan(self):
    """|x| > 1 goes through 1/|x| (atan(x) = pi/2 - atan(1/x)), so asin's argument stays at most 1/sqrt(2), where it is accurate"""
    x = self._float_cast()
    a = x.abs()
    big = a > 1
    t = big.where(big.where(a, 1).reciprocal(), a)  # 1/a where taken: at 0 the other branch's gradient was 0 * inf
    inner = _atan_unit64(t) if x.dtype is dtypes.float64 else (t / (t.square() + 1).sqrt()).asin()
    y = big.where(math.pi / 2 - inner, inner)
    return _signed64(x, y) if x.dtype is dtypes.float64 else _odd(x, y, _ATAN_0)

  # *** error function ***
  @in_float32
  def erf(self):
    """its gradient is 2/sqrt(pi) e^-x^2 itself: the approximation's own derivative was 5e-4 off in float32 at x = 3"""
    x = self._float_cast()
    flows = self._grad_flows()
    v = x.detach() if flows else x
    a = v.abs()
    if v.dtype is dtypes.float64: y = _signed64(v, _erf64(a))
    else:
      t = (a * _ERF_P + 1).reciprocal()
      y = _odd(v, 1 - _poly(t, _ERF) * t * (-a.square()).exp(), _ERF_0)
    return y._custom_gradient((x,), lambda g: (g * (-x.square()).exp() * (2 / math.sqrt(math.pi)),)) if flows else y

  def lerp(self, end, weight):
    """self + (end - self) * weight, measured from the nearer end as torch does: weight 1 gives end exactly (1e8 -> 1 gave 0). Ints
    are computed in default_float (end - self wrapped in uint8)"""
    a, b = self._broadcasted(end)
    a, b = a._float_cast(), b._float_cast()
    diff, weight = b - a, _unwrap_numpy(weight)
    if type(weight) in (int, float): return a + diff * weight if weight < 0.5 else b - diff * (1 - weight)
    return (weight < 0.5).where(a + diff * weight, b - diff * (1 - weight))
