"""C helpers for dtypes the C compiler has no usable type for, prepended to a kernel that uses them."""
from tinygrad.renderer.fp8_formats import FP8, Fp8

# float16/bfloat16 where the C compiler has no usable type: held as float in registers (rounded after every op), 16 bits in memory.
# h2f/f2h and bf2f/f2bf convert (round to nearest even); d2fo rounds double to float to odd, so rounding on to 16 bits is exact.
EMULATION = """static inline float __tg_h2f(unsigned short h) {
  unsigned int em = h & 0x7fffu, b;
  if (em >= 0x7c00u) b = (em << 13) + 0x70000000u;
  else if (em >= 0x400u) b = (em << 13) + 0x38000000u;
  else { float s = (float)em * 5.9604644775390625e-08f; __builtin_memcpy(&b, &s, 4); }
  b |= (unsigned int)(h & 0x8000u) << 16; float f; __builtin_memcpy(&f, &b, 4); return f;
}
static inline unsigned short __tg_f2h(float f) {
  unsigned int u; __builtin_memcpy(&u, &f, 4);
  unsigned int s = (u >> 16) & 0x8000u; u &= 0x7fffffffu;
  if (u >= 0x47800000u) return s | (u > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (u < 0x38800000u) { float a; __builtin_memcpy(&a, &u, 4); a += 0.5f; __builtin_memcpy(&u, &a, 4); return s | (u - 0x3f000000u); }
  return s | ((u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13);
}
static inline float __tg_bf2f(unsigned short h) { unsigned int u = (unsigned int)h << 16; float f; __builtin_memcpy(&f, &u, 4); return f; }
static inline unsigned short __tg_f2bf(float f) {
  unsigned int u; __builtin_memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
static inline float __tg_d2fo(double d) {
  float f = (float)d; unsigned int u; __builtin_memcpy(&u, &f, 4);
  if ((double)f != d) { if (__builtin_fabs((double)f) > __builtin_fabs(d)) u -= 1; u |= 1; __builtin_memcpy(&f, &u, 4); }
  return f;
}
static inline float __tg_rh(float x) { return __tg_h2f(__tg_f2h(x)); }
static inline float __tg_rbf(float x) { return __tg_bf2f(__tg_f2bf(x)); }
"""

def _fp8_helpers(f:Fp8) -> str:
  """decode, encode (round to nearest even, subnormals included, fp8_formats.py's overflow rule) and round trip of an 8-bit float"""
  special = "0x7fc00000u" if f.special is None else f"(em << {f.shift}) + {(255 - ((1 << f.ebits) - 1)) << 23}u"
  return f"""static inline float __tg_{f.name}2f(unsigned char h) {{
  unsigned int em = h & 0x7fu, b;
  if (em >= {0x7F if f.special is None else f.special}u) b = {special};
  else if (em >= {1 << f.mbits}u) b = (em << {f.shift}) + {f.rebias}u;
  else {{ float s = (float)em * {f.subnormal_step!r}f; __builtin_memcpy(&b, &s, 4); }}
  b |= (unsigned int)(h & 0x80u) << 24; float f; __builtin_memcpy(&f, &b, 4); return f;
}}
static inline unsigned char __tg_f2{f.name}(float f) {{
  unsigned int u, r; __builtin_memcpy(&u, &f, 4);
  unsigned int s = (u >> 24) & 0x80u; u &= 0x7fffffffu;
  if (u > 0x7f800000u) return s | {f.nan_code}u;
  if (u < {f.min_normal_bits}u) {{ float a; __builtin_memcpy(&a, &u, 4); a += {f.magic!r}f; __builtin_memcpy(&r, &a, 4); r -= {f.magic_bits}u; }}
  else r = (u - {f.rebias}u + {(1 << (f.shift - 1)) - 1}u + ((u >> {f.shift}) & 1u)) >> {f.shift};
  return s | (r > {f.max_code}u ? {f.overflow_code}u : r);
}}
static inline float __tg_r{f.name}(float x) {{ return __tg_{f.name}2f(__tg_f2{f.name}(x)); }}
"""

EMULATION += "".join(_fp8_helpers(f) for f in FP8.values())
