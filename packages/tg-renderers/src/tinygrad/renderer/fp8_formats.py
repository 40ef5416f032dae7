"""The 8-bit floats as the renderers emulate them: held as float in registers (rounded after every op), one byte in memory. fp8e4m3 is
the "fn" variant (no inf, 0x7F NaN, 448 at most, overflow saturates: dtype.py's rule for constants); fp8e5m2 is IEEE-like (inf at 0x7C).
The constants below are what the LLVM IR (llvm_emulation.py) and C (c_emulation.py) helpers are written from."""
from __future__ import annotations
import struct
from typing import NamedTuple
from tinygrad.dtype import DType, dtypes

class Fp8(NamedTuple):
  name: str
  ebits: int
  mbits: int
  special: int|None  # the first magnitude code of the all-ones exponent (inf, then NaN), or None where only 0x7F is NaN
  max_code: int      # the largest finite magnitude code
  overflow_code: int # what a magnitude past max_code becomes
  nan_code: int
  @property
  def bias(self) -> int: return (1 << (self.ebits - 1)) - 1
  @property
  def shift(self) -> int: return 23 - self.mbits  # float32 mantissa bits dropped
  @property
  def rebias(self) -> int: return (127 - self.bias) << 23  # float32 bits of the exponent difference
  @property
  def subnormal_step(self) -> float: return 2.0 ** (1 - self.bias - self.mbits)
  @property
  def magic(self) -> float: return self.subnormal_step * 2.0 ** 23  # a float32 whose spacing is the subnormal step: adding it rounds there
  @property
  def magic_bits(self) -> int: return struct.unpack("<I", struct.pack("<f", self.magic))[0]
  @property
  def min_normal_bits(self) -> int: return (128 - self.bias) << 23

FP8: dict[DType, Fp8] = {dtypes.fp8e4m3: Fp8("e4m3", 4, 3, None, 0x7E, 0x7E, 0x7F), dtypes.fp8e5m2: Fp8("e5m2", 5, 2, 0x7C, 0x7B, 0x7C, 0x7E)}

def decode(code:int, f:Fp8) -> float:
  """the value of a byte, by the format's definition (the python emulator's memory form)"""
  sign, em = -1.0 if code & 0x80 else 1.0, code & 0x7F
  e, m = em >> f.mbits, em & ((1 << f.mbits) - 1)
  if f.special is None and em == 0x7F: return float("nan")
  if f.special is not None and em >= f.special: return sign * float("inf") if em == f.special else float("nan")
  return sign * (m * f.subnormal_step if e == 0 else (1 + m / (1 << f.mbits)) * 2.0 ** (e - f.bias))
