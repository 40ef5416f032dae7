"""The NV device: tg's HCQ core over GPFIFO channels, a compute channel (host semaphores, inline-QMD launches) and a copy channel
(copy engine). Under MOCKGPU=1 the channels belong to the mock driver; the interface to NVIDIA's kernel driver (RM ioctls on
/dev/nvidiactl, UVM) is not implemented in this version, and the plugin's probe says so."""
from __future__ import annotations
from tinygrad.device import Device
from tinygrad.renderer.python import PythonRenderer
from tinygrad.runtime.support.hcq import HCQCompiled, HCQProgram, mockgpu, round_up
from tinygrad.runtime.support.hcq_select import CommandBuffer
from tinygrad.runtime.support.code_object import CodeObject, HEADER
from tinygrad.runtime.support import nv_methods as nv
from tinygrad.runtime.support.nv_select import pm_nv, NVSelectCtx, program_qmd_fields, QMD_BYTES, CBUF0_SIZE, CBUF0_PARAMS

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

class NVDevice(HCQCompiled):
  def __init__(self, device:str="NV"):
    if not mockgpu(): raise RuntimeError(f"{device}: the NVIDIA kernel-driver interface is not implemented in this version; NV runs on the "
                                         "mock driver (MOCKGPU=1)")
    from tinygrad.runtime.support.nv_mock import MockNVDriver
    iface = MockNVDriver()
    renderer, compiler = Device.renderer_for(device)
    self.channels = {"COMPUTE": iface.create_channel("COMPUTE"), "COPY": iface.create_channel("COPY")}
    super().__init__(device, iface, renderer, compiler, NVProgram, NVSelectCtx())

  def select_pm(self, kind:str): return pm_nv

  def submit(self, kind:str, cb:CommandBuffer, var_vals:dict[str, int]):
    words = cb.patch(var_vals)
    mem = self.command_memory(cb)
    mem.cpu_view()[:4 * len(words)] = words.tobytes()
    ch = self.channels[kind]
    ctl, fifo = ch.control.cpu_view().cast("I"), ch.gpfifo.cpu_view().cast("I")
    put = ctl[0x8c // 4]
    while put + 1 - ch.gp_get > ch.entries:  # every GP entry is in use: let the channel consume
      if not self.iface.progress(): raise RuntimeError(f"{self.device}: {kind} GPFIFO is full and the channel is stuck")
    fifo[2 * (put % ch.entries)], fifo[2 * (put % ch.entries) + 1] = nv.gpfifo_entry(mem.va, len(words))
    ctl[0x8c // 4] = put + 1  # GPPut, then the doorbell
    ch.ring_doorbell(put + 1)
