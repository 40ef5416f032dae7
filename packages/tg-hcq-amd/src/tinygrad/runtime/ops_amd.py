"""The AMD device: tg's HCQ core over the amdgpu kernel driver's KFD interface (served by the mock kernel driver under MOCKGPU=1). Kernels go to
the compute queue as PM4 (dispatches run from command buffers through INDIRECT_BUFFER), copies to the SDMA queue."""
from __future__ import annotations
import json
from tinygrad.device import Device, Compiler
from tinygrad.renderer.python import PythonRenderer
from tinygrad.renderer.amdgpu import AMDGPURenderer
from tinygrad.renderer.tensor_cores import WMMA_RDNA3
from tinygrad.runtime.support.hcq import HCQCompiled, HCQProgram, mockgpu, spin
from tinygrad.runtime.support.hcq_select import CommandBuffer
from tinygrad.runtime.support.code_object import CodeObject
from tinygrad.runtime.support import amd_pm4 as pm4
from tinygrad.runtime.support.amd_select import pm_pm4, pm_sdma, AMDSelectCtx

class AMDEmulatedRenderer(PythonRenderer):
  """AMD launch limits, kernels as the emulator's UOps: the renderer of AMD under the mock driver (the AMDGPU LLVM renderer is
  the one for hardware)"""
  device = "AMD"
  global_max, local_max = (2**31-1, 65535, 65535), (1024, 1024, 1024)
  tensor_cores = WMMA_RDNA3  # the AMDGPU renderer's on gfx11 (RDNA3), emulated

class AMDHCQRenderer(AMDGPURenderer):
  """the AMDGPU LLVM renderer for the AMD device: the kernel's LLVM IR, and beside it its UOps as the emulator's JSON, which only the
  mock driver reads (the code object carries both)"""
  def render(self, name:str, uops:list) -> str:
    return json.dumps({"name": name, "llvm": super().render(name, uops), "emu": PythonRenderer().render(name, uops)})

class AMDHCQCompiler(Compiler):
  """AMDHCQRenderer's output -> a tg code object: the kernel's machine code (from the ELF LLVM's AMDGPU target makes), its resource
  registers from the kernel descriptor, and the UOps"""
  def __init__(self, arch:str|None=None):
    from tinygrad.runtime.compiler_amdgpu import AMDGPUCompiler
    self.amdgpu = AMDGPUCompiler(arch)
    super().__init__(f"tgco2_{self.amdgpu.cachekey}" if self.amdgpu.cachekey else None)  # 2: the meta has the code properties
  def compile(self, src:str) -> bytes:
    from tinygrad.runtime.compiler_amdgpu import read_code_object
    j = json.loads(src)
    co = read_code_object(self.amdgpu.compile(j["llvm"]), j["name"])
    text = co.elf.content(co.elf.sections[co.elf.symbol(j["name"]).shndx])[co.text_offset:]
    meta = {"rsrc1": co.kd.rsrc1, "rsrc2": co.kd.rsrc2, "rsrc3": co.kd.rsrc3, "kernarg_size": co.kd.kernarg_size,
            "group_segment_size": co.kd.group_segment_size, "private_segment_size": co.kd.private_segment_size, "props": co.kd.code_properties}
    return CodeObject(j["name"], bytes(text), j["emu"].encode(), meta).pack()

# the kernel descriptor's kernel_code_properties (LLVM AMDGPUUsage, "Kernel Descriptor"): the user SGPRs a kernel expects, in this order
# from s0, and its wave size. A dispatch loads only the kernarg pointer, into USER_DATA_0/1 (s0-s1), and runs wave32 (CS_W32_EN)
USER_SGPRS_FIRST = ((1 << 0, "private segment buffer"), (1 << 1, "dispatch pointer"), (1 << 2, "queue pointer"))
KERNARG_SEGMENT_PTR, WAVEFRONT_SIZE32 = 1 << 3, 1 << 10

def launch_abi_mismatch(props:int) -> str|None:
  """why a kernel with these code properties would not find its arguments under our dispatch, or None"""
  if before := [what for bit, what in USER_SGPRS_FIRST if props & bit]: return f"expects a {' and a '.join(before)} in its first user SGPRs"
  if not props & KERNARG_SEGMENT_PTR: return "takes no kernarg segment pointer"
  if not props & WAVEFRONT_SIZE32: return "is compiled for wave64"
  return None

class AMDProgram(HCQProgram):
  def __init__(self, dev:AMDDevice, name:str, lib:bytes):
    co = CodeObject.unpack(lib)
    if not co.machine_code and not dev.iface.is_mock:
      raise RuntimeError(f"{dev.device}: kernel {name} has no AMDGPU machine code (it was rendered for the mock driver); use the AMDGPU "
                         "renderer on hardware")
    if "props" in co.meta and (why := launch_abi_mismatch(co.meta["props"])):  # the mock runs the UOps and would not notice
      raise RuntimeError(f"{dev.device}: kernel {name} {why} (kernel_code_properties {co.meta['props']:#x}); the dispatch gives it only the "
                         "kernarg pointer in s0-s1, as a wave32 kernel")
    if (scratch := co.meta.get("private_segment_size", 0)) > 0:  # spills or a stack: the dispatch would need scratch memory set up
      raise RuntimeError(f"{dev.device}: kernel {name} needs {scratch} bytes of scratch per work-item, and this version sets up no scratch "
                         "memory (COMPUTE_TMPRING_SIZE and the scratch base): simplify the kernel (smaller upcasts) or use another device")
    super().__init__(dev, name, lib)
    dev.select_ctx.programs[self.addr] = (co.meta.get("rsrc1", 0), co.meta.get("rsrc2", 0))

class AMDDevice(HCQCompiled):
  RING_BYTES = 1 << 16  # of each queue's ring (KFD takes a power of two from 1 KiB)
  def __init__(self, device:str="AMD"):
    from tinygrad.runtime.support.amd_kfd import KFDInterface
    if mockgpu():
      from tinygrad.runtime.support.amd_mock import mock_kernel
      iface = KFDInterface(Device.parse(device).index, mock_kernel())
    else: iface = KFDInterface(Device.parse(device).index)
    renderer, compiler = Device.renderer_for(device)
    self.compute_ring, self.sdma_ring = iface.create_queue("COMPUTE", self.RING_BYTES), iface.create_queue("COPY", self.RING_BYTES)
    super().__init__(device, iface, renderer, compiler, AMDProgram, AMDSelectCtx(hdp_flush=iface.hdp_flush))

  def select_pm(self, kind:str): return pm_pm4 if kind == "COMPUTE" else pm_sdma
  def queue_states(self) -> list[str]:
    return [f"{q.kind} queue {q.queue_id}: read pointer {q.read_ptr}, write pointer {q.wptr.cpu_view().cast('Q')[0]} ({unit})"
            for q, unit in ((self.compute_ring, "dwords"), (self.sdma_ring, "bytes"))]

  def submit(self, kind:str, cb:CommandBuffer, var_vals:dict[str, int]):
    words = cb.patch(var_vals)
    if kind == "COMPUTE":
      mem = self.command_memory(cb)
      mem.cpu_view()[:4 * len(words)] = words.tobytes()
      self._put(self.compute_ring, pm4.indirect_buffer(mem.va, len(words)))
    else: self._put(self.sdma_ring, list(words))

  def _put(self, q, words:list[int]):
    """append words to a ring, then publish the write pointer and ring the doorbell"""
    unit = 4 if q.kind == "COPY" else 1  # SDMA ring pointers count bytes, PM4 ones dwords
    ring, wptr = q.ring.cpu_view().cast("I"), q.wptr.cpu_view().cast("Q")
    at = wptr[0] // unit
    spin(self, lambda: at + len(words) - q.read_ptr // unit <= len(ring), lambda: f"the {q.kind} ring is full")  # let the engine consume
    for i, w in enumerate(words): ring[(at + i) % len(ring)] = w
    wptr[0] = (at + len(words)) * unit
    q.ring_doorbell(wptr[0])
