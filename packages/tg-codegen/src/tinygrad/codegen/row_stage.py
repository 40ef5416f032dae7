"""A row value computed once. In a row chain's kernel (schedule/row_fusion.py) softmax evaluates exp(x - max) in the sum's loop and again
in the store's loop over the same row: two polynomials of ~30 vector ops per element, more than the kernel's memory traffic costs. Here
the sum's loop also writes each value into a row-sized scratch array (a REG buffer: the kernel's stack, in L1) and the store's loop reads
it back: one exp per element, the same bits. A value is staged when the store reads it at the row index j and the body of a REDUCE over
a range r of the same size holds it at r (the same node with j replaced by r), and it holds a transcendental: a value of a few ops costs
less than its store and load. Only on targets without work items (a GPU work item would hold a whole row in registers)."""
from __future__ import annotations
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp
from tinygrad.dtype import AddrSpace
from tinygrad.codegen.opt.kernel import broadcast_reduce, free_ranges, size
from tinygrad.codegen.opt.heuristic import POLYNOMIAL


def _outside_reduces(x:UOp) -> list[UOp]: return list(x.toposort(lambda w: w is x or w.op is not Ops.REDUCE))

def _find(ast:UOp) -> tuple[UOp, UOp, UOp, UOp]|None:
  """(value at j in a store, j, the REDUCE, its range r) for the outermost value worth staging"""
  free = free_ranges(ast)
  reduces = [u for u in ast.toposort() if u.op is Ops.REDUCE and len(u.src) == 2 and size(u.src[1]) is not None]
  for end in (e for e in ast.src if e.op is Ops.END):
    vals = _outside_reduces(end.src[0])
    costly = [v for v in reversed(vals) if v.op in GroupOp.ALU and any(w.op in POLYNOMIAL for w in _outside_reduces(v))]
    for j in (q for q in end.ended_ranges if size(q) is not None):
      for red in (x for x in reduces if j not in free[x] and size(x.src[1]) == size(j)):
        body = set(red.src[0].toposort())
        for v in costly:  # users before sources: the outermost match
          if j in free[v] and v.substitute({j: red.src[1]}) in body: return v, j, red, red.src[1]
  return None

def stage_rows(ast:UOp, renderer) -> UOp:
  if renderer is None or getattr(renderer, "has_local", False) or not broadcast_reduce(ast): return ast
  while (found := _find(ast)) is not None:
    v, j, red, r = found
    slot = max([u.arg.slot + 1 for u in ast.toposort() if u.op is Ops.BUFFER], default=0)
    row = UOp.placeholder((size(j),), v.dtype, slot, addrspace=AddrSpace.REG)
    at_r = v.substitute({j: r})
    # the reduce's loop stores each value and reads it back (LLVM forwards the store); the store's loop reads the row after that loop
    staged = red.replace(src=(red.src[0].substitute({at_r: row.after(row[r].store(at_r))[r].load()}), r))
    ast = ast.substitute({red: staged, v: row.after(staged)[j].load()})
  return ast
