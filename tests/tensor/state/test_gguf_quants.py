"""Every ggml tensor type gguf_load reads beyond F32/F16: plain ones load as their dtype, quantized ones dequantize to float32 and are
compared with a reference written here from ggml's block layouts, an element at a time (the loader decodes whole tensors with
Tensor ops). Blocks are random bytes with chosen fp16 scales (negative, zero, subnormal, the largest), plus all-0x00 and all-0xFF codes."""
import pathlib, struct, sys
import numpy as np
import pytest
from tinygrad import dtypes
from tinygrad.nn.state import gguf_load
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the writer beside this file is found by path
from gguf_writer import gguf_file

F32 = np.float32
IQ4_LEVELS = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)
MXFP4_LEVELS = (0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12)

def _signed(byte:int) -> int: return byte - 256 if byte > 127 else byte
def _half(b, at:int) -> F32: return F32(np.frombuffer(bytes(b[at:at+2]), np.float16)[0])
def _nibble(b, at:int, j:int, half:int) -> int:
  """element j of a run of 2*half 4-bit codes at byte `at`: the low nibble of byte j for j < half, else the high nibble of byte j-half"""
  return b[at + j % half] >> (4 * (j // half)) & 0xF

# references: a block (a list of byte values) -> its float32 elements, following ggml's dequantize loops
def ref_q4_0(b): return [F32(_nibble(b, 2, j, 16) - 8) * _half(b, 0) for j in range(32)]
def ref_q4_1(b): return [F32(_nibble(b, 4, j, 16)) * _half(b, 0) + _half(b, 2) for j in range(32)]
def _q5_code(b, at:int, j:int) -> int: return _nibble(b, at + 4, j, 16) | (int.from_bytes(bytes(b[at:at+4]), "little") >> j & 1) << 4
def ref_q5_0(b): return [F32(_q5_code(b, 2, j) - 16) * _half(b, 0) for j in range(32)]
def ref_q5_1(b): return [F32(_q5_code(b, 4, j)) * _half(b, 0) + _half(b, 2) for j in range(32)]
def ref_q8_0(b): return [F32(_signed(b[2 + j])) * _half(b, 0) for j in range(32)]
def ref_q1_0(b): return [_half(b, 0) if b[2 + j // 8] >> (j % 8) & 1 else -_half(b, 0) for j in range(128)]
def ref_iq4_nl(b): return [F32(IQ4_LEVELS[_nibble(b, 2, j, 16)]) * _half(b, 0) for j in range(32)]
def ref_mxfp4(b): return [F32(MXFP4_LEVELS[_nibble(b, 1, j, 16)]) * F32(2.0 ** (int(b[0]) - 128)) for j in range(32)]

def ref_q2_k(b):
  d, dmin, out = _half(b, 80), _half(b, 82), []
  for i in range(256):
    half, group, l = i // 128, i % 128 // 32, i % 32
    sc = b[i // 16]
    out.append(d * F32(sc & 0xF) * F32(b[16 + 32 * half + l] >> (2 * group) & 3) - dmin * F32(sc >> 4))
  return out

def _q3_k_scales(b) -> list[int]:
  """ggml's unpacking: the 12 scale bytes as 3 little-endian words rearranged into 16 signed 6-bit scales"""
  a0, a1, tmp = struct.unpack("<3I", bytes(b[96:108]))
  words = [(a0 & 0x0F0F0F0F) | ((tmp & 0x03030303) << 4), (a1 & 0x0F0F0F0F) | ((tmp >> 2 & 0x03030303) << 4),
           (a0 >> 4 & 0x0F0F0F0F) | ((tmp >> 4 & 0x03030303) << 4), (a1 >> 4 & 0x0F0F0F0F) | ((tmp >> 6 & 0x03030303) << 4)]
  return [s - 32 for s in struct.pack("<4I", *words)]

def ref_q3_k(b):
  d, scales, out = _half(b, 108), _q3_k_scales(b), []
  for i in range(256):
    half, group, l = i // 128, i % 128 // 32, i % 32
    code = (b[32 + 32 * half + l] >> (2 * group) & 3) - (0 if b[l] >> (4 * half + group) & 1 else 4)
    out.append(d * F32(scales[i // 16]) * F32(code))
  return out

def _k4_scale_min(s, j:int) -> tuple[int, int]:
  if j < 4: return s[j] & 63, s[j + 4] & 63
  return (s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4, (s[j + 4] >> 4) | (s[j] >> 6) << 4

def _ref_k4(b, qs_at:int, fifth_bits:bool):
  d, dmin, out = _half(b, 0), _half(b, 2), []
  for i in range(256):
    sub, l = i // 32, i % 32
    sc, m = _k4_scale_min(b[4:16], sub)
    code = b[qs_at + 32 * (sub // 2) + l] >> (4 * (sub % 2)) & 0xF
    if fifth_bits: code += 16 * (b[16 + l] >> sub & 1)
    out.append(d * F32(sc) * F32(code) - dmin * F32(m))
  return out

def ref_q4_k(b): return _ref_k4(b, 16, False)
def ref_q5_k(b): return _ref_k4(b, 48, True)

def ref_q6_k(b):
  d, out = _half(b, 208), [F32(0)] * 256
  for half in range(2):
    ql, qh, sc = 64 * half, 128 + 32 * half, 192 + 8 * half
    for l in range(32):
      lows = (b[ql + l] & 0xF, b[ql + l + 32] & 0xF, b[ql + l] >> 4, b[ql + l + 32] >> 4)
      for g in range(4):
        code = (lows[g] | (b[qh + l] >> (2 * g) & 3) << 4) - 32
        out[128 * half + 32 * g + l] = d * F32(_signed(b[sc + l // 16 + 2 * g])) * F32(code)
  return out

def ref_iq4_xs(b):
  d, scales_h, out = _half(b, 0), b[2] | b[3] << 8, []
  for i in range(256):
    sub = i // 32
    ls = (b[4 + sub // 2] >> (4 * (sub % 2)) & 0xF) | (scales_h >> (2 * sub) & 3) << 4
    out.append(d * F32(ls - 32) * F32(IQ4_LEVELS[_nibble(b, 8 + 16 * sub, i % 32, 16)]))
  return out

# ggml type: (name, elements per block, bytes per block, offsets of fp16 fields, reference)
TYPES = {2: ("Q4_0", 32, 18, (0,), ref_q4_0), 3: ("Q4_1", 32, 20, (0, 2), ref_q4_1), 6: ("Q5_0", 32, 22, (0,), ref_q5_0),
         7: ("Q5_1", 32, 24, (0, 2), ref_q5_1), 8: ("Q8_0", 32, 34, (0,), ref_q8_0), 10: ("Q2_K", 256, 84, (80, 82), ref_q2_k),
         11: ("Q3_K", 256, 110, (108,), ref_q3_k), 12: ("Q4_K", 256, 144, (0, 2), ref_q4_k), 13: ("Q5_K", 256, 176, (0, 2), ref_q5_k),
         14: ("Q6_K", 256, 210, (208,), ref_q6_k), 20: ("IQ4_NL", 32, 18, (0,), ref_iq4_nl), 23: ("IQ4_XS", 256, 136, (0,), ref_iq4_xs),
         39: ("MXFP4", 32, 17, (), ref_mxfp4), 41: ("Q1_0", 128, 18, (0,), ref_q1_0)}
SCALES = (1.0, -0.5, 0.0, 65504.0, -65504.0, 3e-7, -6.1e-5, 0.0625)  # includes fp16 subnormals and the largest finite fp16

def random_blocks(rng, n:int, block_bytes:int, fp16_at:tuple) -> np.ndarray:
  """n blocks of random bytes; block 0's non-scale bytes all 0xFF, block 1's all 0x00 (every code at its extreme)"""
  blocks = rng.integers(0, 256, (n, block_bytes), dtype=np.uint8)
  blocks[0], blocks[1] = 0xFF, 0x00
  for i in range(n):
    for at in fp16_at:
      v = SCALES[(i + at) % len(SCALES)] if i < len(SCALES) else rng.standard_normal() * 4
      blocks[i, at:at+2] = np.frombuffer(np.float16(v).tobytes(), np.uint8)
  return blocks

@pytest.mark.parametrize("ggml_type", TYPES, ids=[v[0] for v in TYPES.values()])
def test_quantized_type_matches_reference(tmp_path, ggml_type):
  name, per_block, block_bytes, fp16_at, ref = TYPES[ggml_type]
  blocks_per_row, rows = 2, 6
  blocks = random_blocks(np.random.default_rng(ggml_type), blocks_per_row * rows, block_bytes, fp16_at)
  (p := tmp_path / "q.gguf").write_bytes(gguf_file({}, {"w": (ggml_type, (per_block * blocks_per_row, rows), blocks.tobytes())}))
  w = gguf_load(p)[1]["w"]
  assert w.dtype is dtypes.float32 and w.shape == (rows, per_block * blocks_per_row)
  with np.errstate(over="ignore"): want = np.array([ref(b) for b in blocks.tolist()], dtype=np.float32)  # MXFP4 2**127 * 12 is inf
  got = w.numpy().reshape(want.shape)
  # to float32 rounding: a device may fuse d*sc*q - dmin*m into one multiply-add, so allow an ulp or two of the block's largest term
  tolerance = 1e-6 * np.abs(np.where(np.isinf(want), 0, want)).max(axis=1, keepdims=True)
  with np.errstate(invalid="ignore"): ok = (got == want) | (np.abs(got - want) <= tolerance)
  assert ok.all(), f"{name}: (block, element) {np.argwhere(~ok)[:5].tolist()}"

def test_mxfp4_exponent_extremes(tmp_path):
  """E8M0 exponents 0 and 1 scale by float32 subnormals, 254 and 255 by 2**126 and 2**127"""
  blocks = np.array([[e] + [0xF7] * 16 for e in (0, 1, 2, 127, 128, 254, 255)], dtype=np.uint8)  # low nibbles 7 (12), high 15 (-12)
  (p := tmp_path / "e.gguf").write_bytes(gguf_file({}, {"w": (39, (32, 7), blocks.tobytes())}))
  got = gguf_load(p)[1]["w"].numpy()
  scales = np.array([[2.0 ** (e - 128)] for e in (0, 1, 2, 127, 128, 254, 255)], dtype=np.float32)
  with np.errstate(over="ignore"): want = np.array([[12.0] * 16 + [-12.0] * 16], dtype=np.float32) * scales  # 12 * 2**127 is inf
  np.testing.assert_array_equal(got, want)

@pytest.mark.parametrize("ggml_type, dtype, np_dtype", [(24, dtypes.int8, np.int8), (25, dtypes.int16, np.int16), (26, dtypes.int32, np.int32),
                                                       (27, dtypes.int64, np.int64), (28, dtypes.float64, np.float64)])
def test_plain_types_load_as_their_dtype(tmp_path, ggml_type, dtype, np_dtype):
  info = np.iinfo(np_dtype) if np.issubdtype(np_dtype, np.integer) else np.finfo(np_dtype)
  values = np.array([[info.min, -1, 0, 1], [2, 3, info.max, 7]], dtype=np_dtype)
  (p := tmp_path / "p.gguf").write_bytes(gguf_file({}, {"w": (ggml_type, (4, 2), values.tobytes())}))
  w = gguf_load(p)[1]["w"]
  assert w.dtype is dtype and w.shape == (2, 4)
  np.testing.assert_array_equal(w.numpy(), values)

def test_bf16_loads_as_bfloat16(tmp_path):
  values = np.array([1.0, -2.5, 3.140625, -0.0, 65280.0, 1e-38], dtype=np.float32)
  raw = (values.view(np.uint32) >> 16).astype(np.uint16).tobytes()  # these values have no low mantissa bits, so truncation is exact
  (p := tmp_path / "b.gguf").write_bytes(gguf_file({}, {"w": (30, (6,), raw)}))
  w = gguf_load(p)[1]["w"]
  assert w.dtype is dtypes.bfloat16
  np.testing.assert_array_equal(w.float().numpy(), (values.view(np.uint32) & 0xFFFF0000).view(np.float32))
