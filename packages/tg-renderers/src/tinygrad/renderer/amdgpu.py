"""LLVM IR for AMD GPUs (amdgcn-amd-amdhsa): the LLVM renderer's rule table with a few rules in front. Buffers live in the global
address space (1), a work group's LOCAL buffers in LDS (3, module globals: LDS cannot be allocated on a stack), REG arrays on the
private stack (5). Ids come from the llvm.amdgcn.workgroup.id / workitem.id intrinsics; the barrier is s_barrier between
workgroup-scope fences, so LDS stores before it are seen by loads after it. Transcendentals use the software decompositions
(codegen/transcendental.py): the hardware's v_sin/v_exp are approximations and the f64 intrinsics would call a libm AMDGPU lacks."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UPat, PatternMatcher
from tinygrad.dtype import AddrSpace
from tinygrad.helpers import prod
from tinygrad.renderer.llvmir import LLVMRenderer, base_rewrite, ltype
from tinygrad.codegen.gpudims import workitem
from tinygrad.renderer.tensor_cores import WMMA_RDNA3

TRIPLE = "amdgcn-amd-amdhsa"
CODE_OBJECT_VERSION = 500  # the HSA code object format (v5) the loader reads: kernel descriptors as `<name>.kd` symbols

def _special(ctx:AMDGPURenderer, x:UOp) -> list[str]:
  kind, dim = workitem(x.arg)
  if kind not in ctx.code_for_workitem:
    raise RuntimeError(f"{type(ctx).__name__} has no work item {x.arg}: kernels use group ids (gidx) and ids within the group (lidx)")
  if ltype(x.dtype) == "i32": return [f"  {ctx[x]} = {ctx.code_for_workitem[kind](dim)}"]
  return [f"  {ctx[x]}.i = {ctx.code_for_workitem[kind](dim)}", f"  {ctx[x]} = zext i32 {ctx[x]}.i to {ltype(x.dtype)}"]

def _lds(ctx:AMDGPURenderer, x:UOp) -> str:
  """a LOCAL buffer is a module global in LDS: its name is the operand, no instruction"""
  name = f"@smem{len(ctx.lds)}"
  ctx.lds.append(f"{name} = internal addrspace(3) global [{prod(x.arg.shape)} x {ltype(x.dtype)}] undef, align 16")
  return name

def _wmma(ctx:AMDGPURenderer, x:UOp) -> list[str]:
  """the WMMA nodes with the same sources are one v_wmma_f32_16x16x16_f16: the first builds the <16 x half> A and B and <8 x float> C
  vectors (element i of the lane's fragment at index i) and calls it; each node takes its element of the result"""
  d, lines = ctx[x], []
  if (res := ctx.wmma.get(x.src)) is None:
    na, nb, nc = x.arg[0].elements
    def vector(vals, t:str, n:int, tag:str) -> str:
      cur = "undef"
      for i, v in enumerate(vals):
        if t == "half": lines.append(f"  {d}.{tag}h{i} = fptrunc float {ctx[v]} to half")  # a float16 value, exact in half
        lines.append(f"  {d}.{tag}{i} = insertelement <{n} x {t}> {cur}, {t} {f'{d}.{tag}h{i}' if t == 'half' else ctx[v]}, i32 {i}")
        cur = f"{d}.{tag}{i}"
      return cur
    a, b, c = vector(x.src[:na], "half", na, "a"), vector(x.src[na:na+nb], "half", nb, "b"), vector(x.src[na+nb:], "float", nc, "c")
    res = ctx.wmma[x.src] = f"{d}.d"
    lines.append(f"  {res} = call <{nc} x float> @llvm.amdgcn.wmma.f32.16x16x16.f16(<{na} x half> {a}, <{nb} x half> {b}, <{nc} x float> {c})")
  return lines + [f"  {d} = extractelement <{x.arg[0].elements[2]} x float> {res}, i32 {x.arg[1]}"]

amdgpu_rewrite = PatternMatcher([
  (UPat(Ops.WMMA, name="x"), _wmma),
  (UPat(Ops.SPECIAL, name="x"), _special),
  (UPat(Ops.BUFFER, name="x"), lambda ctx, x: _lds(ctx, x) if x.arg.addrspace is AddrSpace.LOCAL else None),
  (UPat(Ops.BARRIER), lambda: ['  fence syncscope("workgroup") release', "  call void @llvm.amdgcn.s.barrier()",
                               '  fence syncscope("workgroup") acquire']),
]) + base_rewrite

class AMDGPURenderer(LLVMRenderer):
  device = "AMD"
  has_threads, has_local, has_shared = False, True, True
  # groups per dim fit in 32 bits; a work group holds at most 1024 items
  global_max, local_max = (2**31-1, 2**31-1, 2**31-1), (1024, 1024, 1024)
  kernel_cc = "amdgpu_kernel "
  addrspace = {AddrSpace.GLOBAL: 1, AddrSpace.LOCAL: 3, AddrSpace.REG: 5}
  param_align = 0  # a view into a GPU buffer may start anywhere, and the HCQ runtime does not check
  code_for_workitem = {"gidx": lambda d: f"call i32 @llvm.amdgcn.workgroup.id.{'xyz'[d]}()",
                       "lidx": lambda d: f"call i32 @llvm.amdgcn.workitem.id.{'xyz'[d]}()"}
  code_for_op = {k: v for k, v in LLVMRenderer.code_for_op.items() if k not in (Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.MULACC)}
  string_rewrite = amdgpu_rewrite

  def __init__(self, arch:str|None=None):
    super().__init__(arch)
    self.arch = arch or "gfx1100"
    # RDNA3 (gfx11) in wave32, LLVM's default there
    self.tensor_cores = WMMA_RDNA3 if self.arch.startswith("gfx11") else ()

  def render(self, name:str, uops:list[UOp]) -> str:
    self.lds: list[str] = []
    self.wmma: dict[tuple, str] = {}
    fn = super().render(name, uops)
    if self.wmma: fn += "declare <8 x float> @llvm.amdgcn.wmma.f32.16x16x16.f16(<16 x half>, <16 x half>, <8 x float>)\n"
    flags = f'!llvm.module.flags = !{{!0}}\n!0 = !{{i32 1, !"amdhsa_code_object_version", i32 {CODE_OBJECT_VERSION}}}\n'
    return f'target triple = "{TRIPLE}"\n' + "".join(f"{g}\n" for g in self.lds) + fn + flags
