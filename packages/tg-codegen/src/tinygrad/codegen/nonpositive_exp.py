"""exp2 of a value known to be at most 0. Softmax and log_softmax take exp(x - max(x)) over a row: the max is a MAX REDUCE whose body is
the same x at the reduce's own range, so x - max is <= 0, or NaN (a NaN in the row, inf - inf), and a positive multiple of it too (exp
is exp2 of x * log2(e)). Such an EXP2 gets the arg NONPOSITIVE, and its polynomial (codegen/transcendental.py) skips the upper clamp and
the NaN fix-up and writes 2**k in one step. Checked on the kernel AST, where each REDUCE still holds its body."""
from __future__ import annotations
import itertools, math
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite
from tinygrad.codegen.opt.kernel import size
from tinygrad.codegen.transcendental import NONPOSITIVE

def _is_max_of(a:UOp, m:UOp) -> bool:
  """m is a MAX REDUCE of a: its body is a with some of a's ranges replaced by the reduce's ranges of the same sizes"""
  if m.op is not Ops.REDUCE or m.arg is not Ops.MAX or any(size(r) is None for r in m.src[1:]): return False
  own = [u for u in a.toposort() if u.op is Ops.RANGE]
  choices = [[j for j in own if j is not r and size(j) == size(r)] for r in m.src[1:]]
  return any(len(set(js)) == len(js) and a.substitute(dict(zip(js, m.src[1:]))) is m.src[0] for js in itertools.product(*choices))

def _negated(u:UOp) -> UOp|None:
  if u.op is Ops.NEG: return u.src[0]
  if u.op is Ops.MUL and u.src[1].op is Ops.CONST and u.src[1].arg == -1: return u.src[0]
  return None

def nonpositive(x:UOp) -> bool:
  """x <= 0 or NaN wherever it is computed"""
  if x.op is Ops.CONST: return not x.arg > 0
  if x.op is Ops.MUL and (c := next((s for s in x.src if s.op is Ops.CONST), None)) is not None:
    return isinstance(c.arg, float) and not math.isnan(c.arg) and c.arg >= 0 and nonpositive(x.src[1] if c is x.src[0] else x.src[0])
  if x.op is Ops.ADD:
    return any((m := _negated(b)) is not None and _is_max_of(a, m) for a, b in (x.src, x.src[::-1]))
  if x.op is Ops.WHERE:
    c, a, b = x.src
    # -|v| as where(v < 0, v, -v): sigmoid's e^-|x|
    if c.op is Ops.CMPLT and c.src[0] is a and c.src[1].op is Ops.CONST and c.src[1].arg == 0 and _negated(b) is a: return True
    return nonpositive(a) and nonpositive(b)
  return False

pm_nonpositive_exp = PatternMatcher([
  (UPat(Ops.EXP2, name="e"), lambda e: e.replace(arg=NONPOSITIVE) if e.arg is None and nonpositive(e.src[0]) else None),
])

def mark_nonpositive_exp(ast:UOp) -> UOp: return graph_rewrite(ast, pm_nonpositive_exp, name="kernel")
