"""Movement ops shared by UOp and Tensor. A class using it provides: shape, _mop(op, arg). Arguments are normalised here, once,
so the IR only ever sees full-rank tuples; no-op movements return self. The composites at the end (padding with a value, cat, _arange)
also use the elementwise core: dtype, cast, const_like and alu through the operators."""
from __future__ import annotations
import functools, itertools, math, operator
from typing import Any
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes, least_upper_dtype
from tinygrad.helpers import prod, all_int, sint_eq, argfix as _argfix


def _int_arg(x, op:str, what:str, given):
  """one size, offset, count or axis: an int, an int UOp (symbolic) or anything with __index__ (numpy ints, as torch takes them).
  A float, even 4.0, or a bool raises here, before a shortcut ("same shape: return self") could accept it"""
  from tinygrad.uop.ops import UOp  # the UOp class is built from these mixins; only a non-int gets here
  if isinstance(x, UOp):
    if dtypes.is_int(x.dtype): return x
  elif not isinstance(x, bool) and hasattr(x, "__index__"): return x.__index__()
  raise TypeError(f"{op}: each of the {what} must be an int, got {x!r} ({type(x).__name__}) in {given!r}")

def _int_args(xs:tuple, op:str, what:str, given=None) -> tuple:
  return xs if all([type(x) is int for x in xs]) else tuple(_int_arg(x, op, what, xs if given is None else given) for x in xs)

def _pairs(arg, op:str, what:str, shape:tuple) -> tuple:
  """one (a, b) pair of ints per axis, None standing for `shape`'s (0, size) or (0, 0)"""
  if not isinstance(arg, (tuple, list)) or len(arg) != len(shape):
    raise ValueError(f"{op} {arg!r} needs one {what} pair or None per axis of {tuple(shape)}")
  full = []
  for a, s in zip(arg, shape):
    if a is None: full.append((0, s if op == "shrink" else 0))
    elif isinstance(a, (tuple, list)) and len(a) == 2: full.append(tuple(a))
    else: raise ValueError(f"{op} {arg!r}: each axis takes a {what} pair or None, got {a!r}")
  if all([type(b) is int and type(e) is int for b, e in full]): return tuple(full)
  return tuple((_int_arg(b, op, "amounts", arg), _int_arg(e, op, "amounts", arg)) for b, e in full)

def _show(s) -> str: return s.render() if hasattr(s, "render") else str(s)  # a size in a message: a symbolic one as its expression
def _show_shape(shape) -> str: return f"({', '.join(_show(s) for s in shape)}{',' if len(shape) == 1 else ''})"

def _as_int(i, keep:tuple):
  """a python int for an index that is one (numpy's integers: __index__), anything else (an instance of keep, a bool, ...) as it is"""
  return i if i is None or isinstance(i, keep) or type(i) is bool or not hasattr(type(i), "__index__") else operator.index(i)

def _value_range(u) -> tuple[int, int]:
  """(lo, hi) of a symbolic int: its value at the current binding when every Variable in it is bound, else its whole range"""
  nodes = u.toposort()
  binds = {b.src[0].arg.name: b.src[1].arg for b in nodes if b.op is Ops.BIND}
  if any((v.op is Ops.DEFINE_VAR and v.arg.name not in binds) or v.op in (Ops.RANGE, Ops.SPECIAL) for v in nodes): return u.vmin, u.vmax
  return (u.sym_infer(binds),) * 2

def _exceeds(a, b) -> bool:
  """a > b for sizes or offsets: at the current binding where every Variable in them is bound, else for every value they can take"""
  from tinygrad.uop.ops import ssimplify
  d = ssimplify(a - b)
  return d > 0 if isinstance(d, int) else _value_range(d)[0] > 0

def _outside(b, e, s) -> bool:
  """(b, e) is not a window of an axis of size s (0 <= b <= e <= s), checked as _exceeds does"""
  return _exceeds(0, b) or _exceeds(b, e) or _exceeds(e, s)

def _div_exact(a, b):
  """a / b for sizes when b divides a (symbolic: as polynomials), else None"""
  if isinstance(a, int) and isinstance(b, int): return a // b if b and not a % b else None
  from tinygrad.uop.symbolic import sym_div_exact
  return sym_div_exact(a, b)

def _same_size(a, b) -> bool:
  from tinygrad.uop.symbolic import sym_eq
  return sym_eq(a, b)

def _inferred(cur:tuple, new:tuple):
  """the size a -1 in reshape(new) stands for: shape cur's size over the others', the sizes both hold cancelled first (v*8 / v*2 is 4)"""
  rest, known = list(cur), []
  for s in (s for s in new if not (isinstance(s, int) and s == -1)):
    if not isinstance(s, int) and (j := next((j for j, c in enumerate(rest) if _same_size(c, s)), None)) is not None: rest.pop(j)
    else: known.append(s)
  if (ret := prod(rest) // prod(known) if all_int(rest + known) else _div_exact(prod(rest), prod(known))) is None:
    raise ValueError(f"cannot reshape shape {_show_shape(cur)} to {_show_shape(new)}: the size {_show(prod(cur))} is no multiple of the others")
  return ret

def _canonical(s):
  """a symbolic size in its one form (uop/symbolic.py), so equal sizes built differently are one node; an int as it is"""
  if isinstance(s, int): return s
  from tinygrad.uop.symbolic import canonical
  return canonical(s)

def _from_end(x, size, default):
  """a slice end on a symbolic axis: a negative int counts back from the end (size + x)"""
  from tinygrad.uop.ops import ssimplify
  return default if x is None else ssimplify(size + x) if isinstance(x, int) and x < 0 else x

def _resolve_dim(dim:int, ndim:int, extra:bool=False) -> int:
  if type(dim) is not int:
    if isinstance(dim, bool) or not hasattr(dim, "__index__") or hasattr(dim, "op"):  # an axis is never symbolic
      raise TypeError(f"dim must be an int, got {dim!r} ({type(dim).__name__})")
    dim = dim.__index__()
  total = ndim + int(extra)
  if not -max(1, total) <= dim < max(1, total): raise IndexError(f"dim {dim} is out of range for a tensor with {ndim} dims")
  return dim + total if dim < 0 else dim

def _repeated_axis(op:str, given, axes:tuple[int, ...]):
  rep = next(a for i, a in enumerate(axes) if a in axes[:i])
  raise ValueError(f"{op}: axis {rep} is repeated in {tuple(given)}" + (f" (as {axes})" if tuple(given) != axes else "") + ": name each axis once")

def _first_of(xs:list|tuple, op:str):
  """Tensor.cat([a, b]) / Tensor.stack((a, b)) call the method with the sequence as self: its first tensor joins the rest"""
  if not xs: raise ValueError(f"{op} of an empty sequence: it needs at least one tensor")
  return xs[0]

class MovementMixin:
  def _resolve_dim(self, dim:int, extra:bool=False) -> int: return _resolve_dim(dim, len(self.shape), extra)
  def _int_axes(self, op:str, dims) -> None:
    """raise where op needs a concrete size on each of dims: a symbolic one would fail deep inside it on a comparison's truth value"""
    for d in dims:
      if not isinstance(s := self.shape[d], int): raise NotImplementedError(f"{op} does not support a symbolic axis (dim {d} is {_show(s)})")

  def reshape(self, shape, *args):
    cur = self.shape
    # the usual call, a tuple of sizes (no None, no -1), needs no normalising, and its sizes are known to be ints
    if not args and type(shape) is tuple and all([type(s) is int and s >= 0 for s in shape]): ints = True
    else:
      given = _argfix(shape, *args)
      if len(given) > len(cur) and any(s is None for s in given[len(cur):]):
        raise ValueError(f"reshape {given}: None keeps an axis's size, and shape {tuple(cur)} has only {len(cur)} axes")
      new = _int_args(tuple(s if s is not None else cur[i] for i, s in enumerate(given)), "reshape", "sizes", given)
      if (c := sum(1 for s in new if isinstance(s, int) and s == -1)) > 1: raise ValueError(f"only one -1 is allowed in reshape {new}")
      if c:
        if (known := prod(s for s in new if not (isinstance(s, int) and s == -1))) == 0:
          raise ValueError(f"cannot reshape shape {tuple(cur)} to {new}: the -1 is ambiguous next to a size 0")
        rest = prod(cur) // known if all_int(cur) and isinstance(known, int) else _inferred(tuple(cur), new)
        new = tuple(rest if isinstance(s, int) and s == -1 else s for s in new)
      if any(isinstance(s, int) and s < 0 for s in new): raise ValueError(f"negative size in reshape {new}")
      shape = new if (ints := all_int(new)) else tuple(_canonical(s) for s in new)
    if ints and all_int(cur):
      if math.prod(cur) != math.prod(shape):  # math.prod: in C, on ints only
        raise ValueError(f"cannot reshape shape {cur} (size {prod(cur)}) to {shape} (size {prod(shape)})")
    elif not _same_size(prod(cur), prod(shape)):  # symbolic: the sizes' canonical forms must agree
      raise ValueError(f"cannot reshape shape {_show_shape(cur)} (size {_show(prod(cur))}) to {_show_shape(shape)} (size {_show(prod(shape))})")
    return self if shape == tuple(cur) else self._mop(Ops.RESHAPE, shape)
  def expand(self, shape, *args):
    new = _int_args(_argfix(shape, *args), "expand", "sizes")
    if not all_int(new): new = tuple(_canonical(n) for n in new)  # a symbolic size matches the shape's by its one form (w+v is v+w)
    if len(new) < len(self.shape): raise ValueError(f"cannot expand {self.shape} to fewer dims {new}")
    if any(isinstance(n, int) and (n < -1 or (n == -1 and i < len(new)-len(self.shape))) for i, n in enumerate(new)):
      raise ValueError(f"cannot expand {tuple(self.shape)} to {new}: a size must be >= 0, or -1 to keep an existing axis")
    x = self.reshape((1,)*(len(new)-len(self.shape)) + tuple(self.shape))
    new = tuple(s if isinstance(n, int) and n == -1 else n for s, n in zip(x.shape, new))  # -1 keeps the size
    for i, (s, n) in enumerate(zip(x.shape, new)):
      if not (s is n or s == n or (isinstance(s, int) and s == 1)):
        raise ValueError(f"cannot expand {tuple(self.shape)} to {new}: axis {i} has size {s}, and only size-1 axes expand")
    return x if new == tuple(x.shape) else x._mop(Ops.EXPAND, new)
  def permute(self, order, *args):
    order = tuple(self._resolve_dim(o) for o in _argfix(order, *args))
    if sorted(order) != list(range(len(self.shape))): raise ValueError(f"{order} is not a permutation of the {len(self.shape)} axes of {self.shape}")
    return self if order == tuple(range(len(self.shape))) else self._mop(Ops.PERMUTE, order)
  def flip(self, axis, *args):
    axes = tuple(self._resolve_dim(a) for a in _argfix(axis, *args))
    if len(set(axes)) != len(axes): raise RuntimeError(f"flip got a repeated axis in {axes}")
    flips = tuple(i in axes for i in range(len(self.shape)))
    return self._mop(Ops.FLIP, flips) if any(flips) else self
  def shrink(self, arg:tuple):
    full = _pairs(arg, "shrink", "(start, end)", self.shape)
    for (b, e), s in zip(full, self.shape):
      if all_int((b, e, s)):
        if not 0 <= b <= e <= s: raise ValueError(f"shrink {arg} is out of bounds for shape {self.shape}")
      elif _outside(b, e, s):  # a bound Variable's value is checked (k=15 on 10 rows), and an unbound one where no value fits
        raise ValueError(f"shrink ({_show(b)}, {_show(e)}) is out of bounds for an axis of size {_show(s)} in shape {_show_shape(self.shape)}")
    return self if all(b == 0 and e == s for (b, e), s in zip(full, self.shape)) else self._mop(Ops.SHRINK, full)
  def _pad(self, arg:tuple):
    """pad with zeros; arg is one (before, after) per axis"""
    full = _pairs(arg, "pad", "(before, after)", self.shape)
    if any(isinstance(x, int) and x < 0 for p in full for x in p): raise ValueError(f"negative pad {arg}: use shrink")
    return self if all(p == (0, 0) for p in full) else self._mop(Ops.PAD, full)

  # *** derived ***
  def view(self, shape, *args): return self.reshape(shape, *args)
  def flatten(self, start_dim=0, end_dim=-1):
    s, e = self._resolve_dim(start_dim), self._resolve_dim(end_dim)
    if s > e and self.shape:
      raise ValueError(f"flatten() has invalid args: start_dim cannot come after end_dim, got {start_dim} and {end_dim} (axes {s} > {e})")
    return self.reshape(tuple(self.shape[:s]) + (prod(self.shape[s:e+1]),) + tuple(self.shape[e+1:]))
  def unflatten(self, dim:int, sizes:tuple):
    dim = self._resolve_dim(dim)
    return self.reshape(tuple(self.shape[:dim]) + tuple(sizes) + tuple(self.shape[dim+1:]))
  def squeeze(self, dim:int|tuple[int, ...]|list[int]|None=None):
    """the axes of size 1 removed: all, or those of dim (an axis or several, as torch takes), where they have size 1"""
    if dim is None: return self.reshape(tuple(s for s in self.shape if not (isinstance(s, int) and s == 1)))
    if not self.shape: return self
    dims = tuple(self._resolve_dim(d) for d in (dim if isinstance(dim, (tuple, list)) else (dim,)))
    if len(set(dims)) != len(dims): _repeated_axis("squeeze", dim, dims)
    return self.reshape(tuple(s for i, s in enumerate(self.shape) if not (i in dims and sint_eq(s, 1))))
  def unsqueeze(self, dim:int):
    dim = self._resolve_dim(dim, extra=True)
    return self.reshape(tuple(self.shape[:dim]) + (1,) + tuple(self.shape[dim:]))
  def transpose(self, dim0=1, dim1=0):
    order = list(range(len(self.shape)))
    order[self._resolve_dim(dim0)], order[self._resolve_dim(dim1)] = order[self._resolve_dim(dim1)], order[self._resolve_dim(dim0)]
    return self.permute(order)
  @property
  def T(self): return self.transpose() if len(self.shape) == 2 else self.permute(tuple(reversed(range(len(self.shape)))))
  def expand_as(self, other:Any): return self.expand(other.shape)
  def repeat(self, repeats, *args):
    reps = _int_args(_argfix(repeats, *args), "repeat", "counts")
    if any(isinstance(r, int) and r < 0 for r in reps): raise ValueError(f"repeat counts must be >= 0, got {reps}")
    if len(reps) < len(self.shape): raise ValueError(f"repeat {reps} needs a count for each of the {len(self.shape)} axes of {tuple(self.shape)}")
    base = tuple(self.shape)
    x = self.reshape((1,)*(len(reps)-len(base)) + base)
    shp = tuple(x.shape)
    x = x.reshape(tuple(v for s in shp for v in (1, s))).expand(tuple(v for r, s in zip(reps, shp) for v in (r, s)))
    return x.reshape(tuple(r*s for r, s in zip(reps, shp)))

  # *** basic indexing: ints, slices (any step), None, one Ellipsis ***
  def _getitem(self, idx:tuple):
    from tinygrad.uop.ops import UOp, ssimplify  # the UOp class is built from these mixins
    keep = (int, UOp)
    # numpy's integers made ints; the usual index (ints, slices of ints, None) is looked at once and kept as it is
    if any([not (type(i) is int or i is None or (type(i) is slice and (type(i.start) is int or i.start is None) and
                                                 (type(i.stop) is int or i.stop is None) and i.step is None)) for i in idx]):
      idx = tuple(slice(*(_as_int(v, keep) for v in (i.start, i.stop, i.step))) if isinstance(i, slice) else _as_int(i, keep) for i in idx)
    for i in idx:
      if isinstance(i, UOp) and not (dtypes.is_int(i.dtype) and i.device is None):
        raise TypeError(f"a UOp index must be an int Variable (bound) or an expression of them, got {i.op} of {i.dtype}")
      if isinstance(i, bool) or not (i is None or i is Ellipsis or isinstance(i, (int, slice, UOp))):
        raise TypeError(f"index {i!r} of type {type(i).__name__} is not supported: use ints, slices, None or ...")
      if isinstance(i, slice) and (bad := next((v for v in (i.start, i.stop, i.step) if v is not None and not isinstance(v, (int, UOp))),
                                               None)) is not None:
        raise TypeError(f"slice bound {bad!r} of type {type(bad).__name__} is not supported: use ints or bound Variables (x[:t.item()] for a "
                        f"tensor's value)")
    if (n_ell := sum(i is Ellipsis for i in idx)) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
    if (n_real := sum(isinstance(i, (int, slice, UOp)) for i in idx)) > len(self.shape):
      raise IndexError(f"too many indices for a tensor of shape {tuple(self.shape)}: {n_real} given")
    fill = (slice(None),) * (len(self.shape) - n_real)
    idx = tuple(x for i in idx for x in (fill if i is Ellipsis else (i,))) + (() if n_ell else fill)
    bounds, flips, picks, out, dim = [], [], [], [], 0  # picks: (count, stride) per axis
    for i in idx:
      if i is None: out.append(1); continue
      size = self.shape[dim]
      if isinstance(i, int):
        # a symbolic axis is checked at its current binding (an unbound one: against its largest size); a negative index counts back
        # from its end, a symbolic position
        n = size if isinstance(size, int) else _value_range(size)[1]
        if not -n <= i < n: raise IndexError(f"index {i} is out of bounds for axis {dim} with size {_show(size)}")
        at = i % size if isinstance(size, int) else i if i >= 0 else ssimplify(size + i)
        bounds.append((at, at + 1)); flips.append(False); picks.append((1, 1))
      elif isinstance(i, UOp):
        # a symbolic position (x[:, start_pos]): no negative wrap-around; its value at the current binding (an unbound Variable: its
        # whole range) must lie inside the axis
        lo, hi = _value_range(i)
        if lo < 0 or hi >= (size if isinstance(size, int) else size.vmax + 1):
          raise IndexError(f"symbolic index {i.render()} takes {lo}..{hi}, outside axis {dim} of size {_show(size)} (negative ones are not wrapped)")
        bounds.append((i, i + 1)); flips.append(False); picks.append((1, 1))
      elif not all_int(v for v in (i.start, i.stop, size) if v is not None):
        # symbolic: a bound Variable as a bound or size. Step 1 only; a negative int end counts back from the end (t[:v][-2:] is v-2..v).
        # The window is checked at the current binding: no clamping to the axis as python's slices do
        if i.step not in (None, 1):
          raise IndexError(f"a slice with a symbolic bound or axis size needs step 1, got {i} on axis {dim} of size {_show(size)}")
        start, stop = _from_end(i.start, size, 0), _from_end(i.stop, size, size)
        if _outside(start, stop, size):
          raise IndexError(f"slice {_show(start)}:{_show(stop)} is outside axis {dim} of size {_show(size)} (symbolic slices are not clamped)")
        bounds.append((start, stop)); flips.append(False); picks.append((1, 1)); out.append(stop if sint_eq(start, 0) else ssimplify(stop - start))
      else:
        start, stop, step = i.indices(size)
        n = len(range(start, stop, step))
        last = start + (n-1)*step
        # shrink to the span of the picked elements, flip it for a negative step, then keep every |step|-th
        bounds.append((0, 0) if n == 0 else (start, last+1) if step > 0 else (last, start+1))
        flips.append(step < 0 and n > 0); picks.append((n, abs(step) if n > 1 else 1)); out.append(n)
      dim += 1
    x = self.shrink(tuple(bounds)).flip(tuple(d for d, f in enumerate(flips) if f))
    if any(s > 1 for _, s in picks):
      # a span of (n-1)*s+1 padded to n*s splits into (n, s); the first of each s is the element
      x = x._pad(tuple((0, s-1) for _, s in picks)).reshape(tuple(v for n, s in picks for v in (n, s)))
      x = x.shrink(tuple(b for n, _ in picks for b in ((0, n), (0, 1)))).reshape(tuple(n for n, _ in picks))
    return x.reshape(tuple(out))

  # *** padding with a value or a border mode ***
  def pad(self, padding, mode:str="constant", value:float=0.0):
    """torch-style flat padding (last axis first: (left, right, top, bottom, ...)) or one (before, after)/None per axis.
    Negative amounts crop. mode: constant (with `value`), reflect, replicate, circular."""
    nd = len(self.shape)
    if not isinstance(padding, (tuple, list)): raise TypeError(f"padding must be a tuple or list, got {padding!r} ({type(padding).__name__})")
    if all(p is not None and not isinstance(p, (tuple, list)) for p in padding):
      if len(padding) % 2 or len(padding) > 2*nd: raise ValueError(f"flat padding {tuple(padding)} needs an even length of at most {2*nd}")
      flat = _int_args(tuple(padding), "pad", "amounts")
      pairs = [(0, 0)]*(nd - len(flat)//2) + [(flat[i], flat[i+1]) for i in range(len(flat)-2, -1, -2)]
    else: pairs = list(_pairs(padding, "pad", "(before, after)", self.shape))
    if mode == "constant" and value == 0 and all([type(b) is int and type(a) is int and b >= 0 and a >= 0 for b, a in pairs]):
      return self if not any([b or a for b, a in pairs]) else self._mop(Ops.PAD, tuple(pairs))  # the usual call: nothing to crop or check
    # a symbolic amount (a bound Variable) pads: only an int can be negative, and crop. As torch's, a reflection is of the whole axis
    # (x.pad((-1, 4), mode="reflect") of 5 rows mirrors row 0 too): it pads first and crops after; the other modes crop first
    def crop(p): return min(p, 0) if isinstance(p, int) else 0
    crops = tuple((-crop(b), crop(a)) for b, a in pairs)
    pairs = [(b - crop(b), a - crop(a)) for b, a in pairs]
    if mode == "reflect" and any(b or a for b, a in crops):
      x = self.pad(tuple(pairs), mode)
      return x.shrink(tuple((b, n + a) for (b, a), n in zip(crops, x.shape)))
    x = self.shrink(tuple((b, n + a) for (b, a), n in zip(crops, self.shape)))
    if mode == "constant":
      if value == 0: return x._pad(tuple(pairs))
      inside = x._scalar_like(True, dtypes.bool).reshape((1,)*nd).expand(x.shape)._pad(tuple(pairs))
      # value is a weak python scalar: 2.5 makes an int tensor float, 2 makes a bool tensor int, True keeps any dtype
      return inside.where(x._pad(tuple(pairs)), value)
    if mode not in ("reflect", "replicate", "circular"): raise NotImplementedError(f"pad mode {mode!r}: use constant, reflect, replicate or circular")
    x._int_axes(f"pad mode {mode!r}", [d for d, (b, a) in enumerate(pairs) if b or a])
    for d, (b, a) in enumerate(pairs):
      if not b and not a: continue
      s = x.shape[d]
      if mode == "circular" and max(b, a) > s: raise ValueError(f"circular padding {(b, a)} is larger than axis {d} of size {s}")
      if mode == "reflect" and max(b, a) >= s: raise ValueError(f"reflect padding {(b, a)} needs axis {d} longer than {max(b, a)}, it is {s}")
      def part(lo, hi): return x.shrink(tuple((lo, hi) if i == d else None for i in range(nd)))
      def edge(i, n): return part(i, i+1).expand(tuple(n if i2 == d else m for i2, m in enumerate(x.shape)))
      if mode == "circular": before, after = part(s-b, s), part(0, a)
      elif mode == "reflect": before, after = part(1, b+1).flip(d), part(s-a-1, s-1).flip(d)
      else: before, after = edge(0, b), edge(s-1, a)
      pieces = ([before] if b else []) + [x] + ([after] if a else [])
      x = pieces[0].cat(*pieces[1:], dim=d)
    return x

  # *** joining ***
  def cat(self, *args, dim:int=0):
    """concatenate along dim: each piece is zero-padded to the full length and the pieces are summed"""
    if isinstance(self, (list, tuple)): return _first_of(self, "cat").cat(*self[1:], *args, dim=dim)  # Tensor.cat([a, b]), as torch
    if not self.shape: raise ValueError("cat of 0-d tensors: there is no axis to join along; use stack")
    dim, xs = self._resolve_dim(dim), (self,) + args
    for t in args:
      if len(t.shape) != len(self.shape) or any(not sint_eq(a, b) for i, (a, b) in enumerate(zip(t.shape, self.shape)) if i != dim):
        raise ValueError(f"cat needs equal shapes outside dim {dim}, got {tuple(self.shape)} and {tuple(t.shape)}")
    dt = least_upper_dtype(*[t.dtype for t in xs])
    offs, total = [0, *itertools.accumulate(t.shape[dim] for t in xs)], sum(t.shape[dim] for t in xs)
    parts = [t.cast(dt)._pad(tuple((o, total-o-t.shape[dim]) if i == dim else (0, 0) for i in range(len(t.shape)))) for t, o in zip(xs, offs)]
    return functools.reduce(lambda a, b: a | b if dt is dtypes.bool else a + b, parts)
  def stack(self, *args, dim:int=0):
    if isinstance(self, (list, tuple)): return _first_of(self, "stack").stack(*self[1:], *args, dim=dim)  # Tensor.stack([a, b])
    dim = self._resolve_dim(dim, extra=True)
    if (other := next((t for t in args if len(t.shape) != len(self.shape) or not all(map(sint_eq, t.shape, self.shape))), None)) is not None:
      raise ValueError(f"stack needs tensors of equal shape, got {tuple(self.shape)} and {tuple(other.shape)}")
    return self.unsqueeze(dim).cat(*[t.unsqueeze(dim) for t in args], dim=dim)

  # *** 0, 1, ..., n-1 along a new axis, on self's device ***
  def _arange(self, n, dtype=None):
    """sum of k binary digits, one size-2 axis each ([0, 2^j] as a padded constant): O(log n) work per element and no reduce. A symbolic
    n (a bound Variable's expression: a KV cache's start_pos + T) is the arange of its largest value viewed up to n"""
    dtype = dtype or dtypes.default_int
    k = max((n if isinstance(n, int) else n.vmax) - 1, 0).bit_length()
    ret = self._scalar_like(0, dtype).reshape((1,)*k)
    for j in range(k): ret = ret + self._scalar_like(1 << (k-1-j), dtype).reshape((1,))._pad(((1, 0),)).reshape((1,)*j + (2,) + (1,)*(k-1-j))
    return ret.reshape((1 << k,)).shrink(((0, n),))
