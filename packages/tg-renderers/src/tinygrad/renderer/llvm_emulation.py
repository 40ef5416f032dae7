"""LLVM IR helpers for dtypes the CPU holds as float: float16/bfloat16 <-> float conversions and rounding, appended to a kernel that uses them."""

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
