"""UOp.loop: a bound-less loop header, closed by END(body, loop, cond) that goes round again while cond holds (do-while)."""
import pytest
from tinygrad.uop.ops import UOp, Ops, UPat, PatternMatcher, graph_rewrite
from tinygrad.uop.spec import check_uop, check_graph, SpecError
from tinygrad.dtype import dtypes
from tinygrad.helpers import Context

@pytest.fixture(autouse=True)
def _no_construction_checks():
  with Context(SPEC=0): yield  # these tests build invalid nodes on purpose and check them explicitly

acc = UOp.param(0, dtypes.int32, (1,), name="acc")

def counting_loop(axis=0):
  """acc[0] += 1 while acc[0] < 10: the condition reads the value the body just stored"""
  loop = UOp.loop(axis)
  cur = acc.after(loop).index(0).load()
  body = acc.index(0).store(cur + 1)
  return loop, body, acc.after(body).index(0).load() < 10

def test_loop_node():
  loop = UOp.loop(3)
  assert loop.op is Ops.RANGE and loop.dtype is dtypes.void and loop.src == () and loop.arg[0] == 3 and loop is UOp.loop(3)
  assert loop._shape is None and loop.render() == "loop3" and loop is not UOp.range(4, 3)

def test_loop_bounds_are_unknown():
  # no induction variable: nothing bounds a loop's "value", so it gets the (void) dtype's full range, unlike a RANGE
  loop = UOp.loop(0)
  assert (loop.vmin, loop.vmax) == (-(2**63), 2**63 - 1) and (UOp.range(8, 0).vmin, UOp.range(8, 0).vmax) == (0, 7)

def test_end_with_loop_and_cond_is_accepted():
  loop, body, cond = counting_loop()
  end = body.end(loop, cond)
  assert end.op is Ops.END and end.src == (body, loop, cond) and end.ended_ranges == (loop,)
  check_uop(end)
  for stage in (None, "kernel", "program"): check_graph(end.sink(), stage)
  assert UOp(Ops.END, dtypes.void, (loop, cond)).op is Ops.END and check_uop(UOp(Ops.END, dtypes.void, (loop, cond))) is None  # linear form

def test_end_with_loop_without_cond_is_rejected():
  loop, body, _ = counting_loop()
  with pytest.raises(SpecError, match=r"END\(body, loop, bool condition\)"): check_uop(body.end(loop))
  with pytest.raises(SpecError, match="END"): check_uop(UOp(Ops.END, dtypes.void, (loop,)))

def test_end_with_a_non_bool_cond_is_rejected():
  loop, body, cond = counting_loop()
  for bad in [acc.index(0).load(), UOp.const(dtypes.int32, 1), UOp.range(4, 1)]:
    with pytest.raises(SpecError, match="END"): check_uop(body.end(loop, bad))

def test_loop_closes_alone():
  loop, body, cond = counting_loop()
  r = UOp.range(4, 1)
  for bad in [body.end(loop, cond, cond), body.end(r, loop, cond), body.end(loop, cond, r)]:
    with pytest.raises(SpecError, match="END"): check_uop(bad)
  check_uop(body.end(r))  # a counted RANGE needs no condition

def test_spec2_rejects_at_construction():
  loop, body, cond = counting_loop(5)
  with Context(SPEC=2):
    assert body.end(loop, cond).src[2] is cond
    with pytest.raises(SpecError, match=r"\[construction\] END"): body.end(UOp.loop(6))

def test_rewrites_keep_loops_intact():
  loop, body, cond = counting_loop()
  prog = body.end(loop, cond).sink()
  with Context(SPEC=1):
    assert prog.simplify() is prog  # nothing about the loop folds: its condition depends on memory
    bump = PatternMatcher([(UPat(Ops.CONST, dtypes.int32, arg=10), lambda: UOp.const(dtypes.int32, 20))])
    out = graph_rewrite(prog, bump, name="kernel")
  assert out.src[0].src[2].src[1].arg == 20 and out.src[0].src[1] is loop
