"""OVERLAP (codegen/opt/overlap.py): an output axis that the tile's amount does not divide runs its last block shifted back over the one
before it, ungated; the results against numpy on the CPU and on the PYTHON emulator (which checks every index it stores to), and the
kernels where writing an element twice would be wrong refuse it."""
import pathlib, sys
import numpy as np
import pytest
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, KernelInfo
from tinygrad.dtype import dtypes
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import Opt, OptOps, OptError, apply_opts
from tinygrad.renderer.python import PythonRenderer
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's test_opt is not on sys.path by itself
from test_opt import kernel, elementwise, row_reduce, run_cpu, run_python

O, U, N, T = OptOps.OVERLAP, OptOps.UPCAST, OptOps.UNROLL, OptOps.THREAD

def rows_reduced(h:int, w:int, k:int):
  """out[i, j] = sum over r of a[i, j + r]: a reduce whose stored axis j is walked with stride 1 (a 1-D conv's row)"""
  def body(out, a):
    i, j, r = UOp.range(h, 0), UOp.range(w, 1), UOp.range(k, 2, AxisType.REDUCE)
    return i*w + j, a[i*(w + k - 1) + j + r].load().reduce(r, op=Ops.ADD), (i, j)
  def ref(a):
    x = a.reshape(h, w + k - 1)
    return sum(x[:, r:r + w] for r in range(k)).ravel()
  return kernel((h, w, k), body, 1, [h*(w + k - 1)], h*w, "rowsum"), ref

@pytest.mark.parametrize("run", [run_cpu, run_python], ids=["CPU", "PYTHON"])
@pytest.mark.parametrize("make, opts", [
  (lambda: elementwise(5, 57), [Opt(O, 1, 16), Opt(U, 1, 16)]),
  (lambda: elementwise(3, 20), [Opt(O, 1, 16), Opt(U, 1, 16), Opt(T, 0, 3)]),
  (lambda: rows_reduced(4, 28, 3), [Opt(O, 1, 16), Opt(U, 1, 16), Opt(U, 1, 2)]),
  (lambda: rows_reduced(6, 19, 5), [Opt(O, 1, 8), Opt(U, 1, 8), Opt(U, 0, 2), Opt(N, 2, 5)])], ids=["57-by-16", "threads", "28-whole", "19-by-8"])
def test_overlap_matches_numpy(make, opts, run):
  (ast, ins), ref = make()
  opt = apply_opts(ast, opts)
  want = ref(*ins)
  np.testing.assert_allclose(run(opt, ins, want.size), want, rtol=1e-5, atol=1e-5)

def test_overlap_has_no_gates():
  # PADTO's last block of a row of 57 gates 7 of its 16 stores (test_opt.test_padded_stores_are_gated); shifted back to columns 41-56,
  # every block stores 16 lanes ungated, the last one's first 7 again
  (ast, _), _ = elementwise(5, 57)
  spec = get_program(apply_opts(ast, [Opt(O, 1, 16), Opt(U, 1, 16)]), PythonRenderer())
  assert not any(u.op is Ops.IF for u in spec.uops) and sum(u.op is Ops.STORE for u in spec.uops) == 16
  assert not any(u.op in (Ops.LOAD, Ops.STORE) and len(u.src) == 3 for u in spec.uops)

def test_overlap_refusals():
  (ast, _), _ = elementwise(5, 57)
  with pytest.raises(OptError, match="does not divide the axis size 57"): apply_opts(ast, [Opt(O, 1, 64)])
  with pytest.raises(OptError, match="OVERLAP splits a LOOP/GLOBAL axis, axis 1 is REDUCE"): apply_opts(row_reduce(3, 40)[0][0], [Opt(O, 1, 16)])
  # out[j] += a[j]: the overlapping elements would be added twice
  out, a, j = UOp.param(0, dtypes.float, (20,)), UOp.param(1, dtypes.float, (20,)), UOp.range(20, 0)
  acc = out[j].store(out[j].load() + a[j].load()).end(j).sink(arg=KernelInfo(name="acc"))
  with pytest.raises(OptError, match="reads a buffer it stores to"): apply_opts(acc, [Opt(O, 0, 16)])
