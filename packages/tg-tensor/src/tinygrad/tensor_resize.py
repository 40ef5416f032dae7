"""interpolate: resizing the last len(size) axes, one axis at a time. nearest picks source elements (an index); linear mixes the two
neighbours of each output position with weights known when the graph is built. The step between outputs' source positions is a
fraction Q/P, so output j's lower neighbour is (Q*j + c) // P: element Q*j + c of the source with each element repeated P times, a
strided view. Two views, two weight vectors: two loads per output, where a (new size, old size) matrix read every source element."""
from __future__ import annotations
import functools, math, struct
from fractions import Fraction
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes

_LINEAR_AXES = {"linear": None, "bilinear": 2, "trilinear": 3}  # torch's names for linear over 2 and 3 axes

def _f32(v:float) -> float: return struct.unpack("f", struct.pack("f", v))[0]

def _nearest(i:int, o:int, exact:bool) -> list[int]:
  # torch's source positions, scale i/o and its products rounded to float32 (upstream's too): exact fractions picked another element
  # for 2% of sizes (2 -> 82: output 41 took element 1 for torch's 0)
  scale = _f32(i / o)
  return [min(int(math.floor(_f32(((j + 0.5) if exact else j) * scale))), i - 1) for j in range(o)]

def _sample_points(i:int, o:int, align_corners:bool) -> tuple[Fraction, Fraction]:
  """(step, start): output j samples the source at start + step*j (torch's positions; one below 0 takes the first element)"""
  if align_corners: return (Fraction(i - 1, o - 1) if o > 1 else Fraction(0)), Fraction(0)
  return Fraction(i, o), Fraction(i, 2*o) - Fraction(1, 2)

# a plan is worked out once per (size, new size): in Fractions it costs ~1 ms of python for 112 outputs, more than the kernels of a
# small resize, on every eager call
@functools.lru_cache(maxsize=256)
def _linear_plan(i:int, o:int, align_corners:bool) -> tuple[int, int, int, int, int, tuple[float, ...], tuple[float, ...]]:
  """(P, Q, c, left, right, w_lo, w_hi) for resizing an axis from i to o: output j mixes elements (Q*j + c)//P and the one after of the
  source zero-padded by (left, right), weighted w_lo[j] and w_hi[j]"""
  step, start = _sample_points(i, o, align_corners)
  P, Q, c = step.denominator, step.numerator, math.floor(start * step.denominator)
  lo = [(Q*j + c) // P for j in range(o)]  # in -1..i-1: floor(start + step*j)
  f = [start + step*j - l for j, l in zip(range(o), lo)]
  # the zero padding stands for torch's clamped neighbours: a neighbour at -1 or i weighs 0 and the other one takes the whole weight
  w_lo = tuple(0.0 if l < 0 else 1.0 if l == i - 1 else float(1 - fj) for l, fj in zip(lo, f))
  w_hi = tuple(1.0 if l < 0 else 0.0 if l == i - 1 else float(fj) for l, fj in zip(lo, f))
  left = int(min(lo) < 0)
  right = max(0, -(-(c + P*(left + 1) + Q*o) // P) - i - left)  # the hi view's last row of Q runs past its last element
  return P, Q, c + P*left, left, right, w_lo, w_hi

@functools.lru_cache(maxsize=64)
def _weights(w:tuple[float, ...], device, dtype):
  """a plan's weights as a buffer node, made once per device and dtype: the node, not a Tensor (a live handle would collect gradients
  in backward() of a graph without requires_grad). Nothing writes into it: it is read by the resize kernels only"""
  from tinygrad.tensor import Tensor
  return Tensor(list(w), device, dtype).uop

def _linear_axis(x, a:int, o:int, plan):
  """x (padded by the plan) resized to o along axis a by mixing the two source neighbours of each output position"""
  from tinygrad.tensor import Tensor
  P, Q, c, _, _, w_lo, w_hi = plan
  n, nd = x.shape[a], x.ndim
  rep = x.unsqueeze(a+1).expand(x.shape[:a+1] + (P,) + x.shape[a+1:]).reshape(x.shape[:a] + (n*P,) + x.shape[a+1:])
  def view(s:int):
    """rep[s + Q*j] for j < o along axis a"""
    v = rep.shrink(tuple((s, s + max(Q*o, 1)) if d == a else None for d in range(nd)))
    if Q == 0: return v.shrink(tuple((0, 1) if d == a else None for d in range(nd))).expand(x.shape[:a] + (o,) + x.shape[a+1:])  # o == 1
    if Q == 1: return v
    v = v.reshape(x.shape[:a] + (o, Q) + x.shape[a+1:]).shrink(tuple((0, 1) if d == a+1 else None for d in range(nd+1)))
    return v.reshape(x.shape[:a] + (o,) + x.shape[a+1:])
  weight = lambda w: Tensor(_weights(w, x.device, x.dtype)).reshape((o,) + (1,)*(nd-a-1))
  return view(c) * weight(w_lo) + view(c + P) * weight(w_hi)

class TensorResizeMixin:
  def interpolate(self, size, mode:str="linear", align_corners:bool=False):
    """self resized to `size` on its last len(size) axes: mode linear (bilinear, trilinear), nearest or nearest-exact, like torch"""
    from tinygrad.tensor import Tensor
    size = tuple(size)
    if len(size) > self.ndim: raise ValueError(f"interpolate to size {size} needs at least {len(size)} dims, got shape {tuple(self.shape)}")
    if mode not in ("nearest", "nearest-exact", *_LINEAR_AXES): raise ValueError(f"interpolate mode {mode!r}: use linear, bilinear, trilinear, nearest or nearest-exact")
    if _LINEAR_AXES.get(mode) not in (None, len(size)): raise ValueError(f"interpolate mode {mode!r} resizes {_LINEAR_AXES[mode]} axes, size {size} has {len(size)}")
    if align_corners and mode.startswith("nearest"): raise ValueError("align_corners only applies to the linear modes")
    if (bad := next((o for o in size if isinstance(o, UOp)), None)) is not None:
      raise NotImplementedError(f"interpolate does not support a symbolic size ({bad.render()} in {size})")
    last = range(self.ndim - len(size), self.ndim)
    self._int_axes("interpolate", last)
    if any(not isinstance(o, int) or o < 0 for o in size): raise ValueError(f"interpolate size must be ints >= 0, got {size}")
    if 0 in size: return Tensor.zeros(*self.shape[:self.ndim - len(size)], *size, dtype=self.dtype, device=self.device)  # nothing to weigh
    if (empty := next((a for a in last if self.shape[a] == 0), None)) is not None:
      raise ValueError(f"interpolate of shape {tuple(self.shape)} to size {size}: axis {empty} is empty, there is nothing to sample")
    axes = [(a, o) for a, o in zip(last, size) if self.shape[a] != o]
    if mode.startswith("nearest"):
      x = self
      for a, o in axes: x = x[(slice(None),)*a + (Tensor(_nearest(x.shape[a], o, mode == "nearest-exact"), x.device),)]
      return x
    # weighed in float32 (a half's rounded after each step: 1 ulp off torch) and answered in self's dtype, tinygrad's rule (an int's
    # truncated)
    x = self if self.dtype in (dtypes.float32, dtypes.float64) else self.cast(dtypes.float32)
    # an axis of size 1 is its one element everywhere; the rest pad once, into a buffer of their own: the resize then reads the source
    # without a bounds check per load (a gate on each neighbour kept LLVM from vectorizing the loop)
    for a, o in axes:
      if x.shape[a] == 1: x = x.expand(tuple(o if d == a else s for d, s in enumerate(x.shape)))
    plans = {a: _linear_plan(self.shape[a], o, align_corners) for a, o in axes if self.shape[a] != 1}
    if any(p[3] or p[4] for p in plans.values()):
      x = x._pad(tuple((plans[d][3], plans[d][4]) if d in plans else (0, 0) for d in range(x.ndim))).contiguous()
    for a, o in axes:
      if a in plans: x = _linear_axis(x, a, o, plans[a])
    return x.cast(self.dtype)
