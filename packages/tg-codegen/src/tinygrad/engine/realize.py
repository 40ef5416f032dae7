"""Run a schedule: allocate buffers, compile kernels (memoised per AST and device, disk-cached by the compiler), launch in order."""
from __future__ import annotations
import functools, os, time
from typing import Callable
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.helpers import DEBUG, BEAM, COMPILE_WORKERS, GlobalCounters, colored
from tinygrad.device import Device, Buffer
from tinygrad.schedule.rangeify import ExecItem
from tinygrad.schedule.cache import create_schedule_cached
from tinygrad.codegen import get_program_cached, lowered, seed_program, load_lowered, ProgramSpec

# the device Buffer behind a BUFFER UOp is kept on the UOp itself, so it is freed with it (a plain attribute read: every launch asks)
_DEVICE_BUFFER = "_device_buffer"

def buffer_of(u:UOp):
  """the device Buffer behind a BUFFER UOp, allocated on first use"""
  while u.op is Ops.AFTER: u = u.src[0]
  if (b := u.__dict__.get(_DEVICE_BUFFER)) is None:
    if u.op is not Ops.BUFFER: raise RuntimeError(f"{u.op} is not a buffer (realize it first)")
    if not isinstance(u.arg.device, str): raise RuntimeError(f"buffer has no single device: {u.arg.device}")
    b = u.__dict__[_DEVICE_BUFFER] = Buffer(u.arg.device, u.arg.shape[0], u.dtype)
  if "_buf" not in b.__dict__: b.allocate()  # not is_allocated(): a call per buffer per launch
  return b

def existing_buffer(u:UOp):
  """the allocated device Buffer behind a BUFFER UOp, or None (never allocates)"""
  return b if (b := u.__dict__.get(_DEVICE_BUFFER)) is not None and b.is_allocated() else None

def adopt_buffer(u:UOp, buf) -> UOp:
  """make the device Buffer `buf` the memory behind the new BUFFER UOp u (an unpickled tensor brings its own)"""
  if u.op is not Ops.BUFFER or (u.arg.shape[0], u.dtype, u.arg.device) != (buf.size, buf.dtype, buf.device):
    raise ValueError(f"{buf} does not fit {u.op} of {u.arg.shape} {u.dtype} on {u.arg.device}")
  if _DEVICE_BUFFER in u.__dict__: raise RuntimeError(f"{u.op} {u.arg.slot} already has a device buffer")
  u.__dict__[_DEVICE_BUFFER] = buf
  return u

# set by the tensor layer (it sits above this package): called with the BUFFER nodes a TinyJit replay is about to write, it computes the
# live values still to be computed from their old contents, the rule that its realize keeps for the writes it schedules
before_write: Callable[[list[UOp]], None]|None = None
# set by the tensor layer too: called as a TinyJit capture starts, it notes the state the capture may fold into its kernels as constants
capture_starts: Callable[[], None]|None = None

_runtimes: dict[tuple, object] = {}

def _runtime(spec:ProgramSpec, device:str, dev):
  key = (spec.src, device)
  if (prg := _runtimes.get(key)) is None:
    # not under BEAM: its search forks workers, and a fork while the helper thread is inside LLVM would copy llvmlite's lock held
    if _preparing and dev.compiler.host_only and not BEAM.value:
      global _compiles
      if _compiles is None: _compiles = _Compiles()
      return _compiles.start(key, spec, dev)
    lib = dev.compiler.compile_cached(spec.src)
    prg = _runtimes[key] = dev.runtime(spec.name, lib)
  return prg

class _Compiling:
  """a program being compiled in the helper thread (its key in _runtimes)"""
  def __init__(self, key:tuple): self.key = key

class _Compiles:
  """the new programs of one schedule. A compiler that runs outside the interpreter's lock (LLVM through llvmlite, a C compiler's
  process) compiles each in a helper thread as soon as its source is known, while the next kernel is lowered here (a 2-layer GPT's
  first training step: 108 new kernels, ~80 ms of lowering and ~65 ms of LLVM each; the step 20.8 -> 12.8 s). One new program is
  compiled here at the end: a thread would only add its start to a cold start"""
  thread: tuple|None = None  # (process id, the helper): a forked child has the parent's helper object but not its thread
  def __init__(self): self.new: dict[tuple, tuple] = {}
  def start(self, key:tuple, spec:ProgramSpec, dev) -> object:
    if key in self.new: return _Compiling(key)
    if (lib := dev.compiler.cached(spec.src)) is not None:
      prg = _runtimes[key] = dev.runtime(spec.name, lib)
      return prg
    self.new[key] = (spec, dev, None)
    if len(self.new) >= 2:
      if _Compiles.thread is None or _Compiles.thread[0] != os.getpid():
        from concurrent.futures import ThreadPoolExecutor
        _Compiles.thread = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="tg-compile"))
      for k, (sp, d, fut) in self.new.items():
        if fut is None: self.new[k] = (sp, d, _Compiles.thread[1].submit(d.compiler.compile, sp.src))
    return _Compiling(key)
  def wait(self):
    """until the helper thread is done with every compile of this schedule, whatever the outcome: a later fork (BEAM's workers,
    _lower_in_workers) must not find it inside LLVM, holding llvmlite's lock"""
    if futures := [fut for _, _, fut in self.new.values() if fut is not None]:
      from concurrent.futures import wait
      wait(futures)
  def finish(self):
    self.wait()
    for key, (spec, dev, fut) in self.new.items():
      lib = fut.result() if fut is not None else dev.compiler.compile(spec.src)
      _runtimes[key] = dev.runtime(spec.name, dev.compiler.store(spec.src, lib))

_preparing = False  # _prepare_all is running: new programs go to _compiles (made on the first: most schedules have none)
_compiles: _Compiles|None = None

def prepare_kernel(ast:UOp, device:str) -> tuple[ProgramSpec, object]:
  """the compiled program for a kernel AST on a device (memoised: a replay skips this); inside _prepare_all, a new one may be a
  _Compiling that _prepare_all replaces"""
  dev = Device[device]
  spec = get_program_cached(ast, dev.renderer)
  return spec, _runtime(spec, device, dev)

def launch(spec:ProgramSpec, prg, bufs:list, var_vals:dict[str, int], device:str) -> float|None:
  if len(bufs) < spec.nbufs: raise RuntimeError(f"kernel {spec.name} takes {spec.nbufs} buffers, got {len(bufs)}")
  if spec.vars:
    if missing := [v for v in spec.vars if v not in var_vals]: raise RuntimeError(f"kernel {spec.name} needs values for variables {missing}")
    vals = tuple([var_vals[v] for v in spec.vars])
  else: vals = ()
  global_size, local_size = spec.launch_dims(var_vals)
  debug = DEBUG.value  # read once: a ContextVar's comparison is a python call
  et = prg(*[b._buf for b in bufs[:spec.nbufs]], vals=vals, global_size=global_size, local_size=local_size, wait=debug >= 2)
  GlobalCounters.kernel_count += 1
  GlobalCounters.global_ops += spec.ops
  GlobalCounters.global_mem += spec.mem
  if et is not None: GlobalCounters.time_sum_s += et
  if debug >= 2:
    tm = f"{et*1e6:9.2f} us" if et is not None else " " * 12
    gflops = f"{'>=' if not spec.exact else ''}{spec.ops/et*1e-9:.2f} GFLOPS" if et else ""  # unknown trip counts: a lower bound
    print(f"{colored(f'*** {device:7s}', 'magenta')} {GlobalCounters.kernel_count:4d} {spec.name:30s} {tm} {gflops}")
  return et

def copy_path(dst, src) -> str:
  """how a copy between these buffers goes: "transfer" when the destination's allocator can read the source device's memory directly
  (device to device, same kind of device), else "host" (out to host memory, then in)"""
  return "transfer" if hasattr(dst.allocator, "_transfer") and type(dst.allocator) is type(src.allocator) else "host"

def run_copy(dst, src):
  if dst.nbytes != src.nbytes: raise RuntimeError(f"copy of {src.nbytes} bytes from {src.device} into {dst.nbytes} bytes on {dst.device}")
  st = time.perf_counter()
  if (path := copy_path(dst, src)) == "transfer": dst.allocator._transfer(dst._buf, src._buf, src.nbytes, src.allocator.dev)
  else:
    data = memoryview(bytearray(src.nbytes))
    src.copyout(data)
    dst.copyin(data)
  if DEBUG >= 2: print(f"{colored(f'*** {dst.device:7s}', 'yellow')}      copy {src.nbytes:8d} bytes {src.device} -> {dst.device} ({path})"
                       f"  {(time.perf_counter()-st)*1e6:9.2f} us")

def kernel_device(it:ExecItem, bufs:list) -> str:
  device = bufs[0].device
  for b in bufs:
    if b.device != device:
      raise RuntimeError(f"kernel {it.ast.arg} reads buffers on several devices {sorted({b.device for b in bufs})}: copy them first (.to())")
  return device

# TinyJit's capture: while this is a list, every item run is also appended to it as (ExecItem, device Buffers, which of them were first
# allocated for this item)
capturing: list|None = None

def _prepared(it:ExecItem):
  """what running `it` needs, made now: its buffers allocated and its program compiled; returns the call that runs it"""
  if it.kind == "view": return _made_view(it)
  fresh = [existing_buffer(u) is None for u in it.bufs] if capturing is not None else None
  bufs = [buffer_of(b) for b in it.bufs]
  if capturing is not None: capturing.append((it, bufs, fresh))
  if it.kind == "copy": return functools.partial(run_copy, *bufs)
  device = kernel_device(it, bufs)
  return functools.partial(launch, *prepare_kernel(it.ast, device), bufs, it.var_vals, device)

def _made_view(it:ExecItem):
  """a view item's buffer made a view of its base's memory, now: the items after it use it, and there is nothing to run (a TinyJit
  replay makes it again where its base is an input)"""
  view, base = it.bufs[0], buffer_of(it.bufs[1])
  if (made := view.__dict__.get(_DEVICE_BUFFER)) is None:
    made = view.__dict__[_DEVICE_BUFFER] = base.view(view.arg.shape[0], view.dtype, it.offset).ensure_allocated()
  if capturing is not None: capturing.append((it, [made, base], [False, False]))
  return _nothing

def _nothing(): pass

MIN_WORKER_KERNELS = 4  # fewer new kernels are lowered here: a worker's fork costs ~10-50 ms, a kernel's lowering and compile ~100

def _lower_in_workers(items:list[ExecItem]):
  """lower and compile the schedule's new kernels in forked worker processes, one kernel at a time each (a 2-layer GPT's first training
  step, 108 new kernels at ~165 ms of one core each: 17.8 s here, 9.0 s in two workers; the step 20.8 -> 10.0 s); _prepared then finds
  each program made. Only where every compile needs the host alone (Compiler.host_only), not under BEAM (its search runs per kernel, in
  workers of its own), and where fork exists. A kernel a worker failed on is lowered here, which raises its error. The specs come back
  without their uops, as BEAM's candidates do: nothing after lowering reads them"""
  if len(items) < MIN_WORKER_KERNELS: return
  if len(fresh := [it for it in items if it.kind == "kernel" and not lowered(it.ast)]) < MIN_WORKER_KERNELS: return
  if (workers := COMPILE_WORKERS.value) <= 1 or BEAM.value or not hasattr(os, "fork"): return
  new: dict[UOp, str] = {}
  for it in fresh:
    if it.ast in new or (device := _device_of(it)) is None or not Device[device].compiler.host_only: continue
    if not load_lowered(it.ast, Device[device].renderer): new[it.ast] = device  # one the disk cache has needs no worker
  for device in dict.fromkeys(new.values()):
    if len(asts := [a for a, d in new.items() if d == device]) < MIN_WORKER_KERNELS: continue
    from tinygrad.codegen.opt.search import compile_all
    dev = Device[device]
    for ast, (spec, lib) in zip(asts, compile_all(asts, dev.renderer, workers, cached=True)):
      if spec is None: continue
      seed_program(ast, dev.renderer, spec)
      if (key := (spec.src, device)) not in _runtimes: _runtimes[key] = dev.runtime(spec.name, lib)

def _device_of(it:ExecItem) -> str|None:
  """the device a kernel item runs on, read off its first buffer's node"""
  u = it.bufs[0] if it.bufs else None
  while u is not None and u.op is Ops.AFTER: u = u.src[0]
  return u.arg.device if u is not None and u.op is Ops.BUFFER and isinstance(u.arg.device, str) else None

def _prepare_all(items:list[ExecItem]) -> list:
  """_prepared of each item, their new programs lowered in workers (_lower_in_workers) or compiled together (_Compiles)"""
  global _preparing, _compiles
  _lower_in_workers(items)
  _preparing = True
  try: runs = [_prepared(it) for it in items]
  except BaseException:
    if _compiles is not None: _compiles.wait()
    raise
  finally: _preparing, compiles, _compiles = False, _compiles, None
  if compiles is None or not compiles.new: return runs
  compiles.finish()
  return [functools.partial(r.func, r.args[0], _runtimes[r.args[1].key], *r.args[2:])
          if isinstance(r, functools.partial) and len(r.args) > 1 and isinstance(r.args[1], _Compiling) else r for r in runs]

def run_schedule(items:list[ExecItem]):
  """every item made ready (allocated, compiled) before the first runs: a big kernel leaves the interpreter's caches cold, and the
  python between kernels then costs twice what it costs before them; a failed compile also stops the schedule before anything ran"""
  for run in _prepare_all(items): run()

def prepare_uops(uops:list[UOp]) -> tuple[list, dict[UOp, UOp]]:
  """schedule what `uops` need and make each item ready (see run_schedule); returns the calls that run them, in order, and, for each
  of `uops` and each node on the way that will be materialised, an equivalent UOp whose base is a BUFFER"""
  if not uops: return [], {}
  items, becomes = create_schedule_cached(uops)
  if DEBUG.value >= 3: print(f"schedule: {len(items)} items")
  return _prepare_all(items), becomes
