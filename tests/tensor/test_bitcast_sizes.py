"""bitcast between item sizes rescales the last axis (tinygrad's rule), numpy's .view() the oracle: random bytes through every pair of
1/2/4/8-byte ints and floats (no NaN bit patterns: the C and PYTHON devices canonicalise NaN payloads), over a transposed view,
on CPU, CPU:C and PYTHON; and the errors for a last axis that does not divide, a 0-d tensor and bool."""
import itertools
import numpy as np
import pytest
from tinygrad import Tensor, dtypes, Device

DTYPES = {dtypes.uint8: np.uint8, dtypes.int8: np.int8, dtypes.int16: np.int16, dtypes.uint16: np.uint16, dtypes.float16: np.float16,
          dtypes.int32: np.int32, dtypes.uint32: np.uint32, dtypes.float32: np.float32, dtypes.int64: np.int64, dtypes.float64: np.float64,
          dtypes.uint64: np.uint64}
PAIRS = [(a, b) for a, b in itertools.permutations(DTYPES, 2) if a.itemsize != b.itemsize]

def _values(np_dt, rows:int, seed:int) -> np.ndarray:
  """random bytes with bit 6 clear: a float of any size then has its exponent's top bit clear, so no NaN on either side of the cast"""
  return (np.random.default_rng(seed).integers(0, 256, size=(rows, 16), dtype=np.uint8) & 0xbf).view(np_dt)

@pytest.mark.parametrize("device", ["CPU", "CPU:C", "PYTHON"])
def test_every_size_pair_matches_numpy_view(device):
  if device == "CPU:C":
    try: Device["CPU:C"]
    except Exception as e: pytest.skip(f"no C compiler: {e}")
  for i, (a, b) in enumerate(PAIRS):
    x = _values(DTYPES[a], 3, i)
    got = Tensor(x, device=device).bitcast(b)
    want = x.view(DTYPES[b])
    assert got.dtype is b and got.shape == want.shape, (a, b)
    np.testing.assert_array_equal(got.numpy().view(np.uint8), want.view(np.uint8), err_msg=f"{a} -> {b}")

def test_a_view_and_a_round_trip():
  x = np.arange(24, dtype=np.int16).reshape(4, 6)
  np.testing.assert_array_equal(Tensor(x).T.bitcast(dtypes.uint8).numpy(), np.ascontiguousarray(x.T).view(np.uint8))
  f = np.array([[1.5, -2.25, 3e38, -0.0]], np.float32)
  np.testing.assert_array_equal(Tensor(f).bitcast(dtypes.uint8).bitcast(dtypes.float32).numpy().view(np.uint32), f.view(np.uint32))
  np.testing.assert_array_equal(Tensor(f).bitcast(dtypes.float64).numpy(), f.view(np.float64))

def test_errors_name_the_problem():
  with pytest.raises(ValueError, match=r"joins 4 items into one: the last axis of shape \(2, 3\) is not a multiple of 4"):
    Tensor.ones(2, 3, dtype=dtypes.uint8).bitcast(dtypes.int32)
  with pytest.raises(ValueError, match="0-d"): Tensor(1.0).bitcast(dtypes.uint8)
  with pytest.raises(ValueError, match="not bool"): Tensor([True, False]).bitcast(dtypes.int16)
