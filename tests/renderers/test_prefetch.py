"""Prefetches of the next row in the LLVM renderer (`next_trip_prefetches`): a loop that re-reads a row an earlier loop of the same row
read asks for the next row's cache lines, one prefetch per line, and for writing, the next row's lines of a buffer a later loop stores
at the same index; no other loop does; results stay numpy's (a prefetch past the buffer's end, on the last row, is no fault). Oracles:
numpy, hand-counted IR."""
import re
import numpy as np
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes
from tinygrad.renderer.llvmir import LLVMRenderer, PREFETCH_MAX_AHEAD
from linprog import Prog, run

def row_chain(rows:int, width:int, lanes:int, passes:int=2, shift:int=0) -> Prog:
  """`passes` loops over each row of a, each unrolled by `lanes`: out[r, j] = a[r, j] * (pass + 1), the last pass's value stays (the
  last pass writes `shift` elements further on)"""
  p = Prog()
  out, a = p.param(0, dtypes.float32, rows * width + shift), p.param(1, dtypes.float32, rows * width)
  r = p.range(rows, 0)
  row = p.alu(Ops.MUL, r, width)
  for axis in range(1, passes + 1):
    k = p.range(width // lanes, axis)
    base = p.alu(Ops.ADD, row, p.alu(Ops.MUL, k, lanes))
    for lane in range(lanes):
      at = base if lane == 0 else p.alu(Ops.ADD, base, lane)
      p.store(out, p.alu(Ops.ADD, at, shift) if shift and axis == passes else at, p.alu(Ops.MUL, p.load(a, at), float(axis)))
    p.end(k)
  p.end(r)
  return p

def prefetches(ir:str) -> list[tuple[str, str, str, str]]:
  """(block, buffer, offset added to the index, 0 read / 1 write) of each prefetch in the IR"""
  block, found, adds, geps = "entry", [], {}, {}
  for line in ir.splitlines():
    if re.match(r"^L[\w.]+:$", line): block = line[:-1]
    if (m := re.match(r"\s+(%[\w.]+) = add i32 %[\w.]+, (\d+)$", line)): adds[m.group(1)] = m.group(2)
    if (m := re.match(r"\s+(%[\w.]+) = getelementptr float, ptr (%data\d), i32 (%[\w.]+)$", line)): geps[m.group(1)] = (m.group(2), adds[m.group(3)])
    if (m := re.search(r"call void @llvm\.prefetch\.p0\(ptr (%[\w.]+), i32 ([01]), i32 3, i32 1\)", line)):
      found.append((block, *geps[m.group(1)], m.group(2)))
  return found

def loop_blocks(ir:str) -> list[str]: return [f"{b}.body" for b in re.findall(r"^(L\d+)\.body:$", ir, re.M)]

def test_second_pass_prefetches_next_row_once_per_line():
  ir = LLVMRenderer().render("k", row_chain(4, 64, 16).uops)
  _, _, second = loop_blocks(ir)  # rows, the first pass, the second
  # only the second loop (it re-reads the row the first loop read): one prefetch per 16 floats, 64 floats (one row) ahead; nothing
  # after it writes, so nothing is prefetched for writing
  assert prefetches(ir) == [(second, "%data1", "64", "0")]
  assert "declare void @llvm.prefetch.p0(ptr, i32, i32, i32)" in ir

def test_trips_narrower_than_a_line_do_not_prefetch():
  # lane 0 of 4 would prefetch every trip, and the call would keep LLVM's loop vectorizer off a loop left to it (argmax's index loop)
  assert prefetches(LLVMRenderer().render("k", row_chain(4, 64, 4).uops)) == []
  assert prefetches(LLVMRenderer().render("k", row_chain(4, 64, 1).uops)) == []

def test_a_one_element_rereading_loop_is_left_to_the_loop_vectorizer():
  from tinygrad.runtime.ops_cpu import LLVMCompiler
  # passes of one element a trip (LLVM drops the first, whose stores the second overwrites): the compiled loop is vectorized across its
  # trips, in a block LLVM names vector.body
  assert "vector.body:" in str(LLVMCompiler().optimized(LLVMRenderer().render("k", row_chain(4, 4096, 1).uops)))

def test_first_rereading_pass_prefetches_what_a_later_pass_writes():
  ir = LLVMRenderer().render("k", row_chain(4, 64, 16, passes=3).uops)
  _, _, second, _ = loop_blocks(ir)
  # the third loop writes out at the index the second reads a: out's next row is prefetched for writing beside a's for reading
  assert prefetches(ir) == [(second, "%data1", "64", "0"), (second, "%data0", "64", "1")]
  # written elsewhere (one element on): not the element the load reads, no write prefetch
  assert prefetches(LLVMRenderer().render("k", row_chain(4, 64, 16, passes=3, shift=1).uops)) == [(second, "%data1", "64", "0")]

def test_streamed_stores_are_not_prefetched_for_writing():
  # out past the threshold, its 16-lane trips whole aligned blocks: the third pass stores it around the cache, so only a's next row is
  # prefetched (a prefetch for writing would read each line only for the store to go around it)
  r = LLVMRenderer()
  r.nontemporal_bytes = 512  # out holds 1024 bytes
  ir = r.render("k", row_chain(4, 64, 16, passes=3).uops)
  _, _, second, _ = loop_blocks(ir)
  assert any("!nontemporal" in l for l in ir.splitlines() if l.strip().startswith("store"))
  assert prefetches(ir) == [(second, "%data1", "64", "0")]
  out, _ = run("LLVM", row_chain(5, 64, 16, passes=3), np.zeros((5, 64), np.float32), a := np.ones((5, 64), np.float32))
  np.testing.assert_array_equal(out, a * 3)

def test_single_pass_long_rows_and_gpu_dialects_do_not_prefetch():
  p = Prog()
  out, a = p.param(0, dtypes.float32, 256), p.param(1, dtypes.float32, 256)
  r = p.range(16, 0)
  j = p.range(16, 1)
  at = p.alu(Ops.ADD, p.alu(Ops.MUL, r, 16), j)
  p.store(out, at, p.alu(Ops.MUL, p.load(a, at), 2.0))
  p.end(j)
  p.end(r)
  assert "prefetch" not in LLVMRenderer().render("k", p.uops)
  gpu = LLVMRenderer()
  gpu.has_local = True
  assert "prefetch" not in gpu.render("k", row_chain(4, 64, 16).uops)
  # a row past PREFETCH_MAX_AHEAD: the next one would push it out of L2 before its later loops read it
  assert prefetches(LLVMRenderer().render("k", row_chain(2, PREFETCH_MAX_AHEAD // 4, 16).uops)) != []
  assert "prefetch" not in LLVMRenderer().render("k", row_chain(2, PREFETCH_MAX_AHEAD // 4 + 16, 16).uops)

def test_results_match_numpy_including_the_last_row():
  a = np.random.default_rng(0).standard_normal((5, 64)).astype(np.float32)
  for passes in (2, 3):  # past the buffers' ends on the last row, for reading and for writing
    out, _ = run("LLVM", row_chain(5, 64, 16, passes), np.zeros_like(a), a)
    np.testing.assert_array_equal(out, a * passes)
