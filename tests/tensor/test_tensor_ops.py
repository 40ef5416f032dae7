"""Tensor ops against numpy, on every executing backend (the `device` fixture: CPU through LLVM, CPU through C, the PYTHON emulator)."""
import math
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, graph_rewrite
from tinygrad.uop.symbolic import symbolic

def check(t:Tensor, expected, rtol=1e-6, atol=1e-6):
  got, want = t.numpy(), np.asarray(expected)
  assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
  if want.dtype.kind in "fc": np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
  else: np.testing.assert_array_equal(got, want)

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 11.5
M = np.array([[1.5, -2.0, 3.25], [0.0, 4.0, -1.0]], dtype=np.float32)

# *** creation ***

@pytest.mark.hcq_matrix
def test_from_list(device):
  t = Tensor([[1, 2, 3], [4, 5, 6]], device=device)
  assert t.device == Tensor(0, device=device).device and t.dtype is dtypes.int32
  check(t, np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32))
  check(Tensor([1.5, -2.0], device=device), np.array([1.5, -2.0], dtype=np.float32))
  check(Tensor([True, False], device=device), np.array([True, False]))
  check(Tensor([[1, 2]], device=device, dtype=dtypes.float16), np.array([[1, 2]], dtype=np.float16))

@pytest.mark.hcq_matrix
@pytest.mark.parametrize("npdt", [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.bool_])
def test_numpy_roundtrip(device, npdt):
  x = (np.arange(12).reshape(3, 4) % 5 - 2).astype(npdt)
  t = Tensor(x, device=device)
  assert t.dtype.fmt is not None and np.dtype(t.dtype.fmt) == x.dtype
  check(t, x)

def test_scalar_and_bytes(device):
  check(Tensor(3.5, device=device), np.float32(3.5))
  check(Tensor(7, device=device), np.int32(7))
  check(Tensor(b"\x01\x02\xff", device=device), np.array([1, 2, 255], dtype=np.uint8))
  check(Tensor(np.array([1, 2], dtype=np.int16).tobytes(), device=device, dtype=dtypes.int16), np.array([1, 2], dtype=np.int16))

def test_fill(device):
  check(Tensor.zeros(2, 3, device=device), np.zeros((2, 3), np.float32))
  check(Tensor.ones((3,), device=device, dtype=dtypes.int32), np.ones(3, np.int32))
  check(Tensor.full((2, 2), 7, device=device), np.full((2, 2), 7, np.int32))
  t = Tensor(M, device=device)
  check(t.zeros_like(), np.zeros_like(M))
  check(t.ones_like(), np.ones_like(M))
  check(t.full_like(2.5), np.full_like(M, 2.5))
  assert Tensor.empty(2, 5, device=device).realize().shape == (2, 5)

@pytest.mark.parametrize("args", [(5,), (0,), (1,), (2, 9), (9, 2, -2), (10, 0, -3), (0, 1, 0.25), (-1.5, 2.5, 0.5), (1000,)])
def test_arange(device, args):
  want = np.arange(*args)
  check(Tensor.arange(*args, device=device), want.astype(np.float32 if want.dtype.kind == "f" else np.int32))

def test_arange_dtype(device):
  check(Tensor.arange(5, device=device, dtype=dtypes.float32), np.arange(5, dtype=np.float32))
  check(Tensor.arange(300, 0, -7, device=device, dtype=dtypes.int64), np.arange(300, 0, -7, dtype=np.int64))

def test_eye_linspace(device):
  check(Tensor.eye(3, device=device), np.eye(3, dtype=np.float32))
  check(Tensor.eye(2, 4, device=device, dtype=dtypes.int32), np.eye(2, 4, dtype=np.int32))
  check(Tensor.linspace(-1, 2, 7, device=device), np.linspace(-1, 2, 7, dtype=np.float32))
  check(Tensor.linspace(3, 4, 1, device=device), np.linspace(3, 4, 1, dtype=np.float32))

# *** elementwise math and comparisons ***

X = np.array([[-2.5, -1.0, 0.0], [0.5, 1.0, 3.75]], dtype=np.float32)
Y = np.array([[1.5, 2.0, -3.0], [0.25, -4.0, 2.0]], dtype=np.float32)

# operators read the same on tensors and arrays; the two methods with numpy spellings get their own lambdas
BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
          "add_scalar": lambda a, b: a + 2.5, "rsub": lambda a, b: 3 - a, "mul3": lambda a, b: 2 * a * b, "rdiv": lambda a, b: 1 / b,
          "neg": lambda a, b: -a, "pow": lambda a, b: (a * a) ** 0.75}

@pytest.mark.hcq_matrix
@pytest.mark.parametrize("name", list(BINARY))
def test_binary(device, name):
  check(BINARY[name](Tensor(X, device=device), Tensor(Y, device=device)), BINARY[name](X, Y), rtol=1e-5)

def test_maximum_minimum(device):
  a, b = Tensor(X, device=device), Tensor(Y, device=device)
  check(a.maximum(b), np.maximum(X, Y))
  check(a.minimum(b), np.minimum(X, Y))
  check(a.maximum(0.5), np.maximum(X, 0.5))

@pytest.mark.parametrize("name, npf, lo, hi", [("exp", np.exp, -3, 3), ("log", np.log, 0.1, 10), ("sqrt", np.sqrt, 0, 9), ("sin", np.sin, -4, 4),
  ("cos", np.cos, -4, 4), ("abs", np.abs, -3, 3), ("relu", lambda x: np.maximum(x, 0), -3, 3), ("sigmoid", lambda x: 1/(1+np.exp(-x)), -5, 5),
  ("tanh", np.tanh, -3, 3), ("floor", np.floor, -3, 3), ("ceil", np.ceil, -3, 3), ("trunc", np.trunc, -3, 3), ("round", np.round, -3, 3),
  ("square", np.square, -3, 3), ("reciprocal", np.reciprocal, 0.5, 4), ("exp2", np.exp2, -3, 3), ("log2", np.log2, 0.1, 10),
  ("sign", np.sign, -3, 3)])
@pytest.mark.hcq_matrix
def test_unary(device, name, npf, lo, hi):
  x = np.linspace(lo, hi, 13, dtype=np.float32)
  if name in ("floor", "ceil", "trunc", "round", "sign"): x = np.array([-2.5, -1.5, -1.0, -0.5, -0.2, 0.0, 0.5, 1.5, 2.5, 2.7], np.float32)
  check(getattr(Tensor(x, device=device), name)(), npf(x).astype(np.float32), rtol=2e-5, atol=2e-6)

def test_pow_clip(device):
  x = np.array([0.5, 1.0, 2.0, 3.0], np.float32)
  check(Tensor(x, device=device) ** 2, x ** 2, rtol=1e-5)
  check(2 ** Tensor(x, device=device), 2 ** x, rtol=1e-5)
  check(Tensor(x, device=device).clip(0.75, 2.5), np.clip(x, 0.75, 2.5))

def test_comparisons(device):
  a, b = Tensor(X, device=device), Tensor(Y, device=device)
  for got, want in [(a < b, X < Y), (a <= b, X <= Y), (a > b, X > Y), (a >= b, X >= Y), (a == b, X == Y), (a != b, X != Y),
                    (a < 0.5, X < 0.5), (a == 1.0, X == 1.0)]:
    assert got.dtype is dtypes.bool
    check(got, want)

@pytest.mark.hcq_matrix
def test_where(device):
  a, b = Tensor(X, device=device), Tensor(Y, device=device)
  check((a > b).where(a, b), np.where(X > Y, X, Y))
  check((a > 0).where(a, 0.0), np.where(X > 0, X, 0.0).astype(np.float32))
  check((a > 0).where(1, 2), np.where(X > 0, 1, 2).astype(np.int32))

def test_where_same_branches(device):
  # where(c, a, a) -> a leaves the condition's buffer unread in the middle argument slot: the kernel must still take it there
  a = np.array([3.0, -1.25], np.float32)
  check(Tensor([True, False], device=device).where(Tensor(a, device=device), Tensor(a, device=device)), a)

@pytest.mark.hcq_matrix
def test_int_ops(device):
  a, b = np.array([-7, -3, 0, 5, 9], np.int32), np.array([2, 3, 4, -2, 5], np.int32)
  ta, tb = Tensor(a, device=device), Tensor(b, device=device)
  check(ta // tb, a // b)
  check(ta % tb, a % b)
  check(ta & tb, a & b)
  check(ta | tb, a | b)
  check(ta ^ tb, a ^ b)
  check(~ta, ~a)
  check(ta << 2, a << 2)
  check(Tensor(np.array([8, 255, 1 << 31], np.uint32), device=device) >> 3, np.array([8, 255, 1 << 31], np.uint32) >> 3)

def test_int_divmod_padded(device):
  # the padding computes the quotient too, from gated loads that read 0 there: dividing by that must not trap (SIGFPE on x86)
  a, b = np.array([3, -2, 5], np.int32), np.array([7, 7, -7], np.int32)
  ta, tb = Tensor(a, device=device), Tensor(b, device=device)
  check((tb // ta).pad(((1, 2),)), np.pad(b // a, (1, 2)))
  check((tb % ta).pad(((1, 2),)), np.pad(b % a, (1, 2)))
  check(tb.div(ta, rounding_mode="trunc").pad(((2, 0),)), np.pad(np.trunc(b / a).astype(np.int32), (2, 0)))

def test_int_dtype_semantics(device):
  t = Tensor([1, 2, 3], device=device)
  assert (t + 2).dtype is dtypes.int32
  check(t + 2, np.array([3, 4, 5], np.int32))
  check(t * 1.5, np.array([1.5, 3.0, 4.5], np.float32))
  check(t / 2, np.array([0.5, 1.0, 1.5], np.float32))
  check(t + Tensor([0.5, 0.5, 0.5], device=device), np.array([1.5, 2.5, 3.5], np.float32))
  u8 = Tensor([250, 7], device=device, dtype=dtypes.uint8)
  check(u8 + Tensor([10, 1], device=device, dtype=dtypes.uint8), np.array([4, 8], np.uint8))  # wraps like numpy
  check(Tensor([2**31 - 1], device=device) + 1, np.array([-2**31], np.int32))

# *** casts ***

@pytest.mark.hcq_matrix
def test_casts(device):
  x = np.array([-2.7, -0.5, 0.0, 1.9, 3.5], np.float32)
  check(Tensor(x, device=device).cast(dtypes.int32), x.astype(np.int32))  # truncation toward 0
  check(Tensor(x, device=device).cast(dtypes.bool), x.astype(np.bool_))
  check(Tensor(x, device=device).cast(dtypes.float16), x.astype(np.float16))
  check(Tensor(x, device=device).cast("float64"), x.astype(np.float64))
  check(Tensor([True, False], device=device).cast(dtypes.float32), np.array([1.0, 0.0], np.float32))
  check(Tensor([1, -1], device=device).cast(dtypes.uint8), np.array([1, 255], np.uint8))
  check(Tensor([1, 300], device=device).int().float(), np.array([1, 300], np.float32))

@pytest.mark.hcq_matrix
def test_bitcast(device):
  x = np.array([1.0, -2.5, 0.0], np.float32)
  check(Tensor(x, device=device).bitcast(dtypes.int32), x.view(np.int32))
  check(Tensor(x.view(np.uint32), device=device).bitcast(dtypes.float32), x)

def test_double_and_int_to_narrow_floats(device):
  """a float64 (or int) cast to half and bfloat16: on CL with half emulated the double's rounding helper was left out (compile error)"""
  x = np.array([1.5, 65504.0, 1e-8, -3.0], np.float64)
  check(Tensor(x, device=device).cast(dtypes.float16), x.astype(np.float16))
  check((Tensor(x, device=device) * 3).cast(dtypes.float16), (x * 3).astype(np.float16))
  check(Tensor(np.array([3, 2049, 70000]), device=device).cast(dtypes.float16), np.array([3, 2048, np.inf], np.float16))
  assert Tensor(np.array([1.5, 3e38], np.float64), device=device).cast(dtypes.bfloat16).tolist() == [1.5, 3.00405527047391e+38]

def test_float_to_int_out_of_range(device):
  """a float out of the target's range (or NaN, inf) casts the same on every device and in vector and scalar loops alike: truncated into
  int32 (int64 for uint32 and 64-bit targets), out of that range or NaN its minimum, then the target's low bits (numpy's answers on x86
  for these; C leaves them undefined, LLVM made them poison: 3e9 -> uint16 gave 24064 or 0 by the array's length)"""
  x = np.array([-2.5, 300.7, 3e9, -3e9, np.nan, np.inf, -np.inf, 70000.5, -1e10, 1.5, -0.9], np.float32)
  got = {dt: Tensor(np.tile(x, 3), device=device).cast(dt).numpy().reshape(3, -1) for dt in (dtypes.uint8, dtypes.int16, dtypes.int32, dtypes.int64)}
  m32, m64 = -2**31, -2**63
  want = {dtypes.uint8: [254, 44, 0, 0, 0, 0, 0, 112, 0, 1, 0], dtypes.int16: [-2, 300, 0, 0, 0, 0, 0, 4464, 0, 1, 0],
          dtypes.int32: [-2, 300, m32, m32, m32, m32, m32, 70000, m32, 1, 0],
          dtypes.int64: [-2, 300, 3000000000, -3000000000, m64, m64, m64, 70000, -10000000000, 1, 0]}
  for dt, rows in got.items():
    for row in rows: assert row.tolist() == want[dt], dt
  assert Tensor(np.array([-2.5, 3e9, 1e19], np.float32), device=device).cast(dtypes.uint64).tolist() == [2**64 - 2, 3000000000, 9999999980506447872]
  # half's infinities too: the range's limits are past half's largest value (as half constants they were inf, and -inf counted as inside)
  h = Tensor(np.array([-np.inf, np.inf, np.nan, -65504.0, 1.5], np.float16), device=device) + 0
  assert h.cast(dtypes.int32).tolist() == [m32, m32, m32, -65504, 1] and h.cast(dtypes.uint32).tolist() == [0, 0, 0, 2**32 - 65504, 1]
  assert h.cast(dtypes.int64).tolist() == [m64, m64, m64, -65504, 1]

def test_bitcast_bytes_to_bool(device):
  """a byte other than 0 and 1 bitcast to bool is True on every device (CL had no as_bool, CPU:C kept the byte: cast gave 2, 255)"""
  t = Tensor(np.array([0, 1, 2, 255], np.uint8), device=device).bitcast(dtypes.bool)
  assert t.cast(dtypes.int32).tolist() == [0, 1, 1, 1] and t.logical_not().tolist() == [True, False, False, False]
  assert t.where(10, 20).tolist() == [20, 10, 10, 10]

# *** movement ***

@pytest.mark.hcq_matrix
def test_reshape_expand_permute(device):
  t = Tensor(A, device=device)
  check(t.reshape(6, 4), A.reshape(6, 4))
  check(t.reshape(-1, 2), A.reshape(-1, 2))
  check(t.permute(2, 0, 1), A.transpose(2, 0, 1))
  check(t.transpose(0, 2), A.swapaxes(0, 2))
  check(Tensor(M, device=device).T, M.T)
  check(Tensor(M, device=device).reshape(2, 1, 3).expand(2, 4, 3), np.broadcast_to(M.reshape(2, 1, 3), (2, 4, 3)))
  check(t.flatten(), A.flatten())
  check(t.flatten(1), A.reshape(2, 12))
  check(t.unsqueeze(1).squeeze(1), A)
  check(Tensor(M, device=device).repeat(2, 3), np.tile(M, (2, 3)))

@pytest.mark.hcq_matrix
def test_shrink_flip_pad(device):
  t = Tensor(A, device=device)
  check(t.shrink(((0, 1), None, (1, 3))), A[0:1, :, 1:3])
  check(t.flip(0, 2), A[::-1, :, ::-1])
  check(t.flip(-1), A[..., ::-1])
  m = Tensor(M, device=device)
  check(m.pad(((1, 0), (2, 1))), np.pad(M, ((1, 0), (2, 1))))
  check(m.pad((1, 2)), np.pad(M, ((0, 0), (1, 2))))  # torch order: last axis first
  check(m.pad((1, 2, 0, 1), value=-5.0), np.pad(M, ((0, 1), (1, 2)), constant_values=-5.0))
  check(m.pad((-1, 1)), np.pad(M[:, 1:], ((0, 0), (0, 1))))  # negative pads crop

@pytest.mark.parametrize("mode, npmode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
def test_pad_modes(device, mode, npmode):
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  check(Tensor(x, device=device).pad((2, 1, 1, 2), mode=mode), np.pad(x, ((1, 2), (2, 1)), mode=npmode))

INDICES = [0, -1, (1, 2), (slice(None), 1), (slice(1, None),), (slice(None, None, -1),), (slice(None, None, 2),), (slice(None, None, -2),),
           (..., 1), (1, ...), (None, 0), (slice(None), None, slice(None, None, -3)), (slice(5, 0, -2), slice(1, 3)), (slice(3, 1),),
           (slice(-2, None), ..., slice(None, None, 3)), (1, 2, 3), (-1, slice(None, -1), None, slice(1, 4, 2)), ()]

@pytest.mark.parametrize("idx", INDICES, ids=[repr(i) for i in INDICES])
def test_getitem(device, idx):
  check(Tensor(A, device=device)[idx], A[idx])

def test_cat_stack(device):
  a, b = Tensor(M, device=device), Tensor(M * 2, device=device)
  check(a.cat(b), np.concatenate([M, M * 2]))
  check(Tensor.cat(a, b, a, dim=1), np.concatenate([M, M * 2, M], axis=1))
  check(Tensor.stack(a, b), np.stack([M, M * 2]))
  check(a.stack(b, dim=-1), np.stack([M, M * 2], axis=-1))
  check(Tensor([True, False], device=device).cat(Tensor([False, True], device=device)), np.array([True, False, False, True]))

# *** reductions ***

AXES = [None, 0, 1, -1, (0, 2)]

@pytest.mark.hcq_matrix
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op", ["sum", "max", "min", "mean"])
def test_reduce(device, op, axis, keepdim):
  want = getattr(np, op)(A, axis=axis, keepdims=keepdim)
  check(getattr(Tensor(A, device=device), op)(axis, keepdim), want.astype(np.float32), rtol=1e-5)

def test_reduce_more(device):
  t = Tensor(A, device=device)
  check(t.var(1), A.var(1, ddof=1), rtol=1e-5)
  check(t.std(), A.std(ddof=1), rtol=1e-5)
  check(t.var(2, correction=0, keepdim=True), A.var(2, keepdims=True), rtol=1e-5)
  check(Tensor(M, device=device).prod(1), M.prod(1), rtol=1e-6)
  i = np.array([[3, -1, 7], [2, 2, -8]], np.int32)
  check(Tensor(i, device=device).sum(), np.int32(i.sum()))
  check(Tensor(i, device=device).max(0), i.max(0))
  check(Tensor(i, device=device).min(1), i.min(1))
  check(Tensor(i, device=device).mean(), np.float32(i.mean()))
  check(Tensor(np.array([5, 200, 3], np.uint8), device=device).min(), np.uint8(3))
  check(Tensor([True, False, True], device=device).sum(), np.int32(2))
  # prod answers in the input's dtype (upstream's rule; multiplied wide, so int8 wraps as int8 arithmetic would): 7*6*5 = 210 -> -46
  check(Tensor(np.array([7, 6, 5], np.int8), device=device).prod(), np.int8(-46))
  check(Tensor(np.array([1.5, 2, 300], np.float16), device=device).prod(), np.float16(900))
  check(Tensor([True, False], device=device).prod(), np.bool_(False))
  check(Tensor(np.array([7, 6, 5], np.int8), device=device).prod(dtype=dtypes.int32), np.int32(210))
  assert [Tensor([1], dtype=dt, device=device).prod().dtype for dt in (dtypes.int8, dtypes.half, dtypes.bool, dtypes.uint16)] == \
    [dtypes.int8, dtypes.half, dtypes.bool, dtypes.uint16]

def test_arg_any_all(device):
  x = np.array([[1.0, 5.0, 5.0, -2.0], [7.0, 0.0, 7.0, -3.0], [-1.0, -1.0, -4.0, -4.0]], np.float32)
  t = Tensor(x, device=device)
  check(t.argmax(), np.int32(np.argmax(x)))
  check(t.argmax(1), np.argmax(x, 1).astype(np.int32))
  check(t.argmax(0, keepdim=True), np.argmax(x, 0, keepdims=True).astype(np.int32))
  check(t.argmin(1), np.argmin(x, 1).astype(np.int32))
  check(Tensor(np.array([3, -2, 9, -2], np.int32), device=device).argmin(), np.int32(1))
  check((t > 6).any(1), (x > 6).any(1))
  check((t > -5).all(), np.bool_(True))
  check((t > 0).all(0), (x > 0).all(0))
  check(t.any(), np.bool_(True))

@pytest.mark.hcq_matrix
def test_softmax_family(device):
  t = Tensor(A, device=device)
  e = np.exp(A - A.max(-1, keepdims=True))
  check(t.softmax(), e / e.sum(-1, keepdims=True), rtol=1e-5)
  check(t.log_softmax(1), A - A.max(1, keepdims=True) - np.log(np.exp(A - A.max(1, keepdims=True)).sum(1, keepdims=True)), rtol=1e-5, atol=1e-5)
  lse = np.log(np.exp(A.astype(np.float64)).sum(axis=2))
  check(t.logsumexp(2), lse.astype(np.float32), rtol=1e-5)

@pytest.mark.hcq_matrix
def test_cumsum(device):
  check(Tensor(A, device=device).cumsum(1), A.cumsum(1), rtol=1e-5)
  check(Tensor(A, device=device).cumsum(-1), A.cumsum(-1), rtol=1e-5)
  check(Tensor([1, 2, 3, 4], device=device).cumsum(), np.array([1, 3, 6, 10], np.int32))

# *** matmul ***

@pytest.mark.parametrize("sa, sb", [((3, 4), (4, 5)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                                    ((1, 7), (7, 1))])
@pytest.mark.hcq_matrix
def test_matmul(device, sa, sb):
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
  check(Tensor(a, device=device) @ Tensor(b, device=device), a @ b, rtol=1e-5, atol=1e-5)

def test_matmul_int_and_dot(device):
  a, b = np.arange(6, dtype=np.int32).reshape(2, 3), np.arange(12, dtype=np.int32).reshape(3, 4) - 5
  check(Tensor(a, device=device).dot(Tensor(b, device=device)), a @ b)
  check(Tensor(a, device=device).matmul(Tensor(b, device=device)), a @ b)

# *** reading back ***

def test_tolist_item(device):
  assert Tensor([[1, 2], [3, 4]], device=device).tolist() == [[1, 2], [3, 4]]
  assert Tensor([True, False], device=device).tolist() == [True, False]
  assert Tensor([[0.5]], device=device).tolist() == [[0.5]]
  assert Tensor(np.zeros((2, 0)), device=device).tolist() == [[], []]
  assert Tensor(2.5, device=device).item() == 2.5
  assert (Tensor([1, 2, 3], device=device).sum()).item() == 6
  assert Tensor([[True]], device=device).item() is True
  assert Tensor([1.0, 2.0], device=device, dtype=dtypes.float16).tolist() == [1.0, 2.0]
  with pytest.raises(ValueError, match="one element"): Tensor([1, 2], device=device).item()

def test_data(device):
  d = Tensor([[1, 2], [3, 4]], device=device).data()
  assert d.format == "i" and d.shape == (2, 2) and d.tolist() == [[1, 2], [3, 4]]

def test_realize_assign_contiguous(device):
  t = Tensor(M, device=device) + 1
  assert t.realize() is t and t.uop.base.op.name == "BUFFER"
  check(t, M + 1)
  a = Tensor.zeros(2, 3, device=device).contiguous().realize()
  a.assign(a + Tensor(M, device=device))
  check(a, M)
  check(Tensor(M, device=device).T.contiguous(), M.T)
  check(Tensor(M, device=device).detach(), M)

@pytest.mark.hcq_matrix
def test_to_device(device):
  other = "PYTHON" if device != "PYTHON" else "CPU"
  t = (Tensor(M, device=device) * 2).to(other)
  assert t.device == other
  check(t, M * 2)

# *** random ***

def threefry_ref(c0:int, c1:int, k0:int, k1:int) -> tuple[int, int]:
  """threefry2x32-20 in plain python, straight from the Random123 description"""
  mask, rot = 0xffffffff, (13, 15, 26, 6, 17, 29, 16, 24)
  ks = (k0, k1, 0x1BD11BDA ^ k0 ^ k1)
  x0, x1 = (c0 + ks[0]) & mask, (c1 + ks[1]) & mask
  for r in range(20):
    x0 = (x0 + x1) & mask
    x1 = (((x1 << rot[r % 8]) | (x1 >> (32 - rot[r % 8]))) & mask) ^ x0
    if r % 4 == 3:
      s = r // 4 + 1
      x0, x1 = (x0 + ks[s % 3]) & mask, (x1 + ks[(s + 1) % 3] + s) & mask
  return x0, x1

def test_threefry_known_answers(device):
  # Random123's known-answer vectors for threefry2x32_20
  for ctr, key, want in [((0, 0), (0, 0), (0x6b200159, 0x99ba4efe)), ((0xffffffff,)*2, (0xffffffff,)*2, (0x1cb996fc, 0xbb002be7)),
                         ((0x243f6a88, 0x85a308d3), (0x13198a2e, 0x03707344), (0xc4923a9c, 0x483df7a0))]:
    assert threefry_ref(*ctr, *key) == want
    # Ops.THREEFRY on uint64 buffers (counter c1:c0, key k1:k0, result x1:x0): the device's decomposed rounds
    x, k = (Tensor([hi << 32 | lo], device=device, dtype=dtypes.uint64) for lo, hi in (ctr, key))
    got = Tensor(x.uop.alu(Ops.THREEFRY, k.uop)).item()
    assert (got & 0xffffffff, got >> 32) == want
    # ... and folded, on constants
    folded = graph_rewrite(UOp.const(dtypes.uint64, ctr[1] << 32 | ctr[0]).alu(Ops.THREEFRY, UOp.const(dtypes.uint64, key[1] << 32 | key[0])), symbolic)
    assert folded.op is Ops.CONST and (folded.arg & 0xffffffff, folded.arg >> 32) == want

def test_rand_deterministic(device):
  Tensor.manual_seed(1234)
  a, b = Tensor.rand(3, 5, device=device).numpy(), Tensor.rand(3, 5, device=device).numpy()
  Tensor.manual_seed(1234)
  check(Tensor.rand(3, 5, device=device), a)
  check(Tensor.rand(3, 5, device=device), b)
  assert not np.array_equal(a, b)

@pytest.mark.hcq_matrix
def test_rand_uniform(device):
  Tensor.manual_seed(0)
  x = Tensor.rand(2001, device=device).numpy()
  assert x.dtype == np.float32 and x.shape == (2001,)
  assert (x >= 0).all() and (x < 1).all()
  assert abs(x.mean() - 0.5) < 0.03 and abs(x.var() - 1/12) < 0.01
  assert len(np.unique(x)) > 1990
  h = Tensor.rand(500, device=device, dtype=dtypes.float16).numpy()
  assert h.dtype == np.float16 and (h >= 0).all() and (h < 1).all()

def test_randn_randint_uniform(device):
  Tensor.manual_seed(7)
  n = Tensor.randn(4000, device=device).numpy()
  assert abs(n.mean()) < 0.1 and abs(n.std() - 1) < 0.1 and np.isfinite(n).all()
  r = Tensor.randint(1000, low=-3, high=4, device=device).numpy()
  assert r.dtype == np.int32 and r.min() == -3 and r.max() == 3
  u = Tensor.uniform(1000, low=-2.0, high=-1.0, device=device).numpy()
  assert (u >= -2).all() and (u < -1).all()

# *** errors ***

def test_errors(device):
  t = Tensor(M, device=device)
  with pytest.raises(ValueError, match="cannot reshape"): t.reshape(4, 2)
  with pytest.raises(ValueError, match="cannot be broadcast"): t + Tensor([1.0, 2.0], device=device)
  with pytest.raises(ValueError, match="6 elements"): t.item()
  with pytest.raises(IndexError, match="out of bounds"): t[2]
  assert math.isclose(t[1, -1].item(), -1.0)

def test_padded_product_with_flip(device):
  # gcc 12.2's loop vectorizer (on at -O2) shifted a row's lanes by one in this kernel on CPU:C; the C renderer now runs without it
  x, m = np.arange(1, 33).reshape(16, 2).astype(np.int32), np.array([[0, 0, 5, 7]], np.int32)
  t = Tensor(x, device=device)
  got = ((t * t.flip(1)).pad(((3, 1), (2, 0))) * Tensor(m, device=device)).numpy()
  np.testing.assert_equal(got, np.pad(x * x[:, ::-1], ((3, 1), (2, 0))) * m)

def test_float64_to_int64_out_of_range(device):
  # the narrow-float test of the cast's range must not overflow python's float for float64's exponent range
  x = Tensor(np.array([-np.inf, np.nan, 1e300, -2.5, 2.0**62], np.float64), device=device)
  assert x.cast(dtypes.int64).tolist() == [-2**63, -2**63, -2**63, -2, 2**62]
