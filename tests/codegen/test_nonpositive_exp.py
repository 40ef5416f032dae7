"""exp2 of an argument known to be <= 0 (codegen/nonpositive_exp.py marks x - max(x); codegen/transcendental.py lowers it without the
upper clamp and the NaN fix-up): which EXP2s are marked, and the lowered polynomial in ulps against numpy in float64 over its domain
(every exponent of float32 at and below 0, dense over [-160, 0], the subnormal results, -0, -inf, NaN), bit for bit like the emulator,
and softmax rows with -inf, NaN, huge and tiny values against numpy on every device of the op matrix."""
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop.ops import UOp, Ops
from tinygrad.dtype import dtypes
from tinygrad.helpers import Context
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen.nonpositive_exp import mark_nonpositive_exp, nonpositive
from tinygrad.codegen.transcendental import NONPOSITIVE

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf in the numpy references

def kernel_ast(t:UOp) -> UOp:
  (k,) = [it for it in create_schedule([t])[0] if it.kind == "kernel"]
  return k.ast

def marked(ast:UOp) -> list:
  return [u.arg for u in mark_nonpositive_exp(ast).toposort() if u.op is Ops.EXP2]

def buf(rows:int, cols:int) -> UOp: return UOp.new_buffer("CPU", rows * cols, dtypes.float).reshape((rows, cols))

def test_x_minus_its_row_max_is_marked():
  x = buf(8, 37)
  assert marked(kernel_ast((x - x.max(1, keepdim=True)).exp2())) == [NONPOSITIVE]
  assert marked(kernel_ast((x - x.max(1, keepdim=True)).exp())) == [NONPOSITIVE]  # times log2(e) > 0
  assert set(marked(kernel_ast(x.softmax(1)))) == {NONPOSITIVE}

def test_minus_abs_is_marked():
  """-|x| as where(x < 0, x, -x): sigmoid's e^-|x| (and the same with both sides nonpositive); |x| itself is not"""
  x = buf(8, 37)
  assert marked(kernel_ast(x.sigmoid())) == [NONPOSITIVE]
  assert marked(kernel_ast(((x < 0).where(x, -x) * 3.0).exp2())) == [NONPOSITIVE]
  assert marked(kernel_ast((x < 0).where(x - x.max(1, keepdim=True), -2.0).exp2())) == [NONPOSITIVE]
  assert marked(kernel_ast((x < 0).where(-x, x).exp2())) == [None]
  assert marked(kernel_ast((x > 0).where(x, -x).exp2())) == [None]

def test_other_arguments_are_not_marked():
  x, y = buf(8, 37), buf(8, 37)
  assert marked(kernel_ast((x - y.max(1, keepdim=True)).exp2())) == [None]  # another tensor's max
  assert marked(kernel_ast((x.max(1, keepdim=True) - x).exp2())) == [None]  # the sign the other way
  assert marked(kernel_ast(((x - x.max(1, keepdim=True)) * -2.0).exp2())) == [None]  # a negative factor
  assert marked(kernel_ast((x - x.sum(1, keepdim=True)).exp2())) == [None]  # a sum, not a max
  assert marked(kernel_ast((x * 2 - x.max(1, keepdim=True)).exp2())) == [None]  # not the reduced value
  assert marked(kernel_ast(x.exp2())) == [None]

def test_constants():
  assert nonpositive(UOp.const(dtypes.float, -0.0)) and nonpositive(UOp.const(dtypes.float, float("nan")))
  assert not nonpositive(UOp.const(dtypes.float, 1e-30))

def domain() -> np.ndarray:
  """float32 values the fast path takes: the top 16 bits of every negative float (every exponent, the subnormals, -0, -inf, NaN) down
  to past -lim, dense over [-160, 0], every float around the subnormal boundary, and the edge values"""
  top = (np.arange(1 << 15, dtype=np.uint32) << 16 | 0x80000000).view(np.float32)
  rng = np.random.default_rng(0)
  dense = rng.uniform(-160, 0, 200_000).astype(np.float32)
  edge = np.linspace(-150.5, -125, 100_000, dtype=np.float32)
  special = np.array([0.0, -0.0, -np.inf, np.nan, -1e-45, -0.5, -1.5, -126, -149, -150, -159.9, -160, -161, -1e30], np.float32)
  return np.concatenate([top, dense, edge, special])

def fast_exp2(x:np.ndarray, device:str) -> np.ndarray:
  """exp2(x) through the fast path: rows [x, 0], whose max is 0, so x - max is x exactly"""
  rows = Tensor(np.stack([x, np.zeros_like(x)], 1), device=device)
  with Context(FUSE_ROWS=2, TRANSCENDENTAL=2):
    t = (rows - rows.max(1, keepdim=True)).exp2()
    assert set(marked(kernel_ast(t.uop))) == {NONPOSITIVE}
    return t.numpy()[:, 0]

def test_accuracy_over_the_domain(device):
  x = domain()
  if device == "PYTHON": x = x[::97]
  out = fast_exp2(x, device)
  ref = np.exp2(np.maximum(x.astype(np.float64), -200))  # NaN stays NaN; past -lim the result is 0 either way
  nan = np.isnan(x)
  assert np.isnan(out[nan]).all() and not np.isnan(out[~nan]).any()
  err = np.abs(out[~nan].astype(np.float64) - ref[~nan]) / np.spacing(ref[~nan].astype(np.float32)).astype(np.float64)
  assert err.max() <= 1.5, f"{err.max():.3f} ulp at x={x[~nan][np.argmax(err)]!r}"
  assert (out[x <= -150] == 0).all() and (out[x == 0] == 1).all()  # -inf among them

def test_same_bits_as_emulator(device):
  if device == "PYTHON": pytest.skip("the emulator is the reference")
  from tinygrad.device import Device
  if Ops.MULACC not in Device[device].renderer.code_for_op: pytest.skip("the emulator fuses multiply-adds the host renderer does not")
  x = domain()[::211]
  out, emu = fast_exp2(x, device), fast_exp2(x, "PYTHON")
  nan = np.isnan(emu)  # a NaN's sign and payload are whatever the target's arithmetic makes them
  assert np.array_equal(np.isnan(out), nan) and np.array_equal(out[~nan].view(np.uint32), emu[~nan].view(np.uint32))

def _np_softmax(a):
  e = np.exp(a - a.max(1, keepdims=True))
  return e / e.sum(1, keepdims=True)

def test_softmax_rows_with_extremes(device):
  a = np.random.default_rng(2).standard_normal((6, 67)).astype(np.float32)
  a[0, 3] = -np.inf                          # one -inf: its probability is 0
  a[1, :] = -np.inf                          # a row of -inf: NaN (as numpy)
  a[2, 5] = np.nan                           # NaN spreads over its row
  a[3] *= 1e30                               # huge: one winner, the rest underflow
  a[4] *= 1e-30                              # tiny: uniform
  a[5, 7] = np.inf                           # +inf: inf - inf = NaN (as numpy)
  with Context(FUSE_ROWS=2):
    out = Tensor(a, device=device).softmax(1).numpy()
    logs = Tensor(a[[0, 3, 4]], device=device).log_softmax(1).numpy()
  np.testing.assert_allclose(out, _np_softmax(a), rtol=2e-5, atol=2e-7)
  b = a[[0, 3, 4]].astype(np.float64) - a[[0, 3, 4]].max(1, keepdims=True)
  np.testing.assert_allclose(logs, b - np.log(np.exp(b).sum(1, keepdims=True)), rtol=2e-5, atol=2e-6)
