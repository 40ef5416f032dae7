"""The host's SIMD registers: read from /proc/cpuinfo, declared by the host renderers (the heuristic sizes its register tiles in them), and
used whole by the compilers on an AVX-512 host, where LLVM's tuning (and gcc's) would otherwise split every 512-bit vector in two."""
import platform, re
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
