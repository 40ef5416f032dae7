"""UPat (a pattern over UOps) and PatternMatcher (an ordered rule table dispatched on op).
Each UPat is compiled once, lazily, into a python function generated for it: straight-line checks that fail fast, sources checked
inline, names held in local variables, and a loop over permutations only where a commutative source list needs one."""
from __future__ import annotations
import inspect, itertools
from typing import Any, Callable
from tinygrad.uop import Ops, GroupOp
from tinygrad.dtype import DType, dtypes

_ANY = object()  # "arg not given": None is a real arg value to match

class UPat:
  __slots__ = ("op", "dtype", "arg", "name", "src", "allow_any_len", "alternatives", "early_reject", "_m", "_multi")
  def __init__(self, op:Ops|tuple|set|None=None, dtype:DType|tuple|set|None=None, src:Any=None, arg:Any=_ANY, name:str|None=None,
               allow_any_len:bool=False):
    self.op = None if op is None else (frozenset(op) if isinstance(op, (tuple, set, frozenset)) else frozenset((op,)))
    self.dtype = None if dtype is None else (frozenset(dtype) if isinstance(dtype, (tuple, set, frozenset)) else frozenset((dtype,)))
    self.arg, self.name, self.allow_any_len, self.alternatives = arg, name, allow_any_len, None
    # tuple: positional; list: any permutation (commutative ops); a single UPat: every source matches it
    if isinstance(src, UPat) or src is None: self.src = src
    elif isinstance(src, list): self.src = list(src)
    else: self.src = tuple(src)
    # _m(uop): the compiled matcher, a binding dict or None; with _multi, a list of every binding (commutative sources, alternatives)
    self._m: Callable = lambda u: self._compile()(u)
    self._multi = False
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
    """every binding of names to nodes under which self matches uop (usually zero or one), each agreeing with and extended by store"""
    r = self._m(uop)
    res = r if self._multi else [] if r is None else [r]
    return [{**store, **b} for b in res if all(store.get(k, v) is v for k, v in b.items())] if store else res
  def _compile(self) -> Callable:
    if self.alternatives is not None:
      alts, self._multi = self.alternatives, True
      self._m = lambda u: [b for a in alts for b in a.match(u, {})]
    elif _plain(self): self._m, self._multi = _generate(self)
    else: self._m, self._multi = (lambda u: _interpret(self, u, {})), True
    return self._m

# *** code generation ***

def _names(p:UPat) -> set[str]:
  subs = p.alternatives or (() if p.src is None else (p.src,) if isinstance(p.src, UPat) else p.src)
  return ({p.name} if p.name is not None else set()).union(*[_names(s) for s in subs])

def _permuted(p:UPat) -> bool: return isinstance(p.src, list) and 2 <= len(p.src) <= 4  # longer lists: only the order given is tried
def _loops(p:UPat) -> bool: return _permuted(p) or isinstance(p.src, (tuple, list)) and any(_loops(s) for s in p.src)

def _plain(p:UPat) -> bool:
  """p can be generated: no nested alternatives, a pattern for every source binds no names, and at most one source of a commutative
  list can match more than one way (two would have to nest their loops in the order the sources come, which changes per permutation)"""
  if p.alternatives is not None: return False
  if p.src is None: return True
  if isinstance(p.src, UPat): return not _names(p.src)
  return all(_plain(s) for s in p.src) and not (_permuted(p) and sum(_loops(s) for s in p.src) > 1)

class _Gen:
  """python source of one plain UPat's matcher. Every node is a variable (u, s1, s2, ..); a name binds to the variable it first
  appears at, later appearances check identity. A failed check returns, or inside a permutation loop tries the next permutation."""
  def __init__(self, fail:str):
    self.lines: list[str] = []
    self.env: dict[str, Any] = {}
    self.names: dict[int, str] = {}  # id of a constant -> its name in env (env keeps it alive, so the id stays its own)
    self.bound: dict[str, str] = {}
    self.nvars, self.fail = 0, fail
  def const(self, v) -> str:
    if (name := self.names.get(id(v))) is None:
      name = self.names[id(v)] = f"_c{len(self.env)}"
      self.env[name] = v
    return name
  def fresh(self, n:int) -> list[str]:
    self.nvars += n
    return [f"s{i}" for i in range(self.nvars-n+1, self.nvars+1)]
  def guard(self, ind:int, conds:list[str]):
    if conds: self.lines.append("  "*ind + f"if {' or '.join(conds)}: {self.fail}")
  def node_checks(self, p:UPat, v:str) -> list[str]:
    """what can be checked on v alone: op, dtype, arg (type-exact: True is not 1) and source count"""
    conds = []
    for attr, vals in (("op", p.op), ("dtype", p.dtype)):
      if vals is None: continue
      conds.append(f"{v}.{attr} is not {self.const(next(iter(vals)))}" if len(vals) == 1 else f"{v}.{attr} not in {self.const(vals)}")
    if p.arg is None or p.arg is True or p.arg is False: conds.append(f"{v}.arg is not {p.arg!r}")
    elif p.arg is not _ANY: conds.append(f"type({v}.arg) is not {self.const(type(p.arg))} or not {v}.arg == {self.const(p.arg)}")
    if isinstance(p.src, tuple) and p.allow_any_len:
      if p.src: conds.append(f"len({v}.src) < {len(p.src)}")
    elif isinstance(p.src, (tuple, list)): conds.append(f"len({v}.src) != {len(p.src)}")
    return conds
  def body(self, p:UPat, v:str, ind:int) -> int:
    """the name and the sources of p at v (its node_checks passed); returns the indent its continuation goes at"""
    if p.name is not None:
      if (prev := self.bound.get(p.name)) is None: self.bound[p.name] = v
      else: self.guard(ind, [f"{v} is not {prev}"])
    if p.src is None: return ind
    if isinstance(p.src, UPat):  # a filter over every source: it binds no names
      fn = p.src._compile()
      self.guard(ind, [f"{'[]' if p.src._multi else 'None'} in map({self.const(fn)}, {v}.src)"])
      return ind
    if not (n := len(p.src)): return ind
    kids = self.fresh(n)
    if _permuted(p):
      srcs = self.fresh(n)
      self.lines.append("  "*ind + f"{', '.join(srcs)}, = {v}.src")
      for op in sorted(p.early_reject): self.guard(ind, [" and ".join(f"{s}.op is not {self.const(op)}" for s in srcs)])
      # permutation pp puts pattern pp[j] on source j
      perms = [tuple(srcs[pp.index(i)] for i in range(n)) for pp in itertools.permutations(range(n))]
      self.lines.append("  "*ind + f"for {', '.join(kids)}, in ({', '.join('(' + ', '.join(t) + ',)' for t in perms)}):")
      ind, self.fail = ind + 1, "continue"
    else: self.lines.append("  "*ind + f"{', '.join(kids)}, = {v}.src" + (f"[:{n}]" if p.allow_any_len and isinstance(p.src, tuple) else ""))
    self.guard(ind, [c for sp, k in zip(p.src, kids) for c in self.node_checks(sp, k)])  # the whole level before going deeper
    for sp, k in zip(p.src, kids): ind = self.body(sp, k, ind)
    return ind

def _generate(p:UPat) -> tuple[Callable, bool]:
  g = _Gen("return []" if (multi := _loops(p)) else "return None")
  g.guard(1, g.node_checks(p, "u"))
  ind = g.body(p, "u", 1)
  names = list(g.bound)
  if multi:  # a dict keyed by the bound nodes drops the bindings identical source permutations find twice
    g.lines.append("  "*ind + f"_r[({''.join(g.bound[n] + ', ' for n in names)})] = None")
    g.lines.append(f"  return [{{{', '.join(f'{n!r}: k[{i}]' for i, n in enumerate(names))}}} for k in _r]")
  else: g.lines.append("  "*ind + f"return {{{', '.join(f'{n!r}: {g.bound[n]}' for n in names)}}}")
  src = "def _m(u):\n" + ("  _r = {}\n" if multi else "") + "\n".join(g.lines)
  exec(compile(src, f"<UPat matcher {p!r:.200}>", "exec"), g.env)
  return g.env["_m"], multi

# *** what _generate leaves out (nested alternatives, a named every-source pattern, two looping sources in one list): node by node ***

def _interpret(p:UPat, u, b:dict) -> list[dict]:
  if p.op is not None and u.op not in p.op or p.dtype is not None and u.dtype not in p.dtype: return []
  if p.arg is not _ANY and not (type(u.arg) is type(p.arg) and u.arg == p.arg): return []
  if p.name is not None:
    if (prev := b.get(p.name)) is None: b = {**b, p.name: u}
    elif prev is not u: return []
  if (src := p.src) is None: return [b]
  if isinstance(src, UPat): return _fold((src,) * len(u.src), u.src, b)
  if _permuted(p): return [] if len(u.src) != len(src) else _dedup([r for pp in itertools.permutations(src) for r in _fold(pp, u.src, b)])
  n = len(src)
  if (len(u.src) < n) if p.allow_any_len and isinstance(src, tuple) else (len(u.src) != n): return []
  return _fold(tuple(src), u.src[:n], b)

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
    wildcard: list[tuple[tuple[int, int], UPat, Callable, bool]] = []
    entries: dict[Ops, list[tuple[tuple[int, int], UPat, Callable, bool]]] = {}
    for i, (pat, fxn) in enumerate(patterns):
      takes_ctx = "ctx" in inspect.signature(fxn).parameters
      # top-level alternatives become rules of their own, in place: each is dispatched on its own ops
      for j, alt in enumerate(_alternatives(pat)):
        if alt.op is None: wildcard.append(((i, j), alt, fxn, takes_ctx))
        else:
          for o in alt.op: entries.setdefault(o, []).append(((i, j), alt, fxn, takes_ctx))
    # a wildcard rule (no op) applies to every op, in its original position
    for o in Ops:
      if rules := sorted(entries.get(o, []) + wildcard, key=lambda x: x[0]): self.pdict[o] = [(p, f, c) for _, p, f, c in rules]
    # op -> dtype -> the op's rules whose pattern admits that dtype (filled as dtypes are met): a float ADD skips every int-only rule
    self._by_dtype: dict[Ops, dict[DType, list]] = {o: {} for o in self.pdict}
  def __add__(self, other:PatternMatcher) -> PatternMatcher: return PatternMatcher(self.patterns + other.patterns)
  def _rules(self, op:Ops, dtype:DType) -> list:
    ret = self._by_dtype[op][dtype] = [r for r in self.pdict[op] if r[0].dtype is None or dtype in r[0].dtype]
    return ret
  def rewrite(self, uop, ctx=None):
    if (per_dtype := self._by_dtype.get(uop.op)) is None: return None
    if (rules := per_dtype.get(uop.dtype)) is None: rules = self._rules(uop.op, uop.dtype)
    for pat, fxn, takes_ctx in rules:
      if (r := pat._m(uop)) is None: continue
      for binds in (r if pat._multi else (r,)):
        ret = fxn(ctx=ctx, **binds) if takes_ctx else fxn(**binds)
        if ret is not None and ret is not uop: return ret
    return None

def _alternatives(p:UPat) -> list[UPat]: return [p] if p.alternatives is None else [a for alt in p.alternatives for a in _alternatives(alt)]

__all__ = ["UPat", "PatternMatcher", "dtypes"]
