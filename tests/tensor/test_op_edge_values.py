"""Edge values of elementwise and scan ops against numpy (torch's rules where numpy has none): logcumsumexp over any spread of values
and its gradient, logaddexp's gradient at a tie, lerp at the far end and on ints, 16-bit scatter sums, cummax of a 0-d tensor, and the
clamp-like activations at inf, NaN and their bounds."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

INF, NAN = float("inf"), float("nan")

def np_logcumsumexp_grad(x:np.ndarray) -> np.ndarray:
  """d(sum of logcumsumexp(x, -1))/dx in float64: x[j]'s is the sum over i >= j of exp(x[j] - out[i])"""
  out = np.logaddexp.accumulate(x.astype(np.float64), -1)
  later = np.triu(np.ones((x.shape[-1],) * 2, bool))  # [j, i]: i >= j
  return np.where(later, np.exp(x[..., :, None].astype(np.float64) - out[..., None, :]), 0).sum(-1)

@pytest.mark.parametrize("shape, axis", [((4, 5), 1), ((37, 3), 0), ((3, 300), 1), ((70, 2), -2)])
def test_logcumsumexp_any_spread(shape, axis):
  # values hundreds apart: under one shift for the whole axis, a prefix far below a later max was exp(-hundreds) = 0, its log -inf
  x = (np.random.default_rng(1).standard_normal(shape) * 300).astype(np.float32)
  np.testing.assert_allclose(Tensor(x).logcumsumexp(axis).numpy(), np.logaddexp.accumulate(x.astype(np.float64), axis), rtol=1e-6, atol=1e-3)
  for row in ([1., 200.], [-1000., 1000.], [0., 100., 0.]):
    np.testing.assert_allclose(Tensor(row).logcumsumexp().numpy(), np.logaddexp.accumulate(row), rtol=1e-6)

def test_logcumsumexp_nan_and_inf_reach_only_what_follows():
  np.testing.assert_equal(Tensor([1., NAN, 3.]).logcumsumexp().numpy(), [1., NAN, NAN])
  x = np.linspace(-50, 50, 60).astype(np.float32)
  x[20] = NAN
  got = Tensor(x).logcumsumexp().numpy()
  np.testing.assert_allclose(got[:20], np.logaddexp.accumulate(x[:20].astype(np.float64)), rtol=1e-6)
  assert np.isnan(got[20:]).all()
  np.testing.assert_equal(Tensor([-INF, -INF, 0., INF, 1.]).logcumsumexp().numpy(), [-INF, -INF, 0., INF, INF])

def test_logcumsumexp_gradient():
  x = Tensor([-INF, 0., 1.], requires_grad=True)
  x.logcumsumexp().sum().backward()
  np.testing.assert_allclose(x.grad.numpy()[1:], [1.2689414, 0.7310586], rtol=1e-6)  # torch's; x[0]'s is NaN there too (out[0] = -inf)
  for a in (np.array([0., -INF, 1., 2.], np.float32), (np.random.default_rng(2).standard_normal((3, 40)) * 200).astype(np.float32)):
    t = Tensor(a, requires_grad=True)
    t.logcumsumexp(-1).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), np_logcumsumexp_grad(a), rtol=1e-5, atol=1e-6)

def test_logcumsumexp_half_stays_half():
  h = np.random.default_rng(3).standard_normal((4, 50)).astype(np.float16) * 20
  got = Tensor(h).logcumsumexp(1)
  assert got.dtype is dtypes.float16
  np.testing.assert_allclose(got.numpy().astype(np.float64), np.logaddexp.accumulate(h.astype(np.float64), 1), rtol=2e-3, atol=2e-3)

def test_logaddexp_gradient_splits_a_tie():
  x, y = Tensor([0., 2., -5., 1.], requires_grad=True), Tensor([0., 2., -5., 3.], requires_grad=True)
  x.logaddexp(y).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [0.5, 0.5, 0.5, 1 / (1 + np.exp(2))], rtol=1e-6)
  np.testing.assert_allclose(y.grad.numpy(), [0.5, 0.5, 0.5, 1 / (1 + np.exp(-2))], rtol=1e-6)
  z = Tensor([0.], requires_grad=True)
  z.logaddexp(0.0).sum().backward()
  assert z.grad.item() == 0.5  # sigmoid(0)

def test_logaddexp_infinities_and_small_differences():
  a, b = np.array([-INF, INF, INF, 0., 1e-3], np.float32), np.array([-INF, INF, -INF, -30., 0.], np.float32)
  np.testing.assert_allclose(Tensor(a).logaddexp(Tensor(b)).numpy(), np.logaddexp(a, b), rtol=1e-5)  # log1p: 9.36e-14, not 0
  x, y = Tensor([INF], requires_grad=True), Tensor([1.], requires_grad=True)
  x.logaddexp(y).sum().backward()
  assert x.grad.item() == 1.0 and y.grad.item() == 0.0

def test_lerp_reaches_end_exactly():
  assert Tensor([1e8]).lerp(Tensor([1.]), 1.0).item() == 1.0  # (end - self) * 1 + self cancelled to 0
  a, b, w = np.full(4, 3e7, np.float32), np.ones(4, np.float32), np.array([0., 0.25, 0.75, 1.], np.float32)
  st, et, wt = (Tensor(v, requires_grad=True) for v in (a, b, w))
  got = st.lerp(et, wt)
  want = np.where(w < 0.5, a + w * (b - a), b - (b - a) * (1 - w))  # torch's: measured from the nearer end
  np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
  assert got.numpy()[0] == a[0] and got.numpy()[3] == b[3]
  got.sum().backward()
  np.testing.assert_allclose(st.grad.numpy(), 1 - w, rtol=1e-6)
  np.testing.assert_allclose(et.grad.numpy(), w, rtol=1e-6)
  np.testing.assert_allclose(wt.grad.numpy(), b - a, rtol=1e-6)

def test_lerp_of_ints_does_not_wrap():
  got = Tensor(np.array([0, 200], np.uint8)).lerp(Tensor(np.array([255, 100], np.uint8)), 0.5)
  assert got.dtype is dtypes.default_float and got.tolist() == [127.5, 150.0]  # end - self wrapped: 200 + 156 / 2 = 278
  got = Tensor(np.array([0, -56], np.int8)).lerp(Tensor(np.array([100, -100], np.int8)), Tensor([0.25, 0.75]))
  np.testing.assert_allclose(got.numpy(), [25., -89.], rtol=1e-6)

@pytest.mark.parametrize("dtype, n", [(dtypes.float16, 3000), (dtypes.bfloat16, 600)])
def test_scatter_sums_accumulate_wide(dtype, n):
  # 16-bit sums stop growing once a one is under half an ulp: 2048 in half, 256 in bfloat16
  idx, src = Tensor(np.zeros(n, np.int32)), Tensor.ones(n).cast(dtype)
  for got in (Tensor.zeros(2, dtype=dtype).scatter_reduce(0, idx, src, "sum"), Tensor.zeros(2, dtype=dtype).scatter(0, idx, src, reduce="add")):
    assert got.dtype is dtype and got.float().tolist() == [n, 0]
  mean = Tensor.zeros(2, dtype=dtype).scatter_reduce(0, idx, src, "mean")
  np.testing.assert_allclose(mean.float().numpy(), [n / (n + 1), 0], rtol=1e-2)
  base, at, ints = Tensor(np.array([100, 0], np.int8)), Tensor([0, 0, 1]), Tensor(np.array([100, 100, 7], np.int8))
  # int8's sum still wraps, as numpy's add.at and torch's do, and its mean divides that: 300 - 256 = 44, 44 // 3
  assert base.scatter_reduce(0, at, ints, "sum").tolist() == [44, 7] and base.scatter_reduce(0, at, ints, "mean").tolist() == [14, 3]

@pytest.mark.parametrize("value", [2.5, 7, -3])
def test_cummax_of_0d_is_index_0(value):
  for values, idx in (Tensor(value).cummax(0), Tensor(value).cummin(0)):
    assert values.item() == value and idx.dtype is dtypes.int32 and idx.shape == () and idx.item() == 0
  values, idx = Tensor.zeros(3, 0).cummax(1)
  assert values.shape == idx.shape == (3, 0) and idx.dtype is dtypes.int32

X = np.array([-INF, -4., -3., -1., 0., 1., 3., 6., 7., INF, NAN], np.float32)
with np.errstate(invalid="ignore"):
  # (values, gradient where x is not NaN): torch's gradients, none on a bound of relu6, hardtanh and hardsigmoid
  CLAMPS = {"relu6": (np.clip(X, 0, 6), ((X > 0) & (X < 6)) * 1.0),
            "hardtanh": (np.clip(X, -1, 1), ((X > -1) & (X < 1)) * 1.0),
            "hardsigmoid": (np.clip(X / 6 + 0.5, 0, 1), ((X > -3) & (X < 3)) / 6),
            "hardswish": (X * np.clip(X + 3, 0, 6) / 6, np.where(X <= -3, 0, np.where(X >= 3, 1, (2 * X + 3) / 6))),  # -inf: -inf * 0
            "leaky_relu": (np.where(X > 0, X, X * np.float32(0.01)), np.where(X > 0, 1, 0.01))}

@pytest.mark.parametrize("name", CLAMPS)
def test_clamp_activations_at_inf_nan_and_bounds(name):
  x = Tensor(X, requires_grad=True)
  y = getattr(x, name)()
  values, grad = CLAMPS[name]
  np.testing.assert_allclose(y.numpy(), values, rtol=1e-6)
  y.sum().backward()
  np.testing.assert_allclose(x.grad.numpy()[:-1], grad[:-1], rtol=1e-6)
