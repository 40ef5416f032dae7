"""GLOBAL and LOCAL opts and the heuristic for targets with work items: output axes become the grid, the fastest one split into work
groups. Run on the PYTHON emulator (which executes work groups item by item), checked against numpy."""
import pathlib, sys
import numpy as np
import pytest
from tinygrad.uop import AxisType
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import Opt, OptOps, OptError, apply_opts, hand_coded_opts
from tinygrad.renderer.python import PythonRenderer
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # --import-mode=importlib puts no test folder on sys.path
from test_opt import elementwise, row_reduce, full_sum, matmul, run_python

G, L, N = OptOps.GLOBAL, OptOps.LOCAL, OptOps.UNROLL

@pytest.mark.parametrize("k, opts, grid", [
  (elementwise(6, 24), [Opt(G, 0, 6), Opt(G, 0, 24), Opt(L, 1, 8)], ((3, 6, 1), (8, 1, 1))),
  (matmul(8, 16, 12), [Opt(G, 0, 8), Opt(G, 0, 16), Opt(L, 1, 16), Opt(N, 1, 4)], ((8, 1, 1), (16, 1, 1))),
  (row_reduce(12, 40), [Opt(G, 0, 12), Opt(L, 0, 4)], ((3, 1, 1), (4, 1, 1)))], ids=["ew", "mm", "red"])
def test_grid_opts_match_numpy(k, opts, grid):
  (ast, ins), ref = k
  ast = apply_opts(ast, opts)
  assert (get_program(ast, PythonRenderer()).global_size, get_program(ast, PythonRenderer()).local_size) == grid
  np.testing.assert_allclose(run_python(ast, ins, ref(*ins).size), ref(*ins), rtol=1e-5, atol=1e-5)

@pytest.mark.parametrize("k, want", [(matmul(64, 96, 40), [Opt(G, 0, 64), Opt(G, 0, 96), Opt(L, 1, 32), Opt(N, 2, 4)]),
                                     (elementwise(3, 5), [Opt(G, 0, 3), Opt(G, 0, 5)]),  # no group size divides 5
                                     (full_sum(4096), [Opt(N, 0, 4)])], ids=["mm", "tiny", "sum"])
def test_heuristic_makes_a_grid(k, want):
  (ast, ins), ref = k
  assert hand_coded_opts(ast, PythonRenderer()) == want
  np.testing.assert_allclose(run_python(ast, ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-4)

def test_hand_laid_grids_are_left_alone():
  (ast, _), _ = elementwise(6, 24)
  assert hand_coded_opts(apply_opts(ast, [Opt(G, 0, 6)]), PythonRenderer()) == []

@pytest.mark.parametrize("opts, msg", [([Opt(G, 0, 3)], "amount 6 \\(the axis size\\)"), ([Opt(L, 0, 2)], "LOCAL splits a GLOBAL axis"),
                                       ([Opt(G, 1, 40)], "GLOBAL splits a LOOP/GLOBAL axis")])
def test_grid_opts_that_do_not_fit(opts, msg):
  (ast, _), _ = row_reduce(6, 40)
  with pytest.raises(OptError, match=msg): apply_opts(ast, opts)

def test_a_store_outside_the_axis_cannot_be_a_grid():
  from tinygrad.uop.ops import UOp, KernelInfo
  from tinygrad.dtype import dtypes
  out = UOp.param(0, dtypes.float, (9,))
  i = UOp.range(8, 0)
  ast = UOp.sink(out[i].store(1.0).end(i), out[8].store(2.0), arg=KernelInfo(name="two"))
  with pytest.raises(OptError, match="must enclose every store"): apply_opts(ast, [Opt(G, 0, 8)])
  assert hand_coded_opts(ast, PythonRenderer()) == [] and all(r.arg[1] is AxisType.LOOP for r in ast.toposort() if r.op.name == "RANGE")
