"""The AMD device: tg's HCQ core over the amdgpu kernel driver's KFD interface (served by the mock kernel driver under MOCKGPU=1). Kernels go to
the compute queue as PM4 (dispatches run from command buffers through INDIRECT_BUFFER), copies to the SDMA queue."""
from __future__ import annotations
import json
from tinygrad.device import Device, Compiler, CompileError
from tinygrad.renderer.python import PythonRenderer
from tinygrad.renderer.amdgpu import AMDGPURenderer
from tinygrad.renderer.tensor_cores import WMMA_RDNA3
from tinygrad.runtime.support.hcq import HCQCompiled, HCQProgram, HCQBuffer, mockgpu, spin, whole_or_nothing
from tinygrad.runtime.support.hcq_select import CommandBuffer
from tinygrad.runtime.support.code_object import CodeObject
from tinygrad.runtime.support import amd_pm4 as pm4
from tinygrad.runtime.support.amd_select import pm_pm4, pm_sdma, AMDSelectCtx
from tinygrad.runtime.support.amd_launch import program_regs, check_explicit_args, hidden_args, fill_hidden

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
    super().__init__(f"tgco3_{self.amdgpu.cachekey}" if self.amdgpu.cachekey else None)  # 3: hidden arguments, the head at the end
  def compile(self, src:str) -> bytes:
    from tinygrad.runtime.compiler_amdgpu import read_code_object
    from tinygrad.runtime.amdgpu_metadata import kernel_args
    from tinygrad.runtime.elf import SHF_ALLOC
    j = json.loads(src)
    co = read_code_object(self.amdgpu.compile(j["llvm"]), j["name"])
    text = co.elf.content(co.elf.sections[co.elf.symbol(j["name"]).shndx])[co.text_offset:]
    # only the kernel's code is loaded (at the dispatched address): a relocation into it, or into other loaded data, would go unapplied
    kd_section = co.elf.sections[co.elf.symbol(f"{j['name']}.kd").shndx].name
    loaded = {sec.name for sec in co.elf.sections if sec.flags & SHF_ALLOC}
    if stray := [f"{r.section}+{r.offset:#x} against {r.symbol.name or '(section)'}" for r in co.elf.relocations()
                 if r.section in loaded and (r.section, r.offset) != (kd_section, co.kd_offset + 16)]:
      raise CompileError(f"kernel {j['name']} refers to data outside its code ({', '.join(stray)}); the loader places only the code")
    args = kernel_args(co.elf, j["name"])
    if why := check_explicit_args(args): raise CompileError(f"kernel {j['name']}: LLVM placed its {why}")
    meta = {"rsrc1": co.kd.rsrc1, "rsrc2": co.kd.rsrc2, "rsrc3": co.kd.rsrc3, "kernarg_size": co.kd.kernarg_size,
            "group_segment_size": co.kd.group_segment_size, "private_segment_size": co.kd.private_segment_size, "props": co.kd.code_properties,
            "arch": self.amdgpu.arch, "hidden": [[kind, off, size] for kind, off, size in args if kind.startswith("hidden_")],
            "kernarg_preload": co.kd.kernarg_preload}
    return CodeObject(j["name"], bytes(text), j["emu"].encode(), meta).pack()

class AMDProgram(HCQProgram):
  def __init__(self, dev:AMDDevice, name:str, lib:bytes):
    co = CodeObject.unpack(lib)
    if not dev.iface.is_mock:
      if not co.machine_code:
        raise RuntimeError(f"{dev.device}: kernel {name} has no AMDGPU machine code (it was rendered for the mock driver); use the AMDGPU "
                           "renderer on hardware")
      if co.meta.get("arch", dev.arch) != dev.arch:
        raise RuntimeError(f"{dev.device}: kernel {name} is machine code for {co.meta['arch']}, and this GPU is {dev.arch}: drop the target "
                           f"from the device string, or name {dev.arch}")
    try:  # the mock runs the UOps and would not notice a kernel that finds its arguments elsewhere: refuse it here
      self.regs, self.hidden = program_regs(co.meta), hidden_args([tuple(a) for a in co.meta.get("hidden", [])])
    except RuntimeError as e: raise RuntimeError(f"{dev.device}: kernel {name} {e} (kernel_code_properties {co.meta.get('props', 0):#x})") from e
    if (scratch := co.meta.get("private_segment_size", 0)) > 0:  # spills or a stack: the dispatch would need scratch memory set up
      raise RuntimeError(f"{dev.device}: kernel {name} needs {scratch} bytes of scratch per work-item, and this version sets up no scratch "
                         "memory (COMPUTE_TMPRING_SIZE and the scratch base): simplify the kernel (smaller upcasts) or use another device")
    self.kernarg_size = co.meta.get("kernarg_size", 0)  # the explicit arguments and the hidden ones after them
    super().__init__(dev, name, lib)
    dev.select_ctx.programs[self.addr] = self.regs
  def kernargs_size(self, nbufs:int, nvals:int) -> int: return max(super().kernargs_size(nbufs, nvals), self.kernarg_size)
  def fill_kernargs(self, ka:HCQBuffer, bufs:tuple, vals:tuple, global_size:tuple, local_size:tuple):
    super().fill_kernargs(ka, bufs, vals, global_size, local_size)
    fill_hidden(ka.cpu_view(), self.hidden, global_size, local_size)

GFX10 = 100000  # gfx_target_version of the first target whose PM4 layouts tg encodes
def gfx_arch(gfx_target_version:int) -> str:
  """the LLVM target of a KFD node's gfx_target_version (major * 10000 + minor * 100 + stepping; 90010 is gfx90a, 110000 gfx1100)"""
  major, minor, stepping = gfx_target_version // 10000, gfx_target_version // 100 % 100, gfx_target_version % 100
  return f"gfx{major}{minor:x}{stepping:x}"

class AMDDevice(HCQCompiled):
  RING_BYTES = 1 << 16  # of each queue's ring (KFD takes a power of two from 1 KiB)
  def __init__(self, device:str="AMD"):
    from tinygrad.runtime.support.amd_kfd import KFDInterface
    if mockgpu():
      from tinygrad.runtime.support.amd_mock import mock_kernel
      iface = KFDInterface(Device.parse(device).index, mock_kernel())
    else: iface = KFDInterface(Device.parse(device).index)
    whole_or_nothing(self._open, iface.close, device, iface)

  def _open(self, device:str, iface):
    # kernels compile for the GPU's own target unless the device string (AMD:LLVM:gfxNNNN, or DEV=) names one: an ISA runs on its target
    name, gfxv = Device.parse(device), iface.props["gfx_target_version"]
    self.arch = name.arch or (None if name.renderer else Device.requested_renderer(name.base)[1]) or gfx_arch(gfxv)
    if gfxv < GFX10 and not iface.is_mock:
      raise RuntimeError(f"AMD:{name.index}: {gfx_arch(gfxv)} is a gfx9 GPU; tg's PM4 packets are gfx10+'s (RELEASE_MEM and ACQUIRE_MEM "
                         "carry gfx10's GCR cache controls, gfx9 lays them out differently), so it would run with stale caches")
    renderer, compiler = Device.renderer_for(device)
    if isinstance(compiler, AMDHCQCompiler) and compiler.amdgpu.arch != self.arch:
      renderer, compiler = AMDHCQRenderer(self.arch), AMDHCQCompiler(self.arch)
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
