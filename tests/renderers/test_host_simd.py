"""The host's SIMD registers: read from /proc/cpuinfo, declared by the host renderers (the heuristic sizes its register tiles in them), and
used whole by the compilers on an AVX-512 host, where LLVM's tuning (and gcc's) would otherwise split every 512-bit vector in two."""
import platform, re
import numpy as np
import pytest
from tinygrad.renderer.host_cpu import simd_registers
from tinygrad.renderer.llvmir import LLVMRenderer
from tinygrad.renderer.cstyle import ClangRenderer

def test_simd_registers_read_the_cpu():
  assert simd_registers("x86_64", "processor: 0\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512vl\n") == (64, 32)
  assert simd_registers("x86_64", "flags\t\t: fpu sse2 avx avx2 fma\n") == (32, 16)
  assert simd_registers("x86_64", "flags\t\t: fpu sse2 sse4_2\n") == (16, 16)
  assert simd_registers("x86_64", "flags\t\t: fpu avx512vl\n") == (16, 16)  # only the foundation (avx512f) gives 512-bit float vectors
  assert simd_registers("aarch64", "") == simd_registers("arm64", "") == (16, 32)
  assert simd_registers("x86_64", "") is None and simd_registers("riscv64", "flags: v") is None

def test_renderers_declare_the_hosts_registers(monkeypatch):
  import tinygrad.renderer.llvmir as llvmir, tinygrad.renderer.cstyle as cstyle
  for mod, cls in ((llvmir, LLVMRenderer), (cstyle, ClangRenderer)):
    monkeypatch.setattr(mod, "host_simd_registers", lambda: (64, 32))
    assert (cls().vector_bytes, cls().vector_registers) == (64, 32)
    # a named CPU model is not the host: the default (AVX2's); an unknown host too
    assert (cls("x86-64").vector_bytes, cls("x86-64").vector_registers) == (32, 16)
    monkeypatch.setattr(mod, "host_simd_registers", lambda: None)
    assert (cls().vector_bytes, cls().vector_registers) == (32, 16)

@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86's AVX-512 registers; assembles, runs nothing")
def test_llvm_uses_whole_avx512_registers(monkeypatch):
  # any x86 host: llvmlite is told it is on an AVX-512 CPU whose tuning prefers 256-bit vectors (Ice Lake), and only assembles
  import llvmlite.binding as llvm
  from tinygrad.runtime.ops_cpu import LLVMCompiler
  class Features(dict):
    def flatten(self): return ",".join(("+" if v else "-") + k for k, v in self.items())
  monkeypatch.setattr(llvm, "get_host_cpu_name", lambda: "icelake-server")
  monkeypatch.setattr(llvm, "get_host_cpu_features", lambda: Features({"avx": True, "avx2": True, "fma": True, "avx512f": True, "avx512vl": True}))
  src = ("define void @add(ptr noalias %a, ptr noalias %b) {\n  %x = load <16 x float>, ptr %a\n  %y = load <16 x float>, ptr %b\n"
         "  %s = fadd <16 x float> %x, %y\n  store <16 x float> %s, ptr %a\n  ret void\n}\n")
  asm = LLVMCompiler().assembly(src)
  assert re.search(r"vaddps\s.*zmm", asm), asm
  # without AVX-512 the same vector is two ymm adds
  monkeypatch.setattr(llvm, "get_host_cpu_name", lambda: "haswell")
  monkeypatch.setattr(llvm, "get_host_cpu_features", lambda: Features({"avx": True, "avx2": True, "fma": True, "avx512f": False}))
  asm = LLVMCompiler().assembly(src)
  assert "zmm" not in asm and len(re.findall(r"vaddps\s.*ymm", asm)) == 2, asm

def test_llvm_leaves_out_sse4a_beside_avx(monkeypatch):
  # insertq (SSE4a, no VEX form) after AVX code: ~0.17 us each on a Zen 3 guest, where LLVM gathered bytes with it
  import llvmlite.binding as llvm
  from tinygrad.runtime.ops_cpu import LLVMCompiler
  class Features(dict):
    def flatten(self): return ",".join(("+" if v else "-") + k for k, v in self.items())
  monkeypatch.setattr(llvm, "get_host_cpu_name", lambda: "znver3")
  monkeypatch.setattr(llvm, "get_host_cpu_features", lambda: Features({"avx": True, "avx2": True, "fma": True, "sse4a": True}))
  assert LLVMCompiler().features.split(",")[-1] == "-sse4a"
  monkeypatch.setattr(llvm, "get_host_cpu_features", lambda: Features({"avx": False, "sse4a": True}))  # no AVX code to follow
  assert "-sse4a" not in LLVMCompiler().features.split(",")

def test_c_compiler_leaves_out_sse4a_beside_avx(monkeypatch):
  from tinygrad.runtime import ops_cpu, host_toolchain
  if host_toolchain.find_cc() is None or not ops_cpu._host_cpu().startswith("flags"): pytest.skip("no C compiler or no x86 cpuinfo here")
  monkeypatch.setattr(ops_cpu, "_host_cpu", lambda: "flags\t\t: fpu sse2 avx avx2 sse4a")
  assert "-mno-sse4a" in (cc := ops_cpu.ClangCompiler()).flags
  if "sse4a" in open("/proc/cpuinfo").read(): assert cc.compile("void k(float *restrict a) { a[0] += 1.0f; }")  # the compiler takes it
  monkeypatch.setattr(ops_cpu, "_host_cpu", lambda: "flags\t\t: fpu sse2 sse4a")
  assert "-mno-sse4a" not in ops_cpu.ClangCompiler().flags

def test_c_compiler_asks_for_whole_avx512_registers(monkeypatch):
  from tinygrad.runtime import ops_cpu, host_toolchain
  if host_toolchain.find_cc() is None: pytest.skip("no C compiler on this machine")
  monkeypatch.setattr(ops_cpu, "host_simd_registers", lambda: (64, 32))
  cc = ops_cpu.ClangCompiler()
  assert "-mprefer-vector-width=512" in cc.flags and "-mprefer-vector-width=512" not in ops_cpu.ClangCompiler("x86-64").flags
  assert cc.compile("void k(float *restrict a) { for (int i = 0; i < 64; i++) a[i] += 1.0f; }")  # the compiler takes the flag
  monkeypatch.setattr(ops_cpu, "host_simd_registers", lambda: (32, 16))
  assert "-mprefer-vector-width=512" not in ops_cpu.ClangCompiler().flags

@pytest.mark.parametrize("cc", ["clang", "gcc"])
def test_c_compiler_vectorizes_as_clang_or_gcc(monkeypatch, cc):
  # clang: SLP alone plus its clean-up passes, and 24-accumulator tiles; gcc takes none of those flags and keeps 16 accumulators
  import shutil
  from tinygrad.runtime import ops_cpu, host_toolchain
  if shutil.which(cc) is None: pytest.skip(f"no {cc} on this machine")
  monkeypatch.setenv("CC", cc)
  compiler = ops_cpu.ClangCompiler()
  assert (" ".join(host_toolchain.CLANG_VECTORIZING) in " ".join(compiler.flags)) == (cc == "clang")
  assert compiler.compile("void k(float *restrict a) { for (int i = 0; i < 64; i++) a[i] += 1.0f; }")  # the compiler takes its flags
  assert ClangRenderer().tile_lanes == (384 if cc == "clang" else 256) and ClangRenderer("x86-64").tile_lanes == 256

# a sign test on int lanes whose mask feeds scalar selects, with xmm0-15 taken so the vector lands in xmm16-31
_MASK_TO_SELECTS = """define void @f(ptr %in, ptr %out) {
  %v = load <2 x i32>, ptr %in, align 4
  call void asm sideeffect "", "~{xmm0},~{xmm1},~{xmm2},~{xmm3},~{xmm4},~{xmm5},~{xmm6},~{xmm7},~{xmm8},~{xmm9},~{xmm10},~{xmm11},~{xmm12},~{xmm13},~{xmm14},~{xmm15}"()
  %c = icmp slt <2 x i32> %v, zeroinitializer
  %a0 = extractelement <2 x i32> %v, i64 0
  %a1 = extractelement <2 x i32> %v, i64 1
  %c0 = extractelement <2 x i1> %c, i64 0
  %c1 = extractelement <2 x i1> %c, i64 1
  %x0 = xor i32 %a0, 2147483647
  %x1 = xor i32 %a1, 2147483647
  %s0 = select i1 %c0, i32 %x0, i32 %a0
  %s1 = select i1 %c1, i32 %x1, i32 %a1
  store i32 %s0, ptr %out
  %o1 = getelementptr i32, ptr %out, i64 1
  store i32 %s1, ptr %o1
  ret void
}
"""

def test_llvm_never_reads_a_mask_from_the_wrong_register(monkeypatch):
  """LLVM 22 folds vpmovd2m + kmov into vmovmskps, which cannot name xmm16-31 (llvm-project #191304): from xmm19 it read xmm3 (a sort
  of sin(x) ranked elements below themselves). Any x86 host: llvmlite is told it is on an AVX-512VL CPU and only assembles"""
  import llvmlite.binding as llvm
  from tinygrad.runtime.ops_cpu import LLVMCompiler
  if not llvm.get_process_triple().startswith("x86_64"): pytest.skip("an x86 backend fold")
  class Features(dict):
    def flatten(self): return ",".join(("+" if v else "-") + k for k, v in self.items())
  monkeypatch.setattr(llvm, "get_host_cpu_name", lambda: "icelake-server")
  monkeypatch.setattr(llvm, "get_host_cpu_features", lambda: Features({f: True for f in ("avx", "avx2", "fma", "avx512f", "avx512vl", "avx512dq", "avx512bw")}))
  c = LLVMCompiler()
  mod = llvm.parse_assembly(_MASK_TO_SELECTS)  # emitted as written: the O2 pipeline would fold the selects into a vector one
  mod.triple, mod.data_layout = c.triple, c.data_layout
  asm = c.emitter(mod).emit_assembly(mod)
  assert not re.search(r"movmsk\w*\s+%[xy]mm(1[6-9]|2\d|3[01])", asm), asm
  assert "vpmovd2m" in c.tm.emit_assembly(mod) or "movmsk" in c.tm.emit_assembly(mod)  # the IR does reach the fold's input

def test_sort_of_a_computed_expression_ranks_right(monkeypatch):
  """the same fold on this host's own kernels: the rank kernel of a sort recomputing sin(x) (sort stores a computed input first; that
  is turned off here) gave indices past the row on AVX-512VL hosts"""
  from tinygrad import Tensor
  from tinygrad.mixin.sorting import SortingMixin
  monkeypatch.setattr(SortingMixin, "_computed_once", lambda self: self)
  x = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32) * 3
  np.testing.assert_array_equal(Tensor(x).sin().sort(-1)[1].numpy(), np.argsort(np.sin(x), -1, kind="stable"))

def test_a_widened_vector_mask_is_emitted_without_avx512():
  """the gradient of a conv sharded along its width: SLP packed its selects into a <2 x i1> mask shuffled to <4 x i1>, and LLVM 22's
  instruction selection aborted the process on this AVX-512 host (without AVX-512VL too). Run in a child: an abort is a signal there"""
  import subprocess, sys
  prog = """
import numpy as np
from tinygrad import Tensor
D3 = ("CPU:0", "CPU:1", "CPU:2")
X = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
W = np.ones((4, 1, 2, 3), np.float32)
grads = []
for devs in (None, D3):
  x = Tensor(X, requires_grad=True)
  (x if devs is None else x.shard(devs, 1)).reshape(1, 1, 5, 6).conv2d(Tensor(W) if devs is None else Tensor(W).shard(devs)).relu().sum().backward()
  grads.append(x.grad.numpy())
np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)
print("same")
"""
  r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env={**__import__("os").environ, "CACHELEVEL": "0"}, timeout=120)
  assert r.returncode == 0 and "same" in r.stdout, (r.returncode, r.stderr[-2000:])
