"""UPat (a pattern over UOps) and PatternMatcher (an ordered rule table dispatched on op).
Each UPat is compiled once, lazily, into a chain of small specialised closures: only the checks a pattern needs are run."""
from __future__ import annotations
import inspect, itertools
from typing import Any, Callable
from tinygrad.uop import Ops, GroupOp
from tinygrad.dtype import DType, dtypes

_ANY = object()  # "arg not given": None is a real arg value to match

class UPat:
  __slots__ = ("op", "dtype", "arg", "name", "src", "allow_any_len", "alternatives", "_fn", "early_reject")
  def __init__(self, op:Ops|tuple|set|None=None, dtype:DType|tuple|set|None=None, src:Any=None, arg:Any=_ANY, name:str|None=None,
               allow_any_len:bool=False):
    self.op = None if op is None else (frozenset(op) if isinstance(op, (tuple, set, frozenset)) else frozenset((op,)))
    self.dtype = None if dtype is None else (frozenset(dtype) if isinstance(dtype, (tuple, set, frozenset)) else frozenset((dtype,)))
    self.arg, self.name, self.allow_any_len, self.alternatives = arg, name, allow_any_len, None
    # tuple: positional; list: any permutation (commutative ops); a single UPat: every source matches it
    if isinstance(src, UPat) or src is None: self.src = src
    elif isinstance(src, list): self.src = list(src)
    else: self.src = tuple(src)
    self._fn: Callable|None = None
    # ops that must appear among the direct sources: a cheap filter before the full match
    srcs = self.src if isinstance(self.src, (tuple, list)) else ()
    self.early_reject = frozenset(next(iter(p.op)) for p in srcs if p.op is not None and len(p.op) == 1 and p.alternatives is None)

  @staticmethod
  def any(*pats:UPat) -> UPat:
    ret = UPat()
    ret.alternatives = pats
    return ret
  @staticmethod
  def var(name:str|None=None, dtype:DType|tuple|None=None) -> UPat: return UPat(dtype=dtype, name=name)
  @staticmethod
  def cvar(name:str|None=None, dtype:DType|tuple|None=None) -> UPat: return UPat(Ops.CONST, dtype, name=name)
  @staticmethod
  def const(dtype:DType|tuple|None, b:Any) -> UPat: return UPat(Ops.CONST, dtype, arg=b)

  # patterns read like math: UPat.var("x") * 1
  def alu(self, op:Ops, *src:UPat) -> UPat:
    srcs = (self,) + tuple(s if isinstance(s, UPat) else UPat.const(None, s) for s in src)
    return UPat(op, None, list(srcs) if op in GroupOp.Commutative else srcs)
  def __add__(self, x): return self.alu(Ops.ADD, x)
  def __radd__(self, x): return self.alu(Ops.ADD, x)
  def __mul__(self, x): return self.alu(Ops.MUL, x)
  def __rmul__(self, x): return self.alu(Ops.MUL, x)
  def __floordiv__(self, x): return self.alu(Ops.FLOORDIV, x)
  def __mod__(self, x): return self.alu(Ops.FLOORMOD, x)
  def __lt__(self, x): return self.alu(Ops.CMPLT, x)
  def ne(self, x): return self.alu(Ops.CMPNE, x)
  def maximum(self, x): return self.alu(Ops.MAX, x)
  def cast(self, dtype=None, name=None) -> UPat: return UPat(Ops.CAST, dtype, (self,), name=name)
  def where(self, t, f): return self.alu(Ops.WHERE, t, f)

  def __repr__(self):
    if self.alternatives is not None: return f"UPat.any{self.alternatives!r}"
    ops = None if self.op is None else sorted(self.op)
    return f"UPat({ops}, {None if self.dtype is None else set(self.dtype)}, name={self.name!r}, src={self.src!r}" + \
           ("" if self.arg is _ANY else f", arg={self.arg!r}") + ")"

  def match(self, uop, store:dict) -> list[dict]:
    """every binding of names to nodes under which self matches uop (usually zero or one)"""
    if self._fn is None: self._fn = _compile(self)
    return self._fn(uop, store)

def _compile(p:UPat) -> Callable:
  if p.alternatives is not None:
    alts = p.alternatives
    return lambda u, b: [r for a in alts for r in a.match(u, b)]
  checks: list[Callable] = []
  if p.op is not None:
    ops = p.op
    checks.append((lambda u: u.op is next(iter(ops))) if len(ops) == 1 else (lambda u: u.op in ops))
  if p.dtype is not None:
    dts = p.dtype
    checks.append(lambda u: u.dtype in dts)
  if p.arg is not _ANY:
    arg = p.arg
    checks.append(lambda u: type(u.arg) is type(arg) and u.arg == arg)  # type check: True must not match 1
  if p.early_reject:
    er = p.early_reject
    checks.append(lambda u: er.issubset({s.op for s in u.src}))
  name = p.name
  def bind(u, b:dict) -> list[dict]:
    if name is None: return [b]
    if (prev := b.get(name)) is not None: return [b] if prev is u else []
    return [{**b, name: u}]
  src = p.src
  if src is None: match_src = None
  elif isinstance(src, UPat):
    def match_src(u, b): return _fold(tuple(src for _ in u.src), u.src, b)
  elif isinstance(src, list):
    n = len(src)
    perms = [tuple(pp) for pp in itertools.permutations(src)] if n <= 4 else [tuple(src)]
    def match_src(u, b):
      if len(u.src) != n: return []
      return _dedup([r for pp in perms for r in _fold(pp, u.src, b)])
  else:
    n, any_len = len(src), p.allow_any_len
    def match_src(u, b):
      if (len(u.src) < n) if any_len else (len(u.src) != n): return []
      return _fold(src, u.src[:n], b)
  def fn(u, b):
    for c in checks:
      if not c(u): return []
    binds = bind(u, b)
    if not binds or match_src is None: return binds
    return match_src(u, binds[0])
  return fn

def _fold(pats:tuple, srcs:tuple, b:dict) -> list[dict]:
  res = [b]
  for pat, s in zip(pats, srcs):
    res = [r2 for r in res for r2 in pat.match(s, r)]
    if not res: return res
  return _dedup(res)

def _dedup(res:list[dict]) -> list[dict]:
  # permutations of identical sources can produce the same binding twice; keep one
  return res if len(res) < 2 else list({tuple(sorted((k, id(v)) for k, v in r.items())): r for r in res}.values())

class PatternMatcher:
  """rules tried in order; the first whose pattern matches and whose callback returns a UOp wins. Matchers compose with +."""
  def __init__(self, patterns:list[tuple[UPat, Callable]]):
    self.patterns = patterns
    self.pdict: dict[Ops, list[tuple[UPat, Callable, bool]]] = {}
    wildcard: list[tuple[UPat, Callable, bool, int]] = []
    entries: dict[Ops, list[tuple[int, UPat, Callable, bool]]] = {}
    for i, (pat, fxn) in enumerate(patterns):
      takes_ctx = "ctx" in inspect.signature(fxn).parameters
      ops = _ops_of(pat)
      if ops is None: wildcard.append((pat, fxn, takes_ctx, i))
      else:
        for o in ops: entries.setdefault(o, []).append((i, pat, fxn, takes_ctx))
    # a wildcard rule (no op) applies to every op, in its original position
    for o in Ops:
      rules = sorted(entries.get(o, []) + [(i, p, f, c) for p, f, c, i in wildcard], key=lambda x: x[0])
      if rules: self.pdict[o] = [(p, f, c) for _, p, f, c in rules]
  def __add__(self, other:PatternMatcher) -> PatternMatcher: return PatternMatcher(self.patterns + other.patterns)
  def rewrite(self, uop, ctx=None):
    for pat, fxn, takes_ctx in self.pdict.get(uop.op, ()):
      for binds in pat.match(uop, {}):
        ret = fxn(ctx=ctx, **binds) if takes_ctx else fxn(**binds)
        if ret is not None and ret is not uop: return ret
    return None

def _ops_of(p:UPat) -> frozenset|None:
  if p.alternatives is not None:
    sub = [_ops_of(a) for a in p.alternatives]
    return None if any(s is None for s in sub) else frozenset().union(*sub)
  return p.op

__all__ = ["UPat", "PatternMatcher", "dtypes"]
