"""The NV device: tg's HCQ core over GPFIFO channels of NVIDIA's kernel driver (nv_rm.py: RM objects and UVM mappings), a compute
channel (host semaphores, inline-QMD launches) and a copy channel (copy engine). Under MOCKGPU=1 the mock kernel driver (nv_mock.py)
serves the same ioctls and runs the channels in python.

Kernels: the PTX renderer's PTX, compiled to a cubin by ptxas (no CUDA driver library involved), whose `.text.<name>` is the machine
code the QMD launches and whose `.nv.info` gives the QMD its register count, shared memory, barriers and where the parameters go in
constant buffer 0 (runtime/cubin.py). Without ptxas the device still moves memory and signals; compiling a kernel raises the reason."""
from __future__ import annotations
import array, json, re
from tinygrad.device import Device, DeviceName, Compiler, CompileError, DeviceError
from tinygrad.renderer.python import PythonRenderer
from tinygrad.renderer.ptx import PTXRenderer
from tinygrad.renderer.tensor_cores import MMA_M16N8K16
from tinygrad.runtime.support.hcq import HCQCompiled, HCQProgram, HCQBuffer, mockgpu, spin, whole_or_nothing
from tinygrad.runtime.support.hcq_select import CommandBuffer
from tinygrad.runtime.support.code_object import CodeObject
from tinygrad.runtime.support import nv_methods as nv, nv_rm_abi as rm
from tinygrad.runtime.support.nv_rm import NVRMInterface, sm_of, sass_runs_on
from tinygrad.runtime.support.nv_select import pm_nv, NVSelectCtx, program_qmd_fields, driver_words, QMD_BYTES, CBUF0_SIZE, CBUF0_PARAMS
from tinygrad.runtime.support.nv_program import program_meta

DRIVER_VERSION = "/proc/driver/nvidia/version"

class NVEmulatedRenderer(PythonRenderer):
  """NV launch limits, kernels as the emulator's UOps: the renderer of NV under the mock driver (PTX is the one for hardware)"""
  device = "NV"
  global_max, local_max = (2**31-1, 65535, 65535), (1024, 1024, 64)
  tensor_cores = MMA_M16N8K16  # the PTX renderer's (sm_80 and later), emulated

class NVPTXRenderer(PTXRenderer):
  """the PTX renderer for the NV device: the kernel's PTX, and beside it its UOps as the emulator's JSON, which only the mock driver
  reads (the code object carries both)"""
  device = "NV"
  def render(self, name:str, uops:list) -> str:
    return json.dumps({"name": name, "ptx": super().render(name, uops), "emu": PythonRenderer().render(name, uops)})

class NVPTXCompiler(Compiler):
  """NVPTXRenderer's output -> a tg code object: the cubin's machine code for `arch` (ptxas), the launch facts the QMD needs from the
  cubin (nv_program.program_meta), and the UOps"""
  def __init__(self, arch:str|None=None):
    from tinygrad.runtime.compiler_cuda import CubinCompiler
    self.cubin = CubinCompiler(arch)
    super().__init__(f"tgco2_nv_{self.cubin.cachekey}" if self.cubin.cachekey else None)
  def compile(self, src:str) -> bytes:
    from tinygrad.runtime.cubin import read_cubin, CubinError
    from tinygrad.runtime.ptx_check import check_ptx
    j = json.loads(src)
    try: k = read_cubin(self.cubin.compile_cached(j["ptx"]), j["name"])
    except CubinError as e: raise CompileError(f"the cubin ptxas made for {j['name']} cannot be loaded: {e}") from e
    return CodeObject(j["name"], k.text, j["emu"].encode(), program_meta(k, check_ptx(j["ptx"])[j["name"]])).pack()

class UnavailableCompiler(Compiler):
  """the compiler of an NV device with no renderer that makes kernels here: every compile raises why"""
  def __init__(self, reason:str):
    self.reason = reason
    super().__init__(None)
  def compile(self, src:str) -> bytes: raise CompileError(f"NV kernels unavailable: {self.reason}")

class NVProgram(HCQProgram):
  code_tail = 0x1000  # the SM prefetches instructions past a kernel's end: upstream tinygrad keeps 4 KiB mapped there against prefetch faults
  def __init__(self, dev:NVDevice, name:str, lib:bytes):
    co = CodeObject.unpack(lib)
    if not dev.iface.is_mock:
      if not co.machine_code: raise RuntimeError(f"{dev.device}: kernel {name} has no machine code (it was rendered for the mock driver)")
      if dev.gpu_sm is not None and "sm" in co.meta and not sass_runs_on(co.meta["sm"], dev.gpu_sm):
        raise RuntimeError(f"{dev.device}: kernel {name} is machine code for sm_{co.meta['sm']}, which does not run on this GPU (sm_{dev.gpu_sm}): "
                           f"drop the SM from the device string, or name sm_{dev.gpu_sm}")
      if co.meta.get("stack", 0):  # the launch would need the local memory window and its size set up, which this version does not do
        raise RuntimeError(f"{dev.device}: kernel {name} needs {co.meta['stack']} bytes of stack per thread (local memory), which this "
                           "version does not set up: simplify the kernel (smaller upcasts) or use another device")
    # the kernargs block: the QMD, then constant buffer 0 with the parameters where the cubin put them (0x160 on sm_8x, 0x210 on sm_90)
    self.args_offset = QMD_BYTES + co.meta.get("cb0", CBUF0_PARAMS)
    super().__init__(dev, name, lib)
    # SASS_VERSION: the SM as two hex digits (0x86 for sm_86), as upstream tinygrad writes it; 0 for a program for the mock alone
    sass = (sm // 10) << 4 | sm % 10 if (sm := co.meta.get("sm")) else 0
    dev.select_ctx.programs[self.addr] = program_qmd_fields(registers=co.meta.get("regs", 0), shared=co.meta.get("smem", 0),
                                                           barriers=co.meta.get("bars", 1), sass_version=sass)
  def fill_kernargs(self, ka:HCQBuffer, bufs:tuple, vals:tuple, global_size:tuple, local_size:tuple):
    ka.cpu_view()[QMD_BYTES:self.args_offset] = driver_words(self.args_offset - QMD_BYTES, global_size, local_size)
    super().fill_kernargs(ka, bufs, vals, global_size, local_size)
  def kernargs_size(self, nbufs:int, nvals:int) -> int:
    if (n := super().kernargs_size(nbufs, nvals)) > QMD_BYTES + CBUF0_SIZE:
      raise RuntimeError(f"kernel {self.name}: {nbufs} buffers and {nvals} values do not fit constant buffer 0 ({CBUF0_SIZE} bytes)")
    return QMD_BYTES + CBUF0_SIZE

def driver_series(text:str) -> int:
  """the driver's major version from /proc/driver/nvidia/version ("NVRM version: ... Kernel Module ...  535.113.01  ...")"""
  if (m := re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+)\.\d+", text)) is None: raise RuntimeError(f"cannot read the driver version from {text[:80]!r}")
  return int(m.group(1))

def host_os():
  if mockgpu():
    from tinygrad.runtime.support.nv_mock import mock_kernel
    return mock_kernel()
  from tinygrad.runtime.support.nv_rm import HostOS
  with open(DRIVER_VERSION) as f: series = driver_series(f.read())
  if series != rm.DRIVER_SERIES:
    raise RuntimeError(f"NV: the NVIDIA kernel driver is the {series} series; tg's RM structures are the {rm.DRIVER_SERIES} series' "
                       f"(their sizes differ between series): install a {rm.DRIVER_SERIES}.x driver")
  return HostOS()

class NVDevice(HCQCompiled):
  GPFIFO_ENTRIES = 1024  # GP entries of each channel (a power of two)
  def __init__(self, device:str="NV"):
    iface = NVRMInterface((name := Device.parse(device)).index, host_os())
    whole_or_nothing(self._open, iface.close, device, name, iface)

  def _open(self, device:str, name:DeviceName, iface:NVRMInterface):
    # PTX compiles for the GPU's own SM unless the device string (NV:PTX:sm_XX, or DEV=) names one: SASS of one SM runs on few others
    self.gpu_sm = sm_of(*(info := iface.arch_info()))
    if (arch := name.arch or (None if name.renderer else Device.requested_renderer(name.base)[1])) is None:
      if self.gpu_sm is None: raise RuntimeError(f"NV: GPU architecture {info[0]:#x} (implementation {info[1]:#x}) is not one tg knows the SM "
                                                 "of: name it, e.g. DEV=NV:PTX:sm_90")
      arch = f"sm_{self.gpu_sm}"
    try: renderer, compiler = Device.renderer_for(device)
    except DeviceError as e:  # no renderer makes kernels here (no ptxas): memory, copies and signals still work, compiles say why
      if name.renderer: raise
      renderer, compiler = NVPTXRenderer(arch), UnavailableCompiler(str(e))
    if isinstance(compiler, NVPTXCompiler) and compiler.cubin.arch != arch: renderer, compiler = NVPTXRenderer(arch), NVPTXCompiler(arch)
    self.arch = arch
    self.channels = {kind: iface.create_channel(kind, self.GPFIFO_ENTRIES) for kind in ("COMPUTE", "COPY")}
    iface.schedule()
    super().__init__(device, iface, renderer, compiler, NVProgram, NVSelectCtx())
    # every channel first binds its engine's object to the subchannel the methods use (SET_OBJECT, method 0); the compute one then
    # places the shared and local memory windows, where the driver words of constant buffer 0 say they are
    self._setup = iface.alloc(0x1000, host_visible=True)
    for (kind, ch), at in zip(self.channels.items(), (0, 0x800)):
      subc = nv.SUBC_COMPUTE if kind == "COMPUTE" else nv.SUBC_COPY
      words = nv.method(subc, 0, iface.channel_classes[kind]) + (nv.memory_windows() if kind == "COMPUTE" else [])
      self._push(kind, array.array("I", words), self._setup.offset(at, 0x800))

  def select_pm(self, kind:str): return pm_nv
  def queue_states(self) -> list[str]:
    return [f"{kind} channel: GPGet {ch.gp_get}, GPPut {ch.control.cpu_view().cast('I')[rm.USERD_GP_PUT // 4]}" for kind, ch in self.channels.items()]

  def submit(self, kind:str, cb:CommandBuffer, var_vals:dict[str, int]): self._push(kind, cb.patch(var_vals), self.command_memory(cb))

  def _push(self, kind:str, words:array.array, mem:HCQBuffer):
    """words into command memory, a GP entry pointing at them, GPPut, then the doorbell"""
    mem.cpu_view()[:4 * len(words)] = words.tobytes()
    ch = self.channels[kind]
    ctl, fifo = ch.control.cpu_view().cast("I"), ch.gpfifo.cpu_view().cast("I")
    put = ctl[rm.USERD_GP_PUT // 4]
    spin(self, lambda: put + 1 - ch.gp_get <= ch.entries, lambda: f"every GP entry of the {kind} channel is in use")  # let it consume
    fifo[2 * (put % ch.entries)], fifo[2 * (put % ch.entries) + 1] = nv.gpfifo_entry(mem.va, len(words))
    ctl[rm.USERD_GP_PUT // 4] = put + 1
    ch.ring_doorbell(put + 1)
