"""What the CPU device's two renderers need from the machine, found without importing it: llvmlite (LLVM) and a C compiler (C)."""
import functools, importlib.util, os, shutil

def cc_candidates() -> list[str]: return ([os.environ["CC"]] if os.environ.get("CC") else []) + ["clang", "gcc", "cc"]

def find_cc() -> str|None:
  """the C compiler: $CC, else clang, gcc or cc on PATH; None when there is none"""
  return next((path for n in cc_candidates() if (path := shutil.which(n)) is not None), None)

def no_cc_reason() -> str:
  searched = ", ".join(f"$CC={n}" if i == 0 and os.environ.get("CC") else n for i, n in enumerate(cc_candidates()))
  return f"no C compiler found (searched {searched} on PATH={os.environ.get('PATH', '')!r}): install one (e.g. `apt install gcc`) or point CC at one"

# how clang vectorizes what the codegen has unrolled into lanes (an upcast axis): by SLP alone, then clean-up passes after it (CSE among
# them). Its loop vectorizer re-vectorizes a loop of such lanes across iterations, with gathers and scatters (matmul's B pack at 2048:
# 7.1 -> 0.75 ms without it). Without the clean-up, clang (14, 15) vectorizes a loop's accumulators twice, for the loop and for the store
# after it, and sinks the copy out of the loop, so the old accumulators stay live past their update and spill (matmul 1536: 106 -> 328
# GFLOP/s with it)
CLANG_VECTORIZING = ("-fno-vectorize", "-mllvm", "-extra-vectorizer-passes")

@functools.cache
def cc_is_clang(cc:str) -> bool:
  """whether the C compiler cc takes CLANG_VECTORIZING (clang does; gcc has no -mllvm): asked once, by compiling nothing"""
  import subprocess
  try: return subprocess.run([cc, *CLANG_VECTORIZING, "-fsyntax-only", "-x", "c", "-"], input=b"", capture_output=True).returncode == 0
  except OSError: return False

def probe_cc() -> tuple[bool, str]: return (True, "") if find_cc() is not None else (False, no_cc_reason())

def probe_llvmlite() -> tuple[bool, str]:
  # find_spec locates the package without importing it
  return (True, "") if importlib.util.find_spec("llvmlite") is not None else (False, "llvmlite is not installed: pip install llvmlite")
