"""ggml's block-quantized tensor types, dequantized to float32 with Tensor ops where the bytes are (no Python loop over blocks).
A type stores a fixed number of elements in a fixed number of bytes per block; the layouts are ggml's (ggml-common.h, which the GGUF
spec defers to). Each decoder takes the blocks as uint8 (n, bytes per block) and returns float32 with n * elements per block values."""
from __future__ import annotations
from tinygrad.dtype import dtypes

# IQ4_NL / IQ4_XS map each 4-bit code to one of 16 non-uniform levels
IQ4_LEVELS = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)
# MXFP4's 4-bit codes are E2M1 floats (sign, 2 exponent bits, 1 mantissa bit), stored doubled so they are integers
MXFP4_LEVELS = (0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12)

def _f32(t): return t.cast(dtypes.float32)
def _f16(two_bytes): return _f32(two_bytes.bitcast(dtypes.float16))  # (..., 2) uint8 -> (..., 1)
def _nibbles(q):
  """(..., k) bytes -> (..., 2k) 4-bit codes: ggml puts element j in the low nibble of byte j and element j+k in its high nibble"""
  return (q & 0xF).cat(q >> 4, dim=-1)
def _planes(q, width:int):
  """(..., k) bytes -> (..., 8 // width, k): plane p holds bits [p*width, (p+1)*width) of every byte"""
  from tinygrad.tensor import Tensor
  return Tensor.stack(*[q >> (width * p) & ((1 << width) - 1) for p in range(8 // width)], dim=-2)
def _bits(q):
  """(..., k) bytes -> (..., 8k) bits, least significant first: bit j of the little-endian word the bytes make"""
  return _planes(q, 1).transpose(-1, -2).flatten(-2)
def _levels(table:tuple, codes):
  from tinygrad.tensor import Tensor
  return Tensor(table, dtype=dtypes.float32, device=codes.device)[codes.cast(dtypes.int32)]

def q4_0(b): return (_f32(_nibbles(b[:, 2:18])) - 8) * _f16(b[:, 0:2])
def q4_1(b): return _f32(_nibbles(b[:, 4:20])) * _f16(b[:, 0:2]) + _f16(b[:, 2:4])
def _q5(b, low_at:int):
  """5-bit codes: 4 low bits as in Q4, the 5th bit of element j is bit j of the 32-bit word before the nibbles"""
  return _f32(_nibbles(b[:, low_at:low_at+16]) | (_bits(b[:, low_at-4:low_at]) << 4))
def q5_0(b): return (_q5(b, 6) - 16) * _f16(b[:, 0:2])
def q5_1(b): return _q5(b, 8) * _f16(b[:, 0:2]) + _f16(b[:, 2:4])
def q8_0(b): return _f32(b[:, 2:34].bitcast(dtypes.int8)) * _f16(b[:, 0:2])
def q1_0(b): return (_f32(_bits(b[:, 2:18])) * 2 - 1) * _f16(b[:, 0:2])  # a set bit is +d, a clear one -d
def iq4_nl(b): return _levels(IQ4_LEVELS, _nibbles(b[:, 2:18])) * _f16(b[:, 0:2])

def mxfp4(b):
  """an E8M0 exponent byte e then 16 bytes of E2M1 codes; the levels are doubled, so the scale is 2**(e-128), half of E8M0's 2**(e-127)"""
  e = b[:, 0:1].cast(dtypes.uint32)
  # 2**(e-128) as float32 bits: a normal for e >= 2, the subnormals 2**-128 and 2**-127 for e = 0 and 1
  scale = (e < 2).where((e + 1) * 0x200000, (e - 1) * 0x800000).bitcast(dtypes.float32)
  return _levels(MXFP4_LEVELS, _nibbles(b[:, 1:17])) * scale

# K-quants: 256-element super-blocks of 16 or 8 sub-blocks, each with its own small scale (and min) under an fp16 one
def _two_bit_codes(qs):
  """Q2_K/Q3_K: 64 bytes -> 256 2-bit codes; each 32-byte half packs 128 elements as 4 bit-planes of 32"""
  return _planes(qs.reshape(-1, 2, 32), 2).flatten(-3)

def q2_k(b):
  """16 scale bytes (low nibble scale, high nibble min per 16 elements), 64 bytes of 2-bit codes, fp16 d, fp16 dmin"""
  sc, codes = b[:, 0:16], _f32(_two_bit_codes(b[:, 16:80])).reshape(-1, 16, 16)
  d, dmin = _f16(b[:, 80:82]).unsqueeze(-1), _f16(b[:, 82:84]).unsqueeze(-1)
  return ((d * _f32(sc & 0xF).unsqueeze(-1)) * codes - dmin * _f32(sc >> 4).unsqueeze(-1)).flatten(-2)

def q3_k(b):
  """32 bytes of high bits (bit-plane p of byte l is element 32p+l), 64 bytes of 2-bit codes, 12 bytes of 6-bit scales, fp16 d"""
  high = _planes(b[:, 0:32], 1).flatten(-2)
  codes = _f32(_two_bit_codes(b[:, 32:96])) + _f32(high) * 4 - 4  # a clear high bit means the code is 4 lower
  s = b[:, 96:108]
  # scale k: low 4 bits are nibble k // 8 of byte k % 8, high 2 bits are bits 2 * (k // 4) of byte 8 + k % 4
  scales = _f32(_nibbles(s[:, 0:8]) | (_planes(s[:, 8:12], 2).flatten(-2) << 4)) - 32
  return ((_f16(b[:, 108:110]) * scales).unsqueeze(-1) * codes.reshape(-1, 16, 16)).flatten(-2)

def _k4_scales_mins(s):
  """12 bytes -> 8 6-bit scales and 8 6-bit mins: the first 4 of each sit in bytes 0-7, the last 4 in bytes 8-11's nibbles
  with their top 2 bits in the top bits of bytes 0-7"""
  scales = (s[:, 0:4] & 63).cat((s[:, 8:12] & 0xF) | (s[:, 0:4] >> 6 << 4), dim=1)
  mins = (s[:, 4:8] & 63).cat((s[:, 8:12] >> 4) | (s[:, 4:8] >> 6 << 4), dim=1)
  return _f32(scales).unsqueeze(-1), _f32(mins).unsqueeze(-1)

def _k4_codes(qs):
  """128 bytes -> 256 4-bit codes: each 32 bytes hold 64 elements, the first 32 in the low nibbles"""
  return _nibbles(qs.reshape(-1, 4, 32)).reshape(-1, 8, 32)

def _k4_dequantize(b, codes):
  scales, mins = _k4_scales_mins(b[:, 4:16])
  d, dmin = _f16(b[:, 0:2]).unsqueeze(-1), _f16(b[:, 2:4]).unsqueeze(-1)
  return ((d * scales) * _f32(codes) - dmin * mins).flatten(-2)

def q4_k(b): return _k4_dequantize(b, _k4_codes(b[:, 16:144]))
def q5_k(b):
  """as Q4_K with 32 bytes of 5th bits before the nibbles: bit-plane p of byte l is element 32p+l"""
  return _k4_dequantize(b, _k4_codes(b[:, 48:176]) | (_planes(b[:, 16:48], 1) << 4))

def q6_k(b):
  """128 bytes of low nibbles, 64 bytes of 2-bit high parts, 16 int8 scales (one per 16 elements), fp16 d; each half of 128
  elements takes 64 low bytes (elements l and l+64 share byte l) and 32 high bytes (4 bit-planes of 32)"""
  low = _nibbles(b[:, 0:128].reshape(-1, 2, 64))
  high = _planes(b[:, 128:192].reshape(-1, 2, 32), 2).flatten(-2)
  codes = _f32((low | (high << 4)).reshape(-1, 16, 16)) - 32
  scales = _f32(b[:, 192:208].bitcast(dtypes.int8))
  return ((_f16(b[:, 208:210]) * scales).unsqueeze(-1) * codes).flatten(-2)

def iq4_xs(b):
  """fp16 d, 2 bytes of scales' high 2 bits, 4 bytes of their low nibbles, then 8 sub-blocks of 32 IQ4_NL codes (16 bytes each)"""
  low = ((sl := b[:, 4:8]).unsqueeze(-1) & 0xF).cat(sl.unsqueeze(-1) >> 4, dim=-1).flatten(-2)  # scale i: nibble i % 2 of byte i // 2
  high = _planes(b[:, 2:4], 2).transpose(-1, -2).flatten(-2)  # scale i: bits 2i, 2i+1 of the little-endian uint16
  scales = _f32(low | (high << 4)) - 32
  return ((_f16(b[:, 0:2]) * scales).unsqueeze(-1) * _levels(IQ4_LEVELS, _nibbles(b[:, 8:136].reshape(-1, 8, 16)))).flatten(-2)

# ggml type id: (name, elements per block, bytes per block, decoder)
QUANTIZED = {2: ("Q4_0", 32, 18, q4_0), 3: ("Q4_1", 32, 20, q4_1), 6: ("Q5_0", 32, 22, q5_0), 7: ("Q5_1", 32, 24, q5_1),
             8: ("Q8_0", 32, 34, q8_0), 10: ("Q2_K", 256, 84, q2_k), 11: ("Q3_K", 256, 110, q3_k), 12: ("Q4_K", 256, 144, q4_k),
             13: ("Q5_K", 256, 176, q5_k), 14: ("Q6_K", 256, 210, q6_k), 20: ("IQ4_NL", 32, 18, iq4_nl), 23: ("IQ4_XS", 256, 136, iq4_xs),
             39: ("MXFP4", 32, 17, mxfp4), 41: ("Q1_0", 128, 18, q1_0)}
