"""Loop peeling for gates that split a vector. A load or store whose gate `a*r + lanes + rest < n` varies along the access's stride-1
UPCAST lanes (an output width that the 16-lane tile does not divide: matmul 1000's last panel holds 8 columns, or the panel copy that
pads B to it) is a branch per lane in every trip of the loop, though only the last trips of r can fail it. LLVM's SLP vectorizer packs
no vector across those branches: it builds the whole tile from the store groups that share a gate, xmm and scalar pieces of 16-lane
accumulators (matmul 1000, tile 8x16, the kernel alone at 2 threads: 13.0 ms; with an output 1008 wide, no gate: 5.9 ms). The kernel
is split into two copies of its loop nest instead: r over [0, p), where every lane's gate holds and folds away, then r over [p, size)
with the gates kept. The copies share the THREAD axis; every other range of the second copy is a new one."""
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

def _splitting(gate:UOp, idx:UOp) -> list[tuple[dict[UOp, int], int, int]]:
  """(coefficients, constant, n) of each conjunct `expr < n` of the gate that varies along the vector lanes of the address idx, with
  expr affine in output ranges of known sizes, every coefficient positive"""
  unit, ret = _lanes(idx), []
  for c in _conjuncts(simplified(gate)) if unit else []:
    if c.op is not Ops.CMPLT or c.src[1].op is not Ops.CONST or (e := _linear(c.src[0])) is None or not unit & e[0].keys(): continue
    if all(b.op is Ops.RANGE and size(b) is not None and m > 0 and b.arg[1] is not AxisType.REDUCE for b, m in e[0].items()):
      ret.append((e[0], e[1], c.src[1].arg))
  return ret

def _gated(ast:UOp) -> list[tuple[UOp, UOp]]:
  """(gate, address) of each gated load and store"""
  return [(u.src[2], u.src[0].src[1]) for u in ast.toposort() if u.op in (Ops.LOAD, Ops.STORE) and len(u.src) == 3 and u.src[0].op is Ops.INDEX
          and len(u.src[0].src) == 2]

def vector_gate_ranges(ast:UOp) -> set[UOp]:
  """the ranges of the gates that split vectors: a THREAD split of another axis leaves them to one loop the peel can split"""
  return {r for g, idx in _gated(ast) for coefs, _, _ in _splitting(g, idx) for r in coefs}

def _peel_point(gate:UOp, idx:UOp) -> tuple[UOp, int]|None:
  """(r, p): a LOOP range r of a conjunct that splits vectors and the trips p of it in which every value of the other ranges keeps the
  conjunct true. The r whose first p trips are the largest share of it"""
  best: tuple[float, UOp, int]|None = None
  for coefs, k, n in _splitting(gate, idx):
    top = k + sum(m * (size(b) - 1) for b, m in coefs.items())
    for r, m in coefs.items():
      if r.arg[1] is not AxisType.LOOP: continue
      p = min(size(r), max(0, math.ceil((n - (top - m * (size(r) - 1))) / m)))
      if 0 < p < size(r) and (best is None or p / size(r) > best[0]): best = (p / size(r), r, p)
  return None if best is None else (best[1], best[2])

def peel_gates(sink:UOp) -> UOp:
  """the kernel with one loop split where a gate splits the vectors of a load or store (see the module's docstring); unchanged where
  none does, or where the kernel is not one loop nest (one END) of ranges the copy can renew"""
  if len(sink.src) != 1 or (end := sink.src[0]).op is not Ops.END: return sink
  rngs = [u for u in end.toposort() if u.op is Ops.RANGE]
  if any(r.arg[1] not in _COPIED + (AxisType.THREAD,) for r in rngs): return sink
  cands = [pp for g, idx in _gated(end) if (pp := _peel_point(g, idx)) is not None and pp[0] in end.ended_ranges]
  if not cands: return sink
  r, p = max(cands, key=lambda c: c[1] / size(c[0]))
  off = max(x.arg[0] for x in rngs) + 1
  fresh = {x: x.replace(arg=(x.arg[0] + off,) + tuple(x.arg[1:])) for x in rngs if x.arg[1] in _COPIED and x is not r}
  # only where that frees the first part's vectors: a conv's padded copy, gated at both ends of a row, would stay gated at its start
  if _lane_gated(main := _part(end, r, r, 0, p, {})): return sink
  return sink.replace(src=(main, _part(end, r, r.replace(arg=(r.arg[0] + off,) + tuple(r.arg[1:])), p, size(r), fresh)))

def _lane_gated(x:UOp) -> bool:
  """some gated load or store of x has a gate that depends on the vector lanes of its address"""
  return any(_lanes(idx) & set(simplified(g).toposort()) for g, idx in _gated(x))

def _part(end:UOp, r:UOp, new:UOp, lo:int, hi:int, fresh:dict[UOp, UOp]) -> UOp:
  """the loop nest `end` with r running over [lo, hi) as the range new, the other ranges renamed by fresh; one trip is no loop"""
  n = new.replace(src=(new.src[0].const_like(hi - lo),)) if hi - lo > 1 else None
  body = end.src[0].substitute(fresh | {r: r.const_like(lo) if n is None else n + lo if lo else n})
  return body.end(*[n if x is r else fresh.get(x, x) for x in end.src[1:] if x is not r or n is not None])
