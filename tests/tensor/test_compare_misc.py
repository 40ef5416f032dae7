"""isclose/allclose, copysign, logaddexp, diagonal/diag, pad_to/shrink_to, linear/sequential, and comparisons with NaN, against numpy."""
import numpy as np, pytest
from tinygrad import Tensor

pytestmark = pytest.mark.hcq_matrix  # also on the mock AMD and NV devices (tests/conftest.py)

A = np.array([1.0, np.inf, np.nan, -2.0, 0.0, 1e-9, -np.inf], np.float32)
B = np.array([1.0 + 1e-6, np.inf, np.nan, -2.1, -0.0, 0.0, np.inf], np.float32)

@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose(device, equal_nan):
  np.testing.assert_equal(Tensor(A, device=device).isclose(Tensor(B, device=device), equal_nan=equal_nan).numpy(), np.isclose(A, B, equal_nan=equal_nan))
  close, far = Tensor(A[:2]).allclose(Tensor(B[:2])), Tensor(A).allclose(Tensor(B))
  assert close.shape == () and close.item() is np.allclose(A[:2], B[:2]) is True and far.item() is np.allclose(A, B) is False

def test_comparisons_with_nan_are_false(device):
  x = np.array([np.nan, 1.0, 2.0, -np.inf], np.float32)
  t = Tensor(x, device=device)
  for got, want in ((t <= 1, x <= 1), (t >= 1, x >= 1), (1 <= t, 1 <= x), (t.le(t), x <= x), (t.ge(2.0), x >= 2)):
    np.testing.assert_equal(got.numpy(), want)
  np.testing.assert_equal((Tensor([1, 2, 3], device=device) <= 2).numpy(), [True, True, False])

def test_copysign_and_logaddexp():
  np.testing.assert_equal(Tensor(A).copysign(Tensor(B)).numpy(), np.copysign(A, B))
  np.testing.assert_equal(Tensor([1., -2.]).copysign(-1).numpy(), [-1., -2.])
  x, y = np.array([1., -np.inf, 1000., -np.inf, np.inf, -50.], np.float32), np.array([2., 3., 1000., -np.inf, 1., 50.], np.float32)
  np.testing.assert_allclose(Tensor(x).logaddexp(Tensor(y)).numpy(), np.logaddexp(x, y), rtol=1e-6)

@pytest.mark.parametrize("offset", [0, 1, -1, 3, -2, -3, 5])
def test_diagonal(offset):
  m = np.arange(12, dtype=np.float32).reshape(3, 4)
  np.testing.assert_equal(Tensor(m).diagonal(offset).numpy(), np.diagonal(m, offset))
  c = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  np.testing.assert_equal(Tensor(c).diagonal(offset, 2, 0).numpy(), np.diagonal(c, offset, 2, 0))

def test_diag_pad_to_shrink_to_linear_sequential():
  np.testing.assert_equal(Tensor([1., 2., 3.]).diag().numpy(), np.diag([1., 2., 3.]))
  m = np.arange(6, dtype=np.float32).reshape(2, 3)
  np.testing.assert_equal(Tensor(m).pad_to(4, None).numpy(), np.pad(m, ((0, 2), (0, 0))))
  np.testing.assert_equal(Tensor(m).shrink_to(1, 2).numpy(), m[:1, :2])
  with pytest.raises(ValueError, match="smaller"): Tensor(m).pad_to(1, 3)
  w, b = np.ones((3, 2), np.float32), np.array([1., 2.], np.float32)
  np.testing.assert_equal(Tensor(m).linear(Tensor(w), Tensor(b)).numpy(), m @ w + b)
  np.testing.assert_equal(Tensor([1., 2.]).sequential([lambda t: t * 2, lambda t: t + 1]).numpy(), [3., 5.])
  c = Tensor(m).realize()
  d = c.clone().realize()
  c.assign(Tensor.zeros(2, 3))
  np.testing.assert_equal(d.numpy(), m)  # a realized clone is its own buffer
