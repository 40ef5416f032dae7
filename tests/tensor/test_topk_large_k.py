"""topk with k past the group-minimum selection (mixin/sorting.py SELECT_MAX_K): a radix select of the k-th key, the k kept compacted and
sorted, against numpy's stable order. Small rows reach it with the thresholds patched low; the values, indices, dtypes, NaN, -0.0, ties
(the lower index first), both directions, any dim, batched rows and gradients must be those of the sort it replaces."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.helpers import GlobalCounters
import tinygrad.mixin.sorting as sorting

R = np.random.default_rng(7)

@pytest.fixture
def digits(monkeypatch):
  """every topk past k=4 of a row longer than 8 selects by digits (not the rank sort or the group minimums), whatever share of the row k
  is; the test fails where none did"""
  for name, value in (("SELECT_MAX_K", 4), ("PACKED_BITONIC_MIN", 8), ("PACKED_RANK_MAX_COMPARES", 0), ("DIGITS_MAX_SHARE", 1),
                      ("DIGITS_MAX_SHARE_MANY", 1)):
    monkeypatch.setattr(sorting, name, value)
  calls, select = [], sorting.SortingMixin._smallest_by_digits
  monkeypatch.setattr(sorting.SortingMixin, "_smallest_by_digits", lambda self, *args: calls.append(args) or select(self, *args))
  yield monkeypatch
  assert calls, "no topk selected by digits"

def _order(a:np.ndarray, largest:bool) -> np.ndarray:
  """the oracle's indices along the last axis: largest first (NaN first) or smallest first (NaN last), -0.0 equal to 0.0, ties by index"""
  f = a.astype(np.float64)
  nan = np.isnan(f)
  v = np.where(nan, 0, f)
  keys = (-v, ~nan) if largest else (v, nan)
  return np.stack([np.lexsort((np.arange(a.shape[-1]), keys[0][r], keys[1][r])) for r in np.ndindex(a.shape[:-1])]).reshape(a.shape)

def _check(a:np.ndarray, k:int, largest:bool, dt=None, dim:int=-1):
  t = Tensor(a, dtype=dt) if dt is not None else Tensor(a)
  v, i = t.topk(k, dim=dim, largest=largest)
  want = np.moveaxis(_order(np.moveaxis(a, dim, -1), largest)[..., :k], -1, dim)
  got_i = i.numpy()
  assert i.dtype is dtypes.int32 and v.dtype is t.dtype and v.shape == want.shape
  np.testing.assert_array_equal(got_i, want)
  picked = np.take_along_axis(a, want, dim)
  got_v = v.numpy()
  np.testing.assert_array_equal(got_v, picked)  # NaN where NaN
  if a.dtype.kind == "f": assert (np.signbit(got_v.astype(np.float32)) == np.signbit(picked.astype(np.float32))).all()  # -0.0 as itself

@pytest.mark.parametrize("largest", [True, False])
def test_floats_nan_zeros_ties(digits, largest):
  a = R.integers(-6, 7, (3, 300)).astype(np.float32)  # many ties: some at the k-th value
  a[0, ::7], a[1, 1::5], a[1, 2::5] = np.nan, -0.0, 0.0
  a[2, :40], a[2, 50] = np.inf, -np.inf
  for k in (5, 150, 300):
    _check(a, k, largest)

def test_ties_at_the_kth_value(digits):
  """the k-th value shared by many: the first ones by index are kept, wherever they lie in the row"""
  a = np.zeros((2, 257), np.float32)
  a[0, ::3], a[1, 200:] = 1.0, -1.0
  for k in (6, 120, 256):
    _check(a, k, True)
    _check(a, k, False)

@pytest.mark.parametrize("dt", [dtypes.float16, dtypes.bfloat16, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32,
                                dtypes.uint32, dtypes.bool], ids=str)
def test_dtypes_and_extremes(digits, dt):
  """every packed dtype with its extremes: the order's digits span 0 .. 2**32-1 (int32's and uint32's least and greatest)"""
  if dt is dtypes.bool: a = R.integers(0, 2, (2, 90)).astype(bool)
  elif dtypes.is_float(dt):
    a = R.standard_normal((2, 90)).astype(np.float32) * 100
    a[0, [1, 4, 9]], a[1, [0, 3]], a[1, 5:9] = [np.nan, np.inf, -np.inf], [-0.0, 0.0], [65504, -65504, 1e-7, -1e-7]
  else:
    lo, hi = dtypes.min(dt), dtypes.max(dt)
    a = R.integers(lo, hi + 1, (2, 90), dtype=np.int64)
    a[0, :6] = [lo, hi, lo, hi, 0, 1]
  ref = np.array(Tensor(a, dtype=dt).numpy())  # the values as the dtype holds them (bfloat16 rounds)
  for k in (5, 45, 89):
    for largest in (True, False):
      v, i = Tensor(a, dtype=dt).topk(k, largest=largest)
      want = _order(ref.astype(np.float64) if dt is not dtypes.bool else ref, largest)[:, :k]
      assert v.dtype is dt
      np.testing.assert_array_equal(i.numpy(), want)
      np.testing.assert_array_equal(v.numpy(), np.take_along_axis(ref, want, 1))

def test_dims_batches_and_parts(digits):
  """other dims than the last, lead axes of several sizes, and the scatter's SCATTER_PARTS parts: 3 whole rows each (48 rows), 8 segments
  of 3 rows (6 rows: 40 elements in segments of 5), 16 segments of all 7 rows (40 in segments of 3, the last padded)"""
  digits.setattr(sorting, "SCATTER_PARTS", 16)
  a = R.standard_normal((4, 3, 50)).astype(np.float32)
  _check(a, 20, True, dim=-1)
  _check(np.ascontiguousarray(a.transpose(2, 0, 1)), 20, True, dim=0)
  _check(np.ascontiguousarray(a.transpose(0, 2, 1)), 7, False, dim=1)
  for rows in (48, 6, 7):
    b = R.integers(-20, 20, (rows, 40)).astype(np.float32)
    _check(b, 11, True)

def test_long_digits(digits):
  """the wider digits of long rows (DIGIT_BITS_LONG: 11, 11 and 10 bits) and a row padded to its running sum's blocks"""
  digits.setattr(sorting, "DIGIT_BITS_LONG_MIN", 64)
  a = R.standard_normal((2, 1000)).astype(np.float32)
  a[0, 500:700] = a[0, 3]
  for k in (9, 400):
    _check(a, k, True)
    _check(a, k, False)

def test_gradient_through_values(digits):
  a = R.integers(-5, 5, (3, 60)).astype(np.float32)
  x = Tensor(a, requires_grad=True)
  v, i = x.topk(17)
  w = R.standard_normal(v.shape).astype(np.float32)
  (v * Tensor(w)).sum().backward()
  want = np.zeros_like(a)
  np.put_along_axis(want, i.numpy(), w, 1)
  np.testing.assert_array_equal(x.grad.numpy(), want)
  np.testing.assert_array_equal(i.numpy(), _order(a, True)[:, :17])

def test_selects_without_sorting_the_row():
  """topk 200 of 2**15 floats (past SELECT_MAX_K) selects by digits: 23 kernels, where the sort it was cut from took the bitonic network's
  50 (about one per two stages, each a pass over the whole row)"""
  a = R.standard_normal(1 << 15).astype(np.float32)
  t = Tensor(a).realize()
  GlobalCounters.reset()
  v, i = t.topk(200)
  Tensor.realize(v, i)
  assert GlobalCounters.kernel_count <= 30, GlobalCounters.kernel_count
  want = np.argsort(-a, kind="stable")[:200]
  np.testing.assert_array_equal(i.numpy(), want)
  np.testing.assert_array_equal(v.numpy(), a[want])

def test_short_rows_and_large_k_still_sort():
  """where sorting wins it stays: a short row takes the two-kernel rank sort, and a k past DIGITS_MAX_SHARE of the row the network"""
  a = R.standard_normal((2, 1000)).astype(np.float32)
  for k in (100, 900, 1000):
    v, i = Tensor(a).topk(k, largest=False)
    np.testing.assert_array_equal(i.numpy(), np.argsort(a, 1, kind="stable")[:, :k])
  assert not Tensor(a).uop._digits_win(100) and Tensor(R.standard_normal(5000)).uop._digits_win(100)
  assert not Tensor(R.standard_normal(5000)).uop._digits_win(4000)
