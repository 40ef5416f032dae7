"""AMDDevice's driver interface: the amdgpu kernel driver's KFD (/dev/kfd) and the GPU's render node. Memory is allocated by KFD at a
virtual address we reserve, mapped for the CPU through the render node where host visible, and mapped into the GPU's page tables;
user-mode queues are created by KFD on our ring buffers (compute queues with their context save/restore area, sized from the
topology), and a doorbell page is mapped from /dev/kfd. The structures and ioctl numbers come from kfd_ioctl.py, generated from the
kernel's header. The host OS beneath (files, sysfs, ioctls, mappings) is `KFDHostOS`; under MOCKGPU=1 the mock kernel driver
(amd_mock.py) stands in for it and serves the same calls, so this file runs unchanged in the test suite."""
from __future__ import annotations
import ctypes, fcntl, mmap, os, time
from tinygrad.runtime.support import kfd_ioctl as kfd
from tinygrad.runtime.support.hcq import HCQBuffer, round_up, release, whole_or_nothing

NODES = "/sys/devices/virtual/kfd/kfd/topology/nodes"
MAP_FIXED, MAP_NORESERVE, PROT_NONE = 0x10, 0x4000, 0  # linux values; python's mmap module names none of them
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype, _libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
# A compute queue's context save/restore (CWSR) area, as Linux sizes and checks it (drivers/gpu/drm/amd/amdkfd/kfd_queue.c):
# kfd_queue_ctx_save_restore_size() computes per node, per XCC, from the topology: wave_num (gfx10.1+: 32 per CU; older: 40 per CU,
# at most array_count / simd_arrays_per_engine * 512), ctl_stack_size = ALIGN(40-byte header + wave_num * (12 bytes gfx10.1+, else 8)
# + 8, PAGE_SIZE) (gfx10.x: at most 0x7000), cwsr_size = ctl_stack_size + ALIGN(CUs * (VGPR + SGPR 0x4000 + LDS 0x10000 + HWREG
# 0x1000 bytes), PAGE_SIZE), debug_memory_size = ALIGN(wave_num * 32, 64). kfd_queue_acquire_buffers() then refuses (EINVAL) a compute
# queue whose ctl_stack_size or ctx_save_restore_size is not the node's, or whose area is not one mapping of exactly
# ALIGN((cwsr_size + debug_memory_size) * NUM_XCC, PAGE_SIZE) bytes. Newer kernels print cwsr_size and ctl_stack_size in the node's
# properties (kfd_topology.c node_show); older ones that check the same do not, so without them we compute what the kernel did
SGPR_BYTES_PER_CU, LDS_BYTES_PER_CU, HWREG_BYTES_PER_CU, CONTEXT_SAVE_HEADER = 0x4000, 0x10000, 0x1000, 40
DEBUGGER_BYTES_PER_WAVE, DEBUGGER_BYTES_ALIGN = 32, 64
NAVI10 = 100100  # gfx_target_version from which the control stack takes 12 bytes a wave and a CU 32 waves

class KFDHostOS:
  """the real kernel: device files, sysfs, ioctls, mappings; the GPU runs by itself"""
  is_mock = False
  def open(self, path:str) -> int: return os.open(path, os.O_RDWR | os.O_CLOEXEC)
  def close(self, fd:int): os.close(fd)
  def listdir(self, path:str) -> list[str]: return os.listdir(path)
  def read_text(self, path:str) -> str:
    with open(path) as f: return f.read()
  def ioctl(self, fd:int, nr:int, args:ctypes.Structure): fcntl.ioctl(fd, nr, args)
  def mmap(self, addr:int, size:int, prot:int, flags:int, fd:int=-1, offset:int=0) -> int:
    ret = _libc.mmap(addr, size, prot, flags, fd, offset)
    if ret in (None, ctypes.c_void_p(-1).value): raise OSError(ctypes.get_errno(), f"mmap of {size} bytes failed: {os.strerror(ctypes.get_errno())}")
    return ret
  def munmap(self, addr:int, size:int): _libc.munmap(addr, size)
  def doorbell_rung(self): pass
  def progress(self) -> bool:
    time.sleep(0)  # the GPU runs by itself: give other threads a turn while the host spins on a signal
    return True
  def faults(self, gpu_id:int, queue_ids:list[int]) -> list[str]: return []  # KFD reports queue faults as events, tg subscribes to none

def gpu_nodes(host_os) -> list[tuple[int, dict[str, int]]]:
  """(gpu_id, properties) of every GPU node of the KFD topology, in node order"""
  ret = []
  for node in sorted(host_os.listdir(NODES), key=int):
    if (gpu_id := int(host_os.read_text(f"{NODES}/{node}/gpu_id") or 0)) == 0: continue  # a CPU node
    props = dict(l.split() for l in host_os.read_text(f"{NODES}/{node}/properties").splitlines() if len(l.split()) == 2)
    ret.append((gpu_id, {k: int(v) for k, v in props.items()}))
  return ret

def vgpr_bytes_per_cu(gfxv:int) -> int:
  if gfxv // 100 == 904 or gfxv in (90008, 90010, 90500): return 0x80000  # MI100, MI200, MI300 and gfx950: 512 KiB
  if gfxv in (110000, 110001, 120000, 120001): return 0x60000  # gfx1100/1101 and gfx1200/1201: 384 KiB
  return 0x40000

def kfd_cwsr_sizes(props:dict[str, int]) -> tuple[int, int, int]:
  """(ctl_stack_size, cwsr_size, debug_memory_size) of a node as the kernel's kfd_queue_ctx_save_restore_size computes them (per XCC);
  zeros before gfx 8.0.1, which has no CWSR"""
  if (gfxv := props["gfx_target_version"]) < 80001: return 0, 0, 0
  cus = props["simd_count"] // props["simd_per_cu"] // max(props.get("num_xcc", 1), 1)
  waves = cus * 32 if gfxv >= NAVI10 else min(cus * 40, props["array_count"] // props["simd_arrays_per_engine"] * 512)
  lds = props["lds_size_in_kb"] << 10 if gfxv == 90500 else LDS_BYTES_PER_CU
  ctl = round_up(CONTEXT_SAVE_HEADER + waves * (12 if gfxv >= NAVI10 else 8) + 8, mmap.PAGESIZE)
  if gfxv // 10000 == 10: ctl = min(ctl, 0x7000)  # the hardware's limit on gfx10
  wg_data = round_up(cus * (vgpr_bytes_per_cu(gfxv) + SGPR_BYTES_PER_CU + lds + HWREG_BYTES_PER_CU), mmap.PAGESIZE)
  return ctl, ctl + wg_data, round_up(waves * DEBUGGER_BYTES_PER_WAVE, DEBUGGER_BYTES_ALIGN)

def cwsr_area(props:dict[str, int]) -> tuple[int, int, int]:
  """(area bytes, cwsr_size, ctl_stack_size) of a compute queue's context save/restore area on this node: the node's own sizes where
  the kernel prints them, else the kernel's formula; zeros where the GPU has no CWSR"""
  ctl, cwsr, debug = kfd_cwsr_sizes(props)
  ctl, cwsr = props.get("ctl_stack_size", ctl), props.get("cwsr_size", cwsr)
  if not cwsr: return 0, 0, 0
  return round_up((cwsr + debug) * max(props.get("num_xcc", 1), 1), mmap.PAGESIZE), cwsr, ctl

class KFDQueue:
  """a user-mode queue: our ring, the read/write pointers KFD watches, the doorbell page it mapped for us"""
  def __init__(self, host_os, kind:str, ring:HCQBuffer, rptr:HCQBuffer, wptr:HCQBuffer, doorbell:memoryview, queue_id:int):
    self.os, self.kind, self.ring, self.rptr, self.wptr, self.doorbell, self.queue_id = host_os, kind, ring, rptr, wptr, doorbell, queue_id
    self.submissions = 0
  @property
  def read_ptr(self) -> int: return self.rptr.cpu_view().cast("Q")[0]
  def ring_doorbell(self, wptr:int):
    self.submissions += 1
    self.doorbell.cast("Q")[0] = wptr
    self.os.doorbell_rung()

class KFDInterface:
  """one GPU through KFD: memory, user-mode queues, their doorbells. A step of the open that fails closes what the steps before it
  made, so the error is all that is left"""
  def __init__(self, index:int=0, host_os=None):
    self.os = host_os or KFDHostOS()
    self.is_mock = self.os.is_mock
    self._handles: dict[int, tuple[int, int]] = {}  # va -> (KFD's handle, size) of our memory
    self.queue_ids: list[int] = []
    self._files: list = []  # what close() gives back last, last first: the files (the VM acquired goes with them)
    self._queues: list = []  # what close() gives back first: each queue, then its doorbell mapping
    whole_or_nothing(self._open, self.close, index)

  def _open_file(self, path:str) -> int:
    fd = self.os.open(path)
    self._files.append(lambda: self.os.close(fd))
    return fd
  def _open(self, index:int):
    self.kfd = self._open_file("/dev/kfd")
    version = self._ioctl(kfd.AMDKFD_IOC_GET_VERSION, kfd.kfd_ioctl_get_version_args())
    if version.major_version != kfd.KFD_IOCTL_MAJOR_VERSION:
      raise RuntimeError(f"AMD: KFD speaks ioctl version {version.major_version}.{version.minor_version}, tg {kfd.KFD_IOCTL_MAJOR_VERSION}.x")
    if index >= len(nodes := gpu_nodes(self.os)): raise RuntimeError(f"AMD:{index}: KFD has {len(nodes)} GPU(s)")
    self.gpu_id, self.props = nodes[index]
    self.drm = self._open_file(f"/dev/dri/renderD{self.props['drm_render_minor']}")
    self._ioctl(kfd.AMDKFD_IOC_ACQUIRE_VM, kfd.kfd_ioctl_acquire_vm_args(drm_fd=self.drm, gpu_id=self.gpu_id))
    # the HDP flush registers (NBIO) differ per ASIC and KFD does not name them; they matter when the CPU writes video memory through
    # the BAR, which tg never does (host-visible memory is GTT, video memory is written by SDMA), so barriers only invalidate caches
    self.hdp_flush = None

  def _ioctl(self, nr:int, args):
    self.os.ioctl(self.kfd, nr, args)
    return args

  def alloc(self, size:int, host_visible:bool=False) -> HCQBuffer:
    size = round_up(size, mmap.PAGESIZE)
    va = self.os.mmap(0, size, PROT_NONE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)  # reserve the address range
    flags = kfd.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | kfd.KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE | kfd.KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
    flags |= (kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT | kfd.KFD_IOC_ALLOC_MEM_FLAGS_COHERENT | kfd.KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED |
              kfd.KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC) if host_visible else kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM
    args = kfd.kfd_ioctl_alloc_memory_of_gpu_args(va_addr=va, size=size, gpu_id=self.gpu_id, flags=flags)
    try: mem = self._ioctl(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, args)
    except OSError:  # out of memory (ENOMEM) is answered by a retry once deferred frees went back: leave no reserved range behind
      self.os.munmap(va, size)
      raise
    view = None
    try:
      if host_visible:
        self.os.mmap(va, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | MAP_FIXED, self.drm, mem.mmap_offset)
        view = memoryview((ctypes.c_char * size).from_address(va)).cast("B")
      ids = (ctypes.c_uint32 * 1)(self.gpu_id)
      self._ioctl(kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU, kfd.kfd_ioctl_map_memory_to_gpu_args(handle=mem.handle, n_devices=1,
                                                                                          device_ids_array_ptr=ctypes.addressof(ids)))
    except OSError:
      self._ioctl(kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, kfd.kfd_ioctl_free_memory_of_gpu_args(handle=mem.handle))
      self.os.munmap(va, size)
      raise
    self._handles[va] = (mem.handle, size)
    return HCQBuffer(va, size, view)

  def free(self, buf:HCQBuffer): self._free(buf.va)
  def _free(self, va:int):
    if (m := self._handles.pop(va, None)) is None: raise RuntimeError(f"AMD: free of {va:#x}, which this device did not allocate")
    handle, size = m
    ids = (ctypes.c_uint32 * 1)(self.gpu_id)
    self._ioctl(kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, kfd.kfd_ioctl_unmap_memory_from_gpu_args(handle=handle,
                                                                                              device_ids_array_ptr=ctypes.addressof(ids), n_devices=1))
    self._ioctl(kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, kfd.kfd_ioctl_free_memory_of_gpu_args(handle=handle))
    self.os.munmap(va, size)

  def close(self, cause:BaseException|None=None):
    """give everything back: the queues first (and their doorbell mappings), then the memory they used, then the files. cause: the
    error of a failed open (see hcq.release)"""
    steps = self._files + [lambda va=va: self._free(va) for va in self._handles] + self._queues
    self._files, self._queues, self.queue_ids = [], [], []
    release(steps, cause)

  def create_queue(self, kind:str, ring_bytes:int=1 << 16) -> KFDQueue:
    ring, ptrs = self.alloc(ring_bytes, True), self.alloc(mmap.PAGESIZE, True)
    args = kfd.kfd_ioctl_create_queue_args(ring_base_address=ring.va, ring_size=ring_bytes, gpu_id=self.gpu_id, read_pointer_address=ptrs.va,
                                           write_pointer_address=ptrs.va + 8, queue_percentage=kfd.KFD_MAX_QUEUE_PERCENTAGE, queue_priority=7)
    if kind == "COMPUTE":
      eop = self.alloc(mmap.PAGESIZE)
      args.queue_type, args.eop_buffer_address, args.eop_buffer_size = kfd.KFD_IOC_QUEUE_TYPE_COMPUTE, eop.va, eop.size
      area, args.ctx_save_restore_size, args.ctl_stack_size = cwsr_area(self.props)
      if area: args.ctx_save_restore_address = self.alloc(area).va  # where KFD saves the queue's waves when it preempts them
    else: args.queue_type = kfd.KFD_IOC_QUEUE_TYPE_SDMA
    self._ioctl(kfd.AMDKFD_IOC_CREATE_QUEUE, args)
    self.queue_ids.append(args.queue_id)
    self._queues.append(lambda: self._ioctl(kfd.AMDKFD_IOC_DESTROY_QUEUE, kfd.kfd_ioctl_destroy_queue_args(queue_id=args.queue_id)))
    page = args.doorbell_offset & ~(mmap.PAGESIZE - 1)
    db = self.os.mmap(0, mmap.PAGESIZE, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, self.kfd, page)
    doorbell = memoryview((ctypes.c_char * mmap.PAGESIZE).from_address(db)).cast("B")[args.doorbell_offset - page:][:8]
    self._queues.append(lambda: (doorbell.release(), self.os.munmap(db, mmap.PAGESIZE)))  # a use after close raises, touches nothing
    return KFDQueue(self.os, kind, ring, ptrs.offset(0, 8), ptrs.offset(8, 8), doorbell, args.queue_id)

  def progress(self) -> bool: return self.os.progress()
  def faults(self) -> list[str]: return self.os.faults(self.gpu_id, self.queue_ids)
