"""interpolate: resizing the last len(size) axes, one axis at a time. nearest picks source elements (an index); linear mixes the two
neighbours with weights known when the graph is built, as a matmul with a (new size, old size) matrix."""
from __future__ import annotations
import math

_LINEAR_AXES = {"linear": None, "bilinear": 2, "trilinear": 3}  # torch's names for linear over 2 and 3 axes

def _nearest(i:int, o:int, exact:bool) -> list[int]:
  return [min(int(math.floor(((j + 0.5) if exact else j) * i / o)), i - 1) for j in range(o)]

def _linear(i:int, o:int, align_corners:bool) -> list[list[float]]:
  rows = []
  for j in range(o):
    src = (j * (i - 1) / (o - 1) if o > 1 else 0.0) if align_corners else max((j + 0.5) * i / o - 0.5, 0.0)
    lo = min(int(math.floor(src)), i - 1)
    hi, f = min(lo + 1, i - 1), src - lo
    row = [0.0]*i
    row[lo] += 1 - f
    row[hi] += f
    rows.append(row)
  return rows

class TensorResizeMixin:
  def interpolate(self, size, mode:str="linear", align_corners:bool=False):
    """self resized to `size` on its last len(size) axes: mode linear (bilinear, trilinear), nearest or nearest-exact, like torch"""
    from tinygrad.tensor import Tensor
    size = tuple(size)
    if len(size) > self.ndim: raise ValueError(f"interpolate to size {size} needs at least {len(size)} dims, got shape {tuple(self.shape)}")
    if mode not in ("nearest", "nearest-exact", *_LINEAR_AXES): raise ValueError(f"interpolate mode {mode!r}: use linear, bilinear, trilinear, nearest or nearest-exact")
    if _LINEAR_AXES.get(mode) not in (None, len(size)): raise ValueError(f"interpolate mode {mode!r} resizes {_LINEAR_AXES[mode]} axes, size {size} has {len(size)}")
    if align_corners and mode.startswith("nearest"): raise ValueError("align_corners only applies to the linear modes")
    x = self if mode.startswith("nearest") else self._float_cast()
    for a, o in zip(range(self.ndim - len(size), self.ndim), size):
      if (i := x.shape[a]) == o: continue
      if mode.startswith("nearest"): x = x[(slice(None),)*a + (Tensor(_nearest(i, o, mode == "nearest-exact"), x.device),)]
      else: x = (x.transpose(a, -1) @ Tensor(_linear(i, o, align_corners), x.device, x.dtype).T).transpose(a, -1)
    return x
