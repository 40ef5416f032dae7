"""Who ships files into the `tinygrad` package: tg's distributions only, or also another one (e.g. upstream tinygrad, whose wheel
overwrites tg's files and leaves its own modules behind). Reads every installed distribution's file list: for the doctor, not import."""
import re
from importlib.metadata import distributions
from tinygrad.plugins.spec import FIRST_PARTY

def _norm(name:str) -> str: return re.sub(r"[-_.]+", "-", name).lower()

def foreign_distributions() -> list[tuple[str, str, list[str]]]:
  """(name, version, files under tinygrad/) of each installed distribution, not one of tg's, that ships files into `tinygrad`"""
  out = {}
  for d in distributions():
    if (name := d.metadata["Name"] or "?") and _norm(name) in FIRST_PARTY: continue
    if files := sorted(str(f) for f in (d.files or []) if str(f).startswith("tinygrad/") and not str(f).endswith(".pyc")):
      out[_norm(name)] = (name, d.version, files)
  return sorted(out.values())

def fix(name:str) -> str:
  return (f"{name} and tg both ship the `tinygrad` package into one site-packages, so one overwrote the other's files. Use a separate "
          f"virtual environment for each, or `pip uninstall {name}` and then reinstall tg (`pip install --force-reinstall tg-tensor`)")
