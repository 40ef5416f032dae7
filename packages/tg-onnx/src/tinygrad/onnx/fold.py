"""Python values of shape computations. Exported models compute sizes with Shape -> Gather -> Concat -> Reshape chains; the runner
runs those ops on tensors as usual, and this table also carries their values in python, so a size that is a bound Variable stays a
Variable (one compiled model for every batch size) and no shape needs a realize. An op whose inputs' values are all known (and small)
gets its outputs' values here; anything not listed is simply not folded."""
from __future__ import annotations
from typing import Any, Callable
from tinygrad.dtype import DType, truncate
from tinygrad.onnx.ops.common import onnx_slice

MAX_FOLD = 64  # values per tensor: shapes and axes, never data

def _bcast(fn:Callable, a:list, b:list) -> list|None:
  if len(a) == len(b): return [fn(x, y) for x, y in zip(a, b)]
  if len(a) == 1: return [fn(a[0], y) for y in b]
  if len(b) == 1: return [fn(x, b[0]) for x in a]
  return None

def _gather(vals, args, attrs):
  data, idx = vals
  if args[0].ndim != 1: return None
  return [data[i] for i in idx]

def _slice(vals, args, attrs):
  if args[0].ndim != 1: return None
  data, starts, ends = vals[:3]
  steps = vals[4] if len(vals) > 4 and vals[4] is not None else [1]
  if any(hasattr(v, "op") for v in (starts[0], ends[0], steps[0])): return None  # a symbolic bound can't slice a python list
  return data[onnx_slice(starts[0], ends[0], steps[0], len(data))]

def _div(a, b):
  if hasattr(a, "op"): return a // b  # a symbolic size: never negative, so flooring is truncating
  return _trunc_div(a, b) if isinstance(a, int) and isinstance(b, int) else a / b

def _trunc_div(a:int, b:int) -> int:
  # integer Div is C's: it rounds toward zero (python's // floors)
  q = abs(a) // abs(b)
  return q if (a < 0) == (b < 0) else -q

def _eq(a, b) -> bool:
  # numbers compare as numbers (NaN != NaN, though a NaN `is` itself). A symbolic size equals itself, and differs from what its
  # range excludes (a batch size is never -1); anything else is known only once a call binds it
  if not hasattr(a, "op") and not hasattr(b, "op"): return a == b
  if a is b: return True
  (alo, ahi), (blo, bhi) = _range(a), _range(b)
  if ahi < blo or bhi < alo: return False
  raise TypeError("a symbolic size compared with a value in its range: unknown until a call binds it")

def _range(v) -> tuple: return (v.vmin, v.vmax) if hasattr(v, "op") else (v, v)

def _cast(vals, args, attrs):
  to = attrs.get("to")
  conv = float if to in (1, 10, 11, 16) else int if to in (2, 3, 4, 5, 6, 7, 12, 13) else bool if to == 9 else None
  return None if conv is None else [v if hasattr(v, "op") else conv(v) for v in vals[0]]

FOLD: dict[str, Callable[[list, list, dict], list|None]] = {
  "Identity": lambda v, a, k: v[0], "Unsqueeze": lambda v, a, k: v[0], "Squeeze": lambda v, a, k: v[0],
  "Reshape": lambda v, a, k: v[0], "Flatten": lambda v, a, k: v[0],
  "Concat": lambda v, a, k: [x for vals in v for x in vals] if all(t.ndim == 1 for t in a) else None,
  "Gather": _gather, "Slice": _slice, "Cast": _cast,
  "Add": lambda v, a, k: _bcast(lambda x, y: x + y, *v), "Sub": lambda v, a, k: _bcast(lambda x, y: x - y, *v),
  "Mul": lambda v, a, k: _bcast(lambda x, y: x * y, *v), "Div": lambda v, a, k: _bcast(_div, *v),
  "Equal": lambda v, a, k: _bcast(_eq, *v),
  "Where": lambda v, a, k: _where(*v),
}

def _where(c:list, x:list, y:list) -> list|None:
  n = max(len(c), len(x), len(y))
  if any(len(t) not in (1, n) for t in (c, x, y)): return None
  c, x, y = (t * n if len(t) == 1 else t for t in (c, x, y))
  return [a if k else b for k, a, b in zip(c, x, y)]

def fold(op:str, args:list, known:Callable[[Any], list|None], attrs:dict, dtype:DType) -> list|None:
  """python values of op's (first) output, of type dtype, when every tensor input's values are known, else None"""
  if (fn := FOLD.get(op)) is None: return None
  vals = []
  for a in args:
    if a is None: vals.append(None); continue
    if not hasattr(a, "uop") or (v := known(a)) is None or len(v) > MAX_FOLD: return None
    vals.append(v)
  try: out = fn(vals, args, attrs)
  except (TypeError, IndexError, ZeroDivisionError, ValueError, OverflowError): return None
  return None if out is None else _stored_as(out, dtype)

def _stored_as(vals:list, dtype:DType) -> list:
  """python values as a tensor of dtype holds them: ints wrap around (int32 65536*65537 is 65536), floats round to its precision"""
  if (conv := truncate.get(dtype)) is None: return vals
  return [v if hasattr(v, "op") else conv(v) for v in vals]
