"""What the mock drivers (MOCKGPU=1) share: the GPU's view of memory (host buffers the mock kernel driver mapped at GPU virtual
addresses), the GPUs of one vendor in the process run together, and kernel launches run on the PYTHON emulator from the UOps a code
object carries. The vendor mocks (tg-hcq-amd, tg-hcq-nv) serve their driver's ioctls, decode their packet streams and call these."""
from __future__ import annotations
import bisect, struct, time, weakref
from tinygrad.runtime.support.code_object import CodeObject, HEADER

class MockGPUError(RuntimeError):
  """the packet stream asked the mock GPU for something a GPU would fault on (bad packet, unmapped address)"""

class MockMemory:
  """GPU virtual addresses -> the host buffers mapped there (the page tables a driver keeps for the GPU)"""
  def __init__(self):
    self.starts, self.allocs = [], {}
    self.unmapped: list = []  # callbacks (va, size) for what caches GPU memory (decoded programs): an address may be mapped anew
  def map(self, va:int, backing):
    """make host memory (a buffer) visible to the GPU at va, as a driver maps pages into the GPU's page tables"""
    i = bisect.bisect_right(self.starts, va) - 1
    if (i >= 0 and self.starts[i] + len(memoryview(self.allocs[self.starts[i]])) > va) or \
       (i + 1 < len(self.starts) and self.starts[i + 1] < va + len(memoryview(backing))):
      raise MockGPUError(f"GPU mapping of {len(memoryview(backing))} bytes at {va:#x} overlaps one already there")
    bisect.insort(self.starts, va)
    self.allocs[va] = backing
  def unmap(self, va:int):
    if va not in self.allocs: raise MockGPUError(f"unmap of {va:#x}, which is not the start of a mapping")
    self.starts.remove(va)
    size = len(memoryview(self.allocs.pop(va)))  # the backing is released when the last view of it goes
    for fn in self.unmapped: fn(va, size)
  def view(self, va:int, size:int|None=None) -> memoryview:
    """host view of GPU memory from va (to the end of its allocation when size is None)"""
    i = bisect.bisect_right(self.starts, va) - 1
    if i < 0: raise MockGPUError(f"GPU page fault: address {va:#x} is not mapped")
    start = self.starts[i]
    mv = memoryview(self.allocs[start])
    if (off := va - start) >= len(mv): raise MockGPUError(f"GPU page fault: address {va:#x} is not mapped (past the mapping at {start:#x})")
    end = len(mv) if size is None else off + size
    if end > len(mv): raise MockGPUError(f"GPU page fault: {size} bytes at {va:#x} run past the allocation at {start:#x} ({len(mv)} bytes)")
    return mv[off:end]
  def read(self, va:int, fmt:str) -> tuple: return struct.unpack(fmt, self.view(va, struct.calcsize(fmt)))
  def write(self, va:int, fmt:str, *vals): self.view(va, struct.calcsize(fmt))[:] = struct.pack(fmt, *vals)

def clock_ns() -> int: return time.perf_counter_ns()

class MockSystem:
  """what every mock GPU of one vendor in this process shares, as on a real host: one GPU virtual address space (KFD and UVM give a
  process one, its memory mapped into every GPU, so a queue on one GPU can wait on another's signal), and progress that runs every
  GPU (that wait is released by the other GPU's queue). A GPU that faulted stays stopped: the others run on"""
  def __init__(self): self.mem, self.gpus, self.faulted, self.running = MockMemory(), weakref.WeakSet(), weakref.WeakSet(), False
  def progress(self) -> bool:
    """run every GPU's queues until nothing moves; True if any packet ran"""
    if self.running:  # a GPU runs beside the host, never inside itself: a step resumed after that would read a stale queue position
      raise RuntimeError("the mock GPUs were asked to run from inside their own step (host code that waits on the GPU ran there, "
                         "e.g. from a __del__ during garbage collection)")
    self.running = True
    try: return self._run_all()
    finally: self.running = False
  def _run_all(self) -> bool:
    ran, moved = False, True
    while moved:
      moved = False
      for gpu in [g for g in self.gpus if g not in self.faulted]:
        try: moved |= gpu.run()
        except MockGPUError:
          if not getattr(gpu, "isolates_faults", False): self.faulted.add(gpu)  # else the GPU stopped only what faulted
          raise
      ran |= moved
    return ran

_systems: dict[str, MockSystem] = {}
def mock_system(vendor:str) -> MockSystem:
  if vendor not in _systems: _systems[vendor] = MockSystem()
  return _systems[vendor]

class EmulatedLaunches:
  """kernel launches on the PYTHON emulator: the program is read back from GPU memory (its code object's UOps), its arguments from the
  kernargs block (64-bit buffer addresses, then 32-bit ints), its buffers are views of GPU memory"""
  def __init__(self, mem:MockMemory):
    self.mem, self.programs, self.metas, self.launches = mem, {}, {}, 0
    mem.unmapped.append(self._forget)
  def _forget(self, va:int, size:int):
    for addr in [a for a in self.programs if va <= a < va + size]: del self.programs[addr]; self.metas.pop(addr, None)
  def program(self, addr:int):
    if (prg := self.programs.get(addr)) is None:
      from tinygrad.runtime.ops_python import PythonProgram
      head = self.mem.view(addr - HEADER, HEADER)
      co = CodeObject.unpack(self.mem.view(addr - HEADER, CodeObject.size_at(head)))
      if not co.uops_json: raise MockGPUError(f"program at {addr:#x} ({co.name}) carries no UOps: the mock GPU cannot run machine code")
      prg = self.programs[addr] = PythonProgram(co.name, co.uops_json)
      self.metas[addr] = co.meta
    return prg
  def meta(self, addr:int) -> dict:
    """the launch facts the code object at addr records of its machine code (what the hardware would read from the descriptor)"""
    self.program(addr)
    return self.metas[addr]
  def launch(self, program:int, args:int, global_size:tuple, local_size:tuple):
    prg = self.program(program)
    nb, nv = len(prg.params), len(prg.vars)
    addrs_vals = self.mem.read(args, f"<{nb}Q{nv}i")
    bufs = []
    for (_, i), va in zip(prg.params, addrs_vals[:nb]):
      item = max(prg.uops[i][1].itemsize, 1)  # the emulator casts the view to the element type: whole elements only
      mv = self.mem.view(va)
      bufs.append(mv[:len(mv) // item * item])
    prg(*bufs, vals=tuple(addrs_vals[nb:]), global_size=global_size, local_size=local_size)
    self.launches += 1
