"""Float -> int casts defined for every value and the same on every device. C leaves a value out of the target's range undefined and
LLVM makes it poison: devices disagreed (-2.5 -> uint32, 3e9 -> int32, NaN), and LLVM's vectorized and scalar loops of one kernel gave
different answers. The rule, numpy's on x86 where numpy is consistent: truncate toward 0 into int32 (int64 for 32-bit unsigned and
64-bit targets); out of that range, and NaN, give its minimum; the target keeps the low bits (-2.5 -> uint8 is 254, 300.7 -> 44). A
uint64 takes the values from 2**63 to 2**64 exactly. Applied to the kernel's own casts, before the lowering adds its exact ones."""
from __future__ import annotations
import math
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import UOp

def _defined_cast(x:UOp, dt) -> UOp:
  wide = dtypes.int64 if dt.itemsize == 8 or dt is dtypes.uint32 else dtypes.int32
  lim = 2.0 ** (8 * wide.itemsize - 1)
  # False for NaN. A float with no finite value that far out (half) would hold the limit as inf, and -inf would count as inside
  # (its values stay below 2**(2**(exponent bits - 1) + 1); compared as exponents: float64's bound is no python float)
  narrow = 2 ** (dtypes.finfo(x.dtype)[0] - 1) + 1 <= 8 * wide.itemsize - 1
  inside = x.abs() < math.inf if narrow else (x >= -lim) & (x < lim)
  v = inside.where(inside.where(x, 0).cast(wide), wide.min)
  if dt is dtypes.uint64:
    top = (x >= lim) & (x < 2 * lim)
    return top.where(top.where(x - lim, 0).cast(wide).cast(dt) + (1 << 63), v.cast(dt))
  return v if dt is wide else v.cast(dt)

def define_float_to_int(sink:UOp) -> UOp:
  casts = {u: _defined_cast(u.src[0], u.dtype) for u in sink.toposort()
           if u.op is Ops.CAST and dtypes.is_float(u.src[0].dtype) and dtypes.is_int(u.dtype)}
  return sink.substitute(casts) if casts else sink
