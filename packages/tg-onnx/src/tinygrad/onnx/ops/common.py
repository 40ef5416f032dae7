"""Helpers the op modules share: dtype mapping, axes normalisation, broadcasting of variadic inputs."""
from __future__ import annotations
from tinygrad.dtype import DType, dtypes
from tinygrad.uop.ops import UOp, resolve, smax, smin, ssimplify
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

def show(v) -> str: return v.render() if isinstance(v, UOp) else str(v)

def decided(cond) -> bool|None:
  """a comparison's python value; one over a bound Variable is decided by the Variable's range, None where the range leaves it open"""
  if not isinstance(cond, UOp): return bool(cond)
  if_open_true, if_open_false = resolve(cond, True), resolve(cond, False)  # they agree only where the range decides it
  return if_open_true if if_open_true == if_open_false else None

def _below(a, b) -> bool|None:
  # compared as a simplified difference: bounds alone can't tell that T-1 < T, (T-1) - T is -1
  return decided(ssimplify(a - b) < 0)

def at_least(v, lo):
  """max(v, lo), symbolic (a max node) only where the Variables' ranges don't decide it: a decided one keeps the shape simple"""
  below = _below(v, lo)
  return smax(v, lo) if below is None else lo if below else v

def at_most(v, hi):
  above = _below(hi, v)
  return smin(v, hi) if above is None else hi if above else v

def onnx_slice(start:int|UOp, end:int|UOp, step:int, n:int|UOp, what:str="Slice") -> slice:
  """Slice's bounds as a python slice: negatives count from the end, then clamp to [0, n] for a positive step, start to [0, n-1]
  and end to [-1, n-1] (-1: past the first element) for a negative one. Python alone clamps start=-n-1 with step -1 to nothing.
  `what` names the slice (node and axis) in errors."""
  if step == 0: raise ValueError(f"{what}: step 0")
  if any(isinstance(v, UOp) for v in (start, end, n)): return _symbolic_slice(start, end, step, n, what)
  start, end = start + n if start < 0 else start, end + n if end < 0 else end
  if step > 0: return slice(min(max(start, 0), n), min(max(end, 0), n), step)
  start, end = min(max(start, 0), n - 1), min(max(end, -1), n - 1)
  return slice(start, None if end < 0 else end, step)

def _symbolic_slice(start:int|UOp, end:int|UOp, step:int, n:int|UOp, what:str) -> slice:
  """onnx_slice where the axis size or a bound is symbolic (a bound Variable under dynamic=): tinygrad slices such an axis with step 1
  and bounds in [0, n] only, so the clamping is done here, each comparison decided by the Variables' ranges or kept as a min/max"""
  if step != 1:
    raise NotImplementedError(f"{what}: step {step} on an axis of symbolic size {show(n)} or with symbolic bounds {show(start)}:{show(end)} "
                              "(dynamic=): only step 1 is supported there")
  start, end = _from_end(start, n, what), _from_end(end, n, what)
  start = at_most(at_least(start, 0), n)
  end = at_least(at_most(end, n), start)  # an end before the start is an empty slice, never a negative size
  return slice(start, end)

def _from_end(v, n, what:str):
  """a negative bound counts back from the end; a symbolic bound must have a known sign (the ends are picked at graph-build time)"""
  if (negative := decided(v < 0)) is None:
    raise NotImplementedError(f"{what}: the bound {show(v)} may be negative or not depending on the dynamic size; it can't be sliced symbolically")
  return ssimplify(v + n) if negative else v
