"""The mock AMD driver (MOCKGPU=1): KFD's part (memory, user-mode queues with rings, read/write pointers and doorbells) and a
virtual GPU that executes what the queues hold, in python: the compute engine decodes PM4, the SDMA engine its packets. Every packet
the encoders (amd_pm4, amd_sdma) emit is decoded; anything else faults with its offset. Kernels run on the PYTHON emulator from the
UOps their code object carries. Executing happens when the host rings a doorbell or waits (progress()); a queue blocked on a
wait stays where it is until another queue's write lets it go on."""
from __future__ import annotations
from tinygrad.runtime.support.hcq import HCQBuffer
from tinygrad.runtime.support.hcq_mock import MockGPUError, EmulatedLaunches, clock_ns, mock_system
from tinygrad.runtime.support import amd_pm4 as pm4, amd_sdma as sdma

HDP_FLUSH_REQ, HDP_FLUSH_DONE, HDP_CP_BIT = 0x106, 0x107, 1 << 2  # the mock's NBIO registers: done mirrors the request at once

class MockQueue:
  """a ring of 32-bit words at a GPU address, read pointer (consumed) and write pointer (written) in memory, in dwords for PM4 and in
  bytes for SDMA, as the engines count them"""
  def __init__(self, kfd:MockKFD, kind:str, ring_bytes:int):
    self.kfd, self.kind, self.unit = kfd, kind, 4 if kind == "COPY" else 1
    self.ring = kfd.alloc(ring_bytes, True)
    self.rptr, self.wptr = kfd.alloc(8, True), kfd.alloc(8, True)
    self.words = self.ring.cpu_view().cast("I")
    self.ibs: list[list[int]] = []  # PM4 indirect buffers being run: [address of the next word, words left]
    self.submissions = 0            # doorbell rings
  def ring_doorbell(self, wptr:int):
    self.submissions += 1
    self.kfd.progress()
  @property
  def read_ptr(self) -> int: return self.rptr.cpu_view().cast("Q")[0]
  def _write_ptr(self) -> int: return self.wptr.cpu_view().cast("Q")[0]
  def pending(self) -> bool: return bool(self.ibs) or self.read_ptr < self._write_ptr()
  def _word(self) -> int: return self.read_ptr // self.unit
  def fetch(self, n:int) -> list[int]:
    """the next n words (the packet under the read position) without consuming them"""
    if self.ibs:
      addr, left = self.ibs[-1]
      if n > left: raise MockGPUError(f"{self.kind}: packet of {n} words runs past the end of the indirect buffer at {addr:#x}")
      return list(self.kfd.mem.read(addr, f"<{n}I"))
    r = self._word()
    if r + n > self._write_ptr() // self.unit: raise MockGPUError(f"{self.kind}: packet of {n} words at ring word {r} runs past the write pointer")
    return [self.words[(r + i) % len(self.words)] for i in range(n)]
  def consume(self, n:int):
    if self.ibs:
      self.ibs[-1][0] += 4 * n
      self.ibs[-1][1] -= n
      if self.ibs[-1][1] == 0: self.ibs.pop()
    else: self.rptr.cpu_view().cast("Q")[0] = self.read_ptr + n * self.unit
  def where(self) -> str: return f"indirect buffer word at {self.ibs[-1][0]:#x}" if self.ibs else f"ring word {self._word()}"

class MockKFD:
  """the driver interface of AMDDevice under MOCKGPU=1"""
  is_mock = True
  def __init__(self):
    self.system = mock_system("AMD", 0x7F00_0000_0000)
    self.system.gpus.add(self)
    self.mem = self.system.mem
    self.launches = EmulatedLaunches(self.mem)
    self.queues: list[MockQueue] = []
    self.regs: dict[int, int] = {}
    self.hdp_flush = (HDP_FLUSH_REQ, HDP_FLUSH_DONE, HDP_CP_BIT)
  def alloc(self, size:int, host_visible:bool=False) -> HCQBuffer: return self.mem.alloc(size)
  def free(self, buf:HCQBuffer): self.mem.free(buf)
  def create_queue(self, kind:str, ring_bytes:int=1 << 16) -> MockQueue:
    self.queues.append(q := MockQueue(self, kind, ring_bytes))
    return q
  def progress(self) -> bool: return self.system.progress()
  def run(self) -> bool:
    """run every queue of this GPU until it is empty or blocked, round robin until nothing moves; True if any packet ran"""
    ran, moved = False, True
    while moved:
      moved = False
      for q in self.queues:
        while q.pending() and (self._step_pm4(q) if q.kind == "COMPUTE" else self._step_sdma(q)): moved = ran = True
    return ran

  # *** PM4: one packet per step; False when it must wait ***
  def _step_pm4(self, q:MockQueue) -> bool:
    (h,) = q.fetch(1)
    if h >> 30 != 3: raise MockGPUError(f"PM4: type {h >> 30} packet header {h:#010x} at {q.where()} (only type 3 is emitted)")
    op, n = (h >> 8) & 0xff, ((h >> 16) & 0x3fff) + 1
    w = q.fetch(1 + n)[1:]
    if (fn := self._PM4.get(op)) is None: raise MockGPUError(f"PM4: unknown opcode {op:#x} (header {h:#010x}) at {q.where()}")
    if fn(self, q, w) is False: return False
    q.consume(1 + n)
    if op == pm4.INDIRECT_BUFFER: q.ibs.append([w[0] | (w[1] << 32), w[2] & 0xfffff])
    return True
  def _wait_reg_mem(self, q, w):
    func, mem_space, operation = w[0] & 7, (w[0] >> 4) & 1, (w[0] >> 6) & 3
    if mem_space: val = self.mem.read(w[1] | w[2] << 32, "<I")[0]
    else:
      if operation == 1: self.regs[w[1]] = w[3]; self.regs[HDP_FLUSH_DONE] = self.regs.get(HDP_FLUSH_REQ, 0)  # write, then poll
      val = self.regs.get(w[2] if operation == 1 else w[1], 0)
    return _compare(func, val & w[4], w[3], "PM4 WAIT_REG_MEM")
  def _release_mem(self, q, w):
    addr, sel = w[2] | w[3] << 32, w[1] >> 29
    if sel == pm4.DATA_SEL_32: self.mem.write(addr, "<I", w[4])
    elif sel == pm4.DATA_SEL_64: self.mem.write(addr, "<Q", w[4] | w[5] << 32)
    elif sel == pm4.DATA_SEL_GPU_CLOCK: self.mem.write(addr, "<Q", clock_ns())
    elif sel != 0: raise MockGPUError(f"PM4 RELEASE_MEM: DATA_SEL {sel} is not emitted by the encoder")
  def _write_data(self, q, w): self.mem.write(w[1] | w[2] << 32, f"<{len(w) - 3}I", *w[3:])
  def _set_sh_reg(self, q, w):
    for i, v in enumerate(w[1:]): self.regs[pm4.SET_SH_REG_START + w[0] + i] = v
  def _dispatch(self, q, w):
    r = self.regs
    code = (r.get(pm4.COMPUTE_PGM_LO, 0) | r.get(pm4.COMPUTE_PGM_LO + 1, 0) << 32) << 8
    args = r.get(pm4.COMPUTE_USER_DATA_0, 0) | r.get(pm4.COMPUTE_USER_DATA_0 + 1, 0) << 32
    local = tuple(r.get(pm4.COMPUTE_NUM_THREAD_X + i, 1) for i in range(3))
    if not w[3] & 1: raise MockGPUError(f"PM4 DISPATCH_DIRECT without COMPUTE_SHADER_EN: initiator {w[3]:#x}")
    self.launches.launch(code, args, tuple(w[:3]), local)
  def _indirect(self, q, w):
    if q.ibs: raise MockGPUError("PM4: INDIRECT_BUFFER inside an indirect buffer (the device chains none)")
    if not w[2] & (1 << 23): raise MockGPUError(f"PM4 INDIRECT_BUFFER without the VALID bit: {w[2]:#x}")
  _PM4 = {pm4.WAIT_REG_MEM: _wait_reg_mem, pm4.RELEASE_MEM: _release_mem, pm4.WRITE_DATA: _write_data, pm4.SET_SH_REG: _set_sh_reg,
          pm4.DISPATCH_DIRECT: _dispatch, pm4.INDIRECT_BUFFER: _indirect, pm4.ACQUIRE_MEM: lambda s, q, w: None,
          pm4.EVENT_WRITE: lambda s, q, w: None, pm4.NOP: lambda s, q, w: None}

  # *** SDMA ***
  _SDMA_LEN = {sdma.OP_NOP: 1, sdma.OP_COPY: 7, sdma.OP_FENCE: 4, sdma.OP_TRAP: 2, sdma.OP_POLL_REGMEM: 6, sdma.OP_TIMESTAMP: 3}
  def _step_sdma(self, q:MockQueue) -> bool:
    (h,) = q.fetch(1)
    op, sub = h & 0xff, (h >> 8) & 0xff
    if (n := self._SDMA_LEN.get(op)) is None: raise MockGPUError(f"SDMA: unknown op {op} (header {h:#010x}) at {q.where()}")
    w = q.fetch(n)
    if op == sdma.OP_COPY:
      if sub != sdma.SUBOP_COPY_LINEAR: raise MockGPUError(f"SDMA COPY sub-op {sub} is not emitted by the encoder")
      size, src, dst = (w[1] & 0x3fffff) + 1, w[3] | w[4] << 32, w[5] | w[6] << 32
      self.mem.view(dst, size)[:] = self.mem.view(src, size)
    elif op == sdma.OP_FENCE: self.mem.write(w[1] | w[2] << 32, "<I", w[3])
    elif op == sdma.OP_POLL_REGMEM:
      if not h >> 31: raise MockGPUError("SDMA POLL_REGMEM on a register is not emitted by the encoder")
      if not _compare((h >> 28) & 7, self.mem.read(w[1] | w[2] << 32, "<I")[0] & w[4], w[3], "SDMA POLL_REGMEM"): return False
    elif op == sdma.OP_TIMESTAMP:
      if sub != sdma.SUBOP_TIMESTAMP_GET_GLOBAL: raise MockGPUError(f"SDMA TIMESTAMP sub-op {sub} is not emitted by the encoder")
      self.mem.write(w[1] | w[2] << 32, "<Q", clock_ns())
    q.consume(n)
    return True

_FUNCS = {0: lambda a, b: True, 1: lambda a, b: a < b, 2: lambda a, b: a <= b, 3: lambda a, b: a == b, 4: lambda a, b: a != b,
          5: lambda a, b: a >= b, 6: lambda a, b: a > b}
def _compare(func:int, val:int, ref:int, what:str) -> bool:
  if func not in _FUNCS: raise MockGPUError(f"{what}: compare function {func} does not exist")
  return _FUNCS[func](val, ref)
