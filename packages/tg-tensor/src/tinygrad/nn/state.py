"""Model state: name every Tensor a model holds, load values into them, and read and write model files (safetensors, torch, gguf, tar)."""
from __future__ import annotations
import sys, types
from collections import OrderedDict
from tinygrad.nn.binary import FormatError
from tinygrad.nn.safetensors import safe_load, safe_save, safe_load_metadata
from tinygrad.nn.torch_load import torch_load, zip_extract
from tinygrad.nn.gguf import gguf_load
from tinygrad.nn.tar import tar_extract
from tinygrad.mixin.elementwise import _type_name

__all__ = ["get_state_dict", "get_parameters", "load_state_dict", "safe_load", "safe_save", "safe_load_metadata", "torch_load", "gguf_load",
           "tar_extract", "zip_extract", "FormatError"]

def get_state_dict(obj, prefix:str="", tensor_type=None) -> dict:
  """{dotted name: Tensor} of every Tensor reachable through attributes, lists, tuples and dicts ("layers.0.weight"); an object met
  again on the path to itself (a back-reference) is not walked twice"""
  from tinygrad.tensor import Tensor
  ret: dict = {}
  # not walked: classes and modules (a namedtuple's class has _asdict too), nor a TinyJit's capture (its kernels' buffers lead to the
  # device, the compiler and every imported module: the model's tensors are reached through the model)
  jit = sys.modules.get("tinygrad.engine.jit")
  opaque = (type, types.ModuleType) + ((jit.TinyJit,) if jit is not None else ())
  def walk(o, name:str, path:set):
    if isinstance(o, tensor_type or Tensor): ret[name.strip(".")] = o
    elif id(o) in path or isinstance(o, opaque): return
    elif hasattr(o, "_asdict"): walk(o._asdict(), name, path | {id(o)})  # a namedtuple: by field name
    elif isinstance(o, OrderedDict): walk(dict(o), name, path | {id(o)})
    elif isinstance(o, (list, tuple)):
      for i, x in enumerate(o): walk(x, f"{name}{i}.", path | {id(o)})
    elif isinstance(o, dict):
      for k, x in o.items(): walk(x, f"{name}{k}.", path | {id(o)})
    elif hasattr(o, "__dict__"): walk(o.__dict__, name, path | {id(o)})
  walk(obj, prefix, set())
  return ret

def get_parameters(obj) -> list:
  """every Tensor of get_state_dict(obj), each once (a tensor shared by two layers is one parameter)"""
  return list({id(t): t for t in get_state_dict(obj).values()}.values())

def load_state_dict(model, state_dict:dict, strict:bool=True, verbose:bool=True, consume:bool=False, realize:bool=True) -> list:
  """assign each value of state_dict into the model's tensor of that name (in place: the model's buffers get the values) and return the
  model tensors loaded. strict: every model tensor must be in state_dict; keys the model lacks are skipped either way (tinygrad's rule:
  a checkpoint may carry more, e.g. optimizer state). Shapes must match, except that () and (1,) load into each other (torch stores
  counters 0-d). A value of another dtype is cast to the model tensor's (torch's rule; e.g. a float16 checkpoint into a float32 model),
  so the model's buffers stay its own. realize is tinygrad 0.14's: tg's assign writes at once either way"""
  from tinygrad.tensor import Tensor
  if not isinstance(state_dict, dict):
    raise TypeError(f"load_state_dict: state_dict must be a dict of {{name: Tensor}}, got a {type(state_dict).__name__}")
  model_state = get_state_dict(model)
  # only the values loaded must be Tensors: a checkpoint's extras (a step count) are skipped like any unused key
  if bad := [k for k in model_state if k in state_dict and not isinstance(state_dict[k], Tensor)]:
    raise TypeError(f"load_state_dict: state_dict[{bad[0]!r}] is a {_type_name(state_dict[bad[0]])}, not a Tensor: wrap it with Tensor(...)" +
                    (f" (and {len(bad)-1} more)" if len(bad) > 1 else ""))
  missing, unexpected = [k for k in model_state if k not in state_dict], [k for k in state_dict if k not in model_state]
  mismatched = [f"{k}: model has shape {v.shape}, state_dict has {state_dict[k].shape}" for k, v in model_state.items()
                if k in state_dict and v.shape != state_dict[k].shape and {tuple(v.shape), tuple(state_dict[k].shape)} != {(), (1,)}]
  if mismatched or (strict and missing):
    raise ValueError("load_state_dict: " + "; ".join(([f"missing keys: {missing}"] if strict and missing else []) +
                                                      ([f"mismatched: {mismatched}"] if mismatched else [])))
  loaded = []
  for k, v in model_state.items():
    if k not in state_dict: continue
    v.assign(state_dict[k].to(v.device).cast(v.dtype).reshape(v.shape))
    loaded.append(v)
    if consume: del state_dict[k]
  if verbose: print(f"load_state_dict: loaded {len(loaded)} tensors" + (f", skipped missing {missing}" if missing else "") +
                    (f", unused {unexpected}" if unexpected else ""))
  return loaded
