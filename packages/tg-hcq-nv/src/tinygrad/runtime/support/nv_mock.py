"""The mock NVIDIA kernel driver (MOCKGPU=1): the host OS beneath NVRMInterface (nv_rm.py) for /dev/nvidiactl, /dev/nvidiaN and
/dev/nvidia-uvm. It serves the RM escapes and UVM ioctls NVRMInterface issues on the same structures (nv_rm_abi.py): an object tree
of clients, devices, subdevices, VA spaces, channel groups, context shares, GPFIFO channels and their engine objects, with the
parent classes, parameter sizes and call order the driver checks; memory described to RM and mapped into the GPU through UVM
external ranges; the usermode doorbell page. Each mock GPU executes its channels' push buffers in python once a channel's token is
written to the doorbell: host semaphores and wait-for-idle (class C56F), SET_OBJECT bindings, inline QMD loads and launches (C6C0),
copy-engine transfers (C6B5). Kernels run on the PYTHON emulator from the UOps their code object carries; a program with machine code
(a cubin's .text) is first checked against what its code object recorded of the cubin: the bytes at the QMD's program address, and the
QMD's register count, shared memory and barriers. Its parameters are read where the cubin put them in constant buffer 0. A channel blocked on a
semaphore acquire stays there until another channel's release lets it go on; a channel that faults is dead, the GPU runs on."""
from __future__ import annotations
import ctypes, itertools, mmap, os, zlib
from dataclasses import dataclass, field
from tinygrad.runtime.support import nv_rm_abi as rm, nv_methods as nv
from tinygrad.runtime.support.nv_rm import HostOS
from tinygrad.runtime.support.hcq_mock import MockGPUError, EmulatedLaunches, clock_ns, mock_system
from tinygrad.runtime.support.code_object import CodeObject, HEADER
from tinygrad.runtime.support.nv_select import CBUF0_PARAMS, CB0_NTID, CB0_NCTAID, CB0_SHARED_WINDOW, WFI

_WINDOW_METHODS = tuple(m + i for m in (nv.SET_SHADER_SHARED_MEMORY_WINDOW_A, nv.SET_SHADER_LOCAL_MEMORY_WINDOW_A) for i in (0, 4))

GPUS = 4
NOTIFICATIONS = 3  # a channel's error notifier: NV_CHANNELGPFIFO_NOTIFICATION_TYPE__SIZE_1 NvNotifications of 16 bytes (alloc_channel.h)
VRAM_BYTES = 8 << 30  # video memory of each mock GPU: an allocation past it fails with NV_ERR_NO_MEMORY, as RM's does
ARCH = (rm.ARCH_GA100, 2)  # what the mock GPUs report as their architecture and implementation: GA102, an sm_86 part
# the channel, engine and usermode classes each GPU generation offers, as NVIDIA's GSP-RM tables in Linux nouveau name them
# (drivers/gpu/drm/nouveau/nvkm/subdev/gsp/rm/{ga100,ga1xx,ad10x,gh100}.c; usermode as RM's UVM client maps it); the mock serves the
# list and refuses the others
ENGINE_CLASSES = {(rm.ARCH_GA100, 0): (rm.AMPERE_CHANNEL_GPFIFO_A, rm.AMPERE_COMPUTE_A, rm.AMPERE_DMA_COPY_A, rm.VOLTA_USERMODE_A),
                  rm.ARCH_GA100: (rm.AMPERE_CHANNEL_GPFIFO_A, rm.AMPERE_COMPUTE_B, rm.AMPERE_DMA_COPY_B, rm.VOLTA_USERMODE_A),
                  rm.ARCH_AD100: (rm.AMPERE_CHANNEL_GPFIFO_A, rm.ADA_COMPUTE_A, rm.AMPERE_DMA_COPY_B, rm.VOLTA_USERMODE_A),
                  rm.ARCH_GH100: (rm.HOPPER_CHANNEL_GPFIFO_A, rm.HOPPER_COMPUTE_A, rm.HOPPER_DMA_COPY_A, rm.HOPPER_USERMODE_A)}
ENGINE_CLASS_KINDS = {c for v in ENGINE_CLASSES.values() for c in v}
GPFIFO_CLASSES, USERMODE_CLASSES = (rm.AMPERE_CHANNEL_GPFIFO_A, rm.HOPPER_CHANNEL_GPFIFO_A), (rm.VOLTA_USERMODE_A, rm.HOPPER_USERMODE_A)
_COMMON_CLASSES = (rm.NV01_DEVICE_0, rm.NV20_SUBDEVICE_0, rm.NV01_MEMORY_LOCAL_USER, rm.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, rm.FERMI_VASPACE_A,
                   rm.FERMI_CONTEXT_SHARE_A, rm.KEPLER_CHANNEL_GROUP_A)
def engine_classes() -> tuple[int, ...]: return ENGINE_CLASSES.get(ARCH, ENGINE_CLASSES.get(ARCH[0], ()))
NV_ERR_INVALID_ARGUMENT, NV_ERR_INVALID_STATE = 0x1F, 0x40  # the statuses the mock reports (its reason is in last_error)

@dataclass
class RMObject:
  cls: int
  parent: int
  gpu: MockNVGPU|None
  attrs: dict = field(default_factory=dict)

class MockChannel:
  """a GPFIFO channel as the GPU sees it: GP entries at a GPU address, GPGet/GPPut in its USERD, the GPPut its last doorbell saw"""
  def __init__(self, gpu:MockNVGPU, handle:int, gpfifo:int, entries:int, userd:int, group:RMObject, notifier:int):
    self.gpu, self.handle, self.gpfifo, self.entries, self.userd, self.group = gpu, handle, gpfifo, entries, userd, group
    self.notifier = notifier  # where RM writes the channel's robust-channel error (an NvNotification)
    self.put_seen, self.pos, self.dead, self.fault = 0, 0, False, ""  # a channel that faulted is dead (RM's robust-channel recovery)
    self.engines: set[int] = set()          # engine classes allocated on the channel
    self.bound: dict[int, int] = {}         # subchannel -> class, from SET_OBJECT
    self.regs: dict[tuple[int, int], int] = {}
    self.inline_qmd: list[int] = [0] * nv.QMD_WORDS
  def userd_word(self, off:int) -> int: return self.gpu.mem.read(self.userd + off, "<I")[0]
  @property
  def gp_get(self) -> int: return self.gpu.mem.read(self.userd + rm.USERD_GP_GET, "<I")[0]
  def pending(self) -> bool: return not self.dead and self.group.attrs.get("scheduled", False) and self.gp_get != self.put_seen

class MockNVGPU:
  """one GPU: its channels, executed when progress() runs; its doorbell page; its UUID"""
  isolates_faults = True  # a fault kills the channel (as RM's robust-channel recovery does), not the GPU
  def __init__(self, index:int, kernel:MockNVKernel):
    self.index, self.mem, self.uuid = index, kernel.system.mem, bytes([0x6D, 0x6F, 0x63, 0x6B, index] + [0] * 10 + [index])
    self.launches, self.channels, self.doorbell, self.doorbell_fd = EmulatedLaunches(self.mem), {}, None, None
    self.tokens = itertools.count(1)  # work submit tokens start at 1: a doorbell word of 0 is one no write is pending in
    kernel.system.gpus.add(self)

  def doorbell_rung(self):
    """the host wrote a channel's token to NOTIFY_CHANNEL_PENDING: that channel sees GPPut now. The mock cannot tell whose page was
    written, so it asks every GPU, and each serves a write by clearing the word: a GPU whose word is 0 was not rung (one opened for
    memory alone, with no channel, among them), and a token that no channel has is refused"""
    at = slice(rm.NVC361_NOTIFY_CHANNEL_PENDING, rm.NVC361_NOTIFY_CHANNEL_PENDING + 4)
    if self.doorbell is None or not (token := int.from_bytes(self.doorbell[at], "little")): return
    self.doorbell[at] = bytes(4)
    if (ch := self.channels.get(token)) is None: raise MockGPUError(f"NV:{self.index}: doorbell rung with token {token}, which no channel has")
    ch.put_seen = ch.userd_word(rm.USERD_GP_PUT)

  def run(self) -> bool:
    ran, moved = False, True
    while moved:
      moved = False
      for ch in list(self.channels.values()):
        try:
          while ch.pending() and self._step(ch): moved = ran = True
        except MockGPUError as e:
          ch.dead, ch.fault = True, str(e)
          # as RM reports it: the error in the notifier, Xid 31 for an MMU fault, else 13 (graphics engine exception), status set
          self.mem.write(ch.notifier + rm.NOTIFIERS_RC * 16, "<QIHH", clock_ns(), 31 if "page fault" in ch.fault else 13, 0, 0xFFFF)
          raise
    return ran

  def _step(self, ch:MockChannel) -> bool:
    """one method group of the current GP entry; False when it must wait"""
    lo_, hi_ = self.mem.read(ch.gpfifo + 8 * (ch.gp_get % ch.entries), "<II")
    addr, n = (hi_ & 0xff) << 32 | (lo_ & 0xfffffffc), (hi_ >> 10) & 0x1fffff
    if ch.pos < n:
      (h,) = self.mem.read(addr + 4 * ch.pos, "<I")
      sec, count, subc, mthd = nv.decode_header(h)
      if sec != 1: raise MockGPUError(f"NV:{self.index}: method header {h:#010x} at {addr + 4*ch.pos:#x} is not an incrementing method")
      if ch.pos + 1 + count > n: raise MockGPUError(f"NV:{self.index}: method group of {count} words runs past its GP entry at {addr:#x}")
      data = self.mem.read(addr + 4 * (ch.pos + 1), f"<{count}I")
      for i, d in enumerate(data):
        if self._method(ch, subc, mthd + 4 * i, d) is False: return False
      ch.pos += 1 + count
    if ch.pos >= n:
      ch.pos = 0
      self.mem.write(ch.userd + rm.USERD_GP_GET, "<I", (ch.gp_get + 1) & 0xffffffff)
    return True

  def _method(self, ch:MockChannel, subc:int, mthd:int, d:int):
    ch.regs[(subc, mthd)] = d
    r = lambda m: ch.regs.get((subc, m), 0)
    if mthd == 0 and subc != 0:  # SET_OBJECT: bind an engine object of this channel to the subchannel
      if d not in ch.engines: raise MockGPUError(f"NV:{self.index}: SET_OBJECT {d:#x} on subchannel {subc}, but the channel has no such object")
      ch.bound[subc] = d
      return
    if subc != 0 and subc not in ch.bound: raise MockGPUError(f"NV:{self.index}: method {mthd:#x} on subchannel {subc} before its SET_OBJECT")
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
    elif subc == nv.SUBC_COMPUTE and mthd in (nv.SET_INLINE_QMD_ADDRESS_A, nv.SET_INLINE_QMD_ADDRESS_B, nv.SEND_PCAS_A, *_WINDOW_METHODS): pass
    elif subc == nv.SUBC_COMPUTE and mthd == nv.SEND_SIGNALING_PCAS2_B:
      if d & 0xf != nv.PCAS_ACTION_INVALIDATE_COPY_SCHEDULE: raise MockGPUError(f"NV PCAS action {d & 0xf} is not emitted by the encoder")
      inline = (r(nv.SET_INLINE_QMD_ADDRESS_A) << 32 | r(nv.SET_INLINE_QMD_ADDRESS_B)) << 8
      self.mem.write(inline, f"<{nv.QMD_WORDS}I", *ch.inline_qmd)  # the inline load lands in memory, where PCAS finds it
      windows = tuple(r(m) << 32 | r(m + 4) for m in (nv.SET_SHADER_SHARED_MEMORY_WINDOW_A, nv.SET_SHADER_LOCAL_MEMORY_WINDOW_A))
      self._launch(list(self.mem.read(r(nv.SEND_PCAS_A) << 8, f"<{nv.QMD_WORDS}I")), windows)
    elif subc == nv.SUBC_COPY and mthd == nv.LAUNCH_DMA:
      if d != nv.LAUNCH_DMA_COPY: raise MockGPUError(f"NV LAUNCH_DMA {d:#x} is not the pitch-linear copy the encoder emits")
      src = (r(nv.OFFSET_IN_UPPER) & 0x1ffff) << 32 | r(nv.OFFSET_IN_UPPER + 4)
      dst = (r(nv.OFFSET_IN_UPPER + 8) & 0x1ffff) << 32 | r(nv.OFFSET_IN_UPPER + 12)
      size = r(nv.LINE_LENGTH_IN)
      self.mem.view(dst, size)[:] = self.mem.view(src, size)
    elif subc == nv.SUBC_COPY and mthd in (nv.OFFSET_IN_UPPER, nv.OFFSET_IN_UPPER + 4, nv.OFFSET_IN_UPPER + 8, nv.OFFSET_IN_UPPER + 12,
                                           nv.LINE_LENGTH_IN): pass
    else: raise MockGPUError(f"NV:{self.index}: method {mthd:#x} on subchannel {subc} is not one the encoder emits")

  def _launch(self, q:list[int], windows:tuple[int, int]):
    f = lambda name: nv.qmd_field(q, name)
    if f("qmd_major_version") != 3 or not f("constant_buffer_valid0"): raise MockGPUError("NV QMD is not a V03 QMD with constant buffer 0")
    cbuf = f("constant_buffer_addr_upper0") << 32 | f("constant_buffer_addr_lower0")
    program = f("program_address_upper") << 32 | f("program_address_lower")
    grid = (f("cta_raster_width"), f("cta_raster_height"), f("cta_raster_depth"))
    block = (f("cta_thread_dimension0"), f("cta_thread_dimension1"), f("cta_thread_dimension2"))
    # what ptxas-made code reads from constant buffer 0 must be this launch's: the block, the grid, the windows the channel set
    want = {"%ntid": block, "%nctaid": grid, "the shared and local memory windows": windows}
    got = {"%ntid": self.mem.read(cbuf + CB0_NTID, "<3I"), "%nctaid": self.mem.read(cbuf + CB0_NCTAID, "<3I"),
           "the shared and local memory windows": self.mem.read(cbuf + CB0_SHARED_WINDOW, "<2Q")}
    if bad := [f"{k} is {tuple(got[k])}, the launch's is {v}" for k, v in want.items() if tuple(got[k]) != v]:
      raise MockGPUError(f"NV:{self.index}: constant buffer 0 at {cbuf:#x}: {'; '.join(bad)}")
    self.launches.launch(program, cbuf + self._check_program(program, f), grid, block)

  def _check_program(self, program:int, f) -> int:
    """a program with machine code: the code at the QMD's program address is the cubin's .text its code object recorded (CRC-32), and
    the QMD carries the cubin's register count, shared memory and barriers. Returns where the parameters start in constant buffer 0."""
    head = CodeObject.unpack(self.mem.view(program - HEADER, CodeObject.size_at(self.mem.view(program - HEADER, HEADER))))
    if not head.machine_code or not head.uops_json: return CBUF0_PARAMS  # nothing to check, or nothing to run (the emulator says so)
    m, where = head.meta, f"NV:{self.index}: launch of {head.name} at {program:#x}"
    if missing := [k for k in ("crc", "regs", "smem", "bars", "cb0") if k not in m]:
      raise MockGPUError(f"{where}: machine code without the cubin's facts its code object should record ({', '.join(missing)})")
    if zlib.crc32(bytes(self.mem.view(program, len(head.machine_code)))) != m["crc"]:
      raise MockGPUError(f"{where}: the code at the program address is not the cubin's .text (CRC-32 differs)")
    for field_name, want in (("register_count_v", m["regs"]), ("shared_memory_size", (m["smem"] + 127) // 128 * 128), ("barrier_count", m["bars"])):
      if f(field_name) != want: raise MockGPUError(f"{where}: QMD {field_name.upper()} is {f(field_name)}, the cubin needs {want}")
    return m["cb0"]

# what RM_ALLOC accepts: each class's parameter structure (None: none) and the classes of the parents it may have
_ALLOC = {rm.NV01_ROOT_CLIENT: (None, (None,)), rm.NV01_DEVICE_0: (rm.NV0080_ALLOC_PARAMETERS, (rm.NV01_ROOT_CLIENT,)),
          rm.NV20_SUBDEVICE_0: (rm.NV2080_ALLOC_PARAMETERS, (rm.NV01_DEVICE_0,)),
          **{c: (None, (rm.NV20_SUBDEVICE_0,)) for c in USERMODE_CLASSES},
          rm.FERMI_VASPACE_A: (rm.NV_VASPACE_ALLOCATION_PARAMETERS, (rm.NV01_DEVICE_0,)),
          rm.KEPLER_CHANNEL_GROUP_A: (rm.NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS, (rm.NV01_DEVICE_0,)),
          rm.FERMI_CONTEXT_SHARE_A: (rm.NV_CTXSHARE_ALLOCATION_PARAMETERS, (rm.KEPLER_CHANNEL_GROUP_A,)),
          **{c: (rm.NV_CHANNEL_ALLOC_PARAMS, (rm.KEPLER_CHANNEL_GROUP_A,)) for c in GPFIFO_CLASSES},
          **{c: (None, GPFIFO_CLASSES) for c in (rm.AMPERE_COMPUTE_A, rm.AMPERE_COMPUTE_B, rm.ADA_COMPUTE_A, rm.HOPPER_COMPUTE_A,
                                                 rm.AMPERE_DMA_COPY_A, rm.AMPERE_DMA_COPY_B, rm.HOPPER_DMA_COPY_A)},
          rm.NV01_MEMORY_LOCAL_USER: (rm.NV_MEMORY_ALLOCATION_PARAMS, (rm.NV01_DEVICE_0,))}

class MockNVKernel(HostOS):
  """the host OS with NVIDIA's driver mocked: device files and their ioctls and mappings are served here, anonymous memory is the
  real kernel's"""
  is_mock = True
  def __init__(self):
    self.system = mock_system("NV")
    self.gpus = [MockNVGPU(i, self) for i in range(GPUS)]
    self.fds: dict[int, dict] = {}
    self.objects: dict[int, RMObject] = {}
    self.ranges: dict[int, int] = {}  # UVM external ranges: base -> length
    self.last_error, self._fd, self._handles = "", itertools.count(1 << 20), itertools.count(0xC1D0_0000)

  def _fail(self, params, why:str, status:int=NV_ERR_INVALID_ARGUMENT, field_name:str="status"):
    self.last_error = why
    setattr(params, field_name, status)

  # *** files and mappings ***
  def open(self, path:str) -> int:
    if path == "/dev/nvidiactl": node = {"kind": "ctl"}
    elif path == "/dev/nvidia-uvm": node = {"kind": "uvm", "initialized": False, "gpus": set(), "vaspaces": set()}
    elif path.startswith("/dev/nvidia") and path[11:].isdigit() and int(path[11:]) < GPUS: node = {"kind": "gpu", "gpu": self.gpus[int(path[11:])]}
    else: raise FileNotFoundError(2, f"mock NVIDIA driver: no such device {path}")
    self.fds[fd := next(self._fd)] = node
    return fd
  def close(self, fd:int): self.fds.pop(fd)
  def mmap(self, addr:int, size:int, prot:int, flags:int, fd:int=-1, offset:int=0) -> int:
    if fd == -1: return super().mmap(addr, size, prot, flags, fd, offset)
    if (node := self.fds.get(fd)) is None or "mapped" not in node: raise OSError(22, f"mock NVIDIA driver: mmap of fd {fd}, which has no RM_MAP_MEMORY")
    obj, length = node["mapped"]
    if size > length: raise OSError(22, f"mock NVIDIA driver: mmap of {size} bytes of a {length} byte mapping")
    # every mapping of a GPU's usermode registers is the same page, as every mapping of an MMIO range is the same registers
    gpu = obj.gpu
    if gpu.doorbell_fd is None:
      gpu.doorbell_fd = os.memfd_create(f"mock-nv{gpu.index}-usermode")
      os.ftruncate(gpu.doorbell_fd, length)
      gpu.doorbell = memoryview(mmap.mmap(gpu.doorbell_fd, length))
    return super().mmap(0, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, gpu.doorbell_fd, 0)
  def doorbell_rung(self):
    for gpu in self.gpus: gpu.doorbell_rung()
    self.system.progress()
  def progress(self) -> bool: return self.system.progress()
  def faults(self, index:int, channels:list[int]) -> list[str]:
    # the engine from its class: compute classes end in 0xC0 (clc6c0.h ...), copy classes in 0xB5
    return [f"channel {h:#x} ({'compute' if any(c & 0xff == 0xc0 for c in ch.engines) else 'copy'}): {ch.fault}"
            for h in channels if (ch := self.objects[h].attrs["channel"]).fault]

  # *** ioctls ***
  def ioctl(self, fd:int, nr:int, params:ctypes.Structure) -> int:
    if (node := self.fds.get(fd)) is None: raise OSError(9, f"mock NVIDIA driver: ioctl on fd {fd}, which is not open")
    if node["kind"] == "uvm": return self._uvm(node, nr, params)
    if (nr >> 16) & 0x3fff != ctypes.sizeof(params) or (nr >> 8) & 0xff != rm.NV_IOCTL_MAGIC:
      raise OSError(22, f"mock NVIDIA driver: ioctl {nr:#x} does not describe a {type(params).__name__} of {ctypes.sizeof(params)} bytes")
    esc = rm.nv_escape(nr)
    if node["kind"] == "gpu":
      if esc != rm.NV_ESC_REGISTER_FD or self.fds.get(params.ctl_fd, {}).get("kind") != "ctl": raise OSError(22, f"mock NVIDIA driver: escape {esc:#x} on a GPU fd")
      return 0
    handler = {rm.NV_ESC_RM_ALLOC: self._alloc, rm.NV_ESC_RM_FREE: self._free, rm.NV_ESC_RM_CONTROL: self._control,
               rm.NV_ESC_RM_ALLOC_MEMORY: self._alloc_memory, rm.NV_ESC_RM_MAP_MEMORY: self._map_memory}.get(esc)
    if handler is None: raise OSError(22, f"mock NVIDIA driver: escape {esc:#x} is not one NVRMInterface issues")
    handler(params)
    return 0

  def _alloc(self, p:rm.NVOS21_PARAMETERS):
    if p.hClass not in _ALLOC: return self._fail(p, f"RM_ALLOC: class {p.hClass:#x} is not one the mock knows")
    pcls, parents = _ALLOC[p.hClass]
    parent = self.objects.get(p.hObjectParent) if p.hClass != rm.NV01_ROOT_CLIENT else None
    if (parent.cls if parent else None) not in parents:
      return self._fail(p, f"RM_ALLOC: class {p.hClass:#x} under {p.hObjectParent:#x} ({parent.cls if parent else None}), not under {parents}")
    if p.paramsSize != (ctypes.sizeof(pcls) if pcls else 0):
      return self._fail(p, f"RM_ALLOC: class {p.hClass:#x} takes {ctypes.sizeof(pcls) if pcls else 0} parameter bytes, got {p.paramsSize}")
    if p.hObjectNew in self.objects: return self._fail(p, f"RM_ALLOC: handle {p.hObjectNew:#x} is taken")
    if p.hClass in ENGINE_CLASS_KINDS and p.hClass not in engine_classes():
      return self._fail(p, f"RM_ALLOC: class {p.hClass:#x} is not one this GPU offers ({[hex(c) for c in engine_classes()]})")
    args = pcls.from_address(p.pAllocParms) if pcls else None
    handle = p.hObjectNew or next(self._handles)
    obj = RMObject(p.hClass, p.hObjectParent, parent.gpu if parent else None)
    if p.hClass == rm.NV01_DEVICE_0:
      if args.deviceId >= GPUS: return self._fail(p, f"RM_ALLOC: device {args.deviceId} does not exist")
      obj.gpu = self.gpus[args.deviceId]
    elif p.hClass == rm.NV01_MEMORY_LOCAL_USER:
      used = sum(o.attrs["size"] for o in self.objects.values() if o.cls == rm.NV01_MEMORY_LOCAL_USER and o.gpu is obj.gpu)
      if used + args.size > VRAM_BYTES:
        return self._fail(p, f"RM_ALLOC: {args.size} bytes of video memory, {VRAM_BYTES - used} left", rm.NV_ERR_NO_MEMORY)
      obj.attrs["size"] = args.size
      obj.attrs["backing"] = mmap.mmap(-1, args.size)
    elif p.hClass in GPFIFO_CLASSES:
      ctx, userd, notifier = (self.objects.get(h) for h in (args.hContextShare, args.hUserdMemory[0], args.hObjectError))
      if ctx is None or ctx.cls != rm.FERMI_CONTEXT_SHARE_A or any(m is None or "va" not in m.attrs for m in (userd, notifier)):
        return self._fail(p, "RM_ALLOC: a GPFIFO channel needs a context share, and host memory for its error notifier and USERD")
      if args.gpFifoEntries & (args.gpFifoEntries - 1): return self._fail(p, f"RM_ALLOC: {args.gpFifoEntries} GP entries is not a power of two")
      if notifier.attrs["size"] < NOTIFICATIONS * 16:  # alloc_channel.h: NV_CHANNELGPFIFO_NOTIFICATION_TYPE__SIZE_1 NvNotifications
        return self._fail(p, f"RM_ALLOC: the error notifier holds {notifier.attrs['size']} bytes, fewer than {NOTIFICATIONS} notifications")
      ch = MockChannel(obj.gpu, handle, args.gpFifoOffset, args.gpFifoEntries, userd.attrs["va"] + args.userdOffset[0], parent,
                       notifier.attrs["va"])
      obj.attrs["channel"], obj.attrs["token"] = ch, next(obj.gpu.tokens)
      obj.gpu.channels[obj.attrs["token"]] = ch
    elif p.hClass in ENGINE_CLASS_KINDS and "channel" in parent.attrs: parent.attrs["channel"].engines.add(p.hClass)
    self.objects[handle] = obj
    p.hObjectNew, p.status = handle, rm.NV_OK

  def _alloc_memory(self, w:rm.nv_ioctl_nvos02_parameters_with_fd):
    p = w.params
    if p.hClass != rm.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR or self.objects.get(p.hObjectParent, RMObject(0, 0, None)).cls != rm.NV01_DEVICE_0:
      return self._fail(p, f"RM_ALLOC_MEMORY: class {p.hClass:#x} under {p.hObjectParent:#x}: only OS descriptors under a device")
    if p.hObjectNew in self.objects: return self._fail(p, f"RM_ALLOC_MEMORY: handle {p.hObjectNew:#x} is taken")
    self.objects[p.hObjectNew] = RMObject(p.hClass, p.hObjectParent, self.objects[p.hObjectParent].gpu, {"va": p.pMemory, "size": p.limit + 1})
    p.status = rm.NV_OK

  def _free(self, p:rm.NVOS00_PARAMETERS):
    """RM frees an object with everything under it (a client: its whole tree); a freed channel is gone from its GPU"""
    if (obj := self.objects.get(p.hObjectOld)) is None or obj.parent != p.hObjectParent:
      return self._fail(p, f"RM_FREE: {p.hObjectOld:#x} is not an object under {p.hObjectParent:#x}")
    tree, more = set(), {p.hObjectOld}
    while more: tree, more = tree | more, {h for h, o in self.objects.items() if o.parent in more and h not in tree}
    if mapped := [m["hMemory"] for m in self.ranges.values() if m.get("hMemory") in tree]:
      return self._fail(p, f"RM_FREE: {p.hObjectOld:#x} is or holds memory still mapped ({', '.join(hex(h) for h in mapped)})", NV_ERR_INVALID_STATE)
    for h in tree:
      if "channel" in (o := self.objects.pop(h)).attrs: del o.gpu.channels[o.attrs["token"]]
    p.status = rm.NV_OK

  def _control(self, p:rm.NVOS54_PARAMETERS):
    obj = self.objects.get(p.hObject)
    want = {rm.NV2080_CTRL_CMD_GPU_GET_GID_INFO: (rm.NV20_SUBDEVICE_0, rm.NV2080_CTRL_GPU_GET_GID_INFO_PARAMS),
            rm.NV2080_CTRL_CMD_MC_GET_ARCH_INFO: (rm.NV20_SUBDEVICE_0, rm.NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS),
            rm.NV0080_CTRL_CMD_GPU_GET_CLASSLIST: (rm.NV01_DEVICE_0, rm.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS),
            rm.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN: (GPFIFO_CLASSES, rm.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS),
            rm.NVA06C_CTRL_CMD_GPFIFO_SCHEDULE: (rm.KEPLER_CHANNEL_GROUP_A, rm.NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS)}.get(p.cmd)
    if want is None or obj is None or obj.cls not in (want[0] if isinstance(want[0], tuple) else (want[0],)) or p.paramsSize != ctypes.sizeof(want[1]):
      return self._fail(p, f"RM_CONTROL {p.cmd:#x} on {p.hObject:#x} ({obj.cls if obj else None:}) with {p.paramsSize} bytes is not one the mock serves")
    args = want[1].from_address(p.params)
    if p.cmd == rm.NV2080_CTRL_CMD_GPU_GET_GID_INFO:
      args.length = 16
      args.data[:16] = list(obj.gpu.uuid)
    elif p.cmd == rm.NV2080_CTRL_CMD_MC_GET_ARCH_INFO: args.architecture, args.implementation = ARCH
    elif p.cmd == rm.NV0080_CTRL_CMD_GPU_GET_CLASSLIST:
      classes = _COMMON_CLASSES + engine_classes()
      if args.classList and args.numClasses < len(classes): return self._fail(p, f"GET_CLASSLIST: {args.numClasses} entries for {len(classes)} classes")
      if args.classList: (ctypes.c_uint32 * len(classes)).from_address(args.classList)[:] = list(classes)
      args.numClasses = len(classes)
    elif p.cmd == rm.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN: args.workSubmitToken = obj.attrs["token"]
    else: obj.attrs["scheduled"] = bool(args.bEnable)
    p.status = rm.NV_OK

  def _map_memory(self, w:rm.nv_ioctl_nvos33_parameters_with_fd):
    p = w.params
    if (obj := self.objects.get(p.hMemory)) is None or obj.cls not in USERMODE_CLASSES or obj.parent != p.hDevice:
      return self._fail(p, f"RM_MAP_MEMORY of {p.hMemory:#x} under {p.hDevice:#x}: the mock maps the usermode registers only")
    if self.fds.get(w.fd, {}).get("kind") != "gpu": return self._fail(p, f"RM_MAP_MEMORY: fd {w.fd} is not an open GPU file")
    self.fds[w.fd]["mapped"] = (obj, p.length)
    p.status = rm.NV_OK

  def _uvm(self, node:dict, cmd:int, p:ctypes.Structure) -> int:
    if cmd == rm.UVM_INITIALIZE:
      node["initialized"], p.rmStatus = True, rm.NV_OK
      return 0
    if not node["initialized"]: return self._fail(p, "UVM: the fd was not initialized (UVM_INITIALIZE first)", NV_ERR_INVALID_STATE, "rmStatus") or 0
    uuid = lambda b: bytes(b)
    if cmd == rm.UVM_REGISTER_GPU:
      if (gpu := next((g for g in self.gpus if g.uuid == uuid(p.gpu_uuid)), None)) is None: return self._fail(p, "UVM_REGISTER_GPU: unknown UUID", field_name="rmStatus") or 0
      node["gpus"].add(gpu.uuid)
    elif cmd == rm.UVM_REGISTER_GPU_VASPACE:
      vas = self.objects.get(p.hVaSpace)
      if uuid(p.gpuUuid) not in node["gpus"] or vas is None or vas.cls != rm.FERMI_VASPACE_A:
        return self._fail(p, "UVM_REGISTER_GPU_VASPACE: register the GPU first, and name a FERMI_VASPACE_A", field_name="rmStatus") or 0
      node["vaspaces"].add(uuid(p.gpuUuid))
    elif cmd == rm.UVM_CREATE_EXTERNAL_RANGE:
      if any(b < p.base + p.length and p.base < b + m["length"] for b, m in self.ranges.items()):
        return self._fail(p, f"UVM_CREATE_EXTERNAL_RANGE at {p.base:#x} overlaps a range", field_name="rmStatus") or 0
      self.ranges[p.base] = {"length": p.length}
    elif cmd == rm.UVM_MAP_EXTERNAL_ALLOCATION:
      rng, mem = self.ranges.get(p.base), self.objects.get(p.hMemory)
      if rng is None or rng["length"] != p.length or mem is None or "size" not in mem.attrs or p.offset + p.length > mem.attrs["size"]:
        return self._fail(p, f"UVM_MAP_EXTERNAL_ALLOCATION at {p.base:#x}: needs its external range and memory of {p.length} bytes", field_name="rmStatus") or 0
      if p.gpuAttributesCount != 1 or uuid(p.perGpuAttributes[0].gpuUuid) not in node["vaspaces"]:
        return self._fail(p, "UVM_MAP_EXTERNAL_ALLOCATION: the GPU named is not registered with a VA space", field_name="rmStatus") or 0
      backing = mem.attrs["backing"] if "backing" in mem.attrs else (ctypes.c_char * mem.attrs["size"]).from_address(mem.attrs["va"])
      self.system.mem.map(p.base, memoryview(backing).cast("B")[p.offset:p.offset + p.length])
      rng["hMemory"] = p.hMemory
    elif cmd == rm.UVM_FREE:
      if (rng := self.ranges.pop(p.base, None)) is None: return self._fail(p, f"UVM_FREE of {p.base:#x}, which is no range", field_name="rmStatus") or 0
      if "hMemory" in rng: self.system.mem.unmap(p.base)
    else: raise OSError(22, f"mock NVIDIA driver: UVM ioctl {cmd} is not one NVRMInterface issues")
    p.rmStatus = rm.NV_OK
    return 0

_kernel: MockNVKernel|None = None
def mock_kernel() -> MockNVKernel:
  """the process's one mock driver (as there is one kernel driver for all the GPUs)"""
  global _kernel
  if _kernel is None: _kernel = MockNVKernel()
  return _kernel
