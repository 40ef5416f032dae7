"""TinyJit's replay of a step on the CPU: the step's kernels called back to back with what each launch needs worked out once (the
ctypes function, the addresses of the step's own buffers, the share count where no Variable sizes it). A replay only fills in the
inputs' addresses and the Variables' values; per kernel that is a few list operations instead of a launch through the engine."""
from __future__ import annotations
import ctypes
from tinygrad.helpers import DEBUG, GlobalCounters
from tinygrad.runtime.cpu_threads import run_shared

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

class CPUGraph:
  """Compiled.graph for the CPU: kernels are (ProgramSpec, CPUProgram, buffers (an int: the replay's input of that index), var_vals)"""
  def __init__(self, dev, kernels:list[tuple]):
    self.device, self.kernels, self.calls = dev.device, kernels, [_Call(*k) for k in kernels]
  def __call__(self, inputs:list, var_vals:dict[str, int]):
    if DEBUG >= 2:  # each kernel timed and printed, as a launch through the engine does
      from tinygrad.engine.realize import launch
      for spec, prg, bufs, vals in self.kernels:
        launch(spec, prg, [inputs[b] if isinstance(b, int) else b for b in bufs], {**vals, **var_vals}, self.device)
      return
    for call in self.calls: call(inputs, var_vals)
