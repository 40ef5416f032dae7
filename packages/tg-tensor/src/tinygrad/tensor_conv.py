"""Convolutions over any number of spatial axes (conv2d takes (N, C, *spatial) with a (Cout, Cin/groups, *kernel) weight, so 1-D and 3-D
work too): the input is seen as sliding windows, a view built from pad, repeat, reshape and shrink, multiplied with the weight and
summed, one fused kernel; where that form has no vector axis, the windows are written out once and the convolution is a matmul
(_im2col_conv). conv_transpose2d is a convolution of the input with the flipped, transposed weight: strided, one conv over the stride's
phases (_phase_conv_transpose), else of the stride-dilated input."""
from __future__ import annotations
import contextvars, functools, itertools, operator
from typing import NamedTuple
from tinygrad.helpers import prod, ceildiv
from tinygrad.tensor_template import shape_template

def _ints(x, what:str) -> int|tuple[int, ...]:
  """x, an int or a sequence of ints (numpy's too), as an int or a tuple of them: a float (padding=k/2) is torch's TypeError, not a
  failed len() deep inside"""
  try: return tuple(operator.index(v) for v in x) if hasattr(x, "__iter__") else operator.index(x)
  except TypeError: raise TypeError(f"{what} must be an int or a tuple of ints, got {x!r}") from None

def _groups(groups) -> int:
  try: groups = operator.index(groups)
  except TypeError: raise TypeError(f"groups must be an int, got {groups!r}") from None
  if groups < 1: raise ValueError(f"groups must be a positive int, got {groups}")
  return groups

def _per_axis(x, nd:int, what:str, least:int|None=None) -> tuple:
  ret = (xs,)*nd if isinstance(xs := _ints(x, what), int) else xs
  if len(ret) != nd: raise ValueError(f"{what} {x} needs one value per spatial axis ({nd})")
  if least is not None and any(v < least for v in ret): raise ValueError(f"{what} {x} must be at least {least}")
  return ret

def _padding_mode(padding:str) -> str:
  """a padding string in any case, as tinygrad lower-cases it: 'same' or 'valid' (a 4-letter string must not pass as 4 pads)"""
  if (mode := padding.lower()) not in ("same", "valid"):
    raise ValueError(f"Invalid padding string {padding!r}, only 'same' or 'valid' is supported")
  return mode

def _flat_pads(padding, ks:tuple, dils:tuple, strides:tuple) -> list:
  """pad()'s flat form (last axis first): from an int, one per axis, torch's flat (left, right, top, bottom, ...), 'same' or 'valid'"""
  nd = len(ks)
  if isinstance(padding, str): padding = _padding_mode(padding)
  if padding == "valid": return [0]*2*nd
  if padding == "same":
    if any(s != 1 for s in strides): raise ValueError(f"padding='same' needs stride 1, got {strides}")
    tot = [d*(k-1) for k, d in zip(ks, dils)]
    return [p for t in reversed(tot) for p in (t//2, t - t//2)]  # the odd one out goes after, like torch
  if isinstance(padding := _ints(padding, "padding"), int): return [padding]*2*nd
  if len(padding) == nd: return [p for p in reversed(padding) for _ in range(2)]
  if len(padding) == 2*nd: return list(padding)
  raise ValueError(f"padding {padding} needs an int, one per spatial axis ({nd}), two per axis ({2*nd}), 'same' or 'valid'")

def _pad_pairs(pads:list, nd:int) -> tuple:
  """_flat_pads' flat form (last axis first) as (before, after) per spatial axis, first axis first"""
  return tuple((pads[2*(nd-1-a)], pads[2*(nd-1-a)+1]) for a in range(nd))

def _spans(x, spans:dict):
  """x shrunk to spans {axis: (start, end)}, the other axes whole"""
  return x.shrink(tuple(spans.get(j, (0, m)) for j, m in enumerate(x.shape)))
def _pad_after(x, ax:int, n:int): return x.pad(tuple((0, n) if j == ax else (0, 0) for j in range(x.ndim)))
def _cut(x, ax:int, n:int): return x.shrink(tuple((0, n) if j == ax else (0, m) for j, m in enumerate(x.shape)))

def _window(x, ax:int, k:int, s:int, d:int):
  """axis ax (size i) as two axes (k, o) in its place: out[..., j, t, ...] = x[..., t*s + j*d, ...]. It works in place rather than on
  a permuted copy so that the gradient, a sum over the k copies, comes out in the input's own layout"""
  i, pre, post = x.shape[ax], tuple(x.shape[:ax]), tuple(x.shape[ax+1:])
  if (o := (i - d*(k-1) - 1)//s + 1) <= 0: raise ValueError(f"kernel {k} with dilation {d} doesn't fit an axis of size {i}")
  if (span := d*(k-1) + 1) <= s: return _disjoint_window(x, ax, k, s, d, o, span)
  # k copies of the row padded to i+d, read as rows of i+2d: row j starts j*d further in, so column t is x[t + j*d]
  x = _pad_after(x, ax, d).unsqueeze(ax).expand(pre + (k, i+d) + post).reshape(pre + (k*(i+d),) + post)
  x = _cut(_pad_after(x, ax, k*d).reshape(pre + (k, i+2*d) + post), ax+1, (o-1)*s+1)
  if s == 1: return x
  return _cut(_pad_after(x, ax+1, s-1).reshape(pre + (k, o, s) + post), ax+2, 1).reshape(pre + (k, o) + post)

def _disjoint_window(x, ax:int, k:int, s:int, d:int, o:int, span:int):
  """_window for windows that don't overlap (a pool with stride >= kernel): every element sits in at most one window, so the view
  is rows of s cut to the window's span, with no copies; its gradient is the same view backwards, not a sum over copies"""
  i, pre, post = x.shape[ax], tuple(x.shape[:ax]), tuple(x.shape[ax+1:])
  x = _pad_after(x, ax, o*s - i) if o*s > i else _cut(x, ax, o*s)
  x = _cut(x.reshape(pre + (o, s) + post), ax+1, span)
  if d > 1: x = _cut(_pad_after(x, ax+1, k*d - span).reshape(pre + (o, k, d) + post), ax+2, 1).reshape(pre + (o, k) + post)
  return x.permute(tuple(range(ax)) + (ax+1, ax) + tuple(range(ax+2, x.ndim)))

def _runs(k:int, s:int, d:int) -> int:
  """how many runs of consecutive taps, each spanning at most the stride, a window's k taps make: 1 for windows that don't overlap"""
  return 1 if d*(k-1) + 1 <= s else -(-k // ((s-1)//d + 1))

def _stacked_window(x, ax:int, k:int, s:int, d:int):
  """_window as its taps in runs that each span at most the stride (taps 0-1 and 2 of a 3-wide window at stride 2), each run a
  _disjoint_window of the input shifted to the run's first tap, concatenated along the tap axis: the same values. Its gradient is a sum
  of one view of the windows' gradient per run, elementwise; _window's is a reduce over k copies through index math modulo the padded
  row, a kernel per axis whose loads are gated and scalar (ResNet's 3x3 stride 2 max pool's gradient, 2x64x112x112: 16 -> 7 ms CPU)"""
  i = x.shape[ax]
  o, per = (i - d*(k-1) - 1)//s + 1, (s-1)//d + 1
  runs = []
  for j in range(0, k, per):
    n = min(k, j + per) - j
    runs.append(_disjoint_window(x.shrink(tuple((j*d, i) if a == ax else (0, m) for a, m in enumerate(x.shape))), ax, n, s, d, o, d*(n-1) + 1))
  return runs[0].cat(*runs[1:], dim=ax)

@shape_template(1)
def _windows(x, ks:tuple, strides:tuple, dils:tuple, max_runs:int=1):
  """(*lead, *spatial) -> (*lead, *out, *ks): every window of the last len(ks) axes. Overlapping windows are stacked from runs of
  disjoint ones (_stacked_window) when that is at most max_runs runs in all (their product over the axes): the forward then reads each
  tap as a sum of one gated load per combination of runs, of which one is live, so past a few the loads cost more than the gradient saves
  (a 3x3x3 stride 2 max pool, 8: 29 -> 88 ms CPU; 3x3 stride 1, 9: 11 -> 64 ms)"""
  nd, nl = len(ks), x.ndim - len(ks)
  stack = prod(_runs(k, s, d) for k, s, d in zip(ks, strides, dils)) <= max_runs
  for a, (k, s, d) in enumerate(zip(ks, strides, dils)):  # (*lead, k0, o0, k1, o1, ...)
    x = _stacked_window(x, nl + 2*a, k, s, d) if stack and _runs(k, s, d) > 1 else _window(x, nl + 2*a, k, s, d)
  return x.permute(tuple(range(nl)) + tuple(nl + 2*a + 1 for a in range(nd)) + tuple(nl + 2*a for a in range(nd)))

# the direct form above runs fast when its lanes can load vectors along the output's last axis: stride 1 in the input, and whole vectors
# of this many floats (one AVX2 register; a row of 56 is 7, a row of 11 or 26 leaves every lane of the tile a scalar load)
VECTOR_LANES = 8
IM2COL_MAX_ELEMENTS = 1 << 24  # a window buffer is prod(kernel) times the input: past 64 MB of fp32 the direct form's reads cost less

def _strided_take(x, ax:int, start:int, o:int, s:int):
  """x[..., start : start + (o-1)*s + 1 : s, ...] along axis ax, from shrink, pad and reshape (whose gradients are views again)"""
  x = x.shrink(tuple((start, start + (o-1)*s + 1) if j == ax else (0, m) for j, m in enumerate(x.shape)))
  if s == 1: return x
  pre, post = tuple(x.shape[:ax]), tuple(x.shape[ax+1:])
  return _cut(_pad_after(x, ax, s-1).reshape(pre + (o, s) + post), ax+1, 1).reshape(pre + (o,) + post)

def _strided_put(x, ax:int, start:int, i:int, s:int):
  """_strided_take's adjoint: the o rows of axis ax put at rows start, start + s, ... of an axis of i rows, zeros between"""
  o, pre, post = x.shape[ax], tuple(x.shape[:ax]), tuple(x.shape[ax+1:])
  if s > 1: x = _cut(_pad_after(x.reshape(pre + (o, 1) + post), ax+1, s-1).reshape(pre + (o*s,) + post), ax, (o-1)*s + 1)
  return x.pad(tuple((start, i - start - x.shape[ax]) if j == ax else (0, 0) for j in range(x.ndim)))

@shape_template(1)
def _tap_fold(g, spatial:tuple, ks:tuple, strides:tuple, dils:tuple):
  """the windows' gradient (N, C, *out, prod(ks)) -> (N, C, *spatial): each tap's slice put back on the rows it was read from and
  summed, one elementwise kernel, an axis at a time from the last (a sum over its k taps, then the next axis's k puts of that sum: a
  tap of the first axis gates the sum of a row of taps once). Autograd of the windows' view (_windows) folds through a reduce over k
  copies per axis instead (a kernel per axis, each with gated loads and no vector axis)"""
  v = g.reshape(tuple(g.shape[:-1]) + tuple(ks))  # (N, C, *out, *ks)
  for a in reversed(range(len(ks))):
    last, (i, k, s, d) = v.ndim - 1, (spatial[a], ks[a], strides[a], dils[a])
    v = functools.reduce(operator.add, [_strided_put(_spans(v, {last: (j, j+1)}).reshape(v.shape[:-1]), 2 + a, j*d, i, s) for j in range(k)])
  return v

@shape_template(1)
def _phase_windows(x, ks:tuple, strides:tuple, out:tuple):
  """the padded input (N, C, *spatial) written out once with its last axis split into the stride's phases, (N, C, q0, s0, ..., s_last,
  q_last) for rows q*s + b, and its windows as (N, C, *out, A0, s0, A1, s1, ...): tap a*s + b of an axis reads phase b at row o + a, so
  every load walks the output's rows with stride 1 (vectors), where the strided windows read every s-th element (b8 32x112x112 3x3
  stride 2 depthwise, the conv's kernel: 0.8-1.6 -> 0.5-0.65 ms). Each input row is written as its phases' rows side by side, so the copy
  reads and writes as locally as the padded copy it replaces. A = ceil(k/s) taps per phase: taps past k meet the weight's zeros
  (_phase_weight)"""
  nd, (n, c) = len(ks), x.shape[:2]
  taps = tuple(ceildiv(k, s) for k, s in zip(ks, strides))
  need = tuple(s * (o + a - 1) for s, o, a in zip(strides, out, taps))  # rows a phase's windows read, all phases together
  x = x.pad(((0, 0), (0, 0)) + tuple((0, max(0, m - i)) for i, m in zip(x.shape[2:], need)))
  x = x.shrink(((0, n), (0, c)) + tuple((0, m) for m in need))
  x = x.reshape((n, c) + tuple(v for m, s in zip(need, strides) for v in (m // s, s)))  # (N, C, q0, s0, q1, s1, ...)
  last = 2 + 2*(nd-1)
  x = x.permute(tuple(range(last)) + (last + 1, last)).contiguous()
  # (N, C, s0, ..., s_last, q0, ..., q_last): a view of that buffer, the phases as lead axes of the windows
  qs, ss = tuple(2 + 2*a for a in range(nd - 1)) + (last + 1,), tuple(3 + 2*a for a in range(nd - 1)) + (last,)
  win = _windows(x.permute((0, 1) + ss + qs), taps, (1,)*nd, (1,)*nd)  # (N, C, *strides, *out, *taps)
  order = (0, 1) + tuple(2 + nd + a for a in range(nd)) + tuple(v for a in range(nd) for v in (2 + 2*nd + a, 2 + a))
  return win.permute(order)

@shape_template(1)
def _phase_weight(weight, strides:tuple, lead:int=2):
  """(*lead axes, *ks) -> (*lead axes, A0, s0, A1, s1, ...): the kernel padded with zeros to A = ceil(k/s) taps of s per axis, tap a*s + b"""
  ks = tuple(weight.shape[lead:])
  taps = tuple(ceildiv(k, s) for k, s in zip(ks, strides))
  w = weight.pad(((0, 0),)*lead + tuple((0, a*s - k) for a, s, k in zip(taps, strides, ks)))
  return w.reshape(tuple(weight.shape[:lead]) + tuple(v for a, s in zip(taps, strides) for v in (a, s)))

def _phased(x, weight, groups:int, strides:tuple, dils:tuple, out:tuple) -> bool:
  """whether the direct form reads a strided conv through its phases: its vectors run along the output's rows (fewer output channels
  per group than a panel: a depthwise conv; more are packed into panels of output channels and broadcast each pixel), undilated, and
  its output rows hold two panels of lanes or more: a shorter row's copy is mostly the padded borders its loop peels, once per channel
  (b8 144x56x56 stride 2, rows of 28: the copy 0.4 -> 0.7 ms, the conv level). Not where the weight takes a gradient: its reduce then
  runs over A*s taps per axis in 2-lane tiles (16 for a 3x3 stride 2, b8 32x112x112: 0.63 -> 1.8-2.4 ms)"""
  from tinygrad.schedule.pack import WIDE
  return any(s > 1 for s in strides) and all(d == 1 for d in dils) and weight.shape[0] // groups < WIDE and out[-1] >= 2 * WIDE and \
    all(isinstance(v, int) for v in tuple(x.shape)) and not _wants_grad(weight)

def _out_size(i:int, k:int, s:int, d:int, lo:int, hi:int) -> int: return (i + lo + hi - d*(k-1) - 1)//s + 1

def _out_sizes(spatial:tuple, ks:tuple, strides:tuple, dils:tuple, pads:list) -> tuple:
  nd = len(ks)
  return tuple(_out_size(i, k, s, d, pads[2*(nd-1-a)], pads[2*(nd-1-a)+1]) for a, (i, k, s, d) in enumerate(zip(spatial, ks, strides, dils)))

def _im2col_pays(n:int, cin:int, ks:tuple, strides:tuple, dils:tuple, pads:list, spatial:tuple) -> bool:
  """whether the windows are worth writing out as a (N*out, Cin*prod(ks)) matrix: when the direct form has no vector axis (the last
  output axis strided or not a whole number of vectors) and the matrix is not huge. Then the forward and both gradients are matmuls
  whose reduce or output axis is that matrix's stride-1 row of Cin*prod(ks)"""
  if not all(isinstance(v, int) for v in (n, cin) + tuple(spatial)): return False
  out = _out_sizes(spatial, ks, strides, dils, pads)
  if min(out) <= 0: return False
  vectorizable = strides[-1] == 1 and out[-1] % VECTOR_LANES == 0
  return not vectorizable and prod(ks) > 1 and n * prod(out) * cin * prod(ks) <= IM2COL_MAX_ELEMENTS

# set while a conv's input gradient is built: its own convs take the forward forms (a gradient through them, second order, is still right)
_in_gradient = contextvars.ContextVar("conv_in_gradient", default=False)

def _wants_grad(t) -> bool:
  """a gradient will flow into t: it requires one, or its graph holds a tensor that does (the conv's form depends on it)"""
  from tinygrad.tensor import _on_grad_path
  return not _in_gradient.get() and (bool(t.requires_grad) or _on_grad_path(t.uop))

def _input_gradient(g, weight, spatial:tuple, groups:int, strides:tuple, dils:tuple, pads:list):
  """conv2d's gradient with respect to its input: the output gradient conv_transposed with the weight (a conv of the stride-dilated
  gradient with the flipped, transposed weight), cut to the input from the padded input. Autograd of the windows instead writes every
  tap of every input element and sums them (b8 64->64 56x56 3x3: 58 MB, ~40 ms)"""
  # the padded input's rows past the last window (stride > 1) are output_padding, gradient 0
  extra = [i + lo + hi - ((o-1)*s + d*(k-1) + 1)
           for i, o, s, d, k, (lo, hi) in zip(spatial, g.shape[2:], strides, dils, weight.shape[2:], _pad_pairs(pads, len(spatial)))]
  token = _in_gradient.set(True)
  try: return g.conv_transpose2d(weight, None, groups, strides, dils, pads, extra)
  finally: _in_gradient.reset(token)

def _own_input_gradient(x, pads:list) -> bool:
  """whether the direct form's input gradient is _input_gradient's conv: a gradient flows into x, on one device, of concrete sizes"""
  return isinstance(x.device, str) and min(pads) >= 0 and all(isinstance(v, int) for v in x.shape) and _wants_grad(x)

def _cols_in_panels(weight, groups:int, pixels:int, kk:int) -> bool:
  """whether the window buffer is written panel-major: the weight's gradient, a (Cout, kk) sum over pixels, vectorizes along kk and
  would have schedule/pack.py copy the buffer into panels of kk anyway (a second pass over the biggest buffer of the step: b8 128->128
  28x28, windows + panels 4.8 + 6.9 -> 7.3 ms; the forward that reads them, +0.5-1)"""
  from tinygrad.schedule.pack import packs_along, WIDE
  # pack.py's own rule: panels as wide as the row, re-read by as many output channels
  if kk % WIDE or weight.shape[0] // groups < WIDE or not _wants_grad(weight): return False
  return packs_along(weight.device, kk, pixels * kk * weight.shape[0])

def _panel_major(cols):
  """(N, *out, Cin, taps) windows as a view of their copy in panels (Cin*taps//WIDE, pixels, WIDE): pack.py's panel layout for the
  weight gradient's kk axis, written by the windows' own copy. The forward's reduce over kk still reads runs of WIDE floats. The pixel
  axes are merged into one: kept apart, the copy's kernel ran 2.3x slower (b8 128x28x28: 7.3 -> 17 ms)"""
  from tinygrad.schedule.pack import WIDE
  shape = cols.shape
  panels = cols.reshape(prod(shape[:-2]), prod(shape[-2:]) // WIDE, WIDE).permute(1, 0, 2).contiguous()
  return panels.permute(1, 0, 2).reshape(shape)

def _im2col_conv(x, weight, bias, groups:int, ks:tuple, strides:tuple, dils:tuple, dtype):
  """conv2d as a matmul over a buffer of its windows, (N, *out, Cin, *ks): forward sums over that buffer's stride-1 row, the weight's
  gradient reads it row by row into a (Cout, Cin*prod(ks)) result, the windows' gradient is a matmul with the weight whose stride-1 axis
  is that row too (then folded back onto the input, _tap_fold)"""
  from tinygrad.schedule.pack import packs_along
  nd, n, cout = len(ks), x.shape[0], weight.shape[0]
  kk = weight.shape[1] * prod(ks)
  out = tuple(_out_size(i, k, s, d, 0, 0) for i, k, s, d in zip(x.shape[2:], ks, strides, dils))
  # the copy reads the windows' view, whose address is affine in the pixel and the tap, and takes _tap_fold's gradient. As a stack of one
  # slice per tap, its gradient as is, the copy was a sum of prod(ks) gated loads, merged into one load whose tap is picked by a compare
  # and select per tap (codegen/disjoint_gather.py), in the innermost loop (b8 3x224x224 7x7 stride 2, 49 taps: 600-800 -> 7 ms)
  flows = _wants_grad(x)
  win = _windows(x.detach() if flows else x, ks, strides, dils)
  win = win.reshape(tuple(win.shape[:2+nd]) + (prod(ks),))  # (N, Cin, *out, prod(ks))
  if flows: win = win._custom_gradient((x,), lambda g: (_tap_fold(g, tuple(x.shape[2:]), ks, strides, dils),))
  # its gradient (a matmul) is written out too: the fold reads each element once, where a view would redo the matmul per tap
  cols = win.permute((0,) + tuple(range(2, 2+nd)) + (1, 2+nd))
  cols = _panel_major(cols) if _cols_in_panels(weight, groups, n * prod(out), kk) else cols.contiguous()
  cols = cols.reshape((n,) + out + (groups, 1, kk)).contiguous_backward()
  w = weight.reshape(groups, cout//groups, kk)
  # a row of fewer than two vectors (conv-1's 9 taps) gives the weight gradient, a (Cout, kk) sum over every pixel, no vector axis
  # along kk: Cout is its vector axis instead, so the output's gradient is written channels-last (Cout read with stride 1) and the weight's
  # as (kk, Cout) (Cout stored with stride 1: LLVM's SLP vectorizer builds its vectors from consecutive stores), then transposed (MNIST
  # conv-1, 1 thread: 3.7 -> 0.9 ms). A longer row is packed into panels (schedule/pack.py) and vectorizes along kk; there the NCHW gradient
  # streams better (conv-2: +1.3 ms)
  short_row = kk < 2 * VECTOR_LANES
  if short_row: w = w.permute(0, 2, 1).contiguous_backward().permute(0, 2, 1)
  ret = (cols * w.reshape((1,)*(1+nd) + (groups, cout//groups, kk))).sum(-1, dtype=dtype).reshape((n,) + out + (cout,))
  if bias is not None: ret = ret + bias
  # a longer row's forward is written channels-last as well where its weight is packed into panels of Cout (schedule/pack.py), a buffer of
  # its own: stored through the NCHW permute, the matmul's stride-1 store axis would be the output row instead of its Cout panels
  # (b8 128->128 28x28: 87 -> 5.7 ms, 23 -> 350 GFLOP/s)
  if short_row: ret = ret.contiguous_backward()
  elif packs_along(x.device, cout // groups, n * prod(out) * kk * cout): ret = ret.contiguous()
  return ret.permute((0, 1+nd) + tuple(range(1, 1+nd)))

def _depthwise(weight, groups:int) -> bool:
  """one input channel per group (a depthwise conv, any multiplier): each window is read by fewer output channels than a panel"""
  from tinygrad.schedule.pack import WIDE
  return weight.shape[1] == 1 and weight.shape[0] // groups < WIDE

def _direct_forward(x, weight, groups:int, out:tuple) -> bool:
  """a conv that skips im2col's window buffer (prod(kernel) times the input, written and read once) for the direct form, which reads
  the padded input from cache. Where a gradient will flow, im2col stays except for a depthwise conv: its gradients are matmuls, the
  direct form's are not (the MNIST training step: 10 -> 44 ms with the direct form); a depthwise conv's matmuls have one output channel
  per window, and its direct form's gradients are a depthwise conv (_input_gradient) and a reduce per tap (b8 256x28x28 3x3, forward
  and both gradients: 108 -> ~6 ms on a loaded host). Without a gradient it is always the direct form: where im2col was kept for one
  (a conv too small for packed panels, with no vector axis along its rows) its window copy cost more than the direct form's missing
  vectors, more so with more taps (each element of that copy picked its tap among all of them): kernels alone, batch 1, im2col -> direct:
  64->64 28x28 3x3 6.75 -> 0.33 ms, 64->64 32x32 3x3 stride 2 0.38 -> 0.27, a 7x7 stride-2 stem on 3x64x64 2.42 -> 0.25, 16->32
  32x32 5x5 stride 2 1.55 -> 0.11 (torch 0.14-0.31); the graph build of 49 taps took 1.2 ms of python more. Bigger convs took the direct
  form already: fewer output channels per group than a panel (a depthwise conv, ResNeXt's groups of 4), or a direct form that
  vectorizes along the output channels (schedule/pack.py packs the weight into panels of them: ResNet's 3x3 convs at 28x28 and below,
  a 7x7 stride-2 stem at batch 8: 6-20 -> 120-260 GFLOP/s)"""
  if not all(isinstance(v, int) for v in tuple(x.shape) + out): return False
  if _wants_grad(x) or _wants_grad(weight): return _depthwise(weight, groups)
  return True

def _direct_trains(x, weight, ks:tuple, strides:tuple, pads:list, out:tuple) -> bool:
  """a conv whose input takes a gradient keeps the direct form where its rows hold two vectors or more (stride 1 along them) and so do
  the weight gradient's rows of Cin/groups*taps: its input gradient is then a conv (_input_gradient) and its weight gradient a reduce
  per image that vectorizes, where im2col writes and reads a window buffer prod(kernel) times the input for both (b8 3x3: 128->128
  28x28 161 -> 60 ms of kernels, 64->64 28x28 27 -> 5, 128->128 26x26 111 -> 77). Shorter rows (14x14, MNIST's 11x11) keep im2col: the
  per-image reduce over them has no vector axis (b8 256->256 14x14: 115 -> 500 ms); so do one-channel convs (MNIST's conv-1: 9 taps)"""
  return strides[-1] == 1 and out[-1] >= 2 * VECTOR_LANES and weight.shape[1] * prod(ks) >= 2 * VECTOR_LANES and _own_input_gradient(x, pads)

def _pointwise_conv(x, weight, bias, groups:int, strides:tuple, dtype):
  """a 1x1 conv without padding: a matmul per image over the pixels as one axis. Kept as rows and columns, a row of 56 pixels is packed
  (schedule/pack.py) in panels of 16 padded to 64, an eighth of the work for nothing (b8 64->64 56x56: 2.4 -> 2.1 ms). A strided one
  writes its pixels out first: the pixels of a strided view as one axis are no affine address, which neither the pack copy nor the tile
  can use (b8 256->512 56x56 stride 2: 7.5 -> 6.7 ms with the copy)"""
  nd = len(strides)
  sp = _out_sizes(tuple(x.shape[2:]), (1,)*nd, strides, (1,)*nd, [0]*2*nd)
  for a, s in enumerate(strides): x = _strided_take(x, 2 + a, 0, sp[a], s)
  if any(s > 1 for s in strides): x = x.contiguous()
  n, cout, cin_g = x.shape[0], weight.shape[0], weight.shape[1]
  flat = x.reshape(n, groups, 1, cin_g, prod(sp))
  ret = (flat * weight.reshape(1, groups, cout//groups, cin_g, 1)).sum(3, dtype=dtype).reshape((n, cout) + sp)
  return ret if bias is None else ret + bias.reshape((1, cout) + (1,)*len(sp))

def _weight_grad_per_image(x, weight, out:tuple) -> bool:
  """whether the direct form's weight gradient is summed per image first, then over the images (a small second kernel): in one reduce
  over every pixel of the batch, each register tile of the weight gradient streams the whole output gradient, past L2 from L3 once per
  tile; one image's share stays in L2 (b8 64->64 56x56 3x3, the weight gradient 15.5 -> 7.0 ms at 2 threads). Where one image's is past
  L2 too, both orders stream it from L3 (b4 64->64 112x112: no gain seen)"""
  from tinygrad.codegen.opt.heuristic import L2_BYTES
  if not _wants_grad(weight) or not all(isinstance(v, int) for v in tuple(x.shape) + out): return False
  image = weight.shape[0] * prod(out) * weight.dtype.itemsize
  return x.shape[0] > 1 and x.shape[0] * image > L2_BYTES >= image

class _AxisPhases(NamedTuple):
  """one spatial axis of a conv_transpose split into its stride's phases. Output o sits at u = o + the padding before = s*v + r of the full
  (uncropped) output; phase r holds the taps j = r, r + s, r + 2s, ... (input i = v - m for tap r + m*s). Every phase's taps end at
  offset 0 (m = 0), so one conv with `taps` = ceil(k / s) taps (a shorter phase gets zeros before its own) computes v for all of
  them at the same position: the interleave is a reshape, not a gather"""
  s: int
  d: int
  k: int
  taps: int
  pads: tuple     # (before, after) around the input for the conv: negative cuts
  size: int       # the conv's output size: v0 .. v0 + size - 1, from the first v an output needs (v0)
  crop: int       # u - s*v0 of output 0
  out: int        # conv_transpose's output size

def _phase_taps(spatial:tuple, ks:tuple, strides:tuple, dils:tuple, pads:tuple, out_pads:tuple, pads_after:tuple|None=None) -> tuple|None:
  """the per-axis phases of a strided conv_transpose whose output is cropped by pads before each axis and pads_after after it (pads
  again where None), or None where the zero-stuffed form stays: no stride, a symbolic size or a kernel dilated along a strided axis
  (its phases' taps end at different offsets). A kernel shorter than the stride leaves phases without taps: their sub-kernel is zeros"""
  if all(s == 1 for s in strides) or not all(isinstance(v, int) for v in spatial): return None
  if any(s > 1 and d > 1 for s, d in zip(strides, dils)): return None
  ret = []
  for i, k, s, d, lo, hi, op in zip(spatial, ks, strides, dils, pads, pads if pads_after is None else pads_after, out_pads):
    out = (i-1)*s - lo - hi + d*(k-1) + op + 1
    if out <= 0: raise ValueError(f"conv_transpose2d of an axis of size {i} with kernel {k}, stride {s}, padding {(lo, hi)} has no output")
    taps, v0, v1 = ceildiv(k, s), lo // s, (lo + out - 1) // s
    ret.append(_AxisPhases(s, d, k, taps, (d*(taps-1) - v0, v1 - (i-1)), v1 - v0 + 1, lo - s*v0, out))
  return tuple(ret)

# a kernel no multiple of the stride is split into classes of phases (_tap_classes) where that skips at least this many products with
# zeros and no gradient flows: each class is a conv of its own, with its Python, scheduling and kernels (3x3 stride 2 at one thread,
# CPU time: b8 64->64 28x28, 1.9e8 skipped, forward 14.6 -> 13.0 ms on a loaded host; 128->64, 3.9e8, 14.6 -> 11.4 ms quiet). With both
# gradients each class's are convs and matmuls of their own too: 128->64 25.5 -> 29.5 ms
MIN_SKIPPED_MACS = 1 << 28

def _tap_classes(ph:_AxisPhases, split:bool) -> list[tuple[int, int, int]]:
  """an axis's phases as ranges [r0, r1) of the same number of taps n: where the kernel is no multiple of the stride (3 at stride 2:
  phase 0 has taps 0 and 2, phase 1 tap 1) and `split`, the longer ones, then the shorter ones, each its own conv so that no tap
  multiplies a zero (3x3 stride 2: 9 of 16 products). Else one class: its shorter phases (none with no taps: a kernel shorter than the
  stride) get zero taps"""
  if not split or ph.k % ph.s == 0 or ph.taps == 1: return [(0, ph.s, ph.taps)]
  return [(0, ph.k % ph.s, ph.taps), (ph.k % ph.s, ph.s, ph.taps - 1)]

def _phase_conv_transpose(x, weight, bias, groups:int, phases:tuple):
  """a strided conv_transpose as stride-1 convs of the input (not the zero-stuffed one, prod(stride) times bigger, whose products
  with the zeros are most of the work) against the phases' sub-kernels stacked along the output channels, one conv per class of phases
  with as many taps (_tap_classes), then the phases interleaved by a reshape (b8 64->32 28x28 4x4 stride 2: 4x fewer multiply-adds)"""
  nd, n = len(phases), x.shape[0]
  cin, cout_g, *ks = weight.shape
  # per axis, tap j = m*s + r of phase r (the kernel padded with zeros to taps*s: a phase with fewer taps gets zeros at m's top, where
  # a shorter kernel has none) is the conv's tap taps-1-m: a pad, a reshape and a flip, so the sub-kernels are a view of the weight
  w = _phase_weight(weight.reshape((groups, cin // groups, cout_g) + tuple(ks)), tuple(ph.s for ph in phases), 3)
  w = w.flip(tuple(3 + 2*a for a in range(nd)))
  # -> (groups, *phases, Cout/groups, Cin/groups, *taps), written out once (prod(kernel) x Cin x Cout floats): schedule/pack.py packs
  # only a weight with an affine address, which a class's slice of it is
  w = w.permute((0,) + tuple(4 + 2*a for a in range(nd)) + (2, 1) + tuple(3 + 2*a for a in range(nd)))
  w = w.reshape(prod(w.shape[:2 + nd]), prod(w.shape[2 + nd:])).contiguous().reshape(w.shape)
  # negative pads cut the input first. With one class conv2d pads (and writes out) the rest itself; with more the input is padded for
  # the longest taps and written out once, and a class with n taps starts d*(taps - n) into it
  x = _spans(x, {2 + a: (max(0, -ph.pads[0]), x.shape[2 + a] - max(0, -ph.pads[1])) for a, ph in enumerate(phases)})
  flat = [max(0, v) for ph in reversed(phases) for v in ph.pads]
  # products with zeros per pixel, input and output channel that classes skip: s*taps per axis in one conv, k once the axis is split
  zeros = prod(ph.s * ph.taps for ph in phases) - prod(ph.k if len(_tap_classes(ph, True)) > 1 else ph.s * ph.taps for ph in phases)
  split = n * prod(ph.size for ph in phases) * cin * cout_g * zeros >= MIN_SKIPPED_MACS and not (_wants_grad(x) or _wants_grad(weight))
  per_axis = [_tap_classes(ph, split) for ph in phases]
  if prod(len(c) for c in per_axis) > 1 and any(flat): x, flat = x.pad(flat).contiguous(), [0]*2*nd
  blocks = {}
  for key in itertools.product(*[range(len(c)) for c in per_axis]):
    cls = tuple(c[i] for c, i in zip(per_axis, key))
    wc = _spans(w, {ax: span for a, (ph, (r0, r1, nt)) in enumerate(zip(phases, cls))
                    for ax, span in ((1 + a, (r0, r1)), (3 + nd + a, (ph.taps - nt, ph.taps)))})
    xc = _spans(x, {2 + a: (ph.d*(ph.taps - nt), x.shape[2 + a]) for a, (ph, (_, _, nt)) in enumerate(zip(phases, cls))})
    blocks[key] = _class_conv(xc, wc, groups, phases, flat)
  # the classes' blocks (N, groups, *their phases, Cout/groups, *sizes) joined along each phase axis, the last axis first
  for a in reversed(range(nd)):
    merged: dict = {}
    for key in sorted(blocks): merged.setdefault(key[:a], []).append(blocks[key])
    blocks = {k: v[0].cat(*v[1:], dim=2 + a) if len(v) > 1 else v[0] for k, v in merged.items()}
  # (N, groups, *phases, Cout/groups, *sizes) -> (N, groups, Cout/groups, size0, s0, size1, s1, ...) -> (N, Cout, *out)
  y = blocks[()].permute((0, 1, 2 + nd) + tuple(i for a in range(nd) for i in (3 + nd + a, 2 + a)))
  y = y.reshape((n, groups * cout_g) + tuple(ph.size * ph.s for ph in phases))
  y = y.shrink(((0, n), (0, groups * cout_g)) + tuple((ph.crop, ph.crop + ph.out) for ph in phases))
  return y if bias is None else y + bias.reshape((1, groups * cout_g) + (1,)*nd)

def _class_conv(x, w, groups:int, phases:tuple, flat:list):
  """one class of phases' conv: x (N, Cin, ...) from the class's first tap, w its sub-kernels (groups, p0, p1, ..., Cout/groups,
  Cin/groups, *taps) -> (N, groups, p0, p1, ..., Cout/groups, *sizes)"""
  from tinygrad.schedule.pack import packs_along
  nd, n = len(phases), x.shape[0]
  counts, (cout_g, cin_g), taps = tuple(w.shape[1:1 + nd]), w.shape[1 + nd:3 + nd], tuple(w.shape[3 + nd:])
  # the gradient of the class's weight is written out as the (Cout, Cin * taps) matrix im2col's weight gradient is: left a view, the
  # gather back to the kernel's taps fused that matmul once per tap (b8 64->32 28x28 4x4 s2: 1 s); as (Cout, Cin, *taps), its reduce
  # ran along the panels' axes split apart (51 against 12 ms of one core)
  rows = groups * prod(counts) * cout_g
  w = w.reshape(rows, cin_g * prod(taps)).contiguous_backward().reshape((rows, cin_g) + taps)
  sizes = tuple(ph.size for ph in phases)
  out = x.conv2d(w, None, groups, 1, tuple(ph.d for ph in phases), flat)  # (N, groups * phases * Cout/groups, *sizes)
  # the conv is written out before the interleave: left a view, its reduce runs over the interleaved output, each element's phase picking
  # its sub-kernel by index math (b8 128->64 28x28 2x2 s2: 34 against 90 GFLOP/s). A direct conv whose weight is packed along the output
  # channels (schedule/pack.py) is written channels-last by the pack already; a pointwise one is a matmul per image, written with its pixels
  # as one axis, as conv2d's own is
  if not packs_along(x.device, rows, n * prod(sizes) * rows * cin_g * prod(taps), (n,) + sizes) or all(t == 1 for t in taps):
    out = out.reshape(n, rows, prod(sizes)).contiguous().reshape(out.shape)
  # its gradient is written out once, channels-last: read through the interleave and the crop's zeros, it was a gated load in both of its
  # gradient's matmuls, and NCHW the input gradient's reduce over the channels strides (b8 64->32 28x28 4x4 s2, one core: the weight
  # gradient 39 -> 4 ms, the input gradient's matmul 7 ms as before)
  # (only where one flows: in the forward graph it would stand between the realized result and the conv's buffer it views)
  if _wants_grad(x) or _wants_grad(w):
    last = (0,) + tuple(range(2, 2 + nd)) + (1,)
    out = out.permute(last).contiguous_backward().permute(tuple(last.index(i) for i in range(2 + nd)))
  return out.reshape((n, groups) + counts + (cout_g,) + sizes)

@shape_template(2)
def _window_products(x, wt, groups:int, out:tuple, per_image:bool, dtype):
  """windows (N, Cin, *out, *taps) times the weight (Cout, Cin/groups, *taps), summed over each window: (N, Cout, *out). per_image: the
  weight gradient is summed per image first (_weight_grad_per_image)"""
  n, nd, (cout, cin_g, *taps) = x.shape[0], len(out), wt.shape
  x = x.reshape((n, groups, 1, cin_g) + out + tuple(taps))
  w = wt.reshape((1, groups, cout//groups, cin_g) + (1,)*nd + tuple(taps))
  if per_image: w = w.expand((n,) + w.shape[1:]).contiguous_backward()
  return (x * w).sum((3,) + tuple(range(4+nd, 4+nd+len(taps))), dtype=dtype).reshape((n, cout) + out)

class TensorConvMixin:
  def conv2d(self, weight, bias=None, groups:int=1, stride=1, dilation=1, padding=0, dtype=None):
    """cross-correlation like torch's conv2d, over as many spatial axes as weight has after (Cout, Cin/groups)"""
    cout, cin_g, *ks = weight.shape
    nd, ks = len(ks), tuple(ks)
    # a symbolic batch runs; the windows and the channel check need concrete sizes
    self._int_axes("conv2d", range(1, self.ndim)); weight._int_axes("conv2d's weight", range(weight.ndim))
    groups = _groups(groups)
    if self.ndim != nd + 2 or self.shape[1] != groups*cin_g or cout % groups:
      raise ValueError(f"conv2d of input {tuple(self.shape)} with weight {tuple(weight.shape)} and groups={groups}: "
                       f"the input needs {nd+2} dims and {groups}*{cin_g} channels, and {cout} output channels must split into {groups} groups")
    strides, dils = _per_axis(stride, nd, "stride", 1), _per_axis(dilation, nd, "dilation", 1)
    pads = _flat_pads(padding, ks, dils, strides)
    if _im2col_pays(self.shape[0], self.shape[1], ks, strides, dils, pads, self.shape[2:]) and \
       not _direct_forward(self, weight, groups, out := _out_sizes(self.shape[2:], ks, strides, dils, pads)) and \
       not _direct_trains(self, weight, ks, strides, pads, out):
      # the input's gradient, a sum of shifted views of the windows' gradient, is written out once: left as a view it fuses into the
      # consumer (a pool's backward reads each input element several times) and the taps are summed again for each read. It is written
      # channels-last, so that the fold walks the windows' gradient along its rows of (Cin, taps) instead of one row per element
      # (the MNIST step's conv-2 fold: 2.6-7 -> 1.4-1.6 ms; the pool backward that reads it channels-last, +0.3)
      last = (0,) + tuple(range(2, self.ndim)) + (1,)
      x = self.permute(last).contiguous_backward().permute(tuple(last.index(i) for i in range(self.ndim)))
      return _im2col_conv(x.pad(pads), weight, bias, groups, ks, strides, dils, dtype)
    if all(k == 1 for k in ks) and not any(pads) and all(isinstance(v, int) for v in self.shape):
      return _pointwise_conv(self, weight, bias, groups, strides, dtype)
    # every input element is read once per output channel and tap: through a padded view each read is a gated load (a compare and two
    # selects per lane, no vector loads along a row), so the padded input is written out once and the windows read plain memory
    # where a gradient flows into the input, it is one conv (_input_gradient) rather than autograd of the windows
    own = _own_input_gradient(self, pads)
    src = self.detach() if own else self
    out = _out_sizes(tuple(self.shape[2:]), ks, strides, dils, pads)
    if _phased(self, weight, groups, strides, dils, out):
      x, wt = _phase_windows(src.pad(pads), ks, strides, out), _phase_weight(weight, strides)  # (N, Cin, *out, A0, s0, ...)
    else: x, wt = _windows(src.pad(pads).contiguous() if any(pads) else src, ks, strides, dils), weight  # (N, Cin, *out, *ks)
    ret = _window_products(x, wt, groups, out, _weight_grad_per_image(self, weight, out), dtype)
    if own:
      spatial = tuple(self.shape[2:])
      ret = ret._custom_gradient((self,), lambda g: (_input_gradient(g, weight, spatial, groups, strides, dils, pads).cast(self.dtype),))
    return ret if bias is None else ret + bias.reshape((1, cout) + (1,)*nd)
  def conv_transpose2d(self, weight, bias=None, groups:int=1, stride=1, dilation=1, padding=0, output_padding=0):
    """the gradient of conv2d with respect to its input, like torch's conv_transpose2d; weight is (Cin, Cout/groups, *kernel). padding
    crops the output: an int, one per spatial axis, or conv2d's flat (left, right, top, bottom, ...), last axis first"""
    cin, cout_g, *ks = weight.shape
    nd = len(ks)
    self._int_axes("conv_transpose2d", range(1, self.ndim)); weight._int_axes("conv_transpose2d's weight", range(weight.ndim))
    groups = _groups(groups)
    if self.ndim != nd + 2 or self.shape[1] != cin or cin % groups:
      raise ValueError(f"conv_transpose2d of input {tuple(self.shape)} with weight {tuple(weight.shape)} and groups={groups}: "
                       f"the input needs {nd+2} dims and {cin} channels, divisible by groups")
    strides, dils = _per_axis(stride, nd, "stride", 1), _per_axis(dilation, nd, "dilation", 1)
    if isinstance(padding, str): raise ValueError(f"conv_transpose2d takes no padding string ({padding!r}): give the amounts to crop")
    before, after = zip(*_pad_pairs(_flat_pads(padding, tuple(ks), dils, strides), nd))
    out_pads = _per_axis(output_padding, nd, "output_padding")
    if (phases := _phase_taps(tuple(self.shape[2:]), tuple(ks), strides, dils, before, out_pads, after)) is not None:
      return _phase_conv_transpose(self, weight, bias, groups, phases)
    x = self
    for a, s in enumerate(strides):  # s-1 zeros between neighbours
      if s == 1: continue
      n, ax = x.shape[2+a], 2+a
      x = x.unsqueeze(ax+1).pad(tuple((0, s-1) if j == ax+1 else None for j in range(x.ndim+1))).flatten(ax, ax+1)
      x = x.shrink(tuple((0, (n-1)*s+1) if j == ax else None for j in range(x.ndim)))
    w = weight.reshape((groups, cin//groups, cout_g) + tuple(ks)).transpose(1, 2).reshape((groups*cout_g, cin//groups) + tuple(ks))
    w = w.flip(tuple(range(2, 2+nd)))
    flat = [p for k, d, lo, hi, op in reversed(list(zip(ks, dils, before, after, out_pads))) for p in (d*(k-1)-lo, d*(k-1)-hi+op)]
    return x.conv2d(w, bias, groups, 1, dils, flat)
