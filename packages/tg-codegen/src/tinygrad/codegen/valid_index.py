"""Index math simplified by the conditions that select its load. A conv's input gradient (col2im) sums, for each input pixel, the
im2col gradient of every tap whose window holds the pixel: `where(0 < w & w < 12, load(g[((w - 1) % 11)*288 + ((h + (w - 1)//11) % 11)
*3168 ...]), 0)`. The view keeps the address in bounds for every lane with remainders and divisions: the load runs whether or not its
value is selected. Under the where's condition and those of the wheres around it (or the load's gate, which holds them), the ranges
are bounded tighter, and there the remainders and divisions fold away ((w - 1) % 11 is w - 1 for w in [1, 11]). Each bounded range is
then clamped into its bounds: the address is one a valid lane reads, in the buffer for every lane, and each clamp is computed in its
own range's loop (MNIST's conv-2 input gradient, (64, 13, 13, 32) at 2 threads: 36 divisions per pixel, 0.72 / 1.1 ms best / median
-> 0.52 / 0.70). Only where the folded address holds fewer divisions."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.codegen.onehot_gather import _conjuncts

_DIVISIONS = (Ops.FLOORDIV, Ops.FLOORMOD)

def _bound(c:UOp) -> tuple[UOp, int|None, int|None]|None:
  """(range, lowest, highest) that the condition c bounds a range to: `r < k`, `k < r` (r plus a constant on either side folds in)"""
  if c.op is not Ops.CMPLT: return None
  a, b = c.src
  def split(x:UOp) -> tuple[UOp, int]|None:
    if x.op is Ops.RANGE: return x, 0
    if x.op is Ops.ADD and x.src[0].op is Ops.RANGE and x.src[1].op is Ops.CONST and isinstance(x.src[1].arg, int): return x.src[0], x.src[1].arg
    return None
  if b.op is Ops.CONST and isinstance(b.arg, int) and (s := split(a)) is not None: return s[0], None, b.arg - 1 - s[1]   # r + o < k
  if a.op is Ops.CONST and isinstance(a.arg, int) and (s := split(b)) is not None: return s[0], a.arg + 1 - s[1], None   # k < r + o
  return None

def _divisions(x:UOp) -> int: return sum(1 for u in x.toposort() if u.op in _DIVISIONS)

def _folded(idx:UOp, conds:frozenset[UOp]) -> UOp|None:
  """idx with its ranges bounded by conds (each clamped into its bounds); None where that folds no division away"""
  bounds: dict[UOp, list[int]] = {}
  for c in conds:
    if (got := _bound(c)) is None: continue
    r, lo, hi = got
    b = bounds.setdefault(r, [r.vmin, r.vmax])
    if lo is not None: b[0] = max(b[0], lo)
    if hi is not None: b[1] = min(b[1], hi)
  used = {u for u in idx.toposort() if u.op is Ops.RANGE}
  if not (bounds := {r: b for r, b in bounds.items() if r in used and b[0] <= b[1] and b != [r.vmin, r.vmax]}): return None
  stand_ins = {r: UOp.variable(f"valid_{i}", lo, hi, r.dtype) for i, (r, (lo, hi)) in enumerate(bounds.items())}
  if _divisions(simpler := idx.substitute(stand_ins).simplify()) >= _divisions(idx): return None
  # each range clamped into its bounds: the address is one the valid lanes read, in the buffer for every lane, and each clamp is
  # computed in its range's own loop (a clamp of the whole address would be computed per element of the innermost one)
  def clamped(r:UOp, lo:int, hi:int) -> UOp:
    if lo > r.vmin: r = r.maximum(r.const_like(lo))
    return r.minimum(r.const_like(hi)) if hi < r.vmax else r
  return simpler.substitute({v: clamped(r, *bounds[r]) for r, v in stand_ins.items()})

def fold_valid_indices(sink:UOp) -> UOp:
  """each load's address folded under its gate, or for an ungated load the conditions of the wheres that select it (on every path
  to it)"""
  nodes = list(sink.toposort())
  loads = [u for u in nodes if u.op is Ops.LOAD and len(u.src) in (1, 3) and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2
           and any(x.op in _DIVISIONS for x in u.src[0].src[1].toposort())]
  if not loads: return sink  # most kernels: no address divides, nothing to find out
  # the conditions known true wherever a node's value is used: the intersection over its users of what each passes down
  known: dict[UOp, frozenset[UOp]] = {sink: frozenset()}
  for u in reversed(nodes):
    if (mine := known.get(u)) is None: continue
    for i, s in enumerate(u.src):
      passed = mine | frozenset(_conjuncts(u.src[0])) if u.op is Ops.WHERE and i == 1 else mine
      known[s] = passed if s not in known else known[s] & passed
  replace: dict[UOp, UOp] = {}
  for u in loads:
    # a gated load (LOAD(index, alt, gate)) by its gate alone: it reads memory wherever the gate holds, used or not, and there its
    # clamps change nothing. An ungated one reads everywhere, at an address its view keeps in the buffer at every point of the ranges
    if not (conds := frozenset(_conjuncts(u.src[2])) if len(u.src) == 3 else known.get(u, frozenset())): continue
    buf, idx = u.src[0].src
    if (new := _folded(idx, conds)) is not None: replace[u] = u.replace(src=(u.src[0].replace(src=(buf, new)),) + u.src[1:])
  return sink.substitute(replace) if replace else sink
