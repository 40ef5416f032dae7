"""Merge neighbouring output loops that every access walks as one: in a kernel without a reduce, loops a (outer, size A) and b (inner,
size B) become one loop c of size A*B (a = c // B, b = c % B) where that adds no division to the kernel's index math: every address
and gate reads them as a*B + b (an elementwise op over a contiguous (4096, 4095), whose rows start off a vector boundary, 8.2 -> 5.9
ms at 2 threads, merged: 16773120 elements, which the optimizer splits into aligned vectors and shares). The inverse of
split_ranges.py, which splits a range that index math divides."""
from __future__ import annotations
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, graph_rewrite
from tinygrad.uop.symbolic import symbolic
from tinygrad.codegen.opt.kernel import pm_split, ranges, size, _renumber

def _divisions(ast:UOp) -> int:
  return sum(1 for u in ast.toposort() if u.op in (Ops.FLOORDIV, Ops.FLOORMOD))

def _neighbours(ast:UOp) -> list[tuple[UOp, UOp]]:
  """(outer, inner) pairs of output loops next to each other in loop order that every END closes together"""
  # loops of 0 or 1 iterations are never merged: nothing to gain, and an outer one of size 0 (A*B == A) or an inner one of size 1 makes the
  # merged loop the same UOp as a (hash-consing), so merge_range's substitution {a: c // B} names itself and never ends
  loops = [r for r in ranges(ast) if r.arg[1] is AxisType.LOOP and size(r) is not None and size(r) > 1]
  ends = [u for u in ast.toposort() if u.op is Ops.END]
  return [(a, b) for a, b in zip(loops, loops[1:]) if b.arg[0] == a.arg[0] + 1 and all((a in e.src[1:]) == (b in e.src[1:]) for e in ends)]

def merge_range(ast:UOp, a:UOp, b:UOp) -> UOp:
  """the loops a (outer) and b (inner) as one loop over a's id, index math simplified"""
  c, n = a.replace(src=(a.src[0].const_like(size(a) * size(b)),)), size(b)
  merged = graph_rewrite(ast, pm_split, ctx={a: (c // n, [c]), b: (c % n, [])}, bottom_up=True, name="merge ranges")
  return graph_rewrite(_renumber(merged), symbolic, name="merge ranges", memo="_simplified")

def merge_adjacent_ranges(ast:UOp) -> UOp:
  if any(u.op is Ops.REDUCE for u in ast.toposort()): return ast  # a reduce's loops are tuned apart (heuristic.py)
  merged = graph_rewrite(ast, symbolic, name="merge ranges", memo="_simplified")
  while True:
    before = _divisions(merged)
    for a, b in _neighbours(merged):
      if _divisions(new := merge_range(merged, a, b)) <= before: merged = new; break
    else: return merged if len(ranges(merged)) < len(ranges(ast)) else ast  # unmerged, the kernel as it came
