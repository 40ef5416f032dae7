"""isclose/allclose of ints and bools (no wraparound of the distance), and where of two python ints that don't fit the default int, against numpy."""
import numpy as np, pytest
from tinygrad import Tensor, dtypes

# each dtype's extremes next to each other: their distance wraps in the dtype itself (uint8 0 - 5 is 251, int8 127 - -128 is -1)
INT_CASES = [(np.uint8, [0, 10, 255, 0, 3], [5, 0, 0, 255, 3]), (np.int8, [-128, 127, -128, 5, 100], [127, -128, -127, 5, -100]),
             (np.uint16, [0, 65535, 7, 1], [65535, 0, 1, 7]), (np.int16, [-32768, 32767, -3, 0], [32767, -32768, 3, 0]),
             (np.int32, [2**31 - 1, -2**31, 2**31 - 1, 5], [-2**31, 2**31 - 1, 2**31 - 2, -5]), (np.uint32, [0, 2**32 - 1, 9], [2**32 - 1, 0, 1]),
             (np.int64, [-2**40, 2**40, 3, 0], [2**40, -2**40, 3, 7])]

@pytest.mark.parametrize("atol, rtol", [(0, 0), (1, 0), (6, 1e-5), (300, 0), (0, 0.5)])
@pytest.mark.parametrize("npdt, a, b", INT_CASES, ids=[c[0].__name__ for c in INT_CASES])
def test_isclose_of_ints_does_not_wrap(device, npdt, a, b, atol, rtol):
  a, b = np.array(a, npdt), np.array(b, npdt)
  got = Tensor(a, device=device).isclose(Tensor(b, device=device), rtol=rtol, atol=atol)
  assert got.dtype is dtypes.bool
  np.testing.assert_equal(got.numpy(), np.isclose(a, b, rtol=rtol, atol=atol))

def test_isclose_of_bools_compares_their_values(device):
  # bools don't subtract: compared as 0 and 1, as numpy and torch do
  a, b = np.array([True, False, True, False]), np.array([True, True, False, False])
  np.testing.assert_equal(Tensor(a, device=device).isclose(Tensor(b, device=device)).numpy(), np.isclose(a, b))
  np.testing.assert_equal(Tensor(a, device=device).isclose(Tensor(b, device=device), atol=1).numpy(), np.isclose(a, b, atol=1))

def test_allclose_and_python_scalars_of_ints():
  a, b = np.array([0, 10], np.uint8), np.array([5, 0], np.uint8)
  assert Tensor(a).allclose(Tensor(b), atol=6).item() is bool(np.allclose(a, b, atol=6)) is False
  assert Tensor(a[:1]).allclose(Tensor(b[:1]), atol=6).item() is bool(np.allclose(a[:1], b[:1], atol=6)) is True
  c = np.array([0, 10, 200, 253], np.uint8)
  np.testing.assert_equal(Tensor(c).isclose(5, atol=6).numpy(), np.isclose(c, 5, atol=6))
  d = np.array([-128, 127, 0], np.int8)
  np.testing.assert_equal(Tensor(d).isclose(Tensor(d[::-1].copy()), atol=255, rtol=0).numpy(), np.isclose(d, d[::-1], atol=255, rtol=0))

@pytest.mark.parametrize("x, y", [(2**40 + 1, 0), (0, 2**31), (-2**31 - 1, 1)])
def test_where_of_python_ints_that_do_not_fit_raises(x, y):
  # two python ints give a default-int (int32) result: as Tensor(2**40) and Tensor.full, a value out of its range is an error, not a wrap
  with pytest.raises(OverflowError, match="does not fit in dtypes.int "):
    Tensor([True, False]).where(x, y)

def test_where_of_python_scalars_that_fit(device):
  c = np.array([True, False])
  got = Tensor(c, device=device).where(2**31 - 1, -2**31)
  assert got.dtype is dtypes.int32
  np.testing.assert_equal(got.numpy(), np.where(c, 2**31 - 1, -2**31).astype(np.int32))
  np.testing.assert_equal(Tensor(c, device=device).where(2**40 + 1, 0.5).numpy(), np.where(c, 2**40 + 1, 0.5).astype(np.float32))

def test_where_of_a_python_int_and_an_int8_tensor_stays_int8():
  # a python int beside a tensor is weak, as in int8 + 300 (tinygrad's and torch's rule): made in int8 and wrapped, not an error
  c, i8 = np.array([True, False]), np.array([1, -2], np.int8)
  got = Tensor(c).where(Tensor(i8), 300)
  assert got.dtype is dtypes.int8 and (Tensor(i8) + 300).dtype is dtypes.int8
  np.testing.assert_equal(got.numpy(), np.where(c, i8, np.array(300).astype(np.int8)))
