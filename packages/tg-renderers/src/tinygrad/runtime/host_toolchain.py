"""What the CPU device's two renderers need from the machine, found without importing it: llvmlite (LLVM) and a C compiler (C)."""
import importlib.util, os, shutil

def cc_candidates() -> list[str]: return ([os.environ["CC"]] if os.environ.get("CC") else []) + ["clang", "gcc", "cc"]

def find_cc() -> str|None:
  """the C compiler: $CC, else clang, gcc or cc on PATH; None when there is none"""
  return next((path for n in cc_candidates() if (path := shutil.which(n)) is not None), None)

def no_cc_reason() -> str:
  searched = ", ".join(f"$CC={n}" if i == 0 and os.environ.get("CC") else n for i, n in enumerate(cc_candidates()))
  return f"no C compiler found (searched {searched} on PATH={os.environ.get('PATH', '')!r}): install one (e.g. `apt install gcc`) or point CC at one"

def probe_cc() -> tuple[bool, str]: return (True, "") if find_cc() is not None else (False, no_cc_reason())

def probe_llvmlite() -> tuple[bool, str]:
  # find_spec locates the package without importing it
  return (True, "") if importlib.util.find_spec("llvmlite") is not None else (False, "llvmlite is not installed: pip install llvmlite")
