"""Float % (python's rule: the divisor's sign), Tensor.fmod (C's: the dividend's) and // are exact like numpy's, which computes them
from C's fmod. They were a - trunc(a/b)*b in the operand dtype, all precision gone once |a/b| passed 2**mantissa: 1e8 % 3 gave 0.0
(numpy 1.0), 1e7 % 0.3 gave 0.0 (0.00264), and 1.0 // 0.1 was floor(1.0 / 0.1) = 10 where numpy, torch and python give 9. Checked bit
for bit (signed zeros, inf and NaN included) against numpy.fmod, numpy.mod and numpy.floor_divide."""
import math
import numpy as np, pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from tinygrad import Tensor, dtypes

FLOATS = [(np.float16, dtypes.float16), (np.float32, dtypes.float32), (np.float64, dtypes.float64)]

def same_bits(got:np.ndarray, want:np.ndarray) -> np.ndarray:
  """elementwise: the same float, -0.0 apart from 0.0, any NaN equal to any NaN"""
  ints = {2: np.uint16, 4: np.uint32, 8: np.uint64}[want.dtype.itemsize]
  return (got.view(ints) == want.view(ints)) | (np.isnan(got) & np.isnan(want))

def check_all(a:np.ndarray, b:np.ndarray, device:str):
  ta, tb = Tensor(a, device=device), Tensor(b, device=device)
  with np.errstate(all="ignore"): want = {"fmod": np.fmod(a, b), "%": np.mod(a, b), "//": np.floor_divide(a, b)}
  got = dict(zip(want, outs := [ta.fmod(tb), ta % tb, ta // tb]))
  Tensor.realize(*outs)  # one schedule for the three
  for name in want:
    bad = ~same_bits(got[name].numpy(), want[name])
    assert not bad.any(), f"{name} {a.dtype}: {[(a[i], b[i], got[name].numpy()[i], want[name][i]) for i in np.nonzero(bad)[0][:5]]}"

def test_large_quotients(device):
  # the examples: float32 quotients past 2**24 (integers exactly representable in float32 among them)
  a, b = np.array([1e8, -1e8, 123456792.0, 2.0**30 + 128, 1e7, 16777216.0, 3e6], np.float32), np.array([3, 3, 10, 7, 0.3, 0.3, 0.3], np.float32)
  check_all(a, b, device)
  assert (Tensor(a, device=device) % 3).numpy().tolist() == np.mod(a, np.float32(3)).tolist() and np.mod(np.float32(1e8), 3) == 1
  assert Tensor([-1e8], device=device).fmod(3).item() == -1.0
  np.testing.assert_array_equal((Tensor(a, device=device) % (2 * math.pi)).numpy(), np.mod(a, np.float32(2 * math.pi)))

def test_floor_division_matches_the_remainder(device):
  # a // b is (a - a % b) / b rounded, as in python: 1.0 // 0.1 is 9 (0.1 is a little over 1/10, 1.0 % 0.1 = 0.0999...)
  a, b = np.array([1.0, -7.5, 5.0, -5.0, 0.5, 7.0], np.float32), np.array([0.1, 2.0, -0.3, 0.3, 0.1, 0.7], np.float32)
  check_all(a, b, device)
  assert (Tensor([1.0], device=device) // 0.1).item() == 9.0 and (Tensor([1.0], device=device) % 0.1).item() == np.mod(np.float32(1), np.float32(0.1))
  assert (Tensor([1.0, -7.5, 5.0], dtype=dtypes.float64, device=device) // Tensor([0.1, 2, -0.3], dtype=dtypes.float64, device=device)).tolist() == \
    [1.0 // 0.1, -7.5 // 2, 5.0 // -0.3]

def test_zeros_infinities_and_nans(device):
  # x % inf, inf % y, x % 0, -0.0 % y and 0 // y: numpy's answers, the signs of zeros included
  vals = np.array([0.0, -0.0, 1.5, -1.5, 3.0, np.inf, -np.inf, np.nan, 1e-45, 3.4028235e38], np.float32)
  check_all(np.repeat(vals, len(vals)), np.tile(vals, len(vals)), device)

def _floats(np_dtype):
  """64 floats from any bit patterns: every exponent, subnormals, infinities and NaNs"""
  return hnp.arrays({2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(np_dtype).itemsize], 64).map(lambda x: x.view(np_dtype))

def _check_exponent_range(np_dtype, device):
  @settings(max_examples=12, deadline=None)
  @given(_floats(np_dtype), _floats(np_dtype), st.integers(0, 2**40))
  def run(a, b, k):
    # half the dividends a near multiple of their divisor: an integer quotient up to 2**40, one ulp off it
    with np.errstate(all="ignore"): near = np.nextafter((b * np.float64(k)).astype(np_dtype), np.inf if k % 2 else -np.inf)
    check_all(np.where(np.arange(len(a)) % 2 == 0, a, near).astype(np_dtype), b, device)
  run()

@pytest.mark.parametrize("np_dtype", [np.float16, np.float32])
def test_whole_exponent_range_matches_numpy(device, np_dtype): _check_exponent_range(np_dtype, device)

# float64 with a tensor divisor is not run on CPU:C: its 81 reduction steps make an elementwise chain deeper than the C renderer's vector
# packer recurses through (renderer/c_vectors.py raises RecursionError from about 300 chained ops)
@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
def test_whole_exponent_range_matches_numpy_float64(dev): _check_exponent_range(np.float64, dev)

CONSTANTS = [0.3, -2.5, 3, 2 * math.pi, 1e-30, -0.0, -math.inf, math.nan]

@pytest.mark.parametrize("np_dtype", [np.float16, np.float32, np.float64])
def test_python_number_divisors(device, np_dtype):
  # a python number divisor: the reduction's steps worked out in python (only those whose divisor is finite, longer ones for 1.0 or 3)
  rng, info = np.random.default_rng(0), np.finfo(np_dtype)
  bits = rng.integers(0, 2 ** info.bits, size=256, dtype=np.uint64).astype({2: np.uint16, 4: np.uint32, 8: np.uint64}[info.dtype.itemsize])
  a = np.concatenate([bits.view(np_dtype), np.array([0, -0.0, np.inf, -np.inf, np.nan, 1e4, -1e4, 7], np_dtype)])
  ta = Tensor(a, device=device)
  for c in CONSTANTS + [float(info.max), float(info.smallest_subnormal)]:
    with np.errstate(all="ignore"): want_fmod, want_mod, want_div = np.fmod(a, np_dtype(c)), np.mod(a, np_dtype(c)), np.floor_divide(a, np_dtype(c))
    assert same_bits(ta.fmod(c).numpy(), want_fmod).all(), c
    assert same_bits((ta % c).numpy(), want_mod).all(), c
    # a // c's quotient (a - a % c) / c is a product with c's rounded reciprocal, as every x / c: equal where that rounds to the same
    # integer (quotients below 2**(mantissa-1)); a subnormal c's reciprocal overflows
    small = ~(np.abs(want_div) >= 2.0 ** (info.nmant - 1)) & ~(0 < abs(c) < info.smallest_normal)
    # PoCL's floor() of NaN is no NaN (0.0, or a tiny number): a // nan is garbage on CL, a device bug (stop 55's note)
    if not (device == "CL" and math.isnan(c)): assert same_bits((ta // c).numpy()[small], want_div[small]).all(), c

def test_bfloat16_fmod_is_exact(device):
  # no numpy bfloat16: the remainder of two bfloat16 values is one too, so numpy's float32 fmod of them is the answer
  a = (np.random.default_rng(1).standard_normal(64) * 10.0 ** np.arange(-8, 8, 0.25)).astype(np.float32)
  a = (a.view(np.uint32) & 0xFFFF0000).view(np.float32)
  b = np.array([0.3, -7.0, 1e-6, 3e4] * 16, np.float32).view(np.uint32) & 0xFFFF0000
  b = b.view(np.float32)
  got = Tensor(a, device=device).cast(dtypes.bfloat16).fmod(Tensor(b, device=device).cast(dtypes.bfloat16)).cast(dtypes.float32).numpy()
  assert same_bits(got, np.fmod(a, b)).all()

def test_int_mod_and_floordiv_untouched(device):
  a, b = np.array([-7, 7, -7, 7, 0, -128, 127], np.int32), np.array([2, -2, -2, 3, 5, 3, -3], np.int32)
  ta, tb = Tensor(a, device=device), Tensor(b, device=device)
  assert (ta % tb).tolist() == (a % b).tolist() and (ta // tb).tolist() == (a // b).tolist()
  assert ta.fmod(tb).tolist() == np.fmod(a, b).tolist() and (ta % 3).dtype == dtypes.int32
  u = np.array([250, 7, 0, 255], np.uint8)
  assert (Tensor(u, device=device) % 7).tolist() == (u % 7).tolist() and (Tensor(u, device=device) // 7).tolist() == (u // 7).tolist()
