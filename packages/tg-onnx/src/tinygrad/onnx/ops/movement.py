"""Shape and movement ops. Sizes, axes, starts and pads that ONNX passes as tensors must be known before the graph is built:
ctx.ints(t) reads them as python ints (constants and Shape outputs without running anything)."""
from __future__ import annotations
import functools, math
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import UOp, ssimplify
from tinygrad.onnx.ops.registry import op
from tinygrad.onnx.ops.common import norm_axis, norm_axes, onnx_dtype, onnx_slice, at_least, show

def _is_int(s, value:int) -> bool: return isinstance(s, int) and s == value  # a symbolic size (a UOp) is never a marker

def _reshape(ctx, x, shape, allowzero=0):
  _check_reshape_target(ctx, x, shape, allowzero)
  shape = [x.shape[i] if _is_int(s, 0) and not allowzero else s for i, s in enumerate(shape)]
  if any(_is_int(s, -1) for s in shape):
    known = math.prod(s for s in shape if not _is_int(s, -1))
    # a symbolic size (dynamic=) has no truth value: only a literal 0 makes the -1 a 0
    shape[next(i for i, s in enumerate(shape) if _is_int(s, -1))] = 0 if _is_int(known, 0) else math.prod(x.shape) // known
  return x.reshape(shape)

def _check_reshape_target(ctx, x, shape, allowzero):
  # ONNX allows one inferred size, and a 0 (copy) only where the input has an axis to copy from
  def target(): return "[" + ", ".join(show(s) for s in shape) + "]"  # only for the errors: rendering a symbolic size costs
  if sum(_is_int(s, -1) for s in shape) > 1:
    raise ValueError(f"{ctx.describe()}: target shape {target()} has more than one -1: at most one -1 (inferred size) is allowed")
  if not allowzero and (past := [i for i, s in enumerate(shape) if _is_int(s, 0) and i >= x.ndim]):
    raise ValueError(f"{ctx.describe()}: target shape {target()} has a 0 (copy the input's size) at position {past[0]}, past the "
                     f"input's rank {x.ndim} (shape {tuple(x.shape)}): there is no size to copy")

@op("Reshape", since=1, ctx=True)
def reshape_v1(ctx, x, shape=()): return _reshape(ctx, x, list(shape))
@op("Reshape", since=5, ctx=True)
def reshape(ctx, x, shape, allowzero=0): return _reshape(ctx, x, ctx.ints(shape), allowzero)

@op("Shape", ctx=True)
def shape(ctx, x, start=0, end=None):
  # python values (what later shape ops read) keep a symbolic size as its Variable
  dims = list(x.shape)[slice(start, end)]
  return ctx.known(_sizes_tensor(dims), dims)

def _sizes_tensor(dims:list) -> Tensor:
  """sizes as an int64 vector; a symbolic one reads its Variable, so a TinyJit replay gives that call's bound size (not the capture's)"""
  if not any(isinstance(d, UOp) for d in dims): return Tensor(dims, dtype=dtypes.int64)
  return Tensor.stack(*[Tensor(d, dtype=dtypes.int64) for d in dims])

@op("Size", ctx=True)
def size(ctx, x): return ctx.known(Tensor(math.prod(x.shape), dtype=dtypes.int64), [math.prod(x.shape)])

@op("Flatten")
def flatten(x, axis=1):
  a = axis + x.ndim if axis < 0 else axis
  return x.reshape(math.prod(x.shape[:a]), math.prod(x.shape[a:]))

def _squeeze(x, ax):
  if ax is None: return x.reshape([s for s in x.shape if s != 1])
  ax = norm_axes(ax, x.ndim)
  return x.reshape([s for i, s in enumerate(x.shape) if i not in ax])

def _unsqueeze(x, ax):
  ax = norm_axes(ax, x.ndim + len(ax))
  shape, it = [], iter(x.shape)
  for i in range(x.ndim + len(ax)): shape.append(1 if i in ax else next(it))
  return x.reshape(shape)

@op("Squeeze", since=1)
def squeeze_v1(x, axes=None): return _squeeze(x, axes)
@op("Squeeze", since=13, ctx=True)
def squeeze(ctx, x, axes=None): return _squeeze(x, None if axes is None else ctx.ints(axes))
@op("Unsqueeze", since=1)
def unsqueeze_v1(x, axes): return _unsqueeze(x, axes)
@op("Unsqueeze", since=13, ctx=True)
def unsqueeze(ctx, x, axes): return _unsqueeze(x, ctx.ints(axes))

@op("Transpose")
def transpose(x, perm=None): return x.permute(perm if perm is not None else list(range(x.ndim))[::-1])

def _empty_vector(x) -> bool:
  # an empty 1-d input (an exporter's empty shape list) is dropped whatever the others' rank; a symbolic size (a bound Variable is
  # at least 1) is never 0, and has no truth value to test
  return x.ndim == 1 and _is_int(x.numel(), 0)

@op("Concat")
def concat(*xs, axis):
  xs = [x for x in xs if not _empty_vector(x)] or list(xs[:1])
  a = norm_axis(axis, xs[0].ndim)
  if len(xs) > 1 and any(isinstance(x.shape[a], UOp) for x in xs): return _symbolic_cat(xs, a)
  return xs[0].cat(*xs[1:], dim=a)

def _symbolic_cat(xs, a):
  """cat along an axis with symbolic sizes (dynamic=). Tensor.cat pads each piece to o + s + (total - o - s), which the simplifier
  can't always fold back to total when a size is a min/max of a Variable (x[:, :2] of a dynamic axis is min(2, T)): the pieces then
  don't add up. Each padded piece is viewed as exactly total long (the same length, spelled one way) before the sum"""
  sizes = [x.shape[a] for x in xs]
  total, offsets = ssimplify(sum(sizes)), [sum(sizes[:k]) for k in range(len(xs))]
  def placed(x, offset, size):
    padded = x.pad(tuple((offset, total - offset - size) if i == a else None for i in range(x.ndim)))
    return padded.shrink(tuple((0, total) if i == a else None for i in range(x.ndim)))
  parts = [placed(x, o, s) for x, o, s in zip(xs, offsets, sizes)]
  return functools.reduce(lambda p, q: p | q if p.dtype is dtypes.bool else p + q, parts)

def _split(ctx, x, sizes, axis, num_outputs=None):
  """Split's pieces along axis: `sizes`, or num_outputs chunks of ceil(n / num_outputs) with a smaller last one (opset 18), or
  without either, as many equal pieces as the node has outputs"""
  ax = norm_axis(axis, x.ndim)
  n = x.shape[ax]
  sizes = _chunks(ctx, n, ax, num_outputs) if not sizes else _checked_sizes(ctx, list(sizes), n, ax)  # an empty split: not given
  out, start = [], 0
  for s in sizes:
    out.append(x.shrink(tuple((start, start + s) if i == ax else None for i in range(x.ndim))))
    start = ssimplify(start + s)
  return tuple(out)

def _chunks(ctx, n, ax:int, num_outputs:int|None) -> list:
  # spelled as int arithmetic, so a symbolic size (dynamic=) splits symbolically; its checks wait for the call's size
  parts = ctx.n_outputs if num_outputs is None else num_outputs
  if parts != ctx.n_outputs: raise ValueError(f"{ctx.describe()}: num_outputs {num_outputs}, but the node has {ctx.n_outputs} outputs")
  step = ssimplify((n + parts - 1) // parts)
  last = ssimplify(n - step * (parts - 1))
  if isinstance(n, int) and num_outputs is None and n % parts:
    raise ValueError(f"{ctx.describe()}: axis {ax} of size {n} does not split evenly into {parts} outputs (give split sizes, or "
                     "num_outputs from opset 18 on)")
  if isinstance(last, int) and last < 0:
    raise ValueError(f"{ctx.describe()}: num_outputs {parts} cuts axis {ax} of size {n} into chunks of {step}, leaving {last} for the last")
  return [step] * (parts - 1) + [last]

def _checked_sizes(ctx, sizes:list, n, ax:int) -> list:
  what = f"{ctx.describe()}: split [{', '.join(show(s) for s in sizes)}]"
  if len(sizes) != ctx.n_outputs: raise ValueError(f"{what} has {len(sizes)} sizes, but the node has {ctx.n_outputs} outputs")
  if any(isinstance(s, int) and s < 0 for s in sizes): raise ValueError(f"{what} has a negative size")
  if isinstance(total := ssimplify(sum(sizes)), int) and isinstance(n, int) and total != n:
    raise ValueError(f"{what} adds up to {total}, but axis {ax} has size {n}")
  return sizes

@op("Split", since=1, ctx=True)
def split_v1(ctx, x, split_input=None, axis=0, split=None):
  return _split(ctx, x, split if split_input is None else ctx.ints(split_input), axis)
@op("Split", since=2, ctx=True)
def split_v2(ctx, x, axis=0, split=None): return _split(ctx, x, split, axis)
@op("Split", since=13, ctx=True)
def split(ctx, x, split=None, axis=0, num_outputs=None):
  return _split(ctx, x, None if split is None else ctx.ints(split), axis, num_outputs)

def _slice(ctx, x, starts, ends, ax=None, steps=None):
  ax = norm_axes(ax, x.ndim) if ax is not None else list(range(len(starts)))
  steps = steps or [1] * len(starts)
  idx = [slice(None)] * x.ndim
  for a, s, e, st in zip(ax, starts, ends, steps): idx[a] = onnx_slice(s, e, st, x.shape[a], f"{ctx.describe()} on axis {a}")
  return x[tuple(idx)] if x.ndim else x

@op("Slice", since=1, ctx=True)
def slice_v1(ctx, x, starts, ends, axes=None): return _slice(ctx, x, starts, ends, axes)
@op("Slice", since=10, ctx=True)
def slice_(ctx, x, starts, ends, axes=None, steps=None):
  return _slice(ctx, x, ctx.ints(starts), ctx.ints(ends), None if axes is None else ctx.ints(axes), None if steps is None else ctx.ints(steps))

def _check_indices(ctx, indices, shape, axes:list[int]):
  """constant indices (known when the graph is built) must lie in [-n, n-1], as onnxruntime checks: a gather would read 0 and a
  scatter drop the update. Value i indexes axes[i % len(axes)]; indices computed at run time are not read (that would be a sync)"""
  if (vals := ctx.known_vals(indices)) is None: return
  for i, v in enumerate(vals):
    a = axes[i % len(axes)]
    if isinstance(n := shape[a], int) and isinstance(v, int) and not -n <= v < n:  # a symbolic size or index: known only per call
      raise IndexError(f"{ctx.describe()}: index {v} is out of range for axis {a} of size {n} (valid: {-n} to {n - 1})")

@op("Gather", ctx=True)
def gather(ctx, x, indices, axis=0):
  a = norm_axis(axis, x.ndim)
  _check_indices(ctx, indices, x.shape, [a])
  idx = (indices < 0).where(indices + x.shape[a], indices)
  return x[(slice(None),) * a + (idx.cast(dtypes.int32),)]

@op("GatherElements", ctx=True)
def gather_elements(ctx, x, indices, axis=0):
  a = norm_axis(axis, x.ndim)
  _check_indices(ctx, indices, x.shape, [a])
  return x.gather(a, (indices < 0).where(indices + x.shape[a], indices))

@op("GatherND", ctx=True)
def gather_nd(ctx, x, indices, batch_dims=0):
  b, k = batch_dims, indices.shape[-1]
  _check_indices(ctx, indices, x.shape, list(range(b, b + k)))
  idx = (indices < 0).where(indices + Tensor(list(x.shape[b:b+k]), dtype=indices.dtype), indices)
  if b == 0: return x[tuple(idx[..., i] for i in range(k))]
  bshape = x.shape[:b]
  nb = math.prod(bshape)
  xf, idf = x.reshape(nb, *x.shape[b:]), idx.reshape(nb, *idx.shape[b:])
  bi = Tensor.arange(nb).reshape(nb, *[1] * (idf.ndim - 2)).expand(nb, *idf.shape[1:-1])
  out = xf[(bi,) + tuple(idf[..., i] for i in range(k))]
  return out.reshape(*bshape, *out.shape[1:])

def _scatter_reduce(x, reduction, idx, upd, ax):
  if reduction == "none": return x.scatter(ax, idx, upd)
  return x.scatter_reduce(ax, idx, upd, {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}[reduction])

@op("ScatterElements", "Scatter", ctx=True)
def scatter_elements(ctx, x, indices, updates, axis=0, reduction="none"):
  a = norm_axis(axis, x.ndim)
  _check_indices(ctx, indices, x.shape, [a])
  idx = (indices < 0).where(indices + x.shape[a], indices)
  return _scatter_reduce(x, reduction, idx, updates, a)

@op("ScatterND", ctx=True)
def scatter_nd(ctx, x, indices, updates, reduction="none"):
  # each index row names one slice of x: rows become linear positions along x's indexed axes flattened into one, so it is one
  # scatter along that axis (later rows win where they repeat, like onnxruntime; the spec leaves it undefined)
  k = indices.shape[-1]
  _check_indices(ctx, indices, x.shape, list(range(k)))
  lead, rest = x.shape[:k], x.shape[k:]
  rows, width = math.prod(indices.shape[:-1]), math.prod(rest)
  idx = indices.reshape(rows, k).cast(dtypes.int64)
  lin = Tensor.zeros(rows, dtype=dtypes.int64)
  for j, n in enumerate(lead): lin = lin * n + (idx[:, j] < 0).where(idx[:, j] + n, idx[:, j])
  flat = x.reshape(math.prod(lead), width)
  pos = lin.reshape(rows, 1).expand(rows, width)
  return _scatter_reduce(flat, reduction, pos, updates.reshape(rows, width), 0).reshape(x.shape)

@op("Expand", ctx=True)
def expand(ctx, x, shape):
  shape = ctx.ints(shape)
  nd = max(len(shape), x.ndim)
  xs, ss = [1] * (nd - x.ndim) + list(x.shape), [1] * (nd - len(shape)) + list(shape)
  return x.reshape(xs).expand([a if b == 1 else b for a, b in zip(xs, ss)])

@op("Tile", ctx=True)
def tile(ctx, x, repeats): return x.repeat(ctx.ints(repeats))

_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": None}

def _pad(x, pads, mode, value, ax=None):
  if mode not in _PAD_MODES: raise ValueError(f"Pad: mode {mode!r} is not one of {', '.join(_PAD_MODES)}")
  ax = norm_axes(ax, x.ndim) if ax is not None else list(range(x.ndim))
  n = len(ax)
  if pads is None or len(pads) != 2 * n:
    raise ValueError(f"Pad: pads {pads} must have a begin and an end for each of the {n} padded axes: {2 * n} values")
  per = [(0, 0)] * x.ndim
  for i, a in enumerate(ax): per[a] = (pads[i], pads[i + n])
  if mode == "wrap": return _wrap_pad(x, per)
  flat = [p for pr in reversed(per) for p in pr]
  return x.pad(flat, mode=_PAD_MODES[mode], value=value)

def _wrap_pad(x, per):
  # negative pads crop first; then each axis is repeated as often as the pads need (they may be wider than the axis, which
  # Tensor.pad's circular mode refuses) and the window around the original copy is kept
  x = x.pad(tuple((min(b, 0), min(e, 0)) for b, e in per))
  for a, (b, e) in enumerate(per):
    b, e, n = max(b, 0), max(e, 0), x.shape[a]
    if not b and not e: continue
    if n == 0: raise ValueError(f"Pad mode wrap of axis {a}: the axis is empty, there is nothing to wrap")
    copies_before = -(-b // n)
    tiled = x.repeat(tuple(copies_before + 1 + -(-e // n) if i == a else 1 for i in range(x.ndim)))
    start = copies_before * n - b
    x = tiled.shrink(tuple((start, start + b + n + e) if i == a else None for i in range(x.ndim)))
  return x

@op("Pad", since=1)
def pad_v1(x, pads=None, mode="constant", value=0.0, paddings=None): return _pad(x, pads if pads is not None else paddings, mode, value)
@op("Pad", since=11, ctx=True)
def pad(ctx, x, pads, constant_value=None, axes=None, mode="constant"):
  v = 0 if constant_value is None else ctx.vals(constant_value)[0]
  return _pad(x, ctx.ints(pads), mode, v, None if axes is None else ctx.ints(axes))

@op("ConstantOfShape", ctx=True)
def constant_of_shape(ctx, shape, value=None):
  dt, v = (dtypes.float32, 0.0) if value is None else (value.dtype, value.to_list()[0])
  return Tensor.full(ctx.ints(shape), v, dtype=dt)

@op("Constant", ctx=True)
def constant(ctx, value=None, value_float=None, value_floats=None, value_int=None, value_ints=None, value_string=None, value_strings=None,
             sparse_value=None):
  if value is not None: return ctx.tensor_of(value)
  if sparse_value is not None:
    from tinygrad.onnx.model import sparse_to_dense
    return ctx.tensor_of(sparse_to_dense(sparse_value, None, "Constant sparse_value"))
  if value_float is not None: return ctx.known(Tensor(value_float, dtype=dtypes.float32), [value_float])
  if value_floats is not None: return ctx.known(Tensor(value_floats, dtype=dtypes.float32), value_floats)
  if value_int is not None: return ctx.known(Tensor(value_int, dtype=dtypes.int64), [value_int])
  if value_ints is not None: return ctx.known(Tensor(value_ints, dtype=dtypes.int64), value_ints)
  raise TypeError("Constant with a string value: tinygrad tensors hold numbers only")

@op("Range", ctx=True)
def range_(ctx, start, limit, delta):
  s, l, d = ctx.vals(start)[0], ctx.vals(limit)[0], ctx.vals(delta)[0]
  if not isinstance(d, UOp) and d == 0: raise ValueError(f"{ctx.describe()}: Range delta is 0: the range would never reach its limit")
  n = _symbolic_range_length(ctx, start, s, l, d) if any(isinstance(v, UOp) for v in (s, l, d)) else max(math.ceil((l - s) / d), 0)
  if _is_int(n, 0): return Tensor.zeros(0, dtype=start.dtype)
  # floats in their own type (a double range needs double steps), ints in int64
  work = start.dtype if dtypes.is_float(start.dtype) else dtypes.int64
  return (Tensor.arange(n, dtype=work) * d + s).cast(start.dtype)

def _symbolic_range_length(ctx, start, s, l, d):
  """the length of a Range whose bounds are symbolic (a size read by Shape under dynamic=): a symbolic axis, which tinygrad's arange
  makes for an int step > 0 only (the count is a ceil division it can express in ints)"""
  if dtypes.is_float(start.dtype) or not all(isinstance(v, (int, UOp)) for v in (s, l, d)) or isinstance(d, UOp) or d <= 0:
    raise NotImplementedError(f"{ctx.describe()}: Range({show(s)}, {show(l)}, {show(d)}) of {start.dtype} has a symbolic bound (dynamic=): "
                              "only an integer range with a constant step > 0 is supported there")
  span = l - s
  return at_least(span if d == 1 else (span + (d - 1)) // d, 0)

@op("Trilu", ctx=True)
def trilu(ctx, x, k=None, upper=1):
  kk = 0 if k is None else ctx.ints(k)[0]
  return x.triu(kk) if upper else x.tril(kk)

@op("OneHot", ctx=True)
def one_hot(ctx, indices, depth, values, axis=-1):
  d = int(ctx.vals(depth)[0])
  idx = indices.cast(dtypes.int64)
  idx = (idx < 0).where(idx + d, idx)
  a = axis if axis >= 0 else axis + indices.ndim + 1
  hot = idx.unsqueeze(a).eq(Tensor.arange(d, dtype=dtypes.int64).reshape([d if i == a else 1 for i in range(indices.ndim + 1)]))
  return hot.where(values[1], values[0])

@op("DepthToSpace")
def depth_to_space(x, blocksize, mode="DCR"):
  n, c, h, w = x.shape
  b = blocksize
  if mode == "DCR": y = x.reshape(n, b, b, c // (b*b), h, w).permute(0, 3, 4, 1, 5, 2)
  else: y = x.reshape(n, c // (b*b), b, b, h, w).permute(0, 1, 4, 2, 5, 3)
  return y.reshape(n, c // (b*b), h * b, w * b)

@op("SpaceToDepth")
def space_to_depth(x, blocksize, mode="DCR"):
  n, c, h, w = x.shape
  b = blocksize
  y = x.reshape(n, c, h // b, b, w // b, b)
  y = y.permute(0, 3, 5, 1, 2, 4) if mode == "DCR" else y.permute(0, 1, 3, 5, 2, 4)
  return y.reshape(n, c * b * b, h // b, w // b)

@op("EyeLike")
def eye_like(x, dtype=None, k=0):
  if x.ndim != 2: raise ValueError(f"EyeLike: the input must be 2-D, it has shape {tuple(x.shape)}")
  n, m = x.shape
  dt = onnx_dtype(dtype) if dtype is not None else x.dtype
  return (Tensor.arange(n).reshape(n, 1) + k).eq(Tensor.arange(m).reshape(1, m)).cast(dt)

@op("Compress", ctx=True)
def compress(ctx, x, condition, axis=None):
  keep = [i for i, c in enumerate(ctx.vals(condition)) if c]
  if axis is None: x, axis = x.flatten(), 0
  a = axis if axis >= 0 else axis + x.ndim
  return x[(slice(None),) * a + (Tensor(keep, dtype=dtypes.int32),)] if keep else x.shrink(tuple((0, 0) if i == a else None for i in range(x.ndim)))

@op("NonZero", ctx=True)
def nonzero(ctx, x):
  vals, shape = ctx.vals(x), x.concrete_shape  # read values: a symbolic size (dynamic=) is this call's bound one
  flat = [i for i, v in enumerate(vals) if v]
  coords = []
  for d in range(x.ndim):
    stride = math.prod(shape[d+1:])
    coords.append([(i // stride) % shape[d] for i in flat])
  return Tensor(coords, dtype=dtypes.int64).reshape(x.ndim, len(flat))

@op("ReverseSequence", ctx=True)
def reverse_sequence(ctx, x, sequence_lens, batch_axis=1, time_axis=0):
  lens, t = ctx.ints(sequence_lens), x.shape[time_axis]
  # per batch entry b: position i reads i' = lens[b]-1-i when i < lens[b], else i
  pos = Tensor.arange(t).reshape(t, 1)
  L = Tensor(lens).reshape(1, -1)
  src = (pos < L).where(L - 1 - pos, pos)  # (t, batch)
  if time_axis != 0: src = src.T
  shape = [1] * x.ndim
  shape[time_axis], shape[batch_axis] = x.shape[time_axis], x.shape[batch_axis]
  return x.gather(time_axis, src.reshape(shape).expand(x.shape))

@op("CumSum", ctx=True)
def cumsum(ctx, x, axis_t, exclusive=0, reverse=0):
  a = ctx.ints(axis_t)[0]
  a = a + x.ndim if a < 0 else a
  if reverse: x = x.flip(a)
  y = x.cumsum(a)
  if exclusive: y = _shift_right(y, a)
  return y.flip(a) if reverse else y

def _shift_right(y, a):
  # the exclusive sum is the inclusive one moved one place along a (a zero first): subtracting x instead gives inf - inf = nan and
  # cancels the small terms of a large running sum
  padded = y.pad(tuple((1, 0) if i == a else None for i in range(y.ndim)))
  return padded.shrink(tuple((0, n) if i == a else None for i, n in enumerate(y.shape)))
