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

# the core dtypes: every one but fp8, which the CPU renderers have no type for
CORE = [dt for dt in dtypes.all if dt not in (dtypes.fp8e4m3, dtypes.fp8e5m2)]

@pytest.mark.parametrize("dt", CORE, ids=str)
def test_sort_keeps_every_dtype(dt):
  vals = [0, 3, 1, 2, 1] if dt is not dtypes.bool else [True, False, True, False, False]
  if dt in dtypes.sints: vals = [dt.min, 3, dt.max, -2, 0]
  elif dt in dtypes.uints: vals = [dt.max, 3, 0, 2, 1]
  elif dtypes.is_float(dt): vals = [1.5, -float("inf"), 0.25, float("inf"), -3.0]
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
  # long rows take the bitonic network; lowered here so a short row (13, padded to 16) exercises it
  import tinygrad.mixin.sorting as sorting
  monkeypatch.setattr(sorting, "BITONIC_MIN", 4)
  x = np.array([[3.5, -1, np.nan, 2, 2, 0, -7, 2, np.inf, 1, np.nan, -1, 5],
                [1, 1, 1, 0, 0, 9, -3, 1, 4, 4, 2, 8, 0]], dtype=np.float32)
  v, i = Tensor(x).sort(dim=1)
  want = np.argsort(x, axis=1, kind="stable")  # NaN last, ties in their order
  np.testing.assert_array_equal(i.numpy(), want)
  np.testing.assert_array_equal(v.numpy(), np.take_along_axis(x, want, 1))
  ints = x[1].astype(np.int32)
  v, i = Tensor(ints).sort(descending=True)
  want = np.argsort(-ints, kind="stable")
  np.testing.assert_array_equal(i.numpy(), want)
  np.testing.assert_array_equal(v.numpy(), ints[want])
  assert v.dtype is dtypes.int32 and i.dtype is dtypes.int32
