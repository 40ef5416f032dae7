"""OpenCL C, a dialect of the C family (renderer/cstyle.py): kernels are `__kernel`, buffers `__global`, LOCAL arrays `__local`, work
items come from get_group_id/get_local_id/get_global_id and a barrier is barrier(CLK_LOCAL_MEM_FENCE). What a device can hold depends on
its extensions, named by ARCH as '+'-joined features (DEV=NULL:CL:fp16+fp64; a CL device passes its own):
  fp16  cl_khr_fp16: half is a native type. Without it half is held as float and stored as 16 bits (vload_half/vstore_half_rte,
        which every OpenCL C has), rounded after every op like the C renderer's emulation.
  fp64  cl_khr_fp64: double. bfloat16 is emulated with the same helpers, and needs double for exact rounding from wide ints.
QCOMRenderer is the Qualcomm Adreno flavour (DEV=CL:QCOM, DEV=QCOM): bool buffers are uchar in memory (its compiler mishandles bool
loads), and no double, bfloat16 or fp8; half only where the device has cl_khr_fp16."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.dtype import DType, dtypes
from tinygrad.helpers import strip_parens
from tinygrad.renderer.cstyle import CStyleLanguage

FEATURES = {"fp16": "cl_khr_fp16", "fp64": "cl_khr_fp64"}

def parse_arch(arch:str|None) -> frozenset[str]:
  feats = frozenset(f for f in (arch or "").lower().split("+") if f)
  if bad := sorted(feats - FEATURES.keys()):
    raise ValueError(f"OpenCL ARCH {arch!r} names unknown features {bad}: ARCH is '+'-joined features from {sorted(FEATURES)}, e.g. fp16+fp64")
  return feats

def arch_of(extensions:set[str]|frozenset[str]) -> str:
  """the ARCH for a device with these OpenCL extensions"""
  return "+".join(f for f, ext in FEATURES.items() if ext in extensions)

# half and bfloat16 where there is no native type: float in registers, 16 bits in memory. vload_half/vstore_half_rte are core OpenCL C
# (no extension) and read/write a half through a pointer; bfloat16 is the top half of a float, rounded to nearest even
EMULATION_16 = """static inline float __tg_h2f(ushort h) { return vload_half(0, (const half*)&h); }
static inline ushort __tg_f2h(float f) { ushort h; vstore_half_rte(f, 0, (half*)&h); return h; }
static inline float __tg_rh(float x) { return __tg_h2f(__tg_f2h(x)); }
"""
EMULATION_BF16 = """static inline float __tg_bf2f(ushort h) { return as_float((uint)h << 16); }
static inline ushort __tg_f2bf(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static inline float __tg_rbf(float x) { return __tg_bf2f(__tg_f2bf(x)); }
"""
# double -> float rounded to odd: rounding on to 16 bits is then exact (one rounding, not two)
EMULATION_D2FO = """static inline float __tg_d2fo(double d) {
  float f = (float)d; uint u = as_uint(f);
  if ((double)f != d) { if (fabs((double)f) > fabs(d)) u -= 1; u |= 1; f = as_float(u); }
  return f;
}
"""

def _math(name:str): return lambda *a, dt: f"{name}({', '.join(a)})"  # OpenCL's math builtins are overloaded for every float type

class OpenCLRenderer(CStyleLanguage):
  device = "CL"
  kernel_prefix, buffer_prefix, smem_prefix = "__kernel ", "__global ", "__local "
  barrier = "barrier(CLK_LOCAL_MEM_FENCE);"
  has_local = has_shared = True
  # group counts: dim 0 as large as a 32-bit launch allows, dims 1/2 like the smallest GPUs; items per group: 256 fit every device
  global_max, local_max = (2**31 - 1, 65535, 65535), (256, 256, 64)
  code_for_workitem = {"gidx": lambda d: f"get_group_id({d})", "lidx": lambda d: f"get_local_id({d})", "idx": lambda d: f"get_global_id({d})"}
  type_map = {dtypes.bool: "bool", dtypes.int8: "char", dtypes.uint8: "uchar", dtypes.int16: "short", dtypes.uint16: "ushort",
              dtypes.int32: "int", dtypes.uint32: "uint", dtypes.int64: "long", dtypes.uint64: "ulong", dtypes.float16: "half",
              dtypes.float32: "float", dtypes.float64: "double"}
  code_for_op = {**CStyleLanguage.code_for_op, Ops.SQRT: _math("sqrt"), Ops.EXP2: _math("exp2"), Ops.LOG2: _math("log2"),
                 Ops.SIN: _math("sin"), Ops.TRUNC: _math("trunc")}

  def __init__(self, arch:str|None=None):
    super().__init__(arch)
    self.features = parse_arch(arch)
    self.type_map = {dt: t for dt, t in type(self).type_map.items() if dt is not dtypes.float64 or "fp64" in self.features}
    self.emulated = {}
    if "fp16" not in self.features: self.emulated[dtypes.float16] = ("__tg_h2f", "__tg_f2h", "__tg_rh")
    if "fp64" in self.features: self.emulated[dtypes.bfloat16] = ("__tg_bf2f", "__tg_f2bf", "__tg_rbf")

  @classmethod
  def for_extensions(cls, extensions:frozenset[str]) -> OpenCLRenderer:
    """the renderer for a device with these OpenCL extensions"""
    return cls(arch_of(extensions))

  def supported_dtypes(self) -> frozenset[DType]:
    return frozenset(dt for dt in super().supported_dtypes() if dt in self.type_map or dt in self.emulated)
  def storage_type(self, dt:DType) -> str: return "ushort" if dt in self.emulated else self.ctype(dt)

  def render_const(self, x, dt:DType) -> str:
    # a float literal would turn half arithmetic into float arithmetic: rounded once at the end, not after every op
    return f"(half){super().render_const(x, dtypes.float32)}" if dt is dtypes.float16 and dt not in self.emulated else super().render_const(x, dt)

  def render_alu(self, op:Ops, srcs:list[str], u) -> str:
    if op is Ops.RECIPROCAL and u.dtype is dtypes.float16 and u.dtype not in self.emulated: return f"((half)1.0f/{srcs[0]})"
    return super().render_alu(op, srcs, u)

  def render_cast(self, x:str, src:DType, dst:DType) -> str:
    # an int is exact as float up to 2**24, beyond half's range: int -> float -> half rounds once, and needs no double
    if dst is dtypes.float16 and dst in self.emulated and (dtypes.is_int(src) or src is dtypes.bool): x, src = f"(float)({x})", dtypes.float32
    return super().render_cast(x, src, dst)

  def render_bitcast(self, x:str, src:DType, dst:DType) -> str:
    if dst is dtypes.bool or src in self.emulated or dst in self.emulated or (dtypes.is_int(src) and dtypes.is_int(dst)):
      return super().render_bitcast(x, src, dst)
    return f"as_{self.ctype(dst)}({strip_parens(x)})"  # OpenCL's reinterpretation of bits between types of one size

  def render_kernel(self, name:str, body:list[str], params:list, variables:list, uops:list) -> str:
    used = {u.dtype for u in uops} | {u.src[1].dtype for u in uops if u.op is Ops.STORE}
    # OpenCL C may fuse a*b+c into one fma by default: every target computes the ops as written, so it must not
    needs = {"fp16": {dtypes.float16}, "fp64": {dtypes.float64, dtypes.bfloat16}}  # bfloat16 emulation rounds through double
    prelude = "#pragma OPENCL FP_CONTRACT OFF\n" + \
              "".join(f"#pragma OPENCL EXTENSION {FEATURES[f]} : enable\n" for f, dts in needs.items() if f in self.features and dts & used)
    # a double cast to an emulated type rounds once through __tg_d2fo (cstyle's render_cast): with bfloat16's, or a float64 beside a half
    if (dtypes.bfloat16 in used or dtypes.float64 in used) and used & self.emulated.keys(): prelude += EMULATION_D2FO
    if dtypes.float16 in used and dtypes.float16 in self.emulated: prelude += EMULATION_16
    if dtypes.bfloat16 in used and dtypes.bfloat16 in self.emulated: prelude += EMULATION_BF16
    # the runtime sets a variable as 4 bytes (int32, as every runtime passes it); OpenCL C widens it where the kernel computes in 64 bits
    args = [f"{self.buffer_prefix}{self.storage_type(p.dtype)}* data{p.arg.slot}" for p in params] + \
           [f"const {self.ctype(dtypes.int32)} {v.arg.name}" for v in variables]
    return prelude + f"{self.kernel_prefix}void {name}({', '.join(args)}) {{\n" + "\n".join(body) + "\n}\n"

class QCOMRenderer(OpenCLRenderer):
  device = "QCOM"
  def __init__(self, arch:str|None=None):
    super().__init__(arch)
    if "fp64" in self.features: raise ValueError(f"QCOM ARCH {arch!r}: Adreno has no double (fp64); the only feature is fp16")
    self.emulated = {}  # half only where the device has it; no bfloat16
    if "fp16" not in self.features: self.type_map = {dt: t for dt, t in self.type_map.items() if dt is not dtypes.float16}

  @classmethod
  def for_extensions(cls, extensions:frozenset[str]) -> OpenCLRenderer: return cls(arch_of(extensions - {FEATURES["fp64"]}))

  # a global bool buffer is uchar in memory: a load compares with 0, a store writes 0 or 1
  def storage_type(self, dt:DType) -> str: return "uchar" if dt is dtypes.bool else super().storage_type(dt)
  def render_load(self, dt:DType, idx) -> str:
    return f"({self[idx]}!=0)" if dt is dtypes.bool and not self._is_reg(idx) else super().render_load(dt, idx)
  def render_store(self, idx, val) -> str:
    return f"({self[val]}?1:0)" if val.dtype is dtypes.bool and not self._is_reg(idx) else super().render_store(idx, val)
