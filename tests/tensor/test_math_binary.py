"""Binary ops against numpy: named arithmetic with upstream's keywords, comparisons, bitwise ops and shifts, pow's dtype rules, and the
seed's promotion semantics (weak python scalars, where's bool condition, pad's value)."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes, Device

pytestmark = pytest.mark.hcq_matrix  # also on the mock AMD and NV devices (tests/conftest.py)

A = np.array([-7, -3, -1, 0, 1, 4, 9, 100], dtype=np.int32)
B = np.array([2, -2, 3, 5, -4, 4, 2, 7], dtype=np.int32)
F = np.array([-2.5, -1.0, -0.0, 0.0, 0.5, 3.0, 1e6, -1e-6], dtype=np.float32)

def check(got:Tensor, want, dtype=None):
  want = np.asarray(want)
  if dtype is not None: assert got.dtype is dtype, f"dtype {got.dtype} != {dtype}"
  np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6) if want.dtype.kind == "f" else np.testing.assert_array_equal(got.numpy(), want)

def test_named_arithmetic(device):
  a, b, f = Tensor(A, device=device), Tensor(B, device=device), Tensor(F, device=device)
  check(a.add(b), A + B, dtypes.int32)
  check(a.sub(b), A - B, dtypes.int32)
  check(a.sub(3, reverse=True), 3 - A, dtypes.int32)
  check(a.mul(b), A * B, dtypes.int32)
  check(a.div(b), A / B, dtypes.default_float)
  check(a.div(b, rounding_mode="floor"), A // B, dtypes.int32)
  check(a.div(b, rounding_mode="trunc"), np.trunc(A / B).astype(np.int32), dtypes.int32)
  check(a.idiv(b), np.trunc(A / B).astype(np.int32), dtypes.int32)
  check(a.mod(b), np.mod(A, B), dtypes.int32)
  check(f.div(1.5, rounding_mode="floor"), np.floor(F / np.float32(1.5)), dtypes.float32)
  check(f.div(1.5, rounding_mode="trunc"), np.trunc(F / np.float32(1.5)), dtypes.float32)
  check(a.maximum(b), np.maximum(A, B), dtypes.int32)
  check(a.minimum(b), np.minimum(A, B), dtypes.int32)
  check(f.neg(), -F, dtypes.float32)

def test_named_comparisons(device):
  a, b = Tensor(A, device=device), Tensor(B, device=device)
  for name, fn in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)):
    check(getattr(a, name)(b), fn(A, B), dtypes.bool)
  check(a < 1, A < 1, dtypes.bool)
  check(a >= b, A >= B, dtypes.bool)
  check(a == b, A == B, dtypes.bool)
  check(a != 4, A != 4, dtypes.bool)

def test_bitwise_and_shifts(device):
  a, b = Tensor(A, device=device), Tensor(np.abs(B), device=device)
  check(a.bitwise_and(b), A & np.abs(B), dtypes.int32)
  check(a.bitwise_or(b), A | np.abs(B), dtypes.int32)
  check(a.bitwise_xor(b), A ^ np.abs(B), dtypes.int32)
  check(a.bitwise_not(), ~A, dtypes.int32)
  check(~a, ~A, dtypes.int32)
  check(a.lshift(2), A << 2, dtypes.int32)
  check(a.rshift(1), A >> 1, dtypes.int32)
  check(1 << b, 1 << np.abs(B), dtypes.int32)
  check(256 >> b, 256 >> np.abs(B), dtypes.int32)
  bools = Tensor([True, False, True], device=device)
  check(bools.bitwise_not(), [False, True, False], dtypes.bool)
  check(bools.bitwise_xor(True), [False, True, False], dtypes.bool)

@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "lshift", "rshift"])
def test_bitwise_on_floats_raises(op):
  with pytest.raises(RuntimeError, match="float"): getattr(Tensor([1.5]), op)(1)
  with pytest.raises(RuntimeError, match="float"): Tensor([1.5]).bitwise_not()

def test_idiv_on_floats_raises():
  with pytest.raises(RuntimeError, match="rounding_mode='trunc'"): Tensor([1.5]).idiv(2)

@pytest.mark.parametrize("e", [0.5, 1.5, 2.0, -1.0, 0.0])
def test_int_to_float_power_is_float(device, e):
  """no rounding back to int: numpy's float answer"""
  got = Tensor([1, 2, 3, 4], device=device, dtype=dtypes.int32) ** e
  assert got.dtype is dtypes.default_float
  np.testing.assert_allclose(got.numpy(), np.array([1, 2, 3, 4], dtype=np.float32) ** np.float32(e), rtol=1e-6)

def test_int_powers(device):
  base, e = np.array([0, 1, -1, 2, -3, 7, 3, -2], np.int32), np.array([3, 9, 4, 10, 5, 0, 19, 31], np.int32)
  check(Tensor(base, device=device) ** Tensor(e, device=device), base ** e, dtypes.int32)  # 3**19 and -2**31 wrap like numpy
  check(2 ** Tensor(e, device=device), np.int32(2) ** e, dtypes.int32)
  check(Tensor(base, device=device) ** 3, base ** 3, dtypes.int32)
  check(Tensor([3, 5], device=device, dtype=dtypes.uint8) ** Tensor([5, 3], device=device, dtype=dtypes.uint8),
        np.array([3, 5], np.uint8) ** np.array([5, 3], np.uint8), dtypes.uint8)

def test_int_negative_powers():
  # a tensor exponent can't be checked while building: 1 and -1 keep their exact values, everything else truncates to 0, like C
  check(Tensor([1, -1, -1, 2, 5]) ** Tensor([-3, -3, -2, -1, -2]), [1, -1, 1, 0, 0], dtypes.int32)
  with pytest.raises(RuntimeError, match="negative integer power -1"): Tensor([1, 2]) ** -1

def test_float_pow(device):
  f = np.array([0.5, 2.0, 3.0, 10.0], np.float32)
  check(Tensor(f, device=device).pow(Tensor([2.0, -1.0, 0.5, 3.0], device=device)), f ** np.array([2.0, -1.0, 0.5, 3.0], np.float32))
  check(Tensor(f, device=device).pow(2, reverse=True), np.float32(2) ** f)

def test_float_pow_ieee_edges(device):
  """x ** 0 and 1 ** y are 1 for every x and y, NaN and inf included (C's pow, numpy, torch); log2/exp2 alone gave NaN for nan ** 0"""
  nan, inf = float("nan"), float("inf")
  a = np.array([nan, 1.0, 1.0, 2.0, -2.0, 0.0, inf, -inf, 0.0, -1.0, 4.0], np.float32)
  b = np.array([0.0, nan, inf, 3.0, 3.0, -1.0, 0.0, -0.0, 0.0, -inf, 0.5], np.float32)
  with np.errstate(divide="ignore"): want = np.power(a, b)
  np.testing.assert_array_equal(Tensor(a, device=device).pow(Tensor(b, device=device)).numpy(), want)

def test_float_pow_signed_zero_base(device):
  """a zero base keeps its sign for an odd integer exponent ((-0.0) ** -1 is -inf, (-0.0) ** 3 is -0.0: IEEE, numpy, torch); it gave +inf
  and +0"""
  a = np.array([-0.0, 0.0, -0.0, -0.0, -0.0, -0.0, -0.0, 0.0, -0.0], np.float32)
  b = np.array([-1.0, -1.0, -2.0, -3.0, 3.0, 2.0, -0.5, 0.5, 0.0], np.float32)
  with np.errstate(divide="ignore"): want = np.power(a, b)
  got = Tensor(a, device=device).pow(Tensor(b, device=device)).numpy()
  np.testing.assert_array_equal(got, want)
  np.testing.assert_array_equal(np.signbit(got), np.signbit(want))

@pytest.mark.parametrize("dt, scalar, want", [(dtypes.int8, 1, dtypes.int8), (dtypes.int8, 1.5, dtypes.default_float),
  (dtypes.uint8, 1, dtypes.uint8), (dtypes.float16, 2.0, dtypes.float16), (dtypes.bool, 1, dtypes.default_int), (dtypes.bool, True, dtypes.bool)])
@pytest.mark.parametrize("op", ["__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "maximum", "minimum"])
def test_python_scalars_are_weak(dt, scalar, want, op):
  if dt is dtypes.bool and op in ("__sub__", "__rsub__") and scalar is True:
    with pytest.raises(RuntimeError, match="subtracting bools"): getattr(Tensor([1, 0], dtype=dt), op)(scalar)
    return
  assert getattr(Tensor([1, 0], dtype=dt), op)(scalar).dtype is want

def test_weak_scalar_values():
  check(Tensor([1, 2, 127], dtype=dtypes.int8) + 1, np.array([1, 2, 127], np.int8) + np.int8(1), dtypes.int8)
  check(Tensor([1, 2], dtype=dtypes.int8) + 1.5, [2.5, 3.5], dtypes.default_float)
  check(Tensor([1, 2], dtype=dtypes.int8) < 1.5, [True, False], dtypes.bool)

def test_where_needs_bool():
  with pytest.raises(RuntimeError, match=r"\.bool\(\)"): Tensor([1, 0]).where(1, 2)
  check(Tensor([1, 0]).bool().where(1, 2), [1, 2], dtypes.int32)
  check(Tensor([True, False]).where(Tensor([1.5, 2.5]), 0), [1.5, 0.0], dtypes.float32)

@pytest.mark.parametrize("dt, value, want", [(dtypes.int32, 2.3, dtypes.default_float), (dtypes.bool, 2.3, dtypes.default_float),
  (dtypes.int32, 2, dtypes.int32), (dtypes.int8, 2, dtypes.int8), (dtypes.int8, True, dtypes.int8), (dtypes.bool, True, dtypes.bool),
  (dtypes.bool, 2, dtypes.default_int), (dtypes.float16, 2.3, dtypes.float16), (dtypes.int32, 0.0, dtypes.int32)])
def test_pad_value_dtype(dt, value, want):
  got = Tensor([1, 0], dtype=dt).pad((1, 2), value=value)
  assert got.dtype is want
  np.testing.assert_allclose(got.numpy().astype(np.float64), np.pad(np.array([1, 0], np.float64), (1, 2), constant_values=float(value)), rtol=1e-3)

def test_clip_lerp(device):
  f = Tensor(F, device=device)
  check(f.clip(-1, 2), np.clip(F, -1, 2), dtypes.float32)
  check(f.clamp(min_=0), np.maximum(F, 0), dtypes.float32)
  check(f.clip(max_=0.25), np.minimum(F, 0.25), dtypes.float32)
  check(Tensor(A, device=device).clip(-2, 5), np.clip(A, -2, 5), dtypes.int32)
  check(f.lerp(Tensor(F[::-1].copy(), device=device), 0.25), F + (F[::-1] - F) * np.float32(0.25))

def test_unsupported_dtype_combinations_name_the_dtypes():
  with pytest.raises(RuntimeError, match=r"dtypes.bool - dtypes.bool.*\^"): Tensor([True]) - Tensor([False])
  with pytest.raises(RuntimeError, match=r"dtypes.bool"): True - Tensor([False])
  with pytest.raises(RuntimeError, match=r"AND needs int or bool operands, got dtypes.half and dtypes.int"):
    Tensor([1.5], dtype=dtypes.float16) & Tensor([1])
  with pytest.raises(RuntimeError, match=r"SHR.*dtypes.int and dtypes.float"): Tensor([3]) >> Tensor([1.0])
  check(Tensor([True, False]) - 1, [0, -1], dtypes.default_int)  # a bool meets an int: numbers, fine

def test_python_int_past_the_dtype_compares_and_divides_by_value():
  """a python int an int dtype cannot hold is not wrapped into it: comparisons settle by value and true division divides by it (numpy)"""
  t, u = np.array([1, 2], np.int32), np.array([3, 5, 250], np.uint8)
  for x in (t, u):
    for y in (2**31, -2**31 - 1, 2**40, -1, -6, 256, 0, 3):
      for name, ref in (("__lt__", np.less), ("__gt__", np.greater), ("__le__", np.less_equal), ("__ge__", np.greater_equal),
                        ("eq", np.equal), ("ne", np.not_equal)):
        got = getattr(Tensor(x), name)(y)
        assert got.shape == x.shape and got.tolist() == ref(x.astype(np.int64), y).tolist(), (x.dtype, name, y)
      np.testing.assert_allclose((Tensor(x) / y).numpy(), x.astype(np.float64) / y if y else np.where(x > 0, np.inf, np.nan), rtol=1e-6)
  assert (-1 < Tensor(u)).tolist() == [True] * 3 and (2**31 > Tensor(t)).tolist() == [True, True]
  np.testing.assert_allclose((Tensor(np.array([3, 100], np.int8)) / 200).numpy(), [0.015, 0.5], rtol=1e-6)

def test_clamp_names_its_keywords():
  assert Tensor([-2.0, 0.5, 3.0]).clamp(min_=-1, max_=1).tolist() == [-1.0, 0.5, 1.0]
  with pytest.raises(TypeError, match=r"clip/clamp takes min_ and max_ \(tinygrad's names\), not min, max"): Tensor([1.0]).clamp(min=0, max=1)

def test_numpy_scalars_are_python_scalars():
  """np.float64(0.25) / np.int64(3) as operands act as the python numbers they hold (weak, like torch): they raised KeyError; numpy's
  operators give way to the tensor's (np.float64(2) - t made an object array of 0-d tensors); np.asarray(t) reads the values"""
  t = Tensor([1.0, 2.0])
  assert (t + np.float64(0.25)).tolist() == [1.25, 2.25] and (Tensor([1, 2]) * np.float32(1.5)).tolist() == [1.5, 3.0]
  assert (Tensor([1, 2], dtype=dtypes.int8) + np.int64(3)).dtype is dtypes.int8 and (t.half() * np.float64(2)).dtype is dtypes.half
  assert (np.float64(2) - t).tolist() == [1.0, 0.0] and (np.int64(3) * Tensor([1, 2])).tolist() == [3, 6]
  assert (t > 1).where(np.float32(3), np.int64(0)).tolist() == [0.0, 3.0] and Tensor([1, 5]).maximum(np.int64(2)).tolist() == [2, 5]
  np.testing.assert_array_equal(np.asarray(Tensor([[1, 2], [3, 4]])), [[1, 2], [3, 4]])

@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float16, dtypes.float64])
def test_small_whole_powers_are_exact(dt):
  """x ** n for a whole python n up to MUL_POWER_MAX is products (torch's x*x): through exp2(n*log2|x|) 10.0 ** 2 was 99.99999 and
  half (-10) ** 3 was -1002"""
  x = np.array([10.0, 3.0, -10.0, 0.5, -7.0], np.float32)
  for n in (2, 3, 4, 5, -1, -2, 2.0):
    want = (x.astype(np.float64) ** n).astype(np.dtype(dt.fmt))
    np.testing.assert_array_equal(Tensor(x, dtype=dt).pow(n).numpy(), want)
  z = Tensor([0.0, -0.0, float("nan"), float("inf")])
  with np.errstate(divide="ignore", invalid="ignore"):
    np.testing.assert_array_equal((z ** -1).numpy(), np.array([0.0, -0.0, np.nan, np.inf], np.float32) ** -1)
  x = Tensor([3.0, -2.0], requires_grad=True)
  (x ** 3).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), [27.0, 12.0])

def test_int_ranges():
  """a python int past the default int: arange counts in int64 (it wrapped to int32), Tensor(2**40) raises as Tensor([2**40]) does;
  a uint64 x << -1 shifts every bit out (working out the bounds of a shift by 2**64 - 1 filled memory: tests/uop/test_vminmax.py)"""
  assert Tensor.arange(2**31, 2**31 + 2).dtype is dtypes.int64 and Tensor.arange(2**53, 2**53 + 2).tolist() == [2**53, 2**53 + 1]
  with pytest.raises(OverflowError, match="does not fit"): Tensor(2**40)
  assert Tensor(2**40, dtype=dtypes.int64).item() == 2**40
  assert (Tensor([1, 2], dtype=dtypes.uint64) << -1).tolist() == [0, 0]

@pytest.mark.parametrize("device", ["CPU", "CPU:C", "PYTHON"])
def test_constant_shifts_past_the_width(device):
  """a shift by a python int past the width (or negative) shifts every bit out, on every device: it is undefined in LLVM and C, and
  DEV=CPU gave x unchanged or garbage where CPU:C gave 0 and PYTHON raised"""
  if device == "CPU:C":
    try: Device["CPU:C"]
    except Exception as e: pytest.skip(f"no C compiler: {e}")
  t = Tensor([1, -1, 7], device=device)
  assert (t >> 32).tolist() == [0, -1, 0] and (t >> 40).tolist() == [0, -1, 0] and (t << 32).tolist() == [0, 0, 0]
  assert (t << -1).tolist() == [0, 0, 0] and (t >> -1).tolist() == [0, -1, 0]
  assert (Tensor([3], dtype=dtypes.int8, device=device) << 8).tolist() == [0]
  assert (Tensor([5], dtype=dtypes.uint64, device=device) >> 64).tolist() == [0]
  assert (Tensor([5, -8], device=device) << 3).tolist() == [40, -64] and (Tensor([-8], device=device) >> 2).tolist() == [-2]

@pytest.mark.parametrize("device", ["CPU", "CPU:C", "PYTHON"])
@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int32, np.uint32, np.int64])
def test_tensor_shifts_past_the_width(device, dt):
  """a shift by a tensor amount past the width (or negative) shifts every bit out like a constant one, numpy's answer: DEV=CPU gave
  LLVM's poison (x, or garbage) where CPU:C and PYTHON gave other values"""
  if device == "CPU:C":
    try: Device["CPU:C"]
    except Exception as e: pytest.skip(f"no C compiler: {e}")
  signed = np.issubdtype(dt, np.signedinteger)
  a = np.array([1, -1, 7, -100, 5, 3, 2, 9] if signed else [1, 255, 7, 100, 5, 3, 2, 9], dt)
  s = np.array([0, -1 if signed else 1, 7, 8, 31, 32, 70, 63], dt)
  ta, ts = Tensor(a, device=device), Tensor(s, device=device)
  np.testing.assert_array_equal((ta << ts).numpy(), np.left_shift(a, s))
  np.testing.assert_array_equal((ta >> ts).numpy(), np.right_shift(a, s))
  assert (ta << ts).dtype == (ta >> ts).dtype == (ta << 70).dtype == (2 << ta).dtype == ta.dtype  # the fill keeps the dtype
  assert (2 << Tensor([1, 40, -3], device=device)).tolist() == [4, 0, 0]

@pytest.mark.parametrize("dt", [dtypes.int8, dtypes.int16, dtypes.int64])
def test_int_pow_keeps_the_dtype(dt):
  """an int tensor to an int power stays in its dtype (tinygrad's and torch's rule): the negative-exponent fix-up's python constants
  made int8 ** int8 and 2 ** int8 int32"""
  a, e = np.array([1, -1, 2, -2, 3, 0, 5, -1, 7], np.int64), np.array([-3, -3, -1, -2, 2, 0, 3, 4, 2], np.int64)
  want = np.where(e >= 0, a ** np.maximum(e, 0), np.where(a == 1, 1, np.where(a == -1, np.where(e % 2 == 1, -1, 1), 0)))
  got = Tensor(a, dtype=dt) ** Tensor(e, dtype=dt)
  assert got.dtype is dt and got.tolist() == want.tolist()
  assert (2 ** Tensor([1, 2, 3], dtype=dt)).dtype is dt and (2 ** Tensor([1, 2, 6], dtype=dt)).tolist() == [2, 4, 64]

@pytest.mark.parametrize("device", ["CPU", "CPU:C", "PYTHON"])
def test_matmul_dtype_is_the_products_and_the_sums(device):
  """numpy's matmul(dtype=) and tinygrad's: int8 100*2 wrapped to -56 before an int32 sum, half 300*300 overflowed before a float32 one"""
  a8, b8 = np.array([[100, 100]], np.int8), np.array([[2], [2]], np.int8)
  got = Tensor(a8, device=device).matmul(Tensor(b8, device=device), dtype=dtypes.int32)
  assert got.dtype is dtypes.int32 and got.tolist() == np.matmul(a8, b8, dtype=np.int32).tolist() == [[400]]
  u8 = np.array([[200, 200]], np.uint8)
  assert Tensor(u8, device=device).dot(Tensor(u8.T.copy(), device=device), dtype=dtypes.uint32).tolist() == [[80000]]
  h = np.array([[300, 300]], np.float16)
  np.testing.assert_allclose(Tensor(h, device=device).matmul(Tensor(h.T.copy(), device=device), dtype=dtypes.float32).numpy(), [[180000.0]])

@pytest.mark.parametrize("device", ["CPU", "CPU:C", "PYTHON"])
def test_bool_division_by_false_is_false_everywhere(device):
  """as an int's x // 0 and x % 0 (0): the bool divisor had no zero guard, C and LLVM divided by zero (undefined), PYTHON differed"""
  a, b = Tensor([True, False], device=device), Tensor([False, False], device=device)
  assert (a // b).tolist() == [False, False] and (a % b).tolist() == [False, False]
  assert (a // Tensor([True, True], device=device)).tolist() == [True, False]
