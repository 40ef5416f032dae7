"""Movement ops shared by UOp and Tensor. A class using it provides: shape, _mop(op, arg). Arguments are normalised here, once,
so the IR only ever sees full-rank tuples; no-op movements return self."""
from __future__ import annotations
from typing import Any
from tinygrad.uop import Ops
from tinygrad.helpers import prod, all_int

def _argfix(*x) -> tuple:
  if x and isinstance(x[0], (tuple, list)):
    if len(x) != 1: raise ValueError(f"bad arguments {x}: pass one tuple or several ints")
    return tuple(x[0])
  return tuple(x)

def _resolve_dim(dim:int, ndim:int, extra:bool=False) -> int:
  total = ndim + int(extra)
  if not -max(1, total) <= dim < max(1, total): raise IndexError(f"dim {dim} is out of range for a tensor with {ndim} dims")
  return dim + total if dim < 0 else dim

class MovementMixin:
  def _resolve_dim(self, dim:int, extra:bool=False) -> int: return _resolve_dim(dim, len(self.shape), extra)

  def reshape(self, shape, *args):
    new = tuple(s if s is not None else self.shape[i] for i, s in enumerate(_argfix(shape, *args)))
    if (c := sum(1 for s in new if isinstance(s, int) and s == -1)) > 1: raise ValueError(f"only one -1 is allowed in reshape {new}")
    if c: new = tuple(-prod(self.shape) // prod(new) if isinstance(s, int) and s == -1 else s for s in new)
    if any(isinstance(s, int) and s < 0 for s in new): raise ValueError(f"negative size in reshape {new}")
    if all_int(self.shape) and all_int(new) and prod(self.shape) != prod(new):
      raise ValueError(f"cannot reshape shape {self.shape} (size {prod(self.shape)}) to {new} (size {prod(new)})")
    return self if new == tuple(self.shape) else self._mop(Ops.RESHAPE, new)
  def expand(self, shape, *args):
    new = _argfix(shape, *args)
    if len(new) < len(self.shape): raise ValueError(f"cannot expand {self.shape} to fewer dims {new}")
    x = self.reshape((1,)*(len(new)-len(self.shape)) + tuple(self.shape)) if len(new) > len(self.shape) else self
    new = tuple(s if not (isinstance(n, int) and n == -1) else s for s, n in zip(x.shape, new)) if any(isinstance(n, int) and n == -1 for n in new) \
      else new
    for s, n in zip(x.shape, new):
      if not (s is n or s == n or (isinstance(s, int) and s == 1)): raise ValueError(f"cannot expand {self.shape} to {new}")
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
    if len(arg) != len(self.shape): raise ValueError(f"shrink {arg} needs one (start, end) per axis of {self.shape}")
    full = tuple((0, s) if a is None else tuple(a) for a, s in zip(arg, self.shape))
    for (b, e), s in zip(full, self.shape):
      if all_int((b, e, s)) and not 0 <= b <= e <= s: raise ValueError(f"shrink {arg} is out of bounds for shape {self.shape}")
    return self if all(b == 0 and e is s or (isinstance(e, int) and e == s and b == 0) for (b, e), s in zip(full, self.shape)) \
      else self._mop(Ops.SHRINK, full)
  def _pad(self, arg:tuple):
    """pad with zeros; arg is one (before, after) per axis"""
    if len(arg) != len(self.shape): raise ValueError(f"pad {arg} needs one (before, after) per axis of {self.shape}")
    full = tuple((0, 0) if a is None else tuple(a) for a in arg)
    if any(isinstance(x, int) and x < 0 for p in full for x in p): raise ValueError(f"negative pad {arg}: use shrink")
    return self if all(p == (0, 0) for p in full) else self._mop(Ops.PAD, full)

  # *** derived ***
  def view(self, shape, *args): return self.reshape(shape, *args)
  def flatten(self, start_dim=0, end_dim=-1):
    s, e = self._resolve_dim(start_dim), self._resolve_dim(end_dim)
    return self.reshape(tuple(self.shape[:s]) + (prod(self.shape[s:e+1]),) + tuple(self.shape[e+1:]))
  def unflatten(self, dim:int, sizes:tuple):
    dim = self._resolve_dim(dim)
    return self.reshape(tuple(self.shape[:dim]) + tuple(sizes) + tuple(self.shape[dim+1:]))
  def squeeze(self, dim:int|None=None):
    if dim is None: return self.reshape(tuple(s for s in self.shape if not (isinstance(s, int) and s == 1)))
    dim = self._resolve_dim(dim)
    return self if self.shape[dim] != 1 else self.reshape(tuple(self.shape[:dim]) + tuple(self.shape[dim+1:]))
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
    reps = _argfix(repeats, *args)
    base = tuple(self.shape)
    x = self.reshape((1,)*(len(reps)-len(base)) + base)
    shp = tuple(x.shape)
    x = x.reshape(tuple(v for s in shp for v in (1, s))).expand(tuple(v for r, s in zip(reps, shp) for v in (r, s)))
    return x.reshape(tuple(r*s for r, s in zip(reps, shp)))
