"""AMDDevice's driver interface on hardware: the amdgpu kernel driver's KFD (/dev/kfd) and the GPU's render node. Memory is allocated
by KFD at a virtual address we reserve, mapped for the CPU through the render node where host visible, and mapped into the GPU's
page tables; user-mode queues are created by KFD on our ring buffers, and a doorbell page is mapped from /dev/kfd. The structures and
ioctl numbers come from kfd_ioctl.py, generated from the kernel's header. Not exercised by the test suite (no AMD GPU in CI): the mock
driver (amd_mock.py) stands in for this file there, with the same interface."""
from __future__ import annotations
import ctypes, fcntl, mmap, os, time
from tinygrad.runtime.support import kfd_ioctl as kfd
from tinygrad.runtime.support.hcq import HCQBuffer, round_up

NODES = "/sys/devices/virtual/kfd/kfd/topology/nodes"
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype, _libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
MAP_FIXED, MAP_NORESERVE, PROT_NONE = 0x10, 0x4000, 0  # linux values; python's mmap module names none of them

def _mmap(addr:int, size:int, prot:int, flags:int, fd:int, offset:int) -> int:
  ret = _libc.mmap(addr, size, prot, flags, fd, offset)
  if ret in (None, ctypes.c_void_p(-1).value): raise OSError(ctypes.get_errno(), f"mmap of {size} bytes failed: {os.strerror(ctypes.get_errno())}")
  return ret

def _gpu_nodes() -> list[tuple[int, int]]:
  """(gpu_id, render minor) of every GPU node of the KFD topology, in node order"""
  ret = []
  for node in sorted(os.listdir(NODES), key=int):
    with open(f"{NODES}/{node}/gpu_id") as f: gpu_id = int(f.read() or 0)
    if gpu_id == 0: continue
    with open(f"{NODES}/{node}/properties") as f: props = dict(l.split() for l in f if len(l.split()) == 2)
    ret.append((gpu_id, int(props["drm_render_minor"])))
  return ret

class KFDQueue:
  """a user-mode queue: our ring, the read/write pointers KFD watches, the doorbell page it mapped for us"""
  def __init__(self, kind:str, ring:HCQBuffer, rptr:HCQBuffer, wptr:HCQBuffer, doorbell:memoryview, queue_id:int):
    self.kind, self.ring, self.rptr, self.wptr, self.doorbell, self.queue_id, self.submissions = kind, ring, rptr, wptr, doorbell, queue_id, 0
  @property
  def read_ptr(self) -> int: return self.rptr.cpu_view().cast("Q")[0]
  def ring_doorbell(self, wptr:int):
    self.submissions += 1
    self.doorbell.cast("Q")[0] = wptr

class KFDInterface:
  is_mock = False
  def __init__(self, index:int=0):
    self.kfd = os.open("/dev/kfd", os.O_RDWR | os.O_CLOEXEC)
    if index >= len(nodes := _gpu_nodes()): raise RuntimeError(f"AMD:{index}: KFD has {len(nodes)} GPU(s)")
    self.gpu_id, minor = nodes[index]
    self.drm = os.open(f"/dev/dri/renderD{minor}", os.O_RDWR | os.O_CLOEXEC)
    self._ioctl(kfd.AMDKFD_IOC_ACQUIRE_VM, kfd.kfd_ioctl_acquire_vm_args(drm_fd=self.drm, gpu_id=self.gpu_id))
    # the HDP flush registers (NBIO) differ per ASIC and this version does not know them: barriers invalidate caches without an HDP flush
    # (host writes reach the GPU through uncached system memory here)
    self.hdp_flush = None
    self._handles: dict[int, int] = {}

  def _ioctl(self, nr:int, args):
    fcntl.ioctl(self.kfd, nr, args)
    return args

  def alloc(self, size:int, host_visible:bool=False) -> HCQBuffer:
    size = round_up(size, mmap.PAGESIZE)
    va = _mmap(0, size, PROT_NONE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)  # reserve the address range
    flags = kfd.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | kfd.KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE | kfd.KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
    flags |= (kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT | kfd.KFD_IOC_ALLOC_MEM_FLAGS_COHERENT | kfd.KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED |
              kfd.KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC) if host_visible else kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM
    mem = self._ioctl(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, kfd.kfd_ioctl_alloc_memory_of_gpu_args(va_addr=va, size=size, gpu_id=self.gpu_id,
                                                                                                   flags=flags))
    view = None
    if host_visible:
      _mmap(va, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | MAP_FIXED, self.drm, mem.mmap_offset)
      view = memoryview((ctypes.c_char * size).from_address(va)).cast("B")
    ids = (ctypes.c_uint32 * 1)(self.gpu_id)
    self._ioctl(kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU, kfd.kfd_ioctl_map_memory_to_gpu_args(handle=mem.handle, device_ids_array_ptr=ctypes.addressof(ids),
                                                                                        n_devices=1))
    self._handles[va] = mem.handle
    return HCQBuffer(va, size, view)

  def free(self, buf:HCQBuffer):
    handle, ids = self._handles.pop(buf.va), (ctypes.c_uint32 * 1)(self.gpu_id)
    self._ioctl(kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, kfd.kfd_ioctl_unmap_memory_from_gpu_args(handle=handle,
                                                                                              device_ids_array_ptr=ctypes.addressof(ids), n_devices=1))
    self._ioctl(kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, kfd.kfd_ioctl_free_memory_of_gpu_args(handle=handle))
    _libc.munmap(buf.va, buf.size)

  def create_queue(self, kind:str, ring_bytes:int=1 << 16) -> KFDQueue:
    ring, ptrs, eop = self.alloc(ring_bytes, True), self.alloc(mmap.PAGESIZE, True), self.alloc(mmap.PAGESIZE)
    args = self._ioctl(kfd.AMDKFD_IOC_CREATE_QUEUE, kfd.kfd_ioctl_create_queue_args(
      ring_base_address=ring.va, ring_size=ring_bytes, gpu_id=self.gpu_id, read_pointer_address=ptrs.va, write_pointer_address=ptrs.va + 8,
      queue_type=kfd.KFD_IOC_QUEUE_TYPE_COMPUTE if kind == "COMPUTE" else kfd.KFD_IOC_QUEUE_TYPE_SDMA, queue_percentage=100,
      queue_priority=7, eop_buffer_address=eop.va if kind == "COMPUTE" else 0, eop_buffer_size=eop.size if kind == "COMPUTE" else 0))
    page = args.doorbell_offset & ~(mmap.PAGESIZE - 1)
    db = mmap.mmap(self.kfd, mmap.PAGESIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=page)
    return KFDQueue(kind, ring, ptrs.offset(0, 8), ptrs.offset(8, 8), memoryview(db)[args.doorbell_offset - page:][:8], args.queue_id)

  def progress(self) -> bool:
    time.sleep(0)  # the GPU runs by itself: give other threads a turn while the host spins on a signal
    return True
