"""Graphs that a function builds from tensors by their shapes alone (a conv's or a pool's windows: ~15 movement ops over 6-10 axes, each
~10 us of argument checks, shape inference and a handle) are built once per shape and replayed on the next tensors of those shapes: each
recorded node is rebuilt on the new inputs by one UOp() call and given the shape and device it had (a movement op's shape follows from its
source's shape and its arguments alone; the devices are the inputs', part of the key). Hash-consing makes the replay the very nodes the
function would have built (the windows of b8 256x28x28 3x3: 150 -> 25 us)."""
from __future__ import annotations
import functools
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp
from tinygrad.helpers import all_int

# what a recorded node may be: any other op (a random number) is a node of its own on every call. A contiguous() is one too where its
# graph reads no memory (Tensor.contiguous tags it): whether each input reads memory is part of the key, and a tagged node is not recorded
_REPLAYABLE = GroupOp.Movement | GroupOp.ALU | {Ops.CAST, Ops.REDUCE_AXIS, Ops.CONTIGUOUS, Ops.CONTIGUOUS_BACKWARD}
_MAX_TEMPLATES = 1024

def _record(inputs:tuple[UOp, ...], out:UOp) -> tuple|None:
  """the nodes between the inputs and out, sources first, as (op, dtype, sources: an int for the n-th input or node after them, or a node
  that depends on no input, arg, tag, shape, device), and out's index among them; None where one is not replayable or tagged (a node of
  its own)"""
  at: dict[UOp, int] = {u: i for i, u in enumerate(inputs)}
  steps = []
  for u in out.toposort(lambda u: u not in at):
    if u in at or not any(s in at for s in u.src): continue
    if u.op not in _REPLAYABLE or u.tag is not None: return None
    steps.append((u.op, u.dtype, tuple(at.get(s, s) for s in u.src), u.arg, u.tag, u.shape, u.device))
    at[u] = len(at)
  return (tuple(steps), at[out]) if out in at else None

def _replay(inputs:list[UOp], template:tuple) -> UOp:
  built, (steps, out) = inputs, template
  for op, dtype, srcs, arg, tag, shape, device in steps:
    built.append(u := UOp(op, dtype, tuple([built[s] if type(s) is int else s for s in srcs]), arg, tag))
    if "_shape_c" not in (d := u.__dict__): d["_shape_c"], d["_device_c"] = shape, device
  return built[out]

def shape_template(inputs:int):
  """a decorator for fn(t_1, ..., t_inputs, *args, **kwargs) -> a tensor that fn builds from the tensors t_i by their shapes, dtypes and
  devices and the (hashable) other arguments alone: replayed from a template recorded on the first call with that key"""
  def wrap(fn):
    templates: dict[tuple, tuple|None] = {}
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
      from tinygrad.tensor import _handle, _reads_memory
      ts, rest = args[:inputs], args[inputs:]
      uops = [t.uop for t in ts]
      # symbolic shapes are not keyed; one tensor given twice would be one input of the recording
      if not all(all_int(u.shape) for u in uops) or len(set(uops)) < len(uops): return fn(*args, **kwargs)
      key = tuple((u.shape, u.dtype, u.device, _reads_memory(u)) for u in uops) + (rest, tuple(sorted(kwargs.items())))
      if (template := templates.get(key)) is not None: return _handle(_replay(uops, template))
      ret = fn(*args, **kwargs)
      if key not in templates:
        if len(templates) >= _MAX_TEMPLATES: templates.clear()
        templates[key] = _record(tuple(uops), ret.uop)
      return ret
    return wrapper
  return wrap
