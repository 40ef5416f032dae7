"""Ops on dtypes at their edges: bool shifts, sigmoid-like activations of ints and bools, bool ** int, non-finite python exponents."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

@pytest.mark.parametrize("build", [
  lambda: Tensor([True, False]) << Tensor([True, True]), lambda: Tensor([True, False]) >> Tensor([True, True]),
  lambda: Tensor([True, False]) << True, lambda: True >> Tensor([True, False]),
], ids=["t<<t", "t>>t", "t<<True", "True>>t"])
def test_bool_shift_raises_at_build(build):
  # raised while the graph is built, naming the dtype (it used to reach the compiler, which rejected the kernel)
  with pytest.raises(RuntimeError, match="shift operands must be int.*bool"): build()

def _sigmoid(x): return 1 / (1 + np.exp(-x))
def _logsigmoid(x): return -np.logaddexp(0, -x)
FORMULAS = {"sigmoid": _sigmoid, "silu": lambda x: x * _sigmoid(x), "swish": lambda x: x * _sigmoid(x), "logsigmoid": _logsigmoid}

# where -x in the int dtype is not -x: unsigned values and bools (logical_not)
@pytest.mark.parametrize("dtype, values", [
  (dtypes.uint8, [1, 0, 3, 255]), (dtypes.uint32, [1, 0, 3, 2**32 - 1]), (dtypes.bool, [True, False]),
], ids=["uint8", "uint32", "bool"])
@pytest.mark.parametrize("name", list(FORMULAS))
def test_sigmoid_family_of_unsigned_and_bool(name, dtype, values):
  got = getattr(Tensor(values, dtype=dtype), name)()
  assert got.dtype is dtypes.float32
  want = FORMULAS[name](np.array(values, dtype=np.float64))
  np.testing.assert_allclose(got.numpy(), want.astype(np.float32), rtol=2e-6, atol=1e-7)

@pytest.mark.parametrize("dtype, low", [(dtypes.int8, -128), (dtypes.int32, -2**31)], ids=["int8", "int32"])
def test_logsigmoid_of_int_minimum(dtype, low):
  # logsigmoid(x) is x far below 0: it was -0.0 from -x wrapping back to the minimum
  got = Tensor([low, -3], dtype=dtype).logsigmoid()
  np.testing.assert_allclose(got.numpy(), _logsigmoid(np.array([low, -3], dtype=np.float64)).astype(np.float32), rtol=2e-6)

def test_bool_pow_python_int_is_int_for_every_exponent():
  # the dtype used to follow the exponent's value: int32 for ** 0, bool for ** 1 and up
  base = np.array([True, False])
  for exponent in range(4):
    got = Tensor(base) ** exponent
    assert got.dtype is dtypes.int32, exponent
    np.testing.assert_array_equal(got.numpy(), base.astype(np.int32) ** exponent)

@pytest.mark.parametrize("dtype, np_dtype", [(dtypes.float32, np.float32), (dtypes.float16, np.float16)], ids=["float32", "float16"])
@pytest.mark.parametrize("exponent", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
def test_pow_non_finite_python_exponent(exponent, dtype, np_dtype):
  # the whole-exponent check ran int(exponent): ValueError for nan, OverflowError for inf
  base = np.array([0.5, 2.0, 1.0], dtype=np_dtype)
  got = Tensor(base) ** exponent
  assert got.dtype is dtype
  np.testing.assert_array_equal(got.numpy(), np.power(base, exponent))

def test_pow_special_cases_follow_ieee():
  """every pair of special values against numpy's pow: 0 ** nan was 0 (numpy nan), (-inf) ** 0.5 nan (inf), (-inf) ** -0.5 nan (0)"""
  import itertools
  vals = [0., -0., 1., -1., 2., -2., 0.5, -0.5, 3., -3., np.inf, -np.inf, np.nan, 2.5]
  a, b = (np.array(v, np.float32) for v in zip(*itertools.product(vals, vals)))
  with np.errstate(all="ignore"): want = np.power(a, b)
  got = (Tensor(a) ** Tensor(b)).numpy()
  np.testing.assert_allclose(got, want, rtol=1e-6)
  np.testing.assert_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))  # (-0.) ** 3 is -0.

@pytest.mark.parametrize("device", ["CPU", "CPU:C"])
def test_uint64_to_float32_rounds_once_and_keeps_wrapped_negatives(device):
  """LLVM vectorized `uitofp (sext i8/i16 to i64) to float` on AVX2 into lanes giving 2**32 for -1 (4+ elements); the whole uint64
  range, the halfway cases past 2**63 included, rounds as numpy's one conversion does"""
  rng = np.random.default_rng(0)
  for n in (4, 8, 16, 33):
    v = rng.integers(-1000, 1000, n)
    for dt, ndt in ((dtypes.int8, np.int8), (dtypes.int16, np.int16), (dtypes.int32, np.int32)):
      got = Tensor(v.astype(ndt), dtype=dt, device=device).cast(dtypes.uint64).cast(dtypes.float32).numpy()
      np.testing.assert_array_equal(got, v.astype(ndt).astype(np.uint64).astype(np.float32))
  edges = [2**63, 2**63 - 1, 2**64 - 1, 2**63 + 2**39, 2**63 + 2**39 + 1, 2**63 + 3 * 2**39, 2**63 + 2**40 - 1, 0, 1, 2**24 + 1, 2**53 + 1]
  u = np.concatenate([rng.integers(0, 2**64 - 1, 3000, dtype=np.uint64, endpoint=True), np.array(edges, np.uint64)])
  np.testing.assert_array_equal(Tensor(u, device=device).cast(dtypes.float32).numpy(), u.astype(np.float32))
