"""ctypes bindings for the part of the OpenCL 1.2 host API the CL device uses, written from the Khronos headers (CL/cl.h): the
function signatures, the constants, and the error codes by name. `lib()` loads libOpenCL (the ICD loader) on first use;
`find_devices()` lists the devices (the CL device opens one, the probe asks whether there is one)."""
from __future__ import annotations
import ctypes, ctypes.util, functools, sys

# opaque handles are pointers; bitfields (cl_device_type, cl_mem_flags, queue properties) are cl_ulong; *_info enums are cl_uint
handle, cl_int, cl_uint, cl_ulong, size_t = ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t
P = ctypes.POINTER

SUCCESS = 0
PLATFORM_VERSION, PLATFORM_NAME, PLATFORM_VENDOR = 0x0901, 0x0902, 0x0903
DEVICE_TYPE_CPU, DEVICE_TYPE_GPU, DEVICE_TYPE_ALL = 1 << 1, 1 << 2, 0xFFFFFFFF
DEVICE_TYPE, DEVICE_MAX_WORK_GROUP_SIZE, DEVICE_MAX_WORK_ITEM_SIZES = 0x1000, 0x1004, 0x1005
DEVICE_MEM_BASE_ADDR_ALIGN, DEVICE_SINGLE_FP_CONFIG, DEVICE_LOCAL_MEM_SIZE = 0x1019, 0x101B, 0x1023
DEVICE_NAME, DEVICE_VENDOR, DRIVER_VERSION, DEVICE_VERSION, DEVICE_EXTENSIONS = 0x102B, 0x102C, 0x102D, 0x102F, 0x1030
FP_CORRECTLY_ROUNDED_DIVIDE_SQRT = 1 << 7
QUEUE_PROFILING_ENABLE = 1 << 1
MEM_READ_WRITE = 1 << 0
BUFFER_CREATE_TYPE_REGION = 0x1220
PROGRAM_BINARY_SIZES, PROGRAM_BINARIES, PROGRAM_BUILD_LOG = 0x1165, 0x1166, 0x1183
PROFILING_COMMAND_START, PROFILING_COMMAND_END = 0x1282, 0x1283

ERRORS = {0: "CL_SUCCESS", -1: "CL_DEVICE_NOT_FOUND", -2: "CL_DEVICE_NOT_AVAILABLE", -3: "CL_COMPILER_NOT_AVAILABLE",
  -4: "CL_MEM_OBJECT_ALLOCATION_FAILURE", -5: "CL_OUT_OF_RESOURCES", -6: "CL_OUT_OF_HOST_MEMORY", -11: "CL_BUILD_PROGRAM_FAILURE",
  -13: "CL_MISALIGNED_SUB_BUFFER_OFFSET", -30: "CL_INVALID_VALUE", -32: "CL_INVALID_PLATFORM", -33: "CL_INVALID_DEVICE",
  -34: "CL_INVALID_CONTEXT", -36: "CL_INVALID_COMMAND_QUEUE", -38: "CL_INVALID_MEM_OBJECT", -42: "CL_INVALID_BINARY",
  -43: "CL_INVALID_BUILD_OPTIONS", -44: "CL_INVALID_PROGRAM", -45: "CL_INVALID_PROGRAM_EXECUTABLE", -46: "CL_INVALID_KERNEL_NAME",
  -48: "CL_INVALID_KERNEL", -49: "CL_INVALID_ARG_INDEX", -50: "CL_INVALID_ARG_VALUE", -51: "CL_INVALID_ARG_SIZE",
  -52: "CL_INVALID_KERNEL_ARGS", -53: "CL_INVALID_WORK_DIMENSION", -54: "CL_INVALID_WORK_GROUP_SIZE", -55: "CL_INVALID_WORK_ITEM_SIZE",
  -58: "CL_INVALID_EVENT", -59: "CL_INVALID_OPERATION", -61: "CL_INVALID_BUFFER_SIZE", -63: "CL_INVALID_GLOBAL_WORK_SIZE",
  -1001: "CL_PLATFORM_NOT_FOUND_KHR"}

class CLError(RuntimeError):
  def __init__(self, what:str, code:int):
    super().__init__(f"{what} failed: {ERRORS.get(code, 'unknown error')} ({code})")
    self.code = code

# name -> (restype, argtypes). Functions returning cl_int return the error code; constructors take an errcode_ret pointer last.
_SIGNATURES = {
  "clGetPlatformIDs": (cl_int, [cl_uint, P(handle), P(cl_uint)]),
  "clGetPlatformInfo": (cl_int, [handle, cl_uint, size_t, ctypes.c_void_p, P(size_t)]),
  "clGetDeviceIDs": (cl_int, [handle, cl_ulong, cl_uint, P(handle), P(cl_uint)]),
  "clGetDeviceInfo": (cl_int, [handle, cl_uint, size_t, ctypes.c_void_p, P(size_t)]),
  "clCreateContext": (handle, [ctypes.c_void_p, cl_uint, P(handle), ctypes.c_void_p, ctypes.c_void_p, P(cl_int)]),
  "clCreateCommandQueue": (handle, [handle, handle, cl_ulong, P(cl_int)]),
  "clCreateBuffer": (handle, [handle, cl_ulong, size_t, ctypes.c_void_p, P(cl_int)]),
  "clCreateSubBuffer": (handle, [handle, cl_ulong, cl_uint, ctypes.c_void_p, P(cl_int)]),
  "clEnqueueWriteBuffer": (cl_int, [handle, handle, cl_uint, size_t, size_t, ctypes.c_void_p, cl_uint, P(handle), P(handle)]),
  "clEnqueueReadBuffer": (cl_int, [handle, handle, cl_uint, size_t, size_t, ctypes.c_void_p, cl_uint, P(handle), P(handle)]),
  "clCreateProgramWithSource": (handle, [handle, cl_uint, P(ctypes.c_char_p), P(size_t), P(cl_int)]),
  "clCreateProgramWithBinary": (handle, [handle, cl_uint, P(handle), P(size_t), P(ctypes.c_char_p), P(cl_int), P(cl_int)]),
  "clBuildProgram": (cl_int, [handle, cl_uint, P(handle), ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p]),
  "clGetProgramBuildInfo": (cl_int, [handle, handle, cl_uint, size_t, ctypes.c_void_p, P(size_t)]),
  "clGetProgramInfo": (cl_int, [handle, cl_uint, size_t, ctypes.c_void_p, P(size_t)]),
  "clCreateKernel": (handle, [handle, ctypes.c_char_p, P(cl_int)]),
  "clSetKernelArg": (cl_int, [handle, cl_uint, size_t, ctypes.c_void_p]),
  "clEnqueueNDRangeKernel": (cl_int, [handle, handle, cl_uint, P(size_t), P(size_t), P(size_t), cl_uint, P(handle), P(handle)]),
  "clWaitForEvents": (cl_int, [cl_uint, P(handle)]),
  "clGetEventProfilingInfo": (cl_int, [handle, cl_uint, size_t, ctypes.c_void_p, P(size_t)]),
  "clFinish": (cl_int, [handle]),
  **{f"clRelease{x}": (cl_int, [handle]) for x in ("MemObject", "Event", "Kernel", "Program", "CommandQueue", "Context")},
}

LIBRARY_NAMES = ("libOpenCL.so.1", "libOpenCL.so", "OpenCL")  # the ICD loader (Debian: ocl-icd-libopencl1), then any OpenCL

@functools.cache
def lib() -> ctypes.CDLL:
  """libOpenCL with typed functions; raises OSError naming what was tried"""
  tried = []
  for name in LIBRARY_NAMES:
    path = ctypes.util.find_library(name) if name == "OpenCL" else name
    try: dll = ctypes.CDLL(path) if path else None
    except OSError as e:
      tried.append(f"{name}: {e}")
      continue
    if dll is None: continue
    for fn, (res, args) in _SIGNATURES.items():
      f = getattr(dll, fn)
      f.restype, f.argtypes = res, args
    return dll
  raise OSError("no libOpenCL could be loaded (" + "; ".join(tried or ["none found"]) + ")")

def check(code:int, what:str):
  if code != SUCCESS: raise CLError(what, code)

def create(fn:str, *args):
  """a constructor call (clCreate*): its handle, or CLError with the returned errcode"""
  err = cl_int()
  ret = getattr(lib(), fn)(*args, ctypes.byref(err))
  check(err.value, fn)
  return ret

def _info(getter, what:str, *head) -> bytes:
  size = size_t()
  check(getter(*head, 0, None, ctypes.byref(size)), what)
  buf = ctypes.create_string_buffer(size.value)
  check(getter(*head, size.value, buf, None), what)
  return buf.raw

def info_str(getter, what:str, *head) -> str: return _info(getter, what, *head).rstrip(b"\0").decode(errors="replace")
def info_uint(getter, what:str, *head) -> int: return int.from_bytes(_info(getter, what, *head), sys.byteorder)  # cl_uint, cl_ulong or size_t
def info_sizes(getter, what:str, *head) -> list[int]:
  raw = _info(getter, what, *head)
  return list((size_t * (len(raw) // ctypes.sizeof(size_t))).from_buffer_copy(raw))

def platforms() -> list[int]:
  n = cl_uint()
  if (code := lib().clGetPlatformIDs(0, None, ctypes.byref(n))) != SUCCESS or n.value == 0: raise CLError("clGetPlatformIDs", code or -1001)
  ids = (handle * n.value)()
  check(lib().clGetPlatformIDs(n.value, ids, None), "clGetPlatformIDs")
  return list(ids)

def devices(platform:int, kind:int=DEVICE_TYPE_ALL) -> list[int]:
  n = cl_uint()
  if (code := lib().clGetDeviceIDs(platform, kind, 0, None, ctypes.byref(n))) != SUCCESS: raise CLError("clGetDeviceIDs", code)
  ids = (handle * n.value)()
  check(lib().clGetDeviceIDs(platform, kind, n.value, ids, None), "clGetDeviceIDs")
  return list(ids)

def platform_str(p:int, what:int) -> str: return info_str(lib().clGetPlatformInfo, "clGetPlatformInfo", p, what)
def device_str(d:int, what:int) -> str: return info_str(lib().clGetDeviceInfo, "clGetDeviceInfo", d, what)
def device_uint(d:int, what:int) -> int: return info_uint(lib().clGetDeviceInfo, "clGetDeviceInfo", d, what)

def is_adreno(vendor:str, name:str) -> bool: return any(k in f"{vendor} {name}".lower() for k in ("qualcomm", "adreno"))

def find_devices(adreno_only:bool=False) -> list[tuple[int, int]]:
  """(platform, device) of every OpenCL device (or every Adreno), platforms in the loader's order; raises OSError, CLError or
  LookupError saying what is missing"""
  found, seen = [], []
  for p in platforms():
    try: devs = devices(p)
    except CLError as e:
      if e.code != -1: raise  # CL_DEVICE_NOT_FOUND: a platform without devices
      devs = []
    for d in devs:
      vendor, name = device_str(d, DEVICE_VENDOR), device_str(d, DEVICE_NAME)
      seen.append(f"{name} ({vendor})")
      if not adreno_only or is_adreno(vendor, name): found.append((p, d))
  if not found:
    raise LookupError("OpenCL found no Qualcomm Adreno device (devices: " + (", ".join(seen) or "none") + ")" if adreno_only else
                      "the OpenCL platforms have no devices")
  return found
