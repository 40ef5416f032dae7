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

class JitError(Exception):
  """what a TinyJit capture cannot record (tinygrad's name): a read of tensor data in the function, whose value a replay would not change"""

def _is_tensor(x) -> bool: return hasattr(x, "uop") and hasattr(x, "realize")

def _arguments(args:tuple, kwargs:dict) -> list[tuple[str, Any]]:
  """every argument with a name for error messages, and the items of a list, tuple or dict argument (one level: tinygrad's rule, so
  that a model object's weights are not taken for inputs)"""
  top = [(f"argument {i}", a) for i, a in enumerate(args)] + [(f"keyword argument {k!r}", kwargs[k]) for k in sorted(kwargs)]
  ret = []
  for n, a in top:
    ret.append((n, a))
    if isinstance(a, (list, tuple)): ret += [(f"{n}[{i}]", x) for i, x in enumerate(a)]
    elif isinstance(a, dict): ret += [(f"{n}[{k!r}]", x) for k, x in a.items()]
  return ret

def _tensor_args(args:tuple, kwargs:dict) -> list[tuple[str, Any]]:
  """the tensor arguments, realized, each with a name for error messages"""
  ret = [(n, a.realize()) for n, a in _arguments(args, kwargs) if _is_tensor(a)]
  seen: dict[int, str] = {}
  for n, t in ret:
    if t.uop.base.op is Ops.BUFFER and (other := seen.setdefault(id(realize.buffer_of(t.uop.base)), n)) != n:
      raise ValueError(f"TinyJit: {other} and {n} are the same buffer; pass distinct tensors (e.g. x.contiguous() for the second)")
  return ret

def _var_vals(args:tuple, kwargs:dict, tensors:list[tuple[str, Any]]) -> dict[str, int]:
  """values of the bound Variables in the tensor arguments' shapes and in UOp arguments (Variable.bind(n))"""
  vals: dict[str, int] = {}
  for u in [a for _, a in _arguments(args, kwargs) if isinstance(a, UOp)] + [t.uop for _, t in tensors]:
    for b in u.toposort():
      if b.op is not Ops.BIND: continue
      var, val = b.unbind()
      if vals.setdefault(var.arg.name, val) != val: raise ValueError(f"TinyJit: Variable {var.arg.name} is bound to both {vals[var.arg.name]} and {val}")
  return vals

def _structure(ret:Any) -> tuple[list, Any]:
  """the tensors of a result, in order, and how to rebuild the result around a replay's outputs: a tensor, None, or a tuple, list or
  dict of those, nested (tinygrad's rule)"""
  if ret is None: return [], None
  if _is_tensor(ret): return [ret], "tensor"
  if not isinstance(ret, (tuple, list, dict)):
    raise TypeError(f"TinyJit functions return tensors, in tuples, lists or dicts (nested), or None, not {type(ret).__name__}: a replay "
                    f"runs no python")
  outs, parts = [], []
  for item in (ret.values() if isinstance(ret, dict) else ret):
    if item is not None and not _is_tensor(item) and not isinstance(item, (tuple, list, dict)):
      raise TypeError(f"TinyJit functions return tensors, in tuples, lists or dicts (nested), or None, not a {type(ret).__name__} holding "
                      f"a {type(item).__name__}: a replay runs no python")
    got, part = _structure(item)
    outs += got
    parts.append((part, len(got)))
  return outs, (("dict", tuple(ret)) if isinstance(ret, dict) else type(ret), parts)

def _shaped(kind:Any, outs:list) -> Any:
  """the outputs in the structure the captured call returned them in"""
  if kind is None: return None
  if kind == "tensor": return outs[0]
  container, parts, items, at = *kind, [], 0
  for part, n in parts:
    items.append(_shaped(part, outs[at:at+n]))
    at += n
  if isinstance(container, tuple): return dict(zip(container[1], items))
  return container._make(items) if hasattr(container, "_make") else container(items)  # a namedtuple takes its fields one by one

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
      if outs := _structure(ret)[0]: outs[0].realize(*outs[1:])
    return ret, outs

  def __call__(self, *args, **kwargs) -> Any:
    # inside another TinyJit's capture this one runs as plain python, so that the outer capture sees (and replays) its kernels
    if JIT.value == 0 or realize.capturing is not None: return self.fxn(*args, **kwargs)
    tensors = _tensor_args(args, kwargs)
    if self.captured is not None:
      self.cnt += 1  # tinygrad's count of calls, which programs read (jit.cnt >= 2: replaying)
      outs = self.captured(tensors, _var_vals(args, kwargs, tensors))
      return _shaped(self.kind, outs)
    self.cnt += 1
    if self.cnt == 1: return self._run(args, kwargs)[0]
    if realize.capture_starts is not None: realize.capture_starts()
    realize.capturing = log = []
    try: ret, outs = self._run(args, kwargs)
    finally: realize.capturing = None
    self.captured, self.kind = CapturedJit(log, tensors, outs), _structure(ret)[1]
    return ret
