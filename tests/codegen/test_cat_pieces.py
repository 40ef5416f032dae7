"""A cat of many pieces, each one aligned run of the output's memory (schedule/cat_pieces.py), is a kernel per piece writing into a view
of the output: pieces of one shape share one program (one compile, where one kernel for all was N inputs' worth of code). An assign into
one aligned run of a buffer likewise. Values against numpy; the schedule's items counted."""
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, dtypes
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.engine import realize
from tinygrad.schedule.cat_pieces import PIECES_MIN

rng = np.random.default_rng(5)

def _kernels(t:Tensor) -> tuple[list, list]:
  """(kernel ASTs, view items) of t's schedule"""
  items, _ = create_schedule([t.uop])
  return [it.ast for it in items if it.kind == "kernel"], [it for it in items if it.kind == "view"]

def _inputs(n:int, shape=(8, 16)):
  xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]
  return [Tensor(x).realize() for x in xs], xs

def test_stack_is_one_program_for_every_piece():
  ts, xs = _inputs(12)
  asts, views = _kernels(Tensor.stack(*ts))
  assert len(asts) == 12 and len(set(asts)) == 1, "equal pieces share one AST (no offset in it)"
  assert sorted(v.offset for v in views) == [i * 8 * 16 * 4 for i in range(12)]
  np.testing.assert_array_equal(Tensor.stack(*ts).numpy(), np.stack(xs))

def test_cat_of_computed_pieces_of_several_lengths():
  lengths = [1, 3, 2, 3, 1, 4, 2, 3, 1]  # rows of 16 floats: every piece starts on a 64-byte boundary
  xs = [rng.standard_normal((n, 16)).astype(np.float32) for n in lengths]
  ts = [Tensor(x).realize() for x in xs]
  out = Tensor.cat(*[t * 2 + 1 for t in ts])
  asts, _ = _kernels(out)
  assert len(asts) == len(lengths) and len(set(asts)) == len(set(lengths))
  np.testing.assert_allclose(out.numpy(), np.concatenate([x * 2 + 1 for x in xs]), rtol=1e-6)

@pytest.mark.parametrize("case", ["along a later axis", "unaligned pieces", "few pieces"])
def test_other_cats_stay_one_kernel(case):
  if case == "along a later axis": ts, xs, dim = *_inputs(12), 1  # a piece is a strided window of the output, no run of it
  elif case == "unaligned pieces": ts, xs, dim = *_inputs(12, (3, 5)), 0  # 60-byte pieces: views off the kernels' alignment
  else: ts, xs, dim = *_inputs(PIECES_MIN - 1), 0
  asts, views = _kernels(Tensor.cat(*ts, dim=dim))
  assert len(asts) == 1 and not views
  np.testing.assert_array_equal(Tensor.cat(*ts, dim=dim).numpy(), np.concatenate(xs, dim))

def test_leading_axes_of_size_one_and_an_empty_piece():
  xs = [rng.standard_normal((1, n, 16)).astype(np.float32) for n in (2, 0, 3, 1, 2, 2, 1, 4, 1)]
  out = Tensor.cat(*[Tensor(x) for x in xs], dim=1)
  asts, _ = _kernels(out)
  assert len(asts) == 8  # the empty piece writes nothing
  np.testing.assert_array_equal(out.numpy(), np.concatenate(xs, 1))

def test_bool_and_int_pieces():
  bs = [rng.random((4, 16)) > 0.5 for _ in range(10)]
  np.testing.assert_array_equal(Tensor.stack(*[Tensor(b) for b in bs]).numpy(), np.stack(bs))
  ints = [rng.integers(-9, 9, (16,)).astype(np.int32) for _ in range(10)]
  out = Tensor.stack(*[Tensor(i) for i in ints]).cast(dtypes.int64) * 3
  np.testing.assert_array_equal(out.numpy(), np.stack(ints).astype(np.int64) * 3)

def test_a_piece_realized_with_the_cat_is_read_from_its_buffer():
  ts, xs = _inputs(10)
  first = (ts[0].exp() * 3).contiguous()
  out = Tensor.stack(first, *ts[1:])
  Tensor.realize(out, first)
  np.testing.assert_allclose(first.numpy(), np.exp(xs[0]) * 3, rtol=1e-6)
  np.testing.assert_allclose(out.numpy(), np.stack([np.exp(xs[0]) * 3, *xs[1:]]), rtol=1e-6)

def test_under_tinyjit_each_call_writes_its_own_output():
  @TinyJit
  def f(*ts): return Tensor.stack(*[t + 1 for t in ts]).realize()
  for _ in range(4):
    ts, xs = _inputs(9)
    np.testing.assert_allclose(f(*ts).numpy(), np.stack(xs) + 1, rtol=1e-6)

def test_gradient_through_a_stack_of_pieces():
  ts, xs = _inputs(9)
  for t in ts: t.requires_grad_()
  w = rng.standard_normal((9, 8, 16)).astype(np.float32)
  (Tensor.stack(*ts) * Tensor(w)).sum().backward()
  for i, t in enumerate(ts): np.testing.assert_allclose(t.grad.numpy(), w[i], rtol=1e-6)

# *** an assign into one aligned run of a buffer writes a view of its own: the same program for every run ***

def _filled(n:int, shape=(8, 16), value=lambda out, j, t: t, start=np.zeros) -> tuple[Tensor, list[np.ndarray], list, list]:
  """out[j].assign(value(out, j, x_j)) for n inputs x_j, out holding `start` before: out, the x_j, and the kernel ASTs and view items
  the assigns ran"""
  ts, xs = _inputs(n, shape)
  out = Tensor(start((n, *shape)).astype(np.float32)).realize()
  realize.capturing = ran = []
  try:
    for j, t in enumerate(ts): out[j].assign(value(out, j, t))
  finally: realize.capturing = None
  return out, xs, [it.ast for it, *_ in ran if it.kind == "kernel"], [it for it, *_ in ran if it.kind == "view"]

def test_assigns_into_rows_share_one_program():
  out, xs, asts, views = _filled(10)
  assert len(asts) == 10 and len(set(asts)) == 1 and len(views) == 10
  np.testing.assert_array_equal(out.numpy(), np.stack(xs))

def test_an_assign_that_reads_its_buffer_writes_through_it():
  # out[j] = out[j] * 2 + x_j: the value reads the buffer it is written into, so no separate (noalias) view of it
  out, xs, _, views = _filled(6, value=lambda out, j, t: out[j] * 2 + t, start=lambda shape: np.full(shape, 0.5))
  assert not views
  np.testing.assert_allclose(out.numpy(), 0.5 * 2 + np.stack(xs), rtol=1e-6)

def test_unaligned_rows_are_assigned_in_place():
  out, xs, asts, views = _filled(10, (3,))  # 12-byte rows: only row 0 starts on the kernels' alignment, the others write in place
  assert len(asts) == 10 and [v.offset for v in views] == [0]
  np.testing.assert_array_equal(out.numpy(), np.stack(xs))

def test_assigns_into_rows_under_tinyjit():
  out = Tensor.zeros(6, 8, 16).contiguous().realize()
  @TinyJit
  def f(*ts):
    for j, t in enumerate(ts): out[j].assign(t * 3)
    return out.realize()
  for _ in range(4):
    ts, xs = _inputs(6)
    np.testing.assert_allclose(f(*ts).numpy(), np.stack(xs) * 3, rtol=1e-6)
