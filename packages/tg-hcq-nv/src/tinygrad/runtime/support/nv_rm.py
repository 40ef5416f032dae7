"""NVDevice's driver interface: NVIDIA's kernel driver as its userspace part drives it. RM objects through escapes on /dev/nvidiactl
(a root client, the device and subdevice, a GPU virtual address space, a channel group with a context share, GPFIFO channels with a
compute and a copy-engine object each, the usermode doorbell page), and memory mapped into the GPU at the same virtual address as on
the CPU through UVM (/dev/nvidia-uvm). The host OS beneath (files, ioctls, mappings) is `HostOS`; under MOCKGPU=1 the mock kernel
driver (nv_mock.py) stands in for it and serves the same ioctls, so this file runs unchanged in the test suite."""
from __future__ import annotations
import ctypes, fcntl, mmap, os, struct, time
from tinygrad.runtime.support import nv_rm_abi as rm
from tinygrad.runtime.support.hcq import HCQBuffer, round_up, release, whole_or_nothing
from tinygrad.runtime.support.va_ranges import VARanges

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype, _libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
MAP_FIXED_NOREPLACE, MAP_NORESERVE, PROT_NONE = 0x100000, 0x4000, 0  # linux values; python's mmap module names none of them
VA_BASE, VA_LIMIT = 0x10_0000_0000, 1 << 40  # our GPU virtual addresses: semaphores and QMDs must lie below 2**40 (nv_methods)
# one range for the process, as UVM gives a process one VA space that every GPU shares
VAS = VARanges(VA_BASE, VA_LIMIT)
NOTIFICATION_BYTES = 16  # an NvNotification
_handles = iter(range(0xCF00_0000, 0xD000_0000))
def _new_handle() -> int: return next(_handles)  # ours to choose; unique in the process, so every client's objects differ too

def sm_of(architecture:int, implementation:int) -> int|None:
  """the SM version (90 for sm_90) of a GPU's architecture and implementation; None for one tg does not know"""
  if architecture == rm.ARCH_GA100: return 80 if implementation == 0 else 87 if implementation == 0xB else 86
  return {rm.ARCH_GH100: 90, rm.ARCH_AD100: 89, rm.ARCH_GB100: 100, rm.ARCH_GB200: 120}.get(architecture)

def sass_runs_on(code_sm:int, gpu_sm:int) -> bool:
  """machine code for one SM runs on GPUs of the same major version and at least its minor one (CUDA's binary compatibility)"""
  return code_sm // 10 == gpu_sm // 10 and code_sm <= gpu_sm

class NVDriverError(RuntimeError):
  """the kernel driver refused a request: names the call, the object and RM's status (kept in .status)"""
  def __init__(self, msg:str, status:int|None=None):
    super().__init__(msg)
    self.status = status

class HostOS:
  """the real kernel: device files, ioctls, mappings; the GPU runs by itself"""
  is_mock = False
  def open(self, path:str) -> int: return os.open(path, os.O_RDWR | os.O_CLOEXEC)
  def close(self, fd:int): os.close(fd)
  def ioctl(self, fd:int, nr:int, params:ctypes.Structure) -> int: return fcntl.ioctl(fd, nr, params)
  def mmap(self, addr:int, size:int, prot:int, flags:int, fd:int=-1, offset:int=0) -> int:
    ret = _libc.mmap(addr, size, prot, flags, fd, offset)
    if ret in (None, ctypes.c_void_p(-1).value): raise OSError(ctypes.get_errno(), f"mmap of {size} bytes at {addr:#x}: {os.strerror(ctypes.get_errno())}")
    return ret
  def munmap(self, addr:int, size:int): _libc.munmap(addr, size)
  def doorbell_rung(self): pass
  def progress(self) -> bool:
    time.sleep(0)  # give other threads a turn while the host spins on a signal
    return True
  def faults(self, index:int, channels:list[int]) -> list[str]: return []  # RM reports channel errors in their error notifiers, read above

class RMChannel:
  """a GPFIFO channel: its ring of GP entries and its USERD page (GPGet/GPPut) in host memory, the token its doorbell takes, the error
  notifier RM writes when the channel faults"""
  def __init__(self, iface:NVRMInterface, kind:str, mem:HCQBuffer, entries:int, handle:int, token:int, notifier:HCQBuffer):
    self.iface, self.kind, self.entries, self.handle, self.token, self.submissions = iface, kind, entries, handle, token, 0
    self.gpfifo, self.control = mem.offset(0, 8 * entries), mem.offset(round_up(8 * entries, 0x1000), 0x1000)
    self.notifier = notifier
  def error(self) -> str|None:
    """the error RM reported in this channel's robust-channel notifier (index 0: an NvNotification, nvtypes.h: timestamp, info32 at +8
    (the error, the number an Xid log line shows), info16 at +12, status at +14, nonzero once RM wrote it), or None"""
    _, info32, info16, status = struct.unpack_from("<QIHH", self.notifier.cpu_view(), rm.NOTIFIERS_RC * NOTIFICATION_BYTES)
    if not status: return None
    return f"{self.kind} channel: RM error notifier: channel error {info32} (Xid {info32}), info16 {info16:#x}, status {status:#x}"
  @property
  def gp_get(self) -> int: return self.control.cpu_view().cast("I")[rm.USERD_GP_GET // 4]
  def ring_doorbell(self, put:int):
    self.submissions += 1
    self.iface.doorbell[rm.NVC361_NOTIFY_CHANNEL_PENDING // 4] = self.token
    self.iface.os.doorbell_rung()

# the classes tg drives, one set per GPU generation, newest first: (GPFIFO channel, compute, copy, usermode). Each GPU offers its own
# generation's channel, compute and copy classes (Linux nouveau's GSP-RM tables, by NVIDIA: gh100.c, ad10x.c, ga1xx.c, ga100.c); the
# methods tg sends them are the same in each (clc56f.h/clc86f.h, clc6c0.h..clcbc0.h, clc6b5.h..clc8b5.h). The usermode doorbell page is
# VOLTA_USERMODE_A below Hopper and HOPPER_USERMODE_A from it, as RM's own UVM client maps it (nv_gpu_ops.c gpuDeviceMapUsermodeRegion)
CLASS_SETS = ((rm.HOPPER_CHANNEL_GPFIFO_A, rm.HOPPER_COMPUTE_A, rm.HOPPER_DMA_COPY_A, rm.HOPPER_USERMODE_A),
              (rm.AMPERE_CHANNEL_GPFIFO_A, rm.ADA_COMPUTE_A, rm.AMPERE_DMA_COPY_B, rm.VOLTA_USERMODE_A),
              (rm.AMPERE_CHANNEL_GPFIFO_A, rm.AMPERE_COMPUTE_B, rm.AMPERE_DMA_COPY_B, rm.VOLTA_USERMODE_A),
              (rm.AMPERE_CHANNEL_GPFIFO_A, rm.AMPERE_COMPUTE_A, rm.AMPERE_DMA_COPY_A, rm.VOLTA_USERMODE_A))

class NVRMInterface:
  """one GPU (/dev/nvidia<index>) through RM and UVM: memory, channels, the doorbell. A step of the open that fails closes what the
  steps before it made, so the error is all that is left"""
  def __init__(self, index:int, host_os):
    self.os, self.is_mock, self.index, self._mems = host_os, host_os.is_mock, index, {}
    self.channels: list[int] = []  # the handles of our GPFIFO channels
    self.rm_channels: list[RMChannel] = []
    self._undo: list = []  # what close() gives back after the memory and channels, last first: the files, the client, the doorbell mapping
    whole_or_nothing(self._open, self.close)

  def _open_file(self, path:str) -> int:
    fd = self.os.open(path)
    self._undo.append(lambda: self.os.close(fd))
    return fd
  def _open(self):
    index = self.index
    self.ctl, self.uvm, self.gpu = self._open_file("/dev/nvidiactl"), self._open_file("/dev/nvidia-uvm"), self._open_file(f"/dev/nvidia{index}")
    self._uvm(rm.UVM_INITIALIZE, rm.UVM_INITIALIZE_PARAMS())  # what UVM registers goes with its file
    self._ioctl(self.gpu, rm.NV_ESC_REGISTER_FD, rm.nv_ioctl_register_fd_t(ctl_fd=self.ctl))
    self.client = self.alloc_object(0, rm.NV01_ROOT_CLIENT, None, handle=0)
    self._undo.append(lambda: self.free_object(self.client, 0))  # RM frees a client with every object under it
    self.device = self.alloc_object(self.client, rm.NV01_DEVICE_0, rm.NV0080_ALLOC_PARAMETERS(
      deviceId=index, hClientShare=self.client, vaMode=rm.NV_DEVICE_ALLOCATION_VAMODE_MULTIPLE_VASPACES))
    self.subdevice = self.alloc_object(self.device, rm.NV20_SUBDEVICE_0, rm.NV2080_ALLOC_PARAMETERS())
    self.gpfifo_class, compute, copy, usermode_class = self._class_set(self.classes())
    self.channel_classes = {"COMPUTE": compute, "COPY": copy}
    usermode = self.alloc_object(self.subdevice, usermode_class, None)
    self.doorbell = self._map_object(usermode, self.subdevice, rm.USERMODE_SIZE).cast("I")
    self._undo.append(self.doorbell.release)
    self.vaspace = self.alloc_object(self.device, rm.FERMI_VASPACE_A, rm.NV_VASPACE_ALLOCATION_PARAMETERS(
      vaBase=0x1000, vaSize=VA_LIMIT, flags=rm.NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING | rm.NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED))
    gid = self.control(self.subdevice, rm.NV2080_CTRL_CMD_GPU_GET_GID_INFO,
                       rm.NV2080_CTRL_GPU_GET_GID_INFO_PARAMS(flags=rm.NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY, length=16))
    self.uuid = rm.NvProcessorUuid(*gid.data[:16])
    self._uvm(rm.UVM_REGISTER_GPU, rm.UVM_REGISTER_GPU_PARAMS(gpu_uuid=self.uuid, rmCtrlFd=self.ctl, hClient=self.client))
    self._uvm(rm.UVM_REGISTER_GPU_VASPACE, rm.UVM_REGISTER_GPU_VASPACE_PARAMS(gpuUuid=self.uuid, rmCtrlFd=self.ctl, hClient=self.client,
                                                                              hVaSpace=self.vaspace))
    self.group = self.alloc_object(self.device, rm.KEPLER_CHANNEL_GROUP_A, rm.NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS(
      engineType=rm.NV2080_ENGINE_TYPE_GRAPHICS))
    self.ctxshare = self.alloc_object(self.group, rm.FERMI_CONTEXT_SHARE_A, rm.NV_CTXSHARE_ALLOCATION_PARAMETERS(
      hVASpace=self.vaspace, flags=rm.NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC))

  # *** RM and UVM calls ***
  def _ioctl(self, fd:int, esc:int, params:ctypes.Structure):
    self.os.ioctl(fd, rm.nv_iowr(esc, ctypes.sizeof(params)), params)
    return params
  def _uvm(self, cmd:int, params:ctypes.Structure):
    self.os.ioctl(self.uvm, cmd, params)
    if params.rmStatus != rm.NV_OK:
      raise NVDriverError(f"NV:{self.index}: UVM {type(params).__name__[:-7]} failed with status {params.rmStatus:#x}", params.rmStatus)
    return params
  def alloc_object(self, parent:int, cls:int, params:ctypes.Structure|None, handle:int|None=None) -> int:
    """an RM object of class cls under parent (NV_ESC_RM_ALLOC); its handle"""
    if handle is None: handle = _new_handle()
    args = rm.NVOS21_PARAMETERS(hRoot=self.client if parent else 0, hObjectParent=parent, hObjectNew=handle, hClass=cls,
                                pAllocParms=ctypes.addressof(params) if params is not None else 0,
                                paramsSize=ctypes.sizeof(params) if params is not None else 0)
    self._ioctl(self.ctl, rm.NV_ESC_RM_ALLOC, args)
    if args.status != rm.NV_OK:
      raise NVDriverError(f"NV:{self.index}: RM_ALLOC of class {cls:#x} under {parent:#x} failed with status {args.status:#x}", args.status)
    return args.hObjectNew
  def free_object(self, handle:int, parent:int):
    args = self._ioctl(self.ctl, rm.NV_ESC_RM_FREE, rm.NVOS00_PARAMETERS(hRoot=self.client, hObjectParent=parent, hObjectOld=handle))
    if args.status != rm.NV_OK: raise NVDriverError(f"NV:{self.index}: RM_FREE of {handle:#x} failed with status {args.status:#x}")
  def control(self, obj:int, cmd:int, params:ctypes.Structure):
    """an RM control command on an object (NV_ESC_RM_CONTROL); the parameters as the driver filled them"""
    args = self._ioctl(self.ctl, rm.NV_ESC_RM_CONTROL, rm.NVOS54_PARAMETERS(hClient=self.client, hObject=obj, cmd=cmd,
                                                                            params=ctypes.addressof(params), paramsSize=ctypes.sizeof(params)))
    if args.status != rm.NV_OK: raise NVDriverError(f"NV:{self.index}: RM_CONTROL {cmd:#x} on {obj:#x} failed with status {args.status:#x}")
    return params
  def _map_object(self, handle:int, parent:int, size:int) -> memoryview:
    """the CPU mapping of an RM object (registers, or memory): NV_ESC_RM_MAP_MEMORY on a fresh fd of the GPU, then mmap of that fd"""
    fd = self._open_file(f"/dev/nvidia{self.index}")
    args = self._ioctl(self.ctl, rm.NV_ESC_RM_MAP_MEMORY, rm.nv_ioctl_nvos33_parameters_with_fd(
      params=rm.NVOS33_PARAMETERS(hClient=self.client, hDevice=parent, hMemory=handle,
                                  length=size), fd=fd))
    if args.params.status != rm.NV_OK: raise NVDriverError(f"NV:{self.index}: RM_MAP_MEMORY of {handle:#x} failed with status {args.params.status:#x}")
    addr = self.os.mmap(0, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
    view = memoryview((ctypes.c_char * size).from_address(addr)).cast("B")
    self._undo.append(lambda: (view.release(), self.os.munmap(addr, size)))  # a use after close raises instead of touching unmapped pages
    return view

  # *** memory: a GPU virtual address range of ours, backed by host pages or video memory, mapped through UVM ***
  def alloc(self, size:int, host_visible:bool=False) -> HCQBuffer:
    """a buffer at a GPU address of ours; a failed step gives back what the steps before it set up (the address range, the host
    range, the RM object), and RM's NV_ERR_NO_MEMORY is a MemoryError, which the allocator answers by waiting for deferred frees"""
    size, view = round_up(max(size, 1), 0x1000), None
    try: va = VAS.take(size)
    except MemoryError as e: raise MemoryError(f"NV:{self.index}: {e}") from None
    undo = [lambda: VAS.give(va, size)]
    try:
      if host_visible:  # host pages at va, described to RM, so the GPU reaches them over the bus at the same address
        self.os.mmap(va, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0)
        undo.append(lambda: self.os.munmap(va, size))
        args = self._ioctl(self.ctl, rm.NV_ESC_RM_ALLOC_MEMORY, rm.nv_ioctl_nvos02_parameters_with_fd(params=rm.NVOS02_PARAMETERS(
          hRoot=self.client, hObjectParent=self.device, hObjectNew=(handle := _new_handle()), hClass=rm.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR,
          flags=rm.NVOS02_FLAGS_PHYSICALITY_NONCONTIGUOUS | rm.NVOS02_FLAGS_COHERENCY_CACHED | rm.NVOS02_FLAGS_MAPPING_NO_MAP,
          pMemory=va, limit=size - 1), fd=-1))
        if args.params.status != rm.NV_OK:
          raise NVDriverError(f"NV:{self.index}: RM_ALLOC_MEMORY of {size} host bytes failed with status {args.params.status:#x}",
                              args.params.status)
        view = memoryview((ctypes.c_char * size).from_address(va)).cast("B")
      else:  # video memory; the CPU range is only reserved, so nothing else lands there
        self.os.mmap(va, size, PROT_NONE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0)
        undo.append(lambda: self.os.munmap(va, size))
        handle = self.alloc_object(self.device, rm.NV01_MEMORY_LOCAL_USER, rm.NV_MEMORY_ALLOCATION_PARAMS(
          owner=self.client, type=rm.NVOS32_TYPE_IMAGE, size=size, alignment=0x1000,
          flags=rm.NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE | rm.NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED | rm.NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM,
          attr=rm.NVOS32_ATTR_LOCATION_VIDMEM))
      undo.append(lambda: self.free_object(handle, self.device))
      self._uvm(rm.UVM_CREATE_EXTERNAL_RANGE, rm.UVM_CREATE_EXTERNAL_RANGE_PARAMS(base=va, length=size))
      undo.append(lambda: self._uvm(rm.UVM_FREE, rm.UVM_FREE_PARAMS(base=va, length=size)))
      attrs = rm.UVM_MAP_EXTERNAL_ALLOCATION_PARAMS(base=va, length=size, gpuAttributesCount=1, rmCtrlFd=self.ctl, hClient=self.client,
                                                    hMemory=handle)
      attrs.perGpuAttributes[0].gpuUuid = self.uuid
      self._uvm(rm.UVM_MAP_EXTERNAL_ALLOCATION, attrs)
    except (NVDriverError, OSError) as e:
      for fn in reversed(undo): fn()
      if getattr(e, "status", None) == rm.NV_ERR_NO_MEMORY: raise MemoryError(str(e)) from e
      raise
    self._mems[va] = (handle, size)
    return HCQBuffer(va, size, view)
  def free(self, buf:HCQBuffer): self._free(buf.va)
  def _free(self, va:int):
    if (m := self._mems.pop(va, None)) is None: raise NVDriverError(f"NV:{self.index}: free of {va:#x}, which this device did not allocate")
    handle, size = m
    self._uvm(rm.UVM_FREE, rm.UVM_FREE_PARAMS(base=va, length=size))
    self.free_object(handle, self.device)
    self.os.munmap(va, size)
    VAS.give(va, size)

  def close(self, cause:BaseException|None=None):
    """give everything back: the channels first (freeing one frees its engine objects), then the memory they used, then what the open
    made (the doorbell mapping, the client with its object tree, the files). cause: the error of a failed open (see hcq.release)"""
    steps = self._undo + [lambda va=va: self._free(va) for va in self._mems]
    steps += [lambda h=h: self.free_object(h, self.group) for h in self.channels]
    self._undo, self.channels, self.rm_channels = [], [], []
    release(steps, cause)

  # *** channels ***
  def create_channel(self, kind:str, entries:int=1024) -> RMChannel:
    mem = self.alloc(round_up(8 * entries, 0x1000) + 0x1000, host_visible=True)
    # each channel its own error notifier, as RM's clients give one: RM writes a channel's error there, so a shared one could not say
    # which channel faulted (and the second error would overwrite the first)
    notifier = self.alloc(0x1000, host_visible=True)
    params = rm.NV_CHANNEL_ALLOC_PARAMS(hObjectError=self._mems[notifier.va][0], gpFifoOffset=mem.va, gpFifoEntries=entries,
                                        hContextShare=self.ctxshare, engineType=rm.NV2080_ENGINE_TYPE_GRAPHICS)
    params.hUserdMemory[0], params.userdOffset[0] = self._mems[mem.va][0], round_up(8 * entries, 0x1000)
    self.channels.append(handle := self.alloc_object(self.group, self.gpfifo_class, params))  # close() frees it from here on
    self.alloc_object(handle, self.channel_classes[kind], None)
    token = self.control(handle, rm.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN, rm.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS())
    self.rm_channels.append(ch := RMChannel(self, kind, mem, entries, handle, token.workSubmitToken, notifier))
    return ch
  def classes(self) -> set[int]:
    """the classes the GPU supports (NV0080_CTRL_CMD_GPU_GET_CLASSLIST: first their number, then the list)"""
    n = self.control(self.device, rm.NV0080_CTRL_CMD_GPU_GET_CLASSLIST, rm.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS()).numClasses
    buf = (ctypes.c_uint32 * n)()
    self.control(self.device, rm.NV0080_CTRL_CMD_GPU_GET_CLASSLIST, rm.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS(numClasses=n, classList=ctypes.addressof(buf)))
    return set(buf)
  def _class_set(self, have:set[int]) -> tuple[int, int, int, int]:
    if (found := next((cs for cs in CLASS_SETS if set(cs[:3]) <= have), None)) is None:
      engines = sorted(hex(c) for c in have if c & 0xff in (0xc0, 0xb5, 0x6f))
      raise NVDriverError(f"NV:{self.index}: the GPU offers none of the channel, compute and copy class sets tg drives "
                          f"({[[hex(c) for c in cs[:3]] for cs in CLASS_SETS]}); its engine classes: {engines}")
    return found
  def arch_info(self) -> tuple[int, int]:
    """the GPU's (architecture, implementation) (NV2080_CTRL_CMD_MC_GET_ARCH_INFO)"""
    info = self.control(self.subdevice, rm.NV2080_CTRL_CMD_MC_GET_ARCH_INFO, rm.NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS())
    return info.architecture, info.implementation
  def schedule(self): self.control(self.group, rm.NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, rm.NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS(bEnable=1))
  def progress(self) -> bool: return self.os.progress()
  def faults(self) -> list[str]:
    """what the driver reported: the errors RM wrote to our channels' error notifiers, each naming its channel, and what the host OS
    beneath knows (the mock: each faulted channel's reason)"""
    return [e for ch in self.rm_channels if (e := ch.error())] + self.os.faults(self.index, self.channels)
