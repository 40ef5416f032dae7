"""Property-based fuzzing of the whole pipeline (Tensor -> schedule -> lowering -> linearize -> render -> run) against numpy.

A program is a random sequence of ops over 1-3 numpy inputs (float32, int32, bool; 1-4 dims of 1-6): elementwise math and
comparisons, casts, python-style // and %, movement (reshape, permute, expand, pad, shrink, flip, strided getitem, cat, repeat),
selection (gather, int-tensor indexing, roll, masked_fill, repeat_interleave, split, unfold, rearrange, masked_select, sort,
cummax),
reductions, cumsum, argmax, matmul, softmax, and realizing values midway. Every op is applied to a Tensor and to numpy alike, and
any earlier value may be an operand again (diamonds, reduce-then-broadcast). Every value no later op used is checked, one by one
or realized together in one schedule.
numpy computes in float64/int64, and each value carries a bound on how far float32 may drift from that: 0 while float math
stays exact (inputs are multiples of 1/4, so +, -, *, max and sums are exact until a result needs more than float32's 24 bits),
which is also what comparisons and casts to int/bool require, since an ulp's difference could flip them. Exact values must match
bit for bit; the rest within the propagated rounding bound.
A few programs also check autograd: the gradient of an output's sum along a random direction against central differences of the same
graph with its inputs moved."""
import numpy as np
import pytest
from hypothesis import given, settings, note, HealthCheck, strategies as st
from tinygrad import Tensor, dtypes
from tinygrad.uop.ops import UOp

pytestmark = pytest.mark.hcq_matrix  # also on the mock AMD and NV devices (tests/conftest.py)

EPS = 2.0**-22  # one float32 rounding (2^-24), with slack; transcendentals (polynomial approximations) get 8x
F32, I32, BOOL = dtypes.float32, dtypes.int32, dtypes.bool
MAX_NUMEL, MAX_F, MAX_I = 4096, 1e6, 2**24

class V:
  """a program value: its Tensor, numpy's reference (float64, int64 or bool) and the bound on |tensor - reference| (0: exact)"""
  def __init__(self, t, n, err:float, name:str): self.t, self.n, self.err, self.name = t, n, err, name
  def __repr__(self): return self.name
  @property
  def shape(self) -> tuple: return tuple(self.n.shape)
  @property
  def dtype(self): return self.t.dtype if isinstance(self.t, Tensor) else F32 if isinstance(self.t, float) else I32
  @property
  def amax(self) -> float: return float(np.abs(self.n).max()) if np.size(self.n) else 0.0

def ref(n, dt):
  """numpy's value for a result of dtype dt: ints and bools as int64, floats as float64 (what dt holds, exactly, for our ranges)"""
  return np.asarray(n).astype(np.bool_ if dt is BOOL else np.float64 if dtypes.is_float(dt) else np.int64)

def grain_ok(*ns, bits:int=8) -> bool: return all(np.all(np.asarray(n) * 2**bits == np.round(np.asarray(n) * 2**bits)) for n in ns)
def f32_exact(n) -> bool: return bool(np.all(np.asarray(n, np.float64).astype(np.float32).astype(np.float64) == n))
def rounded(n, err:float, exact:bool) -> float:
  """the bound after one float32 rounding of n: none when every input was exact and n is a float32"""
  return 0.0 if err == 0 and exact and f32_exact(n) else err + EPS * float(np.abs(n).max(initial=0))

class Program:
  def __init__(self, data, device:str):
    self.draw, self.device, self.pool, self.used = data.draw, device, [], set()

  def add(self, t, n, err:float, expr:str, dt=None) -> V|None:
    n = ref(n, t.dtype)
    assert tuple(t.shape) == n.shape, f"{expr}: shape {t.shape}, numpy says {n.shape}"
    assert dt is None or t.dtype is dt, f"{expr}: dtype {t.dtype}, promotion says {dt}"
    # keep values where float32/int32 hold them exactly and kernels stay small; a value that would leave them is not added
    if n.size > MAX_NUMEL or (np.abs(n).max(initial=0) > (MAX_F if dtypes.is_float(t.dtype) else MAX_I)) or err > 1e-2: return None
    v = V(t, n, err, f"v{len(self.pool)}")
    self.pool.append(v)
    note(f"{v.name} = {expr}  # {t.dtype} {tuple(t.shape)}")
    return v

  def pick(self, pred=lambda v: True, use=True) -> V|None:
    # newest first: hypothesis favours (and shrinks towards) the first choice, and chains of ops on one value go deepest
    if not (cands := [v for v in reversed(self.pool) if pred(v)]): return None
    if use: self.used.add(v := self.draw(st.sampled_from(cands)))
    else: v = self.draw(st.sampled_from(cands))
    return v

  def scalar(self, dt, nonzero=False) -> V:
    vals = [x for x in range(-7, 8) if x or not nonzero] if dt is not F32 else [x/4 for x in range(-16, 17) if x or not nonzero]
    x = self.draw(st.sampled_from(vals))
    return V(x, np.asarray(x), 0.0, repr(x))

  def operand(self, shape:tuple, scalar_dt, pred=lambda v: True) -> V:
    """something to combine with a value of this shape: an earlier value that broadcasts with it (itself included), or a python scalar"""
    def fits(v):
      try: np.broadcast_shapes(shape, v.shape)
      except ValueError: return False
      return pred(v)
    if self.draw(st.integers(0, 3)) == 0: return self.scalar(scalar_dt)
    return self.pick(fits) or self.scalar(scalar_dt)

# *** elementwise ***

def promote(*vs:V):
  """bool < int32 < float32; python scalars (weak) take part by kind only, so int32 + 2.5 is float32 and bool + 2 is int32"""
  return F32 if any(v.dtype is F32 for v in vs) else I32 if any(v.dtype is I32 for v in vs) else BOOL

ARITH = {"+": (lambda a, b: a + b), "-": (lambda a, b: a - b), "*": (lambda a, b: a * b)}
CMP = {"<": (lambda a, b: a < b), ">": (lambda a, b: a > b), "<=": (lambda a, b: a <= b), ">=": (lambda a, b: a >= b),
       "==": (lambda a, b: a == b), "!=": (lambda a, b: a != b)}

def op_arith(p:Program):
  if (a := p.pick(lambda v: v.dtype is not BOOL)) is None: return
  b = p.operand(a.shape, a.dtype, lambda v: v.dtype is not BOOL)
  if p.draw(st.booleans()): a, b = b, a
  if not isinstance(a.t, Tensor) and not isinstance(b.t, Tensor): return
  name = p.draw(st.sampled_from([*ARITH, "maximum", "minimum"]))
  if name in ARITH: t, expr = ARITH[name](a.t, b.t), f"{a.name} {name} {b.name}"
  else:
    x, y = (a, b) if isinstance(a.t, Tensor) else (b, a)
    t, expr = getattr(x.t, name)(y.t), f"{x.name}.{name}({y.name})"
  x, y = ref(a.n, t.dtype), ref(b.n, t.dtype)
  if name in ("maximum", "minimum"): return p.add(t, getattr(np, name)(x, y), max(a.err, b.err), expr, promote(a, b))
  n = ARITH[name](x, y)
  err = a.err + b.err if name != "*" else a.err * b.amax + b.err * a.amax + a.err * b.err
  return p.add(t, n, rounded(n, err, True), expr, promote(a, b))

def op_cmp(p:Program):
  # exact operands only: a comparison is discontinuous
  if (a := p.pick(lambda v: v.err == 0)) is None: return
  b = p.operand(a.shape, a.dtype if a.dtype is not BOOL else I32, lambda v: v.err == 0)
  if p.draw(st.booleans()) and isinstance(b.t, Tensor): a, b = b, a
  name = p.draw(st.sampled_from(list(CMP)))
  return p.add(CMP[name](a.t, b.t), CMP[name](a.n, b.n), 0.0, f"{a.name} {name} {b.name}", BOOL)

def op_where(p:Program):
  if (c := p.pick(lambda v: v.dtype is BOOL) or op_cmp(p)) is None: return
  x = p.operand(c.shape, p.draw(st.sampled_from([F32, I32])))
  y = p.operand(np.broadcast_shapes(c.shape, x.shape), x.dtype)
  if not isinstance(x.t, Tensor) and not isinstance(y.t, Tensor) and p.draw(st.booleans()): return
  t = c.t.where(x.t, y.t)
  return p.add(t, np.where(c.n, ref(x.n, t.dtype), ref(y.n, t.dtype)), max(x.err, y.err), f"{c.name}.where({x.name}, {y.name})",
               promote(x, y))

def op_cast(p:Program, dt=None):
  dt = dt or p.draw(st.sampled_from([F32, I32, BOOL]))
  # float -> int/bool is discontinuous too: exact values only
  if (a := p.pick(lambda v: v.dtype is not dt and (v.err == 0 or dt is F32))) is None: return
  n = a.n if dt is F32 else a.n != 0 if dt is BOOL else np.trunc(a.n)
  return p.add(a.t.cast(dt), n, a.err, f"{a.name}.cast({dt})")

def op_unary(p:Program):
  if (a := p.pick(lambda v: v.dtype is F32)) is None: return
  name = p.draw(st.sampled_from(["exp", "log", "sqrt", "recip"]))
  if name == "exp":
    if a.amax > 10: return
    n = np.exp(a.n)
    return p.add(a.t.exp(), n, float(n.max()) * (a.err * 1.01 + 8*EPS*(2*a.amax + 1)), f"{a.name}.exp()")
  # log, sqrt and 1/x on a safe domain: x itself when it stays >= 1/4, else |x| + 1/2
  if float(a.n.min()) - a.err < 0.25:
    a = p.add(a.t.abs() + 0.5, np.abs(a.n) + 0.5, rounded(np.abs(a.n) + 0.5, a.err, True), f"{a.name}.abs() + 0.5")
    if a is None: return
  lo = float(a.n.min()) - a.err
  if name == "log":
    n = np.log(a.n)
    return p.add(a.t.log(), n, a.err / lo + 8*EPS*(1 + float(np.abs(n).max())), f"{a.name}.log()")
  if name == "sqrt":
    n = np.sqrt(a.n)
    return p.add(a.t.sqrt(), n, a.err / (2*np.sqrt(lo)) + 8*EPS*float(n.max()), f"{a.name}.sqrt()")
  n = 1 / a.n
  return p.add(a.t.reciprocal(), n, a.err / lo**2 + 8*EPS*float(n.max()), f"{a.name}.reciprocal()")

def op_piecewise(p:Program):
  """negation and selects on ints and floats: neg, abs, relu, clip, and sign (exact values only: it jumps at 0)"""
  if (a := p.pick(lambda v: v.dtype is not BOOL)) is None: return
  name = p.draw(st.sampled_from(["neg", "abs", "relu", "clip"] + (["sign"] if a.err == 0 else [])))
  if name == "neg": return p.add(-a.t, -a.n, a.err, f"-{a.name}")
  if name == "clip":
    lo, hi = sorted(p.draw(st.integers(-8, 8)) / (2 if a.dtype is F32 else 1) for _ in range(2))
    lo, hi = (lo, hi) if a.dtype is F32 else (int(lo), int(hi))
    return p.add(a.t.clip(lo, hi), np.clip(a.n, lo, hi), a.err, f"{a.name}.clip({lo}, {hi})")
  fn = {"abs": np.abs, "relu": lambda x: np.maximum(x, 0), "sign": np.sign}[name]
  return p.add(getattr(a.t, name)(), fn(a.n), a.err, f"{a.name}.{name}()")

def op_div(p:Program):
  if (a := p.pick(lambda v: v.dtype is not BOOL)) is None: return
  # a denominator kept away from 0, so error stays bounded
  b = p.operand(a.shape, F32, lambda v: v.dtype is not BOOL and float(np.abs(v.n).min()) - v.err >= 0.5)
  if float(np.abs(b.n).min()) - b.err < 0.5: b = V(2.5, np.asarray(2.5), 0.0, "2.5")
  n, lo = np.asarray(a.n, np.float64) / b.n, float(np.abs(b.n).min()) - b.err
  err = (a.err + a.amax * b.err / lo) / lo + 3*EPS*float(np.abs(n).max())  # x * (1/y): two roundings, and 1/y's
  return p.add(a.t / b.t, n, err, f"{a.name} / {b.name}", F32)

def op_floordiv(p:Program):
  """python floor semantics, the sign of the divisor for %: ints by any nonzero divisor (negative ones too), floats by powers of two
  (exact quotients: the floor of a rounded quotient could land on the other side of an integer)"""
  if p.draw(st.integers(0, 2)) == 0:
    if (a := p.pick(lambda v: v.dtype is F32 and v.err == 0)) is None: return
    b = V(x := p.draw(st.sampled_from([2.0, 0.5, 4.0, -1.0, -2.0, -0.25])), np.asarray(x), 0.0, repr(x))
  else:
    if (a := p.pick(lambda v: v.dtype is I32)) is None and (a := op_cast(p, I32)) is None: return
    def fits(v):
      try: np.broadcast_shapes(a.shape, v.shape)
      except ValueError: return False
      return v.dtype is I32 and bool(np.all(v.n != 0))
    # a scalar, or a value without zeros; when there is none, an odd one made of a (never 0, either sign), maybe in a buffer of its own
    # (a divisor loaded in a padded kernel reads 0 in the padding)
    if p.draw(st.integers(0, 3)) == 0: b = p.scalar(I32, nonzero=True)
    elif (b := p.pick(fits)) is None:
      buf = p.draw(st.booleans())
      odd = (a.t * 2 + 1).contiguous() if buf else a.t * 2 + 1
      if (b := p.add(odd, a.n * 2 + 1, 0.0, f"({a.name} * 2 + 1)" + ".contiguous()" * buf)) is None: return
    if p.draw(st.booleans()) and isinstance(b.t, Tensor) and np.all(a.n != 0): a, b = b, a
  if p.draw(st.booleans()): return p.add(a.t // b.t, a.n // b.n, 0.0, f"{a.name} // {b.name}", promote(a, b))
  return p.add(a.t % b.t, a.n % b.n, 0.0, f"{a.name} % {b.name}", promote(a, b))

# *** reductions and matmul ***

def draw_axis(p:Program, nd:int):
  if nd == 0 or p.draw(st.integers(0, 4)) == 0: return None
  axes = p.draw(st.lists(st.integers(0, nd-1), min_size=1, max_size=nd, unique=True))
  axes = [a - nd if p.draw(st.booleans()) else a for a in axes]
  return axes[0] if len(axes) == 1 and p.draw(st.booleans()) else tuple(axes)

def reduce_ref(a:V, name:str, axis, keepdim:bool) -> tuple:
  """(tensor, reference, bound) of a reduction: sums are exact when every partial sum is a float32 (any order the kernel adds in)"""
  t = getattr(a.t, name)(axis, keepdim=keepdim)
  x = ref(a.n, t.dtype)
  n = getattr(np, name)(x, axis=axis, keepdims=keepdim)
  if name in ("max", "min"): return t, n, a.err
  cnt = a.n.size // max(np.size(n), 1)
  sabs = float(np.sum(np.abs(x), axis=axis).max(initial=0))
  if name == "sum":
    if not dtypes.is_float(t.dtype): return t, n, 0.0
    if a.err == 0 and grain_ok(x) and sabs < 2**15: return t, n, 0.0
    return t, n, cnt * a.err + EPS * cnt * sabs
  return t, n, a.err + EPS * (cnt + 2) * sabs / cnt  # mean: sum * (1/count)

def op_reduce(p:Program, a:V|None=None):
  if a is None and (a := p.pick()) is None: return
  name, keepdim = p.draw(st.sampled_from(["sum", "max", "min", "mean"])), p.draw(st.booleans())
  if name == "sum" and not dtypes.is_float(a.dtype) and float(np.abs(a.n).sum()) >= MAX_I: return
  axis = draw_axis(p, a.n.ndim)
  t, n, err = reduce_ref(a, name, axis, keepdim)
  return p.add(t, n, err, f"{a.name}.{name}({axis!r}, keepdim={keepdim})")

def op_scan(p:Program):
  """cumsum (a sliding window over the padded axis, summed), argmax/argmin (the first extreme: exact values only), any/all"""
  if (a := p.pick(lambda v: v.n.ndim)) is None: return
  name = p.draw(st.sampled_from(["cumsum"] + (["argmax", "argmin", "any", "all"] if a.err == 0 else [])))
  axis = p.draw(st.integers(-a.n.ndim, a.n.ndim-1))
  if name == "cumsum":
    t, cnt = a.t.cumsum(axis), a.shape[axis]
    x = ref(a.n, t.dtype)
    sabs = float(np.sum(np.abs(x), axis=axis).max(initial=0))
    if not dtypes.is_float(t.dtype): err = 0.0 if sabs < MAX_I else None
    else: err = 0.0 if a.err == 0 and grain_ok(x) and sabs < 2**15 else cnt * a.err + EPS * cnt * sabs
    return None if err is None else p.add(t, np.cumsum(x, axis), err, f"{a.name}.cumsum({axis})")
  axis, keepdim = None if p.draw(st.integers(0, 3)) == 0 else axis, p.draw(st.booleans())
  return p.add(getattr(a.t, name)(axis, keepdim=keepdim), getattr(np, name)(a.n, axis=axis, keepdims=keepdim), 0.0,
               f"{a.name}.{name}({axis}, keepdim={keepdim})")

def op_reduce_bcast(p:Program):
  """x op x.reduce(keepdim=True): the reduce is broadcast back over what it reduced (softmax-like)"""
  if (a := p.pick(lambda v: v.dtype is not BOOL and v.n.ndim)) is None: return
  name, axis = p.draw(st.sampled_from(["sum", "max", "min", "mean"])), draw_axis(p, a.n.ndim)
  if name == "sum" and not dtypes.is_float(a.dtype) and float(np.abs(a.n).sum()) >= MAX_I: return
  r, rn, rerr = reduce_ref(a, name, axis, True)
  if (r := p.add(r, rn, rerr, f"{a.name}.{name}({axis!r}, keepdim=True)")) is None: return
  x, y = ref(a.n, (a.t - r.t).dtype), ref(r.n, (a.t - r.t).dtype)
  return p.add(a.t - r.t, x - y, rounded(x - y, a.err + r.err, True), f"{a.name} - {r.name}")

def op_softmax(p:Program):
  if (a := p.pick(lambda v: v.dtype is F32 and v.n.ndim and v.amax < 50)) is None: return
  axis = p.draw(st.integers(-a.n.ndim, a.n.ndim-1))
  e = np.exp(a.n - a.n.max(axis=axis, keepdims=True))
  rel = 2 * (2*a.err + 8*EPS*(2*a.amax + 1)) + EPS * (a.shape[axis] + 3)
  return p.add(a.t.softmax(axis), e / e.sum(axis=axis, keepdims=True), rel, f"{a.name}.softmax({axis})")

def op_matmul(p:Program):
  if (a := p.pick(lambda v: v.dtype is not BOOL and v.n.ndim)) is None: return
  def fits(v):
    if v.dtype is BOOL or not v.n.ndim or v.shape[-min(v.n.ndim, 2)] != a.shape[-1]: return False
    try: np.broadcast_shapes(a.shape[:-2], v.shape[:-2])
    except ValueError: return False
    return True
  if (b := p.pick(fits)) is None:  # a against its own transpose: a diamond
    b = a if a.n.ndim == 1 else p.add(a.t.transpose(-1, -2), np.swapaxes(a.n, -1, -2), a.err, f"{a.name}.transpose(-1, -2)")
    if b is None: return
  t = a.t @ b.t
  x, y = ref(a.n, t.dtype), ref(b.n, t.dtype)
  n, k, sabs = x @ y, a.shape[-1], float(np.max(np.abs(x) @ np.abs(y), initial=0))
  if not dtypes.is_float(t.dtype): err = 0.0 if sabs < MAX_I else None
  elif a.err == 0 and b.err == 0 and grain_ok(x, y, bits=4) and sabs < 2**15: err = 0.0
  else: err = k * (a.err * b.amax + b.err * a.amax + a.err * b.err) + EPS * (k + 1) * sabs
  return None if err is None else p.add(t, n, err, f"{a.name} @ {b.name}", promote(a, b))

# *** movement ***

def divisors(n:int) -> list[int]: return [d for d in range(1, n+1) if n % d == 0]

def op_movement(p:Program):
  if (a := p.pick()) is None: return
  kind, shape, nd = p.draw(st.sampled_from(["reshape", "permute", "expand", "pad", "shrink", "flip", "getitem", "contiguous"])), a.shape, a.n.ndim
  if kind == "reshape":
    rest, new = a.n.size, []
    for _ in range(p.draw(st.integers(0 if rest == 1 else 1, 4)) - 1):
      new.append(d := p.draw(st.sampled_from(divisors(rest))))
      rest //= d
    new = tuple(new) + ((rest,) if new or rest != 1 or p.draw(st.booleans()) else ())
    if new and p.draw(st.integers(0, 3)) == 0: new = new[:(i := p.draw(st.integers(0, len(new)-1)))] + (-1,) + new[i+1:]
    return p.add(a.t.reshape(new), a.n.reshape(new), a.err, f"{a.name}.reshape({new})")
  if kind == "permute":
    order = tuple(p.draw(st.permutations(range(nd))))
    return p.add(a.t.permute(order), a.n.transpose(order), a.err, f"{a.name}.permute({order})")
  if kind == "expand":
    lead = tuple(p.draw(st.lists(st.integers(1, 3), max_size=4 - min(nd, 4))))
    new = lead + tuple(p.draw(st.integers(1, 4)) if s == 1 else s for s in shape)
    return p.add(a.t.expand(new), np.broadcast_to(a.n, new), a.err, f"{a.name}.expand({new})")
  if kind == "pad":
    if not nd: return
    # negative amounts crop; a non-zero value goes through a where
    pads = tuple((p.draw(st.integers(-min(1, s-1), 2)), p.draw(st.integers(0, 2))) for s in shape)
    value = p.draw(st.sampled_from([0, 1] if a.dtype is BOOL else [0, 3, -1] if a.dtype is I32 else [0, 1.5, -2.0]))
    x = a.n[tuple(slice(-min(b, 0), None) for b, _ in pads)]
    n = np.pad(x, [(max(b, 0), e) for b, e in pads], constant_values=value)
    return p.add(a.t.pad(pads, value=value), n, a.err, f"{a.name}.pad({pads}, value={value!r})")
  if kind == "shrink":
    arg = tuple((b := p.draw(st.integers(0, s-1)), p.draw(st.integers(b+1, s))) for s in shape)
    return p.add(a.t.shrink(arg), a.n[tuple(slice(b, e) for b, e in arg)], a.err, f"{a.name}.shrink({arg})")
  if kind == "flip":
    if not nd: return
    axes = tuple(p.draw(st.lists(st.integers(0, nd-1), min_size=1, max_size=nd, unique=True)))
    return p.add(a.t.flip(axes), np.flip(a.n, axes), a.err, f"{a.name}.flip({axes})")
  if kind == "getitem":
    idx = []
    for s in shape:
      if (c := p.draw(st.integers(0, 9))) == 0: idx.append(p.draw(st.integers(-s, s-1)))
      elif c == 1: idx.append(slice(None))
      else:
        step = p.draw(st.sampled_from([1, 2, 3, -1, -2, -3]))
        start, stop = p.draw(st.one_of(st.none(), st.integers(-s-1, s+1))), p.draw(st.one_of(st.none(), st.integers(-s-1, s+1)))
        if not len(range(*slice(start, stop, step).indices(s))): return
        idx.append(slice(start, stop, step))
      if p.draw(st.integers(0, 9)) == 0: idx.append(None)
    idx = tuple(idx)
    return p.add(a.t[idx], a.n[idx], a.err, f"{a.name}[{idx}]")
  return p.add(a.t.contiguous(), a.n, a.err, f"{a.name}.contiguous()")

def op_cat(p:Program):
  """cat (zero-padded pieces summed) and repeat (reshape + expand)"""
  if (a := p.pick(lambda v: v.n.ndim)) is None: return
  if p.draw(st.booleans()):
    reps = tuple(p.draw(st.lists(st.integers(1, 3), min_size=a.n.ndim, max_size=a.n.ndim)))
    return p.add(a.t.repeat(reps), np.tile(a.n, reps), a.err, f"{a.name}.repeat({reps})")
  dim = p.draw(st.integers(0, a.n.ndim-1))
  b = p.pick(lambda v: v.dtype is a.dtype and v.n.ndim == a.n.ndim and all(x == y for i, (x, y) in enumerate(zip(v.shape, a.shape)) if i != dim))
  return p.add(a.t.cat(b.t, dim=dim), np.concatenate([a.n, b.n], dim), max(a.err, b.err), f"{a.name}.cat({b.name}, dim={dim})")

def op_pad_reduce(p:Program):
  """a padded, flipped view, mostly reduced: what is fused below the pad is computed in the padding too (whose loads read nothing, so
  a quotient there divides by 0), and the padding must read as the pad value, inside a reduce loop too"""
  if (a := p.pick(lambda v: v.n.ndim)) is None: return
  pads = tuple((p.draw(st.integers(0, 2)), p.draw(st.integers(0, 2))) for _ in a.shape)
  value = p.draw(st.sampled_from([0, 1] if a.dtype is BOOL else [0, -3]))
  v = p.add(a.t.pad(pads, value=value), np.pad(a.n, pads, constant_values=value), a.err, f"{a.name}.pad({pads}, value={value})")
  if v is None: return
  axes = tuple(p.draw(st.lists(st.integers(0, a.n.ndim-1), min_size=1, max_size=a.n.ndim, unique=True)))
  if (v := p.add(v.t.flip(axes), np.flip(v.n, axes), v.err, f"{v.name}.flip({axes})")) is None: return
  return v if p.draw(st.integers(0, 2)) == 0 else op_reduce(p, v)

def op_select(p:Program):
  """ops that pick elements (no arithmetic, so the error bound carries over): gather, indexing with an int tensor (negative indices
  too), roll, masked_fill, repeat_interleave, split, unfold, rearrange, masked_select with a size; sort and cummax compare, so only
  exact values"""
  if (a := p.pick(lambda v: isinstance(v.t, Tensor) and v.n.ndim)) is None: return
  kinds = ["gather", "index", "roll", "masked_fill", "repeat_interleave", "split", "unfold", "rearrange", "masked_select"] + \
          (["sort", "cummax"] if a.err == 0 else [])
  kind, axis = p.draw(st.sampled_from(kinds)), p.draw(st.integers(0, a.n.ndim-1))
  s = a.shape[axis]
  if kind == "gather":
    ishape = tuple(p.draw(st.integers(1, 4)) if i == axis else p.draw(st.integers(1, d)) for i, d in enumerate(a.shape))
    idx = np.asarray(p.draw(st.lists(st.integers(0, s-1), min_size=int(np.prod(ishape)), max_size=int(np.prod(ishape))))).reshape(ishape)
    sub = a.n[tuple(slice(0, d) if i != axis else slice(None) for i, d in enumerate(ishape))]
    return p.add(a.t.gather(axis, Tensor(idx.astype(np.int32), device=a.t.device)), np.take_along_axis(sub, idx, axis), a.err, f"{a.name}.gather({axis}, {idx.tolist()})")
  if kind == "index":
    idx = p.draw(st.lists(st.integers(-a.shape[0], a.shape[0]-1), min_size=1, max_size=5))
    return p.add(a.t[Tensor(np.asarray(idx, np.int32), device=a.t.device)], a.n[idx], a.err, f"{a.name}[Tensor({idx})]")
  if kind == "roll":
    shift = p.draw(st.integers(-2*s, 2*s))
    return p.add(a.t.roll(shift, axis), np.roll(a.n, shift, axis), a.err, f"{a.name}.roll({shift}, {axis})")
  if kind == "masked_fill":
    def fits(v):
      try: return v.dtype is BOOL and isinstance(v.t, Tensor) and np.broadcast_shapes(v.shape, a.shape) == a.shape
      except ValueError: return False
    if (m := p.pick(fits)) is None: return
    value = p.draw(st.sampled_from([True] if a.dtype is BOOL else [0, -3] if a.dtype is I32 else [0.5, -2.0]))
    return p.add(a.t.masked_fill(m.t, value), np.where(m.n, value, a.n), a.err, f"{a.name}.masked_fill({m.name}, {value})")
  if kind == "repeat_interleave":
    r = p.draw(st.integers(1, 3))
    return p.add(a.t.repeat_interleave(r, axis), np.repeat(a.n, r, axis), a.err, f"{a.name}.repeat_interleave({r}, {axis})")
  if kind == "split":
    size = p.draw(st.integers(1, s))
    i = p.draw(st.integers(0, (s - 1) // size))
    part = a.n[tuple(slice(i*size, (i+1)*size) if d == axis else slice(None) for d in range(a.n.ndim))]
    return p.add(a.t.split(size, axis)[i], part, a.err, f"{a.name}.split({size}, {axis})[{i}]")
  if kind == "unfold":
    size, step = p.draw(st.integers(1, s)), p.draw(st.integers(1, 3))  # no empty values: later ops draw sizes from them
    want = np.lib.stride_tricks.sliding_window_view(a.n, size, axis=axis)[(slice(None),)*axis + (slice(None, None, step),)]
    return p.add(a.t.unfold(axis, size, step), want, a.err, f"{a.name}.unfold({axis}, {size}, {step})")
  if kind == "rearrange":
    names = [f"x{i}" for i in range(a.n.ndim)]
    order = p.draw(st.permutations(range(a.n.ndim)))
    formula = f"{' '.join(names)} -> ({' '.join(names[i] for i in order)})"
    return p.add(a.t.rearrange(formula), np.transpose(a.n, order).reshape(-1), a.err, f"{a.name}.rearrange({formula!r})")
  if kind == "masked_select":
    keep = np.asarray(p.draw(st.lists(st.booleans(), min_size=a.n.size, max_size=a.n.size)), bool).reshape(a.shape)
    size = p.draw(st.integers(1, a.n.size))
    fill = True if a.dtype is BOOL else 7
    want = np.concatenate([a.n[keep], np.full(a.n.size, fill, a.n.dtype)])[:size]
    return p.add(a.t.masked_select(Tensor(keep, device=a.t.device), size=size, fill_value=fill), want, a.err,
                 f"{a.name}.masked_select({keep.tolist()}, size={size}, fill_value={fill})")
  if kind == "sort":
    desc = p.draw(st.booleans())
    n = np.flip(np.sort(a.n, axis), axis) if desc else np.sort(a.n, axis)
    return p.add(a.t.sort(axis, descending=desc)[0], n, 0.0, f"{a.name}.sort({axis}, descending={desc})[0]")
  if a.dtype is BOOL: return
  return p.add(a.t.cummax(axis)[0], np.maximum.accumulate(a.n, axis), 0.0, f"{a.name}.cummax({axis})[0]")

def op_realize(p:Program):
  """realize an earlier value now: later ops read its buffer (maybe through a view) instead of fusing its graph"""
  if (a := p.pick(lambda v: isinstance(v.t, Tensor), use=False)) is not None:
    a.t.realize()
    note(f"{a.name}.realize()")

# weights by repetition: movement has the most ways to go wrong (index math, padding validity, views of realized buffers)
OPS = [op_arith, op_arith, op_cmp, op_where, op_cast, op_unary, op_piecewise, op_div, op_floordiv, op_floordiv, op_reduce, op_reduce, op_scan,
       op_reduce_bcast, op_softmax, op_matmul, op_movement, op_movement, op_movement, op_movement, op_cat, op_pad_reduce, op_pad_reduce,
       op_select, op_realize]

# *** programs ***

def draw_inputs(p:Program, rng):
  shape0 = tuple(p.draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
  for i in range(p.draw(st.integers(1, 3))):
    if i == 0 or p.draw(st.booleans()): shape = shape0 if i == 0 else tuple(p.draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
    else:  # broadcastable with the first: leading dims dropped, some dims 1
      shape = tuple(1 if p.draw(st.integers(0, 2)) == 0 else s for s in shape0[p.draw(st.integers(0, len(shape0)-1)):])
    dt = p.draw(st.sampled_from([F32, F32, F32, I32, I32, BOOL]))
    x = rng.integers(-16, 17, shape).astype(np.float32) / 4 if dt is F32 else rng.integers(-9, 10, shape).astype(np.int32) if dt is I32 \
      else rng.integers(0, 2, shape).astype(np.bool_)
    if dt is I32 and p.draw(st.booleans()): x[x == 0] = 1  # some without zeros, to divide by
    p.add(Tensor(x, device=p.device), x, 0.0, f"Tensor(np.{x!r}, device={p.device!r})")

def check(v:V):
  got = v.t.numpy()
  assert got.shape == v.shape, f"{v.name}: shape {got.shape} != numpy's {v.shape}"
  if dtypes.is_float(v.t.dtype):
    bad = ~(np.abs(got.astype(np.float64) - v.n) <= 2 * v.err)
    assert not bad.any(), f"{v.name}: {bad.sum()} of {bad.size} wrong (bound {v.err:.3g}) at {np.argwhere(bad)[:4].tolist()}: " \
                          f"got {got[bad][:4]}, numpy {v.n[bad][:4]}"
  else: np.testing.assert_array_equal(got, v.n.astype(got.dtype), err_msg=f"{v.name} ({v.t.dtype})")

def build(data, device:str) -> tuple[list[V], list[V]]:
  """a random program: (its inputs, every value no later op used, so each value computed reaches an output)"""
  p = Program(data, device)
  draw_inputs(p, np.random.default_rng(data.draw(st.integers(0, 2**32-1), label="seed")))
  n_inputs = len(p.pool)
  for _ in range(data.draw(st.integers(1, 12), label="ops")): data.draw(st.sampled_from(OPS))(p)
  made = p.pool[n_inputs:] or p.pool
  return p.pool[:n_inputs], [v for v in made if v not in p.used] or made[-1:]

SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

def fuzz(device:str, examples:int):
  @settings(max_examples=examples, **SETTINGS)
  @given(st.data())
  def run(data):
    _, outs = build(data, device)
    if len(outs) > 1 and data.draw(st.booleans()):
      note(f"Tensor.realize({', '.join(v.name for v in outs)})")
      outs[0].t.realize(*[v.t for v in outs[1:]])
    for v in outs: check(v)
  run()

# the compiled CPU path gets the most programs; the emulator and the C compiler are slower per kernel. The mock GPUs run the emulator
# under a python command processor, so the emulator's share is split: PYTHON's programs again on each mock GPU's queues (a few hundred
# submissions, kernel argument blocks, frees; issue 13 was a free from the garbage collector that waited on the timeline inside a
# submission). A device named only on some machines (TG_TEST_DEVICES) gets the default
EXAMPLES, DEFAULT_EXAMPLES = {"CPU": 500, "PYTHON": 100, "CPU:C": 60, "CL": 60, "CL:QCOM": 30, "AMD": 40, "NV": 40}, 60

def test_fuzz_programs(device): fuzz(device, EXAMPLES.get(device, DEFAULT_EXAMPLES))

# *** autograd: d sum(output) / d inputs along a random direction, against central differences of the same graph ***

def grad_check(inputs:list[V], v:V, rng):
  """At a point near the inputs (moved off the quarter grid, so max ties and the jumps of floor, casts and comparisons are not right at
  it), the gradient's directional derivative must match central differences of the same graph at steps h and h/2. Where those two
  disagree a kink is within reach of the step and the check is skipped."""
  xs = [x for x in inputs if x.dtype is F32 and x.t.uop in v.t.uop.toposort()]
  if v.dtype is not F32 or not xs: return
  root = v.t.sum().uop
  base = [x.n + rng.uniform(-1/16, 1/16, x.shape) for x in xs]
  dirs = [rng.uniform(-1, 1, x.shape) for x in xs]
  def moved(step:float) -> dict[UOp, UOp]: return {x.t.uop: Tensor((b + step*d).astype(np.float32)).uop for x, b, d in zip(xs, base, dirs)}
  start = moved(0.0)
  grads = Tensor(root.substitute(start)).gradient(*[Tensor(u) for u in start.values()], materialize_grads=True)
  want = sum(float((g.numpy().astype(np.float64) * d).sum()) for g, d in zip(grads, dirs))
  def fd(h:float) -> float: return (Tensor(root.substitute(moved(h))).item() - Tensor(root.substitute(moved(-h))).item()) / (2*h)
  h = 2.0**-7
  fd1, fd2 = fd(h), fd(h/2)
  # float32 rounding of two evaluations of the loss, divided by the step
  noise = 64 * (EPS * float(np.abs(v.n).sum()) + v.err * v.n.size) / h + 1e-3 * abs(fd2)
  note(f"grad check of {v.name}: gradient says {want:.6g}, differences {fd1:.6g} (h={h}), {fd2:.6g} (h={h/2}), noise {noise:.3g}")
  if abs(fd1 - fd2) > noise: return
  assert abs(want - fd2) <= 2 * noise + abs(fd1 - fd2), f"d sum({v.name}): gradient {want}, finite differences {fd2}"

@settings(max_examples=30, **SETTINGS)
@given(st.data())
def test_fuzz_program_gradients(data):
  inputs, outs = build(data, "CPU")
  grad_check(inputs, outs[-1], np.random.default_rng(data.draw(st.integers(0, 2**32-1), label="direction")))
