"""Activation functions, composed from elementwise math. Written so large inputs don't overflow: softplus and logsigmoid never take the
exp of a positive number."""
from __future__ import annotations
import math
from tinygrad.mixin.math import log1p
from tinygrad.mixin.elementwise import in_float32

class ActivationMixin:
  def _hard_clamp(self, low, high):
    """self held in [low, high] by selects: NaN stays NaN and inf goes to the bound (relu(x) - relu(x - 6) was inf - inf). A value on a
    bound gets no gradient, as torch's hardtanh, relu6 and hardsigmoid give (clip keeps it there)"""
    return (self <= low).where(low, (self >= high).where(high, self))
  def relu6(self): return self._hard_clamp(0, 6)
  def hardtanh(self, min_val=-1, max_val=1): return self._hard_clamp(min_val, max_val)
  # the slope at 0 and NaN is neg_slope's, as torch's gradient has it
  def leaky_relu(self, neg_slope=0.01): return (self > 0).where(self, self * neg_slope)
  def hardsigmoid(self, alpha:float=1/6, beta:float=0.5): return (self * alpha + beta)._hard_clamp(0, 1)
  # torch's form, -inf gives NaN as there; the gradient through relu6 is a select, so at inf no 0 * inf reaches it
  def hardswish(self): return self * (self + 3).relu6() * (1/6)
  def elu(self, alpha=1.0): return self._exp_below_zero(1.0, alpha)
  def celu(self, alpha=1.0): return self._exp_below_zero(1 / alpha, alpha)
  def _exp_below_zero(self, scale, alpha):
    """x above 0, alpha * (e^(scale*x) - 1) at or below it; the exponential of the non-positive part only: e^x of a large x was inf
    in the branch not taken, and its gradient 0 * inf = NaN (x >= 11 in half)"""
    pos = self > 0
    return pos.where(self, alpha * ((pos.where(0, self) * scale).exp() - 1))
  def selu(self, alpha=1.67326, gamma=1.0507): return gamma * self.elu(alpha)
  def silu(self): return self * self.sigmoid()
  def swish(self): return self.silu()
  def quick_gelu(self): return self * (self * 1.702).sigmoid()
  @in_float32
  def gelu(self, approximate:str="tanh"):
    """the tanh approximation by default, like upstream; approximate="none" is the exact x * Phi(x) through erf"""
    if approximate == "none": return 0.5 * self * (1 + (self * (1 / math.sqrt(2))).erf())
    if approximate != "tanh": raise ValueError(f"gelu approximate must be 'tanh' or 'none', got {approximate!r}")
    # 0.5 (1 + tanh(u)) is sigmoid(2u): the same function without tanh's cancelling 1 + (-1 + tiny) below x = -4
    return self * (2 * math.sqrt(2 / math.pi) * (self + 0.044715 * self * self * self)).sigmoid()
  @in_float32
  def softplus(self, beta=1.0):
    """log(1 + exp(beta*x)) / beta, as max(bx, 0) + log1p(exp(-|bx|)) / beta: e^bx itself far below 0, where 1 + e^bx rounds to 1
    (a plain log gave 0 below bx = -17). maximum, not relu: at bx = 0 the tie gives it half of
    the gradient (relu's is 0 there, and |bx|'s term has none), so the gradient is sigmoid(0) = 0.5 as it should be"""
    bx = self * beta
    return (bx.maximum(0) + log1p((-bx.abs()).exp())) * (1 / beta)
  def logsigmoid(self): return -(-self._float_cast()).softplus()  # float first: -x of an unsigned int or a bool is not -x
  def mish(self): return self * self.softplus().tanh()
  def softsign(self): return self / (1 + self.abs())
