"""Scans, statistics, sorting and einsum against numpy; the core subset on every executing backend."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

pytestmark = pytest.mark.hcq_matrix  # also on the mock AMD and NV devices (tests/conftest.py)

R = np.random.default_rng(0)
X = R.standard_normal((3, 4, 5)).astype(np.float32)

def test_scans(device):
  t = Tensor(X, device=device)
  np.testing.assert_allclose(t.cumprod(1).numpy(), np.cumprod(X, 1), rtol=1e-5)
  np.testing.assert_allclose(t.logcumsumexp(-1).numpy(), np.logaddexp.accumulate(X, -1), rtol=1e-5, atol=1e-6)
  np.testing.assert_array_equal(t.cummax(2)[0].numpy(), np.maximum.accumulate(X, 2))
  np.testing.assert_array_equal(t.cummin(0)[0].numpy(), np.minimum.accumulate(X, 0))

def test_cummax_indices_and_ints():
  v, i = Tensor([3, 1, 4, 1, 5, 2, 5], dtype=dtypes.int8).cummax(0)
  assert v.dtype is dtypes.int8 and v.tolist() == [3, 3, 4, 4, 5, 5, 5] and i.tolist() == [0, 0, 2, 2, 4, 4, 6]  # ties: the last, like torch
  v, i = Tensor([2, 3, 1, 1, 0]).cummin(0)
  assert v.tolist() == [2, 2, 1, 1, 0] and i.tolist() == [0, 0, 2, 3, 4]
  assert Tensor([1, 2, 3, 4]).cumprod(0).tolist() == [1, 2, 6, 24]
  assert Tensor.zeros(2, 0).cumprod(1).shape == (2, 0) and Tensor(2.0).logcumsumexp().shape == ()
  np.testing.assert_allclose(Tensor([1000., 1001.]).logcumsumexp().numpy(), np.logaddexp.accumulate([1000., 1001.]), rtol=1e-6)

def test_statistics(device):
  t = Tensor(X, device=device)
  v, m = t.var_mean(1, correction=0)
  np.testing.assert_allclose(v.numpy(), X.var(1), rtol=1e-5)
  np.testing.assert_allclose(m.numpy(), X.mean(1), rtol=1e-5, atol=1e-6)
  s, m = t.std_mean((0, 2), keepdim=True)
  np.testing.assert_allclose(s.numpy(), X.std((0, 2), ddof=1, keepdims=True), rtol=1e-5)
  np.testing.assert_allclose(m.numpy(), X.mean((0, 2), keepdims=True), rtol=1e-5, atol=1e-6)
  np.testing.assert_array_equal(t.argmax(1, keepdim=True).numpy(), X.argmax(1)[:, None])
  np.testing.assert_allclose(Tensor(X[:, :2, :2], device=device).prod(0).numpy(), X[:, :2, :2].prod(0), rtol=1e-6)

def test_sort_topk(device):
  y = np.array([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3], [0, -1, 0, 2, -1, 7, 7, 1, 0, 3]], np.float32)
  t = Tensor(y, device=device)
  v, i = t.sort()
  np.testing.assert_array_equal(v.numpy(), np.sort(y, -1))
  np.testing.assert_array_equal(i.numpy(), np.argsort(y, -1, kind="stable"))  # stable: equal elements keep their order
  v, i = t.sort(0, descending=True)
  np.testing.assert_array_equal(v.numpy(), -np.sort(-y, 0))
  np.testing.assert_array_equal(t.argsort(descending=True).numpy(), np.argsort(-y, -1, kind="stable"))
  v, i = t.topk(3)
  np.testing.assert_array_equal(v.numpy(), -np.sort(-y, -1)[:, :3])
  np.testing.assert_array_equal(np.take_along_axis(y, i.numpy(), -1), v.numpy())
  v, i = t.topk(2, dim=0, largest=False)
  np.testing.assert_array_equal(v.numpy(), np.sort(y, 0)[:2])

CORE = list(dtypes.all)

@pytest.mark.parametrize("dt", CORE, ids=str)
def test_sort_keeps_every_dtype(dt):
  vals = [0, 3, 1, 2, 1] if dt is not dtypes.bool else [True, False, True, False, False]
  if dt in dtypes.sints: vals = [dt.min, 3, dt.max, -2, 0]
  elif dt in dtypes.uints: vals = [dt.max, 3, 0, 2, 1]
  elif dtypes.is_float(dt): vals = [1.5, -float("inf"), 0.25, float("inf"), -3.0]
  if dt is dtypes.fp8e4m3: vals = [1.5, -448.0, 0.25, 448.0, -3.0]  # it has no inf: +-448 are its ends
  v, i = Tensor(vals, dtype=dt).sort()
  assert v.dtype is dt and i.dtype is dtypes.int32
  assert v.tolist() == sorted(vals) and i.tolist() == sorted(range(5), key=lambda k: vals[k])
  assert Tensor(vals, dtype=dt).sort(descending=True)[0].tolist() == sorted(vals, reverse=True)

def test_sort_nan_and_errors():
  v, i = Tensor([2.0, float("nan"), -1.0, float("nan")]).sort()
  assert v.tolist()[:2] == [-1.0, 2.0] and np.isnan(v.tolist()[2:]).all() and i.tolist() == [2, 0, 1, 3]
  with pytest.raises(ValueError, match=r"topk k=4 is out of range for axis 0 of shape \(3,\)"): Tensor([1, 2, 3]).topk(4)

@pytest.mark.parametrize("formula,shapes", [("ij,jk->ik", [(3, 4), (4, 5)]), ("ii->i", [(4, 4)]), ("ii", [(3, 3)]), ("ij->", [(3, 4)]),
  ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("...ij->...ji", [(2, 3, 4)]), ("i,j", [(3,), (4,)]), ("ij,ij->i", [(3, 4), (3, 4)]),
  ("ijk,k->ij", [(2, 3, 4), (4,)]), ("ba", [(3, 4)]), ("i...,i->...", [(3, 2, 2), (3,)])])
def test_einsum(formula, shapes):
  xs = [R.standard_normal(s).astype(np.float32) for s in shapes]
  np.testing.assert_allclose(Tensor.einsum(formula, *[Tensor(x) for x in xs]).numpy(), np.einsum(formula, *xs), rtol=1e-5, atol=1e-5)

def test_einsum_errors_and_ints():
  assert Tensor.einsum("i,i->", [Tensor([1, 2, 3]), Tensor([4, 5, 6])]).tolist() == 32
  with pytest.raises(ValueError, match="names 2 operands, but 1 were given"): Tensor.einsum("ij,jk->ik", Tensor.ones(2, 2))
  with pytest.raises(ValueError, match=r"subscripts 'ijk' don't fit an operand of shape \(2, 2\)"): Tensor.einsum("ijk->i", Tensor.ones(2, 2))
  with pytest.raises(ValueError, match="letter 'j' has sizes 2 and 3"): Tensor.einsum("ij,jk->ik", Tensor.ones(2, 2), Tensor.ones(3, 2))

def test_bitonic_network_matches_stable_argsort(monkeypatch):
  # the (value, index) network of 64-bit dtypes; long rows take it, lowered here so a short row (13, padded to 16) exercises it
  import tinygrad.mixin.sorting as sorting
  monkeypatch.setattr(sorting, "BITONIC_MIN", 4)
  x = np.array([[3.5, -1, np.nan, 2, 2, 0, -7, 2, np.inf, 1, np.nan, -1, 5],
                [1, 1, 1, 0, 0, 9, -3, 1, 4, 4, 2, 8, 0]], dtype=np.float64)
  v, i = Tensor(x).sort(dim=1)
  want = np.argsort(x, axis=1, kind="stable")  # NaN last, ties in their order
  np.testing.assert_array_equal(i.numpy(), want)
  np.testing.assert_array_equal(v.numpy(), np.take_along_axis(x, want, 1))
  ints = x[1].astype(np.int64)
  v, i = Tensor(ints).sort(descending=True)
  want = np.argsort(-ints, kind="stable")
  np.testing.assert_array_equal(i.numpy(), want)
  np.testing.assert_array_equal(v.numpy(), ints[want])
  assert v.dtype is dtypes.int64 and i.dtype is dtypes.int32

@pytest.mark.parametrize("bitonic_min", [2048, 4], ids=["rank", "network"])
def test_float64_sort_keeps_negative_zero(monkeypatch, bitonic_min):
  """a 64-bit row's -0.0 came back as 0.0: the rank sort picks values by a one-hot sum (-0.0 + 0.0), and the network lost it past 32
  elements too; both now carry a float's bits"""
  import tinygrad.mixin.sorting as sorting
  monkeypatch.setattr(sorting, "BITONIC_MIN", bitonic_min)
  a = np.tile([[1.0, -0.0, 0.0, -0.0, -1.0, np.nan, -0.0], [-0.0, 2.0, -0.0, 0.0, 0.0, -0.0, -3.0]], 6)  # 42: past 32, a padded row
  for desc in (False, True):
    want = np.argsort(np.where(np.isnan(a), -np.inf, -a) if desc else a, axis=1, kind="stable")
    v, i = Tensor(a).sort(dim=1, descending=desc)
    np.testing.assert_array_equal(i.numpy(), want)
    np.testing.assert_array_equal(np.signbit(v.numpy()), np.signbit(np.take_along_axis(a, want, 1)))

# *** long axes: scans in blocks, sorts by packed keys (a bitonic network past PACKED_BITONIC_MIN), topk by group minimums ***

def _stable_order(a:np.ndarray, descending:bool) -> np.ndarray:
  """the oracle's indices along the last axis: NaN above everything (last ascending, first descending), ties in index order"""
  def key(row, j):
    v = row[j]
    nan = isinstance(v, np.floating) and np.isnan(v)
    return (nan != descending, 0 if nan else (-v if descending else v), j) if descending else (nan, 0 if nan else v, j)
  return np.array([sorted(range(a.shape[-1]), key=lambda j: key(row, j)) for row in a.reshape(-1, a.shape[-1])]).reshape(a.shape)

@pytest.mark.parametrize("n", [1, 8, 9, 17, 100, 600])
def test_long_scans(n):
  a = R.standard_normal((3, n)).astype(np.float32)
  ai = R.integers(-4, 5, (n, 3)).astype(np.int32)  # few values: many ties for cummax's index
  np.testing.assert_allclose(Tensor(a).cumsum(1).numpy(), np.cumsum(a.astype(np.float64), 1), rtol=1e-5, atol=1e-4)
  np.testing.assert_array_equal(Tensor(ai).cumsum(0).numpy(), np.cumsum(ai, 0))  # exact, along a strided axis
  np.testing.assert_array_equal(Tensor(ai).cumprod(0).numpy(), np.cumprod(ai, 0).astype(np.int32))  # int32 wraps, like C
  np.testing.assert_allclose(Tensor(a / 8 + 1).cumprod(1).numpy(), np.cumprod((a / 8 + 1).astype(np.float64), 1), rtol=1e-4)
  v, i = Tensor(ai).cummax(0)
  np.testing.assert_array_equal(v.numpy(), np.maximum.accumulate(ai, 0))
  hit = (ai[None] == v.numpy()[:, None]) & (np.arange(n)[None, :, None] <= np.arange(n)[:, None, None])  # (r, j, c): j <= r holds the max
  want = n - 1 - hit[:, ::-1].argmax(1)
  np.testing.assert_array_equal(i.numpy(), want)  # the last index of the running max, like torch
  np.testing.assert_array_equal(Tensor(a).cummin(1)[0].numpy(), np.minimum.accumulate(a, 1))
  np.testing.assert_allclose(Tensor(a).logcumsumexp(1).numpy(), np.logaddexp.accumulate(a.astype(np.float64), 1), rtol=1e-5, atol=1e-5)

def test_long_scan_edges():
  x = np.arange(20, dtype=np.float32)
  x[[3, 15]] = np.nan
  v, i = Tensor(x).cummax(0)
  assert np.isnan(v.numpy()[3:]).all() and i.tolist() == [0, 1, 2] + [3]*12 + [15]*5  # NaN wins and the last NaN is the index
  h = R.standard_normal(300).astype(np.float16)
  got = Tensor(h).cumsum(0)
  assert got.dtype is dtypes.float16
  np.testing.assert_allclose(got.numpy().astype(np.float32), np.cumsum(h.astype(np.float32)), rtol=2e-3, atol=2e-2)  # summed in float32
  b = R.integers(0, 2, 50).astype(bool)
  assert Tensor(b).cumsum(0).tolist() == np.cumsum(b).tolist()
  assert Tensor(np.full(40, np.inf, np.float32)).cumsum(0).numpy().tolist() == [np.inf]*40  # a select, never inf * 0

def _cummax_oracle(a:np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """torch's running max along the last axis, one element at a time: a NaN or an element >= the max (no NaN yet) takes over"""
  vals, idx = np.empty_like(a), np.empty(a.shape, np.int32)
  for r in np.ndindex(a.shape[:-1]):
    best, at = a[r + (0,)], 0
    for i, v in enumerate(a[r]):
      if np.isnan(v) or (not np.isnan(best) and v >= best): best, at = v, i
      vals[r + (i,)], idx[r + (i,)] = best, at
  return vals, idx

@pytest.mark.parametrize("dt", [np.float32, np.float16, np.int32], ids=["float32", "float16", "int32"])
@pytest.mark.parametrize("n", [9, 66, 203])
def test_cummax_ties_nan_axes(dt, n):
  """cummax's value and index scans (by blocks along the last axis on the CPU) against the one-at-a-time oracle: ties take the later
  index, -0.0 ties 0.0, a NaN takes over and the last NaN is the index; along the last axis, another, and a 1-D row"""
  a = R.integers(-3, 4, (3, 2, n)).astype(dt)  # few values: many ties
  if dt is not np.int32:
    a[0, 0, ::5], a[0, 1, 3::7] = -0.0, 0.0
    a[1, 0, [4, 8]], a[2, 1, n // 2:] = np.nan, np.nan
  for ax in (2, 1, 0):
    want_v, want_i = (np.moveaxis(w, -1, ax) for w in _cummax_oracle(np.moveaxis(a, ax, -1)))
    v, i = Tensor(a).cummax(ax)
    np.testing.assert_array_equal(i.numpy(), want_i)
    np.testing.assert_array_equal(v.numpy(), want_v)
    assert v.dtype is Tensor(a).dtype and i.dtype is dtypes.int32
    assert (np.signbit(v.numpy()) == np.signbit(want_v)).all()  # the element itself: -0.0 where it took over
  v, i = Tensor(a[0, 0]).cummax(0)
  np.testing.assert_array_equal(i.numpy(), _cummax_oracle(a[0, 0])[1])
  v, i = Tensor(a[0, 0]).cummin(0)
  np.testing.assert_array_equal(i.numpy(), _cummax_oracle(-a[0, 0])[1])

@pytest.mark.parametrize("n", [9, 64, 1024, 1030])
def test_cummax_index_by_lanes(n):
  """cummax's index (an int MAX scan of where(x equals its running max, position, -1)) by lanes against the one-at-a-time oracle:
  ties take the later index, -0.0 ties 0.0, a NaN takes over and the last NaN is the index; -inf (the float scan's identity),
  narrow and 64-bit dtypes, 1-D and 3-D, cummin"""
  f = R.integers(-3, 4, (2, 3, n)).astype(np.float32)
  f[0, 0, ::4], f[0, 1, 1::3], f[1, 0] = -0.0, 0.0, -np.inf
  f[1, 1, [2, 5]], f[1, 2, n // 2:] = np.nan, np.nan
  cases = [f, f[1, 2], R.integers(-128, -125, (3, n)).astype(np.int8), R.integers(0, 3, (3, n)).astype(np.uint8),
           R.integers(-2, 2, (3, n)).astype(np.int64), f.astype(np.float64)]
  for a in cases:
    v, i = Tensor(a).cummax(-1)
    want_v, want_i = _cummax_oracle(a)
    np.testing.assert_array_equal(i.numpy(), want_i)
    np.testing.assert_array_equal(v.numpy(), want_v)  # NaN where NaN: assert_array_equal counts NaNs equal
    if a.dtype.kind == "f": assert (np.signbit(v.numpy()) == np.signbit(want_v)).all()  # the element that took over: -0.0 after 0.0
    np.testing.assert_array_equal(Tensor(a).cummin(-1)[1].numpy(), _cummax_oracle(-a.astype(np.float64))[1])

def test_long_cumsum_gradient():
  a, w = R.standard_normal((2, 50)).astype(np.float32), R.standard_normal((2, 50)).astype(np.float32)
  x = Tensor(a, requires_grad=True)
  (x.cumsum(1) * Tensor(w)).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), np.cumsum(w[:, ::-1], 1)[:, ::-1], rtol=1e-5, atol=1e-5)  # a reversed cumsum
  x = Tensor(a / 8 + 1, requires_grad=True)
  (x.cumprod(1) * Tensor(w)).sum().backward()
  p = np.cumprod((a / 8 + 1).astype(np.float64), 1)
  np.testing.assert_allclose(x.grad.numpy(), np.cumsum((w * p)[:, ::-1], 1)[:, ::-1] / (a / 8 + 1), rtol=1e-4, atol=1e-5)

# the packed keys' two sorts: short rows, or few rows, rank all at once (rank); longer ones take the bitonic network
FORMS = pytest.mark.parametrize("rank_max_compares", [0, 1 << 40], ids=["network", "rank"])

@FORMS
@pytest.mark.parametrize("n", [1, 5, 33, 100, 300])
@pytest.mark.parametrize("dt", [np.float32, np.int32], ids=["float32", "int32"])
def test_packed_sort_and_topk(monkeypatch, n, dt, rank_max_compares):
  import tinygrad.mixin.sorting as sorting
  monkeypatch.setattr(sorting, "PACKED_RANK_MAX_COMPARES", rank_max_compares)
  a = (R.standard_normal((3, n)) if dt is np.float32 else R.integers(-5, 5, (3, n))).astype(dt)
  if dt is np.float32 and n > 5:
    a[0, ::3] = a[0, 1]
    a[1, [2, 4]], a[1, 0], a[2, [1, 3, 5]] = np.nan, np.inf, [-0.0, 0.0, -0.0]
  for desc in (False, True):
    want = _stable_order(a, desc)
    v, i = Tensor(a).sort(-1, descending=desc)
    np.testing.assert_array_equal(i.numpy(), want)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, want, -1))
    assert (np.signbit(v.numpy()) == np.signbit(np.take_along_axis(a, want, -1))).all()  # -0.0 comes back as itself
    for k in sorted({1, min(4, n), n}):
      tv, ti = Tensor(a).topk(k, largest=desc)
      np.testing.assert_array_equal(ti.numpy(), want[:, :k])
      np.testing.assert_array_equal(tv.numpy(), np.take_along_axis(a, want, -1)[:, :k])
  at = np.ascontiguousarray(a.T)  # along axis 0 of a strided view
  np.testing.assert_array_equal(Tensor(at).argsort(0).numpy(), _stable_order(a, False).T)

@FORMS
@pytest.mark.parametrize("dt", [dtypes.uint32, dtypes.int8, dtypes.uint16, dtypes.float16, dtypes.bfloat16, dtypes.bool], ids=str)
def test_packed_sort_narrow_dtypes(monkeypatch, dt, rank_max_compares):
  import tinygrad.mixin.sorting as sorting
  monkeypatch.setattr(sorting, "PACKED_RANK_MAX_COMPARES", rank_max_compares)
  vals = {dtypes.uint32: [2**32-1, 0, 2**31, 7, 2**31-1, 7], dtypes.int8: [-128, 127, 0, -1, 5, -128],
          dtypes.uint16: [65535, 0, 3, 3, 40000, 1], dtypes.float16: [1.5, -0.0, 65504.0, -65504.0, 0.0, float("nan")],
          dtypes.bfloat16: [1.5, -2.0, 3.0, -0.0, 0.0, float("inf")], dtypes.bool: [True, False, True, False, False, True]}[dt]
  t = Tensor((vals * 10)[:50], dtype=dt)  # 50 > PACKED_BITONIC_MIN: the network, where its form says
  order = sorted(range(50), key=lambda j: (vals[j % 6] != vals[j % 6], vals[j % 6] if vals[j % 6] == vals[j % 6] else 0, j))
  v, i = t.sort()
  assert v.dtype is dt and i.tolist() == order
  assert [x if x == x else "nan" for x in v.tolist()] == [vals[j % 6] if vals[j % 6] == vals[j % 6] else "nan" for j in order]

@pytest.mark.parametrize("compares", [None, 1], ids=["groups by rows", "groups of 2"])
@pytest.mark.parametrize("n, k", [(70, 6), (300, 1), (1000, 40), (4097, 16), (4097, 64), (100000, 40)])
def test_topk_selection(monkeypatch, n, k, compares):
  """topk by group minimums, one level and several (the minimums' own selection), beside the oracle's stable order: with groups as
  wide as these few rows allow, and with groups of 2 (SELECT_RANK_COMPARES too small for more: the most levels)"""
  import tinygrad.mixin.sorting as sorting
  if compares is not None: monkeypatch.setattr(sorting, "SELECT_RANK_COMPARES", compares)
  a = R.integers(-3, 4, (2, n)).astype(np.float32)  # many ties: the lower index first
  a[0, ::7], a[1, 1::5] = np.nan, -0.0
  for largest in (True, False):
    want = _stable_order(a, largest)[:, :k]
    v, i = Tensor(a).topk(k, largest=largest)
    np.testing.assert_array_equal(i.numpy(), want)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, want, -1))
    assert (np.signbit(v.numpy()) == np.signbit(np.take_along_axis(a, want, -1))).all()
  h = R.standard_normal((3, n)).astype(np.float16)
  np.testing.assert_array_equal(Tensor(h).topk(k)[1].numpy(), np.argsort(-h.astype(np.float32), -1, kind="stable")[:, :k])
  ints = R.integers(-50, 50, (n, 2)).astype(np.int32)  # along axis 0
  np.testing.assert_array_equal(Tensor(ints).topk(k, dim=0, largest=False)[1].numpy(), np.argsort(ints, 0, kind="stable")[:k])

def test_topk_of_one_long_row_takes_few_levels():
  """a sampler's topk (one row of a vocabulary): groups of 32, so one level of minimums, not the 9 levels of the groups of 2 that 1024
  rows need to keep their ranks small (each level a few kernels and their python: 41 kernels, 15 -> 4 ms)"""
  from tinygrad.schedule.rangeify import create_schedule
  a = R.standard_normal((1, 32000)).astype(np.float32)
  v, i = Tensor(a).topk(50)
  items, _ = create_schedule([v.uop, i.uop])
  assert sum(it.kind == "kernel" for it in items) <= 12
  want = _stable_order(a, True)[:, :50]
  np.testing.assert_array_equal(i.numpy(), want)
  np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, want, -1))

@pytest.mark.parametrize("dt", [dtypes.bfloat16, dtypes.float16, dtypes.int8, dtypes.uint32, dtypes.bool], ids=str)
def test_topk_selection_narrow_dtypes(dt):
  """the selection's candidates gathered as their elements' bits and keyed again: -0.0, NaN and every dtype's extremes come back as such"""
  vals = {dtypes.bfloat16: [1.5, -0.0, 0.0, float("nan"), -2.0, float("inf")], dtypes.float16: [-0.0, 65504.0, 0.0, -65504.0, 1.0, float("nan")],
          dtypes.int8: [-128, 127, 0, -1, 5, 127], dtypes.uint32: [2**32-1, 0, 2**31, 7, 2**31-1, 2**32-1],
          dtypes.bool: [True, False, True, False, False, True]}[dt]
  row = [vals[j] for j in R.integers(0, 6, 301)]  # a padded last group (301 = 75 groups of 4 + 1)
  t = Tensor([row, row[::-1]], dtype=dt)
  for largest in (True, False):
    for k in (1, 5, 16):
      want = _stable_order(np.array([row, row[::-1]], dtype=object if dt is dtypes.bool else np.float64), largest)[:, :k]
      v, i = t.topk(k, largest=largest)
      assert v.dtype is dt and i.numpy().tolist() == want.tolist()
      got = t.numpy()[np.arange(2)[:, None], want]
      np.testing.assert_array_equal(v.numpy(), got)
      if dtypes.is_float(dt): assert (np.signbit(v.numpy().astype(np.float32)) == np.signbit(got.astype(np.float32))).all()

def test_topk_selection_and_network(monkeypatch):
  import tinygrad.mixin.sorting as sorting
  a = R.integers(-3, 4, (4, 70)).astype(np.float32)
  for max_k in (64, 2):  # selection, and the full sort cut to k
    monkeypatch.setattr(sorting, "SELECT_MAX_K", max_k)
    for largest in (True, False):
      want = _stable_order(a, largest)[:, :6]
      v, i = Tensor(a).topk(6, largest=largest)
      np.testing.assert_array_equal(i.numpy(), want)
      np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, want, -1))
    v, i = Tensor(a.T).topk(3, dim=0)
    np.testing.assert_array_equal(i.numpy(), _stable_order(a, True)[:, :3].T)
  monkeypatch.setattr(sorting, "SELECT_MAX_K", 64)
  x, w = Tensor(a, requires_grad=True), R.standard_normal((4, 6)).astype(np.float32)
  v, i = x.topk(6)
  (v * Tensor(w)).sum().backward()
  want = np.zeros_like(a)
  np.put_along_axis(want, i.numpy(), w, -1)
  np.testing.assert_array_equal(x.grad.numpy(), want)  # the gradient lands on the chosen elements

def _pick_gradient(index:np.ndarray, grad:np.ndarray, axis:int, n:int) -> np.ndarray:
  """the oracle: each output's gradient added to the element its index names along axis (n elements there)"""
  want = np.zeros(index.shape[:axis] + (n,) + index.shape[axis+1:], np.float64)
  for pos in np.ndindex(*index.shape):
    want[pos[:axis] + (index[pos],) + pos[axis+1:]] += grad[pos]
  return want

@pytest.mark.parametrize("case", ["sort rank", "sort network", "sort dim 0", "topk select", "topk by sort", "sort half"])
@pytest.mark.parametrize("wants_grad", [None, True], ids=["gradient()", "backward()"])
def test_sort_gradient_goes_to_the_picked_element(monkeypatch, case, wants_grad):
  """packed keys give values as bits, which autograd cannot follow: their gradient goes back by index. It was lost where no tensor was given
  requires_grad=True (x.gradient(x) of a plain tensor raised 'no gradient reaches'); both ways land it on the element each output came from"""
  import tinygrad.mixin.sorting as sorting
  if case == "sort network": monkeypatch.setattr(sorting, "PACKED_RANK_MAX_COMPARES", 0)
  a = R.integers(-4, 5, (3, 700 if case == "sort network" else 40)).astype(np.float32)  # ties: each tie's gradient goes where its index says
  n, axis = a.shape[1], 1
  op = {"sort rank": lambda t: t.sort(1), "sort network": lambda t: t.sort(-1, descending=True), "sort dim 0": lambda t: t.sort(0),
        "topk select": lambda t: t.topk(5), "topk by sort": lambda t: t.topk(30, largest=False), "sort half": lambda t: t.sort(1)}[case]
  if case == "sort dim 0": n, axis = a.shape[0], 0
  x = Tensor(a, requires_grad=wants_grad)
  values, indices = op(x.cast(dtypes.half) if case == "sort half" else x)
  w = R.standard_normal(values.shape).astype(np.float32)
  loss = (values.cast(dtypes.float32) * Tensor(w)).sum()
  if wants_grad: loss.backward(); got = x.grad.numpy()
  else: got = loss.gradient(x)[0].numpy()
  idx = indices.numpy()
  np.testing.assert_array_equal(values.numpy().astype(np.float32), np.take_along_axis(a, idx, axis))
  np.testing.assert_array_equal(got, _pick_gradient(idx, w.astype(np.float16 if case == "sort half" else np.float32), axis, n))

def test_sort_gradient_float64_pairs():
  """64-bit values sort (value, index) pairs, compares and selects that autograd follows"""
  a = R.integers(-4, 5, (2, 30)).astype(np.float64)
  x = Tensor(a)
  values, indices = x.topk(7)
  w = R.standard_normal(values.shape)
  got = (values * Tensor(w)).sum().gradient(x)[0].numpy()
  np.testing.assert_array_equal(values.numpy(), np.take_along_axis(a, indices.numpy(), 1))
  np.testing.assert_array_equal(got, _pick_gradient(indices.numpy(), w, 1, 30))

@pytest.mark.parametrize("knob, value", [("RANK_BLOCK", 2), ("RANK_BLOCK", 8), ("RANK_BLOCK", 64), ("MERGE_TAIL", 1), ("MERGE_TAIL", 4),
                                          ("MERGE_TAIL", 64), ("STAGES_PER_KERNEL", 1), ("STAGES_PER_KERNEL", 3)], ids=str)
def test_network_kernels(monkeypatch, knob, value):
  """the network's first stages as a rank sort of blocks (any block size), a merge's stages within a row in one kernel (any row: 2 keys,
  one stage, up to the block), the others any number to a kernel (a merge's last kernel runs short); a padded row, ties and NaN in every
  kernel's part of it"""
  import tinygrad.mixin.sorting as sorting
  monkeypatch.setattr(sorting, knob, value)
  monkeypatch.setattr(sorting, "PACKED_RANK_MAX_COMPARES", 0)
  a = R.integers(-20, 20, (2, 700)).astype(np.float32)
  a[0, ::9], a[1, ::13] = np.nan, np.nan
  for desc in (False, True):
    want = _stable_order(a, desc)
    v, i = Tensor(a).sort(-1, descending=desc)
    np.testing.assert_array_equal(i.numpy(), want)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, want, -1))
  b = R.standard_normal(3000).astype(np.float32)  # 1-D, padded to 4096
  np.testing.assert_array_equal(Tensor(b).argsort(0).numpy(), np.argsort(b, kind="stable"))

@pytest.mark.parametrize("n", [3, 5, 7, 16, 33])
def test_sort_of_a_computed_expression(n):
  """a sort of an expression (not a buffer) compares each element with its row: computed again at every compare, the rank kernel met an
  LLVM 22 x86 bug (a mask read from the wrong register, tests/renderers/test_host_simd.py), so an element ranked below itself (indices
  past the row, garbage values, a wrong topk gradient)"""
  rng = np.random.default_rng(n)
  x = rng.standard_normal((4, n)).astype(np.float32)
  fns = {"logsigmoid": lambda v: -np.logaddexp(0, -v), "sin": np.sin, "exp": np.exp, "log": lambda v: np.log(np.abs(v))}
  for name, ref in fns.items():
    t = Tensor(x).abs() if name == "log" else Tensor(x)
    y = getattr(t, name)()
    want = ref(x.astype(np.float64))
    v, i = y.sort(-1)
    np.testing.assert_array_equal(i.numpy(), np.argsort(want, -1, kind="stable"))
    np.testing.assert_allclose(v.numpy(), np.sort(want, -1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(y.topk(2, -1)[1].numpy(), np.argsort(-want, -1, kind="stable")[:, :2])
  t = Tensor(x[:2, :3], requires_grad=True)
  t.logsigmoid().topk(3, -1, largest=False)[0].sum().backward()
  np.testing.assert_allclose(t.grad.numpy(), 1 / (1 + np.exp(x[:2, :3].astype(np.float64))), rtol=1e-5)

def test_cumprod_keeps_the_dtype():
  """cumprod answers in the input's dtype like prod (tinygrad's rule): int8 wraps as it would multiplying in int8, half stays half"""
  a = np.array([3, -5, 7, 11, 2, -1], np.int8)
  got = Tensor(a).cumprod(0)
  assert got.dtype is dtypes.int8 and got.tolist() == np.cumprod(a.astype(np.int64)).astype(np.int8).tolist()
  h = np.array([1.5, 2.0, -0.5, 3.0], np.float16)
  assert Tensor(h).cumprod(0).dtype is dtypes.float16 and Tensor(h).cumprod(0).tolist() == np.cumprod(h.astype(np.float64)).tolist()
