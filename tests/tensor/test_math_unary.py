"""Unary math against numpy on every executing backend (CPU-LLVM, CPU-C, PYTHON): values at edges (0, negatives, large, inf, nan)
and the result dtype (ints and bools give default_float)."""
import math
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

pytestmark = pytest.mark.hcq_matrix  # also on the mock AMD and NV devices (tests/conftest.py)

X = np.array([-1e4, -3.0, -1.0, -0.5, -0.0, 0.0, 1e-3, 0.5, 1.0, 2.5, 80.0], dtype=np.float32)
UNIT = np.array([-1.0, -0.99, -0.5, -1e-3, 0.0, 0.3, 0.7071, 0.999, 1.0], dtype=np.float32)
SPECIAL = np.array([np.inf, -np.inf, np.nan, 0.0, -2.0, 3.0], dtype=np.float32)

def erf(x): return np.vectorize(math.erf, otypes=[np.float64])(x)

@pytest.mark.parametrize("name, fn, x, atol", [
  ("exp", np.exp, X[1:-1], 1e-6), ("log", np.log, np.abs(X) + 1e-3, 1e-6), ("exp2", np.exp2, X[1:-1], 1e-6),
  ("log2", np.log2, np.abs(X) + 1e-3, 1e-6), ("sqrt", np.sqrt, np.abs(X), 1e-6), ("rsqrt", lambda x: 1/np.sqrt(x), np.abs(X) + 0.25, 1e-6),
  ("sin", np.sin, X[1:], 1e-5), ("cos", np.cos, X[1:], 1e-5), ("tan", np.tan, X[1:-1], 1e-5),
  ("sinh", np.sinh, X[1:-1], 1e-5), ("cosh", np.cosh, X[1:-1], 1e-5), ("tanh", np.tanh, X, 1e-6),
  ("asinh", np.arcsinh, X, 1e-6), ("acosh", np.arccosh, np.abs(X) + 1, 1e-6), ("atanh", np.arctanh, UNIT, 1e-5),
  ("asin", np.arcsin, UNIT, 1e-6), ("acos", np.arccos, UNIT, 1e-6), ("atan", np.arctan, X, 1e-6),
  ("erf", erf, X, 2e-7), ("sigmoid", lambda x: 1/(1+np.exp(-x.astype(np.float64))), X, 1e-6),
  ("abs", np.abs, X, 0), ("sign", np.sign, X, 0), ("reciprocal", np.reciprocal, X[X != 0], 1e-6), ("square", np.square, X[1:], 0),
  ("floor", np.floor, X, 0), ("ceil", np.ceil, X, 0), ("trunc", np.trunc, X, 0), ("round", np.round, np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, -2.2], np.float32), 0),
])
def test_unary_float(device, name, fn, x, atol):
  got = getattr(Tensor(x, device=device), name)()
  assert got.dtype is dtypes.float32
  with np.errstate(all="ignore"): want = fn(x).astype(np.float32)  # overflow to inf is part of the expected answer
  np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=atol)

@pytest.mark.parametrize("name, fn", [("exp", np.exp), ("sqrt", np.sqrt), ("sin", np.sin), ("erf", erf), ("atan", np.arctan), ("sinh", np.sinh)])
def test_unary_int_gives_default_float(device, name, fn):
  x = np.array([0, 1, 2, 3], dtype=np.int32)
  got = getattr(Tensor(x, device=device), name)()
  assert got.dtype is dtypes.default_float
  np.testing.assert_allclose(got.numpy(), fn(x).astype(np.float32), rtol=1e-5, atol=2e-7)

@pytest.mark.parametrize("name, fn", [("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("sin", np.sin), ("tanh", np.tanh),
                                      ("atan", np.arctan), ("asinh", np.arcsinh), ("erf", erf), ("sign", np.sign), ("abs", np.abs)])
def test_unary_special_values(device, name, fn):
  """inf, -inf and nan in, what numpy gives out (log of a negative is nan, log(0) is -inf)"""
  with np.errstate(all="ignore"): want = fn(SPECIAL).astype(np.float32)
  np.testing.assert_allclose(getattr(Tensor(SPECIAL, device=device), name)().numpy(), want, rtol=1e-6, atol=1e-7)

def test_inf_nan_tests(device):
  t = Tensor(SPECIAL, device=device)
  for got, want in ((t.isinf(), np.isinf(SPECIAL)), (t.isnan(), np.isnan(SPECIAL)), (t.isfinite(), np.isfinite(SPECIAL)),
                    (t.isinf(detect_negative=False), np.isposinf(SPECIAL)), (t.isinf(detect_positive=False), np.isneginf(SPECIAL))):
    assert got.dtype is dtypes.bool
    np.testing.assert_array_equal(got.numpy(), want)
  ints = Tensor([0, -5, 7], device=device)
  assert ints.isinf().tolist() == [False]*3 and ints.isfinite().tolist() == [True]*3

def test_int_rounding_and_sign_keep_dtype(device):
  x = np.array([-7, 0, 3], dtype=np.int8)
  for name in ("floor", "ceil", "round", "trunc", "abs", "sign", "square"):
    got = getattr(Tensor(x, device=device), name)()
    assert got.dtype is dtypes.int8, name
    np.testing.assert_array_equal(got.numpy(), getattr(np, name)(x))

@pytest.mark.parametrize("name, slope", [("asinh", 1.0), ("asin", 1.0), ("atan", 1.0), ("erf", 2 / math.sqrt(math.pi)), ("acos", -1.0)])
def test_odd_functions_at_zero(name, slope):
  """f(+-0) is +-0 and f'(0) its slope: built as f(|x|) * sign(x), the gradient at 0 was 0 (sign's), and the approximations' value at
  0 only near 0"""
  x = Tensor([0.0, -0.0, float("nan")])
  y = getattr(x, name)()
  g = y.sum().gradient(x)[0].numpy()
  if name != "acos": assert y.numpy()[0] == 0 and list(np.signbit(y.numpy()[:2])) == [False, True]
  np.testing.assert_allclose(g[:2], [slope, slope], rtol=1e-6)
  assert np.isnan(y.numpy()[2]) and np.isnan(g[2])

def test_half_cos_and_tan():
  """computed in float32: rounded to half, pi/2 - x dropped x's low bits (cos(33) came out -0.0216 for -0.0133)"""
  x = np.array([33.0, 1000.7, 0.5, -7.25], np.float16)
  np.testing.assert_allclose(Tensor(x).cos().numpy().astype(np.float64), np.cos(x.astype(np.float64)), atol=2e-3)
  np.testing.assert_allclose(Tensor(x).tan().numpy().astype(np.float64), np.tan(x.astype(np.float64)), rtol=4e-3)
  assert Tensor(x).cos().dtype is dtypes.half

@pytest.mark.parametrize("name, ref", [("asin", np.arcsin), ("asinh", np.arcsinh), ("atan", np.arctan), ("erf", np.vectorize(math.erf)),
                                       ("tanh", np.tanh), ("sinh", np.sinh)])
def test_relative_accuracy_near_zero(name, ref):
  """near 0 the result is right relative to its size: the approximations' absolute error made atan(1e-5) 1% off and erf(1e-8) 0, and
  tanh's 2 sigmoid(2x) - 1 and sinh's (e^x - e^-x) / 2 cancelled to 0 at 1e-8"""
  x = np.array([1e-30, 1e-8, -1e-5, 3e-4, -0.01, 0.05, 0.099], np.float32)
  want = ref(x.astype(np.float64))
  np.testing.assert_allclose(getattr(Tensor(x), name)().numpy(), want, rtol=4e-7)
  np.testing.assert_allclose(getattr(Tensor(x.astype(np.float64)), name)().numpy(), want, rtol=1e-10)  # the series: ~1e-11 at its cutoff

def _ulps(got:np.ndarray, want:np.ndarray, dtype) -> float:
  want = want.astype(dtype)
  return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)) / np.spacing(np.abs(want)).astype(np.float64)))

WIDE = np.concatenate([np.linspace(-7, 7, 4001), np.geomspace(1e-300, 1e300, 601), -np.geomspace(1e-12, 1e12, 101)])
IN_UNIT = np.concatenate([np.linspace(-1, 1, 4001)[1:-1], 1 - np.geomspace(1e-15, 0.1, 101), -1 + np.geomspace(1e-15, 0.1, 101),
                          np.geomspace(1e-300, 0.5, 101)])
ABOVE_ONE = 1 + np.geomspace(1e-15, 1e300, 1001)

@pytest.mark.parametrize("name, ref, x, f64_ulps, f32_ulps", [
  ("atan", np.arctan, WIDE, 4, 40), ("asin", np.arcsin, IN_UNIT, 5, 40), ("acos", np.arccos, IN_UNIT, 4, 40),
  ("erf", np.vectorize(math.erf, otypes=[np.float64]), WIDE[np.abs(WIDE) < 1e150], 10, 8), ("asinh", np.arcsinh, WIDE, 4, 4),
  ("acosh", np.arccosh, ABOVE_ONE, 4, 4), ("atanh", np.arctanh, IN_UNIT, 4, 4)])
def test_accuracy_in_ulps(name, ref, x, f64_ulps, f32_ulps):
  """in float64 atan, asin, acos and erf have float64 approximations (they were float32's, 1e-7 off); acos is 2 atan(sqrt((1-x)/(1+x)))
  (pi/2 - asin(x) cancelled: 911 ulp in float32 at 0.9999998); asinh, acosh, atanh go through log1p near 0 and 1 and log(2x) where x^2
  overflows (acosh(1 + 4e-7) was 984 ulp off, asinh(1e20) inf)"""
  for dtype, ulps in ((np.float64, f64_ulps), (np.float32, f32_ulps)):
    v = x.astype(dtype)
    with np.errstate(all="ignore"): want = ref(v.astype(np.float64))
    keep = np.isfinite(want.astype(dtype)) & (want.astype(dtype) != 0)
    assert _ulps(getattr(Tensor(v[keep]), name)().numpy(), want[keep], dtype) <= ulps, dtype

def test_inverse_functions_at_their_edges():
  for dtype in (np.float32, np.float64):
    z = Tensor(np.array([0.0, -0.0], dtype), requires_grad=True)
    for name, slope in (("asin", 1.0), ("atan", 1.0), ("erf", 2 / math.sqrt(math.pi))):
      y = getattr(z, name)()
      assert list(np.signbit(y.numpy())) == [False, True], (dtype, name)  # f(-0) = -0
      np.testing.assert_allclose(y.sum().gradient(z)[0].numpy(), [slope, slope], rtol=1e-6)
    x = Tensor(np.array([1.0, -1.0, 1.5, -1.5, np.nan], dtype))
    np.testing.assert_array_equal(x.acos().numpy(), np.array([0.0, np.pi, np.nan, np.nan, np.nan], dtype))
    np.testing.assert_array_equal(x.asin().numpy(), np.array([np.pi / 2, -np.pi / 2, np.nan, np.nan, np.nan], dtype))
    np.testing.assert_array_equal(x.atanh().numpy(), np.array([np.inf, -np.inf, np.nan, np.nan, np.nan], dtype))
    big = Tensor(np.array([np.inf, -np.inf, 0.0], dtype))
    np.testing.assert_array_equal(big.atan().numpy(), np.array([np.pi / 2, -np.pi / 2, 0.0], dtype))
    np.testing.assert_array_equal(big.erf().numpy(), np.array([1.0, -1.0, 0.0], dtype))
    np.testing.assert_array_equal(big.asinh().numpy(), np.array([np.inf, -np.inf, 0.0], dtype))

def test_erf_gradient_is_the_gaussian():
  """erf's gradient is 2/sqrt(pi) e^-x^2, not the approximation's derivative (5e-4 off in float32 at x = 3); and it differentiates again"""
  for dtype in (np.float32, np.float64):
    v = np.array([0.0, -0.3, 1.0, 3.0, -4.5, 9.0], dtype)
    x = Tensor(v, requires_grad=True)
    g = x.erf().sum().gradient(x)[0]
    np.testing.assert_allclose(g.numpy(), 2 / np.sqrt(np.pi) * np.exp(-v.astype(np.float64) ** 2), rtol=2e-6 if dtype is np.float32 else 1e-14)
    np.testing.assert_allclose(g.sum().gradient(x)[0].numpy(), -4 * v / np.sqrt(np.pi) * np.exp(-v.astype(np.float64) ** 2), rtol=3e-6,
                               atol=1e-30)

NARROW = {"exp": np.exp, "log": lambda v: np.log(np.abs(v)), "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh, "sinh": np.sinh,
          "cosh": np.cosh, "asinh": np.arcsinh, "atan": np.arctan, "erf": np.vectorize(math.erf, otypes=[np.float64]),
          "softplus": lambda v: np.logaddexp(0, v), "gelu": lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v**3))),
          "pow": lambda v: np.abs(v) ** 2.5}

@pytest.mark.parametrize("name", list(NARROW))
def test_half_rounds_once(name):
  """half is computed in float32 and rounded once, like torch: x * log2(e) rounded to half first made exp 10 ulp off, softplus 67, and
  sinh/cosh inf short of half's largest value"""
  x = np.linspace(-12, 11, 3001).astype(np.float16)
  if name in ("log", "pow"): x = np.abs(x)
  t = Tensor(x)
  got = (t.pow(2.5) if name == "pow" else getattr(t, name)()).numpy()
  with np.errstate(all="ignore"): want = NARROW[name](x.astype(np.float64)).astype(np.float16)
  assert got.dtype == np.float16 and np.array_equal(np.isinf(got), np.isinf(want))
  assert _ulps(got[np.isfinite(want) & (want != 0)], want[np.isfinite(want) & (want != 0)].astype(np.float64), np.float16) <= 1

def test_bfloat16_exp_near_its_top():
  """bfloat16's x * log2(e) rounded up to 128 at x = 88.5: exp was inf for 2.72e38; 91.5 ** 2.5 was 84992 for 79872"""
  x = Tensor([88.5, 91.5], dtype=dtypes.bfloat16)
  np.testing.assert_allclose(x[:1].exp().float().numpy(), [np.exp(88.5)], rtol=2 ** -8)
  np.testing.assert_allclose(x[1:].pow(2.5).float().numpy(), [91.5 ** 2.5], rtol=2 ** -8)

@pytest.mark.parametrize("dtype, npdt, atol", [(dtypes.float32, np.float32, 3e-7), (dtypes.float64, np.float64, 1e-15)])
def test_cos_of_large_arguments(dtype, npdt, atol):
  """cos was sin(pi/2 - x), and the subtraction rounds x's low bits away: float32's cos(32768.3) (a rotary embedding's angle) was off by
  up to 2e-3, float64's cos(1e15) by 0.05. As 1 - 2 sin(x/2)**2 the error is a few ulp of 1.0 at every size sin reduces exactly"""
  rng = np.random.default_rng(5)
  top = 2.0 ** 24 if dtype is dtypes.float32 else 2.0 ** 52
  x = np.concatenate([rng.uniform(lo, min(hi, top), 4000) for lo, hi in [(0, 4), (1e3, 4e4), (1e5, 1e7), (1e7, top)]]).astype(npdt)
  x = np.concatenate([x, -x])
  np.testing.assert_allclose(Tensor(x).cos().numpy().astype(np.float64), np.cos(x.astype(np.float64)), rtol=0, atol=atol)
