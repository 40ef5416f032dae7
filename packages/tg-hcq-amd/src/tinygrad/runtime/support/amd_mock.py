"""The mock AMD kernel driver (MOCKGPU=1): the host OS beneath KFDInterface (amd_kfd.py). It serves /dev/kfd's ioctls on the structures
kfd_ioctl.py generates from the kernel's header (version, VM acquire, memory allocation and GPU mapping, user-mode queue creation with
the checks KFD makes: ring size, mapped rings and pointers, the compute queue's EOP buffer and context save/restore area against the
topology's sizes), the render node's mappings of host-visible memory, the doorbell pages, and the KFD topology in sysfs. Each mock
GPU executes what its queues hold, in python, from the write pointer its doorbell last saw: the compute engine decodes PM4, the SDMA
engine its packets. Every packet the encoders (amd_pm4, amd_sdma) emit is decoded; anything else faults with its offset. Kernels run
on the PYTHON emulator from the UOps their code object carries. A queue blocked on a wait stays where it is until another queue's
write lets it go on."""
from __future__ import annotations
import ctypes, itertools, mmap, os
from tinygrad.runtime.support import kfd_ioctl as kfd, amd_pm4 as pm4, amd_sdma as sdma
from tinygrad.runtime.support.amd_kfd import KFDHostOS, NODES
from tinygrad.runtime.support.hcq_mock import MockGPUError, EmulatedLaunches, clock_ns, mock_system

HDP_FLUSH_REQ, HDP_FLUSH_DONE = 0x106, 0x107  # the mock's NBIO registers (for the HDP flush packets): done mirrors the request at once
GPUS = 4
VRAM_BYTES = 8 << 30  # video memory of each mock GPU: an allocation past it fails with ENOMEM, as KFD's does
# the topology a mock GPU node reports (sysfs properties): a small gfx1100, 4 CUs of 2 SIMDs
PROPS = {"simd_count": 8, "simd_per_cu": 2, "max_waves_per_simd": 16, "array_count": 2, "simd_arrays_per_engine": 1, "lds_size_in_kb": 64,
         "num_xcc": 1, "gfx_target_version": 110000}
# its CWSR sizes by hand from kfd_queue.c's kfd_queue_ctx_save_restore_size (see amd_kfd.py), written out here so that the host's
# formula is checked against them, not against itself: gfx1100 runs 32 waves a CU, 128 waves;
# ctl_stack_size = ALIGN(40 + 128 * 12 + 8 = 1584, 4096) = 0x1000; wave data 4 CUs * (VGPR 0x60000 + SGPR 0x4000 + LDS 0x10000 +
# HWREG 0x1000 = 0x75000) = 0x1d4000, so cwsr_size = 0x1d5000; debug_memory_size = 128 * 32 = 0x1000; one XCC: an area of 0x1d6000
CWSR = {"ctl_stack_size": 0x1000, "cwsr_size": 0x1d5000, "area": 0x1d6000}
SYSFS_CWSR = True  # print cwsr_size and ctl_stack_size in the node's properties (newer kernels do; False: an older kernel)
EOP_BUFFER_SIZE = 4096  # the node's eop_buffer_size (kfd_queue.c: 4096 from gfx8 on, but Tonga)

class MockQueue:
  """a user-mode queue as the GPU sees it: a ring of 32-bit words at a GPU address, read pointer (consumed, written by the GPU) and
  write pointer in memory, in dwords for PM4 and in bytes for SDMA, as the engines count them; the write pointer the doorbell gave"""
  def __init__(self, gpu:MockAMDGPU, kind:str, ring:int, ring_bytes:int, rptr:int, wptr:int, doorbell:int):
    self.gpu, self.mem, self.kind, self.unit = gpu, gpu.mem, kind, 4 if kind == "COPY" else 1
    self.ring, self.nwords, self.rptr, self.wptr, self.doorbell = ring, ring_bytes // 4, rptr, wptr, doorbell
    self.wptr_seen, self.dead, self.fault = 0, False, ""  # a queue that faulted is dead: KFD evicts it
    self.ibs: list[list[int]] = []  # PM4 indirect buffers being run: [address of the next word, words left]
  @property
  def read_ptr(self) -> int: return self.mem.read(self.rptr, "<Q")[0]
  def pending(self) -> bool: return not self.dead and (bool(self.ibs) or self.read_ptr < self.wptr_seen)
  def _word(self) -> int: return self.read_ptr // self.unit
  def fetch(self, n:int) -> list[int]:
    """the next n words (the packet under the read position) without consuming them"""
    if self.ibs:
      addr, left = self.ibs[-1]
      if n > left: raise MockGPUError(f"{self.kind}: packet of {n} words runs past the end of the indirect buffer at {addr:#x}")
      return list(self.mem.read(addr, f"<{n}I"))
    r = self._word()
    if r + n > self.wptr_seen // self.unit: raise MockGPUError(f"{self.kind}: packet of {n} words at ring word {r} runs past the write pointer")
    if (at := r % self.nwords) + n <= self.nwords: return list(self.mem.read(self.ring + 4 * at, f"<{n}I"))
    return [self.mem.read(self.ring + 4 * ((r + i) % self.nwords), "<I")[0] for i in range(n)]  # the packet wraps the ring
  def consume(self, n:int):
    if self.ibs:
      self.ibs[-1][0] += 4 * n
      self.ibs[-1][1] -= n
      if self.ibs[-1][1] == 0: self.ibs.pop()
    else: self.mem.write(self.rptr, "<Q", self.read_ptr + n * self.unit)
  def where(self) -> str: return f"indirect buffer word at {self.ibs[-1][0]:#x}" if self.ibs else f"ring word {self._word()}"

class MockAMDGPU:
  """one GPU: its KFD node, its queues and their doorbell page, the registers its packets set"""
  isolates_faults = True  # a fault stops the queue that made it (KFD evicts it), the GPU runs the others on
  def __init__(self, index:int, kernel:MockKFDKernel):
    self.index, self.gpu_id, self.minor, self.mem = index, 0x1000 + index, 128 + index, kernel.system.mem
    self.launches, self.regs = EmulatedLaunches(self.mem), {}
    self.queues: dict[int, MockQueue] = {}  # by queue id (the process's, as KFD's), which is also its doorbell's slot on this GPU's page
    self.doorbell_fd = os.memfd_create(f"mock-amd{index}-doorbells")
    os.ftruncate(self.doorbell_fd, mmap.PAGESIZE)
    self.doorbells = memoryview(mmap.mmap(self.doorbell_fd, mmap.PAGESIZE))
    kernel.system.gpus.add(self)
  def doorbell_rung(self):
    for q in self.queues.values(): q.wptr_seen = int.from_bytes(self.doorbells[q.doorbell:q.doorbell + 8], "little")
  def run(self) -> bool:
    """run every queue until it is empty or blocked, round robin until nothing moves; True if any packet ran"""
    ran, moved = False, True
    while moved:
      moved = False
      for q in list(self.queues.values()):
        try:
          while q.pending() and (self._step_pm4(q) if q.kind == "COMPUTE" else self._step_sdma(q)): moved = ran = True
        except MockGPUError as e:
          q.dead, q.fault = True, str(e)
          raise
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
    local, grid = tuple(r.get(pm4.COMPUTE_NUM_THREAD_X + i, 1) for i in range(3)), tuple(w[:3])
    if not w[3] & 1: raise MockGPUError(f"PM4 DISPATCH_DIRECT without COMPUTE_SHADER_EN: initiator {w[3]:#x}")
    kernarg_sgpr = self._check_descriptor(self.launches.meta(code), w[3])
    args = r.get(pm4.COMPUTE_USER_DATA_0 + kernarg_sgpr, 0) | r.get(pm4.COMPUTE_USER_DATA_0 + kernarg_sgpr + 1, 0) << 32
    self._check_hidden(self.launches.meta(code), args, grid, local)
    self.launches.launch(code, args, grid, local)
  def _check_descriptor(self, meta:dict, initiator:int) -> int:
    """the hardware runs the machine code with the resource registers and user SGPRs the dispatch set; a kernel whose descriptor says
    otherwise would misbehave, so the mock holds them to the descriptor its code object recorded. Returns the user SGPR of the kernarg
    pointer (a code object without machine code takes it in s0)"""
    # LDS: RSRC2.LDS_SIZE (bits 23:15, granules of 512 bytes) is the work group's whole allocation; an HSA descriptor leaves it zero
    lds = self.regs.get(pm4.COMPUTE_PGM_RSRC1 + 1, 0) >> 15 & 0x1ff
    if lds * 512 < meta.get("group_segment_size", 0):
      raise MockGPUError(f"PM4 dispatch: COMPUTE_PGM_RSRC2.LDS_SIZE gives {lds * 512} bytes of LDS, the kernel uses "
                         f"{meta['group_segment_size']}")
    if "props" not in meta: return 0
    regs = {"COMPUTE_PGM_RSRC1": (pm4.COMPUTE_PGM_RSRC1, meta["rsrc1"]), "COMPUTE_PGM_RSRC3": (pm4.COMPUTE_PGM_RSRC3, meta["rsrc3"]),
            "COMPUTE_PGM_RSRC2": (pm4.COMPUTE_PGM_RSRC1 + 1, meta["rsrc2"] | lds << 15)}
    if bad := [f"{n} is {self.regs.get(r, 0):#x}, the descriptor's {want:#x}" for n, (r, want) in regs.items() if self.regs.get(r, 0) != want]:
      raise MockGPUError(f"PM4 dispatch: {'; '.join(bad)}")
    if bool(initiator & pm4.CS_W32_EN) != bool(meta["props"] >> 10 & 1):
      raise MockGPUError(f"PM4 dispatch: initiator {initiator:#x} disagrees with the descriptor's wave size "
                         f"(kernel_code_properties {meta['props']:#x})")
    # the user SGPRs the properties enable, in the ABI's order: private segment buffer 4, dispatch ptr 2, queue ptr 2, kernarg ptr 2
    sgpr = sum(n for bit, n in ((0, 4), (1, 2), (2, 2)) if meta["props"] >> bit & 1)
    for i in range(meta["rsrc2"] >> 1 & 0x1f):  # what the hardware loads into s0..: anything but the kernarg pointer must be zero here
      if i not in (sgpr, sgpr + 1) and self.regs.get(pm4.COMPUTE_USER_DATA_0 + i, 0):
        raise MockGPUError(f"PM4 dispatch: USER_DATA_{i} is {self.regs[pm4.COMPUTE_USER_DATA_0 + i]:#x}, the kernel takes its kernarg "
                           f"pointer in s{sgpr} and nothing else")
    return sgpr
  def _check_hidden(self, meta:dict, args:int, grid:tuple, local:tuple):
    """what the kernel reads from the hidden arguments (AMDGPUUsage, code object v5) must describe this dispatch"""
    want = {**{f"hidden_block_count_{'xyz'[d]}": grid[d] for d in range(3)}, **{f"hidden_group_size_{'xyz'[d]}": local[d] for d in range(3)},
            **{f"hidden_{k}_{'xyz'[d]}": 0 for k in ("remainder", "global_offset") for d in range(3)}, "hidden_grid_dims": 3,
            "hidden_dynamic_lds_size": 0}
    for kind, off, size in meta.get("hidden", []):
      if kind == "hidden_none": continue
      got = int.from_bytes(self.mem.view(args + off, size), "little", signed=True)
      if kind not in want or got != want[kind]:
        raise MockGPUError(f"PM4 dispatch: hidden argument {kind} at kernarg offset {off} is {got}, the dispatch's is {want.get(kind, 'unknown')}")
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

class MockKFDKernel(KFDHostOS):
  """the host OS with the amdgpu driver mocked: /dev/kfd, the render nodes and the KFD topology are served here, anonymous memory is
  the real kernel's. Errors are OSErrors with errno and the reason, as the real ioctls raise them (less the reason)"""
  is_mock = True
  def __init__(self):
    self.system = mock_system("AMD")
    self.gpus = [MockAMDGPU(i, self) for i in range(GPUS)]
    self.fds: dict[int, dict] = {}
    self.allocs: dict[int, dict] = {}  # handle -> va, size, gpu, backing, host-visible, mapped
    self._fd, self._handle, self._offset = itertools.count(1 << 20), itertools.count(1), itertools.count(1)

  def _gpu(self, gpu_id:int) -> MockAMDGPU:
    if (g := next((g for g in self.gpus if g.gpu_id == gpu_id), None)) is None: raise OSError(22, f"mock KFD: no GPU with gpu_id {gpu_id:#x}")
    return g

  # *** files, sysfs, mappings ***
  def open(self, path:str) -> int:
    if path == "/dev/kfd": node = {"kind": "kfd", "vms": set(), "queues": 0}
    elif path.startswith("/dev/dri/renderD") and (g := next((g for g in self.gpus if f"/dev/dri/renderD{g.minor}" == path), None)):
      node = {"kind": "drm", "gpu": g}
    else: raise FileNotFoundError(2, f"mock KFD: no such device {path}")
    self.fds[fd := next(self._fd)] = node
    return fd
  def close(self, fd:int):
    if self.fds.pop(fd, None) is None: raise OSError(9, f"mock KFD: close of fd {fd}, which is not open")
  def listdir(self, path:str) -> list[str]:
    if path != NODES: raise FileNotFoundError(2, path)
    return [str(i) for i in range(GPUS + 1)]  # node 0 is the CPU
  def read_text(self, path:str) -> str:
    node, what = path[len(NODES) + 1:].split("/")
    g = self.gpus[int(node) - 1] if int(node) else None
    if what == "gpu_id": return f"{g.gpu_id if g else 0}\n"
    sizes = {k: CWSR[k] for k in ("cwsr_size", "ctl_stack_size")} if SYSFS_CWSR else {}
    return "".join(f"{k} {v}\n" for k, v in ({**PROPS, **sizes, "drm_render_minor": g.minor} if g else {"cpu_cores_count": 2}).items())
  def mmap(self, addr:int, size:int, prot:int, flags:int, fd:int=-1, offset:int=0) -> int:
    if fd == -1: return super().mmap(addr, size, prot, flags, fd, offset)
    node = self.fds.get(fd, {})
    if node.get("kind") == "drm":  # host-visible memory: the allocation's pages, at the address KFD was given
      a = next((a for a in self.allocs.values() if a["mmap_offset"] == offset), None)
      if a is None or a["gpu"] is not node["gpu"] or "memfd" not in a or size > a["size"]:
        raise OSError(22, f"mock KFD: render node mmap at offset {offset:#x}: no host-visible allocation of this GPU there")
      return super().mmap(addr, size, prot, flags, a["memfd"], 0)
    if node.get("kind") == "kfd":  # a doorbell page
      g = next((g for g in self.gpus if (0x1000 + g.index) * mmap.PAGESIZE == offset), None)
      if g is None: raise OSError(22, f"mock KFD: /dev/kfd mmap at offset {offset:#x} is no doorbell page")
      return super().mmap(addr, size, prot, flags, g.doorbell_fd, 0)
    raise OSError(9, f"mock KFD: mmap of fd {fd}")
  def doorbell_rung(self):
    for g in self.gpus: g.doorbell_rung()
    self.system.progress()
  def progress(self) -> bool: return self.system.progress()
  def faults(self, gpu_id:int, queue_ids:list[int]) -> list[str]:
    g = self._gpu(gpu_id)
    return [f"{q.kind} queue {i}: {q.fault}" for i in queue_ids if (q := g.queues.get(i)) is not None and q.fault]

  # *** ioctls ***
  def ioctl(self, fd:int, nr:int, args:ctypes.Structure):
    if self.fds.get(fd, {}).get("kind") != "kfd": raise OSError(25, f"mock KFD: ioctl {nr:#x} on fd {fd}, which is not /dev/kfd")
    if (nr >> 16) & 0x3fff != ctypes.sizeof(args) or (nr >> 8) & 0xff != ord("K"):
      raise OSError(22, f"mock KFD: ioctl {nr:#x} does not describe a {type(args).__name__} of {ctypes.sizeof(args)} bytes")
    handler = {kfd.AMDKFD_IOC_GET_VERSION: self._version, kfd.AMDKFD_IOC_ACQUIRE_VM: self._acquire_vm,
               kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU: self._alloc, kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU: self._free,
               kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU: self._map, kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU: self._unmap,
               kfd.AMDKFD_IOC_CREATE_QUEUE: self._create_queue, kfd.AMDKFD_IOC_DESTROY_QUEUE: self._destroy_queue}.get(nr)
    if handler is None: raise OSError(25, f"mock KFD: ioctl {nr:#x} is not one KFDInterface issues")
    handler(self.fds[fd], args)

  def _version(self, node, a): a.major_version, a.minor_version = kfd.KFD_IOCTL_MAJOR_VERSION, kfd.KFD_IOCTL_MINOR_VERSION
  def _acquire_vm(self, node, a):
    drm = self.fds.get(a.drm_fd, {})
    if drm.get("kind") != "drm" or drm["gpu"] is not self._gpu(a.gpu_id): raise OSError(22, f"mock KFD: ACQUIRE_VM with fd {a.drm_fd}, not GPU {a.gpu_id:#x}'s render node")
    node["vms"].add(a.gpu_id)
  def _alloc(self, node, a):
    if a.gpu_id not in node["vms"]: raise OSError(22, f"mock KFD: ALLOC_MEMORY_OF_GPU on GPU {a.gpu_id:#x} before ACQUIRE_VM")
    where = a.flags & (kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM | kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT)
    if where not in (kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM, kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT) or a.size % mmap.PAGESIZE or a.va_addr % mmap.PAGESIZE or not a.size:
      raise OSError(22, f"mock KFD: ALLOC_MEMORY_OF_GPU of {a.size} bytes at {a.va_addr:#x}, flags {a.flags:#x}: one of VRAM/GTT, whole pages")
    if any(b["va"] < a.va_addr + a.size and a.va_addr < b["va"] + b["size"] for b in self.allocs.values()):
      raise OSError(22, f"mock KFD: ALLOC_MEMORY_OF_GPU at {a.va_addr:#x} overlaps an allocation")
    if where == kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM and \
       sum(b["size"] for b in self.allocs.values() if b["gpu"].gpu_id == a.gpu_id and "memfd" not in b) + a.size > VRAM_BYTES:
      raise OSError(12, f"mock KFD: ALLOC_MEMORY_OF_GPU of {a.size} bytes of VRAM: more than the GPU's {VRAM_BYTES} bytes")  # ENOMEM
    rec = {"va": a.va_addr, "size": a.size, "gpu": self._gpu(a.gpu_id), "mmap_offset": next(self._offset) * mmap.PAGESIZE, "mapped": False}
    if where == kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT:  # system pages the CPU maps through the render node and the GPU through its page tables
      rec["memfd"] = os.memfd_create("mock-kfd-gtt")
      os.ftruncate(rec["memfd"], a.size)
      rec["backing"] = mmap.mmap(rec["memfd"], a.size)
    else: rec["backing"] = mmap.mmap(-1, a.size)
    self.allocs[handle := next(self._handle)] = rec
    a.handle, a.mmap_offset = handle, rec["mmap_offset"]
  def _devices(self, a) -> list[int]: return list((ctypes.c_uint32 * a.n_devices).from_address(a.device_ids_array_ptr))
  def _map(self, node, a):
    if (rec := self.allocs.get(a.handle)) is None or rec["gpu"].gpu_id not in self._devices(a) or rec["mapped"]:
      raise OSError(22, f"mock KFD: MAP_MEMORY_TO_GPU of handle {a.handle} on {self._devices(a)}: unknown, mapped already, or not that GPU's")
    self.system.mem.map(rec["va"], memoryview(rec["backing"]))
    rec["mapped"], a.n_success = True, a.n_devices
  def _unmap(self, node, a):
    if (rec := self.allocs.get(a.handle)) is None or not rec["mapped"]: raise OSError(22, f"mock KFD: UNMAP_MEMORY_FROM_GPU of handle {a.handle}, not mapped")
    self.system.mem.unmap(rec["va"])
    rec["mapped"], a.n_success = False, a.n_devices
  def _free(self, node, a):
    if (rec := self.allocs.get(a.handle)) is None: raise OSError(22, f"mock KFD: FREE_MEMORY_OF_GPU of unknown handle {a.handle}")
    if rec["mapped"]: raise OSError(16, f"mock KFD: FREE_MEMORY_OF_GPU of handle {a.handle}, still mapped")  # EBUSY
    del self.allocs[a.handle]
    if "memfd" in rec: os.close(rec["memfd"])
  def _one_mapping(self, va:int, size:int) -> bool:
    """the GPU page of va starts a mapping of exactly size bytes (kfd_queue.c kfd_queue_buffer_get: a queue's buffers are whole BOs)"""
    page = va & ~(mmap.PAGESIZE - 1)
    return any(r["mapped"] and r["va"] == page and r["size"] == size for r in self.allocs.values())

  def _create_queue(self, node, a):
    g = self._gpu(a.gpu_id)
    if a.gpu_id not in node["vms"]: raise OSError(22, f"mock KFD: CREATE_QUEUE on GPU {a.gpu_id:#x} before ACQUIRE_VM")
    if a.ring_size < kfd.KFD_MIN_QUEUE_RING_SIZE or a.ring_size & (a.ring_size - 1):
      raise OSError(22, f"mock KFD: CREATE_QUEUE ring of {a.ring_size} bytes: a power of two from {kfd.KFD_MIN_QUEUE_RING_SIZE}")
    for what, va, size in (("ring", a.ring_base_address, a.ring_size), ("read pointer", a.read_pointer_address, mmap.PAGESIZE),
                           ("write pointer", a.write_pointer_address, mmap.PAGESIZE)):
      if not self._one_mapping(va, size): raise OSError(22, f"mock KFD: CREATE_QUEUE {what} at {va:#x} is not in one GPU mapping of {size:#x} bytes")
    if a.queue_type == kfd.KFD_IOC_QUEUE_TYPE_COMPUTE:
      if a.eop_buffer_size != EOP_BUFFER_SIZE or not self._one_mapping(a.eop_buffer_address, EOP_BUFFER_SIZE):
        raise OSError(22, f"mock KFD: a compute queue needs an EOP buffer of the node's {EOP_BUFFER_SIZE:#x} bytes, one mapping")
      if (a.ctx_save_restore_size, a.ctl_stack_size) != (CWSR["cwsr_size"], CWSR["ctl_stack_size"]) or \
         not self._one_mapping(a.ctx_save_restore_address, CWSR["area"]):
        raise OSError(22, f"mock KFD: a compute queue's context save area must be one mapping of {CWSR['area']:#x} bytes at "
                          f"ctx_save_restore_address with ctx_save_restore_size {CWSR['cwsr_size']:#x} and ctl_stack_size "
                          f"{CWSR['ctl_stack_size']:#x} (the node's), got {a.ctx_save_restore_size:#x}, {a.ctl_stack_size:#x} at "
                          f"{a.ctx_save_restore_address:#x}")
      kind = "COMPUTE"
    elif a.queue_type == kfd.KFD_IOC_QUEUE_TYPE_SDMA: kind = "COPY"
    else: raise OSError(22, f"mock KFD: queue type {a.queue_type} is not one the mock runs")
    # the lowest queue id no queue of the process has, as KFD hands them out: a destroyed queue's id (and doorbell) is taken again
    taken = {i for gpu in self.gpus for i in gpu.queues}
    if (qid := next(i for i in range(len(taken) + 1) if i not in taken)) >= mmap.PAGESIZE // 8:
      raise OSError(28, f"mock KFD: GPU {a.gpu_id:#x} has no doorbell left")
    g.doorbells[8 * qid:8 * qid + 8] = bytes(8)  # a new queue starts at write pointer 0, whatever the slot's last queue rang
    g.queues[qid] = MockQueue(g, kind, a.ring_base_address, a.ring_size, a.read_pointer_address, a.write_pointer_address, 8 * qid)
    a.queue_id, a.doorbell_offset = qid, (0x1000 + g.index) * mmap.PAGESIZE + 8 * qid
  def _destroy_queue(self, node, a):
    if (g := next((g for g in self.gpus if a.queue_id in g.queues), None)) is None:
      raise OSError(22, f"mock KFD: DESTROY_QUEUE of queue {a.queue_id}, which no GPU has")
    del g.queues[a.queue_id]

_kernel: MockKFDKernel|None = None
def mock_kernel() -> MockKFDKernel:
  """the process's one mock driver (as there is one kernel driver for all the GPUs)"""
  global _kernel
  if _kernel is None: _kernel = MockKFDKernel()
  return _kernel
