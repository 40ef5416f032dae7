"""TinyJit: call 1 runs the function, call 2 also captures the kernels and copies it runs with their buffers, every later call replays
them (no python, no scheduling) with the new tensor arguments' buffers and Variable values, writing into the same output buffers.
Tensors are duck-typed (`.uop`, `.realize()`, `.shape`, `.dtype`, `.device`): tinygrad.tensor sits above this package. JIT=0 turns it off."""
from __future__ import annotations
import functools
from typing import Any, Callable
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.helpers import JIT, Context
from tinygrad.engine import realize
from tinygrad.engine.captured import CapturedJit

def _is_tensor(x) -> bool: return hasattr(x, "uop") and hasattr(x, "realize")

def _tensor_args(args:tuple, kwargs:dict) -> list[tuple[str, Any]]:
  """the tensor arguments, realized, each with a name for error messages"""
  named = [(f"argument {i}", a) for i, a in enumerate(args)] + [(f"keyword argument {k!r}", kwargs[k]) for k in sorted(kwargs)]
  ret = [(n, a.realize()) for n, a in named if _is_tensor(a)]
  seen: dict[int, str] = {}
  for n, t in ret:
    if t.uop.base.op is Ops.BUFFER and (other := seen.setdefault(id(realize.buffer_of(t.uop.base)), n)) != n:
      raise ValueError(f"TinyJit: {other} and {n} are the same buffer; pass distinct tensors (e.g. x.contiguous() for the second)")
  return ret

def _var_vals(args:tuple, kwargs:dict, tensors:list[tuple[str, Any]]) -> dict[str, int]:
  """values of the bound Variables in the tensor arguments' shapes and in UOp arguments (Variable.bind(n))"""
  vals: dict[str, int] = {}
  for u in [a for a in (*args, *kwargs.values()) if isinstance(a, UOp)] + [t.uop for _, t in tensors]:
    for b in u.toposort():
      if b.op is not Ops.BIND: continue
      var, val = b.unbind()
      if vals.setdefault(var.arg.name, val) != val: raise ValueError(f"TinyJit: Variable {var.arg.name} is bound to both {vals[var.arg.name]} and {val}")
  return vals

def _outputs(ret:Any) -> list:
  if ret is None: return []
  if _is_tensor(ret): return [ret]
  if isinstance(ret, (tuple, list)) and all(_is_tensor(r) for r in ret): return list(ret)
  raise TypeError(f"TinyJit functions return a tensor, a tuple or list of tensors, or None, not {type(ret).__name__}: a replay runs no python")

def _shaped(kind:type|str|None, outs:list) -> Any:
  """the outputs in the container the captured call returned them in"""
  return None if kind is None else outs[0] if kind == "tensor" else kind(outs)

class TinyJit:
  def __new__(cls, fxn:Callable|None=None, prune:bool=False):
    # tinygrad 0.14's decorator with options, @TinyJit(prune=True): the options first, the function after
    return (lambda f: cls(f, prune=prune)) if fxn is None else super().__new__(cls)
  def __init__(self, fxn:Callable, prune:bool=False):
    """prune is accepted for tinygrad's signature: upstream then skips kernels that read no input on replay; tg replays every one (the same
    results, where those kernels' inputs do not change between calls)"""
    self.fxn, self.captured, self.cnt, self.kind = fxn, None, 0, None
    functools.update_wrapper(self, fxn)
  def __get__(self, obj, objtype=None): return self if obj is None else functools.partial(self.__call__, obj)  # a decorated method
  def reset(self):
    """forget the capture: the next call runs the function, the one after captures again"""
    self.captured, self.cnt = None, 0

  def _run(self, args:tuple, kwargs:dict) -> tuple[Any, list]:
    """the function's result and its tensors, realized; both calls before the capture schedule as for one (JIT_CAPTURE), so call 2
    finds call 1's schedules in the cache"""
    with Context(JIT_CAPTURE=1):
      ret = self.fxn(*args, **kwargs)
      if outs := _outputs(ret): outs[0].realize(*outs[1:])
    return ret, outs

  def __call__(self, *args, **kwargs) -> Any:
    if JIT.value == 0: return self.fxn(*args, **kwargs)
    tensors = _tensor_args(args, kwargs)
    if self.captured is not None:
      self.cnt += 1  # tinygrad's count of calls, which programs read (jit.cnt >= 2: replaying)
      outs = self.captured(tensors, _var_vals(args, kwargs, tensors))
      return _shaped(self.kind, outs)
    self.cnt += 1
    if self.cnt == 1: return self._run(args, kwargs)[0]
    realize.capturing = log = []
    try: ret, outs = self._run(args, kwargs)
    finally: realize.capturing = None
    self.captured, self.kind = CapturedJit(log, tensors, outs), None if ret is None else "tensor" if _is_tensor(ret) else type(ret)
    return ret
