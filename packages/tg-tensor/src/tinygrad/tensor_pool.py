"""Pooling over the last len(kernel_size) axes, like torch's: windows of the (padded) input reduced by max or mean, and max_unpool2d,
which puts values back at the positions max_pool2d's indices name."""
from __future__ import annotations
import itertools
from tinygrad.dtype import dtypes
from tinygrad.helpers import prod
from tinygrad.tensor_conv import _ints, _per_axis, _flat_pads, _windows, _wants_grad, _pad_after, _cut

# avg_pool2d's gradient flows back through its windows (max_pool2d's has its own, _max_pool_grad). 3-wide windows of stride 2 make 2 runs
# per axis: 1-D and 2-D pools (3x3 s2 gradient 16 -> 7 ms, 1-D k5 s2 18 -> 5 ms CPU, measured on the max pool)
POOL_MAX_RUNS = 4

def _kernel(kernel_size) -> tuple:
  return _per_axis(k := _ints(kernel_size, "kernel_size"), 2 if isinstance(k, int) else len(k), "kernel_size", 1)

def _pool_geometry(x, op:str, kernel_size, stride, dilation, padding, ceil_mode:bool):
  """(kernel, strides, dilations, flat user padding, flat extra padding after each axis for ceil_mode)"""
  ks = _kernel(kernel_size)
  nd, shape = len(ks), x.shape
  if len(shape) < nd: raise ValueError(f"pooling with kernel {ks} needs at least {nd} dims, got shape {tuple(shape)}")
  x._int_axes(op, range(len(shape) - nd, len(shape)))  # the windows' count and the padding are worked out from the pooled axes' sizes
  strides = _per_axis(ks if stride is None else _ints(stride, "stride"), nd, "stride", 1)
  dils = _per_axis(_ints(dilation, "dilation"), nd, "dilation", 1)
  pads = _flat_pads(padding, ks, dils, strides)
  extra = [0]*2*nd
  if ceil_mode:
    for a, (i, k, s, d) in enumerate(zip(shape[-nd:], ks, strides, dils)):
      before, after = pads[2*(nd-1-a)], pads[2*(nd-1-a)+1]
      span = i + before + after - d*(k-1) - 1
      o = -(-span // s) + 1
      if (o-1)*s >= i + before: o -= 1  # the last window must start inside the input or the left padding, like torch
      extra[2*(nd-1-a)+1] = max(0, (o-1)*s + d*(k-1) + 1 - (i + before + after))
  return ks, strides, dils, pads, extra

def _spread(v, ax:int, first:int, n:int, s:int, d:int, size:int):
  """the transpose of a run of windows (tensor_conv._disjoint_window of taps first..first+n-1, spanning at most the stride): axis ax of
  o windows as `size` positions, window t's value at t*s + (first+i)*d for each i < n, zeros elsewhere. A position holds at most one
  window's value, so it is a view (expand, pad, reshape), no sum"""
  o, pre, post = v.shape[ax], tuple(v.shape[:ax]), tuple(v.shape[ax+1:])
  v = v.unsqueeze(ax+1).expand(pre + (o, n) + post)
  if d > 1: v = _cut(_pad_after(v.unsqueeze(ax+2), ax+2, d-1).reshape(pre + (o, n*d) + post), ax+1, d*(n-1) + 1)
  v = _pad_after(v, ax+1, s - v.shape[ax+1]).reshape(pre + (o*s,) + post)
  v = v.pad(tuple((first*d, 0) if a == ax else (0, 0) for a in range(v.ndim)))
  # past the last window's last tap there are only zeros to cut
  return _pad_after(v, ax, size - v.shape[ax]) if v.shape[ax] <= size else _cut(v, ax, size)

def _max_pool_grad(x, top, g, ks:tuple, strides:tuple, dils:tuple):
  """the gradient of top = the max of each window of x (the padded input), given top's gradient g: a window's g split evenly among its
  elements equal to its max (upstream tinygrad's choice; torch's goes to the first), a NaN max's among its NaNs. Autograd of the windows
  wrote each window's mask of hits out (9 bytes a window for 3x3) and scattered it back through byte loads that LLVM gathers with SSE4a
  insertq, 0.17 us each after AVX code on this host (ResNet's stem pool, 16x64x112x112: 0.8 s). Here each element is compared with the
  max of each window it is in, that max and the window's share of g spread onto the input's positions by views (_spread), one run of
  taps at a time: an elementwise kernel that reads x, the maxes and the shares, after one that counts each window's hits (over unstacked
  windows: over stacked ones, 16x64x112x112's count took 105 ms against 12)"""
  nl = x.ndim - len(ks)
  # max propagates NaN: every window of a NaN has a NaN max, which equals nothing
  def hit(a, m): return a.eq(m) | a.isnan()
  # a buffer: fused into the scatter, g / count was divided once per element and run (3x3 s2 16x64x112x112: 48 -> 37 ms)
  share = (g / hit(x._pooled(ks, strides, dils), top.unsqueeze(-1)).cast(g.dtype).sum(-1)).contiguous()
  # runs of taps that each span at most the stride (tensor_conv._stacked_window's): in a run, an element is in one window at most
  runs = [[(j, min(k, j + (s-1)//d + 1) - j) for j in range(0, k, (s-1)//d + 1)] for k, s, d in zip(ks, strides, dils)]
  grad = None
  for combo in itertools.product(*runs):
    m, q = top, share
    for a, ((j, n), s, d) in enumerate(zip(combo, strides, dils)):
      m, q = (_spread(t, nl + a, j, n, s, d, x.shape[nl + a]) for t in (m, q))
    term = hit(x, m).where(q, 0)  # q is 0 where no window of the run covers the position
    grad = term if grad is None else grad + term
  return grad

class TensorPoolMixin:
  def _pooled(self, ks, strides, dils, stack:bool=False):
    """windows flattened: (*lead, *out, prod(ks)). `stack` (where autograd will run through them) stacks them from disjoint runs where that
    is cheap (tensor_conv._windows): a faster gradient for a slower forward (3x3 s2 2x64x112x112: 1.3 -> 1.5 ms CPU), so not without one"""
    w = _windows(self, ks, strides, dils, max_runs=POOL_MAX_RUNS if stack else 1)
    return w.reshape(tuple(w.shape[:w.ndim-len(ks)]) + (prod(ks),))
  def unfold(self, dim:int, size:int, step:int):
    """windows of `size` elements every `step` along dim: dim becomes the window count and a last axis of `size` is added (torch's)"""
    dim, nd = self._resolve_dim(dim), self.ndim
    self._int_axes("unfold", (dim,))
    if not (isinstance(size, int) and isinstance(step, int)) or size < 0 or step <= 0 or size > self.shape[dim]:
      raise ValueError(f"unfold needs 0 <= size <= {self.shape[dim]} (axis {dim} of {tuple(self.shape)}) and step > 0, got size={size}, step={step}")
    w = _windows(self.permute(tuple(d for d in range(nd) if d != dim) + (dim,)), (size,), (step,), (1,))  # (*others, windows, size)
    return w.permute(tuple(range(dim)) + (nd - 1,) + tuple(range(dim, nd - 1)) + (nd,))
  def max_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0, ceil_mode:bool=False, return_indices:bool=False):
    """max over windows; return_indices adds each max's flat position within its channel's spatial axes (the first if tied) as
    dtypes.default_int, tinygrad's dtype for them (torch's is int64)"""
    ks, strides, dils, pads, extra = _pool_geometry(self, "max_pool2d", kernel_size, stride, dilation, padding, ceil_mode)
    low, flows = self.dtype.min, self._grad_flows()
    # where a gradient flows, it is _max_pool_grad's, not autograd's through the windows
    padded = (self.detach() if flows else self).pad(pads, value=low).pad(extra, value=low)
    x = padded._pooled(ks, strides, dils)
    ret = top = x.max(-1)
    # the padded input's gradient, unpadded (a negative padding, a crop, padded back with zeros)
    def grad(g): return (_max_pool_grad(padded, top, g, ks, strides, dils).pad([-p for p in extra]).pad([-p for p in pads]),)
    if flows: ret = top._custom_gradient((self,), grad)
    if not return_indices: return ret
    sp = tuple(self.shape[-len(ks):])
    pos = self._arange(prod(sp), dtypes.default_int).reshape(sp).pad(pads, value=-1).pad(extra, value=-1)._pooled(ks, strides, dils)
    # the first element equal to the max, padding (index -1, equal to a max of -inf or the int minimum) left out; a NaN max is the first
    # NaN's (torch's), which equals nothing. A name of its own, not top rebound: grad (above) reads top when backward runs
    wide = top.unsqueeze(-1)
    hit = x.eq(wide) | (x.isnan() & wide.isnan()) if dtypes.is_float(self.dtype) else x.eq(wide)
    return ret, (hit & pos.ge(0)).where(pos, prod(sp)).min(-1)
  def avg_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0, ceil_mode:bool=False, count_include_pad:bool=True):
    """mean over windows; the divisor counts the padding when count_include_pad, never the extra room ceil_mode adds"""
    ks, strides, dils, pads, extra = _pool_geometry(self, "avg_pool2d", kernel_size, stride, dilation, padding, ceil_mode)
    # summed in sum's accumulator, divided before the result's dtype: a half window of 81 values of 1000 overflowed to inf
    total = self.pad(pads).pad(extra)._pooled(ks, strides, dils, stack=_wants_grad(self)).sum(-1, dtype=dtypes.sum_acc_dtype(self.dtype))
    sp = tuple(self.shape[-len(ks):])
    ones = self._scalar_like(1, dtypes.int32).reshape((1,)*len(sp)).expand(sp)
    count = ones.pad(pads, value=int(count_include_pad)).pad(extra)._pooled(ks, strides, dils).sum(-1)
    return total.div(count).cast(self.dtype if dtypes.is_float(self.dtype) else dtypes.default_float)
  def max_unpool2d(self, indices, kernel_size=(2, 2), stride=None, dilation=1, padding=0, output_size=None):
    """zeros of the pooled-from size with each value at the position its index (from max_pool2d's return_indices) names"""
    ks = _kernel(kernel_size)
    nd = len(ks)
    strides, dils, pads = _per_axis(ks if stride is None else stride, nd, "stride", 1), _per_axis(dilation, nd, "dilation", 1), _per_axis(padding, nd, "padding")
    if tuple(indices.shape) != tuple(self.shape): raise ValueError(f"max_unpool2d indices of shape {tuple(indices.shape)} need the input's shape {tuple(self.shape)}")
    sp = tuple(self.shape[-nd:])
    out = tuple(output_size)[-nd:] if output_size is not None else tuple((i-1)*s - 2*p + d*(k-1) + 1 for i, k, s, d, p in zip(sp, ks, strides, dils, pads))
    lead = tuple(self.shape[:-nd])
    x, idx = self.reshape(lead + (prod(sp),)), indices.reshape(lead + (prod(sp),))
    last = self._last_write(idx._one_hot_at(prod(out), len(lead) + 1), len(lead))
    ret = last.ge(0).where(x.detach().gather(len(lead), last.maximum(0)), 0).reshape(lead + out)
    # each value's gradient is the output's at its index, a repeated one's too (torch's): through the write only the last got one
    if not self._grad_flows(): return ret
    return ret._custom_gradient((self,), lambda g: (g.reshape(lead + (prod(out),)).gather(len(lead), idx).reshape(self.shape),))
