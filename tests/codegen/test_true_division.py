"""Float division rounded once (codegen/true_division.py): x / y equal bit for bit to numpy's division in float32, float64 and half on
every device, edge values included; and which kernels divide (an elementwise quotient) and which keep a reciprocal and a multiply
(a value the inner loop does not change: softmax's 1/sum, a row divided by one of its own values)."""
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen.lowering import rewrite_to_program

pytestmark = pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning",
                                        "ignore:overflow:RuntimeWarning")

def operands(dtype, n:int) -> tuple[np.ndarray, np.ndarray]:
  rng = np.random.default_rng(n)
  a, b = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n), rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
  edge = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3.0, 1e-30, 1e30, 7.0])
  a, b = np.concatenate([a, np.repeat(edge, len(edge))]), np.concatenate([b, np.tile(edge, len(edge))])
  return a.astype(dtype), b.astype(dtype)

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_quotient_is_rounded_once(device, dtype):
  a, b = operands(dtype, 300 if device == "PYTHON" else 20_000)
  got = (Tensor(a, device=device) / Tensor(b, device=device)).numpy()
  np.testing.assert_array_equal(got, a / b)  # NaN where numpy has NaN, and every other value to the bit

def _ops(t:Tensor) -> list[Ops]:
  (ast,) = [it.ast for it in create_schedule([t.uop])[0] if it.kind == "kernel"]
  return [u.op for u in rewrite_to_program(ast, Device["CPU"].renderer).toposort()]

def _buf(*shape) -> Tensor: return Tensor(UOp.new_buffer("CPU", int(np.prod(shape)), dtypes.float).reshape(shape))

def test_elementwise_quotient_divides():
  ops = _ops(_buf(64, 300) / _buf(64, 300))
  assert Ops.FDIV in ops and Ops.RECIPROCAL not in ops

def test_loop_invariant_reciprocal_is_kept():
  # the row's divisor is loaded once per row: one reciprocal per row and a multiply per element, as before
  x = _buf(64, 300)
  for t in (x / _buf(64, 1), x.softmax(1)):
    ops = _ops(t)
    assert Ops.RECIPROCAL in ops and Ops.FDIV not in ops

@pytest.mark.parametrize("noopt", [0, 1])
def test_a_reduce_result_over_an_elementwise_divisor_divides(noopt):
  """m.max(1) / y: the reduce's loop closes before the quotient, which is computed once per row as y is; taking it as a loop the
  divisor sits outside kept x * (1/y), and m / m was 0.99999994 for 24 rows in 300"""
  from tinygrad.helpers import Context
  x = np.random.default_rng(0).uniform(0.5, 40, (300, 4)).astype(np.float32)
  with Context(NOOPT=noopt):
    assert Ops.FDIV in _ops(_buf(300, 4).max(1) / _buf(300))
    np.testing.assert_array_equal((Tensor(x).max(1) / Tensor(x.max(1))).numpy(), np.ones(300, np.float32))
