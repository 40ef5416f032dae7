"""bitcast to a dtype of another item size, tinygrad's rule: the last axis is rescaled (four uint8 are one uint32, one float64 is two
int32). Built from shifts and masks on unsigned ints of each size, in little-endian byte order (every host and device here), so it runs
on any device and over any view; the same-size reinterpretations at both ends are plain BITCASTs."""
from __future__ import annotations
import functools, operator
from tinygrad.dtype import DType, dtypes

_UNSIGNED = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}

def bitcast_resized(t, dt:DType):
  old, new = t.dtype.itemsize, dt.itemsize
  if dtypes.bool in (t.dtype, dt) or old not in _UNSIGNED or new not in _UNSIGNED:
    raise ValueError(f"bitcast from {t.dtype} to {dt}: item sizes differ ({old} and {new} bytes), which is supported between ints and floats "
                     f"of 1, 2, 4 and 8 bytes, not bool")
  if not t.shape: raise ValueError(f"bitcast of a 0-d {t.dtype} to {dt} ({old} and {new} bytes): item sizes differ, so it needs a last axis to rescale")
  last = t.shape[-1]
  if not isinstance(last, int): raise ValueError(f"bitcast from {t.dtype} to {dt} rescales the last axis, which is symbolic ({last})")
  bits = t.bitcast(_UNSIGNED[old])
  if new > old:  # r consecutive items make one
    r = new // old
    if last % r: raise ValueError(f"bitcast from {t.dtype} to {dt} joins {r} items into one: the last axis of shape {t.shape} is not a multiple of {r}")
    parts = bits.reshape(*t.shape[:-1], last // r, r).cast(_UNSIGNED[new])
    joined = functools.reduce(operator.or_, [parts[..., k] << (8 * old * k) for k in range(r)])
    return joined.bitcast(dt)
  r = old // new  # one item splits into r, its lowest bytes first
  mask = (1 << (8 * new)) - 1
  parts = [((bits >> (8 * new * k)) & mask).cast(_UNSIGNED[new]) for k in range(r)]
  return parts[0].stack(*parts[1:], dim=-1).reshape(*t.shape[:-1], last * r).bitcast(dt)
