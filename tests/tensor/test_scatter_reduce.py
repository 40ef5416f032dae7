"""scatter and scatter_reduce against numpy's unbuffered ufunc.at (np.add.at, np.multiply.at, np.maximum.at, np.minimum.at) and a plain
loop for scatter's last write: every reduce, with and without self, along either axis, repeated positions, an index smaller than self
off dim, int and float dtypes. Each fold is a kernel of its own that the compiler runs as one pass over the index (codegen/onehot_scatter.py):
self's axis here has 16 positions or more so that pass is the one checked, and the bytes moved show the dense one-hot fold is not back."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.helpers import GlobalCounters

UFUNC = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}

def targets(idx:np.ndarray, dim:int) -> tuple:
  """the positions of self that idx's elements go to, as numpy fancy indices"""
  at = list(np.indices(idx.shape))
  at[dim] = idx
  return tuple(at)

def np_scatter_reduce(base, dim, idx, src, reduce, include_self):
  at, src = targets(idx, dim), src[tuple(slice(0, s) for s in idx.shape)]
  count = np.zeros(base.shape, np.int64)
  np.add.at(count, at, 1)
  ufunc = UFUNC[reduce]
  out = base.copy()
  if not include_self:  # self left out: the fold starts at ufunc's identity where anything lands
    info = np.finfo(base.dtype) if base.dtype.kind == "f" else np.iinfo(base.dtype)
    lowest, highest = (-np.inf, np.inf) if base.dtype.kind == "f" else (info.min, info.max)
    out[count > 0] = {np.add: 0, np.multiply: 1, np.maximum: lowest, np.minimum: highest}[ufunc]
  with np.errstate(invalid="ignore"): ufunc.at(out, at, src)  # inf * 0 and inf - inf are NaN, as they should be
  if reduce == "mean":
    n = np.maximum(count + include_self, 1)
    out = np.where(count > 0, out / n if out.dtype.kind == "f" else np.floor_divide(out, n), base).astype(base.dtype)
  return out

def np_scatter(base, dim, idx, src):
  out, at = base.copy(), targets(idx, dim)
  for pos in np.ndindex(*idx.shape): out[tuple(a[pos] for a in at)] = src[pos]  # in order: the last write wins
  return out

def data(dtype, dim:int, seed:int=0):
  """self (64, 18) or (18, 64), an index smaller than self off dim with repeats and untouched positions, and src larger than index"""
  rng = np.random.default_rng(seed)
  shape, ishape = [18, 18], [13, 13]
  shape[dim], ishape[dim] = 64, 40
  idx = rng.integers(0, 61, ishape).astype(np.int32)  # positions 61..63 never written
  if dtype == np.int32:
    return rng.integers(-9, 9, shape).astype(dtype), idx, rng.integers(-3, 4, [i + 1 for i in ishape]).astype(dtype)
  return rng.standard_normal(shape).astype(dtype), idx, rng.uniform(0.5, 1.5, [i + 1 for i in ishape]).astype(dtype)

@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_reduce_is_numpys(reduce, include_self, dim, dtype):
  base, idx, src = data(dtype, dim)
  want = np_scatter_reduce(base, dim, idx, src, reduce, include_self)
  GlobalCounters.reset()
  got = Tensor(base).scatter_reduce(dim, Tensor(idx), Tensor(src), reduce, include_self=include_self).numpy()
  assert GlobalCounters.global_mem < idx.size * base.shape[dim] * 8 / 4, "the dense one-hot fold is back"  # index and src per position
  if dtype == np.float32 and reduce in ("sum", "mean", "prod"): np.testing.assert_allclose(got, want, rtol=1e-5)
  else: np.testing.assert_array_equal(got, want)
  assert got.dtype == base.dtype

@pytest.mark.hcq_matrix
@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin"])
def test_scatter_reduce_devices(device, reduce):
  base, idx, src = data(np.float32, 0, seed=1)
  want = np_scatter_reduce(base, 0, idx, src, reduce, True)
  got = Tensor(base, device=device).scatter_reduce(0, Tensor(idx, device=device), Tensor(src, device=device), reduce).numpy()
  np.testing.assert_allclose(got, want, rtol=1e-5)

@pytest.mark.hcq_matrix
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_last_write_wins(device, dim):
  base, idx, src = data(np.float32, dim, seed=2)
  t, i = Tensor(base, device=device), Tensor(idx, device=device)
  np.testing.assert_array_equal(t.scatter(dim, i, Tensor(src, device=device)).numpy(), np_scatter(base, dim, idx, src))
  np.testing.assert_array_equal(t.scatter(dim, i, 2.5).numpy(), np_scatter(base, dim, idx, np.full(idx.shape, 2.5, np.float32)))

def test_scatter_with_reduce_names():
  base, idx, src = data(np.int32, 1, seed=3)
  t, i, s = Tensor(base), Tensor(idx), Tensor(src)
  np.testing.assert_array_equal(t.scatter(1, i, s, reduce="add").numpy(), np_scatter_reduce(base, 1, idx, src, "sum", True))
  np.testing.assert_array_equal(t.scatter(1, i, s, reduce="multiply").numpy(), np_scatter_reduce(base, 1, idx, src, "prod", True))
  assert t.scatter(1, i, s).dtype == dtypes.int32

def test_floats_edge_values():
  # nothing lands on -0.0 (kept, not +0.0 + -0.0), a NaN landing wins amax and amin as in numpy, infinities fold like any value
  base = np.zeros((20, 3), np.float32)
  base[5:] = -0.0
  idx = np.array([[0, 1, 2], [0, 1, 2], [3, 3, 3]], np.int32)
  src = np.array([[np.nan, -np.inf, 1], [2, np.inf, -0.0], [-0.0, -0.0, -0.0]], np.float32)
  for reduce in ("sum", "prod", "amax", "amin"):
    for include_self in (True, False):
      got = Tensor(base).scatter_reduce(0, Tensor(idx), Tensor(src), reduce, include_self=include_self).numpy()
      want = np_scatter_reduce(base, 0, idx, src, reduce, include_self)
      np.testing.assert_array_equal(got, want)
      np.testing.assert_array_equal(np.signbit(got[5:]), np.signbit(want[5:]), err_msg=f"{reduce} {include_self}: -0.0 lost")

@pytest.mark.parametrize("rows", [20, 6])  # the fold as one pass over the index, and as the dense one-hot sum (fewer than 16 rows)
@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_signed_zeros_of_a_sum_with_self(rows, reduce, dtype):
  # self -0.0 where nothing lands stays -0.0, and -0.0 + -0.0 is -0.0 (only -0.0s land); +0.0 landing (or 1 - 1) gives +0.0, as numpy's
  # add.at and torch give; a NaN landing is NaN. Each column sends its three values to one row: rows 0-2 of self are -0.0, row 3 +0.0
  base = np.ones((rows, 6), dtype)
  base[:3], base[3] = -0.0, 0.0
  idx = np.array([[0, 1, 2, 0, 3, 1]] * 3, np.int32)
  src = np.array([[-0.0, -0.0, 0.0, 1.0, -0.0, np.nan], [-0.0, 0.0, -0.0, -1.0, -0.0, 2.0], [-0.0, -0.0, -0.0, -0.0, -0.0, 3.0]], dtype)
  for include_self in (True, False):
    got = Tensor(base).scatter_reduce(0, Tensor(idx), Tensor(src), reduce, include_self=include_self).numpy()
    want = np_scatter_reduce(base, 0, idx, src, reduce, include_self)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=f"include_self={include_self}: the sign of a zero")
  # what lands gets its position's gradient whatever its value (-0.0s too), self all of it (mean: both divided by the count)
  t, s, g = Tensor(base, requires_grad=True), Tensor(src, requires_grad=True), np.arange(base.size, dtype=dtype).reshape(base.shape)
  (t.scatter_reduce(0, Tensor(idx), s, reduce) * Tensor(g)).sum().backward()
  count = np.zeros(base.shape)
  np.add.at(count, targets(idx, 0), 1)
  scale = (g / (count + 1) if reduce == "mean" else g).astype(dtype)
  np.testing.assert_allclose(t.grad.numpy(), scale, rtol=1e-3)
  np.testing.assert_allclose(s.grad.numpy(), np.take_along_axis(scale, idx, 0), rtol=1e-3)

def test_empty_and_out_of_range_index():
  # no index rows: self unchanged; positions outside 0..size-1 land nowhere (torch raises; a lazy index cannot be checked ahead)
  base = np.arange(40, dtype=np.float32).reshape(20, 2)
  for reduce in ("sum", "mean", "amax"):
    got = Tensor(base).scatter_reduce(0, Tensor.zeros(0, 2, dtype=dtypes.int32), Tensor.ones(0, 2), reduce, include_self=False)
    np.testing.assert_array_equal(got.numpy(), base)
  idx = np.array([[-1, 20], [3, 99]], np.int32)
  got = Tensor(base).scatter_reduce(0, Tensor(idx), Tensor.ones(2, 2), "sum").numpy()
  want = base.copy()
  want[3, 0] += 1
  np.testing.assert_array_equal(got, want)
  np.testing.assert_array_equal(Tensor(base).scatter(0, Tensor(idx), 7.0).numpy(), np.where(np.arange(40).reshape(20, 2) == 6, 7, base))

def test_gradients_flow_through_the_folds():
  # sum: self's gradient is 1 everywhere, src's is the output gradient read back at its position; mean divides both by the count
  base, idx, src = data(np.float32, 0, seed=4)
  g = np.random.default_rng(5).standard_normal(base.shape).astype(np.float32)
  for reduce in ("sum", "mean"):
    t, s = Tensor(base, requires_grad=True), Tensor(src, requires_grad=True)
    (t.scatter_reduce(0, Tensor(idx), s, reduce) * Tensor(g)).sum().backward()
    count = np.zeros(base.shape)
    np.add.at(count, targets(idx, 0), 1)
    scale = g / (count + 1) if reduce == "mean" else g
    np.testing.assert_allclose(t.grad.numpy(), scale, rtol=1e-5)
    want_s = np.zeros_like(src)
    want_s[:idx.shape[0], :idx.shape[1]] = np.take_along_axis(scale[:, :idx.shape[1]], idx, 0)
    np.testing.assert_allclose(s.grad.numpy(), want_s, rtol=1e-5)

def test_bad_arguments_name_what_is_wrong():
  t = Tensor.zeros(20, 4)
  with pytest.raises(TypeError, match="int index tensor, got dtypes.float"): t.scatter_reduce(0, Tensor.zeros(3, 4), t, "sum")
  with pytest.raises(ValueError, match=r"index of shape \(3, 5\) needs 2 dims, each at most self's \(20, 4\) off dim 0"):
    t.scatter_reduce(0, Tensor.zeros(3, 5, dtype=dtypes.int32), Tensor.zeros(3, 5), "sum")
  with pytest.raises(ValueError, match=r"src of shape \(2, 4\) is smaller than index's \(3, 4\)"):
    t.scatter(0, Tensor.zeros(3, 4, dtype=dtypes.int32), Tensor.zeros(2, 4))
  with pytest.raises(ValueError, match="must be one of"): t.scatter_reduce(0, Tensor.zeros(3, 4, dtype=dtypes.int32), t, "max")
  with pytest.raises(ValueError, match="None, 'add' or 'multiply'"): t.scatter(0, Tensor.zeros(3, 4, dtype=dtypes.int32), t, reduce="sum")

def test_setitem_and_max_unpool_write_the_last_value():
  # both write through the same fold (the last i per position) and a gather: the last write wins, like numpy's assignment
  rng = np.random.default_rng(6)
  a0, at, v = rng.standard_normal(2048).astype(np.float32), rng.integers(0, 2048, 900), rng.standard_normal(900).astype(np.float32)
  a, want = Tensor(a0).realize(), a0.copy()
  GlobalCounters.reset()
  a[Tensor(at.astype(np.int32))] = Tensor(v)
  a.realize()
  assert GlobalCounters.global_mem < a0.size * 900 * 4 / 4, "the dense one-hot write is back"
  for k, x in zip(at, v): want[k] = x
  np.testing.assert_array_equal(a.numpy(), want)
  x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
  pooled, idx = Tensor(x).max_pool2d(2, return_indices=True)
  got, p, i = pooled.max_unpool2d(idx, 2).numpy(), pooled.numpy(), idx.numpy()
  want = np.zeros((2, 3, 64), np.float32)
  for b, c, k in np.ndindex(2, 3, 16): want[b, c, i[b, c].flat[k]] = p[b, c].flat[k]
  np.testing.assert_array_equal(got, want.reshape(2, 3, 8, 8))
