"""TinyJit's replay of a step on the CPU: the step's kernels called back to back with what each launch needs worked out once (the
ctypes function, the addresses of the step's own buffers, the share count where no Variable sizes it). A replay only fills in the
inputs' addresses and the Variables' values; per kernel that is a few list operations instead of a launch through the engine. Where
the native thread pool runs (cpu_pool), the whole step is one call into it (_Batch), with no python between its kernels."""
from __future__ import annotations
import ctypes
from tinygrad.helpers import DEBUG, GlobalCounters
from tinygrad.runtime import cpu_pool
from tinygrad.runtime.cpu_threads import run_shared, _native_pool, _threads

class _Call:
  """one kernel of the step: its arguments with holes where the replay's inputs go"""
  def __init__(self, spec, prg, bufs:list, vals:dict[str, int]):
    self.spec, self.prg, self.bufs, self.vals = spec, prg, bufs[:spec.nbufs], vals
    self.addrs = [0 if isinstance(b, int) else ctypes.addressof(b._buf) for b in self.bufs]
    self.inputs = [(i, b) for i, b in enumerate(self.bufs) if isinstance(b, int)]
    self.shares = spec.fixed_dims[0][0] if spec.fixed_dims is not None else None  # None: sized by a Variable, worked out per replay
    # a buffer of the step off the kernel's alignment: the program's own call runs it on aligned copies
    self.direct = not any(a % prg.align for a in self.addrs)
    self.fxn = prg.fxn(len(self.bufs), len(spec.vars), self.shares > 1) if self.shares is not None else None

  def __call__(self, inputs:list, var_vals:dict[str, int]):
    spec, args = self.spec, self.addrs.copy()
    for i, b in self.inputs: args[i] = ctypes.addressof(inputs[b]._buf)
    vals = [var_vals.get(v, self.vals.get(v)) for v in spec.vars]
    if not self.direct or any(args[i] % self.prg.align for i, _ in self.inputs) or self.shares is None:
      gs, ls = spec.launch_dims({**self.vals, **var_vals})
      self.prg(*[inputs[b]._buf if isinstance(b, int) else b._buf for b in self.bufs], vals=tuple(vals), global_size=gs, local_size=ls)
    elif self.shares > 1: run_shared(self.fxn, args + vals, self.shares)
    else: self.fxn(*args, *vals)
    GlobalCounters.kernel_count += 1
    GlobalCounters.global_ops += spec.ops
    GlobalCounters.global_mem += spec.mem

class _Batch:
  """the step's launches as one call into the native pool (cpu_pool's launch_many): a record per kernel (its trampoline, address,
  argument block and share count) and each argument block built once; a replay writes its inputs' addresses and its Variables' values
  into the blocks. The python per kernel, ~1.5 us for a one-share kernel and more for a shared one (the argument array made per launch),
  is then spent once per step (a step of many small kernels: a small model's inference, a decode step)"""
  def __init__(self, native, calls:list[_Call]):
    self.n, self.blocks = len(calls), []
    self.jobs = (ctypes.c_int64 * (4 * len(calls)))()
    self.inputs: list[tuple] = []  # (block, slot, input index, alignment)
    self.vars: list[tuple] = []    # (block, slot, Variable name, its value at capture)
    for k, c in enumerate(calls):
      nvals = len(c.spec.vars)
      block = (ctypes.c_int64 * max(1, len(c.addrs) + nvals))(*c.addrs)
      self.blocks.append(block)
      self.inputs += [(block, i, b, c.prg.align) for i, b in c.inputs]
      self.vars += [(block, len(c.addrs) + j, v, c.vals.get(v)) for j, v in enumerate(c.spec.vars)]
      self.jobs[4*k:4*k+4] = [native.trampoline(len(c.addrs), nvals, c.shares > 1), c.prg.addr, ctypes.addressof(block), c.shares]
    self.ops, self.mem = sum(c.spec.ops for c in calls), sum(c.spec.mem for c in calls)

  def __call__(self, inputs:list, var_vals:dict[str, int]) -> bool:
    """the step run, or False (nothing run) where an input is off a kernel's alignment, one thread runs it, or the pool is busy"""
    if (threads := _threads()) <= 1 or (pool := _native_pool(threads - 1)) is None: return False
    for block, slot, b, align in self.inputs:
      if (addr := ctypes.addressof(inputs[b]._buf)) % align: return False
      block[slot] = addr
    for block, slot, v, default in self.vars: block[slot] = var_vals.get(v, default)
    if not pool.run_many(self.jobs, self.n): return False
    GlobalCounters.kernel_count += self.n
    GlobalCounters.global_ops += self.ops
    GlobalCounters.global_mem += self.mem
    return True

class CPUGraph:
  """Compiled.graph for the CPU: kernels are (ProgramSpec, CPUProgram, buffers (an int: the replay's input of that index), var_vals)"""
  def __init__(self, dev, kernels:list[tuple]):
    self.device, self.kernels, self.calls = dev.device, kernels, [_Call(*k) for k in kernels]
    # one native call per step where every kernel's share count is fixed and its own buffers are aligned (a compiled kernel each)
    batchable = all(c.shares is not None and c.direct and isinstance(getattr(c.prg, "addr", None), int) for c in self.calls)
    self.batch = _Batch(native, self.calls) if batchable and self.calls and (native := cpu_pool.native()) is not None else None
  def __call__(self, inputs:list, var_vals:dict[str, int]):
    if DEBUG >= 2:  # each kernel timed and printed, as a launch through the engine does
      from tinygrad.engine.realize import launch
      for spec, prg, bufs, vals in self.kernels:
        launch(spec, prg, [inputs[b] if isinstance(b, int) else b for b in bufs], {**vals, **var_vals}, self.device)
      return
    if self.batch is not None and self.batch(inputs, var_vals): return
    for call in self.calls: call(inputs, var_vals)
