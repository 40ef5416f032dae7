"""UPCAST and UNROLL axes -> straight-line code, before reductions are lowered. An UNROLL axis of a REDUCE becomes that many partial
reductions (each its own accumulator, so no serial chain runs through the axis), combined in lane order after. An UPCAST axis of a store
becomes one copy of the store per lane; lanes that read neighbouring addresses are what LLVM's SLP vectorizer packs into vectors."""
from __future__ import annotations
import functools, itertools
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite

def _lanes(x:UOp, rngs:tuple[UOp, ...]) -> list[UOp]:
  """x once per combination of values of rngs (constant ranges), first range slowest. One walk finds the nodes that depend on rngs;
  each lane rebuilds only those"""
  deps: dict[UOp, None] = {}
  for u in x.toposort():
    if u in rngs or any(s in deps for s in u.src): deps[u] = None
  ret = []
  for vals in itertools.product(*(range(r.src[0].arg) for r in rngs)):
    new = {r: r.const_like(v) for r, v in zip(rngs, vals)}
    for u in deps:  # each has a source that changed: built directly, no comparison with the old sources
      if u not in new: new[u] = UOp(u.op, u.dtype, tuple([new.get(s, s) for s in u.src]), u.arg, u.tag)
    ret.append(new.get(x, x))
  return ret

def _in_lane_order(xs:list[UOp], op) -> UOp:
  """((x0 op x1) op x2) op ...: LLVM's SLP vectorizer reads that chain as an ordered reduction of one vector, so the accumulators become
  whole vectors (a pairwise tree made it pack them two by two, with shuffles in the loop). The chain runs once, after the loop"""
  return functools.reduce(lambda a, b: a.alu(op, b), xs)

def _is(t:AxisType): return lambda r: r.op is Ops.RANGE and r.arg[1] is t

def _unroll_reduce(red:UOp) -> UOp|None:
  if not (unr := tuple(filter(_is(AxisType.UNROLL), red.src[1:]))): return None
  rest = tuple(r for r in red.src[1:] if r not in unr and r.arg[1] is not AxisType.GROUP_REDUCE)
  grp = tuple(r for r in red.src[1:] if r.arg[1] is AxisType.GROUP_REDUCE)
  # a work group shares one partial per item, not one per lane: the lanes are combined before the group reduce
  return _in_lane_order([x.reduce(*rest, op=red.arg) for x in _lanes(red.src[0], unr)], red.arg).reduce(*grp, op=red.arg)

def _upcast_end(e:UOp) -> UOp|None:
  if not (up := tuple(filter(_is(AxisType.UPCAST), e.src[1:]))): return None
  return UOp(Ops.GROUP, e.dtype, tuple(_lanes(e.src[0], up))).end(*[r for r in e.src[1:] if r not in up])

pm_expand = PatternMatcher([
  # REDUCE(x, r, u) -> REDUCE(x[u=0], r) + REDUCE(x[u=1], r) + ...: one accumulator per lane
  (UPat(Ops.REDUCE, name="red"), _unroll_reduce),
  # END(store, r, u) -> END(GROUP(store[u=0], store[u=1], ...), r)
  (UPat(Ops.END, name="e"), _upcast_end),
])

def expand(sink:UOp) -> UOp: return graph_rewrite(sink, pm_expand, name="expand")
