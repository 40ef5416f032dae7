"""Runs of gated loads in the LLVM renderer (llvm_masked_loads.py): the lanes of one buffer's read under one gate address off the first
lane's selected pointer, only within the buffer and only inside one block. Oracles: numpy (hand-built programs on LLVM and the PYTHON
emulator, and cats/pads through Tensor), hand-written IR lines."""
import re
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes
from tinygrad.renderer.llvmir import LLVMRenderer
from tinygrad.renderer.llvm_masked_loads import gated_runs
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program
from linprog import Prog, NP, run

def cat_prog(dt, trips_a:int, trips_b:int, lanes:int=4, b_size:int|None=None, idx_dt=dtypes.int32) -> Prog:
  """out = a ++ b in trips of `lanes` elements: a's lanes read under r < trips_a, b's under trips_a <= r (the lanes of a cat's upcast)"""
  p, n = Prog(), (trips_a + trips_b) * lanes
  out, a, b = p.param(0, dt, n), p.param(1, dt, trips_a * lanes), p.param(2, dt, b_size or trips_b * lanes)
  r = p.range(trips_a + trips_b, 0, idx_dt)
  base = p.alu(Ops.MUL, r, lanes)
  in_a, in_b = p.alu(Ops.CMPLT, r, trips_a), p.alu(Ops.CMPLT, trips_a - 1, r)
  base_b = p.alu(Ops.ADD, base, -trips_a * lanes)
  for k in range(lanes):
    va = p.load(a, base if k == 0 else p.alu(Ops.ADD, base, k), 0, gate=in_a)
    vb = p.load(b, base_b if k == 0 else p.alu(Ops.ADD, base, k - trips_a * lanes), 0, gate=in_b)
    p.store(out, base if k == 0 else p.alu(Ops.ADD, base, k), p.alu(Ops.ADD if dt is not dtypes.bool else Ops.OR, va, vb))
  p.end(r)
  return p

def test_golden_run_addresses():
  ir = LLVMRenderer().render("k", cat_prog(dtypes.float32, 2, 3).uops)
  heads = re.findall(r"(%v\d+)\.p = select i1 (%v\d+), ptr %v\d+, ptr (%data\d)", ir)
  assert [d for _, _, d in heads] == ["%data1", "%data2"]  # one address select per source, falling back to its buffer's start
  for head, _, _ in heads:  # the other 3 lanes: the head's pointer plus their offset, no select of their own
    assert [int(k) for k in re.findall(rf"= getelementptr inbounds float, ptr {head}\.p, i32 (\d+)", ir)] == [1, 2, 3]
  assert ir.count("select i1") == 2 + 8  # 2 address selects, a value select per lane

@pytest.mark.parametrize("target", ["LLVM", "PYTHON"])
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.int32, dtypes.int8, dtypes.float16, dtypes.bool, dtypes.int64])
def test_cat_program_matches_numpy(target, dt):
  rng = np.random.default_rng(0)
  a, b = (rng.integers(0, 100, n).astype(NP[dt]) for n in (3 * 4, 5 * 4))
  out, *_ = run(target, cat_prog(dt, 3, 5), np.zeros(32, NP[dt]), a, b)
  np.testing.assert_array_equal(out, np.concatenate([a, b]))

def test_run_offset_in_the_index_type():  # a buffer past 2**31 elements has 64-bit indices, and offsets as large
  ir = LLVMRenderer().render("k", cat_prog(dtypes.float32, 2, 3, idx_dt=dtypes.int64).uops)
  assert len(re.findall(r"= getelementptr inbounds float, ptr %v\d+\.p, i64 [123]\n", ir)) == 6
  a, b = np.arange(8, dtype=np.float32), np.arange(12, dtype=np.float32) + 100
  out, *_ = run("LLVM", cat_prog(dtypes.float32, 2, 3, idx_dt=dtypes.int64), np.zeros(20, np.float32), a, b)
  np.testing.assert_array_equal(out, np.concatenate([a, b]))

def test_run_stays_inside_the_buffer():
  # b holds 2 elements and its gate is never true: the lanes 2 and 3 past the first would fall back past its end, so they keep their own
  # select (to the buffer's start)
  p = cat_prog(dtypes.float32, 3, 0, b_size=2)
  runs = gated_runs(p.uops)
  b_loads = [u for u in p.uops if u.op is Ops.LOAD and u.src[0].src[0].arg.slot == 2]
  assert [runs[u][1] if u in runs else None for u in b_loads] == [None, 1, None, None]
  a = np.arange(12, dtype=np.float32)
  out, *_ = run("LLVM", p, np.zeros(12, np.float32), a, np.full(2, 7, np.float32))
  np.testing.assert_array_equal(out, a)

def test_no_run_across_blocks_or_gates():
  p = Prog()
  out, a = p.param(0, dtypes.float32, 8), p.param(1, dtypes.float32, 8)
  r = p.range(2, 0)
  g, h = p.alu(Ops.CMPLT, r, 1), p.alu(Ops.CMPLT, r, 2)
  base = p.alu(Ops.MUL, r, 4)
  first = p.load(a, base, 0.0, gate=g)
  other_gate = p.load(a, p.alu(Ops.ADD, base, 1), 0.0, gate=h)  # same buffer and base, another gate
  same = p.load(a, p.alu(Ops.ADD, base, 2), 0.0, gate=g)
  p.store(out, base, p.alu(Ops.ADD, p.alu(Ops.ADD, first, other_gate), same))
  i = p.if_(g)
  after_if = p.load(a, p.alu(Ops.ADD, base, 3), 0.0, gate=g)  # inside the IF's block: not joined to a run begun before it
  p.store(out, p.alu(Ops.ADD, base, 1), after_if)
  p.endif(i)
  p.end(r)
  assert gated_runs(p.uops) == {same: (first, 2)}
  x = np.arange(8, dtype=np.float32)
  got, *_ = run("LLVM", p, np.zeros(8, np.float32), x)
  want = np.zeros(8, np.float32)
  want[0], want[1] = x[0] + x[1] + x[2], x[3]  # trip 0: every gate holds; trip 1: g false (0 + x[5] + 0 stored at 4), no IF
  want[4] = x[5]
  np.testing.assert_array_equal(got, want)

def _sources(t:Tensor) -> list[str]:
  items, _ = create_schedule([t.uop])
  return [get_program(it.ast, Device["CPU"].renderer).src for it in items if it.kind == "kernel"]

CASES = [  # (shapes, axis)
  (((64, 40), (64, 24)), 1), (((33, 7), (33, 13)), 1), (((64, 3), (64, 1)), 1), (((5, 19), (3, 19), (2, 19)), 0),
  (((1, 8), (7, 8)), 0), (((2,), (1,)), 0), (((17, 2048), (17, 2047)), 1)]

@pytest.mark.parametrize("shapes,axis", CASES)
@pytest.mark.parametrize("dt", [np.float32, np.int32, np.int8, np.float16, np.bool_])
def test_tensor_cat_matches_numpy(shapes, axis, dt):
  rng = np.random.default_rng(len(shapes))
  xs = [(rng.integers(0, 100, s) % (2 if dt is np.bool_ else 100)).astype(dt) for s in shapes]
  ts = [Tensor(x) for x in xs]
  np.testing.assert_array_equal(ts[0].cat(*ts[1:], dim=axis).numpy(), np.concatenate(xs, axis))

@pytest.mark.parametrize("pad", [((8, 8), (8, 8)), ((0, 0), (3, 5)), ((1, 2), (0, 0)), ((0, 0), (13, 0))])
@pytest.mark.parametrize("dt", [np.float32, np.int32, np.uint8])
def test_tensor_pad_matches_numpy(pad, dt):
  x = np.arange(37 * 29).reshape(37, 29).astype(dt)
  np.testing.assert_array_equal(Tensor(x).pad(pad).add(1).numpy(), np.pad(x, pad) + dt(1))

def test_cat_kernel_renders_runs():
  # summed across the cat's axis: its gates move along the reduce, which no peel cuts (a cat alone is cut into one loop per input,
  # codegen/opt/peel.py, and reads no gated load)
  a, b = Tensor(np.ones((64, 40), np.float32)).realize(), Tensor(np.ones((64, 24), np.float32)).realize()
  src = "\n".join(_sources(a.cat(b, dim=1).sum(1)))
  assert re.search(r"getelementptr inbounds float, ptr %v\d+\.p, i32 1\b", src)

def test_run_alignment_holds_for_the_fallback():
  # a run from base+4 (base a multiple of 8): the lane at base+8 is 32-byte aligned, but its fallback, 4 elements past the buffer's
  # start, only 16
  p = Prog()
  out, a = p.param(0, dtypes.float32, 16), p.param(1, dtypes.float32, 16)
  r = p.range(2, 0)
  g, base = p.alu(Ops.CMPLT, r, 1), p.alu(Ops.MUL, r, 8)
  x, y = p.load(a, p.alu(Ops.ADD, base, 4), 0.0, gate=g), p.load(a, p.alu(Ops.ADD, base, 8), 0.0, gate=g)
  p.store(out, base, p.alu(Ops.ADD, x, y))
  p.end(r)
  loads = re.findall(r"= load float, ptr (%v\d+)\.p(.*)", LLVMRenderer().render("k", p.uops))
  assert [align for _, align in loads] == [", align 16", ", align 16"]
