"""Control flow and containers: If, Loop, Scan (subgraphs run by the runner, unrolled into one lazy graph), sequences, optionals."""
from __future__ import annotations
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.onnx.ops.registry import op
from tinygrad.onnx.ops.common import norm_axis

@op("If", ctx=True)
def if_(ctx, cond, then_branch, else_branch):
  # the branch is chosen at graph-build time: the condition is read as a python value (the branches may differ in shape)
  g = then_branch if bool(ctx.vals(cond)[0]) else else_branch
  return tuple(ctx.run_graph(g, [], ctx.scope))

@op("Loop", ctx=True)
def loop(ctx, max_trip=None, cond=None, *carried, body):
  trips = ctx.ints(max_trip)[0] if max_trip is not None else None
  keep, scope = (True if cond is None else bool(ctx.vals(cond)[0])), ctx.scope
  n_carried, state, scans, i = len(carried), list(carried), [], 0
  while keep and (trips is None or i < trips):
    outs = ctx.run_graph(body, [Tensor(i, dtype=dtypes.int64), Tensor(keep)] + state, scope)
    keep, state = bool(ctx.vals(outs[0])[0]), list(outs[1:1 + n_carried])
    scans.append(outs[1 + n_carried:])
    i += 1
  scan_types = list(body.outputs.values())[1 + n_carried:]
  stacked = [Tensor.stack(*[s[k] for s in scans]) if scans else _no_iterations(vt) for k, vt in enumerate(scan_types)]
  return tuple(state + stacked)

def _no_iterations(vt):
  """a scan output of a Loop that ran no iteration: no element to take the shape from, so the body's declared output type gives it
  ((0, *declared shape), as onnxruntime does); where the body does not declare a full shape, (0,)"""
  dtype = vt.elem.dtype if vt is not None and vt.elem is not None and vt.elem.dtype is not None else dtypes.float32
  shape = vt.shape if vt is not None and vt.shape is not None and all(isinstance(s, int) for s in vt.shape) else ()
  return Tensor.zeros(0, *shape, dtype=dtype)

@op("Scan", since=8, ctx=True)
def scan_v8(ctx, sequence_lens, *inputs, body, num_scan_inputs, directions=None):
  # opset 8 has a batch axis in front of everything (scan over axis 1): one opset-9 scan per batch entry
  if sequence_lens is not None: raise NotImplementedError("Scan-8 with sequence_lens: only full-length sequences are supported")
  per = [scan(ctx, *[x[b] for x in inputs], body=body, num_scan_inputs=num_scan_inputs, scan_input_directions=directions)
         for b in range(inputs[0].shape[0])]
  return tuple(Tensor.stack(*[p[k] for p in per]) for k in range(len(per[0])))

@op("Scan", since=9, ctx=True)
def scan(ctx, *inputs, body, num_scan_inputs, scan_input_axes=None, scan_input_directions=None, scan_output_axes=None,
         scan_output_directions=None):
  n_state = len(inputs) - num_scan_inputs
  state, xs = list(inputs[:n_state]), inputs[n_state:]
  in_axes = [norm_axis(a, x.ndim) for a, x in zip(scan_input_axes or [0] * len(xs), xs)]
  in_dirs = scan_input_directions or [0] * len(xs)
  steps = xs[0].shape[in_axes[0]] if xs else 0
  scans = []
  for t in range(steps):
    sl = [x.shrink(tuple(((steps - 1 - t if d else t), (steps - t if d else t + 1)) if i == a else None for i in range(x.ndim))).squeeze(a)
          for x, a, d in zip(xs, in_axes, in_dirs)]
    outs = ctx.run_graph(body, state + sl, ctx.scope)
    state, scans = list(outs[:n_state]), scans + [outs[n_state:]]
  n_out = len(body.outputs) - n_state
  out_dirs, out_axes = scan_output_directions or [0] * n_out, scan_output_axes or [0] * n_out
  res = []
  for k in range(n_out):
    seq = [s[k] for s in scans][::-1 if out_dirs[k] else 1]
    res.append(Tensor.stack(*seq, dim=norm_axis(out_axes[k], seq[0].ndim + 1)))
  return tuple(state + res)

# *** sequences are python lists of tensors ***
@op("SequenceConstruct")
def sequence_construct(*xs): return list(xs)

@op("SequenceEmpty")
def sequence_empty(dtype=1): return []

@op("SequenceAt", ctx=True)
def sequence_at(ctx, seq, pos): return seq[ctx.ints(pos)[0]]

@op("SequenceInsert", ctx=True)
def sequence_insert(ctx, seq, x, pos=None):
  seq = list(seq)
  if pos is None: seq.append(x)
  else:
    p = ctx.ints(pos)[0]
    seq.insert(p if p >= 0 else p + len(seq), x)
  return seq

@op("SequenceErase", ctx=True)
def sequence_erase(ctx, seq, pos=None):
  seq = list(seq)
  del seq[-1 if pos is None else ctx.ints(pos)[0]]
  return seq

@op("SequenceLength")
def sequence_length(seq): return Tensor(len(seq), dtype=dtypes.int64)

@op("SplitToSequence", ctx=True)
def split_to_sequence(ctx, x, split=None, axis=0, keepdims=1):
  a = norm_axis(axis, x.ndim)
  if split is None:
    parts = [x.shrink(tuple((i, i + 1) if j == a else None for j in range(x.ndim))) for i in range(x.shape[a])]
    return [p.squeeze(a) if not keepdims else p for p in parts]
  sizes = ctx.ints(split)
  if split.ndim == 0: sizes = [sizes[0]] * (x.shape[a] // sizes[0]) + ([x.shape[a] % sizes[0]] if x.shape[a] % sizes[0] else [])
  out, start = [], 0
  for s in sizes:
    out.append(x.shrink(tuple((start, start + s) if j == a else None for j in range(x.ndim))))
    start += s
  return out

@op("ConcatFromSequence")
def concat_from_sequence(seq, axis, new_axis=0):
  if new_axis: return Tensor.stack(*seq, dim=norm_axis(axis, seq[0].ndim + 1))
  return seq[0].cat(*seq[1:], dim=axis)

@op("SequenceMap", ctx=True)
def sequence_map(ctx, seq, *extra, body):
  outs = []
  for i in range(len(seq)):
    args = [seq[i]] + [e[i] if isinstance(e, list) else e for e in extra]
    outs.append(ctx.run_graph(body, args, ctx.scope))
  return tuple([o[k] for o in outs] for k in range(len(body.outputs)))

# *** optionals: None is the empty optional ***
@op("Optional")
def optional(x=None, type=None): return x

@op("OptionalHasElement")
def optional_has_element(x=None): return Tensor(x is not None)

@op("OptionalGetElement")
def optional_get_element(x):
  if x is None: raise ValueError("OptionalGetElement of an empty optional")
  return x
