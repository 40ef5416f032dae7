"""CUDA C: the C renderer's tables with CUDA's spellings. A kernel is `extern "C" __global__` (an unmangled name the driver finds),
ids are blockIdx/threadIdx, LOCAL buffers `__shared__`, the barrier __syncthreads(). half and bfloat16 are CUDA's own types from
cuda_fp16.h / cuda_bf16.h (included when a kernel uses them); casts to and from them go through float, since the headers do not give
every conversion on every version. CUDA C is C++: a bitcast is a union read in a small template instead of C99's compound literal."""
from __future__ import annotations
import math, re
from tinygrad.uop import Ops
from tinygrad.dtype import DType, dtypes
from tinygrad.renderer.cstyle import CStyleLanguage

_BITCAST = "template <class T, class F> static __device__ __forceinline__ T tg_bitcast(F x) { union { F f; T t; } u; u.f = x; return u.t; }\n"
# inf and NaN as bit patterns: NVRTC has no math.h, so no INFINITY/NAN macros
_SPECIAL_FLOATS = {dtypes.float64: ("__longlong_as_double", "0x7ff0000000000000ll", "0xfff0000000000000ll", "0x7ff8000000000000ll"),
                   dtypes.float32: ("__int_as_float", "0x7f800000", "0xff800000", "0x7fc00000")}

_HALF_TYPES = {dtypes.float16: "half", dtypes.bfloat16: "__nv_bfloat16"}
def _cuda_math(name:str):
  """float functions; a half/bfloat16 operand goes in as float and the result comes back as its type, so it never meets a half in an
  expression as a float (half op float has two equally good overloads in C++)"""
  def fn(a, dt):
    if (t := _HALF_TYPES.get(dt)) is not None: return f"(({t}){name}f((float)({a})))"
    return f"{name}{'' if dt is dtypes.float64 else 'f'}({a})"
  return fn

def sm_version(arch:str) -> int:
  """"sm_89" -> 89"""
  if (m := re.fullmatch(r"(?:sm|compute)_(\d+)[af]?", arch)) is None: raise ValueError(f"{arch!r} is no CUDA architecture: write sm_XY, e.g. sm_80")
  return int(m[1])

class NVArch:
  """an NVIDIA renderer's architecture (ARCH, sm_80 unless given) and the dtypes it can hold: float16 needs sm_53, bfloat16 sm_80"""
  def __init__(self, arch:str|None=None):
    super().__init__(arch)
    self.arch = arch or "sm_80"
    self.sm = sm_version(self.arch)
  def supported_dtypes(self) -> frozenset[DType]:
    return frozenset(dt for dt in super().supported_dtypes() if not (dt is dtypes.float16 and self.sm < 53 or dt is dtypes.bfloat16 and self.sm < 80))

class CUDARenderer(NVArch, CStyleLanguage):
  device = "CUDA"
  has_local = has_shared = True
  # grid: 2**31-1 blocks in x, 65535 in y and z; a block holds at most 1024 threads, z at most 64
  global_max, local_max = (2**31-1, 65535, 65535), (1024, 1024, 64)
  kernel_prefix, buffer_suffix, smem_prefix, barrier = 'extern "C" __global__ ', " __restrict__", "__shared__ ", "__syncthreads();"
  code_for_workitem = {"gidx": lambda d: f"blockIdx.{'xyz'[d]}", "lidx": lambda d: f"threadIdx.{'xyz'[d]}",
                       "idx": lambda d: f"(blockIdx.{'xyz'[d]}*blockDim.{'xyz'[d]}+threadIdx.{'xyz'[d]})"}
  type_map = {**CStyleLanguage.type_map, dtypes.int8: "signed char", dtypes.int64: "long long", dtypes.uint64: "unsigned long long",
              dtypes.bfloat16: "__nv_bfloat16"}
  int_suffix = {dtypes.uint32: "u", dtypes.int64: "ll", dtypes.uint64: "ull"}
  code_for_op = {**CStyleLanguage.code_for_op, Ops.SQRT: _cuda_math("sqrt"), Ops.EXP2: _cuda_math("exp2"), Ops.LOG2: _cuda_math("log2"),
                 Ops.SIN: _cuda_math("sin"), Ops.TRUNC: _cuda_math("trunc"),
                 Ops.RECIPROCAL: lambda a, dt: f"((({_HALF_TYPES[dt]})1.0f)/{a})" if dt in _HALF_TYPES else
                                               f"({'1.0' if dt is dtypes.float64 else '1.0f'}/{a})"}

  def render_const(self, x, dt:DType) -> str:
    if dt in (dtypes.float16, dtypes.bfloat16): return f"(({self.ctype(dt)}){self.render_const(x, dtypes.float32)})"
    if dt in _SPECIAL_FLOATS and (math.isinf(x) or math.isnan(x)):
      fn, pinf, ninf, nan = _SPECIAL_FLOATS[dt]
      return f"{fn}({nan if math.isnan(x) else pinf if x > 0 else ninf})"
    return super().render_const(x, dt)

  def render_cast(self, x:str, src:DType, dst:DType) -> str:
    if dst in (dtypes.float16, dtypes.bfloat16):
      if src is dtypes.float64: return f"{'__double2half' if dst is dtypes.float16 else '__double2bfloat16'}({x})"  # one rounding
      return f"(({self.ctype(dst)})(float)({x}))"
    if src in (dtypes.float16, dtypes.bfloat16): return f"(({self.ctype(dst)})(float)({x}))"
    return super().render_cast(x, src, dst)

  def render_bitcast(self, x:str, src:DType, dst:DType) -> str:
    if dtypes.is_int(src) and dtypes.is_int(dst): return super().render_bitcast(x, src, dst)
    return f"tg_bitcast<{self.ctype(dst)}>(({self.ctype(src)})({x}))"

  def render_kernel(self, name:str, body:list[str], params, variables, uops) -> str:
    used = {u.dtype for u in uops} | {u.src[0].dtype for u in uops if u.op is Ops.BITCAST}
    prelude = "".join(f"#include <{h}>\n" for dt, h in ((dtypes.float16, "cuda_fp16.h"), (dtypes.bfloat16, "cuda_bf16.h")) if dt in used)
    if any(u.op is Ops.BITCAST for u in uops): prelude += _BITCAST
    return prelude + super().render_kernel(name, body, params, variables, uops)
