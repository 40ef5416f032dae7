"""Elementwise math composed from the core ops of ElementwiseMixin: named arithmetic, comparisons and bitwise ops, hyperbolic and inverse
trigonometric functions, erf, inf/nan tests. Every function of an int or bool tensor answers in default_float, like upstream."""
from __future__ import annotations
import math
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes

# asin(x) = pi/2 - sqrt(1-x) * poly(x) on [0, 1], |error| <= 2e-8 (Abramowitz & Stegun 4.4.46)
_ASIN = (1.5707963050, -0.2145988016, 0.0889789874, -0.0501743046, 0.0308918810, -0.0170881256, 0.0066700901, -0.0012624911)
# erf(x) = 1 - poly(t) * exp(-x^2), t = 1/(1 + p*x) on x >= 0, |error| <= 1.5e-7 (Abramowitz & Stegun 7.1.26)
_ERF_P, _ERF = 0.3275911, (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)

def _odd(x, y, slope:float=1.0):
  """the odd function f with f(|x|) = y and f'(0) = slope: -y below 0, y above, x * slope at 0 (0 with x's sign; its gradient f'(0)).
  Selects, not y * sign(x): sign's gradient is 0, so at 0 (where y is 0) the product's gradient was 0, and the approximations' y at 0 is
  only near 0"""
  return (x < 0).where(-y, (x > 0).where(y, x * slope))

def _poly(x, coeffs):
  """coeffs[0] + coeffs[1]*x + ... by Horner's rule"""
  ret = x.const_like(coeffs[-1])
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
  def sinh(self): return (self.exp() - (-self._float_cast()).exp()) * 0.5
  def cosh(self): return (self.exp() + (-self._float_cast()).exp()) * 0.5
  def asinh(self):
    x = self._float_cast()
    return _odd(x, (x.abs() + (x.square() + 1).sqrt()).log())
  def acosh(self):
    x = self._float_cast()
    return (x + (x.square() - 1).sqrt()).log()
  def atanh(self):
    x = self._float_cast()
    return ((1 + x) / (1 - x)).log() * 0.5

  # *** inverse trigonometric: odd functions, approximated on [0, 1] ***
  def asin(self):
    x = self._float_cast()
    a = x.abs()
    return _odd(x, math.pi / 2 - (1 - a).sqrt() * _poly(a, _ASIN))
  def acos(self): return math.pi / 2 - self.asin()
  def atan(self):
    """|x| > 1 goes through 1/|x| (atan(x) = pi/2 - atan(1/x)), so asin's argument stays at most 1/sqrt(2), where it is accurate"""
    x = self._float_cast()
    a = x.abs()
    big = a > 1
    t = big.where(a.reciprocal(), a)
    inner = (t / (t.square() + 1).sqrt()).asin()
    return _odd(x, big.where(math.pi / 2 - inner, inner))

  # *** error function ***
  def erf(self):
    x = self._float_cast()
    a = x.abs()
    t = (a * _ERF_P + 1).reciprocal()
    return _odd(x, 1 - _poly(t, _ERF) * t * (-a.square()).exp(), 2 / math.sqrt(math.pi))

  def lerp(self, end, weight):
    """self + (end - self) * weight"""
    return self + (end - self) * weight
