"""The GPU renderers (CUDA C, PTX, AMDGPU LLVM IR): golden text of an elementwise kernel over a grid, a reduction through LOCAL memory
with a barrier, and a do-while loop; each output checked by the target's compiler where this machine has it (nvcc/NVRTC, ptxas,
llvmlite's AMDGPU target) and structurally everywhere (PTX: check_ptx; AMDGPU: the code object's kernel descriptor)."""
import textwrap
import pytest
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes
from tinygrad.codegen import get_program
from tinygrad.device import CompileError
from tinygrad.renderer.cuda import CUDARenderer
from tinygrad.renderer.ptx import PTXRenderer
from tinygrad.renderer.amdgpu import AMDGPURenderer
from tinygrad.runtime import cuda_toolchain
from tinygrad.runtime.ptx_check import check_ptx
from tinygrad.runtime.compiler_cuda import CUDACompiler, PTXCompiler
from tinygrad.runtime.compiler_amdgpu import AMDGPUCompiler, read_code_object, R_AMDGPU_REL64
from gpu_kernels import elementwise_ast, local_sum_ast, do_while
from linprog import Prog

def golden(s:str) -> str: return textwrap.dedent(s).lstrip("\n")

GOLDEN_CUDA = {
  "elementwise": golden("""
    extern "C" __global__ void fma64(float* __restrict__ data0, float* __restrict__ data1, float* __restrict__ data2) {
      int gidx0 = blockIdx.x; /* 4 */
      int lidx0 = threadIdx.x; /* 16 */
      int alu0 = (gidx0*16)+lidx0;
      float val0 = data1[alu0];
      float val1 = data2[alu0];
      data0[alu0] = (val0*2.0f)+val1;
    }
"""),
  "local_sum": golden("""
    extern "C" __global__ void local_sum(float* __restrict__ data0, float* __restrict__ data1) {
      int gidx0 = blockIdx.x; /* 8 */
      __shared__ float smem0[4];
      int lidx0 = threadIdx.x; /* 4 */
      float val0 = data1[(gidx0*4)+lidx0];
      smem0[lidx0] = val0;
      __syncthreads();
      float val1 = smem0[0];
      float val2 = smem0[1];
      float val3 = smem0[2];
      float val4 = smem0[3];
      data0[gidx0] = ((val1+val2)+val3)+val4;
    }
"""),
  "do_while": golden("""
    extern "C" __global__ void do_while(int* __restrict__ data0) {
      int reg0[1];
      reg0[0] = 0;
      for (;;) {
        int val0 = reg0[0];
        int alu0 = (int)(((unsigned int)val0)+((unsigned int)1));
        reg0[0] = alu0;
        if (!(alu0<10)) break;
      }
      int val1 = reg0[0];
      data0[0] = val1;
    }
"""),
}

GOLDEN_PTX = {
  "elementwise": golden("""
    .version 7.0
    .target sm_80
    .address_size 64

    .visible .entry fma64(
    \t.param .u64 data0,
    \t.param .u64 data1,
    \t.param .u64 data2
    )
    {
    \t.reg .b64 %rd<6>;
    \t.reg .b32 %r<6>;
    \t.reg .f32 %f<5>;
    \tld.param.u64 %rd0, [data0];
    \tcvta.to.global.u64 %rd0, %rd0;
    \tmov.b32 %r0, 0x00000004;
    \tmov.u32 %r1, %ctaid.x;
    \tmov.b32 %r2, 0x00000010;
    \tmul.lo.s32 %r3, %r1, %r2;
    \tmov.u32 %r4, %tid.x;
    \tadd.s32 %r5, %r3, %r4;
    \tmul.wide.s32 %rd1, %r5, 4;
    \tadd.s64 %rd1, %rd0, %rd1;
    \tld.param.u64 %rd2, [data1];
    \tcvta.to.global.u64 %rd2, %rd2;
    \tmul.wide.s32 %rd3, %r5, 4;
    \tadd.s64 %rd3, %rd2, %rd3;
    \tld.global.f32 %f0, [%rd3];
    \tmov.b32 %f1, 0f40000000;
    \tmul.rn.f32 %f2, %f0, %f1;
    \tld.param.u64 %rd4, [data2];
    \tcvta.to.global.u64 %rd4, %rd4;
    \tmul.wide.s32 %rd5, %r5, 4;
    \tadd.s64 %rd5, %rd4, %rd5;
    \tld.global.f32 %f3, [%rd5];
    \tadd.rn.f32 %f4, %f2, %f3;
    \tst.global.f32 [%rd1], %f4;
    \tret;
    }
"""),
  "local_sum": golden("""
    .version 7.0
    .target sm_80
    .address_size 64

    .visible .entry local_sum(
    \t.param .u64 data0,
    \t.param .u64 data1
    )
    {
    \t.reg .b64 %rd<4>;
    \t.reg .b32 %r<16>;
    \t.reg .f32 %f<8>;
    \t.shared .align 16 .b8 smem0[16];
    \tld.param.u64 %rd0, [data0];
    \tcvta.to.global.u64 %rd0, %rd0;
    \tmov.b32 %r0, 0x00000008;
    \tmov.u32 %r1, %ctaid.x;
    \tmul.wide.s32 %rd1, %r1, 4;
    \tadd.s64 %rd1, %rd0, %rd1;
    \tmov.u32 %r2, smem0;
    \tmov.b32 %r3, 0x00000004;
    \tmov.u32 %r4, %tid.x;
    \tmad.lo.s32 %r5, %r4, 4, %r2;
    \tld.param.u64 %rd2, [data1];
    \tcvta.to.global.u64 %rd2, %rd2;
    \tmul.lo.s32 %r6, %r1, %r3;
    \tadd.s32 %r7, %r6, %r4;
    \tmul.wide.s32 %rd3, %r7, 4;
    \tadd.s64 %rd3, %rd2, %rd3;
    \tld.global.f32 %f0, [%rd3];
    \tst.shared.f32 [%r5], %f0;
    \tbar.sync 0;
    \tmov.b32 %r8, 0x00000000;
    \tmad.lo.s32 %r9, %r8, 4, %r2;
    \tld.shared.f32 %f1, [%r9];
    \tmov.b32 %r10, 0x00000001;
    \tmad.lo.s32 %r11, %r10, 4, %r2;
    \tld.shared.f32 %f2, [%r11];
    \tadd.rn.f32 %f3, %f1, %f2;
    \tmov.b32 %r12, 0x00000002;
    \tmad.lo.s32 %r13, %r12, 4, %r2;
    \tld.shared.f32 %f4, [%r13];
    \tadd.rn.f32 %f5, %f3, %f4;
    \tmov.b32 %r14, 0x00000003;
    \tmad.lo.s32 %r15, %r14, 4, %r2;
    \tld.shared.f32 %f6, [%r15];
    \tadd.rn.f32 %f7, %f5, %f6;
    \tst.global.f32 [%rd1], %f7;
    \tret;
    }
"""),
  "do_while": golden("""
    .version 7.0
    .target sm_80
    .address_size 64

    .visible .entry do_while(
    \t.param .u64 data0
    )
    {
    \t.reg .b32 %r<7>;
    \t.reg .b64 %rd<2>;
    \t.reg .pred %p<1>;
    \tld.param.u64 %rd0, [data0];
    \tcvta.to.global.u64 %rd0, %rd0;
    \tmov.b32 %r1, 0x00000000;
    \tmov.b32 %r0, %r1;
    $L5:
    \tmov.b32 %r2, %r0;
    \tmov.b32 %r3, 0x00000001;
    \tadd.s32 %r4, %r2, %r3;
    \tmov.b32 %r0, %r4;
    \tmov.b32 %r5, 0x0000000A;
    \tsetp.lt.s32 %p0, %r4, %r5;
    \t@%p0 bra $L5;
    \tmov.b32 %r6, %r0;
    \tmul.wide.s32 %rd1, %r1, 4;
    \tadd.s64 %rd1, %rd0, %rd1;
    \tst.global.s32 [%rd1], %r6;
    \tret;
    }
"""),
}

GOLDEN_AMDGPU = {
  "elementwise": golden("""
    target triple = "amdgcn-amd-amdhsa"
    define amdgpu_kernel void @"fma64"(ptr addrspace(1) noalias %data0, ptr addrspace(1) noalias %data1, ptr addrspace(1) noalias %data2) nounwind {
    entry:
      %v2 = call i32 @llvm.amdgcn.workgroup.id.x()
      %v4 = mul i32 %v2, 16
      %v5 = call i32 @llvm.amdgcn.workitem.id.x()
      %v6 = add i32 %v4, %v5
      %v7 = getelementptr inbounds float, ptr addrspace(1) %data0, i32 %v6
      %v9 = getelementptr inbounds float, ptr addrspace(1) %data1, i32 %v6
      %v10 = load float, ptr addrspace(1) %v9
      %v12 = fmul float %v10, 0x4000000000000000
      %v14 = getelementptr inbounds float, ptr addrspace(1) %data2, i32 %v6
      %v15 = load float, ptr addrspace(1) %v14
      %v16 = fadd float %v12, %v15
      store float %v16, ptr addrspace(1) %v7
      ret void
    }
    declare i32 @llvm.amdgcn.workgroup.id.x()
    declare i32 @llvm.amdgcn.workitem.id.x()
    !llvm.module.flags = !{!0}
    !0 = !{i32 1, !"amdhsa_code_object_version", i32 500}
"""),
  "local_sum": golden("""
    target triple = "amdgcn-amd-amdhsa"
    @smem0 = internal addrspace(3) global [4 x float] undef, align 16
    define amdgpu_kernel void @"local_sum"(ptr addrspace(1) noalias %data0, ptr addrspace(1) noalias %data1) nounwind {
    entry:
      %v2 = call i32 @llvm.amdgcn.workgroup.id.x()
      %v3 = getelementptr inbounds float, ptr addrspace(1) %data0, i32 %v2
      %v6 = call i32 @llvm.amdgcn.workitem.id.x()
      %v7 = getelementptr inbounds float, ptr addrspace(3) @smem0, i32 %v6
      %v9 = mul i32 %v2, 4
      %v10 = add i32 %v9, %v6
      %v11 = getelementptr inbounds float, ptr addrspace(1) %data1, i32 %v10
      %v12 = load float, ptr addrspace(1) %v11
      store float %v12, ptr addrspace(3) %v7
      fence syncscope("workgroup") release
      call void @llvm.amdgcn.s.barrier()
      fence syncscope("workgroup") acquire
      %v16 = getelementptr inbounds float, ptr addrspace(3) @smem0, i32 0
      %v17 = load float, ptr addrspace(3) %v16
      %v19 = getelementptr inbounds float, ptr addrspace(3) @smem0, i32 1
      %v20 = load float, ptr addrspace(3) %v19
      %v21 = fadd float %v17, %v20
      %v23 = getelementptr inbounds float, ptr addrspace(3) @smem0, i32 2
      %v24 = load float, ptr addrspace(3) %v23
      %v25 = fadd float %v21, %v24
      %v27 = getelementptr inbounds float, ptr addrspace(3) @smem0, i32 3
      %v28 = load float, ptr addrspace(3) %v27
      %v29 = fadd float %v25, %v28
      store float %v29, ptr addrspace(1) %v3
      ret void
    }
    declare i32 @llvm.amdgcn.workgroup.id.x()
    declare i32 @llvm.amdgcn.workitem.id.x()
    declare void @llvm.amdgcn.s.barrier()
    !llvm.module.flags = !{!0}
    !0 = !{i32 1, !"amdhsa_code_object_version", i32 500}
"""),
  "do_while": golden("""
    target triple = "amdgcn-amd-amdhsa"
    define amdgpu_kernel void @"do_while"(ptr addrspace(1) noalias %data0) nounwind {
    entry:
      %v1 = alloca [1 x i32], addrspace(5)
      %v3 = getelementptr inbounds i32, ptr addrspace(5) %v1, i32 0
      store i32 0, ptr addrspace(5) %v3
      br label %L5
    L5:
      %v6 = load i32, ptr addrspace(5) %v3
      %v8 = add i32 %v6, 1
      store i32 %v8, ptr addrspace(5) %v3
      %v11 = icmp slt i32 %v8, 10
      br i1 %v11, label %L5, label %L5.exit
    L5.exit:
      %v13 = load i32, ptr addrspace(5) %v3
      %v14 = getelementptr inbounds i32, ptr addrspace(1) %data0, i32 0
      store i32 %v13, ptr addrspace(1) %v14
      ret void
    }
    !llvm.module.flags = !{!0}
    !0 = !{i32 1, !"amdhsa_code_object_version", i32 500}
"""),
}

def render(renderer, kernel:str) -> str:
  if kernel == "do_while": return renderer.render("do_while", do_while())
  return get_program({"elementwise": elementwise_ast, "local_sum": local_sum_ast}[kernel](), renderer).src

KERNELS = ["elementwise", "local_sum", "do_while"]
NBUFS = {"elementwise": 3, "local_sum": 2, "do_while": 1}

@pytest.mark.parametrize("kernel", KERNELS)
def test_golden_cuda(kernel): assert render(CUDARenderer(), kernel) == GOLDEN_CUDA[kernel]

@pytest.mark.parametrize("kernel", KERNELS)
def test_golden_ptx(kernel): assert render(PTXRenderer(), kernel) == GOLDEN_PTX[kernel]

@pytest.mark.parametrize("kernel", KERNELS)
def test_golden_amdgpu(kernel): assert render(AMDGPURenderer(), kernel) == GOLDEN_AMDGPU[kernel]

def test_launch_geometry_from_the_grid():
  for r in (CUDARenderer(), PTXRenderer(), AMDGPURenderer()):
    assert (get_program(elementwise_ast(), r).global_size, get_program(elementwise_ast(), r).local_size) == ((4, 1, 1), (16, 1, 1))
    assert (get_program(local_sum_ast(), r).global_size, get_program(local_sum_ast(), r).local_size) == ((8, 1, 1), (4, 1, 1))

# *** PTX: structure everywhere, ptxas where it is installed ***

@pytest.mark.parametrize("kernel", KERNELS)
def test_ptx_structure(kernel):
  entries = check_ptx(GOLDEN_PTX[kernel])
  assert list(entries.values()) == [[("u64", f"data{i}") for i in range(NBUFS[kernel])]]  # one parameter per buffer, in slot order

def test_ptx_check_finds_what_is_wrong():
  ok = GOLDEN_PTX["do_while"]
  for bad, msg in [(ok.replace("@%p0 bra $L5;", "@%p0 bra $L6;"), "branch to \\$L6"),
                   (ok.replace(".reg .pred %p<1>;", ""), "register %p0 is used but not declared"),
                   (ok.replace(".reg .b32 %r<7>;", ".reg .b32 %r<6>;"), "register %r6"),
                   (ok.replace("[data0]", "[data1]"), "ld.param reads data1"),
                   (ok.replace("\tret;\n}", "\tret;\n"), "'{' left open"),
                   (ok.replace(".target sm_80\n", ""), "no .target")]:
    with pytest.raises(ValueError, match=msg): check_ptx(bad)

def test_ptx_variables_are_parameters_after_the_buffers():
  p = Prog()
  out = p.param(0, dtypes.int32, 4)
  n = p.var("n", 1, 4)
  r = p.range(n, 0)
  p.store(out, r, p.alu(Ops.MUL, r, n))
  p.end(r)
  src = PTXRenderer().render("k", p.uops)
  assert check_ptx(src) == {"k": [("u64", "data0"), ("s32", "var_n")]}
  assert "ld.param.s32 %r0, [var_n];" in src and "@!%p0 bra $L2_exit;" in src and "bra $L2;" in src

@pytest.mark.skipif(cuda_toolchain.find_tool("ptxas") is None, reason="ptxas is not installed (the structural checks above still run)")
@pytest.mark.parametrize("kernel", KERNELS)
def test_ptxas_accepts(kernel): PTXCompiler("sm_80").compile(GOLDEN_PTX[kernel])

@pytest.mark.skipif(cuda_toolchain.find_tool("ptxas") is None, reason="ptxas is not installed")
def test_ptxas_rejections_are_compile_errors():
  with pytest.raises(CompileError, match="ptxas rejected"): PTXCompiler("sm_80").compile(GOLDEN_PTX["do_while"].replace("add.s32", "add.q32"))

# *** CUDA C: NVRTC or nvcc where installed ***

@pytest.mark.skipif(cuda_toolchain.probe_cuda_c()[0] is False, reason="neither libnvrtc nor nvcc is installed")
@pytest.mark.parametrize("kernel", KERNELS)
def test_cuda_c_compiles_to_ptx(kernel):
  ptx = CUDACompiler("sm_80").compile(GOLDEN_CUDA[kernel]).decode()
  name = {"elementwise": "fma64"}.get(kernel, kernel)
  assert list(check_ptx(ptx)) == [name]  # extern "C": the entry keeps the kernel's name, the driver finds it

def test_no_cuda_compiler_is_a_clear_error(monkeypatch):
  monkeypatch.setattr(cuda_toolchain, "find_library", lambda stem: None)
  monkeypatch.setattr(cuda_toolchain, "find_tool", lambda name: None)
  assert cuda_toolchain.probe_cuda_c() == (False, pytest.approx(cuda_toolchain.probe_cuda_c()[1]))
  with pytest.raises(CompileError, match="unavailable: libnvrtc not found and no nvcc"): CUDACompiler()

# *** AMDGPU: compiled by llvmlite, the code object's kernel descriptor read back ***

@pytest.mark.parametrize("kernel, lds", [("elementwise", 0), ("local_sum", 16), ("do_while", 0)])
def test_amdgpu_code_object(kernel, lds):
  name = {"elementwise": "fma64"}.get(kernel, kernel)
  co = read_code_object(AMDGPUCompiler("gfx1100").compile(GOLDEN_AMDGPU[kernel]), name)
  assert co.elf.type == 1 and co.elf.machine == 224  # a relocatable AMDGPU object
  assert co.kd.group_segment_size == lds                     # the LOCAL buffer: 4 floats in LDS
  assert co.kd.kernarg_size == 8 * NBUFS[kernel]             # one 64-bit pointer per buffer, no hidden arguments
  assert co.entry_reloc[0] == R_AMDGPU_REL64 and co.entry_offset(0x1000, 0x3000) == 0x1000 - 0x3000  # the descriptor points at the code
  assert co.kd.workgroup_id_enabled(0) and not co.kd.workgroup_id_enabled(1)  # LLVM always enables x

def test_amdgpu_descriptor_follows_the_ids_used():
  # a 2D grid: group ids x and y in SGPRs, work-item ids x and y in VGPRs
  p = Prog()
  out = p.param(0, dtypes.int32, 64)
  ids = [p.add(UOp(Ops.SPECIAL, dtypes.int32, (p.const(4),), n)) for n in ("gidx0", "gidx1", "lidx0", "lidx1")]
  i = p.alu(Ops.ADD, p.alu(Ops.ADD, p.alu(Ops.MUL, ids[1], 16), p.alu(Ops.MUL, ids[0], 4)), p.alu(Ops.ADD, ids[2], ids[3]))
  p.store(out, i, i)
  kd = read_code_object(AMDGPUCompiler().compile(AMDGPURenderer().render("grid2d", p.uops)), "grid2d").kd
  assert kd.workgroup_id_enabled(0) and kd.workgroup_id_enabled(1) and not kd.workgroup_id_enabled(2) and kd.workitem_id_dims == 2

def test_amdgpu_arch_reaches_the_code_object():
  for arch in ("gfx90a", "gfx1100"):
    lib = AMDGPUCompiler(arch).compile(GOLDEN_AMDGPU["elementwise"])
    assert read_code_object(lib, "fma64").elf.flags & 0xff != 0  # e_flags carries the GPU model (EF_AMDGPU_MACH)
  assert AMDGPUCompiler("gfx90a").compile(GOLDEN_AMDGPU["elementwise"]) != AMDGPUCompiler("gfx1100").compile(GOLDEN_AMDGPU["elementwise"])

def test_amdgpu_global_id_is_refused():
  p = Prog()
  p.store(p.param(0, dtypes.int32, 4), 0, p.add(UOp(Ops.SPECIAL, dtypes.int32, (p.const(4),), "idx0")))
  with pytest.raises(RuntimeError, match="AMDGPURenderer has no work item idx0"): AMDGPURenderer().render("k", p.uops)

# *** PTX over every dtype: each ALU op, cast and bitcast the renderer has a rule for, accepted by ptxas ***

PTX_DTYPES = [dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64,
              dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]

def ptx_dtype_kernels() -> list[str]:
  from linprog import elementwise, unary
  r, out = PTXRenderer(), []
  for dt in PTX_DTYPES:
    for op in (Ops.ADD, Ops.MUL, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.SUB, Ops.FDIV, Ops.CDIV, Ops.CMOD, Ops.AND, Ops.OR, Ops.XOR,
               Ops.SHL, Ops.SHR):
      if (op in (Ops.SUB, Ops.FDIV) and dt is dtypes.bool) or (op is Ops.FDIV and not dtypes.is_float(dt)) or \
         (op in (Ops.CDIV, Ops.CMOD, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR) and (dtypes.is_float(dt) or dt is dtypes.bool)): continue
      out.append(r.render("k", elementwise(op, dt, 4).uops))
    out.append(r.render("k", elementwise(Ops.WHERE, dt, 4, nin=3, in_dts=(dtypes.bool, dt, dt)).uops))
    out.append(r.render("k", elementwise(Ops.NEG, dt, 4, nin=1).uops))
    if dtypes.is_float(dt):
      out += [r.render("k", elementwise(op, dt, 4, nin=1).uops) for op in (Ops.SQRT, Ops.RECIPROCAL, Ops.TRUNC)]
    for dst in PTX_DTYPES:
      out.append(r.render("k", unary(lambda p, x: p.cast(x, dst), dt, dst, 4).uops))
      if dt.itemsize == dst.itemsize and dt is not dst and dtypes.bool not in (dt, dst):
        out.append(r.render("k", unary(lambda p, x: p.bitcast(x, dst), dt, dst, 4).uops))
  return out

def test_ptx_every_dtype_is_well_formed():
  srcs = ptx_dtype_kernels()
  assert len(srcs) > 250
  for s in srcs: check_ptx(s)

@pytest.mark.skipif(cuda_toolchain.find_tool("ptxas") is None, reason="ptxas is not installed (test_ptx_every_dtype_is_well_formed still runs)")
def test_ptxas_accepts_every_dtype():
  srcs = ptx_dtype_kernels()
  # one module: the first kernel's header, every kernel renamed k0, k1, ..
  module = srcs[0].partition(".visible .entry ")[0] + "\n".join(f".visible .entry k{i}" + s.partition(".visible .entry k")[2]
                                                                for i, s in enumerate(srcs))
  PTXCompiler("sm_80").compile(module)
