"""Aligned accesses and non-temporal stores in the LLVM renderer: `align N` only where the index is a known multiple from an aligned
buffer, `!nontemporal` only on whole aligned vector blocks of an output bigger than the last-level cache, and the CPU runtime keeps the
alignment claim true (a view at an odd offset runs on an aligned copy). Oracles: numpy, hand-counted IR."""
import ctypes, platform, re
import numpy as np
import pytest
from tinygrad.device import Buffer, Device
from tinygrad.dtype import dtypes
from tinygrad.renderer.host_cpu import host_llc_bytes, parse_cache_size, stream_bytes, DEFAULT_LLC_BYTES, BUFFER_ALIGN, STREAM_BYTES_PER_CPU
from tinygrad.renderer.llvmir import LLVMRenderer
from tinygrad.runtime.ops_cpu import LLVMCompiler
from linprog import Prog

def build(n:int, lanes:int=8, step:int=8, extra:int=0) -> Prog:
  """out[i*step + k] = a[...] * 2, k < lanes; `extra` more multiplies (by 1) per lane"""
  from tinygrad.uop import Ops
  p = Prog()
  out, a = p.param(0, dtypes.float32, n), p.param(1, dtypes.float32, n)
  i = p.range(n // step, 0)
  base = p.alu(Ops.MUL, i, step)
  for k in range(lanes):
    at = base if k == 0 else p.alu(Ops.ADD, base, k)
    v = p.alu(Ops.MUL, p.load(a, at), 2.0)
    for j in range(extra): v = p.alu(Ops.MUL, v, 1.0 + j * 2**-20)
    p.store(out, at, v)
  p.end(i)
  return p

def render(prog:Prog, above:int|None) -> str:
  r = LLVMRenderer()
  r.nontemporal_bytes = above
  return r.render("k", prog.uops)

STREAM_HEAVY = 40  # extra multiplies per lane: well past STREAM_MAX_ALU

def stores(ir:str) -> list[str]: return [l for l in ir.splitlines() if l.strip().startswith("store")]
def streams(ir:str) -> bool: return any("!nontemporal" in s for s in stores(ir))  # the input's loads may stream too (test_stream_loads.py)

def test_cache_size_parsing_and_sysfs(tmp_path):
  assert [parse_cache_size(t) for t in ("32768K", "8M", "1G", "512", "", "x")] == [32 << 20, 8 << 20, 1 << 30, 512, None, None]
  for i, (level, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "512K"), (3, "Unified", "16384K")]):
    (d := tmp_path / f"index{i}").mkdir()
    for name, text in (("level", f"{level}\n"), ("type", f"{kind}\n"), ("size", f"{size}\n")): (d / name).write_text(text)
  assert host_llc_bytes(str(tmp_path)) == 16 << 20
  assert host_llc_bytes(str(tmp_path / "missing")) == DEFAULT_LLC_BYTES

def test_stream_threshold_is_the_cache_share_of_the_cpus():
  # a 2-CPU VM whose host reports a 480 MB L3 streams past 32 MB; a desktop's 32 MB L3 over 16 cores is all of it
  assert STREAM_BYTES_PER_CPU == 16 << 20
  assert stream_bytes(480 << 20, 2) == 32 << 20 and stream_bytes(32 << 20, 16) == 32 << 20 and stream_bytes(8 << 20, 0) == 8 << 20

def test_aligned_block_above_threshold_streams():
  ir = render(build(4096), above=4096)  # a 16 KB output past a 4 KB "cache"
  st = stores(ir)
  assert len(st) == 8 and all("!nontemporal" in s for s in st)
  # 8*i floats from a 64-byte aligned base: the block's first store is 32-byte aligned, lane 2 8-byte, lane 4 16-byte, odd lanes natural
  assert [re.search(r"align (\d+)", s).group(1) if "align" in s else None for s in st] == ["32", None, "8", None, "16", None, "8", None]
  assert "fence seq_cst" in ir

def test_nothing_streams_at_or_below_threshold():
  for above in (16384, 1 << 30, None):  # the output is exactly 16 KB
    ir = render(build(4096), above=above)
    assert not streams(ir) and "fence" not in ir
    assert "align 32" in stores(ir)[0]  # the alignment claim does not depend on the threshold

def test_partial_or_unaligned_blocks_do_not_stream():
  assert not streams(render(build(4096, lanes=7), above=1))  # a lane of each block is not written
  ir = render(build(4096, lanes=4, step=4), above=1)  # whole 16-byte blocks at 4*i: not a whole 32-byte vector
  assert not streams(ir) and "align 16" in stores(ir)[0] and "align 32" not in ir

def test_only_contiguous_streams_of_blocks_stream():
  # a trip writes 8 floats but moves on by 16 (half of each 64-byte line) or by 64 (a strided write): lines would go out in pieces
  assert not streams(render(build(4096, lanes=8, step=16), above=1))
  assert not streams(render(build(4096, lanes=8, step=64), above=1))
  ir = render(build(4096, lanes=16, step=16), above=1)  # two whole blocks per trip, then the next two
  assert sum("!nontemporal" in s for s in stores(ir)) == 16

def test_compute_heavy_loops_do_not_stream():
  # hand count: the loop body has 16 + 8*extra ALU ops (i*8, 7 lane index adds, a multiply per lane and `extra` more) for 8 stores
  from tinygrad.renderer.llvm_streaming import STREAM_MAX_ALU
  most = STREAM_MAX_ALU - 2  # (16 + 8*most) / 8 == STREAM_MAX_ALU
  assert sum("!nontemporal" in s for s in stores(render(build(4096, extra=most), above=1))) == 8
  assert not streams(render(build(4096, extra=most + 1), above=1))

@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="the loop vectorizer's choice is checked in x86 assembly")
def test_compute_heavy_loop_is_vectorized_across_trips():
  # streamed, the loop vectorizer refuses the loop (its lanes are not each aligned to a vector) and the SLP vectorizer packs the 8 lanes
  # of a trip into one ymm; cached, the loop vectorizer packs 16 trips into zmm registers on AVX-512
  asm = LLVMCompiler(arch="skylake-avx512").assembly(render(build(4096, extra=STREAM_HEAVY), above=1))
  assert "vmovntps" not in asm and re.search(r"vmulps\s+.*%zmm", asm)

def test_scattered_blocks_do_not_stream():
  # out[8*perm[i] + k]: whole aligned blocks, but where the next trip writes is not known
  from tinygrad.uop import Ops
  n = 4096
  p = Prog()
  out, a, perm = p.param(0, dtypes.float32, n), p.param(1, dtypes.float32, n), p.param(2, dtypes.int32, n // 8)
  i = p.range(n // 8, 0)
  base = p.alu(Ops.MUL, p.load(perm, i), 8)
  for k in range(8): p.store(out, base if k == 0 else p.alu(Ops.ADD, base, k), p.load(a, i))
  p.end(i)
  ir = render(p, above=1)
  assert not streams(ir) and "align 32" in stores(ir)[0]  # aligned all the same: 8*anything is a multiple of 8

def test_rows_picked_by_loaded_ids_do_not_stream():
  # out[64*ids[i] + 8*j + k] += a[...] (a scatter-add): the inner loop walks whole aligned blocks of a row, but the next id may revisit
  # a row just read, which a non-temporal store would have sent to memory
  from tinygrad.uop import Ops
  n, rows = 4096, 64
  p = Prog()
  out, a, ids = p.param(0, dtypes.float32, n), p.param(1, dtypes.float32, n), p.param(2, dtypes.int32, rows)
  i = p.range(rows, 0)
  row = p.alu(Ops.MUL, p.load(ids, i), 64)
  j = p.range(8, 1)
  base = p.alu(Ops.ADD, row, p.alu(Ops.MUL, j, 8))
  for k in range(8):
    at = base if k == 0 else p.alu(Ops.ADD, base, k)
    p.store(out, at, p.alu(Ops.ADD, p.load(out, at), p.load(a, at)))
  p.end(j)
  p.end(i)
  assert not streams(render(p, above=1))

def test_no_claims_without_a_base_alignment():
  r = LLVMRenderer()
  r.param_align, r.nontemporal_bytes = 0, 1
  ir = r.render("k", build(4096).uops)
  assert "align" not in ir and "!nontemporal" not in ir

@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="vmovntps is an x86 instruction")
def test_assembly_has_aligned_nontemporal_vector_stores():
  asm = LLVMCompiler(arch="haswell").assembly(render(build(4096), above=1))
  assert len(re.findall(r"vmovntps\s+%ymm", asm)) >= 1 and "movntsd" not in asm and "movnti" not in asm
  assert "vmovntps" not in LLVMCompiler(arch="haswell").assembly(render(build(4096), above=None))

def run_on_views(prog:Prog, n:int, offsets:tuple[int, int]) -> tuple[np.ndarray, np.ndarray, list[Buffer]]:
  """run prog (out, a) on views `offsets` bytes into larger buffers filled with a sentinel; returns out, a and the two bases"""
  dev = Device["CPU:LLVM"]
  prg = dev.runtime("k", dev.compiler.compile(render(prog, above=1)))  # streamed stores: vmovntps faults on a misaligned address
  a = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
  bases = [Buffer("CPU:LLVM", n + 32, dtypes.float32).allocate() for _ in range(2)]
  for b in bases: b.copyin(memoryview(np.full(n + 32, 7.0, np.float32)).cast("B"))
  views = [b.view(n, dtypes.float32, off).allocate() for b, off in zip(bases, offsets)]
  views[1].copyin(memoryview(a).cast("B"))
  prg(*[v._buf for v in views])
  out = np.frombuffer(views[0].copyout(memoryview(bytearray(4 * n))), np.float32)
  return out, a, bases

@pytest.mark.parametrize("offsets", [(4, 0), (0, 12), (36, 68), (64, 128)])
def test_view_at_an_offset_computes_correctly(offsets):
  n = 4096
  assert offsets[0] % BUFFER_ALIGN or offsets[1] % BUFFER_ALIGN or offsets == (64, 128)
  out, a, bases = run_on_views(build(n), n, offsets)
  np.testing.assert_array_equal(out, a * 2)
  full = [np.frombuffer(b.copyout(memoryview(bytearray(b.nbytes))), np.float32) for b in bases]
  for f, off in zip(full, offsets):  # the bytes around each view are untouched
    lo = off // 4
    assert (f[:lo] == 7.0).all() and (f[lo + n:] == 7.0).all()
  np.testing.assert_array_equal(full[1][offsets[1] // 4:offsets[1] // 4 + n], a)  # the input is unchanged

def test_misaligned_view_gets_no_alignment_claim_at_run_time(monkeypatch):
  from tinygrad.runtime.ops_cpu import CPUProgram
  dev = Device["CPU:LLVM"]
  prg = dev.runtime("k", dev.compiler.compile(render(build(64), above=1)))
  base = Buffer("CPU:LLVM", 80, dtypes.float32).allocate()
  view = base.view(64, dtypes.float32, 4).allocate()
  assert prg.align == BUFFER_ALIGN and ctypes.addressof(view._buf) % BUFFER_ALIGN == 4
  seen, real = [], CPUProgram.__call__
  def spy(self, *bufs, **kw):
    seen.append([ctypes.addressof(b) % BUFFER_ALIGN for b in bufs])
    return real(self, *bufs, **kw)
  monkeypatch.setattr(CPUProgram, "__call__", spy)
  prg(view._buf, base._buf)
  assert seen == [[4, 0], [0, 0]]  # called once as given, then once more on an aligned copy of the view

def test_tensor_elementwise_with_streamed_stores(monkeypatch):
  from tinygrad import Tensor
  monkeypatch.setattr(Device["CPU:LLVM"].renderer, "nontemporal_bytes", 1024)
  rng = np.random.default_rng(1)
  a, b, c = (rng.standard_normal((24, 1000), dtype=np.float32) for _ in range(3))
  out = ((Tensor(a, device="CPU:LLVM") * Tensor(b, device="CPU:LLVM") + Tensor(c, device="CPU:LLVM")).relu() * 0.5).numpy()
  np.testing.assert_allclose(out, np.maximum(a * b + c, 0) * 0.5, rtol=1e-6, atol=1e-6)

@pytest.mark.parametrize("shape", [(40, 64), (40, 60), (3, 4096)])
def test_tensor_row_chains_with_streamed_stores(monkeypatch, shape):
  # softmax and layernorm keep their row reductions in the store's kernel; past the threshold its store loop writes whole vectors
  # around the cache (heuristic.hand_coded_opts upcasts it) and is not prefetched for writing
  from tinygrad import Tensor
  monkeypatch.setattr(Device["CPU:LLVM"].renderer, "nontemporal_bytes", 1024)
  a = np.random.default_rng(2).standard_normal(shape, dtype=np.float32)
  e = np.exp(a - a.max(1, keepdims=True))
  np.testing.assert_allclose(Tensor(a, device="CPU:LLVM").softmax(1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
  mu, var = a.mean(1, keepdims=True), a.var(1, keepdims=True)
  np.testing.assert_allclose(Tensor(a, device="CPU:LLVM").layernorm(1).numpy(), (a - mu) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
