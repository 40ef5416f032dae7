"""LLVM IR helpers for dtypes the CPU holds as float: float16/bfloat16/fp8 <-> float conversions and rounding, appended to a kernel that
uses them."""
import struct
from tinygrad.renderer.fp8_formats import FP8, Fp8

# float16/bfloat16 conversions (round to nearest even) and double -> float rounding to odd, so a second rounding to 16 bits is exact
HELPERS = """define internal float @__tg_h2f(i16 %h) alwaysinline {
  %x = zext i16 %h to i32
  %em = and i32 %x, 32767
  %sh = shl i32 %em, 13
  %nb = add i32 %sh, 939524096
  %ib = add i32 %sh, 1879048192
  %sf = uitofp i32 %em to float
  %sv = fmul float %sf, 0x3E70000000000000
  %sb = bitcast float %sv to i32
  %isnorm = icmp uge i32 %em, 1024
  %isinf = icmp uge i32 %em, 31744
  %b0 = select i1 %isnorm, i32 %nb, i32 %sb
  %b1 = select i1 %isinf, i32 %ib, i32 %b0
  %s = and i32 %x, 32768
  %ss = shl i32 %s, 16
  %b = or i32 %b1, %ss
  %f = bitcast i32 %b to float
  ret float %f
}
define internal i16 @__tg_f2h(float %f) alwaysinline {
  %u0 = bitcast float %f to i32
  %s0 = lshr i32 %u0, 16
  %s = and i32 %s0, 32768
  %u = and i32 %u0, 2147483647
  %big = icmp uge i32 %u, 1199570944
  %isnan = icmp ugt i32 %u, 2139095040
  %inf = select i1 %isnan, i32 32256, i32 31744
  %small = icmp ult i32 %u, 947912704
  %af = bitcast i32 %u to float
  %a = fadd float %af, 0x3FE0000000000000
  %ab = bitcast float %a to i32
  %sub = sub i32 %ab, 1056964608
  %o0 = lshr i32 %u, 13
  %odd = and i32 %o0, 1
  %n0 = add i32 %u, -939520001
  %n1 = add i32 %n0, %odd
  %n = lshr i32 %n1, 13
  %r0 = select i1 %small, i32 %sub, i32 %n
  %r1 = select i1 %big, i32 %inf, i32 %r0
  %r = or i32 %r1, %s
  %h = trunc i32 %r to i16
  ret i16 %h
}
define internal float @__tg_bf2f(i16 %h) alwaysinline {
  %x = zext i16 %h to i32
  %s = shl i32 %x, 16
  %f = bitcast i32 %s to float
  ret float %f
}
define internal i16 @__tg_f2bf(float %f) alwaysinline {
  %u = bitcast float %f to i32
  %a = and i32 %u, 2147483647
  %isnan = icmp ugt i32 %a, 2139095040
  %hi = lshr i32 %u, 16
  %q = or i32 %hi, 64
  %odd = and i32 %hi, 1
  %r0 = add i32 %u, 32767
  %r1 = add i32 %r0, %odd
  %r2 = lshr i32 %r1, 16
  %r = select i1 %isnan, i32 %q, i32 %r2
  %h = trunc i32 %r to i16
  ret i16 %h
}
define internal float @__tg_d2fo(double %d) alwaysinline {
  %f = fptrunc double %d to float
  %b = fpext float %f to double
  %exact = fcmp oeq double %b, %d
  %ab = call double @llvm.fabs.f64(double %b)
  %ad = call double @llvm.fabs.f64(double %d)
  %away = fcmp ogt double %ab, %ad
  %u = bitcast float %f to i32
  %dn = sub i32 %u, 1
  %u1 = select i1 %away, i32 %dn, i32 %u
  %u2 = or i32 %u1, 1
  %r = select i1 %exact, i32 %u, i32 %u2
  %o = bitcast i32 %r to float
  ret float %o
}
declare double @llvm.fabs.f64(double)
define internal float @__tg_rh(float %x) alwaysinline {
  %h = call i16 @__tg_f2h(float %x)
  %f = call float @__tg_h2f(i16 %h)
  ret float %f
}
define internal float @__tg_rbf(float %x) alwaysinline {
  %h = call i16 @__tg_f2bf(float %x)
  %f = call float @__tg_bf2f(i16 %h)
  ret float %f
}
"""

def _hex(x:float) -> str: return f"0x{struct.unpack('<Q', struct.pack('<d', x))[0]:016X}"  # an LLVM float constant: its double's bits

def _fp8_helpers(f:Fp8) -> str:
  """decode, encode (round to nearest even, subnormals included, fp8_formats.py's overflow rule) and round trip of an 8-bit float"""
  spec_start, spec_bits = (0x7F, "2143289344") if f.special is None else (f.special, "%ib")
  return f"""define internal float @__tg_{f.name}2f(i8 %h) alwaysinline {{
  %x = zext i8 %h to i32
  %em = and i32 %x, 127
  %sh = shl i32 %em, {f.shift}
  %nb = add i32 %sh, {f.rebias}
  %ib = add i32 %sh, {(255 - ((1 << f.ebits) - 1)) << 23}
  %sf = uitofp i32 %em to float
  %sv = fmul float %sf, {_hex(f.subnormal_step)}
  %sb = bitcast float %sv to i32
  %isnorm = icmp uge i32 %em, {1 << f.mbits}
  %isspec = icmp uge i32 %em, {spec_start}
  %b0 = select i1 %isnorm, i32 %nb, i32 %sb
  %b1 = select i1 %isspec, i32 {spec_bits}, i32 %b0
  %s = and i32 %x, 128
  %ss = shl i32 %s, 24
  %b = or i32 %b1, %ss
  %f = bitcast i32 %b to float
  ret float %f
}}
define internal i8 @__tg_f2{f.name}(float %f) alwaysinline {{
  %u0 = bitcast float %f to i32
  %s0 = lshr i32 %u0, 24
  %s = and i32 %s0, 128
  %u = and i32 %u0, 2147483647
  %isnan = icmp ugt i32 %u, 2139095040
  %small = icmp ult i32 %u, {f.min_normal_bits}
  %af = bitcast i32 %u to float
  %a = fadd float %af, {_hex(f.magic)}
  %ab = bitcast float %a to i32
  %sub = sub i32 %ab, {f.magic_bits}
  %o0 = lshr i32 %u, {f.shift}
  %odd = and i32 %o0, 1
  %n0 = add i32 %u, {(1 << (f.shift - 1)) - 1 - f.rebias}
  %n1 = add i32 %n0, %odd
  %n = lshr i32 %n1, {f.shift}
  %r0 = select i1 %small, i32 %sub, i32 %n
  %big = icmp ugt i32 %r0, {f.max_code}
  %r1 = select i1 %big, i32 {f.overflow_code}, i32 %r0
  %r2 = select i1 %isnan, i32 {f.nan_code}, i32 %r1
  %r = or i32 %r2, %s
  %h = trunc i32 %r to i8
  ret i8 %h
}}
define internal float @__tg_r{f.name}(float %x) alwaysinline {{
  %h = call i8 @__tg_f2{f.name}(float %x)
  %f = call float @__tg_{f.name}2f(i8 %h)
  ret float %f
}}
"""

HELPERS += "".join(_fp8_helpers(f) for f in FP8.values())
