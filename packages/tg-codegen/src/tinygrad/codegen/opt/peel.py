"""Loop peeling for gates that split a vector. A load or store whose gate `a*r + lanes + rest < n` varies along the access's stride-1
UPCAST lanes (an output width that the 16-lane tile does not divide: matmul 1000's last panel holds 8 columns, or the panel copy that
pads B to it) is a branch per lane in every trip of the loop, though only the last trips of r can fail it. LLVM's SLP vectorizer packs
no vector across those branches: it builds the whole tile from the store groups that share a gate, xmm and scalar pieces of 16-lane
accumulators (matmul 1000, tile 8x16, the kernel alone at 2 threads: 13.0 ms; with an output 1008 wide, no gate: 5.9 ms). The kernel
is split into copies of its loop nest instead: r over [lo, hi), where every lane's gate holds and folds away, then r over [0, lo) and
[hi, size) with the gates kept. A gate bounded at both ends (a padded copy's row, `0 < x*2 + lane < 29`) peels both ends: its loads were
a select per lane (pad of 8x256x28x28 by 1, 2 threads: 0.63 -> 0.3 ms). The copies share the THREAD axis; every other range of a gated
copy is a new one."""
from __future__ import annotations
import math
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp
from tinygrad.uop.symbolic import _linear
from tinygrad.codegen.opt.kernel import simplified, size

# the second copy gets fresh ranges of these kinds; a kernel with any other kind (work items, a group reduce) is left as it is
_COPIED = (AxisType.LOOP, AxisType.UPCAST, AxisType.UNROLL, AxisType.REDUCE)

def _conjuncts(g:UOp) -> list[UOp]: return _conjuncts(g.src[0]) + _conjuncts(g.src[1]) if g.op is Ops.AND else [g]

def _lanes(idx:UOp) -> set[UOp]:
  """the UPCAST ranges the address idx walks with stride 1: its lanes that become one vector access"""
  lin = _linear(simplified(idx))
  return {b for b, m in lin[0].items() if b.op is Ops.RANGE and b.arg[1] is AxisType.UPCAST and m == 1} if lin is not None else set()

def _splitting(gate:UOp, idx:UOp, load:bool=False) -> list[tuple[dict[UOp, int], int, float, float]]:
  """(coefficients, constant, lo, hi) of each conjunct `lo <= expr < hi` of the gate (`expr < n` or `k < expr`) that varies along the
  vector lanes of the address idx, or of a load's any conjunct where the address has vector lanes (a gated load is a select per lane,
  even where its gate is one for all of them: a padded copy's first and last rows), with expr affine in output ranges of known sizes,
  every coefficient positive"""
  unit, ret = _lanes(idx), []
  for c in _conjuncts(simplified(gate)) if unit else []:
    if c.op is not Ops.CMPLT: continue
    if c.src[1].op is Ops.CONST: side, bound = c.src[0], (-math.inf, c.src[1].arg)
    elif c.src[0].op is Ops.CONST: side, bound = c.src[1], (c.src[0].arg + 1, math.inf)
    else: continue
    if (e := _linear(side)) is None or not (load or unit & e[0].keys()): continue
    if all(b.op is Ops.RANGE and size(b) is not None and m > 0 and b.arg[1] is not AxisType.REDUCE for b, m in e[0].items()):
      ret.append((e[0], e[1]) + bound)
  return ret

def _gated(ast:UOp) -> list[tuple[UOp, UOp, bool]]:
  """(gate, address, is a load) of each gated load and store"""
  return [(u.src[2], u.src[0].src[1], u.op is Ops.LOAD) for u in ast.toposort() if u.op in (Ops.LOAD, Ops.STORE) and len(u.src) == 3
          and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2]

def vector_gate_ranges(ast:UOp) -> set[UOp]:
  """the ranges of the gates that split vectors: a THREAD split of another axis leaves them to one loop the peel can split"""
  return {r for g, idx, ld in _gated(ast) for coefs, _, _, _ in _splitting(g, idx, ld) for r in coefs}

def _span(coefs:dict[UOp, int], k:int, lo:float, hi:float, r:UOp) -> tuple[int, int]:
  """the trips [a, b) of r in which every value of the other ranges keeps `lo <= expr < hi` true"""
  m, rest = coefs[r], k + sum(mb * (size(b) - 1) for b, mb in coefs.items() if b is not r)
  a = 0 if lo == -math.inf else max(0, math.ceil((lo - k) / m))
  b = size(r) if hi == math.inf else min(size(r), max(0, math.ceil((hi - rest) / m)))
  return a, b

def _peel_spans(ast:UOp) -> list[tuple[UOp, int, int]]:
  """(r, a, b): a LOOP range r of a conjunct that splits vectors, and the trips [a, b) of it in which every such conjunct of r holds for
  every value of the other ranges (0 < b - a < size(r))"""
  spans: dict[UOp, tuple[int, int]] = {}
  for g, idx, ld in _gated(ast):
    for coefs, k, lo, hi in _splitting(g, idx, ld):
      for r in coefs:
        if r.arg[1] is not AxisType.LOOP: continue
        a, b = _span(coefs, k, lo, hi, r)
        pa, pb = spans.get(r, (0, size(r)))
        spans[r] = (max(a, pa), min(b, pb))
  return [(r, a, b) for r, (a, b) in spans.items() if 0 < b - a < size(r)]

def peel_gates(sink:UOp) -> UOp:
  """the kernel with its loops split where a gate splits the vectors of a load or store (see the module's docstring); unchanged where
  none does, where the ungated part would still gate vector lanes, or where the kernel is not one loop nest (one END) of ranges the copy
  can renew"""
  if len(sink.src) != 1 or (end := sink.src[0]).op is not Ops.END: return sink
  rngs = [u for u in end.toposort() if u.op is Ops.RANGE]
  if any(r.arg[1] not in _COPIED + (AxisType.THREAD,) for r in rngs): return sink
  parts = _peeled(end, [max(x.arg[0] for x in rngs) + 1])
  # only where that frees the ungated part's vectors (the first of the parts)
  return sink if len(parts) == 1 or _lane_gated(parts[0]) else sink.replace(src=tuple(parts))

def _peeled(end:UOp, next_id:list[int]) -> list[UOp]:
  """the loop nest end as its ungated part first, then its gated parts: the loop with the largest share of ungated trips is split, then
  the ungated part again while a gate is left (a padded copy: rows, then each row's first and last vector)"""
  cands = [c for c in _peel_spans(end) if c[0] in end.ended_ranges]
  if not cands: return [end]
  r, a, b = max(cands, key=lambda c: (c[2] - c[1]) / size(c[0]))
  rngs, gated = [u for u in end.toposort() if u.op is Ops.RANGE], []
  for lo, hi in ((0, a), (b, size(r))):
    if lo == hi: continue
    off, next_id[0] = next_id[0], next_id[0] + max(x.arg[0] for x in rngs) + 1
    fresh = {x: x.replace(arg=(x.arg[0] + off,) + tuple(x.arg[1:])) for x in rngs if x.arg[1] in _COPIED and x is not r}
    gated.append(_part(end, r, r.replace(arg=(r.arg[0] + off,) + tuple(r.arg[1:])), lo, hi, fresh))
  return _peeled(_part(end, r, r, a, b, {}), next_id) + gated

def _lane_gated(x:UOp) -> bool:
  """some gated load or store of x has a gate that depends on the vector lanes of its address, or is a load with vector lanes"""
  return any(not (sg.op is Ops.CONST and sg.arg is True) and (_lanes(idx) & set(sg.toposort()) or (ld and _lanes(idx)))
             for g, idx, ld in _gated(x) if (sg := simplified(g)) is not None)

def _part(end:UOp, r:UOp, new:UOp, lo:int, hi:int, fresh:dict[UOp, UOp]) -> UOp:
  """the loop nest `end` with r running over [lo, hi) as the range new, the other ranges renamed by fresh; one trip is no loop"""
  n = new.replace(src=(new.src[0].const_like(hi - lo),)) if hi - lo > 1 else None
  body = end.src[0].substitute(fresh | {r: r.const_like(lo) if n is None else n + lo if lo else n})
  return body.end(*[n if x is r else fresh.get(x, x) for x in end.src[1:] if x is not r or n is not None])
