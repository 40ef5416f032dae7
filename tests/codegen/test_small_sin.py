"""sin of an argument the kernel AST bounds (codegen/small_sin.py marks it SMALL; codegen/transcendental.py lowers it without
Payne-Hanek and the selects around it): which SINs are marked and the bounds behind them, and the lowered sin and cos in ulps against
numpy in float64 over the bounded range, bit for bit like the unmarked lowering, on every executing backend."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.uop.ops import UOp, Ops, graph_rewrite
from tinygrad.uop.symbolic import symbolic
from tinygrad.helpers import Context
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import small_sin
from tinygrad.codegen.small_sin import mark_small_sin, float_bounds
from tinygrad.codegen.transcendental import SMALL

def sin_kernel(t:Tensor) -> UOp:
  """the kernel computing t's SIN, simplified as lowering has it when it marks (an arange's index folds to the loop's range)"""
  (k,) = [it.ast for it in create_schedule([t.uop])[0] if it.kind == "kernel" and any(u.op is Ops.SIN for u in it.ast.toposort())]
  return graph_rewrite(k, symbolic)

def marked(t:Tensor) -> list:
  return [u.arg for u in mark_small_sin(sin_kernel(t)).toposort() if u.op is Ops.SIN]

def positions(start:int, n:int, step:float, device:str="CPU") -> Tensor:
  """start*step, (start+1)*step, ... computed in the kernel (an arange's integers times a constant): bounded by the AST"""
  return (Tensor.arange(n, device=device) + start).cast(dtypes.float32) * step

def test_which_are_marked():
  assert marked(Tensor.randn(8, 37)) == [SMALL]                        # cos(2*pi*u) of rand's u in [0, 1)
  assert marked(positions(-1000, 2000, 0.01).sin()) == [SMALL]
  assert marked(positions(-1000, 2000, 0.01).cos()) == [SMALL]         # sin(x/2) inside
  assert marked(positions(0, 1 << 20, 16.0).sin()) == [None]           # up to 2**24: past the bound
  loaded = Tensor.empty(2000)
  assert marked(loaded.sin()) == [None]                                # a value from memory: anything
  assert marked((positions(0, 2000, 0.01) * loaded).sin()) == [None]
  assert marked((positions(1, 2000, 0.01).reciprocal()).sin()) == [None]  # no bounds through a division
  assert marked(positions(0, 2000, 100.0).cast(dtypes.float16).sin()) == [None]  # past 65504 a half is inf: sin(inf) is NaN
  assert marked(positions(0, 2000, 10.0).cast(dtypes.float16).sin()) == [SMALL]

def test_shared_nodes_are_walked_once():
  x = positions(0, 64, 1e-12)
  for _ in range(40): x = x + x  # 2**40 paths to the arange, 41 nodes
  assert marked(x.sin()) == [SMALL]

def test_half_past_its_range_is_nan():
  out = positions(0, 2000, 100.0).cast(dtypes.float16).sin().numpy()
  assert np.isnan(out[656:]).all() and not np.isnan(out[:655]).any()  # 655 * 100 = 65500 is a half, 65600 rounds to inf

def test_bounds():
  bits = UOp.variable("bits", 0, 2**32 - 1, dtypes.uint32)
  mantissa = UOp(Ops.SHR, dtypes.uint32, (bits, UOp.const(dtypes.uint32, 9)))
  one_to_two = UOp(Ops.OR, dtypes.uint32, (mantissa, UOp.const(dtypes.uint32, 0x3F800000)))
  assert one_to_two._min_max == (0x3F800000, 0x3FFFFFFF)  # OR of ints that are not negative: tg-uop's bounds
  u = UOp(Ops.BITCAST, dtypes.float32, (one_to_two,))
  assert float_bounds(u) == (1.0, float(np.float32(2) - np.spacing(np.float32(1))))
  assert float_bounds(u * -3.0 + 1.0) == (1.0 - 3 * float(float_bounds(u)[1]), -2.0)
  assert float_bounds(UOp(Ops.BITCAST, dtypes.float32, (bits,))) is None  # negative floats, inf and NaN among those bits
  assert float_bounds(UOp.const(dtypes.float32, float("inf"))) is None and float_bounds(UOp.const(dtypes.float32, -2.5)) == (-2.5, -2.5)

def _ulps(out:np.ndarray, x:np.ndarray, fn:str) -> np.ndarray:
  ref = getattr(np, fn)(x.astype(np.float64))
  return np.abs(out.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)

@pytest.mark.parametrize("fn", ["sin", "cos"])
def test_accuracy_and_bits(device, fn, monkeypatch):
  n = 4_000 if device == "PYTHON" else 400_000
  # dense over [-10, 10), and spread over [0, 2**23)
  for start, step in ((-n // 2, np.float32(20 / n)), (0, np.float32((2**23 - 1) / n))):
    x = (np.arange(n, dtype=np.float32) + np.float32(start)) * step
    with Context(TRANSCENDENTAL=2):
      t = getattr(positions(start, n, float(step), device), fn)()
      assert marked(t) == [SMALL]
      out = t.numpy()
      monkeypatch.setattr(small_sin, "SMALL_BOUND", 0.0)  # nothing marked: the full reduction
      full = getattr(positions(start, n, float(step), device), fn)().numpy()
      monkeypatch.undo()
    # cos is 1 - 2*sin(x/2)**2: its error is sin's, relative to cos's value, so it is measured beside 1.0 where cos is near 0
    err = _ulps(out, x, fn) if fn == "sin" else np.abs(out.astype(np.float64) - np.cos(x.astype(np.float64))) / np.spacing(np.float32(1))
    assert err.max() <= (1.0 if fn == "sin" else 2.0), f"{fn}: {err.max():.3f} ulp at x={x[np.argmax(err)]!r}"
    assert np.array_equal(out.view(np.uint32), full.view(np.uint32))
