"""Edge cases against numpy (or torch where numpy has no answer): empty and 0-d tensors, NaN, integer extremes, 16-bit floats, and the
positional argument orders of upstream tinygrad. On every executing backend (the `device` fixture)."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

def check(t:Tensor, expected):
  got, want = t.numpy(), np.asarray(expected)
  assert got.shape == want.shape and got.dtype == want.dtype, f"{got.shape} {got.dtype} != {want.shape} {want.dtype}"
  if want.dtype.kind == "f": np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
  else: np.testing.assert_array_equal(got, want)

I32_MIN = np.int32(-2**31)

# *** integer extremes: min, minimum and clip must not negate (-INT_MIN overflows) ***

def test_min_minimum_int_extremes(device):
  x = np.array([5, I32_MIN, 7], np.int32)
  check(Tensor(x, device=device).min(), np.int32(I32_MIN))
  check(Tensor(x, device=device).minimum(0), np.minimum(x, 0))
  check(Tensor(x, device=device).clip(-3, 6), np.clip(x, -3, 6))
  u = np.array([3, 200], np.uint8)
  check(Tensor(u, device=device).minimum(100), np.minimum(u, np.uint8(100)))
  check(Tensor(u, device=device).clip(5, 150), np.clip(u, np.uint8(5), np.uint8(150)))
  check(Tensor(np.array([3, 4000000000, 7], np.uint32), device=device).min(), np.uint32(3))

# *** NaN ***

def test_nan(device):
  x = np.array([1.0, np.nan, 3.0, np.nan], np.float32)
  check(Tensor(x, device=device).argmax(), np.int32(1))  # the first NaN, like numpy (not an index past the end)
  check(Tensor(x, device=device).argmin(), np.int32(1))
  check(Tensor(x, device=device).sign(), np.sign(x))
  check(Tensor(x, device=device).all(), np.bool_(True))  # a float's truth value: NaN is true
  check(Tensor(np.array([0.0, 0.5], np.float32), device=device).logical_not(), np.array([True, False]))

def test_logsumexp_infinite(device):
  check(Tensor(np.full((2, 3), -np.inf, np.float32), device=device).logsumexp(1), np.full(2, -np.inf, np.float32))  # torch, not nan
  check(Tensor(np.array([1.0, np.inf], np.float32), device=device).logsumexp(), np.float32(np.inf))

# *** division: python semantics for ints, floor for floats ***

def test_float_floordiv_mod(device):
  a, b = np.array([-7.5, -3, -1, 0, 1, 3, 7.25], np.float32), np.array([2, 2, 2, 3, -2, -2, -3], np.float32)
  check(Tensor(a, device=device) // Tensor(b, device=device), a // b)
  check(Tensor(a, device=device) % Tensor(b, device=device), np.mod(a, b))
  check(Tensor(a, device=device) % 2.5, np.mod(a, np.float32(2.5)))
  check(7 // Tensor(b, device=device), np.float32(7) // b)

def test_float_mod_infinite_and_nan(device):
  # a finite x % +-inf is x (same sign) or +-inf (opposite sign); inf % y and x % 0 are nan: numpy's (and python's) answers
  a = np.array([3, -1, 3, -1, 0, np.inf, -np.inf, np.nan, 2, 5.5], np.float32)
  b = np.array([np.inf, np.inf, -np.inf, -np.inf, np.inf, 2, 3, 1, 0, -2], np.float32)
  with np.errstate(invalid="ignore", divide="ignore"): want = np.mod(a, b)
  check(Tensor(a, device=device) % Tensor(b, device=device), want)

def test_div_rounding_mode(device):
  a, b = np.array([-7, -3, 7, 3], np.int32), np.array([2, -2, 2, -2], np.int32)
  check(Tensor(a, device=device).div(Tensor(b, device=device), rounding_mode="trunc"), np.trunc(a / b).astype(np.int32))
  check(Tensor(a, device=device).div(Tensor(b, device=device), rounding_mode="floor"), a // b)
  check(Tensor(a.astype(np.float32), device=device).div(2, rounding_mode="trunc"), np.trunc(a.astype(np.float32) / 2))
  with pytest.raises(ValueError, match="rounding_mode"): Tensor(a, device=device).div(2, rounding_mode="round")

def test_int_pow(device):
  x = np.array([2, 3, -2, 0], np.int32)
  check(Tensor(x, device=device) ** 3, x ** 3)
  check(Tensor(x, device=device) ** 0, x ** 0)
  check(Tensor(x.astype(np.uint8), device=device).pow(2), x.astype(np.uint8) ** 2)

# *** reductions of 0-d tensors, 16-bit floats, empty axes ***

def test_reduce_0d(device):
  t = Tensor(np.float32(3), device=device)
  check(t.max(0), np.float32(3))
  check(t.sum(-1, keepdim=True), np.float32(3))
  check(t.softmax(), np.float32(1))
  check(t.cumsum(), np.float32(3))

def test_sum_16bit_float_keeps_dtype(device):
  h = (np.arange(24).reshape(2, 3, 4) / 7).astype(np.float16)
  check(Tensor(h, device=device).sum(1), h.sum(1, dtype=np.float32).astype(np.float16))  # accumulates in float32 like numpy's pairwise sum
  check(Tensor(h, device=device).sum(dtype=dtypes.float32), np.float32(h.sum(dtype=np.float32)))
  check(Tensor(h, device=device).mean(), np.float16(h.astype(np.float32).mean()))
  check(Tensor(h, device=device).cumsum(2), np.cumsum(h.astype(np.float32), 2).astype(np.float16))

def test_empty_data(device):
  z = np.zeros((0, 3), np.float32)
  check(Tensor(z, device=device).sum(0), np.zeros(3, np.float32))
  check(Tensor(z, device=device).mean(0), np.full(3, np.nan, np.float32))
  check(Tensor(z, device=device).prod(0), np.ones(3, np.float32))
  check(Tensor([], device=device).sum(), np.float32(0))
  check(Tensor([], device=device).any(), np.bool_(False))
  check(Tensor(np.array([1.0], np.float32), device=device).cat(Tensor(z[:, 0], device=device)), np.array([1.0], np.float32))
  check(Tensor.empty(0, 2, device=device).sum(1), np.zeros(0, np.float32))
  with pytest.raises(ValueError, match="empty axis"): Tensor(z, device=device).argmax(0)
  assert Tensor([], device=device).realize().shape == (0,) and (Tensor.zeros(2, 0, device=device) + 1).contiguous().realize().shape == (2, 0)

# *** movement ***

def test_expand_minus_one(device):
  x = np.arange(12, dtype=np.float32).reshape(1, 3, 4)
  check(Tensor(x, device=device).expand(2, -1, -1), np.broadcast_to(x, (2, 3, 4)))
  check(Tensor(x, device=device).expand(5, 2, -1, 4), np.broadcast_to(x, (5, 2, 3, 4)))

def test_cat_0d_names_the_problem(device):
  with pytest.raises(ValueError, match="0-d"): Tensor(1.0, device=device).cat(Tensor(2.0, device=device))

# *** positional arguments in upstream tinygrad's order ***

def test_upstream_positional_order(device):
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  check(Tensor(x, device=device).pad((1, 1), "reflect"), np.pad(x, ((0, 0), (1, 1)), mode="reflect"))
  check(Tensor.full((2,), 3, dtypes.int8, device), np.full(2, 3, np.int8))
  check(Tensor.arange(0, 6, 2, dtypes.int64, device=device), np.arange(0, 6, 2, dtype=np.int64))
  check(Tensor.eye(2, 3, dtypes.int32, device=device), np.eye(2, 3, dtype=np.int32))
  check(Tensor.linspace(0, 1, 3, dtypes.float64, device=device), np.linspace(0, 1, 3))
  check(Tensor(x, device=device).pow(2, reverse=True), 2 ** x)

def test_linspace_float64_is_computed_in_float64(device):
  np.testing.assert_allclose(Tensor.linspace(0, 1, 7, dtypes.float64, device=device).numpy(), np.linspace(0, 1, 7), rtol=1e-14)

def test_int_division_never_traps(device):
  # x86 traps on x/0 and INT_MIN/-1; numpy gives 0 for x//0 and x%0, and the wrapped value for INT_MIN//-1
  a = Tensor([-2**31, 7, -7, 5, 0], dtype=dtypes.int32, device=device)
  b = Tensor([-1, -1, 2, 0, 0], dtype=dtypes.int32, device=device)
  na, nb = np.array([-2**31, 7, -7, 5, 0], dtype=np.int32), np.array([-1, -1, 2, 0, 0], dtype=np.int32)
  with np.errstate(divide="ignore", over="ignore"):
    assert (a // b).tolist() == (na // nb).tolist()
    assert (a % b).tolist() == (na % nb).tolist()

@pytest.mark.parametrize("pads", [(-1, 4), (4, -1), (-2, 3), (3, -2), (-1, 3)])
def test_reflect_pad_that_crops_one_side_mirrors_the_whole_axis(pads):
  # as torch's: the reflection is of the axis before the crop (5 rows padded (-1, 4) mirror rows 3..0, row 0 included); it raised
  # "needs axis longer than 4" (hand-checked: np.pad on the whole axis, then the crop)
  x = np.arange(30, dtype=np.float32).reshape(5, 6)
  b, a = pads
  full = np.pad(x, ((max(b, 0), max(a, 0)), (0, 0)), mode="reflect")
  check(Tensor(x).pad((0, 0, b, a), mode="reflect"), full[-min(b, 0):full.shape[0] + min(a, 0)])

def test_interpolate_from_an_empty_axis_is_named():
  with pytest.raises(ValueError, match=r"axis 2 is empty, there is nothing to sample"):
    Tensor.empty(1, 2, 0, 7).interpolate((3, 4), mode="bilinear")
  with pytest.raises(ValueError, match=r"axis 2 is empty"): Tensor.empty(1, 2, 0, 7).interpolate((3, 4), mode="nearest")
  assert Tensor.empty(1, 2, 0, 7).interpolate((0, 4)).shape == (1, 2, 0, 4)  # to an empty size: nothing to sample, nothing wanted
