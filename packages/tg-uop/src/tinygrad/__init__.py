"""tinygrad: public names handed out lazily, so `import tinygrad` imports nothing else."""
import os, sys, warnings

# tinygrad/ is shipped by several distributions; in a development install each has its own src folder on sys.path,
# and this file makes tinygrad a regular package, so gather every tinygrad/ folder (a wheel install has just one)
__path__ = list(dict.fromkeys(__path__ + list(filter(os.path.isdir, (os.path.join(os.path.abspath(e or "."), "tinygrad") for e in sys.path)))))

# upstream tinygrad installed beside tg: both wheels ship tinygrad/, so one overwrote the other and its leftovers break the first op
def _foreign_dists() -> list[str]:
  # a listdir, not glob: glob pulls in re and fnmatch, several times the cost of the rest of `import tinygrad`
  found = set()
  for parent in {os.path.dirname(p) for p in __path__}:
    try: found |= {os.path.join(parent, n) for n in os.listdir(parent) if n.startswith("tinygrad-") and n.endswith(".dist-info")}
    except OSError: pass
  return sorted(found)

for _info in _foreign_dists():
  warnings.warn(f"another distribution ships the `tinygrad` package beside tg: {os.path.basename(_info)[:-len('.dist-info')].replace('-', ' ')} "
                f"in {os.path.dirname(_info)}; one overwrote the other's files. Use a separate virtual environment, or `pip uninstall "
                "tinygrad` and then `pip install --force-reinstall tg-tensor` (`python -m tinygrad` lists every such distribution)",
                RuntimeWarning, stacklevel=2)

# public name -> (module, distribution that ships it); a name is offered only when its module is there
_PUBLIC = {"Tensor": ("tinygrad.tensor", "tg-tensor"), "TinyJit": ("tinygrad.engine.jit", "tg-codegen"), "dtypes": ("tinygrad.dtype", "tg-uop"),
           "Device": ("tinygrad.device", "tg-codegen"), "UOp": ("tinygrad.uop.ops", "tg-uop"), "Variable": ("tinygrad.uop.ops", "tg-uop"),
           "Context": ("tinygrad.helpers", "tg-uop"), "GlobalCounters": ("tinygrad.helpers", "tg-uop"), "getenv": ("tinygrad.helpers", "tg-uop"),
           "fetch": ("tinygrad.helpers", "tg-uop")}

def _present(mod:str) -> bool:
  # a file check, not an import: tinygrad.uop.ops -> uop/ops.py (or uop/ops/__init__.py) in one of the tinygrad/ folders
  rel = os.path.join(*mod.split(".")[1:])
  return any(os.path.isfile(os.path.join(p, rel + ".py")) or os.path.isfile(os.path.join(p, rel, "__init__.py")) for p in __path__)

def _missing(name:str) -> str:
  mod, dist = _PUBLIC[name]
  return f"tinygrad.{name} comes from {mod} in {dist}, which is not installed (or this version of {dist} lacks it): pip install -U {dist}"

def _from_import() -> bool:
  # `from tinygrad import X` turns an AttributeError into a bare "cannot import name"; raise ImportError there to keep the message
  import dis
  f = sys._getframe(2)
  return f.f_code.co_code[f.f_lasti] == dis.opmap["IMPORT_FROM"]

def __getattr__(name:str):
  if name == "__all__": return [n for n, (mod, _) in _PUBLIC.items() if _present(mod)]
  if name not in _PUBLIC: raise AttributeError(f"module 'tinygrad' has no attribute {name!r}")
  mod, dist = _PUBLIC[name]
  if not _present(mod): raise (ImportError(_missing(name), name=mod) if _from_import() else AttributeError(_missing(name)))
  import importlib
  m = importlib.import_module(mod)
  if not hasattr(m, name): raise AttributeError(f"tinygrad.{name}: {mod} (from {dist}) does not define {name}; is {dist} up to date? pip install -U {dist}")
  globals()[name] = val = getattr(m, name)
  return val

def __dir__(): return sorted(set(globals()) | set(__getattr__("__all__")))  # a public name used once is in both

# a device name offered twice (a third-party plugin and tg, or two plugins) is decided when plugins are discovered, and that warns once.
# Discovery loads every plugin, tens of ms, so `import tinygrad` runs it only when a distribution outside tg registers a plugin:
# found with a listdir of each sys.path folder and a read of the entry_points.txt of the distributions that have one.
_TG_DISTRIBUTIONS = frozenset({"tg_uop", "tg_codegen", "tg_renderers", "tg_hcq_amd", "tg_hcq_nv", "tg_tensor", "tg_onnx"})

def _third_party_plugins() -> list[str]:
  found = []
  for folder in dict.fromkeys(sys.path):
    try: names = os.listdir(folder or ".")
    except OSError: continue
    for n in names:
      if not n.endswith((".dist-info", ".egg-info")) or (dist := n.split("-")[0].split(".")[0].lower()) in _TG_DISTRIBUTIONS: continue
      # os.open, not open(): the text layer costs more than the read, and most distributions have no entry_points.txt
      try: fd = os.open(os.path.join(folder or ".", n, "entry_points.txt"), os.O_RDONLY)
      except OSError: continue
      try:
        if b"[tinygrad]" in os.read(fd, 1 << 16): found.append(dist)
      finally: os.close(fd)
  return found

if os.environ.get("TG_PLUGINS_AUTOLOAD", "1") not in ("", "0") and _present("tinygrad.plugins.discovery") and _third_party_plugins():
  import importlib
  # a plugin that fails under TG_STRICT_PLUGINS=1 raises again, with its own error, where a device is first used
  try: importlib.import_module("tinygrad.plugins.discovery").registry()
  except Exception: pass
