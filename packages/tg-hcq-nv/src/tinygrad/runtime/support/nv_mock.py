"""The mock NVIDIA driver (MOCKGPU=1): GPU memory below 2**40, GPFIFO channels (a ring of GP entries, GPGet/GPPut, a doorbell) and
a virtual GPU that executes the push buffers the entries point to, in python: host semaphores and wait-for-idle (class C56F), inline
QMD loads and launches (C6C0), copy-engine transfers (C6B5). Kernels run on the PYTHON emulator from the UOps their code object
carries. A channel blocked on a semaphore acquire stays there until another channel's release lets it go on."""
from __future__ import annotations
from tinygrad.runtime.support.hcq import HCQBuffer
from tinygrad.runtime.support.hcq_mock import MockGPUError, EmulatedLaunches, clock_ns, mock_system
from tinygrad.runtime.support import nv_methods as nv
from tinygrad.runtime.support.nv_select import CBUF0_PARAMS, WFI

class MockChannel:
  """a GPFIFO channel: `entries` GP entries of 8 bytes; GPPut (entries written) and GPGet (entries done) in its control page"""
  def __init__(self, drv:MockNVDriver, kind:str, entries:int):
    self.drv, self.kind, self.entries = drv, kind, entries
    self.gpfifo, self.control = drv.alloc(8 * entries), drv.alloc(0x100)
    self.pos, self.submissions = 0, 0  # words of the current entry done
    self.regs: dict[tuple[int, int], int] = {}
    self.inline_qmd: list[int] = [0] * nv.QMD_WORDS
  def _ctl(self): return self.control.cpu_view().cast("I")
  @property
  def gp_get(self) -> int: return self._ctl()[0x88 // 4]
  def ring_doorbell(self, token:int):
    self.submissions += 1
    self.drv.progress()
  def pending(self) -> bool: return self.gp_get != self._ctl()[0x8c // 4]

class MockNVDriver:
  """the driver interface of NVDevice under MOCKGPU=1"""
  is_mock = True
  def __init__(self):
    self.system = mock_system("NV", 0x10_0000_0000)
    self.system.gpus.add(self)
    self.mem = self.system.mem
    self.launches = EmulatedLaunches(self.mem)
    self.channels: list[MockChannel] = []
  def alloc(self, size:int, host_visible:bool=False) -> HCQBuffer: return self.mem.alloc(size)
  def free(self, buf:HCQBuffer): self.mem.free(buf)
  def create_channel(self, kind:str, entries:int=1024) -> MockChannel:
    self.channels.append(ch := MockChannel(self, kind, entries))
    return ch
  def progress(self) -> bool: return self.system.progress()
  def run(self) -> bool:
    """run every channel of this GPU until it is empty or blocked; True if any method ran"""
    ran, moved = False, True
    while moved:
      moved = False
      for ch in self.channels:
        while ch.pending() and self._step(ch): moved = ran = True
    return ran

  def _step(self, ch:MockChannel) -> bool:
    """one method group of the current GP entry; False when it must wait"""
    lo_, hi_ = self.mem.read(ch.gpfifo.va + 8 * (ch.gp_get % ch.entries), "<II")
    addr, n = (hi_ & 0xff) << 32 | (lo_ & 0xfffffffc), (hi_ >> 10) & 0x1fffff
    if ch.pos < n:
      (h,) = self.mem.read(addr + 4 * ch.pos, "<I")
      sec, count, subc, mthd = nv.decode_header(h)
      if sec != 1: raise MockGPUError(f"NV {ch.kind}: method header {h:#010x} at {addr + 4*ch.pos:#x} is not an incrementing method")
      if ch.pos + 1 + count > n: raise MockGPUError(f"NV {ch.kind}: method group of {count} words runs past its GP entry at {addr:#x}")
      data = self.mem.read(addr + 4 * (ch.pos + 1), f"<{count}I")
      for i, d in enumerate(data):
        if self._method(ch, subc, mthd + 4 * i, d) is False: return False
      ch.pos += 1 + count
    if ch.pos >= n:
      ch.pos = 0
      ch._ctl()[0x88 // 4] = ch.gp_get + 1
    return True

  def _method(self, ch:MockChannel, subc:int, mthd:int, d:int):
    ch.regs[(subc, mthd)] = d
    r = lambda m: ch.regs.get((subc, m), 0)
    if subc == 0 and mthd == nv.SEM_EXECUTE:
      addr, payload, op = (r(nv.SEM_ADDR_HI) & 0xff) << 32 | r(nv.SEM_ADDR_LO), r(nv.SEM_PAYLOAD_HI) << 32 | r(nv.SEM_PAYLOAD_LO), d & 7
      if not d & nv.SEM_PAYLOAD_64: raise MockGPUError("NV SEM_EXECUTE: 32-bit payloads are not emitted by the encoder")
      if op == nv.SEM_ACQ_CIRC_GEQ: return self.mem.read(addr, "<Q")[0] >= payload
      if op != nv.SEM_RELEASE: raise MockGPUError(f"NV SEM_EXECUTE operation {op} is not emitted by the encoder")
      self.mem.write(addr, "<Q", payload)
      if d & nv.SEM_RELEASE_TIMESTAMP: self.mem.write(addr + 8, "<Q", clock_ns())
    elif subc == 0 and mthd == WFI: pass  # the mock runs each launch to completion: idle already
    elif subc == 0 and mthd in (nv.SEM_ADDR_LO, nv.SEM_ADDR_HI, nv.SEM_PAYLOAD_LO, nv.SEM_PAYLOAD_HI): pass
    elif subc == nv.SUBC_COMPUTE and nv.LOAD_INLINE_QMD_DATA <= mthd < nv.LOAD_INLINE_QMD_DATA + 4 * nv.QMD_WORDS:
      ch.inline_qmd[(mthd - nv.LOAD_INLINE_QMD_DATA) // 4] = d
    elif subc == nv.SUBC_COMPUTE and mthd in (nv.SET_INLINE_QMD_ADDRESS_A, nv.SET_INLINE_QMD_ADDRESS_B, nv.SEND_PCAS_A): pass
    elif subc == nv.SUBC_COMPUTE and mthd == nv.SEND_SIGNALING_PCAS2_B:
      if d & 0xf != nv.PCAS_ACTION_INVALIDATE_COPY_SCHEDULE: raise MockGPUError(f"NV PCAS action {d & 0xf} is not emitted by the encoder")
      inline = (r(nv.SET_INLINE_QMD_ADDRESS_A) << 32 | r(nv.SET_INLINE_QMD_ADDRESS_B)) << 8
      self.mem.write(inline, f"<{nv.QMD_WORDS}I", *ch.inline_qmd)  # the inline load lands in memory, where PCAS finds it
      self._launch(list(self.mem.read(r(nv.SEND_PCAS_A) << 8, f"<{nv.QMD_WORDS}I")))
    elif subc == nv.SUBC_COPY and mthd == nv.LAUNCH_DMA:
      if d != nv.LAUNCH_DMA_COPY: raise MockGPUError(f"NV LAUNCH_DMA {d:#x} is not the pitch-linear copy the encoder emits")
      src = (r(nv.OFFSET_IN_UPPER) & 0x1ffff) << 32 | r(nv.OFFSET_IN_UPPER + 4)
      dst = (r(nv.OFFSET_IN_UPPER + 8) & 0x1ffff) << 32 | r(nv.OFFSET_IN_UPPER + 12)
      size = r(nv.LINE_LENGTH_IN)
      self.mem.view(dst, size)[:] = self.mem.view(src, size)
    elif subc == nv.SUBC_COPY and mthd in (nv.OFFSET_IN_UPPER, nv.OFFSET_IN_UPPER + 4, nv.OFFSET_IN_UPPER + 8, nv.OFFSET_IN_UPPER + 12,
                                           nv.LINE_LENGTH_IN): pass
    else: raise MockGPUError(f"NV {ch.kind}: method {mthd:#x} on subchannel {subc} is not one the encoder emits")

  def _launch(self, q:list[int]):
    f = lambda name: nv.qmd_field(q, name)
    if f("qmd_major_version") != 3 or not f("constant_buffer_valid0"): raise MockGPUError(f"NV QMD is not a V03 QMD with constant buffer 0")
    cbuf = f("constant_buffer_addr_upper0") << 32 | f("constant_buffer_addr_lower0")
    program = f("program_address_upper") << 32 | f("program_address_lower")
    grid = (f("cta_raster_width"), f("cta_raster_height"), f("cta_raster_depth"))
    block = (f("cta_thread_dimension0"), f("cta_thread_dimension1"), f("cta_thread_dimension2"))
    self.launches.launch(program, cbuf + CBUF0_PARAMS, grid, block)
