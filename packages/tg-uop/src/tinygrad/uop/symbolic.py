"""Algebraic simplification as rule tables.
symbolic_simple: constant folding and identities that hold for every dtype they are applied to.
symbolic: the normal form of index math on top: constants last, int sums as sum(base*coef)+const with like terms collected,
floor div/mod and comparisons folded by value bounds. FLOORDIV/FLOORMOD have python (floor) semantics, so the identities used
hold for negative values too; every rule that needs exact integers first checks the bounds prove nothing wrapped around."""
from __future__ import annotations
import math, operator
from typing import Callable
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite, _dtype_bounds, _INT_OR_BOOL
from tinygrad.dtype import DType, dtypes, fma
from tinygrad.helpers import cdiv, cmod
from tinygrad.uop.threefry import threefry_int

_INTS = (*dtypes.ints, dtypes.weakint)

# *** helpers ***

def _const(u:UOp, val) -> UOp:
  """val as a literal standing in for u: same dtype, device and shape"""
  return UOp.const(u.dtype, val, u.device, u._shape)

def _same_shape(u:UOp, new:UOp) -> UOp|None:
  # a rewrite must not change the shape; only implicit broadcasting in ALU ops can make it try
  return new if not u._shape or new._shape == u._shape else None

def _fits(x:UOp) -> bool:
  """x's bounds lie inside its dtype, so no step computing x wrapped around (an op that may overflow gets the dtype's full range)"""
  lo, hi = _dtype_bounds(x.dtype)
  return lo < x.vmin and x.vmax < hi

def _fits_const(dt:DType, v:int) -> bool: return (b := _dtype_bounds(dt))[0] <= v <= b[1]

def _linear(x:UOp, limit:int=128) -> tuple[dict[UOp, int], int]|None:
  """an int x as ({base: coefficient}, constant): ADD chains flattened, base*c split. None past `limit` nodes visited: collecting long
  chains (unrolled reductions, not index math) on every ADD would be quadratic"""
  coefs: dict[UOp, int] = {}
  k, stack = 0, [x]
  while stack:
    if (limit := limit-1) < 0: return None
    t = stack.pop()
    if t.op is Ops.ADD: stack.extend(reversed(t.src))
    elif t.op is Ops.CONST: k += t.arg
    else:
      b, m = (t.src[0], t.src[1].arg) if t.op is Ops.MUL and t.src[1].op is Ops.CONST else (t, 1)
      coefs[b] = coefs.get(b, 0) + m
  return {b: m for b, m in coefs.items() if m}, k

def _build(like:UOp, coefs:dict[UOp, int], k:int) -> UOp:
  """sum(base*coef) + k, left to right, constant last; coefficients wrap around like the dtype"""
  ret: UOp|None = None
  for b, m in coefs.items():
    if (m := dtypes.as_const(m, like.dtype)) == 0: continue
    t = b if m == 1 else b.alu(Ops.MUL, b.const_like(m))
    ret = t if ret is None else ret.alu(Ops.ADD, t)
  if ret is None: return _const(like, k)
  return ret if dtypes.as_const(k, like.dtype) == 0 else ret.alu(Ops.ADD, ret.const_like(k))

def _span(coefs:dict[UOp, int], k:int) -> tuple[int, int]:
  lo = hi = k
  for b, m in coefs.items(): lo, hi = lo + min(m*b.vmin, m*b.vmax), hi + max(m*b.vmin, m*b.vmax)
  return lo, hi

# *** constant folding: python computes what the device would, then the dtype truncates ***

def _nonzero(b):
  if not b: raise ZeroDivisionError("division by zero is left to the device")
  return b
def _shift(b):
  if not 0 <= b < 64: raise ValueError(f"shift by {b} is left to the device")
  return b
def _pow(a, b):
  if isinstance(a, float): return math.pow(a, b)
  if not 0 <= b <= 64: raise ValueError(f"int power {b} is left to the device")
  return a ** b
def _fdiv(a, b): return a / b if b else math.nan if a == 0 or a != a else math.copysign(math.inf, a) * math.copysign(1, b)

_EXEC: dict[Ops, Callable] = {
  Ops.ADD: operator.add, Ops.SUB: operator.sub, Ops.MUL: operator.mul, Ops.NEG: operator.neg, Ops.FDIV: _fdiv, Ops.POW: _pow,
  Ops.FLOORDIV: operator.floordiv, Ops.FLOORMOD: operator.mod, Ops.CDIV: lambda a, b: cdiv(a, _nonzero(b)),
  Ops.CMOD: lambda a, b: cmod(a, _nonzero(b)), Ops.SHL: lambda a, b: a << _shift(b), Ops.SHR: lambda a, b: a >> _shift(b),
  Ops.AND: operator.and_, Ops.OR: operator.or_, Ops.XOR: operator.xor, Ops.CMPLT: operator.lt, Ops.CMPNE: operator.ne, Ops.CMPEQ: operator.eq,
  Ops.THREEFRY: threefry_int, Ops.WHERE: lambda c, a, b: a if c else b,
  Ops.MAX: lambda a, b: math.nan if isinstance(a, float) and (math.isnan(a) or math.isnan(b)) else max(a, b),  # NaN wins, like numpy
  # IEEE results where python's math raises
  Ops.RECIPROCAL: lambda a: 1/a if a else math.copysign(math.inf, a), Ops.SQRT: lambda a: math.sqrt(a) if a >= 0 else math.nan,
  Ops.LOG2: lambda a: math.log2(a) if a > 0 else -math.inf if a == 0 else math.nan, Ops.EXP2: lambda a: math.inf if a >= 1024 else 2.0 ** a,
  Ops.SIN: lambda a: math.sin(a) if math.isfinite(a) else math.nan, Ops.TRUNC: lambda a: float(math.trunc(a)) if math.isfinite(a) else a}

def _fold_alu(u:UOp) -> UOp|None:
  try: return _const(u, _EXEC[u.op](*[s.arg for s in u.src]))
  except (ZeroDivisionError, ValueError, OverflowError): return None  # no python value to fold to: the op stays

def _fold_cast(u:UOp, c:UOp) -> UOp|None:
  try: return _const(u, c.arg)
  except (ValueError, OverflowError): return None  # int(nan), int(inf)

def _keep_shape(u:UOp, x:UOp) -> UOp|None: return x if x._shape == u._shape else None

_T, _F = UPat.const(dtypes.bool, True), UPat.const(dtypes.bool, False)

symbolic_simple = PatternMatcher([
  # ** literals **
  (UPat(tuple(_EXEC), src=UPat(Ops.CONST), name="u"), _fold_alu),
  (UPat(Ops.CAST, src=(UPat(Ops.CONST, name="c"),), name="u"), _fold_cast),
  (UPat(Ops.MULACC, src=UPat(Ops.CONST), name="u"), lambda u: _const(u, fma(*[s.arg for s in u.src], u.dtype))),  # one rounding
  (UPat(Ops.CAST, src=(UPat.var("x"),), name="u"), lambda u, x: x if x.dtype is u.dtype else None),  # cast to its own dtype -> x
  # ** identities; x*0 and x-x only off floats (NaN*0, inf-inf); x+0 everywhere (floats: only -0.0+0 differs, in the sign of zero) **
  (UPat.var("x") + UPat.cvar("c"), lambda x, c: x if c.arg == 0 else None),  # x+0 -> x
  (UPat.var("x") * UPat.cvar("c"), lambda x, c: x if c.arg == 1 else None),  # x*1 -> x
  (UPat.var("x") * UPat.cvar("c"), lambda x, c: _const(x, 0) if c.arg == 0 and not dtypes.is_float(x.dtype) else None),  # x*0 -> 0
  (UPat((Ops.FLOORDIV, Ops.CDIV), _INTS, (UPat.var("x"), UPat.cvar("c"))), lambda x, c: x if c.arg == 1 else None),  # x//1 -> x
  (UPat((Ops.FLOORMOD, Ops.CMOD), _INTS, (UPat.var("x"), UPat.cvar("c"))), lambda x, c: _const(x, 0) if abs(c.arg) == 1 else None),  # x%1 -> 0
  (UPat.var("x") + UPat(Ops.NEG, src=(UPat.var("x"),)), lambda x: None if dtypes.is_float(x.dtype) else _const(x, 0)),  # x+(-x) -> 0
  (UPat(Ops.NEG, src=(UPat(Ops.NEG, src=(UPat.var("x"),)),)), lambda x: x),  # -(-x) -> x
  # ** idempotent and self-cancelling ops **
  (UPat((Ops.AND, Ops.OR, Ops.MAX), src=(UPat.var("x"), UPat.var("x"))), lambda x: x),  # x&x, x|x, max(x,x) -> x
  (UPat(Ops.XOR, src=(UPat.var("x"), UPat.var("x")), name="u"), lambda u, x: _const(u, 0)),  # x^x -> 0
  (UPat(Ops.CMPLT, src=(UPat.var("x"), UPat.var("x")), name="u"), lambda u, x: _const(u, False)),  # x<x -> False (NaN too)
  (UPat((Ops.CMPNE, Ops.CMPEQ), src=(UPat.var("x"), UPat.var("x")), name="u"),  # x!=x -> False, x==x -> True (not for NaN)
   lambda u, x: None if dtypes.is_float(x.dtype) else _const(u, u.op is Ops.CMPEQ)),
  # ** bitwise and bool with literals **
  (UPat((Ops.OR, Ops.XOR), src=[UPat.var("x"), UPat.cvar("c")]), lambda x, c: x if c.arg == 0 else None),  # x|0, x^0 -> x
  (UPat(Ops.AND, src=[UPat.var("x"), UPat.cvar("c")]), lambda x, c: _const(x, 0) if c.arg == 0 else x if c.arg is True else None),  # x&0, x&True
  (UPat(Ops.OR, dtypes.bool, [UPat.var("x"), _T], name="u"), lambda u, x: _const(u, True)),  # x|True -> True
  (UPat(Ops.CMPNE, src=[UPat(Ops.CMPNE, src=(UPat.var("a"), UPat.var("b"))), _T]), lambda a, b: a.alu(Ops.CMPEQ, b)),  # !(a!=b) -> a==b
  (UPat(Ops.CMPNE, src=[UPat(Ops.CMPEQ, src=(UPat.var("a"), UPat.var("b"))), _T]), lambda a, b: a.alu(Ops.CMPNE, b)),  # !(a==b) -> a!=b
  (UPat(Ops.CMPNE, src=[UPat.var("x", dtypes.bool), _F]), lambda x: x),  # x!=False -> x
  (UPat(Ops.CMPEQ, src=[UPat.var("x", dtypes.bool), _T]), lambda x: x),  # x==True -> x
  (UPat(Ops.CMPEQ, src=[UPat.var("x", dtypes.bool), _F]), lambda x: x.alu(Ops.CMPNE, x.const_like(True))),  # x==False -> !x
  # ** where **
  (UPat(Ops.WHERE, src=(UPat.var(), UPat.var("a"), UPat.var("a")), name="u"), lambda u, a: _keep_shape(u, a)),  # where(c,a,a) -> a
  (UPat(Ops.WHERE, src=(UPat.cvar("c"), UPat.var("a"), UPat.var("b")), name="u"),
   lambda u, c, a, b: _keep_shape(u, a if c.arg else b)),  # where(True,a,b) -> a
])

# *** index math ***

def _fold_bounds(u:UOp) -> UOp|None:
  # an int or bool value its bounds pin down is that constant (float bounds decide nothing: NaN)
  if u.dtype not in _INT_OR_BOOL: return None
  lo, hi = u._min_max
  return _const(u, lo) if lo == hi else None

def _normal_sum(u:UOp, limit:int=128) -> bool:
  """u is what _build would make of it: a left chain of distinct bases with one constant at most, at the end. A mod term may pair with
  its quotient, so a sum with one isn't known normal. Past `limit` terms: normal (long chains aren't collected)"""
  t = u.src[0] if u.src[1].op is _CONST else u
  if (info := _chain(t, limit)) is not None: return info[1] is not None
  # a chain longer than the limit: only its first `limit` terms are looked at
  seen: set[UOp] = set()
  while len(seen) < limit:
    r = t.src[1] if t.op is _ADD else t
    b = r.src[0] if r.op is _MUL and r.src[1].op is _CONST else r
    if b.op in _NOT_BASE or b in seen: return False
    if t.op is not _ADD: return True
    seen.add(b)
    t = t.src[0]
  return True
_ADD, _MUL, _CONST, _NOT_BASE = Ops.ADD, Ops.MUL, Ops.CONST, frozenset((Ops.ADD, Ops.CONST, Ops.FLOORMOD))  # read once: hot loop

def _chain(t:UOp, limit:int) -> tuple[int, frozenset|None]|None:
  """(terms, bases) of the left chain of ADDs from t down to its first non-ADD node, a term's base being it without a constant
  factor; bases is None when one is an ADD, CONST or FLOORMOD or two are the same. None for a chain of more than `limit` terms. Kept on
  each node of the chain: index math grows one term at a time, so asking for a sum reads its left source's answer (no walk)"""
  path: list[UOp] = []
  while (info := t.__dict__.get("_chain_c")) is None and t.op is _ADD and len(path) < limit:
    path.append(t)
    t = t.src[0]
  if info is None:
    if t.op is _ADD: return None  # longer than the limit
    b = t.src[0] if t.op is _MUL and t.src[1].op is _CONST else t
    info = t.__dict__["_chain_c"] = (1, None if b.op in _NOT_BASE else frozenset((b,)))
  for a in reversed(path):
    if info[0] >= limit: return None
    r = a.src[1]
    b = r.src[0] if r.op is _MUL and r.src[1].op is _CONST else r
    info = a.__dict__["_chain_c"] = (info[0] + 1, None if info[1] is None or b.op in _NOT_BASE or b in info[1] else info[1] | {b})
  return info if info[0] <= limit else None

def _fold_sum(u:UOp) -> UOp|None:
  """like terms collected (x*a + x*b -> x*(a+b)), constants summed last, and (x%c)*m + (x//c)*(c*m) -> x*m"""
  if _normal_sum(u) or (lin := _linear(u)) is None: return None
  coefs, k = lin
  while (pair := _divmod_pair(coefs)) is not None:
    md, (ql, qk) = pair
    m, x = coefs.pop(md), md.src[0]
    for b in ql: del coefs[b]
    xl = _linear(x) or ({x: 1}, 0)
    for b, n in xl[0].items(): coefs[b] = coefs.get(b, 0) + n*m
    k += xl[1]*m - qk*m*md.src[1].arg
  return _same_shape(u, _build(u, coefs, k))

def _quotient(md:UOp) -> tuple[dict[UOp, int], int]|None:
  # x//c in normal form, for x%c: simplifying may have reshaped it (nested divisions merged, gcds cancelled), so build it and look
  if "_quot" not in md.__dict__: md.__dict__["_quot"] = _linear(graph_rewrite(md.src[0].alu(Ops.FLOORDIV, md.src[1]), symbolic, name="quotient",
                                                                      memo="_simplified"))
  return md.__dict__["_quot"]

def _divmod_pair(coefs:dict[UOp, int]) -> tuple[UOp, tuple[dict[UOp, int], int]]|None:
  """a term (x%c)*m whose quotient (x//c)*(c*m) is in the sum too: floor semantics give x == (x//c)*c + x%c for any c != 0"""
  for b, m in coefs.items():
    if b.op is Ops.FLOORMOD and b.src[1].op is Ops.CONST and (q := _quotient(b)) is not None and q[0] and \
       all(t is not b and coefs.get(t) == n*m*b.src[1].arg for t, n in q[0].items()): return b, q
  return None

def _distribute(s:UOp, c:UOp) -> UOp|None:  # (x+y)*c -> x*c+y*c
  if (lin := _linear(s)) is None: return None
  return _build(s, {b: m*c.arg for b, m in lin[0].items()}, lin[1]*c.arg)

def _divmod_split(u:UOp, x:UOp, d:int) -> UOp|None:
  """x = g*y + z with 0 <= z < g for a g dividing d: x//d -> y//(d/g), x%d -> (y%(d/g))*g + z. Floor semantics make this exact for any
  sign of y. z may be shifted by a multiple of g into [0, g). g = d is plain bounds: x//d and x%d are fixed when x spans one quotient."""
  if (lin := _linear(x)) is None: return None
  coefs, k = lin
  if (folded := _divmod_by_remainders(u.op, x, coefs, k, d)) is not None: return folded
  for g in sorted({math.gcd(m, d) for m in coefs.values()} | {math.gcd(d, *coefs.values()), d}, reverse=True):
    if g == 1: break
    small = {b: m for b, m in coefs.items() if m % g}
    if (span := _span(small, k))[0] // g != span[1] // g: continue
    q = span[0] // g
    y = _build(x, {b: m//g for b, m in coefs.items() if m % g == 0}, q)
    if u.op is Ops.FLOORDIV: return y if g == d else y.alu(Ops.FLOORDIV, y.const_like(d//g))
    z = _build(x, small, k - q*g)
    return z if g == d else y.alu(Ops.FLOORMOD, y.const_like(d//g)).alu(Ops.MUL, y.const_like(g)).alu(Ops.ADD, z)
  # (x*d*q + y)//d -> x*q + y//d and (x*d*q + y)%d -> y%d: terms the divisor divides leave. div and mod keep the same rest y, so
  # (x//d)*d + x%d still finds its pair and folds back to x
  if not (exact := {b: m//d for b, m in coefs.items() if m % d == 0}): return None
  rest = _build(x, {b: m for b, m in coefs.items() if m % d}, k)
  if u.op is Ops.FLOORMOD: return rest.alu(Ops.FLOORMOD, rest.const_like(d))
  return _build(x, exact, 0).alu(Ops.ADD, rest.alu(Ops.FLOORDIV, rest.const_like(d)))

def _divmod_by_remainders(op:Ops, x:UOp, coefs:dict[UOp, int], k:int, d:int) -> UOp|None:
  """each coefficient m as q*d + r: x = d*Q + R with Q = sum(q*b) + k//d and R = sum(r*b) + k%d. When R spans one quotient c
  (c*d <= R < (c+1)*d), x//d = Q + c and x%d = R - c*d, with no division left. r is tried in [0, d), then nearest to 0 (m = 59 with
  d = 60 is -1). This is what a window read through a reshape needs: (j*60 + t) % 59 is j + t when j + t < 59"""
  for rem in (lambda m: m % d, lambda m: m - d*((2*m + d)//(2*d))):
    r = {b: rem(m) for b, m in coefs.items()}
    lo, hi = _span({b: m for b, m in r.items() if m}, k % d)
    if lo // d != hi // d: continue
    q = lo // d
    if op is Ops.FLOORDIV: return _build(x, {b: (m - r[b])//d for b, m in coefs.items()}, k//d + q)
    return _build(x, {b: m for b, m in r.items() if m}, k % d - q*d)
  return None

def _exact_quotient(u:UOp, x:UOp, y:UOp) -> UOp|None:
  if y.op is Ops.CONST or not (y.vmin > 0 or y.vmax < 0) or (q := sym_div_exact(x, y)) is None: return None
  return _same_shape(u, q if isinstance(q, UOp) else _const(u, q))

def _cdivisor(x:UOp, op:Ops) -> bool: return x.op is op and x.src[1].op is Ops.CONST and x.src[1].arg > 0

def _fold_div(u:UOp, x:UOp, c:UOp) -> UOp|None:
  if c.arg <= 0 or not _fits(x): return None
  # (y//a)//c -> y//(a*c)
  if _cdivisor(x, Ops.FLOORDIV) and _fits_const(x.dtype, a := x.src[1].arg * c.arg): return x.src[0].alu(Ops.FLOORDIV, x.const_like(a))
  return _divmod_split(u, x, c.arg)

def _fold_mod(u:UOp, x:UOp, c:UOp) -> UOp|None:
  if c.arg <= 0 or not _fits(x): return None
  if _cdivisor(x, Ops.FLOORMOD) and x.src[1].arg % c.arg == 0: return x.src[0].alu(Ops.FLOORMOD, c)  # (y%(c*n))%c -> y%c
  return _divmod_split(u, x, c.arg)

def _fold_cmp(u:UOp, x:UOp, c:UOp) -> UOp|None:
  """an int sum x against a constant c. A sum of only negative terms flips around (-s < c -> -c < s). Then x = g*y + z, where z (the
  terms g doesn't divide, and the constant) spans a range too small to change the outcome: x < c -> y < (c-1-z)//g + 1 and
  c < x -> (c-z)//g < y for every z in it. x != c with g the gcd of all coefficients: y != (c-k)/g, decided when g doesn't divide c-k"""
  if not _fits(x) or (lin := _linear(x)) is None or not lin[0]: return None
  coefs, k = lin
  if all(m < 0 for m in coefs.values()):
    if not _fits_const(x.dtype, -c.arg): return None
    s, nc = _build(x, {b: -m for b, m in coefs.items()}, -k), x.const_like(-c.arg)
    return s.alu(u.op, nc) if u.op is not Ops.CMPLT else nc.alu(Ops.CMPLT, s) if u.src[0] is x else s.alu(Ops.CMPLT, nc)
  if u.op is not Ops.CMPLT:
    g = math.gcd(*coefs.values())
    if k == 0 and g == 1: return None
    if (c.arg - k) % g: return _const(u, u.op is Ops.CMPNE)
    return _cmp_const(u.op, _build(x, {b: m//g for b, m in coefs.items()}, 0), (c.arg - k)//g, True)
  for g in sorted({abs(m) for m in coefs.values()} | {math.gcd(*coefs.values()), 1}, reverse=True):
    if not (big := {b: m//g for b, m in coefs.items() if m % g == 0}): continue
    zlo, zhi = _span({b: m for b, m in coefs.items() if m % g}, k)
    if u.src[0] is x and (q := (c.arg-1-zhi)//g) == (c.arg-1-zlo)//g: return _cmp_const(Ops.CMPLT, _build(x, big, 0), q+1, True)
    if u.src[1] is x and (q := (c.arg-zlo)//g) == (c.arg-zhi)//g: return _cmp_const(Ops.CMPLT, _build(x, big, 0), q, False)
  return None

def _cmp_const(op:Ops, s:UOp, v:int, s_left:bool) -> UOp|None:
  """s op v (or v op s), if v fits s's dtype"""
  if not _fits_const(s.dtype, v): return None
  return s.alu(op, s.const_like(v)) if s_left else s.const_like(v).alu(op, s)

def _holds(dt:DType, x:UOp) -> bool: return dt is dtypes.weakint or dtypes.min(dt) <= x.vmin and x.vmax <= dtypes.max(dt)

def _cast_out(u:UOp, a:UOp, b:UOp) -> UOp|None:
  """cast(a) op cast(b) -> cast(a op b) for index math a, b when u's dtype holds every value of a op b (so u never wrapped around)"""
  return _same_shape(u, r.cast(u.dtype)) if u.dtype is not dtypes.weakint and _holds(u.dtype, r := a.alu(u.op, b)) else None

symbolic = symbolic_simple + PatternMatcher([
  (UPat(GroupOp.ALU, name="u"), _fold_bounds),
  # ** canonical order: constants last **
  (UPat(GroupOp.Commutative, src=(UPat.cvar("c"), UPat.var("x")), name="u"), lambda u, c, x: None if x.op is Ops.CONST else u.replace(src=(x, c))),
  # ** int sums and products as sum(base*coef) + const (exact in wraparound arithmetic too) **
  (UPat(Ops.NEG, _INTS, (UPat.var("x"),)), lambda x: x.alu(Ops.MUL, x.const_like(-1))),  # -x -> x*-1
  (UPat(Ops.MUL, _INTS, (UPat(Ops.MUL, src=(UPat.var("x"), UPat.cvar("c1"))), UPat.cvar("c2"))),
   lambda x, c1, c2: x.alu(Ops.MUL, x.const_like(c1.arg*c2.arg))),  # (x*c1)*c2 -> x*(c1*c2)
  (UPat(Ops.MUL, _INTS, [UPat(Ops.MUL, src=(UPat.var("x"), UPat.cvar("c"))), UPat.var("y")]),
   lambda x, c, y: None if y.op is Ops.CONST else x.alu(Ops.MUL, y).alu(Ops.MUL, c)),  # (x*c)*y -> (x*y)*c
  (UPat(Ops.MUL, _INTS, (UPat(Ops.ADD, name="s"), UPat.cvar("c"))), _distribute),  # (x+y)*c -> x*c+y*c
  (UPat(Ops.ADD, _INTS, (UPat(Ops.ADD, src=(UPat.var("x"), UPat.cvar("c1"))), UPat.cvar("c2"))),
   lambda x, c1, c2: x.alu(Ops.ADD, x.const_like(c1.arg+c2.arg))),  # (x+c1)+c2 -> x+(c1+c2), also on chains too long to collect
  (UPat(Ops.ADD, _INTS, name="u"), _fold_sum),  # x*a + x*b -> x*(a+b), x+x -> x*2, (x//c)*c + x%c -> x
  # ** x//y for a y that divides x as polynomials and can't be 0: (v*8)//(v*2) -> 4 **
  (UPat(Ops.FLOORDIV, _INTS, (UPat.var("x"), UPat.var("y")), name="u"), _exact_quotient),
  # ** floor div and mod by a positive constant **
  (UPat(Ops.FLOORDIV, _INTS, (UPat.var("x"), UPat.cvar("c")), name="u"), _fold_div),
  (UPat(Ops.FLOORMOD, _INTS, (UPat.var("x"), UPat.cvar("c")), name="u"), _fold_mod),
  # ** comparisons of int sums with a constant: (x+c1)<c2 -> x<c2-c1, x*c<d -> x<ceil(d/c), -x<c -> -c<x **
  (UPat(Ops.CMPLT, src=(UPat.var("x", _INTS), UPat.cvar("c")), name="u"), _fold_cmp),
  (UPat(Ops.CMPLT, src=(UPat.cvar("c"), UPat.var("x", _INTS)), name="u"), _fold_cmp),
  (UPat((Ops.CMPNE, Ops.CMPEQ), src=(UPat.var("x", _INTS), UPat.cvar("c")), name="u"), _fold_cmp),
  # !(x<c) -> c-1<x and !(c<x) -> x<c+1 (c-1 and c+1 fit: a comparison against the dtype's end is decided by bounds first)
  (UPat(Ops.CMPNE, src=(UPat(Ops.CMPLT, src=(UPat.var("x", _INTS), UPat.cvar("c"))), _T)), lambda x, c: x.const_like(c.arg-1).alu(Ops.CMPLT, x)),
  (UPat(Ops.CMPNE, src=(UPat(Ops.CMPLT, src=(UPat.cvar("c"), UPat.var("x", _INTS))), _T)), lambda x, c: x.alu(Ops.CMPLT, x.const_like(c.arg+1))),
  # ** max, where, casts **
  (UPat(Ops.MAX, _INTS, (UPat.var("x"), UPat.var("y"))), lambda x, y: x if x.vmin >= y.vmax else y if y.vmin >= x.vmax else None),  # max by bounds
  (UPat(Ops.WHERE, dtypes.bool, (UPat.var("c"), _T, _F)), lambda c: c),  # where(c,True,False) -> c
  (UPat(Ops.WHERE, dtypes.bool, (UPat.var("c"), _F, _T)), lambda c: c.alu(Ops.CMPNE, c.const_like(True))),  # where(c,False,True) -> !c
  (UPat(Ops.WHERE, src=(UPat(Ops.CMPNE, src=(UPat.var("c", dtypes.bool), _T)), UPat.var("a"), UPat.var("b"))),
   lambda c, a, b: c.alu(Ops.WHERE, b, a)),  # where(!c,a,b) -> where(c,b,a)
  # a binary digit d in {0, 1} selecting c or 0 is d*c, in index math (Tensor._arange sums its digits so; folded, n - arange is linear)
  (UPat(Ops.WHERE, _INTS, (UPat(Ops.CMPLT, src=(UPat.cvar("z"), UPat.var("d", dtypes.weakint))), UPat.cvar("c"), UPat.cvar("o")), name="u"),
   lambda u, z, d, c, o: _same_shape(u, d.alu(Ops.MUL, d.const_like(c.arg)).cast(u.dtype)) if z.arg == 0 == o.arg and 0 <= d.vmin and
   d.vmax <= 1 else None),
  # int sums and products of index math cast to an int dtype that holds the result: one cast of the index math, which then folds
  (UPat((Ops.ADD, Ops.MUL), _INTS, (UPat(Ops.CAST, src=(UPat.var("a", dtypes.weakint),)), UPat(Ops.CAST, src=(UPat.var("b", dtypes.weakint),))),
        name="u"), lambda u, a, b: _cast_out(u, a, b)),
  (UPat((Ops.ADD, Ops.MUL), _INTS, (UPat(Ops.CAST, src=(UPat.var("a", dtypes.weakint),)), UPat.cvar("c")), name="u"),
   lambda u, a, c: _cast_out(u, a, a.const_like(c.arg))),
  # a round trip through an int dtype that holds every value of x (weakint holds all) is no cast at all
  (UPat(Ops.CAST, _INTS, (UPat(Ops.CAST, _INTS, (UPat.var("x", _INTS),), name="mid"),), name="u"),
   lambda u, mid, x: x.cast(u.dtype) if _holds(mid.dtype, x) else None),
])

def _where_pick(u:UOp, c:UOp, a:UOp, d:UOp) -> UOp|None: return _same_shape(u, c.alu(Ops.WHERE, a, d))

sym = symbolic + PatternMatcher([
  # a nested where on the same condition takes the same side
  (UPat(Ops.WHERE, src=(UPat.var("c"), UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("a"), UPat.var())), UPat.var("d")), name="u"), _where_pick),
  (UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var("a"), UPat(Ops.WHERE, src=(UPat.var("c"), UPat.var(), UPat.var("d")))), name="u"), _where_pick),
  # x//c < d -> x < d*c and d < x//c -> (d+1)*c-1 < x, for c > 0 (floor)
  (UPat(Ops.CMPLT, src=(UPat(Ops.FLOORDIV, _INTS, (UPat.var("x"), UPat.cvar("c"))), UPat.cvar("d"))),
   lambda x, c, d: x.alu(Ops.CMPLT, x.const_like(v)) if c.arg > 0 and _fits_const(x.dtype, v := d.arg*c.arg) else None),
  (UPat(Ops.CMPLT, src=(UPat.cvar("d"), UPat(Ops.FLOORDIV, _INTS, (UPat.var("x"), UPat.cvar("c"))))),
   lambda x, c, d: x.const_like(v).alu(Ops.CMPLT, x) if c.arg > 0 and _fits_const(x.dtype, v := (d.arg+1)*c.arg-1) else None),
])

def simplify_index(x:UOp) -> UOp:
  """an index expression (or any graph) in sym's normal form"""
  return graph_rewrite(x, sym, name="simplify_index")

# *** sizes in one canonical form: equal symbolic sizes built differently (w+v and v+w, (v+1)*2 and v*2+2) become the same node, so
# shapes compare by identity (broadcast, cat, expand) ***

_POLY_OPS, _POLY_TERMS = frozenset((Ops.ADD, Ops.MUL, Ops.NEG, Ops.SUB, Ops.CONST)), 64  # a product of sums past 64 terms isn't expanded
Poly = dict[tuple[UOp, ...], int]  # {monomial (its factors, sorted by _factor_key): coefficient}, () the constant's

def _factor_key(u:UOp) -> tuple:
  """a total order on factors: Variables (bound or not) by name, so w*v and v*w, w+v and v+w agree; anything else by content hash"""
  return (0, u.src[0].arg.name if u.op is Ops.BIND else u.arg.name, u.key) if u.op in (Ops.DEFINE_VAR, Ops.BIND) else (1, u.key)

def _padd(a:Poly, b:Poly, sign:int=1) -> Poly:
  out = dict(a)
  for m, c in b.items(): out[m] = out.get(m, 0) + sign*c
  return {m: c for m, c in out.items() if c}

def _pmul(a:Poly, b:Poly) -> Poly|None:
  out: Poly = {}
  for ma, ca in a.items():
    for mb, cb in b.items():
      m = tuple(sorted(ma + mb, key=_factor_key))
      out[m] = out.get(m, 0) + ca*cb
  return {m: c for m, c in out.items() if c} if len(out) <= _POLY_TERMS else None

def _poly_step(u:UOp, p:dict[UOp, Poly|None]) -> Poly|None:
  if u.op is Ops.CONST: return {(): u.arg} if u.arg else {}
  if u.op not in _POLY_OPS: return {(u,): 1}  # a factor: a Variable, or a node sums and products can't see into (x//c, max)
  if None in (s := [p[x] for x in u.src]): return None
  if u.op is Ops.NEG: return {m: -c for m, c in s[0].items()}
  return _pmul(s[0], s[1]) if u.op is Ops.MUL else _padd(s[0], s[1], -1 if u.op is Ops.SUB else 1)

def _poly(x:UOp|int) -> Poly|None:
  """an int x as a polynomial in its factors (products of sums expanded); None where x isn't an int of one dtype throughout"""
  if not isinstance(x, UOp): return {(): x} if x else {}
  if x.dtype not in _INTS: return None
  p: dict[UOp, Poly|None] = {}
  for u in x.toposort(lambda u: u.op in _POLY_OPS):
    p[u] = None if u.dtype is not x.dtype else _poly_step(u, p)
  return p[x]

def _from_poly(p:Poly) -> UOp|int:
  """sum of terms sorted by their factors, each its factors' product times its coefficient, the constant last; an int when constant"""
  ret: UOp|None = None
  for m in sorted((m for m in p if m), key=lambda m: [_factor_key(f) for f in m]):
    t = m[0]
    for f in m[1:]: t = t.alu(Ops.MUL, f)
    if p[m] != 1: t = t.alu(Ops.MUL, t.const_like(p[m]))
    ret = t if ret is None else ret.alu(Ops.ADD, t)
  if ret is None: return p.get((), 0)
  return ret.alu(Ops.ADD, ret.const_like(k)) if (k := p.get((), 0)) else ret

def canonical(x:UOp|int) -> UOp|int:
  """a symbolic int (a size) in its canonical form, an int when that is constant. Kept on the node: every shape goes through it"""
  if not isinstance(x, UOp): return x
  if (ret := x.__dict__.get("_canon")) is None:
    s = x.simplify()
    ret = x.__dict__["_canon"] = (s.arg if s.op is Ops.CONST else s) if (p := _poly(s)) is None else _from_poly(p)
  return ret

def sym_eq(a:UOp|int, b:UOp|int) -> bool:
  """a == b for every value of their Variables, shown by their canonical forms (forms that differ are not shown equal)"""
  ca, cb = canonical(a), canonical(b)
  return ca is cb if isinstance(ca, UOp) or isinstance(cb, UOp) else ca == cb

def sym_div_exact(a:UOp|int, b:UOp|int) -> UOp|int|None:
  """a / b where b divides a as polynomials (b one term: each of a's terms holds b's factors and a multiple of its coefficient; or a is
  an int multiple of b), else None"""
  pa, pb = _poly(canonical(a)), _poly(canonical(b))
  if pa is None or pb is None or not pb: return None
  (mb, cb), *rest = pb.items()
  if not rest:
    out: Poly = {}
    for m, c in pa.items():
      left = list(m)
      for f in mb:
        if f not in left: return None
        left.remove(f)
      if c % cb: return None
      out[tuple(left)] = c // cb
    return _from_poly(out)
  q = pa.get(mb, 0) // cb
  return q if q and pa == {m: c*q for m, c in pb.items()} else None
