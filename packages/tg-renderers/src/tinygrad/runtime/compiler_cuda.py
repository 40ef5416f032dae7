"""Compilers for NVIDIA targets. CUDA C -> PTX by NVRTC through ctypes (libnvrtc), or by nvcc where only the toolkit is installed; PTX ->
PTX checked (structurally, and by ptxas where it is on PATH). Either way the result is PTX text, which the CUDA driver compiles for the
GPU it runs on (cuModuleLoadData's JIT), so one binary serves every GPU of at least the target architecture."""
from __future__ import annotations
import ctypes, os, re, subprocess, tempfile
from tinygrad.device import Compiler, CompileError
from tinygrad.runtime import cuda_toolchain
from tinygrad.runtime.ptx_check import check_ptx

def _nvrtc():
  """libnvrtc with the signatures used here (nvrtc.h); None when there is no libnvrtc"""
  if (path := cuda_toolchain.find_library("nvrtc")) is None: return None
  lib = ctypes.CDLL(path)
  P, S, c = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p
  for fn, args in (("nvrtcCreateProgram", [ctypes.POINTER(P), c, c, ctypes.c_int, ctypes.POINTER(c), ctypes.POINTER(c)]),
                   ("nvrtcCompileProgram", [P, ctypes.c_int, ctypes.POINTER(c)]), ("nvrtcGetProgramLogSize", [P, ctypes.POINTER(S)]),
                   ("nvrtcGetProgramLog", [P, c]), ("nvrtcGetPTXSize", [P, ctypes.POINTER(S)]), ("nvrtcGetPTX", [P, c]),
                   ("nvrtcDestroyProgram", [ctypes.POINTER(P)]), ("nvrtcVersion", [ctypes.POINTER(ctypes.c_int)] * 2)):
    getattr(lib, fn).argtypes, getattr(lib, fn).restype = args, ctypes.c_int
  lib.nvrtcGetErrorString.argtypes, lib.nvrtcGetErrorString.restype = [ctypes.c_int], c
  return lib

class CUDACompiler(Compiler):
  """CUDA C -> PTX for `arch` (sm_80 unless DEV=CUDA:CUDA:sm_XY): NVRTC when libnvrtc is found, else nvcc"""
  def __init__(self, arch:str|None=None):
    self.arch = arch or "sm_80"
    self.nvrtc, self.nvcc = _nvrtc(), None
    if self.nvrtc is not None:
      major, minor = ctypes.c_int(), ctypes.c_int()
      self.nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
      tool = f"nvrtc{major.value}.{minor.value}"
    elif (nvcc := cuda_toolchain.find_tool("nvcc")) is not None:
      self.nvcc = nvcc
      tool = "nvcc" + subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().rpartition("\n")[2].replace(" ", "_")
    else: raise CompileError(cuda_toolchain.probe_cuda_c()[1])
    inc = cuda_toolchain.include_dir()
    self.options = [f"--gpu-architecture=compute_{self.arch.split('_', 1)[1]}", "--fmad=false"] + ([f"-I{inc}"] if inc else [])
    super().__init__(f"compile_cuda_{tool}_{self.arch}")

  def compile(self, src:str) -> bytes: return self._nvrtc(src) if self.nvrtc is not None else self._nvcc(src)

  def _nvrtc(self, src:str) -> bytes:
    lib, prog = self.nvrtc, ctypes.c_void_p()
    def check(status:int, what:str):
      if status != 0: raise CompileError(f"NVRTC {what} failed: {lib.nvrtcGetErrorString(status).decode()}")
    check(lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.cu", 0, None, None), "nvrtcCreateProgram")
    try:
      opts = (ctypes.c_char_p * len(self.options))(*[o.encode() for o in self.options])
      if (status := lib.nvrtcCompileProgram(prog, len(self.options), opts)) != 0:
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        raise CompileError(f"NVRTC rejected the kernel ({lib.nvrtcGetErrorString(status).decode()}):\n{log.value.decode()}\n{src}")
      size = ctypes.c_size_t()
      check(lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "nvrtcGetPTXSize")
      ptx = ctypes.create_string_buffer(size.value)
      check(lib.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
      return ptx.raw.rstrip(b"\0")
    finally: lib.nvrtcDestroyProgram(ctypes.byref(prog))

  def _nvcc(self, src:str) -> bytes:
    with tempfile.TemporaryDirectory() as d:
      cu, out = os.path.join(d, "kernel.cu"), os.path.join(d, "kernel.ptx")
      with open(cu, "w") as f: f.write(src)
      opts = [o.replace("--gpu-architecture=", "-arch=") for o in self.options]
      p = subprocess.run([self.nvcc, "--ptx", *opts, cu, "-o", out], capture_output=True, text=True)
      if p.returncode != 0: raise CompileError(f"nvcc rejected the kernel (exit {p.returncode}):\n{p.stderr}\n{src}")
      with open(out, "rb") as f: return f.read()

def run_ptxas(ptxas:str, arch:str, src:str) -> bytes:
  """PTX -> the cubin ptxas makes for `arch`; CompileError with ptxas's message when it refuses"""
  with tempfile.TemporaryDirectory() as d:
    with open(ptx := os.path.join(d, "kernel.ptx"), "w") as f: f.write(src)
    p = subprocess.run([ptxas, f"-arch={arch}", ptx, "-o", cubin := os.path.join(d, "kernel.cubin")], capture_output=True, text=True)
    if p.returncode != 0: raise CompileError(f"ptxas rejected the PTX (exit {p.returncode}):\n{p.stderr}\n{src}")
    with open(cubin, "rb") as f: return f.read()

def _checked(src:str):
  try: check_ptx(src)
  except ValueError as e: raise CompileError(f"malformed PTX: {e}\n{src}") from e

class PTXCompiler(Compiler):
  """PTX -> the same PTX, checked: by check_ptx always, and by ptxas for `arch` where ptxas is on PATH (its cubin is thrown away:
  the driver compiles PTX for the GPU it finds)"""
  def __init__(self, arch:str|None=None):
    self.arch, self.ptxas = arch or "sm_80", cuda_toolchain.find_tool("ptxas")
    super().__init__(f"compile_ptx_{self.arch}_{'ptxas' if self.ptxas else 'checked'}")
  def compile(self, src:str) -> bytes:
    _checked(src)
    if self.ptxas is not None: run_ptxas(self.ptxas, self.arch, src)
    return src.encode()

class CubinCompiler(Compiler):
  """PTX -> a cubin (the GPU's machine code in NVIDIA's ELF) by ptxas for `arch` (sm_80 unless given), for loaders without the CUDA
  driver's JIT. Cached under ptxas's version and the arch; CompileError naming what to install where there is no ptxas."""
  def __init__(self, arch:str|None=None):
    self.arch = arch or "sm_80"
    if (ptxas := cuda_toolchain.find_tool("ptxas")) is None: raise CompileError(cuda_toolchain.PTXAS_MISSING)
    m = re.search(r"\bV(\d+(?:\.\d+)*)", subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout)
    version = m[1] if m else "unknown"
    self.ptxas = ptxas
    super().__init__(f"compile_cubin_ptxas{version}_{self.arch}")
  def compile(self, src:str) -> bytes:
    _checked(src)
    return run_ptxas(self.ptxas, self.arch, src)
