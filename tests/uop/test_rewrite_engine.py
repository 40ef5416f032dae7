"""graph_rewrite against plain recursive oracles on random graphs: the engine (a topological walk, rules dispatched per op and dtype,
an explicit stack for what rules return) must give the very node the textbook fixed point gives, and PatternMatcher.rewrite the result of
trying every rule in order. The symbolic rules are checked against the values too."""
import itertools
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad.uop.ops import UOp, Ops, UPat, PatternMatcher, graph_rewrite, Variable
from tinygrad.uop.render import python_eval
from tinygrad.uop.symbolic import symbolic
from tinygrad.dtype import dtypes

def _fixed_point(u:UOp, pm:PatternMatcher, memo:dict) -> UOp:
  """sources first, then the node rebuilt on them; whatever a rule returns is rewritten the same way"""
  if u not in memo:
    new = u.replace(src=tuple(_fixed_point(s, pm, memo) for s in u.src))
    memo[u] = new if (rw := pm.rewrite(new)) is None else _fixed_point(rw, pm, memo)
  return memo[u]

def _bottom_up(u:UOp, pm:PatternMatcher, memo:dict) -> UOp:
  """the node rewritten until nothing applies (a result already known ends it), then its sources, then the rebuilt node again"""
  if u in memo: return memo[u]
  seen = u
  while (rw := pm.rewrite(seen)) is not None:
    if rw in memo: seen = memo[rw]; break
    seen = rw
  if seen in memo and seen is not u: memo[u] = memo[seen]
  else:
    new = seen.replace(src=tuple(_bottom_up(s, pm, memo) for s in seen.src))
    memo[u] = seen if new is seen else _bottom_up(new, pm, memo)
  return memo[u]

def _try_every_rule(pm:PatternMatcher, u:UOp) -> UOp|None:
  for pat, fxn in pm.patterns:
    for binds in pat.match(u, {}):
      if (ret := fxn(**binds)) is not None and ret is not u: return ret
  return None

# a matcher whose rules feed each other (a fold makes a constant another rule folds further) and one that only grows the graph once
cascade = PatternMatcher([
  (UPat.var("x") + 0, lambda x: x),
  (UPat.var("x") * 1, lambda x: x),
  (UPat(Ops.ADD, src=(UPat(Ops.ADD, src=(UPat.var("x"), UPat.cvar("a"))), UPat.cvar("b"))), lambda x, a, b: x + (a.arg + b.arg)),
  (UPat(Ops.MUL, src=(UPat.cvar("a"), UPat.cvar("b"))), lambda a, b: UOp.const(a.dtype, a.arg * b.arg)),
  (UPat(Ops.ADD, src=(UPat.cvar("a"), UPat.cvar("b"))), lambda a, b: UOp.const(a.dtype, a.arg + b.arg)),
  (UPat(Ops.MAX, src=(UPat.var("x"), UPat.var("x"))), lambda x: x),
  (UPat(Ops.NEG, dtypes.weakint, src=(UPat.var("x"),)), lambda x: x * -1),
  (UPat(Ops.WHERE, src=(UPat.cvar("c"), UPat.var("a"), UPat.var("b"))), lambda c, a, b: a if c.arg else b),
])

_VARS = [Variable("a", -3, 4), Variable("b", 0, 5), Variable("z", 1, 3)]
_BINARY = [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x.maximum(y), lambda x, y: x - y,
           lambda x, y: x // 3 + y, lambda x, y: x % 4 * y, lambda x, y: (x < y).where(x, y + 1)]

@st.composite
def graphs(draw) -> UOp:
  """a DAG of int index math over three variables: later nodes draw their sources from all earlier ones, so parts are shared"""
  nodes = list(_VARS) + [UOp.const(dtypes.weakint, v) for v in draw(st.lists(st.integers(-2, 3), min_size=1, max_size=3))]
  for _ in range(draw(st.integers(1, 14))):
    kind = draw(st.integers(0, len(_BINARY)))
    a = nodes[draw(st.integers(0, len(nodes)-1))]
    nodes.append(-a if kind == len(_BINARY) else _BINARY[kind](a, nodes[draw(st.integers(0, len(nodes)-1))]))
  return UOp.sink(*nodes[-draw(st.integers(1, 3)):])

_settings = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_memo_names = (f"_test_rewrite_memo{i}" for i in itertools.count())

@_settings
@given(graphs(), st.sampled_from(["symbolic", "cascade"]), st.booleans())
def test_default_order_is_the_recursive_fixed_point(sink:UOp, which:str, memo:bool):
  pm = symbolic if which == "symbolic" else cascade
  # a fresh memo name: marks from other examples (other graphs with shared nodes) must not decide anything here
  assert graph_rewrite(sink, pm, memo=next(_memo_names) if memo else None) is _fixed_point(sink, pm, {})

@_settings
@given(graphs(), st.sampled_from(["symbolic", "cascade"]))
def test_bottom_up_is_the_recursive_pre_order(sink:UOp, which:str):
  pm = symbolic if which == "symbolic" else cascade
  assert graph_rewrite(sink, pm, bottom_up=True) is _bottom_up(sink, pm, {})

@_settings
@given(graphs())
def test_rule_dispatch_is_trying_every_rule_in_order(sink:UOp):
  for u in sink.toposort():
    for pm in (symbolic, cascade):
      assert pm.rewrite(u) is _try_every_rule(pm, u)
    # the same node retyped: dispatch is per op and dtype, so a float, int32 and bool version each meet their own rule list
    for dt in (dtypes.float32, dtypes.int32, dtypes.bool):
      if u.op in (Ops.ADD, Ops.MUL, Ops.MAX, Ops.NEG):
        v = UOp(u.op, dt, tuple(s.cast(dt) for s in u.src), u.arg)
        assert symbolic.rewrite(v) is _try_every_rule(symbolic, v)

@_settings
@given(graphs())
def test_symbolic_rewrite_keeps_every_value(sink:UOp):
  out = graph_rewrite(sink, symbolic)
  for vals in itertools.product(*(range(v.arg.vmin, v.arg.vmax + 1) for v in _VARS)):
    env = {v.arg.name: x for v, x in zip(_VARS, vals)}
    assert [python_eval(s, env) for s in out.src] == [python_eval(s, env) for s in sink.src]

def test_a_rule_returning_a_new_graph_is_rewritten_through():
  # (a + 1) + 2 -> a + 3 happens at the root after its sources were done; the new node's own sources are new too
  a = _VARS[0]
  sink = UOp.sink(((a + 1) + 2) * 1 + 0)
  assert graph_rewrite(sink, cascade) is UOp.sink(a + 3) is _fixed_point(sink, cascade, {})

def test_deep_chain_needs_no_recursion():
  x = _VARS[1]
  for i in range(5000): x = x + 0 if i % 2 else x * 1
  assert graph_rewrite(UOp.sink(x), cascade) is UOp.sink(_VARS[1])
  assert graph_rewrite(UOp.sink(x), cascade, bottom_up=True) is UOp.sink(_VARS[1])

def _normal_sum_by_walking(u:UOp, limit:int=128) -> bool:
  """the plain definition: walk the left chain from the top, each term's base (without a constant factor) neither an ADD, CONST or
  FLOORMOD nor seen above it; past `limit` terms, normal"""
  seen: set = set()
  t = u.src[0] if u.src[1].op is Ops.CONST else u
  while len(seen) < limit:
    r = t.src[1] if t.op is Ops.ADD else t
    b = r.src[0] if r.op is Ops.MUL and r.src[1].op is Ops.CONST else r
    if b.op in (Ops.ADD, Ops.CONST, Ops.FLOORMOD) or b in seen: return False
    if t.op is not Ops.ADD: return True
    seen.add(b)
    t = t.src[0]
  return True

@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=12), st.integers(0, 2), st.integers(0, 140), st.booleans())
def test_normal_sum_kept_per_node_is_the_walk(picks:list[int], order:int, long:int, bad_leaf:bool):
  # left chains as index math builds them, one term at a time (each prefix asked first, as simplifying does), sharing their prefixes;
  # terms repeat, carry constant factors, or are a mod, a const or a sum (not normal); some chains run past the limit of 128 terms
  from tinygrad.uop.symbolic import _normal_sum
  a, b, z = _VARS
  terms = [a, b, z, a * 3, b * 2, z % 2, UOp.const(dtypes.weakint, 4), a + b, a * b, b // 2]
  base = a % 3 if bad_leaf else a * 7  # a mod at the bottom: not normal, unless the chain is too long to look that far
  for i in range(long): base = base.alu(Ops.ADD, Variable(f"t{i}", 0, 3) * (order + 1))
  chains = [base]
  for p in picks:
    nxt = chains[-1].alu(Ops.ADD, terms[p])
    if order == 1: _normal_sum(nxt)
    chains.append(nxt)
  for c in reversed(chains) if order == 2 else chains:
    if c.op is Ops.ADD:
      for u in (c, c.alu(Ops.ADD, UOp.const(dtypes.weakint, 5))):
        assert _normal_sum(u) == _normal_sum_by_walking(u), u.render(simplify=False)

def test_normal_sum_at_the_limit():
  # a mod at the bottom of a chain of 126..130 terms: seen (not normal) up to the limit of 128 terms, out of sight past it
  from tinygrad.uop.symbolic import _normal_sum
  for n in range(125, 130):
    chain = _VARS[0] % 3
    for i in range(n): chain = chain.alu(Ops.ADD, Variable(f"t{i}", 0, 3))
    assert _normal_sum(chain) == _normal_sum_by_walking(chain) == (n + 1 > 128)
