"""Random initialisers and samplers: ranges, moments and determinism under manual_seed, on CPU."""
import math
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

@pytest.mark.parametrize("name, shape, bound", [
  ("kaiming_uniform", (64, 32), math.sqrt(3) * math.sqrt(2 / (1 + 0.01**2)) / math.sqrt(32)),
  ("glorot_uniform", (48, 16), math.sqrt(6 / (48 + 16))),
  ("scaled_uniform", (40, 25), 1 / math.sqrt(40 * 25)),
])
def test_uniform_initialisers(name, shape, bound):
  Tensor.manual_seed(3)
  t = getattr(Tensor, name)(*shape)
  x = t.numpy()
  assert t.shape == shape and t.dtype is dtypes.default_float
  assert np.abs(x).max() <= bound and np.abs(x).max() > 0.9 * bound
  assert abs(x.std() - bound / math.sqrt(3)) < 0.06 * bound  # a uniform on [-b, b] has std b/sqrt(3)

def test_uniform_int_dtype_with_a_float_low_stays_int():
  Tensor.manual_seed(0)
  t = Tensor.uniform(2000, low=-2.5, high=2.5, dtype=dtypes.int32)
  x = t.numpy()
  assert t.dtype is dtypes.int32 and x.dtype == np.int32 and sorted(set(x.tolist())) == [-2, -1, 0, 1, 2]
  assert np.bincount(x + 2).min() > 300  # each of the 5 about 400 times
  with pytest.raises(ValueError, match="needs a whole number in"): Tensor.uniform(3, low=0.2, high=0.8, dtype=dtypes.int32)

def test_kaiming_normal():
  Tensor.manual_seed(4)
  x = Tensor.kaiming_normal(128, 64, a=0.5).numpy()
  assert abs(x.std() - math.sqrt(2 / 1.25) / 8) < 0.01 and abs(x.mean()) < 0.01

def test_initialiser_kwargs():
  t = Tensor.kaiming_uniform((4, 3), a=1.0, dtype=dtypes.float16, requires_grad=True)
  assert t.shape == (4, 3) and t.dtype is dtypes.float16 and t.requires_grad is True
  with pytest.raises(ValueError, match="-2"): Tensor.glorot_uniform(3, -2)

def test_deterministic_after_manual_seed():
  Tensor.manual_seed(7)
  a = [Tensor.rand(5).tolist(), Tensor.randperm(6).tolist(), Tensor.kaiming_normal(2, 3).tolist()]
  Tensor.manual_seed(7)
  assert [Tensor.rand(5).tolist(), Tensor.randperm(6).tolist(), Tensor.kaiming_normal(2, 3).tolist()] == a

@pytest.mark.parametrize("rank_max", [1 << 20, 2], ids=["ranked", "sorted"])  # both ways of ordering the random words
@pytest.mark.parametrize("n", [0, 1, 2, 17, 300])
def test_randperm(n, rank_max, monkeypatch):
  monkeypatch.setattr("tinygrad.tensor_random.RANDPERM_RANK_MAX", rank_max)
  t = Tensor.randperm(n)
  assert t.dtype is dtypes.int32 and t.shape == (n,)
  assert sorted(t.tolist()) == list(range(n))
  assert Tensor.randperm(n, dtype=dtypes.int64).dtype is dtypes.int64

@pytest.mark.parametrize("rank_max", [1 << 20, 2], ids=["ranked", "sorted"])
def test_randperm_is_uniform(rank_max, monkeypatch):
  monkeypatch.setattr("tinygrad.tensor_random.RANDPERM_RANK_MAX", rank_max)
  Tensor.manual_seed(0)
  firsts = np.array([Tensor.randperm(3).tolist() for _ in range(300)])
  counts = np.array([(firsts[:, 0] == k).sum() for k in range(3)])
  assert counts.min() > 70, counts  # each of 3 values leads about 100 times

def test_multinomial_frequencies():
  Tensor.manual_seed(1)
  w = np.array([0.1, 0.0, 0.6, 0.3], np.float32)
  s = Tensor(w).multinomial(4000, replacement=True)
  assert s.dtype is dtypes.int32 and s.shape == (4000,)
  freq = np.bincount(s.numpy(), minlength=4) / 4000
  np.testing.assert_allclose(freq, w, atol=0.03)
  assert freq[1] == 0

def test_multinomial_rows():
  Tensor.manual_seed(2)
  s = Tensor([[0.0, 0.0, 5.0], [1.0, 0.0, 0.0]]).multinomial(3, replacement=True)
  assert s.shape == (2, 3) and s.tolist() == [[2, 2, 2], [0, 0, 0]]
  assert Tensor([1.0, 2.0]).multinomial().shape == (1,)

def test_multinomial_errors():
  with pytest.raises(ValueError, match="at most 2 samples"): Tensor([1.0, 2.0]).multinomial(3)
  with pytest.raises(ValueError, match="1-D or 2-D"): Tensor.ones(2, 2, 2).multinomial()
  with pytest.raises(ValueError, match="num_samples"): Tensor([1.0]).multinomial(0)

def test_multinomial_without_replacement():
  w = np.array([1.0, 2.0, 3.0, 4.0, 0.0], np.float32)
  s = Tensor(np.tile(w, (3000, 1))).multinomial(3).numpy()
  assert s.shape == (3000, 3) and all(len(set(r)) == 3 for r in s) and not (s == 4).any()  # distinct; a zero weight is never drawn
  first = np.bincount(s[:, 0], minlength=5) / 3000
  np.testing.assert_allclose(first[:4], w[:4] / w.sum(), atol=0.03)  # the first draw is proportional to the weights
  # the second draw, given the first: P(j second) = sum_i w_i/W * w_j/(W - w_i)
  second = np.bincount(s[:, 1], minlength=5) / 3000
  W = w.sum()
  want = [sum(w[i] / W * w[j] / (W - w[i]) for i in range(4) if i != j) for j in range(4)]
  np.testing.assert_allclose(second[:4], want, atol=0.03)
