"""Control flow and memory of hand-built linear programs on every target: loops, reductions into REG buffers, gates, IF, do-while."""
import numpy as np
import pytest
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes
from linprog import TARGETS, Prog, run

f32, i32, i64 = dtypes.float32, dtypes.int32, dtypes.int64
pytestmark = pytest.mark.parametrize("target", TARGETS)

def test_elementwise(target):
  p = Prog()
  out, a, b = p.param(0, f32, 64), p.param(1, f32, 64), p.param(2, f32, 64)
  r = p.range(64, 0)
  x = p.load(a, r)
  p.store(out, r, p.alu(Ops.ADD, p.alu(Ops.MUL, x, p.load(b, r)), x))
  p.end(r)
  xa, xb = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
  np.testing.assert_array_equal(run(target, p, np.zeros(64, np.float32), xa, xb)[0], xa*xb + xa)

def test_reduce_into_reg(target):
  p = Prog()
  out, a, acc = p.param(0, f32, 4), p.param(1, f32, 32), p.reg(f32, 1)
  ri = p.range(4, 0)
  p.store(acc, 0, 0.0)
  rj = p.range(8, 1)
  p.store(acc, 0, p.alu(Ops.ADD, p.load(acc, 0), p.load(a, p.alu(Ops.ADD, p.alu(Ops.MUL, ri, 8), rj))))
  p.end(rj)
  p.store(out, ri, p.add(UOp(Ops.LOAD, f32, (p.index(acc, 0),), tag="after")))  # a second load of acc: a different node
  p.end(ri)
  xa = np.arange(32, dtype=np.float32)
  np.testing.assert_array_equal(run(target, p, np.zeros(4, np.float32), xa)[0], xa.reshape(4, 8).sum(1))

def test_nested_ranges_transpose_int64_index(target):
  p = Prog()
  out, a = p.param(0, i32, 12), p.param(1, i32, 12)
  ri, rj = p.range(4, 0, i64), p.range(3, 1, i64)
  p.store(out, p.alu(Ops.ADD, p.alu(Ops.MUL, rj, 4), ri), p.load(a, p.alu(Ops.ADD, p.alu(Ops.MUL, ri, 3), rj)))
  p.end(rj); p.end(ri)
  xa = np.arange(12, dtype=np.int32)
  np.testing.assert_array_equal(run(target, p, np.zeros(12, np.int32), xa)[0], xa.reshape(4, 3).T.reshape(-1))

def test_empty_range(target):
  p = Prog()
  out = p.param(0, i32, 1)
  r = p.range(0, 0)
  p.store(out, 0, 5)
  p.end(r)
  assert run(target, p, np.zeros(1, np.int32))[0][0] == 0

def test_gated_load(target):
  # a has 5 elements: the gate keeps the load inside them (the emulator raises on any out-of-bounds access)
  p = Prog()
  out, a = p.param(0, f32, 8), p.param(1, f32, 5)
  r = p.range(8, 0)
  p.store(out, r, p.load(a, r, alt=-1.0, gate=p.alu(Ops.CMPLT, r, 5)))
  p.end(r)
  np.testing.assert_array_equal(run(target, p, np.zeros(8, np.float32), np.arange(5, dtype=np.float32))[0], [0, 1, 2, 3, 4, -1, -1, -1])

def test_gated_load_far_out_of_bounds(target):
  # (slot 2 is declared empty; the harness still hands it a 1-element buffer)
  # padding: the address of a gated-off load may lie far outside the buffer (a conv's row -1 is 57 elements before it); LLVM reads the
  # buffer's first element instead and selects, nothing may fault. A buffer of 0 elements has no first element: it keeps the branch
  p = Prog()
  out, a, empty = p.param(0, f32, 8), p.param(1, f32, 4), p.param(2, f32, 0)
  r = p.range(8, 0)
  far = p.alu(Ops.ADD, p.alu(Ops.MUL, r, 1 << 20), -(1 << 22))  # r*2^20 - 2^22: in bounds only at r == 4
  v = p.load(a, far, alt=-1.0, gate=p.alu(Ops.CMPEQ, r, 4))
  p.store(out, r, p.alu(Ops.ADD, v, p.load(empty, p.alu(Ops.MUL, r, -(1 << 20)), alt=0.5, gate=p.alu(Ops.CMPLT, r, 0))))
  p.end(r)
  np.testing.assert_array_equal(run(target, p, np.zeros(8, np.float32), np.arange(1, 5, dtype=np.float32), np.zeros(1, np.float32))[0],
                                [-0.5, -0.5, -0.5, -0.5, 1.5, -0.5, -0.5, -0.5])
  if target == "LLVM":
    from tinygrad.renderer.llvmir import LLVMRenderer
    ir = LLVMRenderer().render("k", p.uops)
    assert ir.count("select i1") == 2 and ir.count("br i1 %v17") == 1  # data1: address and value selects; the empty one: a branch

def test_if_endif(target):
  p = Prog()
  out, a = p.param(0, f32, 6), p.param(1, f32, 6)
  r = p.range(6, 0)
  x = p.load(a, r)
  i = p.if_(p.alu(Ops.CMPLT, 0.0, x, dtype=f32))
  p.store(out, r, p.alu(Ops.MUL, x, 2.0))
  p.endif(i)
  p.end(r)
  xa = np.array([1, -1, 2, -2, 0, 3], np.float32)
  np.testing.assert_array_equal(run(target, p, np.full(6, 7, np.float32), xa)[0], np.where(xa > 0, xa*2, 7))

def test_vars_in_name_order(target):
  # arguments: buffers by slot, then vars sorted by name (b declared first, passed second)
  p = Prog()
  out = p.param(0, i32, 8)
  vb, va = p.var("b", 0, 100), p.var("a", 0, 8)
  r = p.range(va, 0)
  p.store(out, r, p.alu(Ops.ADD, r, vb))
  p.end(r)
  np.testing.assert_array_equal(run(target, p, np.zeros(8, np.int32), vals=(5, 10))[0], [10, 11, 12, 13, 14, 0, 0, 0])

# *** do-while: RANGE(void) ... END(loop, cond) loops again while cond holds ***

def counter(p:Prog, acc:UOp, tag:str) -> UOp:
  """one step of the REG counter: reload (a new node per tag), add one, store; returns the new count"""
  inc = p.alu(Ops.ADD, p.add(UOp(Ops.LOAD, i32, (p.index(acc, 0),), tag=tag)), 1)
  p.store(acc, 0, inc)
  return inc

def start() -> tuple[Prog, UOp, UOp]:
  p = Prog()
  out, acc = p.param(0, i32, 1), p.reg(i32, 1)
  p.store(acc, 0, 0)
  return p, out, acc

def finish(target, p:Prog, out:UOp, acc:UOp) -> int:
  p.store(out, 0, p.add(UOp(Ops.LOAD, i32, (p.index(acc, 0),), tag="result")))
  return int(run(target, p, np.zeros(1, np.int32))[0][0])

def test_do_while_counts_to_10(target):
  p, out, acc = start()
  loop = p.loop(0)
  p.end(loop, p.alu(Ops.CMPLT, counter(p, acc, "a"), 10))
  assert finish(target, p, out, acc) == 10

def test_do_while_inside_range(target):
  p, out, acc = start()
  r = p.range(4, 0)
  loop = p.loop(1)
  p.end(loop, p.alu(Ops.CMPLT, counter(p, acc, "a"), p.alu(Ops.MUL, p.alu(Ops.ADD, r, 1), 3)))
  p.end(r)
  assert finish(target, p, out, acc) == 12

def test_two_sequential_do_whiles(target):
  p, out, acc = start()
  l1 = p.loop(0)
  p.end(l1, p.alu(Ops.CMPLT, counter(p, acc, "a"), 10))
  l2 = p.loop(1)
  p.end(l2, p.alu(Ops.CMPLT, counter(p, acc, "b"), 25))
  assert finish(target, p, out, acc) == 25

def test_do_while_in_do_while(target):
  p, out, acc = start()
  outer = p.loop(0)
  inner = p.loop(1)
  p.end(inner, p.alu(Ops.CMPNE, p.alu(Ops.CMOD, counter(p, acc, "a"), 4), 0))
  reloaded = p.add(UOp(Ops.LOAD, i32, (p.index(acc, 0),), tag="reloaded"))
  p.end(outer, p.alu(Ops.CMPLT, reloaded, 12))
  assert finish(target, p, out, acc) == 12
