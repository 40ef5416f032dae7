"""A captured TinyJit step: the kernels and copies one call ran, over fixed device buffers, replayed with new input buffers and
Variable values. Buffers that live only inside the step are memory-planned."""
from __future__ import annotations
import gc, weakref
from typing import Any
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.helpers import sint_eq
from tinygrad.engine import realize
from tinygrad.device import Buffer, Device
from tinygrad.engine.memory import plan_memory
from tinygrad.uop.multi import shard_of

def _unbound(u:UOp) -> UOp: return u.substitute({b: b.src[0] for b in u.toposort() if b.op is Ops.BIND})

def signature(t) -> tuple[tuple, Any, Any, Any, tuple]:
  """what a replay needs to stay the same: shape (a bound Variable counts as its Variable), dtype, device, for a multi-device tensor how
  it is split (axis and per-device sizes), and how it views its buffer (offset, strides, the buffer's size): the kernels were made for
  that view and a replay only swaps the buffer"""
  shape = tuple(_unbound(s) if isinstance(s, UOp) else s for s in t.shape)
  parts = t.uop.src if t.uop.op is Ops.MULTI else (t.uop,)
  return shape, t.dtype, t.device, shard_of(t.uop), tuple(None if _empty(p) else _view(p) for p in parts)

def _empty(u:UOp) -> bool: return any(d == 0 for d in u.shape if isinstance(d, int))

def _plain(arg):
  """a movement op's argument with each bound Variable as its Variable (nested pairs for SHRINK and PAD)"""
  if isinstance(arg, tuple): return tuple(_plain(a) for a in arg)
  return _unbound(arg) if isinstance(arg, UOp) else arg

def _view(u:UOp) -> tuple:
  """the movement ops from u down to its buffer and the buffer's shape: a walk of the chain (a replay checks every input, every call)"""
  chain = []
  while u is not u.base: chain, u = chain + [(u.op, _plain(u.marg))], u.src[0]
  return u.shape, tuple(chain)

def input_nodes(t) -> list[UOp]:
  """the BUFFER nodes of a realized tensor argument: one, or one per device of a multi-device tensor. An empty tensor has none (it
  realizes to a constant, or stays the empty graph it was made as): no kernel reads it, and its signature (its shape) is checked on
  every call all the same"""
  parts = t.uop.src if t.uop.op is Ops.MULTI else (t.uop,)
  return [p.base for p in parts if not _empty(p)]

def input_buffers(t) -> list: return [realize.buffer_of(u) for u in input_nodes(t)]

def _stored_slots(ast:UOp) -> set[int]:
  """the PARAM slots a kernel's stores write"""
  ret = set()
  for u in ast.toposort():
    if u.op is Ops.STORE and u.src[0].op is Ops.INDEX:
      p = u.src[0].src[0]
      while p.op is not Ops.PARAM and p.src: p = p.src[0]
      if p.op is Ops.PARAM: ret.add(p.arg.slot)
  return ret

def _unaliased(b):
  """a copy of an input whose memory the replay writes (the last call's output passed back in: h = step(h)): the kernels would read
  values they have already overwritten"""
  realize.run_copy(copy := Buffer(b.device, b.size, b.dtype).allocate(), b)
  return copy

def _show(shape:tuple) -> tuple: return tuple(s.render() if isinstance(s, UOp) else s for s in shape)

def _digest(log:list) -> tuple[list, list, dict, dict]:
  """the log as device Buffers per item, (kind, ast, var_vals) per item, a weak reference to each Buffer's BUFFER UOp and whether it
  was first allocated for the step; the log is emptied (it holds the step's UOps)"""
  owner: dict[Any, weakref.ref] = {}
  first_fresh: dict[Any, bool] = {}
  for it, bufs, fresh in log:
    for u, b, f in zip(it.bufs, bufs, fresh):
      owner.setdefault(b, weakref.ref(u))
      first_fresh.setdefault(b, f)
  ret = [bufs for _, bufs, _ in log], [(it.kind, it.ast, dict(it.var_vals), it.offset) for it, _, _ in log], owner, first_fresh
  log.clear()
  return ret

class CapturedJit:
  """log: (ExecItem, device Buffers, first allocated for it) per item run while capturing; emptied here, so that the liveness of the
  step's buffers can be read off their BUFFER UOps. inputs: (name, realized tensor); outputs: realized tensors"""
  def __init__(self, log:list, inputs:list[tuple[str, Any]], outputs:list):
    self.names, self.sigs = [n for n, _ in inputs], [signature(t) for _, t in inputs]
    in_bufs = [b for _, t in inputs for b in input_buffers(t)]
    out_bufs = {realize.buffer_of(o.uop.base) for o in outputs if o.uop.base.op is Ops.BUFFER}
    steps, kernels, owner, first_fresh = _digest(log)
    gc.collect()  # drop the step's dead graphs: a BUFFER UOp still alive is a buffer someone reads after the call
    # a view (a run of bytes a copy reads) and its buffer keep their memory: the view was made of that memory
    viewed = {b for (kind, *_), bufs in zip(kernels, steps) if kind == "view" for b in bufs}
    plannable = [b for b, f in first_fresh.items() if f and b not in out_bufs and b not in in_bufs and b not in viewed and owner[b]() is None]
    planned = plan_memory(steps, plannable)
    slot = {id(b): i for i, b in enumerate(in_bufs)}
    self.items: list[tuple] = []
    written: list = []
    for (kind, ast, var_vals, offset), bufs in zip(kernels, steps):
      bufs = [slot.get(id(b), planned.get(b, b)) for b in bufs]
      if kind == "view":  # of an input: made again on each call's buffer; else the one made stays right
        if isinstance(bufs[1], int): self.items.append((kind, offset, bufs, {}))
        continue
      written += [bufs[0]] if kind == "copy" else [bufs[i] for i in sorted(_stored_slots(ast))]
      fixed = [b for b in bufs if not isinstance(b, int)]
      runner = None if kind == "copy" else realize.prepare_kernel(ast, fixed[0].device if fixed else in_bufs[bufs[0]].device)
      self.items.append((kind, runner, bufs, var_vals))
    # the buffers a replay writes that outlive it (inputs, state, outputs): the tensor layer computes the values still to be computed
    # from their old contents first (realize.before_write); a weak reference, as the step holds no graph
    self.written_inputs = sorted({b for b in written if isinstance(b, int)})
    self.written_state = [owner[b] for b in dict.fromkeys(b for b in written if not isinstance(b, int)) if b in owner and b not in planned]
    self.written_memory = {id(b.base) for b in written if not isinstance(b, int)}
    self.graph = self._graph(in_bufs)
    self.variables = {k for *_, vals in self.items for k in vals}
    # outputs: a tensor class, its UOp (views of captured buffers, or of inputs' buffers: the function returned an input, or a multi-device
    # tensor whose piece on an input's device is that input) and its input buffers' slots, rebuilt with each call's values
    self.outputs = [(type(o), o.uop, {b: slot[id(realize.buffer_of(b))] for b in o.uop.toposort()
                                      if b.op is Ops.BUFFER and id(realize.buffer_of(b)) in slot}) for o in outputs]

  def _graph(self, in_bufs:list):
    """the device's graph of the step, when every item is a kernel and their devices share one graph (several devices only where the
    graph says it spans them: multi_device)"""
    if not self.items or any(kind != "kernel" for kind, *_ in self.items): return None
    devices = list(dict.fromkeys(b.device if not isinstance(b, int) else in_bufs[b].device for _, _, bufs, _ in self.items for b in bufs))
    graphs = {getattr(Device[d], "graph", None) for d in devices}
    if len(graphs) != 1 or (graph := graphs.pop()) is None or (len(devices) > 1 and not getattr(graph, "multi_device", False)): return None
    return graph(Device[devices[0]], [(*runner, bufs, vals) for _, runner, bufs, vals in self.items])

  def buffers(self) -> list:
    """the distinct device memories the replay uses, inputs excluded"""
    return list({id(b.base): b.base for _, _, bufs, _ in self.items for b in bufs if not isinstance(b, int)}.values())

  def check(self, inputs:list[tuple[str, Any]]):
    if (names := [n for n, _ in inputs]) != self.names:
      raise TypeError(f"TinyJit was captured with tensors as {', '.join(self.names) or 'no arguments'}, now called with them as "
                      f"{', '.join(names) or 'no arguments'}: pass tensors in the same places (or reset() the jit)")
    for name, (old_shape, old_dt, old_dev, old_split, old_views), (_, t) in zip(self.names, self.sigs, inputs):
      shape, dt, dev, split, views = signature(t)
      if len(shape) != len(old_shape) or not all(sint_eq(a, b) for a, b in zip(shape, old_shape)):
        raise ValueError(f"TinyJit {name}: shape {_show(shape)} now, {_show(old_shape)} when captured; only the value of a bound Variable "
                         f"in a shape may change between calls (use another TinyJit, or reset() this one, for other shapes)")
      if dt != old_dt: raise TypeError(f"TinyJit {name}: dtype {dt} now, {old_dt} when captured; cast it, or use another TinyJit")
      if dev != old_dev:  # a DISK device is a file: moving the tensor there would overwrite it
        raise ValueError(f"TinyJit {name}: device {dev} now, {old_dev} when captured; " +
                         (f"move it with .to({old_dev!r})" if Device.runs_kernels(old_dev) else "use another TinyJit for another file"))
      if split != old_split:
        raise ValueError(f"TinyJit {name}: split over its devices as (axis, sizes) {split} now, {old_split} when captured; shard it the same way")
      if views != old_views:
        raise ValueError(f"TinyJit {name}: another view of its buffer (offset, strides or the buffer's size) than when captured: the kernels "
                         f"read that view; pass a contiguous tensor (x.contiguous()) where views of the argument change between calls")

  def __call__(self, inputs:list[tuple[str, Any]], var_vals:dict[str, int]) -> list:
    """replay into the captured buffers; returns the outputs as tensors of the captured classes"""
    self.check(inputs)
    if missing := sorted(self.variables - var_vals.keys()):
      raise ValueError(f"TinyJit: Variable {', '.join(map(repr, missing))} is bound when captured but not by this call's arguments (a closure "
                       f"or a global?); a replay runs no python, so pass its bound Variable as an argument or in an argument's shape")
    nodes = [u for _, t in inputs for u in input_nodes(t)]
    if realize.before_write is not None:
      realize.before_write([nodes[s] for s in self.written_inputs] + [u for r in self.written_state if (u := r()) is not None])
    bufs = [realize.buffer_of(u) for u in nodes]
    if any(id(b.base) in self.written_memory for b in bufs): bufs = [_unaliased(b) if id(b.base) in self.written_memory else b for b in bufs]
    if self.graph is not None: self.graph(bufs, var_vals)
    views: dict[int, Buffer] = {}  # a captured view of an input -> the same view of this call's
    for kind, runner, slots, vals in ([] if self.graph is not None else self.items):
      b = [bufs[s] if isinstance(s, int) else views.get(id(s), s) for s in slots] if views else [bufs[s] if isinstance(s, int) else s for s in slots]
      if kind == "copy": realize.run_copy(*b)
      elif kind == "view": views[id(slots[0])] = b[1].view(slots[0].size, slots[0].dtype, runner).ensure_allocated()
      else: realize.launch(*runner, b, {k: var_vals[k] for k in vals}, b[0].device)
    ret = []
    for cls, u, inp in self.outputs:
      sub = {b: b.src[0].bind(var_vals[b.src[0].arg.name]) for b in u.toposort() if b.op is Ops.BIND and b.src[0].arg.name in var_vals}
      sub |= {b: nodes[s] for b, s in inp.items()}
      ret.append(cls(u.substitute(sub) if sub else u))
    return ret
