"""Activation functions against numpy formulas (in float64), on CPU: negatives, 0, large magnitudes where overflow could bite."""
import math
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

X = np.array([-100.0, -20.0, -3.0, -1.0, -0.25, 0.0, 0.25, 1.0, 2.9, 3.0, 6.5, 20.0, 100.0], dtype=np.float32)
x64 = X.astype(np.float64)

def sigmoid(x): return 1 / (1 + np.exp(-x))
def softplus(x, beta=1.0): return np.logaddexp(0, beta * x) / beta
erf = np.vectorize(math.erf)

@pytest.mark.parametrize("name, kwargs, want", [
  ("relu", {}, np.maximum(x64, 0)), ("relu6", {}, np.clip(x64, 0, 6)), ("hardtanh", {}, np.clip(x64, -1, 1)),
  ("hardtanh", {"min_val": -2, "max_val": 3}, np.clip(x64, -2, 3)), ("leaky_relu", {}, np.where(x64 < 0, 0.01 * x64, x64)),
  ("leaky_relu", {"neg_slope": 0.2}, np.where(x64 < 0, 0.2 * x64, x64)), ("hardsigmoid", {}, np.clip(x64 / 6 + 0.5, 0, 1)),
  ("hardswish", {}, x64 * np.clip(x64 + 3, 0, 6) / 6), ("elu", {}, np.where(x64 > 0, x64, np.expm1(x64))),
  ("elu", {"alpha": 0.5}, np.where(x64 > 0, x64, 0.5 * np.expm1(x64))), ("celu", {"alpha": 2.0}, np.maximum(x64, 0) + np.minimum(0, 2 * np.expm1(x64 / 2))),
  ("selu", {}, 1.0507 * np.where(x64 > 0, x64, 1.67326 * np.expm1(x64))), ("sigmoid", {}, sigmoid(x64)), ("tanh", {}, np.tanh(x64)),
  ("silu", {}, x64 * sigmoid(x64)), ("swish", {}, x64 * sigmoid(x64)), ("quick_gelu", {}, x64 * sigmoid(1.702 * x64)),
  ("gelu", {}, 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64**3)))),
  ("softplus", {}, softplus(x64)), ("softplus", {"beta": 2.0}, softplus(x64, 2.0)), ("logsigmoid", {}, -softplus(-x64)),
  ("mish", {}, x64 * np.tanh(softplus(x64))), ("softsign", {}, x64 / (1 + np.abs(x64))),
])
def test_activation(name, kwargs, want):
  got = getattr(Tensor(X), name)(**kwargs)
  assert got.dtype is dtypes.float32
  np.testing.assert_allclose(got.numpy(), want.astype(np.float32), rtol=2e-6, atol=2e-6)

def test_gelu_close_to_exact():
  """the tanh form stays within 1e-3 of x * Phi(x)"""
  np.testing.assert_allclose(Tensor(X).gelu().numpy(), 0.5 * x64 * (1 + erf(x64 / math.sqrt(2))), atol=1e-3)

@pytest.mark.parametrize("name", ["relu", "sigmoid", "silu", "gelu", "softplus", "elu", "hardswish"])
def test_activation_keeps_half(name):
  x = np.array([-2.0, 0.0, 1.5], np.float16)
  got = getattr(Tensor(x), name)()
  assert got.dtype is dtypes.float16
  np.testing.assert_allclose(got.numpy().astype(np.float32), getattr(Tensor(x.astype(np.float32)), name)().numpy(), rtol=2e-3, atol=2e-3)

@pytest.mark.parametrize("name", ["sigmoid", "silu", "softplus", "elu", "gelu", "mish"])
def test_activation_of_int_is_float(name):
  assert getattr(Tensor([-1, 0, 2]), name)().dtype is dtypes.default_float

def test_softplus_gradient_at_zero():
  """d softplus(x)/dx = sigmoid(beta*x): 0.5 at 0, where the stable form's relu and |x| terms both have a kink (it gave 0, so a zero-init
  head trained with binary_crossentropy_logits got no gradient)"""
  x = Tensor([0.0, -3.0, 2.0])
  np.testing.assert_allclose(x.softplus().sum().gradient(x)[0].numpy(), 1 / (1 + np.exp(-np.array([0.0, -3.0, 2.0]))), rtol=1e-6)
  np.testing.assert_allclose(x.softplus(beta=2.0).sum().gradient(x)[0].numpy(), 1 / (1 + np.exp(-2 * np.array([0.0, -3.0, 2.0]))), rtol=1e-6)
  np.testing.assert_allclose(x.logsigmoid().sum().gradient(x)[0].numpy(), 1 / (1 + np.exp(np.array([0.0, -3.0, 2.0]))), rtol=1e-6)
  z = Tensor([0.0, 0.0])
  # d/dz of -(y log sigmoid(z) + (1-y) log(1-sigmoid(z))) = sigmoid(z) - y; pos_weight p: (p*y + 1 - y) * sigmoid(z) - p*y
  np.testing.assert_allclose(z.binary_crossentropy_logits(Tensor([0.0, 1.0]), reduction="sum").gradient(z)[0].numpy(), [0.5, -0.5])
  np.testing.assert_allclose(z.binary_crossentropy_logits(Tensor([0.0, 1.0]), reduction="sum", pos_weight=Tensor([2.0])).gradient(z)[0].numpy(),
                             [0.5, 2 * 0.5 - 2])

# d/dx of each activation in float64 by its closed form: the oracle for the gradients far out in the tails
def _dsigmoid(x): return sigmoid(x) * (1 - sigmoid(x))
def _dgelu(x):
  k = math.sqrt(2 / math.pi)
  u = k * (x + 0.044715 * x**3)
  return 0.5 * (1 + np.tanh(u)) + 0.5 * x * (1 - np.tanh(u)**2) * k * (1 + 3 * 0.044715 * x**2)
GRADS = {"sigmoid": _dsigmoid, "tanh": lambda x: 1 - np.tanh(x)**2, "silu": lambda x: sigmoid(x) + x * _dsigmoid(x),
         "quick_gelu": lambda x: sigmoid(1.702 * x) + 1.702 * x * _dsigmoid(1.702 * x), "gelu": _dgelu,
         "elu": lambda x: np.where(x > 0, 1.0, np.exp(np.minimum(x, 0))), "celu": lambda x: np.where(x > 0, 1.0, np.exp(np.minimum(x, 0)))}
TAILS = np.array([-100.0, -50.0, -20.0, -12.0, -10.0, -5.0, -1.0, 0.0, 0.5, 3.0, 11.5, 12.0, 50.0, 100.0])

@pytest.mark.parametrize("dtype, tol", [(dtypes.float32, 1e-6), (dtypes.float16, 4e-3)], ids=["float32", "half"])
@pytest.mark.parametrize("name", sorted(GRADS))
def test_activation_gradient_in_the_tails(name, dtype, tol):
  """finite gradients where the exponential of the unused side overflows: sigmoid as 1/(1+e^-x) gave 0 * inf = NaN below x = -88 (-12 in
  half), and tanh, silu and gelu with it; elu's e^x of the branch not taken did the same above x = 11 in half"""
  x = Tensor(TAILS.astype(np.float32), dtype=dtype)
  got = getattr(x, name)().float().sum().gradient(x)[0].float().numpy()
  assert not np.isnan(got).any(), got
  np.testing.assert_allclose(got, GRADS[name](TAILS), rtol=tol, atol=tol * 0.1)  # atol: gelu's 1 + tanh cancels below -4

def test_softplus_far_below_zero_is_exp():
  """softplus(x) is e^x (relative error ~1e-7) far below 0, where 1 + e^x rounds to 1: the plain log gave 0 from x = -17 on; mish keeps
  that accuracy. Its gradient (sigmoid(x)) stays finite through the log1p form's guarded denominator"""
  x = np.array([-80.0, -50.0, -30.0, -20.0, -17.0, -10.0, -1e-3, 1e-8], np.float32)
  t = Tensor(x)  # e^x is exp2(x log2(e)): that product's rounding is a few ulp of e^x at |x| = 60 (the same in upstream)
  np.testing.assert_allclose(t.softplus().numpy(), softplus(x.astype(np.float64)), rtol=5e-6)
  np.testing.assert_allclose(t[2:].softplus(beta=2.0).numpy(), softplus(x[2:].astype(np.float64), 2.0), rtol=5e-6)  # e^-60 is a float32
  np.testing.assert_allclose(t.mish().numpy(), x * np.tanh(softplus(x.astype(np.float64))), rtol=5e-6)
  np.testing.assert_allclose(t.softplus().sum().gradient(t)[0].numpy(), sigmoid(x.astype(np.float64)), rtol=2e-6)
