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
