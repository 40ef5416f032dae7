"""The random stream bit for bit against a numpy threefry2x32-20: after manual_seed(s), call c draws its words from threefry keyed by
(s, c) over counters 0, 1, 2, ..., both output words of a counter in turn (x0, x1, x0, x1, ...); rand puts 23 of a word's bits under
the exponent of 1.0 and subtracts 1, and randint, uniform, randn, normal, the initialisers and dropout are built on those floats
(randn's element i on both words of counter i).
Shapes: the ones that were slow (small versions), odd sizes, size 1."""
import math
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.nn import Linear

ROT = (13, 15, 26, 6, 17, 29, 16, 24)

def threefry(c0:np.ndarray, c1:np.ndarray, k0:int, k1:int) -> tuple[np.ndarray, np.ndarray]:
  """threefry2x32 with 20 rounds on uint32 arrays (numpy's uint32 arithmetic wraps)"""
  ks = [np.uint32(k0), np.uint32(k1), np.uint32(0x1BD11BDA ^ k0 ^ k1)]
  x0, x1 = c0 + ks[0], c1 + ks[1]
  for r in range(20):
    x0 = x0 + x1
    x1 = ((x1 << np.uint32(ROT[r % 8])) | (x1 >> np.uint32(32 - ROT[r % 8]))) ^ x0
    if r % 4 == 3:
      s = r // 4 + 1
      x0, x1 = x0 + ks[s % 3], x1 + ks[(s + 1) % 3] + np.uint32(s)
  return x0, x1

def words(n:int, seed:int, call:int) -> np.ndarray:
  ctr = np.arange((n + 1) // 2, dtype=np.uint32)
  x0, x1 = threefry(ctr, np.zeros_like(ctr), seed & 0xffffffff, call)
  return np.stack([x0, x1], axis=1).reshape(-1)[:n]

def uniform01(n:int, seed:int, call:int) -> np.ndarray:
  return ((words(n, seed, call) >> np.uint32(9)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)

def box_muller(shape:tuple, seed:int, call:int) -> np.ndarray:
  n = math.prod(shape)
  u = uniform01(2 * n, seed, call).astype(np.float64).reshape(n, 2)  # element i from both words of counter i
  return (np.cos(u[:, 0] * (2 * math.pi)) * np.sqrt(-2 * np.log(1 - u[:, 1]))).reshape(shape)

def test_numpy_threefry_known_answers():
  # Random123's known-answer vectors: the oracle itself
  for ctr, key, want in [((0, 0), (0, 0), (0x6b200159, 0x99ba4efe)), ((0xffffffff,)*2, (0xffffffff,)*2, (0x1cb996fc, 0xbb002be7)),
                         ((0x243f6a88, 0x85a308d3), (0x13198a2e, 0x03707344), (0xc4923a9c, 0x483df7a0))]:
    x0, x1 = threefry(np.array([ctr[0]], np.uint32), np.array([ctr[1]], np.uint32), *key)
    assert (int(x0[0]), int(x1[0])) == want

@pytest.mark.parametrize("n", [1, 2, 7, 4096, 64 * 1001 + 3])
@pytest.mark.parametrize("seed", [0, 1234, 2**32 + 5])
def test_random_bits(n, seed):
  Tensor.manual_seed(seed)
  for call in range(3):
    np.testing.assert_array_equal(Tensor._random_bits(n, None).numpy(), words(n, seed, call))

@pytest.mark.parametrize("shape", [(1,), (3, 5), (64, 129), (1000, 1000)])
def test_rand(shape):
  Tensor.manual_seed(42)
  for call in range(2):
    t = Tensor.rand(*shape)
    assert t.dtype is dtypes.float32 and t.shape == shape
    np.testing.assert_array_equal(t.numpy(), uniform01(math.prod(shape), 42, call).reshape(shape))
  lazy = Tensor.rand(33, 7, contiguous=False)  # the conversion left to the consumer: the same numbers
  np.testing.assert_array_equal((lazy * 1).numpy(), uniform01(33 * 7, 42, 2).reshape(33, 7))

def test_rand_float16():
  Tensor.manual_seed(5)
  w = words(301, 5, 0)
  want = ((w >> np.uint32(22)).astype(np.uint16) | np.uint16(15 << 10)).view(np.float16) - np.float16(1)
  np.testing.assert_array_equal(Tensor.rand(301, dtype=dtypes.float16).numpy(), want)

@pytest.mark.parametrize("shape", [(1,), (3, 3), (256, 255), (512, 512)])
def test_randn_normal(shape):
  # the words are exact; the floats agree with a float64 Box-Muller on the same uniforms to float32 rounding of each step
  Tensor.manual_seed(9)
  np.testing.assert_allclose(Tensor.randn(*shape).numpy(), box_muller(shape, 9, 0), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(Tensor.normal(*shape, mean=3, std=0.5).numpy(), 0.5 * box_muller(shape, 9, 1) + 3, rtol=1e-5, atol=1e-5)
  h = Tensor.randn(*shape, dtype=dtypes.float16).numpy()
  assert h.dtype == np.float16
  np.testing.assert_allclose(h, box_muller(shape, 9, 2).astype(np.float16), rtol=2e-3, atol=2e-3)

@pytest.mark.parametrize("shape", [(1,), (5, 7), (300, 301)])
def test_randint_uniform(shape):
  Tensor.manual_seed(11)
  n = math.prod(shape)
  r = Tensor.randint(*shape, low=-5, high=1000)
  assert r.dtype is dtypes.int32
  np.testing.assert_array_equal(r.numpy(), (words(n, 11, 0) % np.uint32(1005)).astype(np.int32).reshape(shape) - 5)  # one word each
  np.testing.assert_allclose(Tensor.uniform(*shape, low=-2, high=3).numpy(), (np.float32(5) * uniform01(n, 11, 1) - 2).reshape(shape),
                             rtol=1e-6, atol=1e-6)

def test_randint_wide_spans():
  """a span past 2**16 takes two words as a uint64 (the float span*u it replaced skipped values past 2**24 and gave int32's whole
  range only values <= 0)"""
  Tensor.manual_seed(5)
  w = words(2 * 1000, 5, 0).astype(np.uint64)
  want = (((w[:1000] << np.uint64(32)) | w[1000:]) % np.uint64(2**32 - 1)).astype(np.int64) - 2**31
  r = Tensor.randint(1000, low=-2**31, high=2**31 - 1)
  assert r.dtype is dtypes.int32
  np.testing.assert_array_equal(r.numpy(), want.astype(np.int32))
  assert r.numpy().min() < -2**30 and r.numpy().max() > 2**30
  big = Tensor.randint(20000, low=0, high=2**40, dtype=dtypes.int64).numpy()
  assert big.min() >= 0 and big.max() < 2**40 and len(np.unique(big % 256)) == 256  # the low bits vary too (the float form stepped by 2**16)
  full = Tensor.randint(4000, low=-2**63, high=2**63 - 1, dtype=dtypes.int64).numpy()
  assert (full < 0).any() and (full > 0).any()
  small = Tensor.randint(20000, low=-128, high=128, dtype=dtypes.int8).numpy()
  assert small.dtype == np.int8 and small.min() == -128 and small.max() == 127

def test_randint_errors():
  with pytest.raises(TypeError, match="must be an int dtype"): Tensor.randint(3, high=5, dtype=dtypes.float32)
  with pytest.raises(OverflowError, match=r"\[0, 300\) does not fit in dtypes.uchar"): Tensor.randint(3, high=300, dtype=dtypes.uint8)
  with pytest.raises(ValueError, match="low < high"): Tensor.randint(3, low=2, high=2)

def test_kaiming_uniform_and_linear():
  Tensor.manual_seed(3)
  bound = math.sqrt(3) * math.sqrt(2 / (1 + 0.01**2)) / math.sqrt(64)
  np.testing.assert_allclose(Tensor.kaiming_uniform(128, 64).numpy(), (2 * bound * uniform01(128 * 64, 3, 0) - bound).reshape(128, 64),
                             rtol=1e-6, atol=1e-7)
  std = math.sqrt(2 / (1 + 0.01**2)) / math.sqrt(27)
  np.testing.assert_allclose(Tensor.kaiming_normal(32, 3, 3, 3).numpy(), std * box_muller((32, 3, 3, 3), 3, 1), rtol=1e-5, atol=1e-6)
  lin = Linear(33, 17)  # weight, then bias: two more calls
  b = 1 / math.sqrt(33)
  np.testing.assert_allclose(lin.weight.numpy(), (2 * b * uniform01(17 * 33, 3, 2) - b).reshape(17, 33), rtol=1e-6, atol=1e-7)

@pytest.mark.parametrize("shape, p", [((1,), 0.5), ((257, 63), 0.3), ((1024, 1024), 0.5)])
def test_dropout_mask_and_gradient(shape, p):
  Tensor.manual_seed(8)
  Tensor.training = True
  try:
    x = Tensor(np.random.default_rng(0).standard_normal(shape, dtype=np.float32), requires_grad=True)
    y = x.dropout(p)
    (y * 2).sum().backward()
    keep = uniform01(math.prod(shape), 8, 0).reshape(shape) >= p
    scale = np.float32(1 / (1 - p))
    np.testing.assert_array_equal(y.numpy(), np.where(keep, x.numpy(), 0) * scale)
    np.testing.assert_array_equal(x.grad.numpy(), np.where(keep, np.float32(2) * scale, 0))
  finally: Tensor.training = False

def test_non_contiguous_consumer():
  # a transposed, sliced view of rand: the same words, read through the view
  Tensor.manual_seed(21)
  t = Tensor.rand(40, 30)
  np.testing.assert_array_equal(t.T[::3, 1:].numpy(), uniform01(1200, 21, 0).reshape(40, 30).T[::3, 1:])

def test_randint_float_bounds_refused():
  for low, high in [(0.5, 3.5), (0, 5.0)]:
    with pytest.raises(TypeError, match="must be integers"): Tensor.randint(3, low=low, high=high)
  assert Tensor.randint(3, low=np.int64(1), high=np.int32(4)).numpy().min() >= 1  # numpy ints are ints

def test_uniform_in_its_dtype():
  """float64 computes in float64 (a span of 1 at 1e8 was one value in float32); an int dtype takes every value of [low, high), low
  included (the shift happened in float and truncated toward zero: -5 never, 0 twice as often); no dtype ever gives high itself"""
  Tensor.manual_seed(3)
  wide = Tensor.uniform(20000, low=1e8, high=1e8 + 1, dtype=dtypes.float64).numpy()
  assert len(np.unique(wide)) > 19000 and abs(wide.mean() - (1e8 + 0.5)) < 0.02 and wide.max() < 1e8 + 1
  ints = Tensor.uniform(50000, low=-5, high=5, dtype=dtypes.int32).numpy()
  counts = np.bincount(ints + 5, minlength=10)
  assert ints.min() == -5 and ints.max() == 4 and counts.min() > 4500 and counts.max() < 5500, counts
  for dt, low, high in [(dtypes.half, 0.0, 1.0), (dtypes.half, -1.0, 1.0), (dtypes.bfloat16, -3.0, 3.0), (dtypes.float32, 100.0, 101.0)]:
    x = Tensor.uniform(1 << 18, low=low, high=high, dtype=dt).float().numpy()
    assert x.min() >= low and x.max() < high, (dt, low, high, x.max())

def test_uniform_and_normal_errors_and_options():
  with pytest.raises(ValueError, match=r"low < high, got \[2, 1\)"): Tensor.uniform(3, low=2, high=1)
  with pytest.raises(ValueError, match="std >= 0"): Tensor.normal(3, std=-1)
  lazy = Tensor.uniform(4, low=2, high=3, contiguous=False)
  assert lazy.shape == (4,) and ((v := lazy.numpy()) >= 2).all() and (v < 3).all()
  Tensor.manual_seed(1.5)  # truncated, as torch's
  a = Tensor.rand(3).numpy()
  Tensor.manual_seed(1)
  np.testing.assert_equal(a, Tensor.rand(3).numpy())
  with pytest.raises(TypeError, match="manual_seed takes a number"): Tensor.manual_seed("1")
