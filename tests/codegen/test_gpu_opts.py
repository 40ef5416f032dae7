"""GLOBAL, LOCAL and GROUP opts and the heuristic for targets with work items: output axes become the grid, the fastest one split into work
groups, a reduction with few outputs shared by the items of a group through LOCAL memory. Run on the PYTHON emulator (which executes work
groups item by item, meeting at barriers) and on OpenCL (PoCL where installed), checked against numpy."""
import pathlib, sys
import numpy as np
import pytest
from tinygrad.uop import Ops, AxisType
from tinygrad.dtype import AddrSpace
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import Opt, OptOps, OptError, apply_opts, hand_coded_opts
from tinygrad.renderer.python import PythonRenderer
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # --import-mode=importlib puts no test folder on sys.path
from test_opt import elementwise, row_reduce, full_sum, matmul, run_python, run_cpu

G, L, N, U, P, GR, GT = OptOps.GLOBAL, OptOps.LOCAL, OptOps.UNROLL, OptOps.UPCAST, OptOps.PADTO, OptOps.GROUP, OptOps.GROUPTOP

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
                                     (elementwise(3, 5), [Opt(G, 0, 3), Opt(G, 0, 5)]),  # no group size divides 5 (nor pads it cheaply)
                                     (elementwise(3, 1000), [Opt(G, 0, 3), Opt(G, 0, 1000), Opt(P, 1, 256), Opt(L, 1, 256)]),
                                     (full_sum(4096), [Opt(GR, 0, 256), Opt(N, 0, 4)]),
                                     # 1009 is prime: padded to 1024 (1.5% waste) for a group of 256
                                     (row_reduce(4, 1009), [Opt(G, 0, 4), Opt(P, 1, 256), Opt(GR, 1, 256), Opt(N, 1, 4)]),
                                     # enough rows to fill the grid by themselves: no group
                                     (row_reduce(16384, 8), [Opt(G, 0, 16384), Opt(L, 0, 256), Opt(N, 1, 4)])],
                         ids=["mm", "tiny", "padded", "sum", "prime", "tall"])
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

def run_cl(ast, ins, out_size):
  import numpy as np
  from tinygrad.device import Device
  dev = Device["CL"]
  spec = get_program(ast, dev.renderer)
  prg = dev.runtime(spec.name, dev.compiler.compile(spec.src))
  bufs = [dev.allocator.alloc(max(x.nbytes, 4)) for x in [np.zeros(out_size, np.float32), *ins]]
  for b, x in zip(bufs[1:], ins): dev.allocator._copyin(b, memoryview(x).cast("B"))
  gs, ls = spec.launch_dims({})
  prg(*bufs, global_size=gs, local_size=ls, wait=True)
  out = np.zeros(out_size, np.float32)
  dev.allocator._copyout(memoryview(out).cast("B"), bufs[0])
  return out

GROUP_CASES = [
  (full_sum(96), [Opt(GR, 0, 16)]), (full_sum(96), [Opt(GT, 0, 8), Opt(N, 0, 4)]), (full_sum(1000), [Opt(P, 0, 64), Opt(GR, 0, 64)]),
  (row_reduce(5, 57), [Opt(G, 0, 5), Opt(P, 1, 16), Opt(GR, 1, 16)]),
  (row_reduce(6, 40, Ops.MAX), [Opt(G, 0, 6), Opt(L, 0, 2), Opt(GT, 1, 8), Opt(N, 1, 5)]),
  # output axes left as loops: the group's LOCAL buffer is refilled each trip (a barrier before the store guards the last trip's reads)
  (row_reduce(6, 40), [Opt(U, 0, 3), Opt(GR, 1, 8), Opt(N, 1, 5)]), (row_reduce(3, 64), [Opt(GR, 1, 4), Opt(GT, 1, 4)]),
  (matmul(8, 16, 12), [Opt(G, 0, 8), Opt(G, 0, 16), Opt(L, 1, 4), Opt(U, 1, 2), Opt(GR, 2, 4)]),
  (matmul(7, 5, 9), [Opt(G, 0, 7), Opt(P, 0, 8), Opt(U, 0, 8), Opt(P, 1, 4), Opt(GT, 1, 4), Opt(N, 1, 3)]),
]
GROUP_PARAMS = [pytest.param(k, o, id=f"{k[0][0].arg.name}-{'+'.join(f'{x.op.name}{x.axis}x{x.amt}' for x in o)}") for k, o in GROUP_CASES]

@pytest.mark.parametrize("k, opts", GROUP_PARAMS)
@pytest.mark.parametrize("run", [run_python, run_cpu], ids=["PYTHON", "CPU"])
def test_group_opts_match_numpy(k, opts, run):
  # on the CPU (no work items) a GROUP axis is one more loop of its reduce
  (ast, ins), ref = k
  np.testing.assert_allclose(run(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-5, atol=1e-5)

@pytest.mark.parametrize("k, opts", GROUP_PARAMS)
def test_group_opts_match_numpy_on_cl(cl, k, opts):
  (ast, ins), ref = k
  np.testing.assert_allclose(run_cl(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-5, atol=1e-5)

def test_a_group_shares_one_buffer_and_barrier():
  # 4 rows upcast: the 4 lanes' partials share one LOCAL buffer (16 items x 4 lanes) and one barrier; the group ids are the local size
  (ast, _), _ = row_reduce(8, 64)
  spec = get_program(apply_opts(ast, [Opt(G, 0, 8), Opt(U, 0, 4), Opt(GR, 1, 16), Opt(N, 1, 2)]), PythonRenderer())
  local = [u for u in spec.uops if u.op is Ops.BUFFER and u.arg.addrspace is AddrSpace.LOCAL]
  assert spec.local_size == (16, 1, 1) and spec.global_size == (2, 1, 1)
  assert [u.arg.shape for u in local] == [(64,)] and sum(u.op is Ops.BARRIER for u in spec.uops) == 1
  # every item has the 4 results, the first one stores them: an in-place update (out[i] += sum) must not run once per item
  ifs = [u for u in spec.uops if u.op is Ops.IF]
  assert len(ifs) == 4 and all(i.src[0].op is Ops.CMPEQ and i.src[0].src[0].op is Ops.SPECIAL and i.src[0].src[0].arg == "lidx0" for i in ifs)

@pytest.mark.parametrize("opts, msg", [
  ([Opt(GR, 0, 2)], "GROUP splits a REDUCE axis, axis 0 is LOOP"),
  ([Opt(G, 0, 64), Opt(L, 0, 32), Opt(GR, 1, 16)], "a work group of 512 items \\(LOCAL x GROUP axes\\), at most 256"),
  ([Opt(GT, 1, 128), Opt(GR, 1, 4)], "a work group of 512 items"),
  # a partial per item and upcast lane: 64 lanes x 256 items x 4 bytes (16 lanes fit: 16 KiB)
  ([Opt(U, 0, 16), Opt(U, 0, 4), Opt(GR, 0, 256)], "the grouped reduces need 65536 bytes of LOCAL memory, at most 32768")])
def test_group_opts_that_do_not_fit(opts, msg):
  (ast, _), _ = row_reduce(64, 1024)
  with pytest.raises(OptError, match=msg): apply_opts(ast, opts)
  apply_opts(ast, [Opt(U, 0, 16), Opt(GR, 1, 256)])

@pytest.mark.parametrize("dev", ["PYTHON", "CL"])
def test_tensor_reductions_use_groups(dev, request):
  # the default heuristic groups these (few outputs): sums, a max and a mean with odd sizes, checked end to end
  import numpy as np
  from tinygrad import Tensor
  if dev == "CL": request.getfixturevalue("cl")
  n = 2000 if dev == "CL" else 300
  x = np.random.default_rng(3).standard_normal((3, n + 7)).astype(np.float32)
  t = Tensor(x, device=dev)
  np.testing.assert_allclose(t.sum().numpy(), x.sum(), rtol=1e-4)
  np.testing.assert_allclose(t.max(1).numpy(), x.max(1))
  np.testing.assert_allclose((t.exp() * 0.5).mean(1).numpy(), (np.exp(x) * 0.5).mean(1), rtol=1e-4)
  acc = Tensor([1.0, 2.0, 3.0], device=dev).contiguous().realize()
  acc.assign(acc + t.sum(1)).realize()
  np.testing.assert_allclose(acc.numpy(), np.array([1.0, 2.0, 3.0]) + x.sum(1), rtol=1e-4)
