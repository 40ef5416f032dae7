"""Helpers the op modules share: dtype mapping, axes normalisation, broadcasting of variadic inputs."""
from __future__ import annotations
from tinygrad.dtype import DType, dtypes
from tinygrad.onnx.tensor_data import ONNX_TYPES

def onnx_dtype(type_id:int) -> DType:
  t = ONNX_TYPES.get(type_id)
  if t is None or t.dtype is None: raise TypeError(f"ONNX data type {t.name if t else type_id} has no tinygrad dtype")
  return t.dtype

def norm_axis(a:int, ndim:int) -> int:
  if not -ndim <= a < max(ndim, 1): raise ValueError(f"axis {a} is out of range for rank {ndim}")
  return a + ndim if a < 0 else a

def norm_axes(a, ndim:int) -> list[int]: return [norm_axis(int(x), ndim) for x in a]

def is_float(t) -> bool: return dtypes.is_float(t.dtype)

def onnx_slice(start:int, end:int, step:int, n:int) -> slice:
  """Slice's bounds as a python slice: negatives count from the end, then clamp to [0, n] for a positive step, start to [0, n-1]
  and end to [-1, n-1] (-1: past the first element) for a negative one. Python alone clamps start=-n-1 with step -1 to nothing."""
  if step == 0: raise ValueError("Slice step 0")
  start, end = start + n if start < 0 else start, end + n if end < 0 else end
  if step > 0: return slice(min(max(start, 0), n), min(max(end, 0), n), step)
  start, end = min(max(start, 0), n - 1), min(max(end, -1), n - 1)
  return slice(start, None if end < 0 else end, step)
