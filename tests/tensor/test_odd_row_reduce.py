"""Reductions over rows that no vector width divides (1001, 4095 floats): the optimizer pads such a row with the reduce's identity to
unroll it (codegen/opt/heuristic.py), or leaves a lone accumulator to LLVM's loop vectorizer (softmax's staged exp loop). Oracle: numpy, with NaN, -inf and all-negative rows, where a wrong padding value would show."""
import numpy as np
import pytest
from tinygrad import Tensor

@pytest.mark.parametrize("w", [1001, 4095, 4100])
def test_odd_rows_match_numpy(w):
  a = np.random.default_rng(3).standard_normal((4, w)).astype(np.float32)
  a[1] -= 100  # every value negative: a padding of 0 would be the max
  a[2, w // 2] = -np.inf
  t = Tensor(a)
  np.testing.assert_allclose(t.sum(1).numpy(), a.sum(1), rtol=1e-4, atol=1e-3)
  np.testing.assert_array_equal(t.max(1).numpy(), a.max(1))
  np.testing.assert_array_equal(t.min(1).numpy(), a.min(1))
  np.testing.assert_array_equal(t.argmax(1).numpy(), a.argmax(1))
  lse = np.log(np.exp(a - a.max(1, keepdims=True)).sum(1)) + a.max(1)
  np.testing.assert_allclose(t.logsumexp(1).numpy(), lse, rtol=1e-5, atol=1e-5)
  e = np.exp(a - a.max(1, keepdims=True))
  np.testing.assert_allclose(t.softmax(1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-4, atol=1e-7)

def test_nan_in_an_odd_row_propagates():
  a = np.random.default_rng(4).standard_normal((3, 1001)).astype(np.float32)
  a[1, 1000] = np.nan  # in the last, padded, block
  a[2, 3] = np.nan
  out = Tensor(a).max(1).numpy()
  assert not np.isnan(out[0]) and np.isnan(out[1]) and np.isnan(out[2])
  np.testing.assert_array_equal(out[0], a[0].max())
