"""Non-temporal loads in the LLVM renderer (renderer/llvm_streaming.py): `!nontemporal` only on the loads of an input bigger than the
threshold that the kernel reads once, at one place, in whole aligned vector blocks, and never writes. Oracles: hand-built programs whose
reuse is known by construction, numpy for the results, the x86 assembly for the instruction."""
import platform, re
import numpy as np
import pytest
from tinygrad.device import Device
from tinygrad.dtype import dtypes
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.renderer.llvmir import LLVMRenderer
from tinygrad.renderer.llvm_streaming import STREAM_MAX_ALU
from tinygrad.runtime.ops_cpu import LLVMCompiler
from linprog import Prog

N = 4096

def build(lanes:int=8, step:int=8, outer:tuple[int, int]|None=None, thread:tuple[int, int]|None=None, extra:int=0,
          second_read:bool=False, in_place:bool=False) -> Prog:
  """out[base + k] = a[base + k] * 2 for k < lanes, base = i*step (+ o*outer step over an outer loop) (+ gidx0*thread step);
  `extra` more multiplies per lane; second_read: a[N-1-(base+k)] is added (a second place reads a); in_place: a is the output"""
  p = Prog()
  out, a = p.param(0, dtypes.float32, N), p.param(1, dtypes.float32, N)
  if in_place: out = a
  base = None
  if thread is not None:
    gid = p.add(UOp(Ops.SPECIAL, dtypes.int32, (p.const(thread[0]),), "gidx0"))
    base = p.alu(Ops.MUL, gid, thread[1])
  if outer is not None:
    o = p.range(outer[0], 1)
    base = p.alu(Ops.MUL, o, outer[1]) if base is None else p.alu(Ops.ADD, base, p.alu(Ops.MUL, o, outer[1]))
  trips = (N // step) // (outer[0] if outer else 1) // (thread[0] if thread else 1)
  i = p.range(trips, 0)
  at0 = p.alu(Ops.MUL, i, step) if base is None else p.alu(Ops.ADD, p.alu(Ops.MUL, i, step), base)
  for k in range(lanes):
    at = at0 if k == 0 else p.alu(Ops.ADD, at0, k)
    v = p.alu(Ops.MUL, p.load(a, at), 2.0)
    for j in range(extra): v = p.alu(Ops.MUL, v, 1.0 + j * 2**-20)
    if second_read: v = p.alu(Ops.ADD, v, p.load(a, p.alu(Ops.SUB, p.const(N - 1), at)))
    p.store(out, at, v)
  p.end(i)
  if outer is not None: p.end(o)
  return p

def render(prog:Prog, above:int|None=1) -> str:
  r = LLVMRenderer()
  r.nontemporal_bytes, r.stream_loads = above, True  # whatever this host's CPU is (host_cpu.streams_loads)
  return r.render("k", prog.uops)

def streamed_loads(ir:str) -> int: return sum(" = load " in l and "!nontemporal" in l for l in ir.splitlines())

def test_a_whole_input_read_once_streams():
  assert streamed_loads(render(build())) == 8
  assert streamed_loads(render(build(lanes=16, step=16))) == 16

def test_only_inputs_bigger_than_the_threshold_stream():
  for above in (N * 4, 1 << 30, None):  # the input is exactly 16 KB
    assert streamed_loads(render(build(), above=above)) == 0
  assert streamed_loads(render(build(), above=N * 4 - 1)) == 8

def test_partial_or_unaligned_blocks_do_not_stream():
  assert streamed_loads(render(build(lanes=7))) == 0  # a lane of each 32-byte block is not read by this trip
  assert streamed_loads(render(build(lanes=4, step=4))) == 0  # whole 16-byte blocks: not a whole vector

def test_an_input_read_again_does_not_stream():
  # the outer loop does not move the index: each element is read 4 times, a non-temporal load would fetch it from memory each time
  assert streamed_loads(render(build(outer=(4, 0)))) == 0
  # the outer loop moves by half a trip's lanes: overlapping windows (a conv's taps) read each element twice
  assert streamed_loads(render(build(outer=(2, 4)))) == 0
  # the outer loop moves by a quarter of the input: disjoint, each element once
  assert streamed_loads(render(build(outer=(4, N // 4)))) == 8

def test_threads_must_each_read_their_own_part():
  assert streamed_loads(render(build(thread=(4, N // 4)))) == 8
  assert streamed_loads(render(build(thread=(4, 0)))) == 0  # every thread reads the whole input

def test_an_input_read_at_two_places_or_written_does_not_stream():
  assert streamed_loads(render(build(second_read=True))) == 0
  assert streamed_loads(render(build(in_place=True))) == 0

def test_compute_heavy_loops_do_not_stream():
  # hand count: 16 ALU ops a trip (i*8, 7 lane index adds, a multiply per lane) and `extra` more multiplies a lane, for 8 loads
  most = STREAM_MAX_ALU - 2  # (16 + 8*most) / 8 == STREAM_MAX_ALU
  assert streamed_loads(render(build(extra=most))) == 8
  assert streamed_loads(render(build(extra=most + 1))) == 0

@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="vmovntdqa is an x86 instruction")
def test_assembly_has_aligned_nontemporal_vector_loads():
  asm = LLVMCompiler(arch="haswell").assembly(render(build()))
  assert re.search(r"vmovntdqa\s+.*%ymm", asm)
  assert "vmovntdqa" not in LLVMCompiler(arch="haswell").assembly(render(build(), above=None))

def test_tensor_reductions_and_chains_with_streamed_loads(monkeypatch):
  # through the whole pipeline on a threshold small enough that these inputs stream: the results are numpy's
  from tinygrad import Tensor
  monkeypatch.setattr(Device["CPU:LLVM"].renderer, "nontemporal_bytes", 1024)
  monkeypatch.setattr(Device["CPU:LLVM"].renderer, "stream_loads", True)
  rng = np.random.default_rng(3)
  a, b = (rng.standard_normal((64, 1000), dtype=np.float32) for _ in range(2))
  ta, tb = Tensor(a, device="CPU:LLVM"), Tensor(b, device="CPU:LLVM")
  np.testing.assert_allclose(ta.sum().numpy(), a.sum(dtype=np.float64), rtol=1e-4)
  np.testing.assert_allclose(ta.sum(0).numpy(), a.sum(0), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(ta.sum(1).numpy(), a.sum(1), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose((ta * tb + 1).relu().numpy(), np.maximum(a * b + 1, 0), rtol=1e-6)
  np.testing.assert_allclose(ta[3:].flatten().sum().numpy(), a[3:].sum(dtype=np.float64), rtol=1e-4)  # a view at an offset

ZEN3 = "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nflags\t\t: fpu sse2 avx avx2 fma\n"
ZEN4 = "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nflags\t\t: fpu sse2 avx avx2 fma avx512f\n"
ZEN2 = "vendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 49\nflags\t\t: fpu sse2 avx avx2 fma\n"
ZEN5 = "vendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nflags\t\t: fpu sse2 avx avx2 fma avx512f\n"
XEON = "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 106\nflags\t\t: fpu sse2 avx avx2 fma\n"

def test_which_cpus_stream_their_loads():
  # AMD Zen 1-3 read a stream slower with vmovntdqa (bench/RESULTS.md, stop 51); Zen 4/5, Intel and other machines keep them
  from tinygrad.renderer.host_cpu import streams_loads
  assert not streams_loads("x86_64", ZEN3) and not streams_loads("x86_64", ZEN2)
  assert streams_loads("x86_64", ZEN4) and streams_loads("x86_64", ZEN5) and streams_loads("x86_64", XEON)
  assert streams_loads("aarch64", "") and streams_loads("x86_64", "")

def test_a_renderer_that_does_not_stream_loads_still_streams_stores():
  r = LLVMRenderer()
  r.nontemporal_bytes, r.stream_loads = 1, False
  ir = r.render("k", build().uops)
  assert streamed_loads(ir) == 0 and any(" store " in l and "!nontemporal" in l for l in ir.splitlines())
