"""x * (1/y) as one division x / y where the renderer has one: rounded once, as numpy and torch divide (the product with a rounded
reciprocal is up to 1 ulp off). Only where 1/y is computed as often as the product, inside the same loops: a reciprocal that the
loops leave outside (softmax's 1/sum, dividing a row by one of its own values) stays a reciprocal and a multiply per element, where a
division per element would cost several times a multiply."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite

def _loops(memo:dict, x:UOp) -> frozenset:
  """the RANGEs x is computed inside (memoized; nodes the rewrite rebuilt are filled in as they are met). An END closes its ranges: a
  reduce's result, read after its loop, is computed in the loops around it alone"""
  if x not in memo:
    for u in x.toposort():
      if u in memo: continue
      inner = frozenset().union(*(memo[s] for s in u.src))
      memo[u] = inner | {u} if u.op is Ops.RANGE else inner - set(u.src[1:]) if u.op is Ops.END else inner
  return memo[x]

def _divide(memo:dict, m:UOp, a:UOp, b:UOp, r:UOp) -> UOp|None:
  if m.dtype.scalar() not in dtypes.floats or not _loops(memo, a) <= _loops(memo, r): return None
  return UOp(Ops.FDIV, m.dtype, (a, b))

pm_true_division = PatternMatcher([
  (UPat(Ops.MUL, src=[UPat.var("a"), UPat(Ops.RECIPROCAL, src=(UPat.var("b"),), name="r")], name="m"),
   lambda ctx, m, a, b, r: _divide(ctx, m, a, b, r)),
])

def true_divisions(sink:UOp, renderer) -> UOp:
  if renderer is None or Ops.FDIV not in renderer.code_for_op: return sink
  return graph_rewrite(sink, pm_true_division, ctx={}, name="program")
