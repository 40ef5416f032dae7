"""A sum of gated loads from one buffer whose gates pin one integer e into disjoint intervals, `where(e in I_0 & s_0, x[i_0], 0) + ...`,
is at most one of its terms: a single load at the address picked by e, gated by the picked term's gate. A stack or cat of shifted views of
one buffer builds exactly this (a conv's windows as one slice per tap, as tensor_conv once built them: summed as written, every element
of the b8 128x28x28 3x3 window copy ran all 9 gated loads where the tap per lane is known). The picks compare e with constants only: in
a loop where e does not change they hoist out of it. Exact: the dropped terms are the constant 0 (a -0.0 stays -0.0, where the sum gave +0.0).
Checked on the kernel AST after its first simplification, before ranges are split or unrolled."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite
from tinygrad.dtype import dtypes
from tinygrad.uop.symbolic import _linear

def _conjuncts(c:UOp) -> list[UOp]: return _conjuncts(c.src[0]) + _conjuncts(c.src[1]) if c.op is Ops.AND and c.dtype == dtypes.bool else [c]

def _addends(u:UOp) -> list[UOp]: return _addends(u.src[0]) + _addends(u.src[1]) if u.op is Ops.ADD and u.dtype == u.src[0].dtype else [u]

def _bound(c:UOp) -> tuple[UOp, int, int]|None:
  """(e, lo, hi) when c is e < k or k < e for an integer e and constant k: e in [lo, hi)"""
  if c.op is not Ops.CMPLT: return None
  a, b = c.src
  if b.op is Ops.CONST and a.op is not Ops.CONST and dtypes.is_int(a.dtype): return a, int(a.vmin), b.arg
  if a.op is Ops.CONST and b.op is not Ops.CONST and dtypes.is_int(b.dtype): return b, a.arg + 1, int(b.vmax) + 1
  return None

def _term(t:UOp) -> tuple[dict[UOp, tuple[int, int]], UOp, UOp]|None:
  """a summand where(c, [where(s,] load(buf[i], 0, g) [, 0)], 0) as ({e: interval that c pins it to}, whole gate, buf[i])"""
  if t.op is not Ops.WHERE or t.src[2].op is not Ops.CONST or t.src[2].arg != 0: return None
  gate, v = t.src[0], t.src[1]
  if v.op is Ops.WHERE and v.src[2].op is Ops.CONST and v.src[2].arg == 0: gate, v = gate & v.src[0], v.src[1]
  if v.op is not Ops.LOAD or len(v.src) != 3 or v.src[1].op is not Ops.CONST or v.src[1].arg != 0 or v.src[0].op is not Ops.INDEX: return None
  if len(v.src[0].src) != 2: return None
  ivals: dict[UOp, tuple[int, int]] = {}
  for c in _conjuncts(gate):
    if (b := _bound(c)) is None: continue
    lo, hi = ivals.get(b[0], (b[1], b[2]))
    ivals[b[0]] = (max(lo, b[1]), min(hi, b[2]))
  return ivals, gate & v.src[2], v.src[0]

def merge(add:UOp) -> UOp|None:
  if not dtypes.is_float(add.dtype) or len(ts := _addends(add)) < 2 or (parts := [_term(t) for t in ts])[0] is None: return None
  if any(p is None or p[2].src[0] is not parts[0][2].src[0] for p in parts): return None
  for e in parts[0][0]:
    if not all(e in p[0] and p[0][e][0] < p[0][e][1] for p in parts): continue
    order = sorted(parts, key=lambda p: p[0][e])
    if any(a[0][e][1] > b[0][e][0] for a, b in zip(order, order[1:])): continue  # overlapping: two terms may both be nonzero
    # walking up the intervals, e < hi picks the first term that can hold; past the last, the last term's own gate is off
    gate, idx, last = order[-1][1], order[-1][2].src[1], _linear(order[-1][2].src[1])
    # addresses that differ by constants (shifted views): the pick is among those constants, a function of e alone
    shifts = [(l[1] - last[1]) if last is not None and (l := _linear(p[2].src[1])) is not None and l[0] == last[0] else None for p in order[:-1]]
    off = idx.const_like(0) if all(d is not None for d in shifts) else None
    for p, d in zip(reversed(order[:-1]), reversed(shifts)):
      pick = e < p[0][e][1]
      gate = pick.where(p[1], gate)
      if off is None: idx = pick.where(p[2].src[1], idx)
      else: off = pick.where(off.const_like(d), off)
    if off is not None: idx = idx + off
    return UOp(Ops.LOAD, add.dtype, (parts[0][2].replace(src=(parts[0][2].src[0], idx)), add.const_like(0), gate))
  return None

pm_disjoint_gather = PatternMatcher([(UPat(Ops.ADD, name="add"), merge)])

def merge_disjoint_loads(ast:UOp) -> UOp: return graph_rewrite(ast, pm_disjoint_gather, bottom_up=True, name="kernel")
