"""The gpudims pass: GLOBAL/LOCAL ranges become work-item ids (SPECIAL gidxN/lidxN) on renderers with work items, within the
renderer's limits (merged or split where they don't fit), and the program's launch grid is read off them; elsewhere they stay loops."""
import re
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, KernelInfo, Variable
from tinygrad.dtype import dtypes, AddrSpace
from tinygrad.codegen import get_program
from tinygrad.codegen.gpudims import fit_dims, workitem
from tinygrad.codegen.lowering import rewrite_to_program
from tinygrad.renderer.python import PythonRenderer
from tinygrad.renderer.cstyle import ClangRenderer
from tinygrad.runtime.ops_python import PythonProgram

pytestmark = pytest.mark.hcq_matrix  # also on the mock AMD and NV devices (tests/conftest.py)

def grid_kernel(*sizes:tuple[int, AxisType], name="grid") -> UOp:
  """out[flat] = flat over ranges of the given sizes and axis types (axis 0 slowest): every element says which index wrote it"""
  n = int(np.prod([s for s, _ in sizes]))
  out = UOp.param(0, dtypes.int, (n,))
  rngs = [UOp.range(s, i, t) for i, (s, t) in enumerate(sizes)]
  flat = UOp.const(dtypes.weakint, 0)
  for r, (s, _) in zip(rngs, sizes): flat = flat * s + r
  return out[flat].store(flat.cast(dtypes.int)).end(*rngs).sink(arg=KernelInfo(name=name))

def run_emulated(sink:UOp, renderer) -> tuple:
  """(program spec, output buffer) of the kernel rendered by `renderer` and run on the emulator over the spec's launch grid"""
  spec = get_program(sink, renderer)
  out = np.full(next(u for u in sink.toposort() if u.op is Ops.PARAM).arg.shape[0], -1, np.int32)
  buf = memoryview(bytearray(out.tobytes()))
  gs, ls = spec.launch_dims({})
  PythonProgram(spec.name, spec.src.encode())(buf, global_size=gs, local_size=ls)
  return spec, np.frombuffer(buf, np.int32)

def specials(sink:UOp) -> dict[str, int]: return {u.arg: u.src[0].arg for u in sink.toposort() if u.op is Ops.SPECIAL}

G, Lc, LOOP = AxisType.GLOBAL, AxisType.LOCAL, AxisType.LOOP

def test_ranges_become_work_items():
  sink = rewrite_to_program(grid_kernel((4, G), (8, Lc)), PythonRenderer())
  assert specials(sink) == {"gidx0": 4, "lidx0": 8}
  assert not [u for u in sink.toposort() if u.op in (Ops.RANGE, Ops.END)]  # an id is no loop: its END is gone too
  spec, out = run_emulated(grid_kernel((4, G), (8, Lc)), PythonRenderer())
  assert (spec.global_size, spec.local_size) == ((4, 1, 1), (8, 1, 1))
  np.testing.assert_array_equal(out, np.arange(32))

def test_other_ranges_stay_loops():
  # only GLOBAL/LOCAL axes become ids: the LOOP axis keeps its RANGE and an END that closes it alone
  sink = rewrite_to_program(grid_kernel((3, G), (5, LOOP)), PythonRenderer())
  assert specials(sink) == {"gidx0": 3}
  assert [u.arg for u in sink.toposort() if u.op is Ops.RANGE] == [(1, LOOP)]
  assert [len(u.src) for u in sink.toposort() if u.op is Ops.END] == [2]
  np.testing.assert_array_equal(run_emulated(grid_kernel((3, G), (5, LOOP)), PythonRenderer())[1], np.arange(15))

def test_fastest_axis_is_dim_0():
  # the last axis varies fastest: neighbouring items get neighbouring indices
  assert specials(rewrite_to_program(grid_kernel((2, G), (3, G), (5, Lc), (7, Lc)), PythonRenderer())) == \
         {"gidx0": 3, "gidx1": 2, "lidx0": 7, "lidx1": 5}

def test_without_work_items_they_stay_loops(device):
  # the CPU renderers have no work items: the same kernel runs its GLOBAL/LOCAL ranges as loops
  assert not specials(rewrite_to_program(grid_kernel((4, G), (8, Lc)), ClangRenderer()))
  assert get_program(grid_kernel((4, G), (8, Lc)), ClangRenderer()).global_size == (1, 1, 1)
  def kernel(out:UOp) -> UOp:
    g, lc = UOp.range(4, 0, G), UOp.range(8, 1, Lc)
    return out[g*8 + lc].store((g*8 + lc).cast(dtypes.int)).end(g, lc).sink(arg=KernelInfo(name="grid_loops"))
  out = Tensor.custom_kernel(Tensor.empty(32, dtype=dtypes.int, device=device), fxn=kernel)[0]
  np.testing.assert_array_equal(out.numpy(), np.arange(32))

# sizes fastest first -> (axes merged into each id group, the ids each group is made of)
@pytest.mark.parametrize("sizes, maxes, groups, pieces", [
  ([4, 5, 6], (8, 8, 8), [[0], [1], [2]], [[4], [5], [6]]),               # fits as it is
  ([2, 7, 5, 3], (16, 16, 16), [[0], [1], [2, 3]], [[2], [7], [15]]),     # four axes, three ids: two adjacent ones share an id
  ([2, 7, 5, 3], (16, 8, 8), [[0, 1], [2], [3]], [[14], [5], [3]]),       # ... the two that fit
  ([4, 4], (16, 2, 2), [[0, 1]], [[16]]),                                 # the second axis is too big for id 1: both share id 0
  ([48], (8, 8, 8), [[0]], [[8, 6]]),                                     # over the limit: split into factors over two ids
  ([5, 2, 3, 2], (8, 4, 4), [[0, 1, 2, 3]], [[5, 4, 3]]),                 # no merge fits: the flat index of all is split
])
def test_fit_dims(sizes, maxes, groups, pieces):
  assert fit_dims(sizes, maxes) == (groups, pieces)

@pytest.mark.parametrize("sizes, maxes", [([17], (8, 8, 8)), ([64, 64, 64], (8, 8, 8)), ([9, 9], (8, 8))])
def test_fit_dims_error_names_sizes_and_limits(sizes, maxes):
  with pytest.raises(RuntimeError, match=re.escape(f"sizes {sizes}") + ".*" + re.escape(f"at most {maxes}")): fit_dims(sizes, maxes)

class SmallGrid(PythonRenderer):
  global_max, local_max = (8, 4, 4), (4, 2, 2)

@pytest.mark.parametrize("sizes", [
  ((2, G), (3, G), (2, G), (5, G), (4, Lc)),  # four GLOBAL axes: two share an id, recovered by div/mod
  ((48, G), (2, Lc), (3, Lc)),                 # a GLOBAL axis of 48 over ids of at most 8: split over gidx0 and gidx1
  ((3, G), (8, Lc), (2, Lc)),                  # a LOCAL axis of 8 over ids of at most 4
  ((2, Lc), (2, Lc), (2, Lc), (2, Lc)),        # four LOCAL axes and no GLOBAL one
])
def test_merged_and_split_ids_compute_the_same(sizes):
  spec, out = run_emulated(grid_kernel(*sizes), SmallGrid())
  assert all(g <= m for g, m in zip(spec.global_size, SmallGrid.global_max)) and all(lc <= m for lc, m in zip(spec.local_size, SmallGrid.local_max))
  assert np.prod(spec.global_size) * np.prod(spec.local_size) == np.prod([s for s, _ in sizes])
  np.testing.assert_array_equal(out, np.arange(len(out)))  # every index written once, by the item that owns it

def test_split_sizes():
  spec = get_program(grid_kernel((48, G), (8, Lc)), SmallGrid())
  assert (spec.global_size, spec.local_size) == ((8, 3, 2), (4, 2, 1))

def test_symbolic_grid():
  n = Variable("n", 1, 64)
  out = UOp.param(0, dtypes.int, (64,))
  g = UOp.range(n, 0, G)
  spec = get_program(out[g].store(g.cast(dtypes.int)).end(g).sink(arg=KernelInfo(name="sym")), PythonRenderer())
  assert spec.launch_dims({"n": 5}) == ((5, 1, 1), (1, 1, 1)) and not spec.exact
  buf = memoryview(bytearray(np.full(64, -1, np.int32).tobytes()))
  PythonProgram(spec.name, spec.src.encode())(buf, vals=(5,), global_size=(5, 1, 1))
  np.testing.assert_array_equal(np.frombuffer(buf, np.int32)[:6], [0, 1, 2, 3, 4, -1])

def test_estimates_count_every_work_item():
  assert get_program(grid_kernel((4, G), (8, Lc)), PythonRenderer()).mem == get_program(grid_kernel((4, G), (8, Lc)), ClangRenderer()).mem == 32*4

def test_local_buffer_needs_shared_memory():
  class NoShared(PythonRenderer): has_shared = False
  out, smem = UOp.param(0, dtypes.float, (4,)), UOp.placeholder((4,), dtypes.float, 0, addrspace=AddrSpace.LOCAL)
  lc = UOp.range(4, 0, Lc)
  sink = out[lc].store(smem.after(smem[lc].store(1.0))[lc].load()).end(lc).sink(arg=KernelInfo(name="smem"))
  with pytest.raises(RuntimeError, match="NoShared has no memory shared by a work group"): get_program(sink, NoShared())
  assert get_program(sink, PythonRenderer()).local_size == (4, 1, 1)

@pytest.mark.parametrize("name, kind", [("gidx2", ("gidx", 2)), ("lidx0", ("lidx", 0)), ("idx1", ("idx", 1))])
def test_workitem_names(name, kind): assert workitem(name) == kind

@pytest.mark.parametrize("name", ["lane0", "gidx3", "g0", "lidx", "gidx0x"])
def test_workitem_rejects_other_names(name):
  with pytest.raises(ValueError, match="is no work item"): workitem(name)
