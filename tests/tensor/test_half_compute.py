"""float16 (and bfloat16) matmuls, convs and reductions against numpy. A float16 product is rounded to float16 and summed in float32
(mixin/linalg.py, mixin/reduce.py: sum_acc_dtype), the result rounded to float16: the oracle computes the same in numpy, summing in
float64, so results agree to float16 rounding of the result plus float32 rounding of the sum. Packed panels (schedule/pack.py, PACK=2
packs at any size), odd sizes, non-contiguous and batched operands, vectors on either side, and the gradients."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.helpers import Context
import tinygrad.schedule.pack  # noqa: F401  (registers the PACK ContextVar)

def _h(*shape, seed=0) -> np.ndarray: return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(np.float16)

def _mm_ref(a:np.ndarray, b:np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """numpy matmul with tg's float16 semantics: (each product rounded to float16, summed exactly) and the sum of |products|"""
  a2, b2 = (a[None] if a.ndim == 1 else a), (b[:, None] if b.ndim == 1 else b)
  prods = (a2[..., :, :, None].astype(np.float32) * b2[..., None, :, :].astype(np.float32)).astype(np.float16).astype(np.float64)
  s, mag = prods.sum(-2), np.abs(prods).sum(-2)
  if a.ndim == 1: s, mag = s[..., 0, :], mag[..., 0, :]
  if b.ndim == 1: s, mag = s[..., 0], mag[..., 0]
  return s, mag

def _close(got:np.ndarray, exact:np.ndarray, mag:np.ndarray):
  """within one float16 ulp of the exact sum (the float32 sum, off by its roundings, may round to the neighbour of the exact one) and
  the float32 sum's roundings (at most terms x 2^-24 of the magnitudes; far less in practice)"""
  assert got.dtype == np.float16 and got.shape == exact.shape
  tol = np.abs(np.spacing(exact.astype(np.float16))).astype(np.float64) + 1e-5 * mag + 1e-7
  err = np.abs(got.astype(np.float64) - exact)
  assert (err <= tol).all(), f"max error {err.max()} (tolerance there {tol.flat[err.argmax()]})"

CASES = {"square": ((64, 48), (48, 40)), "odd": ((37, 129), (129, 53)), "one": ((1, 1), (1, 1)), "k1": ((17, 1), (1, 33)),
         "batched": ((3, 19, 40), (3, 40, 21)), "broadcast": ((19, 40), (2, 40, 33)), "matvec": ((45, 130),  (130,)),
         "vecmat": ((130,), (130, 45)), "dot": ((77,), (77,))}

@pytest.mark.parametrize("pack", [1, 2])
@pytest.mark.parametrize("case", CASES)
def test_matmul(case, pack):
  a, b = _h(*CASES[case][0]), _h(*CASES[case][1], seed=1)
  with Context(PACK=pack): got = (Tensor(a) @ Tensor(b)).numpy()
  _close(got, *_mm_ref(a, b))

@pytest.mark.parametrize("pack", [1, 2])
def test_matmul_non_contiguous(pack):
  a, b, v = _h(80, 66), _h(160, 90, seed=1), _h(80, seed=2)
  with Context(PACK=pack):
    got_t = (Tensor(a).T @ Tensor(b)[::2, 3:48]).numpy()             # a transposed, b strided and shrunk
    got_e = (Tensor(v).reshape(1, 80).expand(30, 80) @ Tensor(a)).numpy()  # a broadcast row
  _close(got_t, *_mm_ref(np.ascontiguousarray(a.T), b[::2, 3:48]))
  _close(got_e, *_mm_ref(np.broadcast_to(v, (30, 80)), a))

def test_matmul_big_packed():
  # past pack.MIN_WORK at PACK=1: the panel copy and the tiled kernel the survey's matmul fp16 1024 runs
  a, b = _h(256, 520), _h(520, 272, seed=1)
  got = (Tensor(a) @ Tensor(b)).numpy()
  _close(got, *_mm_ref(a, b))

def test_matmul_gradients():
  a, b, g = _h(24, 40), _h(40, 18, seed=1), _h(24, 18, seed=2)
  ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  (ta @ tb).backward(Tensor(g))
  # the backward's sums (of the expand in a @ b) run in float16 itself: a few float16 ulps of the magnitudes
  for got, (exact, mag) in ((ta.grad.numpy(), _mm_ref(g, np.ascontiguousarray(b.T))), (tb.grad.numpy(), _mm_ref(np.ascontiguousarray(a.T), g))):
    assert got.dtype == np.float16 and (np.abs(got.astype(np.float64) - exact) <= 4 * np.spacing(mag.astype(np.float16)).astype(np.float64)).all()

def test_linear_epilogue():
  x, w, bias = _h(33, 70), _h(50, 70, seed=1), _h(50, seed=2)
  got = Tensor(x).linear(Tensor(w).T, Tensor(bias)).relu().numpy()
  s, mag = _mm_ref(x, np.ascontiguousarray(w.T))
  # the sum is rounded to float16 before the bias is added and again after
  want = np.maximum((s.astype(np.float16) + bias).astype(np.float16), 0)
  np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=1e-3 * (1 + mag.max()))

@pytest.mark.parametrize("pack", [1, 2])
def test_conv2d(pack):
  x, w = _h(2, 5, 11, 9), _h(17, 5, 3, 3, seed=1)
  with Context(PACK=pack): got = Tensor(x).conv2d(Tensor(w), padding=1).numpy()
  xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
  # windows (n, c, h, w, kh, kw) against the weight (o, c, kh, kw): each product rounded to float16, summed exactly
  win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
  prods = (win[:, None].astype(np.float32) * w[None, :, :, None, None].astype(np.float32)).astype(np.float16).astype(np.float64)
  _close(got, prods.sum((2, 5, 6)), np.abs(prods).sum((2, 5, 6)))

@pytest.mark.parametrize("axis", [None, 0, 1])
def test_sum_and_mean(axis):
  x = _h(300, 257)
  got_s, got_m = Tensor(x).sum(axis).numpy(), Tensor(x).mean(axis).numpy()
  exact, mag = x.astype(np.float64).sum(axis), np.abs(x.astype(np.float64)).sum(axis)
  _close(got_s, exact, mag)
  n = x.size if axis is None else x.shape[axis]
  _close(got_m, exact / n, mag / n)

def test_elementwise_chain():
  x, y = _h(1000, 33), _h(1000, 33, seed=1)
  got = (Tensor(x) * Tensor(y) + Tensor(x)).relu().numpy()
  np.testing.assert_array_equal(got, np.maximum(x * y + x, np.float16(0)))  # numpy rounds each float16 op, as tg does

def test_bfloat16_runs():
  # bfloat16 keeps the integer helpers (speed secondary): a matmul, a conv and a sum run and agree with float32 to bfloat16's 8 bits
  a, b = np.random.default_rng(0).standard_normal((2, 70, 90)).astype(np.float32)
  got = (Tensor(a).cast(dtypes.bfloat16) @ Tensor(b).cast(dtypes.bfloat16).T[:, :50]).cast(dtypes.float32).numpy()
  np.testing.assert_allclose(got, a @ b.T[:, :50], rtol=0.05, atol=0.1 * np.sqrt(90))
  x, w = [np.random.default_rng(s).standard_normal(shape).astype(np.float32) for s, shape in ((1, (2, 3, 8, 8)), (2, (4, 3, 3, 3)))]
  conv = Tensor(x).cast(dtypes.bfloat16).conv2d(Tensor(w).cast(dtypes.bfloat16)).cast(dtypes.float32).numpy()
  assert conv.shape == (2, 4, 6, 6) and np.isfinite(conv).all()
  np.testing.assert_allclose(Tensor(a).cast(dtypes.bfloat16).sum().cast(dtypes.float32).item(), a.sum(), rtol=0.02, atol=1.0)
