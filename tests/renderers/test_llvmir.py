"""The LLVM IR renderer as a rule table: golden IR of a small kernel, and a GPU-shaped dialect that is a subclass adding work items and a
barrier rule (not a copy of render()); the CPU renderer has no work items and says so."""
import textwrap
import pytest
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UPat, PatternMatcher
from tinygrad.dtype import dtypes
from tinygrad.renderer.llvmir import LLVMRenderer, base_rewrite
from linprog import Prog, elementwise

class AMDLike(LLVMRenderer):
  has_local = True
  code_for_workitem = {"gidx": lambda d: f"call i32 @llvm.amdgcn.workgroup.id.{'xyz'[d]}()",
                       "lidx": lambda d: f"call i32 @llvm.amdgcn.workitem.id.{'xyz'[d]}()"}
  string_rewrite = PatternMatcher([(UPat(Ops.BARRIER), lambda: ["  call void @llvm.amdgcn.s.barrier()"])]) + base_rewrite

def test_golden_llvm_ir():
  assert LLVMRenderer().render("k", elementwise(Ops.ADD, dtypes.float32, 4).uops) == textwrap.dedent("""
    define void @"k"(ptr noalias %data0, ptr noalias %data1, ptr noalias %data2) nounwind {
    entry:
      br label %L4
    L4:
      %v4 = phi i32 [0, %entry], [%v4.next, %L4.latch]
      %v4.c = icmp slt i32 %v4, 4
      br i1 %v4.c, label %L4.body, label %L4.exit
    L4.body:
      %v5 = getelementptr inbounds float, ptr %data1, i32 %v4
      %v6 = load float, ptr %v5
      %v7 = getelementptr inbounds float, ptr %data2, i32 %v4
      %v8 = load float, ptr %v7
      %v9 = fadd float %v6, %v8
      %v10 = getelementptr inbounds float, ptr %data0, i32 %v4
      store float %v9, ptr %v10
      br label %L4.latch
    L4.latch:
      %v4.next = add i32 %v4, 1
      br label %L4
    L4.exit:
      ret void
    }
    """).lstrip("\n")

def grid_program() -> list[UOp]:
  # out[gidx0*16 + lidx0] = lidx0, then a barrier
  p = Prog()
  out = p.param(0, dtypes.int32, 64)
  g = p.add(UOp(Ops.SPECIAL, dtypes.int32, (p.const(4),), "gidx0"))
  lc = p.add(UOp(Ops.SPECIAL, dtypes.int32, (p.const(16),), "lidx0"))
  p.add(UOp(Ops.BARRIER, dtypes.void, (p.store(out, p.alu(Ops.ADD, p.alu(Ops.MUL, g, 16), lc), lc),)))
  return p.uops

def test_dialect_renders_work_items_and_barrier():
  assert AMDLike.render is LLVMRenderer.render
  src = AMDLike().render("k", grid_program())
  for line in ["%v2 = call i32 @llvm.amdgcn.workgroup.id.x()", "%v4 = call i32 @llvm.amdgcn.workitem.id.x()",
               "call void @llvm.amdgcn.s.barrier()", "declare i32 @llvm.amdgcn.workgroup.id.x()", "declare void @llvm.amdgcn.s.barrier()"]:
    assert line in src
  import llvmlite.binding as llvm
  llvm.parse_assembly(src).verify()  # intrinsics without arguments are declared right

def test_cpu_llvm_has_no_work_items():
  # gidx0 is the CPU's thread id (a THREAD axis); group-local ids are not
  with pytest.raises(RuntimeError, match=r"LLVMRenderer has no work items \(SPECIAL lidx0\)"): LLVMRenderer().render("k", grid_program())

def test_work_item_dispatch_is_not_by_first_letter():
  p = Prog()
  p.store(p.param(0, dtypes.int32, 4), 0, p.add(UOp(Ops.SPECIAL, dtypes.int32, (p.const(4),), "lane0")))
  with pytest.raises(ValueError, match="is no work item"): AMDLike().render("k", p.uops)

def test_an_unknown_cpu_model_is_a_python_error():
  # LLVM "ignores" a CPU model it does not know, then aborted the whole process in code generation ("64-bit code requested on a
  # subtarget that doesn't support it"): now a DeviceError naming it, and the process goes on; a known model compiles
  import subprocess, sys
  code = ("from tinygrad import Tensor\nfrom tinygrad.device import DeviceError\n"
          "try: Tensor([1., 2.], device='CPU:LLVM:bogus').sum().item()\nexcept DeviceError as e: print('refused:', e)\n"
          "print(Tensor([1., 2.], device='CPU:LLVM:x86-64').sum().item() if 'x86' in __import__('platform').machine() else 3.0)")
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr[-2000:]
  assert "refused: 'bogus' is not a CPU model LLVM can compile for" in r.stdout and r.stdout.strip().endswith("3.0")
