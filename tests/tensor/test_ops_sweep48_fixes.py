"""Fixes from an op sweep: einsum's ellipsis beside capital letters, the gradient of a long 64-bit sort, normalize in half and with
p=0 or -inf, clear TypeErrors for a float topk k, pooling size or triu/tril diagonal, gather of 0-d tensors, and const_like in the
tensor's shape. Oracles: numpy."""
import contextlib, signal
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

@contextlib.contextmanager
def time_limit(seconds:int):
  """a TimeoutError instead of a hang (the long sort's backward took minutes in scheduling)"""
  def fail(*_): raise TimeoutError(f"still running after {seconds} s")
  old = signal.signal(signal.SIGALRM, fail)
  signal.alarm(seconds)
  try: yield
  finally:
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)

# *** einsum: '...' must not take a letter the formula uses ***
@pytest.mark.parametrize("formula, shapes", [("...A,A->...", [(3, 3), (3,)]), ("...A,A->...", [(2, 3), (3,)]),
                                             ("A...,AB->...B", [(2, 2, 2), (2, 2)]), ("...ab,...bA", [(2, 2, 2), (2, 2, 2)])])
def test_einsum_ellipsis_beside_capitals(formula, shapes):
  rng = np.random.default_rng(0)
  xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
  np.testing.assert_allclose(Tensor.einsum(formula, *[Tensor(x) for x in xs]).numpy(), np.einsum(formula, *xs), rtol=1e-5, atol=1e-6)

# *** a float64 sort longer than the bitonic threshold: the gradient goes back along the indices ***
def np_perm_grad(idx, w, axis, shape):
  """the gradient of a pick along axis: element idx[j] gets w[j]"""
  g = np.zeros(shape)
  np.put_along_axis(g, idx, w, axis)
  return g

@pytest.mark.parametrize("descending", [False, True])
def test_sort_float64_long_row_grad(descending):
  n = 2049
  x = np.random.default_rng(1).standard_normal((1, n))
  t = Tensor(x, requires_grad=True)
  v, i = t.sort(descending=descending)
  w = np.arange(n, dtype=np.float64).reshape(1, n)
  with time_limit(90):
    (v * Tensor(w)).sum().backward()
    g = t.grad.numpy()
  idx = np.argsort(-x if descending else x, axis=1, kind="stable")
  np.testing.assert_array_equal(i.numpy(), idx)
  np.testing.assert_array_equal(v.numpy(), np.take_along_axis(x, idx, 1))
  np.testing.assert_array_equal(g, np_perm_grad(idx, w, 1, x.shape))

def test_topk_float64_long_column_grad():
  n, k = 2100, 5
  x = np.random.default_rng(2).standard_normal((n, 2))
  t = Tensor(x, requires_grad=True)
  v, i = t.topk(k, dim=0)
  w = np.arange(2 * k, dtype=np.float64).reshape(k, 2)
  with time_limit(90):
    (v * Tensor(w)).sum().backward()
    g = t.grad.numpy()
  idx = np.argsort(-x, axis=0, kind="stable")[:k]
  np.testing.assert_array_equal(i.numpy(), idx)
  np.testing.assert_array_equal(v.numpy(), np.take_along_axis(x, idx, 0))
  np.testing.assert_array_equal(g, np_perm_grad(idx, w, 0, x.shape))

# *** normalize ***
def np_normalize(x, p, dim, eps=1e-12):
  a = np.abs(x.astype(np.float64))
  if p == np.inf: norm = a.max(dim, keepdims=True)
  elif p == -np.inf: norm = a.min(dim, keepdims=True)
  elif p == 0: norm = (a != 0).sum(dim, keepdims=True).astype(np.float64)
  else:
    with np.errstate(divide="ignore"): norm = (a ** p).sum(dim, keepdims=True) ** (1 / p)  # p < 0 and a zero: norm 0, then eps
  return x / np.maximum(norm, eps)

@pytest.mark.parametrize("value, n", [(4.0, 4096), (300.0, 8), (0.0, 8)])
def test_normalize_half_past_its_range(value, n):
  x = np.full((2, n), value, np.float16)
  x[1, ::2] *= -1
  out = Tensor(x).normalize(dim=1)
  assert out.dtype == dtypes.float16
  np.testing.assert_allclose(out.numpy().astype(np.float32), np_normalize(x, 2, 1), rtol=1e-3, atol=1e-4)

@pytest.mark.parametrize("p", [0, -np.inf, -1.0, np.inf, 3.0])
def test_normalize_p(p):
  x = np.array([[1.0, -2.0, 0.0, 0.5], [0.0, 0.0, 0.0, 0.0], [-3.0, 0.25, 4.0, 1.0]], np.float32)
  np.testing.assert_allclose(Tensor(x).normalize(p=p, dim=1).numpy(), np_normalize(x, p, 1), rtol=1e-5, atol=1e-7)

# *** argument checks: a TypeError naming the argument ***
@pytest.mark.parametrize("call, name", [(lambda x: x.topk(2.0), "k"), (lambda x: x.reshape(1, 1, 3, 4).max_pool2d(1.5), "kernel_size"),
                                        (lambda x: x.reshape(1, 1, 3, 4).avg_pool2d((2, 1.5)), "kernel_size"),
                                        (lambda x: x.reshape(1, 1, 3, 4).max_pool2d(2, stride=1.5), "stride")])
def test_float_size_is_a_type_error(call, name):
  with pytest.raises(TypeError, match=name):
    call(Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)))

def test_numpy_int_sizes_still_work():
  x = np.arange(24, dtype=np.float32).reshape(1, 1, 4, 6)
  np.testing.assert_array_equal(Tensor(x).max_pool2d(np.int64(2)).numpy(), x.reshape(1, 1, 2, 2, 3, 2).max((3, 5)))
  np.testing.assert_array_equal(Tensor(x[0, 0, 0]).topk(np.int64(2))[0].numpy(), [5.0, 4.0])

# *** gather of 0-d tensors: torch's, a 0-d self or index is one of a single element ***
@pytest.mark.parametrize("x, index, dim", [(3.0, 0, 0), (3.0, [0, 0], -1), ([1.0, 2.0], 1, 0), ([1.0, 2.0], 0, -1)])
def test_gather_0d(x, index, dim):
  x, index = np.array(x, np.float32), np.array(index, np.int32)
  out = Tensor(x).gather(dim, Tensor(index))
  assert out.shape == index.shape
  np.testing.assert_array_equal(out.numpy(), x.reshape(-1)[index])

def test_gather_0d_grad():
  t = Tensor(3.0, requires_grad=True)
  (t.gather(0, Tensor([0, 0])) * Tensor([2.0, 5.0])).sum().backward()
  np.testing.assert_array_equal(t.grad.numpy(), np.float32(7.0))

@pytest.mark.parametrize("fn", ["triu", "tril"])
def test_tri_diagonal_must_be_an_int(fn):
  with pytest.raises(TypeError, match="diagonal must be an int"): getattr(Tensor.ones(3, 3), fn)(0.5)
  np.testing.assert_equal(getattr(Tensor.ones(3, 3), fn)(np.int64(1)).numpy(), getattr(np, fn)(np.ones((3, 3), np.float32), 1))

def test_const_like_is_in_the_tensors_shape():
  t = Tensor.ones(3, 4).const_like(7)
  assert t.shape == (3, 4) and t.dtype == Tensor.ones(3, 4).dtype
  np.testing.assert_equal(t.numpy(), np.full((3, 4), 7, np.float32))
