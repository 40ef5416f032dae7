"""tinygrad: public names handed out lazily, so `import tinygrad` imports nothing else."""
import os, sys

# tinygrad/ is shipped by several distributions; in a development install each has its own src folder on sys.path,
# and this file makes tinygrad a regular package, so gather every tinygrad/ folder (a wheel install has just one)
__path__ = list(dict.fromkeys(__path__ + list(filter(os.path.isdir, (os.path.join(os.path.abspath(e or "."), "tinygrad") for e in sys.path)))))

# public name -> (module, distribution that ships it)
_PUBLIC = {"Tensor": ("tinygrad.tensor", "tg-tensor"), "TinyJit": ("tinygrad.engine.jit", "tg-codegen"), "dtypes": ("tinygrad.dtype", "tg-uop"),
           "Device": ("tinygrad.device", "tg-codegen"), "UOp": ("tinygrad.uop.ops", "tg-uop"), "Variable": ("tinygrad.uop.ops", "tg-uop"),
           "Context": ("tinygrad.helpers", "tg-uop"), "GlobalCounters": ("tinygrad.helpers", "tg-uop"), "getenv": ("tinygrad.helpers", "tg-uop")}
__all__ = list(_PUBLIC)

def __getattr__(name:str):
  if name not in _PUBLIC: raise AttributeError(f"module 'tinygrad' has no attribute {name!r}")
  mod, dist = _PUBLIC[name]
  import importlib
  try: m = importlib.import_module(mod)
  except ModuleNotFoundError as e:
    if e.name is None or not (mod == e.name or mod.startswith(e.name + ".")): raise
    raise ImportError(f"tinygrad.{name} lives in {mod}, which is not installed: pip install {dist}", name=mod) from e
  if not hasattr(m, name): raise ImportError(f"tinygrad.{name}: {mod} (from {dist}) does not define {name}; is {dist} up to date?", name=mod)
  globals()[name] = val = getattr(m, name)
  return val

def __dir__(): return sorted(set(globals()) | set(__all__))  # a public name used once is in both
