"""Odd output widths (codegen/opt/peel.py and heuristic.wide_panel_tile): a gate that splits the tile's vectors is peeled off its loop,
the packed-panel tiles pad their rows and panels, and every such kernel gives numpy's results on the CPU and on the PYTHON emulator."""
import copy, math, pathlib, sys
import numpy as np
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp
from tinygrad.helpers import Context
from tinygrad.codegen.opt import Opt, OptOps, apply_opts, hand_coded_opts
from tinygrad.codegen.opt.peel import peel_gates, vector_gate_ranges
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's test_opt is not on sys.path by itself
from test_opt import kernel, run_cpu, run_python, AVX512

U, T, S, P = OptOps.UPCAST, OptOps.THREAD, OptOps.SWAP, OptOps.PADTO
rng = np.random.default_rng(7)

def pieces(x:UOp) -> list[UOp]:
  """the loop nests a peeled kernel runs one after another, each inside the loops they share (END(GROUP(pieces), shared loops))"""
  if x.op is Ops.SINK: return [p for s in x.src for p in pieces(s)]
  if x.op is Ops.GROUP: return [p for s in x.src for p in pieces(s)]
  return pieces(x.src[0]) if x.op is Ops.END and x.src[0].op is Ops.GROUP else [x]

def shared_loops(x:UOp) -> set[UOp]:
  """the loops around the pieces of a peeled kernel"""
  return {r for s in x.toposort() if s.op is Ops.END and s.src[0].op is Ops.GROUP for r in s.ended_ranges}

def odd_packed_matmul(m:int, n:int, k:int):
  """a @ b with b in pack.py's panel-major copy, n not a multiple of 16: ceil(n/16) panels, the columns past n padding (NaN here: the
  gated stores must never write what they compute) and the store gated by the column < n, as the scheduler's split leaves it"""
  panels = math.ceil(n / 16)
  def body(out, a, b):
    i, p, q, r = UOp.range(m, 0), UOp.range(panels, 1), UOp.range(16, 2), UOp.range(k, 3, AxisType.REDUCE)
    return i*n + p*16 + q, (a[i*k + r].load() * b[p*k*16 + r*16 + q].load()).reduce(r, op=Ops.ADD), (i, p, q)
  (ast, ins) = kernel((m, n, k), body, 2, [m*k, panels*16*k], m*n, "opmm")
  store = next(u for u in ast.toposort() if u.op is Ops.STORE)
  i, p, q = (next(x for x in store.toposort() if x.op is Ops.RANGE and x.arg[0] == a) for a in range(3))
  ast = ast.substitute({store: store.replace(src=store.src + ((p*16 + q) < n,))})
  if pad := panels * 16 - n: ins[1].reshape(panels, k, 16)[-1, :, 16 - pad:] = np.nan
  def ref(a, b): return (a.reshape(m, k) @ b.reshape(panels, k, 16).transpose(1, 0, 2).reshape(k, panels * 16)[:, :n]).ravel()
  return (ast, ins), ref

def odd_panel_copy(n:int, k:int):
  """pack.py's copy of a (k, n) B into ceil(n/16) panels of 16 columns, the columns past n read as zeros (a gated load)"""
  panels = math.ceil(n / 16)
  def body(out, b):
    p, r, q = UOp.range(panels, 0), UOp.range(k, 1), UOp.range(16, 2)
    j, ld = p*16 + q, b[r*n + p*16 + q].load()
    return p*k*16 + r*16 + q, UOp(Ops.LOAD, ld.dtype, (ld.src[0], ld.const_like(0.0), j < n)), (p, r, q)
  def ref(b): return np.pad(b.reshape(k, n), ((0, 0), (0, panels * 16 - n))).reshape(k, panels, 16).transpose(1, 0, 2).ravel()
  return kernel((panels, k, 16), body, 1, [k*n], panels*k*16, "opc"), ref

def test_peel_splits_the_loop_of_a_vector_gate():
  # 100 columns: 7 panels, 3 to a tile (padded to 9): 3 panel tiles. The first 2 (columns < 96) pass every lane's gate and are peeled
  # off ungated; the last keeps the gates (4 of its 48 columns are real)
  (ast, ins), ref = odd_packed_matmul(29, 100, 24)
  opts = [Opt(U, 2, 16), Opt(P, 1, 3), Opt(U, 1, 3), Opt(P, 0, 8), Opt(U, 0, 8), Opt(T, 0, 2), Opt(S, 0, 1)]
  opt = apply_opts(ast, opts)
  assert vector_gate_ranges(opt)
  peeled = peel_gates(opt)
  main, tail = pieces(peeled)
  assert not vector_gate_ranges(main) and vector_gate_ranges(tail)
  (loop,) = [r for r in vector_gate_ranges(opt) if r.arg[1] is AxisType.LOOP]
  assert [r.src[0].arg for r in main.toposort() if r.op is Ops.RANGE and r.arg[0] == loop.arg[0]] == [2]
  assert not any(r.arg[1] is AxisType.LOOP for r in vector_gate_ranges(tail))  # one trip left: no loop
  # the THREAD axis and the rows' loop outside the cut one are shared by both copies, every other range of the second copy is its own
  assert {r for r in main.toposort() if r.op is Ops.RANGE} & {r for r in tail.toposort() if r.op is Ops.RANGE} == shared_loops(peeled) == \
    {r for r in opt.toposort() if r.op is Ops.RANGE and r.arg[1] in (AxisType.THREAD, AxisType.LOOP) and r.arg[0] < loop.arg[0]}
  for run in (run_cpu, run_python): np.testing.assert_allclose(run(opt, ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-4)

def test_no_peel_without_a_vector_gate():
  # a 96-column matmul has no gate; rows padded to the tile are gated alike across a row's vector lanes: nothing to peel
  (ast, _), _ = odd_packed_matmul(13, 96, 24)
  opt = apply_opts(ast, [Opt(U, 2, 16), Opt(U, 1, 3), Opt(P, 0, 8), Opt(U, 0, 8)])
  assert not vector_gate_ranges(opt) and peel_gates(opt) is opt

def test_panel_tiles_pad_odd_sizes():
  # AVX-512 with an LLVM that vectorizes 24 accumulators: 3 panels x 8 rows where that pads less than 4 x 6 (63 panels: none; rows 1001:
  # 7 more), the row tiles padded to a multiple of the cores where no axis divides (125 tiles -> 126). The threads split the rows
  llvm, c = copy.copy(AVX512), copy.copy(AVX512)
  llvm.tile_lanes, c.tile_lanes = 384, 256
  with Context(THREADS=2):
    def opts(m, n, k): return hand_coded_opts(odd_packed_matmul(m, n, k)[0][0], llvm)
    assert opts(1000, 1000, 1000) == [Opt(U, 2, 16), Opt(U, 1, 3), Opt(U, 0, 8), Opt(P, 0, 2), Opt(T, 0, 2), Opt(S, 0, 1)]
    assert opts(1001, 1001, 1001) == [Opt(U, 2, 16), Opt(U, 1, 3), Opt(P, 0, 8), Opt(U, 0, 8), Opt(T, 0, 2), Opt(S, 0, 1)]
    assert opts(520, 520, 520)[:3] == [Opt(U, 2, 16), Opt(U, 1, 3), Opt(U, 0, 8)]
    assert opts(64, 1000, 2048) == [Opt(U, 2, 16), Opt(U, 1, 3), Opt(U, 0, 8), Opt(T, 0, 2), Opt(S, 0, 1)]
    # 64 panels: 4 x 6 as before, the rows padded to 1026
    assert opts(1024, 1024, 1024)[:4] == [Opt(U, 2, 16), Opt(U, 1, 4), Opt(P, 0, 6), Opt(U, 0, 6)]
    # a C compiler does not vectorize 24 accumulators: the tile register_tile chose stays (8 rows, one panel of 63)
    assert hand_coded_opts(odd_packed_matmul(1000, 1000, 1000)[0][0], c)[:2] == [Opt(U, 2, 16), Opt(U, 0, 8)]
  # such tiles on a kernel small enough for the emulator: 21 rows, 40 columns (3 panels), each padded
  (ast, ins), ref = odd_packed_matmul(21, 40, 20)
  for opts in ([Opt(U, 2, 16), Opt(U, 1, 3), Opt(P, 0, 8), Opt(U, 0, 8)], [Opt(U, 2, 16), Opt(P, 1, 4), Opt(U, 1, 4), Opt(P, 0, 6), Opt(U, 0, 6)]):
    for run in (run_cpu, run_python): np.testing.assert_allclose(run(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-4)

def test_odd_panel_copy_threads_outside_its_gate():
  # the copy's gate (column < 1000) is on the panel axis: the threads split B's rows, so the peel's first part is every panel but the
  # last one for both cores
  with Context(THREADS=2):
    assert hand_coded_opts(odd_panel_copy(1000, 1024)[0][0], AVX512) == [Opt(U, 2, 16), Opt(T, 1, 8), Opt(S, 0, 1)]
  (ast, ins), ref = odd_panel_copy(40, 6)
  opt = apply_opts(ast, [Opt(U, 2, 16), Opt(T, 1, 2), Opt(S, 0, 1)])
  assert len(pieces(peel_gates(opt))) == 2
  for run in (run_cpu, run_python): np.testing.assert_array_equal(run(opt, ins, ref(*ins).size), ref(*ins))

def scalar_cat(h:int, w1:int, w2:int):
  """cat of (h, w1) and (h, w2) along the last axis as the scheduler writes it: one loop over the h x (w1+w2) output, each input's load
  gated by the column (`j < w1`, `w1-1 < j`) and reading 0 outside it, the loads added"""
  w = w1 + w2
  def body(out, a, b):
    i, j = UOp.range(h, 0), UOp.range(w, 1)
    la, lb = a[i*w1 + j].load(), b[i*w2 + j - w1].load()
    ga = UOp(Ops.LOAD, la.dtype, (la.src[0], la.const_like(0.0), j < w1))
    gb = UOp(Ops.LOAD, lb.dtype, (lb.src[0], lb.const_like(0.0), (w1 - 1) < j))
    return i*w + j, ga + gb, (i, j)
  def ref(a, b): return np.concatenate([a.reshape(h, w1), b.reshape(h, w2)], 1).ravel()
  return kernel((h, w), body, 2, [h*w1, h*w2], h*w, "cat"), ref

def _gated_loads(x:UOp) -> int: return sum(1 for u in x.toposort() if u.op is Ops.LOAD and len(u.src) == 3)

def test_scalar_loop_is_cut_where_its_gates_turn():
  # no width divides 1000+1001: the loop over the columns stays scalar, and each load's gate moves along it. It is cut at 1000 into two
  # loops, each reading one input ungated, the other input's load folded to its 0
  (ast, ins), ref = scalar_cat(5, 1000, 1001)
  assert vector_gate_ranges(ast)
  parts = pieces(peel_gates(ast))
  assert len(parts) == 2 and all(_gated_loads(p) == 0 for p in parts)
  assert sorted(r.src[0].arg for p in parts for r in p.toposort() if r.op is Ops.RANGE and r.src[0].arg != 5) == [1000, 1001]
  for run in (run_cpu, run_python): np.testing.assert_array_equal(run(peel_gates(ast), ins, ref(*ins).size), ref(*ins))

def test_vector_cut_keeps_its_mixed_trips_gated():
  # 13+14 columns upcast by 4 (padded to 28): trips 0-2 read only a, trip 3 holds column 12 of a and 13-15 of b, trips 4-5 only b, trip 6
  # the last column of b and 3 padded lanes: the decided trips run ungated, the other two keep their gates. The pieces run in the order
  # of their trips, inside the rows' loop they share
  (ast, ins), ref = scalar_cat(3, 13, 14)
  opt = apply_opts(ast, [Opt(P, 1, 4), Opt(U, 1, 4)])
  parts = pieces(peeled := peel_gates(opt))
  assert len(parts) == 4 and [_gated_loads(p) > 0 or any(len(u.src) == 3 for u in p.toposort() if u.op is Ops.STORE) for p in parts] == \
    [False, True, False, True]
  assert [r.src[0].arg for r in shared_loops(peeled)] == [3]
  for run in (run_cpu, run_python): np.testing.assert_array_equal(run(opt, ins, ref(*ins).size), ref(*ins))

def padded_copy(planes:int, h:int, w:int):
  """x (planes, h, w) written with a border of one zero on each side, (planes, h+2, w+2), as the scheduler writes a pad: one gated load"""
  def body(out, a):
    c, y, x = UOp.range(planes, 0), UOp.range(h + 2, 1), UOp.range(w + 2, 2)
    ld = a[c*h*w + (y - 1)*w + x - 1].load()
    gate = (0 < y) & (y < h + 1) & (0 < x) & (x < w + 1)
    return c*(h+2)*(w+2) + y*(w+2) + x, UOp(Ops.LOAD, ld.dtype, (ld.src[0], ld.const_like(0.0), gate)), (c, y, x)
  def ref(a): return np.pad(a.reshape(planes, h, w), ((0, 0), (1, 1), (1, 1))).ravel()
  return kernel((planes, h + 2, w + 2), body, 1, [planes*h*w], planes*(h+2)*(w+2), "padcopy"), ref

def test_padded_copy_pieces_share_the_loops_outside_the_cut():
  # the rows are cut at the first and last (the zero rows), then the middle rows' vectors at each end: five pieces, which run inside the
  # planes' loop (and the middle rows' ends inside the rows' loop), so one plane's rows are written together rather than one piece's rows
  # of every plane per pass over the output
  (ast, ins), ref = padded_copy(3, 5, 12)
  opt = apply_opts(ast, [Opt(U, 2, 2), Opt(T, 0, 3)])
  peeled = peel_gates(opt)
  assert len(pieces(peeled)) == 5
  (plane_end,) = peeled.src
  assert [(r.arg[1], r.src[0].arg) for r in plane_end.ended_ranges] == [(AxisType.THREAD, 3)]  # a plane per share
  rows = [r for p in plane_end.src[0].src if p.op is Ops.END and p.src[0].op is Ops.GROUP for r in p.ended_ranges]
  assert [r.src[0].arg for r in rows] == [5]  # the middle rows' loop holds the three pieces along them
  assert sum(_gated_loads(p) > 0 for p in pieces(peeled)) == 2  # each middle row's first and last vector keep their gates
  for run in (run_cpu, run_python): np.testing.assert_array_equal(run(peeled, ins, ref(*ins).size), ref(*ins))
  np.testing.assert_array_equal(run_cpu(opt, ins, ref(*ins).size), ref(*ins))
