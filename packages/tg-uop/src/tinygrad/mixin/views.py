"""Movement composites shared by UOp and Tensor: rolling, interleaved repeats, splitting, grids and einops' rearrange. Each is a
view (reshape, expand, shrink, pad) of its input, so the scheduler fuses it into whatever reads it. A class using it provides the movement mixin."""
from __future__ import annotations
from tinygrad.mixin.movement import _int_arg, _int_args, _div_exact, _same_size, _show

def _ints(x) -> tuple: return tuple(x) if isinstance(x, (tuple, list)) else (x,)

def _rearrange_side(side:str, formula:str) -> list[list[str]]:
  """'a (b c) ... 1' -> [['a'], ['b', 'c'], ['...'], []]: one group per axis; '1' and '()' are axes of size 1"""
  groups, cur = [], None
  for tok in side.replace("(", " ( ").replace(")", " ) ").split():
    if tok == "(":
      if cur is not None: raise ValueError(f"rearrange {formula!r}: nested parentheses")
      cur = []
    elif tok == ")":
      if cur is None: raise ValueError(f"rearrange {formula!r}: ')' without '('")
      groups.append(cur)
      cur = None
    elif tok != "1" and tok != "..." and not tok.isidentifier(): raise ValueError(f"rearrange {formula!r}: {tok!r} is not an axis name")
    elif cur is not None: cur.append(tok) if tok != "1" else None
    else: groups.append([] if tok == "1" else [tok])
  if cur is not None: raise ValueError(f"rearrange {formula!r}: '(' without ')'")
  return groups

class ViewsMixin:
  def roll(self, shifts, dims=None):
    """elements shifted by `shifts` along `dims`, the ones pushed off the end coming back at the start; dims=None rolls the flattened tensor"""
    if dims is None: return self.flatten().roll(shifts, 0).reshape(self.shape)
    shifts, dims = _int_args(_ints(shifts), "roll", "shifts"), tuple(self._resolve_dim(d) for d in _ints(dims))
    if len(shifts) != len(dims): raise ValueError(f"roll needs one shift per dim, got shifts {shifts} for dims {dims}")
    self._int_axes("roll", dims)
    x = self
    for s, d in zip(shifts, dims):
      if not (n := x.shape[d]) or not (s := s % n): continue
      # two copies side by side; the window starting n-s into them is the rolled axis
      x = x.repeat(tuple(2 if i == d else 1 for i in range(len(x.shape)))).shrink(tuple((n-s, 2*n-s) if i == d else None for i in range(len(x.shape))))
    return x
  def repeat_interleave(self, repeats:int, dim:int|None=None):
    """each element `repeats` times in a row along dim (the flattened tensor for dim=None): [1, 2] -> [1, 1, 2, 2]"""
    if not isinstance(repeats, int) or repeats < 0: raise ValueError(f"repeat_interleave needs an int repeats >= 0, got {repeats!r}")
    x, dim = (self.flatten(), 0) if dim is None else (self, self._resolve_dim(dim))
    shp = tuple(x.shape)
    return x.unsqueeze(dim+1).expand(shp[:dim+1] + (repeats,) + shp[dim+1:]).flatten(dim, dim+1)
  def rearrange(self, formula:str, **sizes):
    """einops' rearrange: 'b c (h w) -> b h w c' regroups, splits (sizes given by keyword, one per group may be inferred) and
    reorders axes; '...' stands for the axes not named, '1' or '()' for an axis of size 1"""
    if formula.count("->") != 1: raise ValueError(f"rearrange {formula!r}: needs exactly one '->'")
    lhs, rhs = (_rearrange_side(side, formula) for side in formula.split("->"))
    n_ell = len(self.shape) - (len(lhs) - any(g == ["..."] for g in lhs))
    if any("..." in g and g != ["..."] for g in lhs) or sum(g == ["..."] for g in lhs) > 1 or n_ell < 0 or (n_ell and ["..."] not in lhs):
      raise ValueError(f"rearrange {formula!r}: the left side names {len(lhs)} axes, the tensor has shape {tuple(self.shape)}")
    if len(left := [n for g in lhs for n in g]) != len(set(left)): raise ValueError(f"rearrange {formula!r}: an axis is named twice on the left")
    ell = [f"...{i}" for i in range(n_ell)]
    names, known = [], dict(sizes)
    groups = [[[e] for e in ell] if g == ["..."] else [g] for g in lhs]
    for grp, size in zip([g for gs in groups for g in gs], self.shape):
      if ell and grp[0] in ell: known[grp[0]] = size
      unknown = [n for n in grp if n not in known]
      have = 1
      for n in grp:
        if n in known: have *= known[n]
      # a symbolic size (a bound Variable's) splits where its canonical form is a multiple of the sizes given
      if len(unknown) > 1 or (not unknown and not _same_size(have, size)) or (unknown and (rest := _div_exact(size, have)) is None):
        raise ValueError(f"rearrange {formula!r}: axis ({' '.join(grp)}) of size {_show(size)} can't be split with sizes {sizes}")
      if unknown: known[unknown[0]] = rest
      names += grp
    # on the right '...' alone is the unnamed axes each as its own, inside parentheses they merge into that group
    rgroups = [grp for g in rhs for grp in ([[e] for e in ell] if g == ["..."] else [[n for t in g for n in (ell if t == "..." else [t])]])]
    out = [n for g in rgroups for n in g]
    if sorted(out) != sorted(names) or len(set(names)) != len(names):
      raise ValueError(f"rearrange {formula!r}: each axis must appear once on both sides, left {names}, right {out}")
    x = self.reshape(tuple(known[n] for n in names)).permute(tuple(names.index(n) for n in out))
    new_shape = []
    for g in rgroups:
      size = 1
      for n in g: size *= known[n]
      new_shape.append(size)
    return x.reshape(tuple(new_shape))
  def split(self, sizes, dim:int=0) -> tuple:
    """pieces along dim: of `sizes` each (the last one smaller) for an int, else of the listed sizes, which must add up to the axis"""
    dim = self._resolve_dim(dim)
    self._int_axes("split", (dim,))
    n = self.shape[dim]
    if isinstance(sizes, (tuple, list)): sizes = list(_int_args(tuple(sizes), "split", "sizes"))
    else:
      if (sizes := _int_arg(sizes, "split", "sizes", sizes)) <= 0: raise ValueError(f"split size must be positive, got {sizes}")
      sizes = [min(sizes, n - i) for i in range(0, n, sizes)] or [0]
    if sum(sizes) != n: raise ValueError(f"split sizes {tuple(sizes)} add up to {sum(sizes)}, but axis {dim} of shape {tuple(self.shape)} has {n}")
    offs = [sum(sizes[:i]) for i in range(len(sizes)+1)]
    return tuple(self.shrink(tuple((offs[i], offs[i+1]) if d == dim else None for d in range(len(self.shape)))) for i in range(len(sizes)))
  def chunk(self, chunks:int, dim:int=0) -> tuple:
    """at most `chunks` pieces of equal size (the last one smaller) along dim"""
    if not isinstance(chunks, int) or chunks <= 0: raise ValueError(f"chunk needs a positive int number of chunks, got {chunks!r}")
    dim = self._resolve_dim(dim)
    self._int_axes("chunk", (dim,))
    n = self.shape[dim]
    return self.split(-(-n // chunks) if n else [0]*chunks, dim)
  def meshgrid(self, *args, indexing:str="ij") -> tuple:
    """coordinate grids of self and args (each flattened): "ij" puts the i-th tensor on axis i, "xy" swaps the first two axes, like numpy"""
    if indexing not in ("ij", "xy"): raise ValueError(f"meshgrid indexing must be 'ij' or 'xy', not {indexing!r}")
    ts = [t.flatten() for t in (self,) + args]
    shape = [t.shape[0] for t in ts]
    axes = list(range(len(ts)))
    if indexing == "xy" and len(ts) > 1: axes[0], axes[1], shape[0], shape[1] = 1, 0, shape[1], shape[0]
    return tuple(t.reshape(tuple(t.shape[0] if i == a else 1 for i in range(len(ts)))).expand(tuple(shape)) for t, a in zip(ts, axes))
