"""The NV device: tg's HCQ core over GPFIFO channels of NVIDIA's kernel driver (nv_rm.py: RM objects and UVM mappings), a compute
channel (host semaphores, inline-QMD launches) and a copy channel (copy engine). Under MOCKGPU=1 the mock kernel driver (nv_mock.py)
serves the same ioctls and runs the channels in python."""
from __future__ import annotations
import array, re
from tinygrad.device import Device
from tinygrad.renderer.python import PythonRenderer
from tinygrad.runtime.support.hcq import HCQCompiled, HCQProgram, HCQBuffer, mockgpu, round_up, spin
from tinygrad.runtime.support.hcq_select import CommandBuffer
from tinygrad.runtime.support.code_object import CodeObject, HEADER
from tinygrad.runtime.support import nv_methods as nv, nv_rm_abi as rm
from tinygrad.runtime.support.nv_rm import NVRMInterface
from tinygrad.runtime.support.nv_select import pm_nv, NVSelectCtx, program_qmd_fields, QMD_BYTES, CBUF0_SIZE, CBUF0_PARAMS

DRIVER_VERSION = "/proc/driver/nvidia/version"

class NVEmulatedRenderer(PythonRenderer):
  """NV launch limits, kernels as the emulator's UOps: the renderer of NV under the mock driver (PTX is the one for hardware)"""
  device = "NV"
  global_max, local_max = (2**31-1, 65535, 65535), (1024, 1024, 64)

class NVProgram(HCQProgram):
  args_offset = QMD_BYTES + CBUF0_PARAMS  # the kernargs block: QMD, then constant buffer 0 with the parameters at 0x160
  def __init__(self, dev:NVDevice, name:str, lib:bytes):
    co = CodeObject.unpack(lib)
    if not co.machine_code and not dev.iface.is_mock:
      raise RuntimeError(f"{dev.device}: kernel {name} has no machine code (it was rendered for the mock driver)")
    self.mem = dev.iface.alloc(round_up(len(lib), 256), host_visible=True)
    self.mem.cpu_view()[:len(lib)] = lib
    super().__init__(dev, name, self.mem.va + HEADER)
    dev.select_ctx.programs[self.addr] = program_qmd_fields(**{k: co.meta[k] for k in ("registers", "shared", "local", "sass_version")
                                                               if k in co.meta})
  def __del__(self):
    try: self.dev.select_ctx.programs.pop(self.addr, None)
    except AttributeError: pass
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
  def __init__(self, device:str="NV"):
    iface = NVRMInterface(Device.parse(device).index, host_os())
    renderer, compiler = Device.renderer_for(device)
    self.channels = {kind: iface.create_channel(kind) for kind in ("COMPUTE", "COPY")}
    iface.schedule()
    super().__init__(device, iface, renderer, compiler, NVProgram, NVSelectCtx())
    # every channel first binds its engine's object to the subchannel the methods use (SET_OBJECT, method 0)
    self._setup = iface.alloc(0x1000, host_visible=True)
    for (kind, ch), at in zip(self.channels.items(), (0, 0x800)):
      subc = nv.SUBC_COMPUTE if kind == "COMPUTE" else nv.SUBC_COPY
      self._push(kind, array.array("I", nv.method(subc, 0, iface.CHANNEL_CLASSES[kind])), self._setup.offset(at, 0x800))

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
