"""A cat or stack of many inputs is pads and adds: each input's load gated to its part of the output. The heuristic never tiles an axis
those gates move along (each lane would read every input), the peel (codegen/opt/peel.py) cuts the kernel into one piece per input, each
reading its own input ungated, and its work and the kernel's size grow linearly with the inputs; values against numpy."""
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.uop import Ops, AxisType
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program
import tinygrad.codegen.lowering as lowering
from tinygrad.codegen.opt.peel import SHARED_PIECES_MAX
from tinygrad.schedule import cat_pieces

rng = np.random.default_rng(3)

def _peeled(t:Tensor, monkeypatch) -> tuple:
  """(the kernel as the peel left it, its program) of t's one kernel (a cat the scheduler would cut into a kernel per piece too)"""
  seen, peel = [], lowering.peel_gates
  monkeypatch.setattr(cat_pieces, "PIECES_MIN", 1 << 30)
  monkeypatch.setattr(lowering, "peel_gates", lambda sink: seen.append(peel(sink)) or seen[-1])
  items, _ = create_schedule([t.uop])
  (ast,) = [it.ast for it in items if it.kind == "kernel"]
  prg = get_program(ast, Device["CPU"].renderer)
  return seen[0], prg

def _pieces(x) -> list:
  if x.op in (Ops.SINK, Ops.GROUP): return [p for s in x.src for p in _pieces(s)]
  return _pieces(x.src[0]) if x.op is Ops.END and x.src[0].op is Ops.GROUP else [x]

def _inputs(n:int, shape=(8, 16)) -> tuple[list[Tensor], list[np.ndarray]]:
  xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]
  return [Tensor(x).realize() for x in xs], xs

@pytest.mark.parametrize("dim", [0, 1])
def test_stack_reads_each_input_in_a_piece_of_its_own(dim, monkeypatch):
  # the new axis gates every input: tiled along it (3 lanes of a stack of 12), each lane did all 12 gated loads, a select each
  ts, xs = _inputs(12)
  peeled, prg = _peeled(Tensor.stack(*ts, dim=dim), monkeypatch)
  assert len(_pieces(peeled)) == 12
  assert not any(u.op is Ops.WHERE for u in prg.uops) and " select " not in prg.src
  np.testing.assert_array_equal(Tensor.stack(*ts, dim=dim).numpy(), np.stack(xs, dim))

def test_cat_of_many_peels_in_linear_size(monkeypatch):
  # each piece held every input's gate and where before: the peel's result grew with the square of the inputs (909 nodes for 12 inputs,
  # 3260 for 24), and the passes after it with it (a cat of 100 along the last axis: minutes to its first run)
  sizes = []
  for n in (12, 24):
    ts, xs = _inputs(n)
    peeled, _ = _peeled(Tensor.cat(*ts, dim=1), monkeypatch)
    monkeypatch.undo()
    assert len(_pieces(peeled)) == n
    sizes.append(len(peeled.toposort()))
    np.testing.assert_array_equal(Tensor.cat(*ts, dim=1).numpy(), np.concatenate(xs, 1))
  assert sizes[1] < 2.3 * sizes[0], sizes

def test_many_pieces_share_only_the_thread_axis(monkeypatch):
  # each input's piece loops over the rows itself: inside one shared row loop, the pieces were one loop body of thousands of accesses,
  # whose dependences LLVM's loop passes check pairwise (30 inputs: 20 s to compile)
  n = SHARED_PIECES_MAX + 4
  ts, xs = _inputs(n, (64, 64))
  peeled, _ = _peeled(Tensor.cat(*ts, dim=1), monkeypatch)
  assert len(_pieces(peeled)) == n
  around = {r.arg[1] for u in peeled.toposort() if u.op is Ops.END and u.src[0].op is Ops.GROUP for r in u.ended_ranges}
  assert around <= {AxisType.THREAD}
  np.testing.assert_array_equal(Tensor.cat(*ts, dim=1).numpy(), np.concatenate(xs, 1))

@pytest.mark.parametrize("dim", [0, 1, 2])
def test_stack_and_cat_of_many_match_numpy(dim):
  ts, xs = _inputs(40, (5, 7, 6))
  np.testing.assert_array_equal(Tensor.cat(*ts, dim=dim).numpy(), np.concatenate(xs, dim))
  np.testing.assert_array_equal(Tensor.stack(*ts, dim=dim).numpy(), np.stack(xs, dim))

def test_cat_of_many_on_the_emulator():
  xs = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(12)]
  ts = [Tensor(x, device="PYTHON") for x in xs]
  np.testing.assert_array_equal(Tensor.cat(*ts, dim=1).numpy(), np.concatenate(xs, 1))
  np.testing.assert_array_equal(Tensor.stack(*ts).numpy(), np.stack(xs))

def test_stack_names_unequal_shapes():
  # it was cat's message, about the shapes with the new axis added: "cat needs equal shapes outside dim 0, got (1, 2) and (1, 3)"
  with pytest.raises(ValueError, match=r"stack needs tensors of equal shape, got \(2,\) and \(3,\)"): Tensor.stack(Tensor([1, 2]), Tensor([1, 2, 3]))
  with pytest.raises(ValueError, match=r"equal shape, got \(2,\) and \(1, 2\)"): Tensor.stack(Tensor([1, 2]), Tensor([[1, 2]]))
