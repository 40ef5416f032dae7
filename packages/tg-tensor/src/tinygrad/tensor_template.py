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
  """the nodes between the inputs and out, sources first, as (op, dtype, sources: an int for the n-th input or node after them, or a
  constant, arg, tag, shape, device, the inputs it depends on as a bit mask), and out's index among them; None where one is not
  replayable, is tagged (a node of its own) or reads another node than the inputs and constants"""
  at: dict[UOp, int] = {u: i for i, u in enumerate(inputs)}
  deps = [1 << i for i in range(len(inputs))]
  steps = []
  for u in out.toposort(lambda u: u not in at):
    if u in at or not any(s in at for s in u.src): continue
    if u.op not in _REPLAYABLE or u.tag is not None or any(s not in at and (s.op is not Ops.CONST or s.tag is not None) for s in u.src): return None
    mask = 0
    for s in u.src: mask |= deps[at[s]] if s in at else 0
    steps.append((u.op, u.dtype, tuple(at.get(s, s) for s in u.src), u.arg, u.tag, u.shape, u.device, mask))
    at[u] = len(at)
    deps.append(mask)
  return (tuple(steps), at[out]) if out in at else None

def _replay(inputs:list[UOp], template:tuple) -> UOp:
  """the template's nodes on these inputs. A node made new gets its shape, device and realize()'s memos (tensor._memos): those of the
  inputs it depends on, which its own op and the constants add nothing to, so realize() walks none of the replayed graph again"""
  from tinygrad.tensor import _memos
  built, (steps, out) = inputs, template
  memos = [_memos(u) for u in inputs]
  merged: dict[int, dict] = {}
  for op, dtype, srcs, arg, tag, shape, device, mask in steps:
    built.append(u := UOp(op, dtype, tuple([built[s] if type(s) is int else s for s in srcs]), arg, tag))
    if (d := u.__dict__): continue  # a node that was there before keeps what it knows (a requires_grad mark, its own memos)
    if (m := merged.get(mask)) is None:
      picked = [memos[i] for i in range(len(memos)) if mask >> i & 1]
      m = merged[mask] = picked[0] if len(picked) == 1 else {k: any(p[k] for p in picked) for k in picked[0]}
    d.update(m)
    d["_shape_c"], d["_device_c"] = shape, device
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
      try: template = templates.get(key)
      except TypeError: return fn(*args, **kwargs)  # an unhashable argument: no key
      if template is not None: return _handle(_replay(uops, template))
      ret = fn(*args, **kwargs)
      if key not in templates:
        if len(templates) >= _MAX_TEMPLATES: templates.clear()
        templates[key] = _record(tuple(uops), ret.uop)
      return ret
    wrapper.templates = templates  # by key: what tests read
    return wrapper
  return wrap
