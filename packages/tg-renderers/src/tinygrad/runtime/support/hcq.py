"""HCQ core (hardware command queues): what the AMD and NV devices share. They talk to the GPU as a driver's userspace part would:
memory mapped into our address space, queue programs (tinygrad.uop.queue) selected into vendor packets and written into rings,
doorbells, and 64-bit timeline signals in host-visible memory. Below it is a driver interface (`iface`: amd_kfd.KFDInterface,
nv_rm.NVRMInterface) that talks to the kernel driver through ioctls and mmaps, on the real kernel or, under MOCKGPU=1, on a mock kernel
driver whose GPUs execute the packet streams in python.

The iface contract: alloc(size, host_visible) -> HCQBuffer, free(buf), progress() -> bool (let the hardware run; the mock executes
what it can and says whether anything ran), faults() -> list[str] (queue faults the driver reported), close(cause=None) (give back
everything it holds: a device whose open fails closes its iface, so a later open starts clean), is_mock."""
from __future__ import annotations
import collections, os, struct, time
from typing import Any
from tinygrad.uop.ops import UOp
from tinygrad.uop import queue as Q
from tinygrad.helpers import GlobalCounters
from tinygrad.device import Allocator, BufferSpec, Compiled
from tinygrad.runtime.support.hcq_select import select, CommandBuffer
from tinygrad.runtime.support.code_object import HEADER

def mockgpu() -> bool: return os.environ.get("MOCKGPU", "0") not in ("", "0")
def round_up(x:int, a:int) -> int: return (x + a - 1) // a * a

def release(steps:list, cause:BaseException|None=None):
  """call every step (each gives back one driver resource), the last first, all of them even when one fails. Closing after a failed
  open (cause: its error), their failures become notes on that error, which stays the one raised: it names what failed first.
  Otherwise the first failure is raised once every step ran"""
  errors = []
  for step in reversed(steps):
    try: step()
    except Exception as e: errors.append(e)
  if cause is None:
    if errors: raise errors[0]
  elif hasattr(cause, "add_note"):  # python 3.11+; on 3.10 the open's error goes up without them
    for e in errors: cause.add_note(f"and giving back what the open had made failed: {type(e).__name__}: {e}")

def whole_or_nothing(open_steps, close, *args):
  """open_steps(*args); when it raises, close(its error) gives back what the steps before it made, and the error goes up: a driver
  interface or device is opened whole or not at all, so a later open starts clean"""
  try: open_steps(*args)
  except BaseException as e:
    close(e)
    raise

def _var(name:str) -> UOp:
  from tinygrad.dtype import dtypes
  return UOp.variable(name, 0, 2**62, dtypes.uint64)
# the values a recorded submission patches each time: the timeline value waited for and signalled, where the operands are
WAIT, SIGNAL, KERNARGS, DEST, SRC = _var("hcq_wait"), _var("hcq_signal"), _var("hcq_kernargs"), _var("hcq_dest"), _var("hcq_src")

class DeviceHang(RuntimeError):
  """a signal never reached its value: the GPU is stuck (or, on the mock, no queue can make progress)"""

class HCQBuffer:
  """device memory: its GPU virtual address, size, and a host view where it is host visible"""
  def __init__(self, va:int, size:int, view:memoryview|None=None, owner:Any=None):
    self.va, self.size, self.view, self.owner = va, size, view, owner
  def offset(self, off:int, size:int|None=None) -> HCQBuffer:
    size = self.size - off if size is None else size
    if off < 0 or off + size > self.size: raise ValueError(f"view of {size} bytes at {off} does not fit a buffer of {self.size} bytes")
    return HCQBuffer(self.va + off, size, None if self.view is None else self.view[off:off+size], self)
  def cpu_view(self) -> memoryview:
    if self.view is None: raise RuntimeError(f"buffer at {self.va:#x} is not host visible")
    return self.view
  def __repr__(self): return f"<HCQBuffer va={self.va:#x} size={self.size}>"

class HCQSignal:
  """a 16-byte slot of host-visible memory: the 64-bit value at +0, the 64-bit timestamp the GPU writes at +8"""
  def __init__(self, dev:HCQCompiled, buf:HCQBuffer):
    self.dev, self.buf, self.va = dev, buf, buf.va
    self._q = buf.cpu_view().cast("Q")
  @property
  def value(self) -> int: return self._q[0]
  @value.setter
  def value(self, v:int): self._q[0] = v
  @property
  def timestamp(self) -> int: return self._q[1]
  def wait(self, value:int, timeout_s:float=30.0):
    spin(self.dev, lambda: self.value >= value, lambda: f"signal at {self.va:#x} is {self.value}, waiting for {value}", timeout_s)

def spin(dev:HCQCompiled, done, what, timeout_s:float=30.0):
  """let the GPU run until done(); a DeviceHang naming what was awaited (what()) and the device's queues when nothing can move (the
  mock knows) or after timeout_s (hardware: progress() cannot tell a busy GPU from a stuck one)"""
  deadline = time.monotonic() + timeout_s
  while not done():
    if not dev.iface.progress() and not done(): raise DeviceHang(f"{dev.device}: {what()}, and no queue can make progress; {dev.queue_report()}")
    if time.monotonic() > deadline: raise DeviceHang(f"{dev.device}: {what()}, still after {timeout_s}s; {dev.queue_report()}")

class HWQueue:
  """a queue program under construction; chainable. submit() selects it into packets, records them and hands them to the device"""
  def __init__(self, dev:HCQCompiled, kind:str): self.dev, self.kind, self.cmds = dev, kind, []
  def _add(self, c:UOp) -> HWQueue:
    self.cmds.append(c)
    return self
  def wait(self, signal:HCQSignal|int, value) -> HWQueue: return self._add(Q.wait(_va(signal), value))
  def signal(self, signal:HCQSignal|int, value) -> HWQueue: return self._add(Q.store(_va(signal), value))
  def timestamp(self, signal:HCQSignal|int) -> HWQueue: return self._add(Q.timestamp(_va(signal)))
  def barrier(self) -> HWQueue: return self._add(Q.barrier())
  def exec(self, program:int, kernargs, global_size, local_size) -> HWQueue: return self._add(Q.exec_kernel(program, kernargs, global_size, local_size))
  def copy(self, dest, src, size:int) -> HWQueue: return self._add(Q.copy(dest, src, size))
  def program(self) -> UOp: return Q.queue(*self.cmds, name=self.kind)
  def record(self) -> CommandBuffer:
    """the command buffer of this program: constant words once, Variables' words patched at each submit"""
    return CommandBuffer(select(self.program(), self.dev.select_pm(self.kind), self.dev.select_ctx))
  def submit(self, var_vals:dict[str, int]|None=None) -> HWQueue:
    self.dev.submit(self.kind, self.record(), var_vals or {})
    return self

def _va(s) -> Any: return s.va if isinstance(s, HCQSignal) else s

class HCQAllocator(Allocator):
  """device memory from the driver; host <-> device copies stream through a host-visible staging buffer on the copy queue"""
  def __init__(self, dev:HCQCompiled):
    super().__init__(dev)
    self.dev = dev
  def _alloc(self, size:int, options:BufferSpec) -> HCQBuffer:
    self.dev.release_freed()
    try: return self.dev.iface.alloc(size, host_visible=options.cpu_access or options.host)
    except (OSError, MemoryError):
      if not self.dev._freed: raise
      self.dev.synchronize()  # what was freed behind queued work comes back once that work is done (an allocation never runs in a __del__)
      return self.dev.iface.alloc(size, host_visible=options.cpu_access or options.host)
  def _free(self, buf:HCQBuffer, options:BufferSpec): self.dev.free_later(buf)
  def _offset(self, buf:HCQBuffer, size:int, offset:int) -> HCQBuffer: return buf.offset(offset, size)
  def _copyin(self, dest:HCQBuffer, src:memoryview):
    for off in range(0, src.nbytes, (step := self.dev.staging.size)):
      n = min(step, src.nbytes - off)
      self.dev.synchronize()  # the staging buffer is free once everything before is done
      self.dev.staging.cpu_view()[:n] = src[off:off+n]
      self.dev.run_copy(dest.va + off, self.dev.staging.va, n)
  def _copyout(self, dest:memoryview, src:HCQBuffer):
    for off in range(0, dest.nbytes, (step := self.dev.staging.size)):
      n = min(step, dest.nbytes - off)
      self.dev.run_copy(self.dev.staging.va, src.va + off, n)
      self.dev.synchronize()
      dest[off:off+n] = self.dev.staging.cpu_view()[:n]

class HCQCompiled(Compiled):
  """a device driven through command queues. A subclass gives the driver interface, its selection matchers (select_pm, select_ctx)
  and submit(); this class keeps the timeline, signals, kernel arguments and staging memory"""
  KERNARGS_SIZE, STAGING_SIZE, SIGNALS = 1 << 20, 2 << 20, 256
  CMD_POOL = 1 << 20  # bytes of one-shot command buffers, reused round robin
  graph: type|None = None  # HCQGraph (set below it): TinyJit replays a step on this device as one submission
  timestamp_ns = 1.0  # nanoseconds per tick of the clock timestamps write
  def __init__(self, device:str, iface, renderer, compiler, program_cls, select_ctx=None):
    self.iface, self.select_ctx = iface, select_ctx
    self.signal_page = iface.alloc(16 * self.SIGNALS, host_visible=True)
    self._free_signals = list(range(self.SIGNALS))
    self.timeline_signal, self.timeline_value = self.new_signal(), 1
    self.kernargs = iface.alloc(self.KERNARGS_SIZE, host_visible=True)
    self._kernargs_at = 0
    self.staging = iface.alloc(self.STAGING_SIZE, host_visible=True)
    self.cmd_pool, self._cmd_at = iface.alloc(self.CMD_POOL, host_visible=True), 0
    self._freed: collections.deque[tuple[HCQBuffer, int]] = collections.deque()  # (buffer, the timeline value it waits for)
    self._copies: dict[int, CommandBuffer] = {}
    super().__init__(device, HCQAllocator(self), renderer, compiler, lambda name, lib: program_cls(self, name, lib))

  def select_pm(self, kind:str): raise NotImplementedError
  def queue_states(self) -> list[str]: return []
  def queue_report(self) -> str:
    """where each queue stands, and the faults the driver reported (the mock's: a faulted queue is stopped, everything behind it waits)"""
    return "; ".join(self.queue_states() + [f"fault: {f}" for f in self.iface.faults()]) or "no queue state known"
  def submit(self, kind:str, cb:CommandBuffer, var_vals:dict[str, int]): raise NotImplementedError
  def compute_queue(self) -> HWQueue: return HWQueue(self, "COMPUTE")
  def copy_queue(self) -> HWQueue: return HWQueue(self, "COPY")

  def new_signal(self, value:int=0) -> HCQSignal:
    if not self._free_signals: raise RuntimeError(f"{self.device}: all {self.SIGNALS} signal slots are in use")
    s = HCQSignal(self, self.signal_page.offset(16 * self._free_signals.pop(), 16))
    s.value = value
    return s
  def next_timeline(self) -> int:
    self.timeline_value += 1
    return self.timeline_value - 1
  def synchronize(self):
    self.timeline_signal.wait(self.timeline_value - 1)
    self.release_freed()

  def free_later(self, buf:HCQBuffer):
    """free buf once the work queued so far is done (a queued kernel may still read it), without waiting. The free runs from
    Buffer.__del__, so wherever a garbage collection strikes: inside a submission that took its timeline value but has not rung its
    doorbell (waiting there waits for that very submission: a hang), or, on the mock, inside the GPU's step (a wait runs the GPU
    from inside itself)"""
    self._freed.append((buf, self.timeline_value - 1))
  def release_freed(self):
    """give the driver back what free_later kept, as far as the timeline has passed it (the values only grow along the deque)"""
    done = self.timeline_signal.value
    while self._freed and self._freed[0][1] <= done: self.iface.free(self._freed.popleft()[0])

  def command_memory(self, cb:CommandBuffer) -> HCQBuffer:
    """where a submission's words go: a recorded buffer keeps memory of its own (a resubmit patches it in place), a one-shot one
    borrows from the pool"""
    if getattr(cb, "persistent", False):
      if not hasattr(cb, "mem"): cb.mem = self.iface.alloc(4 * len(cb), host_visible=True)
      return cb.mem
    size = round_up(4 * len(cb), 256)
    if size > self.CMD_POOL: raise RuntimeError(f"{self.device}: a command buffer of {size} bytes exceeds the {self.CMD_POOL} byte pool")
    if self._cmd_at + size > self.CMD_POOL:
      # the pool wraps: wait until the GPU is done with everything submitted before. The submission being made has already taken its
      # timeline value (timeline_value - 1) and is not queued yet, so the wait is for the value before it (waiting for its own hangs)
      self.timeline_signal.wait(self.timeline_value - 2)
      self._cmd_at = 0
    self._cmd_at += size
    return self.cmd_pool.offset(self._cmd_at - size, size)

  def kernargs_alloc(self, size:int) -> HCQBuffer:
    """bump-allocated kernel arguments; wrapping around waits until the launches reading the old ones are done"""
    size = round_up(size, 256)
    if size > self.KERNARGS_SIZE: raise RuntimeError(f"{self.device}: kernel arguments of {size} bytes exceed the {self.KERNARGS_SIZE} byte area")
    if self._kernargs_at + size > self.KERNARGS_SIZE: self.synchronize(); self._kernargs_at = 0
    self._kernargs_at += size
    return self.kernargs.offset(self._kernargs_at - size, size)

  def run_copy(self, dest:int, src:int, size:int):
    """copy on the copy queue, ordered after everything submitted before (one recorded command buffer per size, patched)"""
    if (cb := self._copies.get(size)) is None:
      cb = self._copies[size] = self.copy_queue().wait(self.timeline_signal, WAIT).copy(DEST, SRC, size).signal(self.timeline_signal, SIGNAL).record()
    v = self.next_timeline()
    self.submit("COPY", cb, {"hcq_wait": v - 1, "hcq_signal": v, "hcq_dest": dest, "hcq_src": src})

class HCQProgram:
  """a kernel loaded on an HCQ device: its code object in host-visible memory the GPU reads, the code at self.addr (after the header,
  256-byte aligned as both vendors' program address registers need). Its arguments: each buffer's 64-bit address, then each variable
  as a 32-bit int; a vendor subclass says where they go in the kernargs block (args_offset) and what else the block holds"""
  args_offset = 0
  code_tail = 0  # bytes kept mapped after the code object, for a vendor whose instruction prefetch reads past a kernel's end
  def __init__(self, dev:HCQCompiled, name:str, lib:bytes):
    self.dev, self.name, self._launches = dev, name, {}
    self.mem = dev.iface.alloc(round_up(len(lib), 256) + self.code_tail, host_visible=True)
    self.mem.cpu_view()[:len(lib)] = lib
    self.addr = self.mem.va + HEADER
  def __del__(self):
    # the code goes back to the driver once the launches queued so far are done: deferred like a buffer's free (a __del__ never waits)
    if (mem := getattr(self, "mem", None)) is None: return
    self.dev.select_ctx.programs.pop(self.addr, None)
    self.dev.free_later(mem)
  def kernargs_size(self, nbufs:int, nvals:int) -> int: return self.args_offset + 8 * nbufs + 4 * nvals
  def fill_kernargs(self, ka:HCQBuffer, bufs:tuple, vals:tuple, global_size:tuple, local_size:tuple):
    data = struct.pack(f"<{len(bufs)}Q{len(vals)}i", *[b.va for b in bufs], *vals)
    ka.cpu_view()[self.args_offset:self.args_offset+len(data)] = data
  def __call__(self, *bufs:HCQBuffer, vals:tuple[int, ...]=(), global_size=(1, 1, 1), local_size=(1, 1, 1), wait=False) -> float|None:
    dev = self.dev
    ka = dev.kernargs_alloc(self.kernargs_size(len(bufs), len(vals)))
    self.fill_kernargs(ka, bufs, vals, tuple(global_size), tuple(local_size))
    v = dev.next_timeline()
    if not wait:  # a launch of this grid is recorded once, then patched with the timeline values and the kernargs address
      if (cb := self._launches.get(key := (tuple(global_size), tuple(local_size)))) is None:
        cb = self._launches[key] = dev.compute_queue().wait(dev.timeline_signal, WAIT).barrier().exec(self.addr, KERNARGS, *key) \
                                      .signal(dev.timeline_signal, SIGNAL).record()
      dev.submit("COMPUTE", cb, {"hcq_wait": v - 1, "hcq_signal": v, "hcq_kernargs": ka.va})
      return None
    q = dev.compute_queue().wait(dev.timeline_signal, v - 1).barrier()
    q.timestamp(start := dev.new_signal())
    q.exec(self.addr, ka.va, tuple(global_size), tuple(local_size)).timestamp(end := dev.new_signal())
    q.signal(dev.timeline_signal, v).submit()
    dev.synchronize()
    et = (end.timestamp - start.timestamp) * dev.timestamp_ns * 1e-9
    dev._free_signals += [int((s.va - dev.signal_page.va) // 16) for s in (start, end)]
    return et

class HCQGraph:
  """a TinyJit step on one or more HCQ devices: on each device one recorded command buffer (its kernels in order with a barrier
  between them, each with kernel arguments of its own), and a finalizer on the first device that waits for every other device's part.
  A replay writes the new inputs' addresses and Variable values into the arguments, patches each device's timeline values (and
  symbolic launch sizes) into its buffer, and submits once per device; the finalizer's signal is the whole step's.

  Each device keeps its own timeline, so the graph stores, per device, the value its part of the last replay signalled (`last`):
  the epoch it runs in, bumped by that device's next_timeline() at every replay, never shared between devices"""
  multi_device = True
  def __init__(self, dev:HCQCompiled, kernels:list[tuple]):
    """kernels: (ProgramSpec, program, buffers: an int for the replay's input of that index or a device Buffer, var_vals) each; a
    kernel runs on its program's device"""
    self.kernels = kernels
    self.devs = list(dict.fromkeys(prg.dev for _, prg, _, _ in kernels)) or [dev]
    sizes = [round_up(prg.kernargs_size(spec.nbufs, len(spec.vars)), 256) for spec, prg, _, _ in kernels]
    self.kernargs = {d: d.iface.alloc(max(sum(sz for sz, (_, p, _, _) in zip(sizes, kernels) if p.dev is d), 256), host_visible=True)
                     for d in self.devs}
    queues, at, self.blocks = {d: d.compute_queue().wait(d.timeline_signal, WAIT) for d in self.devs}, dict.fromkeys(self.devs, 0), []
    for (spec, prg, _, _), size in zip(kernels, sizes):
      self.blocks.append(ka := self.kernargs[prg.dev].offset(at[prg.dev], size))
      at[prg.dev] += size
      queues[prg.dev].barrier().exec(prg.addr, ka.va, spec.global_size, spec.local_size)
    # a kernel's launch dims go into its arguments (NV's constant buffer 0, AMD's hidden arguments): computed here once unless they
    # depend on a Variable, whose value each replay brings
    self.dims = [spec.launch_dims({}) if all(isinstance(s, int) for s in spec.global_size + spec.local_size) else None
                 for spec, _, _, _ in kernels]
    first = self.devs[0]
    for i, d in enumerate(self.devs[1:], 1):  # the finalizer: the first device's part ends when every other device's part has
      queues[first].wait(d.timeline_signal, _var(f"hcq_signal_{i}"))
    self.cbs = {d: q.signal(d.timeline_signal, SIGNAL).record() for d, q in queues.items()}
    for cb in self.cbs.values(): cb.persistent = True
    self.last = dict.fromkeys(self.devs, 0)
  def __del__(self):
    # the arguments and command buffers go back once each device's work queued so far (the last replay included) is done
    for d, ka in getattr(self, "kernargs", {}).items(): d.free_later(ka)
    for d, cb in getattr(self, "cbs", {}).items():
      if hasattr(cb, "mem"): d.free_later(cb.mem)
  def __call__(self, inputs:list, var_vals:dict[str, int]):
    self.devs[0].timeline_signal.wait(self.last[self.devs[0]])  # the arguments of the previous replay are read until it is done
    for (spec, prg, bufs, vals), ka, dims in zip(self.kernels, self.blocks, self.dims):
      vv = {k: var_vals.get(k, v) for k, v in vals.items()}
      if dims is None: dims = spec.launch_dims({**vals, **var_vals})
      args = tuple(inputs[b]._buf if isinstance(b, int) else b._buf for b in bufs[:spec.nbufs])
      prg.fill_kernargs(ka, args, tuple(vv[v] for v in spec.vars), *dims)
      GlobalCounters.kernel_count += 1
      GlobalCounters.global_ops += spec.ops
      GlobalCounters.global_mem += spec.mem
    for d in self.devs: self.last[d] = d.next_timeline()
    others = {f"hcq_signal_{i}": self.last[d] for i, d in enumerate(self.devs[1:], 1)}
    for d in self.devs[1:] + self.devs[:1]:  # the finalizer's device last: the others' parts are queued when it waits for them
      d.submit("COMPUTE", self.cbs[d], {**var_vals, **(others if d is self.devs[0] else {}), "hcq_wait": self.last[d] - 1, "hcq_signal": self.last[d]})

HCQCompiled.graph = HCQGraph
