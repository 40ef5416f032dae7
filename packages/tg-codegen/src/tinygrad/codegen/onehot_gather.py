"""A sum over a range r of `where(r == e, v, 0)`, with e independent of r, is v at r = e (or 0 when e is outside r's bounds): a gather.
Tensor indexing by a tensor (X[idx]), one-hot picks (the class term of a cross-entropy) and embedding lookups build exactly this, and
summed as written they read every row of v for each output: a batch of 128 rows out of 1437 cost 128 x 1437 loads per column instead
of 128. The collapsed form loads v once, at r = e clamped into bounds (so that the load stays in the buffer), gated by 0 <= e < N.
Exact: the dropped terms are all the constant 0 (a -0.0 at r = e stays -0.0, as numpy's gather gives; summed it was +0.0).
Checked on the kernel AST after its first simplification, where each REDUCE still holds its body."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite
from tinygrad.dtype import dtypes
from tinygrad.codegen.opt.kernel import size

def _conjuncts(c:UOp) -> list[UOp]: return _conjuncts(c.src[0]) + _conjuncts(c.src[1]) if c.op is Ops.AND and c.dtype == dtypes.bool else [c]

def _range_of(x:UOp, ranges:tuple[UOp, ...]) -> UOp|None:
  """the reduce range x is, or is an exact integer cast of"""
  r = x.src[0] if x.op is Ops.CAST else x
  if r not in ranges or (n := size(r)) is None: return None
  if x.op is Ops.CAST and not (dtypes.is_int(x.dtype) and x.dtype is not dtypes.weakint and n - 1 <= dtypes.max(x.dtype)): return None
  return r

def _index_match(c:UOp, ranges:tuple[UOp, ...]) -> tuple[UOp, UOp]|None:
  """(r, e) when c is r == e (either side, r maybe cast) with e an integer that does not depend on r"""
  if c.op is not Ops.CMPEQ: return None
  for x, e in (c.src, c.src[::-1]):
    if (r := _range_of(x, ranges)) is not None and dtypes.is_int(e.dtype) and r not in e.toposort(): return r, e
  return None

def collapse(red:UOp) -> UOp|None:
  if red.arg is not Ops.ADD or (body := red.src[0]).op is not Ops.WHERE: return None
  cond, v, zero = body.src
  if zero.op is not Ops.CONST or zero.arg != 0: return None
  parts = _conjuncts(cond)
  for i, c in enumerate(parts):
    if (m := _index_match(c, red.src[1:])) is None: continue
    r, e = m
    valid = (e < size(r)) & (e < 0).ne(True)
    at = {r: valid.where(e, e.const_like(0)).cast(r.dtype)}  # in bounds even where the gate is off: the load still runs
    gate = valid
    for other in parts[:i] + parts[i+1:]: gate = gate & other.substitute(at)
    picked = gate.where(v.substitute(at), zero)
    rest = tuple(x for x in red.src[1:] if x is not r)
    return red.replace(src=(picked,) + rest) if rest else picked
  return None

pm_onehot_gather = PatternMatcher([(UPat(Ops.REDUCE, name="red"), collapse)])

def collapse_onehot_reduces(ast:UOp) -> UOp: return graph_rewrite(ast, pm_onehot_gather, name="kernel")
