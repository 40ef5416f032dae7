"""The C renderer as a rule table: golden text of small kernels, a dialect that is a subclass adding rules and prefixes (not a copy of
render()), and work items dispatched on their structured name. Then DEV=CPU:C's matmul and conv against numpy, and the packed matmul
tile's machine code (the lanes the codegen unrolled come out as vector instructions)."""
import platform, re, subprocess, textwrap
import numpy as np
import pytest
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, KernelInfo
from tinygrad.dtype import dtypes, AddrSpace
from tinygrad.codegen import get_program
from tinygrad.renderer.cstyle import CStyleLanguage, ClangRenderer, base_rewrite
from linprog import Prog, device

class CLike(CStyleLanguage):
  """an OpenCL-shaped dialect: prefixes, work items, and one rule of its own in front of the shared table"""
  has_local = has_shared = True
  global_max, local_max = (2**31-1, 65535, 65535), (256, 256, 256)
  kernel_prefix, buffer_prefix, smem_prefix, barrier = "__kernel ", "__global ", "__local ", "barrier(CLK_LOCAL_MEM_FENCE);"
  code_for_workitem = {"gidx": lambda d: f"get_group_id({d})", "lidx": lambda d: f"get_local_id({d})", "idx": lambda d: f"get_global_id({d})"}
  string_rewrite = PatternMatcher([(UPat(Ops.SQRT, src=(UPat.var("a"),)), lambda ctx, a: f"native_sqrt({ctx[a]})")]) + base_rewrite

def sqrt_kernel() -> list[UOp]:
  p = Prog()
  out, a = p.param(0, dtypes.float32, 8), p.param(1, dtypes.float32, 8)
  r = p.range(8, 0)
  p.store(out, r, p.alu(Ops.SQRT, p.alu(Ops.MUL, p.load(a, r), 2.0)))
  p.end(r)
  return p.uops

def golden(s:str) -> str: return textwrap.dedent(s).lstrip("\n")

def test_golden_c():
  assert ClangRenderer().render("k", sqrt_kernel()) == golden("""
    void k(float* restrict data0, float* restrict data1) {
      for (int ridx0 = 0; ridx0 < 8; ridx0++) {
        float val0 = data1[ridx0];
        data0[ridx0] = __builtin_sqrtf((val0*2.0f));
      }
    }
    """)

def test_golden_do_while_and_gated_load():
  p = Prog()
  out, a = p.param(0, dtypes.int32, 4), p.param(1, dtypes.int32, 4)
  acc = p.reg(dtypes.int32, 1)
  p.store(acc, 0, 0)
  loop = p.loop(0)
  inc = p.alu(Ops.ADD, p.load(acc, 0), p.load(a, 1, alt=0, gate=p.alu(Ops.CMPLT, p.load(a, 0), 5)))
  p.store(acc, 0, inc)
  p.store(out, 0, inc)
  p.end(loop, p.alu(Ops.CMPLT, inc, 10))
  assert ClangRenderer().render("k", p.uops) == golden("""
    void k(int* restrict data0, int* restrict data1) {
      int reg0[1];
      reg0[0] = 0;
      for (;;) {
        int val0 = reg0[0];
        int val1 = data1[0];
        int val2 = (val1<5)?data1[1]:0;
        int alu0 = val0+val2;
        reg0[0] = alu0;
        data0[0] = alu0;
        if (!(alu0<10)) break;
      }
    }
    """)

def test_golden_c_offsets_are_64_bit():
  # buf[x+c] with c a long long: x is widened before the add, so the compiler sees lanes x+0, x+1, ... as adjacent; an offset that only
  # indexes global buffers gets no name (alu1 has one: another offset reads it), a REG array keeps its plain index
  p = Prog()
  out, a = p.param(0, dtypes.float32, 8), p.param(1, dtypes.float32, 9)
  acc = p.reg(dtypes.float32, 2)
  r = p.range(4, 0)
  base = p.alu(Ops.MUL, r, 2)
  hi = p.alu(Ops.ADD, base, 1)
  p.store(acc, 1, p.load(a, p.alu(Ops.ADD, base, -1), alt=0.0, gate=p.alu(Ops.CMPLT, 0, r)))
  p.store(out, hi, p.alu(Ops.ADD, p.load(a, hi), p.load(acc, 1)))
  p.store(out, base, p.load(a, p.alu(Ops.ADD, hi, 1)))
  p.end(r)
  assert ClangRenderer().render("k", p.uops) == golden("""
    void k(float* restrict data0, float* restrict data1) {
      float reg0[2];
      for (int ridx0 = 0; ridx0 < 4; ridx0++) {
        int alu0 = ridx0*2;
        int alu1 = alu0+1;
        float val0 = (0<ridx0)?data1[alu0+(-1ll)]:0.0f;
        reg0[1] = val0;
        float val1 = data1[alu0+1ll];
        float val2 = reg0[1];
        data0[alu0+1ll] = val1+val2;
        float val3 = data1[alu1+1ll];
        data0[alu0] = val3;
      }
    }
    """)

def test_dialect_adds_rules_and_prefixes():
  assert CLike.render is CStyleLanguage.render  # the dialect is tables, not another render()
  assert CLike().render("k", sqrt_kernel()) == golden("""
    __kernel void k(__global float* data0, __global float* data1) {
      for (int ridx0 = 0; ridx0 < 8; ridx0++) {
        float val0 = data1[ridx0];
        data0[ridx0] = native_sqrt((val0*2.0f));
      }
    }
    """)

def test_dialect_renders_work_items_local_memory_and_barriers():
  # GLOBAL/LOCAL ranges through the gpudims pass: each group reverses its 16 elements through LOCAL memory
  out, a = UOp.param(0, dtypes.float, (64,)), UOp.param(1, dtypes.float, (64,))
  g, lc = UOp.range(4, 0, AxisType.GLOBAL), UOp.range(16, 1, AxisType.LOCAL)
  smem = UOp.placeholder((16,), dtypes.float, 0, addrspace=AddrSpace.LOCAL)
  shared = smem.after(smem[lc].store(a[g*16 + lc].load()).barrier())
  sink = out[g*16 + lc].store(shared[15 - lc].load()).end(g, lc).sink(arg=KernelInfo(name="reverse16"))
  spec = get_program(sink, CLike())
  assert (spec.global_size, spec.local_size) == ((4, 1, 1), (16, 1, 1))
  assert spec.src == golden("""
    __kernel void reverse16(__global float* data0, __global float* data1) {
      int gidx0 = get_group_id(0); /* 4 */
      int lidx0 = get_local_id(0); /* 16 */
      int alu0 = (gidx0*16)+lidx0;
      __local float smem0[16];
      float val0 = data1[alu0];
      smem0[lidx0] = val0;
      barrier(CLK_LOCAL_MEM_FENCE);
      float val1 = smem0[(lidx0*(-1))+15];
      data0[alu0] = val1;
    }
    """)

def special(name:str) -> list[UOp]:
  p = Prog()
  out = p.param(0, dtypes.int32, 4)
  p.store(out, 0, p.add(UOp(Ops.SPECIAL, dtypes.int32, (p.const(4),), name)))
  return p.uops

@pytest.mark.parametrize("name, call", [("gidx1", "get_group_id(1)"), ("lidx0", "get_local_id(0)"), ("idx2", "get_global_id(2)")])
def test_work_item_dispatch_on_kind(name, call):
  assert f"int {name} = {call}; /* 4 */" in CLike().render("k", special(name))

@pytest.mark.parametrize("name", ["lane0", "group0", "items1", "gidx"])
def test_work_item_dispatch_is_not_by_first_letter(name):
  # a first-letter dispatch would render these as get_local_id/get_group_id/get_global_id
  with pytest.raises(ValueError, match="is no work item"): CLike().render("k", special(name))

def test_renderer_without_work_items_says_so():
  # gidx0 is the CPU's thread id (a THREAD axis); group-local ids are not
  with pytest.raises(RuntimeError, match="ClangRenderer has no work items"): ClangRenderer().render("k", special("lidx0"))

def c_device():
  if device("C") is None: pytest.skip("no C compiler (clang/gcc/cc) on PATH")
  return "CPU:C"

# 520: rows not a multiple of the tile's; 1536: ran scalar (21 GFLOP/s) while every offset x+c was an int sign-extended as a whole
@pytest.mark.parametrize("n", [520, 1536])
def test_c_matmul_matches_numpy(n):
  from tinygrad import Tensor
  rng = np.random.default_rng(n)
  a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
  out = (Tensor(a, device=c_device()) @ Tensor(b, device=c_device())).numpy()
  np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-3)

def test_c_conv2d_matches_numpy():
  from tinygrad import Tensor
  rng = np.random.default_rng(0)
  x, w = rng.standard_normal((2, 16, 20, 20), dtype=np.float32), rng.standard_normal((32, 16, 3, 3), dtype=np.float32)
  out = Tensor(x, device=c_device()).conv2d(Tensor(w, device=c_device()), padding=1).numpy()
  cols = np.lib.stride_tricks.sliding_window_view(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))).astype(np.float64), (3, 3), axis=(2, 3))
  np.testing.assert_allclose(out, np.einsum("bchwij,ocij->bohw", cols, w.astype(np.float64)), rtol=1e-4, atol=1e-3)

def test_clang_packs_the_matmul_tile_into_vectors():
  """the packed matmul kernel's code as clang compiles it for this host: packed FMAs only, no scalar one and no spill (x86 with FMA)"""
  from tinygrad import Tensor, Device
  from tinygrad.runtime.host_toolchain import cc_is_clang
  from tinygrad.schedule.rangeify import create_schedule
  dev = Device[c_device()]
  if platform.machine().lower() not in ("x86_64", "amd64") or "fma" not in open("/proc/cpuinfo").read() or not cc_is_clang(dev.compiler.cc):
    pytest.skip("needs clang on an x86 host with FMA")
  a = Tensor.empty(1536, 1536, device="CPU:C")
  ast = [it for it in create_schedule([(a @ a).uop])[0] if it.kind == "kernel"][-1].ast
  src = get_program(ast, dev.renderer).src
  flags = [f for f in dev.compiler.flags if f not in ("-shared", "-fPIC")]
  asm = subprocess.run([dev.compiler.cc, *flags, "-S", "-x", "c", "-", "-o", "-"], input=src.encode(), capture_output=True, check=True)
  asm = asm.stdout.decode()
  # AVX2's tile (16 registers) keeps 8 vector accumulators, AVX-512's 24
  assert len(re.findall(r"vfmadd\d+ps", asm)) >= 8 and not re.findall(r"vfmadd\d+ss", asm), asm
  assert "Spill" not in asm and "Reload" not in asm, asm

def test_an_unknown_cpu_model_for_the_c_compiler_is_named():
  # DEV=CPU:C:ARCH passes ARCH to -march: an unknown one failed every kernel's compile with the kernel's source; now the device says so
  from tinygrad import Tensor
  from tinygrad.device import DeviceError
  with pytest.raises(DeviceError, match=r"'bogus' is not a CPU model .* can compile for \(-march=bogus\)"):
    Tensor([1.0, 2.0], device="CPU:C:bogus").sum().item()
