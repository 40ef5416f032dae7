"""Loops the LLVM renderer keeps LLVM's loop vectorizer off (`slp_only_loops`, !llvm.loop metadata), so that the SLP vectorizer packs
a trip's upcast lanes: a loop whose trip reads a run longer than its step (an upsample's neighbours), and a copy through a select on a
condition fixed for the loop (a gather's out-of-bounds zero), a read whose index is not linear in the loop (a window copy's // and %),
and a trip that writes one element from reads more than 2 further on (a max pool over its window buffer), and a trip storing several
1-byte lanes (compile time). A plain copy, a run as long as the step, a
broadcast and strided reads into a run of lanes keep it on.
Results are numpy's either way. Oracles: numpy, the metadata counted by hand."""
import numpy as np
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes
from tinygrad.renderer.llvmir import LLVMRenderer
from linprog import Prog, run

LANES = 8

def lanes_loop(rows:int, width:int, read, gate:bool=False, stride:int|None=None) -> Prog:
  """out[r, LANES*k + lane] = a[read(r, k, lane)] (zero where the row's gate r % 2 == 1 is off, with gate) for k < width // LANES"""
  p = Prog()
  out, a = p.param(0, dtypes.float32, rows * width), p.param(1, dtypes.float32, rows * (stride or width))
  r = p.range(rows, 0)
  on = p.alu(Ops.CMPLT, p.alu(Ops.CMOD, r, 2), 1) if gate else None
  k = p.range(width // LANES, 1)
  for lane in range(LANES):
    v = p.load(a, read(p, r, k, lane))
    if on is not None: v = p.alu(Ops.WHERE, on, v, 0.0)
    p.store(out, at(p, r, k, LANES, lane, width), v)
  p.end(k)
  p.end(r)
  return p

def at(p, r, k, step, lane, row):
  """r*row + k*step + lane, the constant added last (as the symbolic rules leave a kernel's index)"""
  base = p.alu(Ops.ADD, p.alu(Ops.MUL, r, row), p.alu(Ops.MUL, k, step))
  return base if lane == 0 else p.alu(Ops.ADD, base, lane)

def marked(prog:Prog) -> int: return LLVMRenderer().render("k", prog.uops).count("!llvm.loop !")

ROWS, WIDTH = 4, 32

def upsample(p, r, k, lane): return at(p, r, k, LANES // 2, (lane + 1) // 2, WIDTH)  # a trip reads 5 elements, the next trip from the 5th
def halves(p, r, k, lane): return at(p, r, k, LANES // 2, lane // 2, WIDTH)  # a trip reads as many elements as it steps by
def copy(p, r, k, lane): return at(p, r, k, LANES, lane, WIDTH)
def broadcast(p, r, k, lane): return p.alu(Ops.MUL, r, WIDTH)  # a row's first element everywhere: a read that does not move
def strided(p, r, k, lane): return at(p, r, k, 9 * LANES, 9 * lane, 9 * WIDTH)  # lanes 9 apart (a transposed read)

def test_upsample_and_gated_copy_are_marked_others_not():
  assert marked(lanes_loop(ROWS, WIDTH, upsample)) == 1
  assert marked(lanes_loop(ROWS, WIDTH, copy, gate=True)) == 1
  assert marked(lanes_loop(ROWS, WIDTH, copy)) == 0
  assert marked(lanes_loop(ROWS, WIDTH, halves)) == 0
  assert marked(lanes_loop(ROWS, WIDTH, broadcast)) == 0
  assert marked(lanes_loop(ROWS, WIDTH, strided, gate=True, stride=9 * WIDTH)) == 0
  ir = LLVMRenderer().render("k", lanes_loop(ROWS, WIDTH, upsample).uops)
  assert '!0 = !{!"llvm.loop.vectorize.enable", i1 false}' in ir and "!1 = distinct !{!1, !0}" in ir
  gpu = LLVMRenderer()
  gpu.has_local = True
  assert "!llvm.loop" not in gpu.render("k", lanes_loop(ROWS, WIDTH, upsample).uops)

def window_max(rows:int, width:int, k:int) -> Prog:
  """out[r, j] = max of a[r, k*j : k*j + k]: one element per trip from a run of k read k further on each trip"""
  p = Prog()
  out, a = p.param(0, dtypes.float32, rows * width), p.param(1, dtypes.float32, rows * width * k)
  r = p.range(rows, 0)
  j = p.range(width, 1)
  base = p.alu(Ops.ADD, p.alu(Ops.MUL, r, width * k), p.alu(Ops.MUL, j, k))
  v = p.load(a, base)
  for t in range(1, k): v = p.alu(Ops.MAX, v, p.load(a, p.alu(Ops.ADD, base, t)))
  p.store(out, p.alu(Ops.ADD, p.alu(Ops.MUL, r, width), j), v)
  p.end(j)
  p.end(r)
  return p

def wrapped(p, r, k, lane): return p.alu(Ops.ADD, p.alu(Ops.MUL, r, WIDTH), p.alu(Ops.CMOD, p.alu(Ops.ADD, p.alu(Ops.MUL, k, LANES), lane), 5))

def test_window_and_nonlinear_reads_are_marked():
  assert marked(window_max(ROWS, WIDTH, 4)) == 1
  assert marked(window_max(ROWS, WIDTH, 2)) == 0  # a stride-2 read: LLVM packs it with shuffles
  assert marked(lanes_loop(ROWS, WIDTH, wrapped)) == 1

def test_results_match_numpy():
  a = np.random.default_rng(0).standard_normal((ROWS, WIDTH)).astype(np.float32)
  out, _ = run("LLVM", lanes_loop(ROWS, WIDTH, upsample), np.zeros_like(a), a)
  np.testing.assert_array_equal(out, a[:, (np.arange(WIDTH) + 1) // 2])
  out, _ = run("LLVM", lanes_loop(ROWS, WIDTH, copy, gate=True), np.zeros_like(a), a)
  np.testing.assert_array_equal(out, np.where((np.arange(ROWS) % 2 == 0)[:, None], a, 0))
  out, _ = run("LLVM", lanes_loop(ROWS, WIDTH, wrapped), np.zeros_like(a), a)
  np.testing.assert_array_equal(out, a[:, np.arange(WIDTH) % 5])
  w = np.random.default_rng(1).standard_normal((ROWS, WIDTH * 4)).astype(np.float32)
  out, _ = run("LLVM", window_max(ROWS, WIDTH, 4), np.zeros_like(a), w)
  np.testing.assert_array_equal(out, w.reshape(ROWS, WIDTH, 4).max(-1))

def _program_of(t):
  from tinygrad import Device
  from tinygrad.codegen import get_program
  from tinygrad.schedule.rangeify import create_schedule
  ast = next(it.ast for it in create_schedule([t.uop])[0] if it.kind == "kernel")
  return get_program(ast, Device["CPU:LLVM"].renderer)

def test_byte_lanes_keep_the_loop_vectorizer_off():
  # a trip storing several 1-byte lanes: vectorized across trips 64 bytes wide in interleave groups, SLP took 7-12 s to compile these
  from tinygrad import Tensor
  rng = np.random.default_rng(0)
  a, b, c = rng.integers(0, 100, (67, 4, 4)).astype(np.uint8), rng.integers(0, 100, (67, 4, 1)).astype(np.uint8), rng.integers(0, 100, (4, 4))
  prod = Tensor(a, device="CPU:LLVM") * Tensor(b, device="CPU:LLVM") - Tensor(c.astype(np.int32), device="CPU:LLVM").cast(dtypes.uint8)
  x, y = rng.integers(0, 100, (64, 4, 8)).astype(np.int8), rng.integers(0, 100, (64, 4, 1)).astype(np.int8)
  cmp = ((Tensor(x, device="CPU:LLVM") * Tensor(y, device="CPU:LLVM")).permute(0, 2, 1) == 3).flip(1)
  for t in (prod, cmp): assert "!llvm.loop !" in _program_of(t).src
  np.testing.assert_equal(prod.numpy(), a * b - c.astype(np.uint8))
  np.testing.assert_equal(cmp.numpy(), np.flip((x * y).transpose(0, 2, 1) == 3, 1))
