"""A column reduce's row run (heuristic.row_run): its lanes are counted in the bytes of the reduce's dtype and the ops each element runs,
against half of the renderer's registers, so int64 keys or a float max widen less than a float sum; numpy-equal results."""
import pathlib, sys
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.helpers import Context, prod
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen.opt import hand_coded_opts, OptOps
from tinygrad.codegen.opt.split_ranges import split_divided_ranges
from tinygrad.uop import Ops
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's test_opt is not on sys.path by itself
from test_opt import AVX2, AVX512

def _keys(x:Tensor) -> Tensor:  # int64 sort keys from floats: the value's bits above, its index below
  return x.bitcast(dtypes.int32).cast(dtypes.int64) * x.shape[-1] + Tensor.arange(x.shape[-1]).cast(dtypes.int64)

def _upcast_bytes(t:Tensor, renderer) -> tuple[int, int]:
  """(bytes of the accumulators the heuristic's upcasts make, bytes of half the renderer's vector registers)"""
  ast = split_divided_ranges(next(it.ast for it in create_schedule([t.uop])[0] if it.kind == "kernel" and it.ast.arg.name.startswith("r_")))
  with Context(THREADS=2): opts = hand_coded_opts(ast, renderer)
  itemsize = max(u.dtype.itemsize for u in ast.toposort() if u.op is Ops.REDUCE)
  return prod(o.amt for o in opts if o.op is OptOps.UPCAST) * itemsize, renderer.vector_bytes * renderer.vector_registers // 2

@pytest.mark.parametrize("renderer", [AVX512, AVX2], ids=["avx512", "avx2"])
def test_run_fits_registers(renderer):
  cases = [_keys(Tensor.empty(4096, 4096)).reshape(4096, 8, 512).min(-2), Tensor.empty(4096, 4096, dtype=dtypes.int64).max(0),
           Tensor.empty(4096, 4096).max(0), Tensor.empty(4096, 8, 512).min(-2), Tensor.empty(4096, 4096, dtype=dtypes.int32).max(0)]
  for t in cases:
    used, half = _upcast_bytes(t, renderer)
    assert used <= half, t
  # a float sum over loads (one add per element, from memory) still takes half the registers: a run of whole cache lines per row
  assert _upcast_bytes(Tensor.empty(4096, 4096).sum(0), renderer) == (renderer.vector_bytes * renderer.vector_registers // 2,) * 2
  # int64 lanes are twice a float's: AVX-512 widens a column max of int64 half as far as one of int32
  assert _upcast_bytes(Tensor.empty(4096, 4096, dtype=dtypes.int64).max(0), AVX512)[0] <= 1024
  assert _upcast_bytes(Tensor.empty(4096, 4096, dtype=dtypes.int32).max(0), AVX512)[0] == 1024

@pytest.mark.parametrize("dt", [np.float32, np.int32, np.int64])
@pytest.mark.parametrize("op", ["min", "max", "sum"])
def test_numpy(op, dt):
  x = (np.random.default_rng(0).standard_normal((64, 8, 512)) * 1000).astype(dt)
  np.testing.assert_allclose(getattr(Tensor(x), op)(-2).numpy(), getattr(x, op)(-2), rtol=1e-5)
  np.testing.assert_allclose(getattr(Tensor(x[0]), op)(0).numpy(), getattr(x[0], op)(0), rtol=1e-5)

def test_keys_numpy():
  x = np.random.default_rng(1).standard_normal((64, 4096), dtype=np.float32)
  keys = x.view(np.int32).astype(np.int64) * 4096 + np.arange(4096)
  np.testing.assert_array_equal(_keys(Tensor(x)).reshape(64, 8, 512).min(-2).numpy(), keys.reshape(64, 8, 512).min(-2))
