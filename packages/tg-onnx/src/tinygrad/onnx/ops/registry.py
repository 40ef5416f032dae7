"""The op table: (domain, op type) -> implementations by the opset version they start at. A model's opset for the op's domain picks
the newest implementation not newer than it, so an op whose attributes became inputs (or whose modes changed) has one function
per semantics. Custom ops and domains come from plugins through the tg_onnx_ops hook."""
from __future__ import annotations
import inspect
from dataclasses import dataclass
from typing import Callable

@dataclass(frozen=True)
class OpImpl:
  fn: Callable
  since: int
  ctx: bool   # takes the run context (subgraphs, python values of inputs) as its first argument

_OPS: dict[tuple[str, str], list[OpImpl]] = {}

def op(*names:str, since:int=1, domain:str="", ctx:bool=False):
  """register fn for op types `names` in `domain` from opset `since` on"""
  def deco(fn:Callable) -> Callable:
    for n in names:
      impls = _OPS.setdefault((domain, n), [])
      impls.append(OpImpl(fn, since, ctx))
      impls.sort(key=lambda i: i.since)
    return fn
  return deco

class UnsupportedOp(NotImplementedError):
  """An op (or an opset version of it) this runner does not implement."""

def _plugin_ops() -> dict[tuple[str, str], OpImpl]:
  """ops from the tg_onnx_ops hook: {"Domain.OpName" or "OpName": fn}; fn(*inputs, **attrs) for every opset"""
  from tinygrad.plugins import registry
  out = {}
  for res in registry().pm.hook.tg_onnx_ops():
    for key, fn in (res or {}).items():
      domain, _, name = key.rpartition(".")
      out[(domain, name)] = OpImpl(fn, 1, False)
  return out

def resolve(domain:str, name:str, opsets:dict[str, int]) -> OpImpl:
  if (p := _plugin_ops().get((domain, name))) is not None: return p
  impls = _OPS.get((domain, name))
  if not impls: raise UnsupportedOp(f"ONNX op {name!r}" + (f" of domain {domain!r}" if domain else "") + " is not supported; a plugin can add it "
                                    "with the tg_onnx_ops hook")
  version = opsets.get(domain, opsets.get("", 1) if domain in ("", "ai.onnx") else 1)
  usable = [i for i in impls if i.since <= version]
  if not usable: raise UnsupportedOp(f"ONNX op {name!r} is implemented from opset {impls[0].since} on; the model uses opset {version}")
  return usable[-1]

def supported_ops() -> dict[tuple[str, str], list[int]]:
  return {k: [i.since for i in v] for k, v in _OPS.items()}

def check_node(impl:OpImpl, op_name:str, n_inputs:int, attrs:dict) -> str|None:
  """what is wrong with a node's input count and attributes for impl (None: nothing), read from impl's parameters: the positional ones
  before the first that the node sets as an attribute or that has a default other than None (an attribute's, or a unary op's bound
  method) take the inputs; a *args takes any number"""
  params = list(inspect.signature(impl.fn).parameters.values())[1 if impl.ctx else 0:]
  positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  named = positional + [p for p in params if p.kind is p.KEYWORD_ONLY]
  slots = next((i for i, p in enumerate(positional) if p.name in attrs or _has_default(p)), len(positional))
  if not any(p.kind is p.VAR_POSITIONAL for p in params) and n_inputs > slots:
    return f"{op_name} takes at most {slots} inputs ({', '.join(p.name for p in positional[:slots])}), the node has {n_inputs}"
  if unset := [p.name for p in named if p not in positional[:n_inputs] and p.default is p.empty and p.name not in attrs]:
    return f"{op_name} needs {unset[0]!r} (an input or attribute), which the node's {n_inputs} inputs and attributes {sorted(attrs)} leave unset"
  by_name = {p.name: p for p in named[slots:] if not p.name.startswith("_")}  # _fn: a unary op's bound method, never an attribute
  for name, v in attrs.items():
    if (p := by_name.get(name)) is None:
      if any(p.kind is p.VAR_KEYWORD for p in params): continue
      return f"{op_name} has no attribute {name!r} (it takes {', '.join(by_name) or 'none'})"
    if (want := _ATTR_TYPES.get(type(p.default))) is not None and not isinstance(v, want[0]):
      return f"{op_name} attribute {name!r} is {type(v).__name__} {v!r}; it must be {want[1]}"
  return None

def _has_default(p:inspect.Parameter) -> bool: return p.default is not p.empty and p.default is not None

# an attribute's python type by its default's: ONNX INT, FLOAT (an int is taken as a float), STRING, or a list of them
_ATTR_TYPES: dict[type, tuple[tuple[type, ...], str]] = {int: ((int,), "an int"), float: ((int, float), "a float"), str: ((str,), "a string"),
                                                        tuple: ((list, tuple), "a list"), list: ((list, tuple), "a list")}
