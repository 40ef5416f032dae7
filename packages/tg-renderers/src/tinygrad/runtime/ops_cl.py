"""CL: an OpenCL device through ctypes libOpenCL (runtime/opencl_api.py). Buffers are cl_mem objects, programs are built from OpenCL C
by the driver (the binary is what the disk cache keeps), kernels run on one in-order queue with profiling on, so a launch with wait=True
returns the kernel's own time from its event. QCOM is the same runtime on a Qualcomm Adreno GPU, with the QCOM renderer."""
from __future__ import annotations
import ctypes, hashlib
from tinygrad.device import Allocator, BufferSpec, Compiler, Compiled, CompileError, Device, DeviceError
from tinygrad.runtime import opencl_api as cl

class CLMem:
  """a cl_mem, released when dropped (or at once by CLAllocator._free); a sub-buffer holds on to its parent"""
  def __init__(self, ptr:int, parent:CLMem|None=None): self.ptr, self.parent = ptr, parent
  def release(self):
    if self.ptr:
      ptr, self.ptr = self.ptr, None
      cl.lib().clReleaseMemObject(ptr)
  def __del__(self):
    try: self.release()
    except Exception: pass  # at interpreter exit libOpenCL may be gone

class CLAllocator(Allocator):
  def _alloc(self, size:int, options:BufferSpec) -> CLMem:
    if options.external_ptr is not None: raise DeviceError(f"{self.dev.device}: buffers over external host memory are not supported")
    return CLMem(cl.create("clCreateBuffer", self.dev.context, cl.MEM_READ_WRITE, size, None))
  def _free(self, opaque:CLMem, options:BufferSpec): opaque.release()
  def _copyin(self, dest:CLMem, src:memoryview):
    host = bytes(src) if src.readonly else (ctypes.c_char * src.nbytes).from_buffer(src)
    cl.check(cl.lib().clEnqueueWriteBuffer(self.dev.queue, dest.ptr, True, 0, src.nbytes, host, 0, None, None), "clEnqueueWriteBuffer")
  def _copyout(self, dest:memoryview, src:CLMem):
    host = (ctypes.c_char * dest.nbytes).from_buffer(dest)
    cl.check(cl.lib().clEnqueueReadBuffer(self.dev.queue, src.ptr, True, 0, dest.nbytes, host, 0, None, None), "clEnqueueReadBuffer")
  @property
  def view_align(self) -> int: return self.dev.addr_align
  def _offset(self, buf:CLMem, size:int, offset:int) -> CLMem:
    if offset % self.dev.addr_align:
      raise DeviceError(f"{self.dev.device}: a view at byte {offset} is not aligned to the device's {self.dev.addr_align} bytes "
                        "(CL_DEVICE_MEM_BASE_ADDR_ALIGN): OpenCL sub-buffers must start there")
    region = (ctypes.c_size_t * 2)(offset, size)
    return CLMem(cl.create("clCreateSubBuffer", buf.ptr, cl.MEM_READ_WRITE, cl.BUFFER_CREATE_TYPE_REGION, region), buf)

class CLCompiler(Compiler):
  """OpenCL C -> the driver's program binary for this device; a build failure raises CompileError with the build log"""
  def __init__(self, dev:CLDevice):
    self.dev = dev
    # divide and sqrt correctly rounded where the device can (else OpenCL allows 2.5 ulp), like every other target
    self.options = b"-cl-fp32-correctly-rounded-divide-sqrt" if dev.fp_config & cl.FP_CORRECTLY_ROUNDED_DIVIDE_SQRT else b""
    ident = f"{dev.platform_name}|{dev.name}|{dev.driver_version}|{self.options.decode()}"
    super().__init__(f"compile_cl_{hashlib.sha256(ident.encode()).hexdigest()[:16]}")
  def build(self, program:int, what:str):
    if (code := cl.lib().clBuildProgram(program, 1, ctypes.byref(ctypes.c_void_p(self.dev.device_id)), self.options, None, None)) != 0:
      log = cl.info_str(cl.lib().clGetProgramBuildInfo, "clGetProgramBuildInfo", program, self.dev.device_id, cl.PROGRAM_BUILD_LOG)
      cl.lib().clReleaseProgram(program)
      raise CompileError(f"OpenCL {what} failed on {self.dev.name} ({cl.ERRORS.get(code, code)}); build log:\n{log.strip()}")
  def compile(self, src:str) -> bytes:
    data = src.encode()
    program = cl.create("clCreateProgramWithSource", self.dev.context, 1, ctypes.byref(ctypes.c_char_p(data)),
                        ctypes.byref(ctypes.c_size_t(len(data))))
    try: self.build(program, "build")
    except CompileError as e: raise CompileError(f"{e}\n{src}") from None
    try:
      size = cl.info_sizes(cl.lib().clGetProgramInfo, "clGetProgramInfo", program, cl.PROGRAM_BINARY_SIZES)[0]
      binary = ctypes.create_string_buffer(size)
      ptrs = (ctypes.c_void_p * 1)(ctypes.addressof(binary))
      cl.check(cl.lib().clGetProgramInfo(program, cl.PROGRAM_BINARIES, ctypes.sizeof(ptrs), ptrs, None), "clGetProgramInfo")
      return binary.raw
    finally: cl.lib().clReleaseProgram(program)

class CLProgram:
  """one kernel of a program binary; called with cl_mem buffers then int32 vars, launched over groups x items"""
  def __init__(self, dev:CLDevice, name:str, lib:bytes):
    self.dev, self.name = dev, name
    status = ctypes.c_int32()
    self.program = cl.create("clCreateProgramWithBinary", dev.context, 1, ctypes.byref(ctypes.c_void_p(dev.device_id)),
                             ctypes.byref(ctypes.c_size_t(len(lib))), ctypes.byref(ctypes.c_char_p(lib)), ctypes.byref(status))
    cl.check(status.value, "clCreateProgramWithBinary (binary status)")
    dev.compiler.build(self.program, "load of a cached binary")
    self.kernel = cl.create("clCreateKernel", self.program, name.encode())

  def __call__(self, *bufs:CLMem, vals:tuple[int, ...]=(), global_size=(1, 1, 1), local_size=(1, 1, 1), wait=False) -> float|None:
    lib = cl.lib()
    for i, b in enumerate(bufs):
      cl.check(lib.clSetKernelArg(self.kernel, i, ctypes.sizeof(ctypes.c_void_p), ctypes.byref(ctypes.c_void_p(b.ptr))), f"clSetKernelArg {i}")
    for i, v in enumerate(vals, len(bufs)): cl.check(lib.clSetKernelArg(self.kernel, i, 4, ctypes.byref(ctypes.c_int32(v))), f"clSetKernelArg {i}")
    gs, ls = (tuple(d) + (1,) * (3 - len(d)) for d in (global_size, local_size))
    items, group = (ctypes.c_size_t * 3)(*[g * lc for g, lc in zip(gs, ls)]), (ctypes.c_size_t * 3)(*ls)  # OpenCL counts items, not groups
    event = ctypes.c_void_p()
    cl.check(lib.clEnqueueNDRangeKernel(self.dev.queue, self.kernel, 3, None, items, group, 0, None, ctypes.byref(event) if wait else None),
             f"clEnqueueNDRangeKernel of {self.name} over {gs} groups of {ls} items")
    if not wait: return None
    try:
      cl.check(lib.clWaitForEvents(1, ctypes.byref(event)), "clWaitForEvents")
      start, end = (cl.info_uint(lib.clGetEventProfilingInfo, "clGetEventProfilingInfo", event, w)
                    for w in (cl.PROFILING_COMMAND_START, cl.PROFILING_COMMAND_END))
      return max(end - start, 1) * 1e-9  # nanoseconds; never 0 (callers divide by it)
    finally: lib.clReleaseEvent(event)

  def __del__(self):
    try: cl.lib().clReleaseKernel(self.kernel); cl.lib().clReleaseProgram(self.program)  # noqa: E702
    except Exception: pass

class CLDevice(Compiled):
  """CL[:INDEX] is the INDEX-th OpenCL device over all platforms; QCOM[:INDEX] the INDEX-th Qualcomm Adreno one"""
  def __init__(self, device:str="CL"):
    n = Device.parse(device)
    try: devs = cl.find_devices(adreno_only=n.base == "QCOM")
    except LookupError as e: raise DeviceError(f"{device}: {e}") from None
    if n.index >= len(devs): raise DeviceError(f"{device}: there are only {len(devs)} {n.base} devices (indices 0..{len(devs)-1})")
    self.platform_id, self.device_id = devs[n.index]
    self.platform_name = cl.platform_str(self.platform_id, cl.PLATFORM_NAME)
    self.name, self.driver_version = cl.device_str(self.device_id, cl.DEVICE_NAME), cl.device_str(self.device_id, cl.DRIVER_VERSION)
    self.extensions = frozenset(cl.device_str(self.device_id, cl.DEVICE_EXTENSIONS).split())
    self.fp_config = cl.device_uint(self.device_id, cl.DEVICE_SINGLE_FP_CONFIG)
    self.addr_align = cl.device_uint(self.device_id, cl.DEVICE_MEM_BASE_ADDR_ALIGN) // 8  # given in bits
    self.context = cl.create("clCreateContext", None, 1, ctypes.byref(ctypes.c_void_p(self.device_id)), None, None)
    self.queue = cl.create("clCreateCommandQueue", self.context, self.device_id, cl.QUEUE_PROFILING_ENABLE)
    renderer, _ = Device.renderer_for(device)
    # without an ARCH in the device string, the renderer is made for this device's extensions (half, double)
    if renderer.arch is None and hasattr(renderer, "for_extensions"): renderer = renderer.for_extensions(self.extensions)
    super().__init__(device, CLAllocator(self), renderer, CLCompiler(self), lambda name, lib: CLProgram(self, name, lib))
  def synchronize(self): cl.check(cl.lib().clFinish(self.queue), "clFinish")
