"""Where NVIDIA's libraries and tools are, found without loading them (probes must be cheap): libcuda (the driver), libnvrtc (CUDA C ->
PTX), nvcc and ptxas on PATH. Searched: $CUDA_PATH, /usr/local/cuda*, the system library folders, $LD_LIBRARY_PATH and the pip wheels
(nvidia-cuda-nvrtc-cu12 and the like put their libraries under site-packages/nvidia/*/lib)."""
from __future__ import annotations
import glob, os, shutil, site, sys

def _dirs() -> list[str]:
  roots = [os.environ[v] for v in ("CUDA_PATH", "CUDA_HOME") if os.environ.get(v)] + sorted(glob.glob("/usr/local/cuda*"))
  dirs = [os.path.join(r, sub) for r in roots for sub in ("lib64", "lib", "targets/x86_64-linux/lib")]
  dirs += [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
  dirs += ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/lib/wsl/lib"]
  for sp in [*site.getsitepackages(), site.getusersitepackages(), *sys.path]: dirs += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib")))
  return list(dict.fromkeys(dirs))

def find_library(stem:str) -> str|None:
  """the path of lib<stem>.so (or its newest lib<stem>.so.N), None when there is none"""
  for d in _dirs():
    if os.path.isfile(p := os.path.join(d, f"lib{stem}.so")): return p
    versions = glob.glob(os.path.join(d, f"lib{stem}.so.*"))
    if versions: return max(versions, key=lambda p: [int(x) if x.isdigit() else 0 for x in p.split(".so.")[1].split(".")])
  return None

def find_tool(name:str) -> str|None:
  """an NVIDIA tool (nvcc, ptxas): on PATH, else in a CUDA folder, else in a pip wheel (nvidia-cuda-nvcc puts ptxas under
  site-packages/nvidia/cuda_nvcc/bin)"""
  if p := shutil.which(name): return p
  roots = [os.environ.get("CUDA_PATH", "")] + sorted(glob.glob("/usr/local/cuda*"))
  roots += [d for sp in [*site.getsitepackages(), site.getusersitepackages()] for d in sorted(glob.glob(os.path.join(sp, "nvidia", "*")))]
  return next((p for r in roots if r and os.access(p := os.path.join(r, "bin", name), os.X_OK)), None)

def include_dir() -> str|None:
  """the CUDA headers (cuda_fp16.h): NVRTC builds in its own copies from CUDA 12 on, older versions need the folder"""
  roots = [os.environ[v] for v in ("CUDA_PATH", "CUDA_HOME") if os.environ.get(v)] + sorted(glob.glob("/usr/local/cuda*"))
  return next((d for r in roots if os.path.isfile(os.path.join(d := os.path.join(r, "include"), "cuda_fp16.h"))), None)

def probe_libcuda() -> tuple[bool, str]:
  if find_library("cuda") is None: return False, "unavailable: libcuda not found (the NVIDIA driver's user-space library; searched " \
                                                 "$CUDA_PATH, /usr/local/cuda*, the system library folders and $LD_LIBRARY_PATH)"
  return True, ""

def probe_cuda_c() -> tuple[bool, str]:
  if find_library("nvrtc") is None and find_tool("nvcc") is None:
    return False, "unavailable: libnvrtc not found and no nvcc: install the CUDA toolkit or `pip install nvidia-cuda-nvrtc-cu12`, or use DEV=CUDA:PTX"
  return True, ""

PTXAS_MISSING = ("ptxas not found (searched PATH, $CUDA_PATH/bin, /usr/local/cuda*/bin and pip's site-packages/nvidia/*/bin): it turns "
                 "PTX into the GPU's machine code; install the CUDA toolkit or `pip install nvidia-cuda-nvcc`")

def probe_ptxas() -> tuple[bool, str]: return (True, "") if find_tool("ptxas") else (False, f"unavailable: {PTXAS_MISSING}")
