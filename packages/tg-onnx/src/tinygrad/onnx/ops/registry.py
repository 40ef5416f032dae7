"""The op table: (domain, op type) -> implementations by the opset version they start at. A model's opset for the op's domain picks
the newest implementation not newer than it, so an op whose attributes became inputs (or whose modes changed) has one function
per semantics. Custom ops and domains come from plugins through the tg_onnx_ops hook."""
from __future__ import annotations
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
