"""CUDA: an NVIDIA GPU through the driver API (libcuda) over ctypes. Kernels arrive as PTX (from NVRTC/nvcc for CUDA C, or our PTX
renderer) and the driver's JIT compiles them for the GPU at cuModuleLoadDataEx. Memory is cuMemAlloc'd device memory, copies are
synchronous, launches go to the default stream; with wait=True a launch is timed by a pair of events around it."""
from __future__ import annotations
import ctypes
from tinygrad.device import Allocator, BufferSpec, Compiled, Device, DeviceError
from tinygrad.runtime import cuda_toolchain

CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 75, 76
CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 5, 6

class Driver:
  """libcuda with the signatures used here (cuda.h); every call through check() raises naming the call and the driver's message"""
  def __init__(self):
    if (path := cuda_toolchain.find_library("cuda")) is None: raise DeviceError(cuda_toolchain.probe_libcuda()[1])
    self.lib = lib = ctypes.CDLL(path)
    P, U, I, S, pp = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_size_t, ctypes.POINTER
    for fn, args in (("cuInit", [U]), ("cuDeviceGet", [pp(I), I]), ("cuDeviceGetAttribute", [pp(I), I, I]),
                     ("cuDevicePrimaryCtxRetain", [pp(P), I]), ("cuCtxSetCurrent", [P]), ("cuCtxSynchronize", []),
                     ("cuMemAlloc_v2", [pp(ctypes.c_uint64), S]), ("cuMemFree_v2", [ctypes.c_uint64]),
                     ("cuMemcpyHtoD_v2", [ctypes.c_uint64, P, S]), ("cuMemcpyDtoH_v2", [P, ctypes.c_uint64, S]),
                     ("cuModuleLoadDataEx", [pp(P), P, U, pp(I), pp(P)]), ("cuModuleGetFunction", [pp(P), P, ctypes.c_char_p]),
                     ("cuModuleUnload", [P]), ("cuLaunchKernel", [P, U, U, U, U, U, U, U, P, pp(P), pp(P)]),
                     ("cuEventCreate", [pp(P), U]), ("cuEventRecord", [P, P]), ("cuEventSynchronize", [P]),
                     ("cuEventElapsedTime", [pp(ctypes.c_float), P, P]), ("cuEventDestroy_v2", [P]), ("cuGetErrorString", [I, pp(ctypes.c_char_p)])):
      getattr(lib, fn).argtypes, getattr(lib, fn).restype = args, I
  def check(self, status:int, what:str, detail:str=""):
    if status == 0: return
    msg = ctypes.c_char_p()
    self.lib.cuGetErrorString(status, ctypes.byref(msg))
    raise RuntimeError(f"CUDA {what} failed with error {status} ({(msg.value or b'unknown').decode()})" + (f":\n{detail}" if detail else ""))
  def __call__(self, fn:str, *args, detail:str=""): self.check(getattr(self.lib, fn)(*args), fn, detail)

class CUDAAllocator(Allocator):
  def _alloc(self, size:int, options:BufferSpec) -> int:
    ptr = ctypes.c_uint64()
    self.dev.cu("cuMemAlloc_v2", ctypes.byref(ptr), size)
    return ptr.value
  def _free(self, opaque:int, options:BufferSpec): self.dev.cu("cuMemFree_v2", opaque)
  def _copyin(self, dest:int, src:memoryview):
    host = (ctypes.c_char * src.nbytes).from_buffer_copy(src) if src.readonly else (ctypes.c_char * src.nbytes).from_buffer(src)
    self.dev.cu("cuMemcpyHtoD_v2", dest, host, src.nbytes)
  def _copyout(self, dest:memoryview, src:int): self.dev.cu("cuMemcpyDtoH_v2", (ctypes.c_char * dest.nbytes).from_buffer(dest), src, dest.nbytes)
  def _offset(self, buf:int, size:int, offset:int) -> int: return buf + offset

class CUDAProgram:
  def __init__(self, dev:CUDADevice, name:str, lib:bytes):
    self.dev, self.name, self.module, self.fn = dev, name, ctypes.c_void_p(), ctypes.c_void_p()
    log = ctypes.create_string_buffer(1 << 14)
    opts = (ctypes.c_int * 2)(CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
    vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(len(log)))
    image = ctypes.create_string_buffer(lib.rstrip(b"\0") + b"\0")  # PTX is loaded as a NUL-terminated string
    try: dev.cu("cuModuleLoadDataEx", ctypes.byref(self.module), image, 2, opts, vals)
    except RuntimeError as e: raise RuntimeError(f"{e}: the driver's PTX JIT rejected kernel {name}:\n{log.value.decode(errors='replace')}") from e
    dev.cu("cuModuleGetFunction", ctypes.byref(self.fn), self.module, name.encode())

  def __call__(self, *bufs, vals:tuple[int, ...]=(), global_size=(1, 1, 1), local_size=(1, 1, 1), wait=False) -> float|None:
    args = [ctypes.c_uint64(b) for b in bufs] + [ctypes.c_int32(v) for v in vals]
    params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
    cu, events = self.dev.cu, None
    if wait:
      events = (ctypes.c_void_p(), ctypes.c_void_p())
      for e in events: cu("cuEventCreate", ctypes.byref(e), 0)
      cu("cuEventRecord", events[0], None)
    cu("cuLaunchKernel", self.fn, *global_size, *local_size, 0, None, params, None,
       detail=f"kernel {self.name} grid {global_size} block {local_size}")
    if events is None: return None
    ms = ctypes.c_float()
    cu("cuEventRecord", events[1], None)
    cu("cuEventSynchronize", events[1])
    cu("cuEventElapsedTime", ctypes.byref(ms), *events)
    for e in events: cu("cuEventDestroy_v2", e)
    return ms.value * 1e-3

  def __del__(self):
    try: self.dev.cu("cuModuleUnload", self.module)
    except Exception: pass  # at interpreter exit the driver may be gone

class CUDADevice(Compiled):
  def __init__(self, device:str="CUDA"):
    self.cu, dev, ctx = Driver(), ctypes.c_int(), ctypes.c_void_p()
    self.cu("cuInit", 0)
    self.cu("cuDeviceGet", ctypes.byref(dev), Device.parse(device).index)
    self.cu("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
    self.cu("cuCtxSetCurrent", ctx)
    cc = [ctypes.c_int(), ctypes.c_int()]
    for v, attr in zip(cc, (CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)):
      self.cu("cuDeviceGetAttribute", ctypes.byref(v), attr, dev)
    self.arch = f"sm_{cc[0].value}{cc[1].value}"
    renderer, compiler = Device.renderer_for(device)
    if Device.parse(device).arch is None and Device.requested_renderer(device)[1] is None:  # no arch asked for: this GPU's
      renderer, compiler = type(renderer)(self.arch), type(compiler)(self.arch)
    super().__init__(device, CUDAAllocator(self), renderer, compiler, lambda name, lib: CUDAProgram(self, name, lib))
  def synchronize(self): self.cu("cuCtxSynchronize")
