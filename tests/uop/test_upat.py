import sys
from tinygrad.uop.ops import UOp, Ops, Variable, UPat, PatternMatcher, graph_rewrite
from tinygrad.dtype import dtypes

x, y = Variable("x", 0, 10), Variable("y", 0, 10)
i32 = Variable("i", 0, 10, dtypes.int32)
def c(v, dt=dtypes.weakint): return UOp.const(dt, v)
def add(a, b): return UOp(Ops.ADD, a.dtype, (a, b))  # built as given: no operator sugar, no simplification

def matches(p:UPat, u:UOp) -> list[dict]: return p.match(u, {})

# *** UPat ***

def test_ordered_src():
  p = UPat(Ops.ADD, src=(UPat.var("a"), UPat.cvar("b")))
  assert matches(p, add(x, c(1))) == [{"a": x, "b": c(1)}] and matches(p, add(c(1), x)) == []
  assert matches(p, UOp(Ops.MUL, dtypes.weakint, (x, c(1)))) == [] and matches(UPat(Ops.ADD, src=(UPat.var("a"),)), add(x, y)) == []

def test_commutative_list_src_tries_permutations():
  p = UPat(Ops.ADD, src=[UPat.var("a"), UPat.cvar("b")])
  assert matches(p, add(x, c(1))) == [{"a": x, "b": c(1)}] and matches(p, add(c(1), x)) == [{"a": x, "b": c(1)}]
  assert (UPat.var("a") + UPat.cvar("b")).src.__class__ is list  # operator sugar builds the list form for commutative ops
  three = UPat(Ops.WHERE, src=[UPat.var("p", dtypes.bool), UPat.cvar("q"), UPat.var("r")])
  w = UOp(Ops.WHERE, dtypes.weakint, (x < 3, y, c(2)))
  assert matches(three, w) == [{"p": x < 3, "q": c(2), "r": y}]
  both = matches(UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("b")]), add(x, y))
  assert {(m["a"], m["b"]) for m in both} == {(x, y), (y, x)}  # every binding comes back
  assert len(matches(UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("b")]), add(x, x))) == 1  # identical permutations deduplicated

def test_single_upat_src_matches_every_source():
  p = UPat(Ops.ADD, src=UPat(Ops.CONST))
  assert matches(p, add(c(1), c(2))) and not matches(p, add(c(1), x))

def test_any_len():
  p = UPat(Ops.SINK, src=(UPat.var("first"),), allow_any_len=True)
  assert matches(p, UOp.sink(x, y, c(1))) == [{"first": x}] and matches(p, UOp.sink(x)) == [{"first": x}]
  assert matches(UPat(Ops.SINK, src=(UPat.var("first"),)), UOp.sink(x, y)) == []

def test_arg():
  assert matches(UPat(Ops.CONST, arg=1), c(1)) and not matches(UPat(Ops.CONST, arg=1), c(2))
  assert not matches(UPat(Ops.CONST, arg=1), c(True, dtypes.bool)) and not matches(UPat(Ops.CONST, arg=True), c(1))  # True is not 1
  assert matches(UPat(Ops.SINK, arg=None), UOp.sink(x)) and not matches(UPat(Ops.SINK, arg=None), UOp.sink(x, arg="k"))
  assert matches(UPat(Ops.SINK), UOp.sink(x, arg="k"))  # no arg given: any arg

def test_name_binding_is_consistent():
  p = UPat(Ops.ADD, src=(UPat.var("v"), UPat.var("v")))
  assert matches(p, add(x, x)) == [{"v": x}] and matches(p, add(x, y)) == []
  deep = UPat(Ops.MUL, src=(UPat(Ops.ADD, src=(UPat.var("v"), UPat.cvar())), UPat.var("v")))
  assert matches(deep, UOp(Ops.MUL, dtypes.weakint, (add(x, c(1)), x))) and not matches(deep, UOp(Ops.MUL, dtypes.weakint, (add(x, c(1)), y)))
  assert matches(UPat.var("v"), x, ) == [{"v": x}] and UPat.var("v").match(x, {"v": y}) == []  # a binding made outside counts too

def test_var_cvar_const_any_and_dtype_sets():
  assert matches(UPat.var("a"), x) == [{"a": x}] and matches(UPat.cvar("k"), c(3)) == [{"k": c(3)}] and not matches(UPat.cvar(), x)
  assert matches(UPat.const(dtypes.weakint, 3), c(3)) and not matches(UPat.const(dtypes.int32, 3), c(3))
  assert matches(UPat.var("a", dtypes.int32), i32) and not matches(UPat.var("a", dtypes.int32), x)
  assert matches(UPat.var("a", (dtypes.int32, dtypes.weakint)), x) and matches(UPat.var("a", {dtypes.int32, dtypes.weakint}), i32)
  either = UPat.any(UPat(Ops.CONST, name="a"), UPat(Ops.DEFINE_VAR, name="a"))
  assert matches(either, c(1)) == [{"a": c(1)}] and matches(either, x) == [{"a": x}] and matches(either, x + 1) == []
  assert matches(UPat((Ops.ADD, Ops.MUL), name="o"), x * 2) and not matches(UPat({Ops.ADD, Ops.MUL}), x // 2)

# *** the generated matchers: each special case against a node-by-node reference ***

def neg(a): return UOp(Ops.NEG, a.dtype, (a,))
def mul(a, b): return UOp(Ops.MUL, a.dtype, (a, b))

def test_nested_permutations():
  p = UPat(Ops.ADD, src=[UPat(Ops.MUL, src=[UPat.var("a"), UPat.cvar("k")]), UPat.var("b")])
  for e in (add(mul(x, c(2)), y), add(mul(c(2), x), y), add(y, mul(x, c(2))), add(y, mul(c(2), x))):
    assert matches(p, e) == [{"a": x, "k": c(2), "b": y}]
  assert matches(p, add(mul(x, y), y)) == [] and matches(p, add(x, y)) == []

def test_repeated_name_across_permutation_branches():
  p = UPat.var("x") + UPat(Ops.NEG, src=(UPat.var("x"),))
  assert matches(p, add(x, neg(x))) == [{"x": x}] and matches(p, add(neg(x), x)) == [{"x": x}]
  assert matches(p, add(y, neg(x))) == [] and matches(p, add(neg(x), y)) == []
  # v binds to a different source in each order of the outer list; a binding made in an order that failed must not carry over
  both = UPat(Ops.MUL, src=[UPat.var("v"), UPat(Ops.ADD, src=[UPat.var("v"), UPat.cvar("k")])])
  assert matches(both, mul(add(c(1), x), x)) == [{"v": x, "k": c(1)}] and matches(both, mul(add(c(1), y), x)) == []
  assert matches(both, mul(c(1), add(c(1), c(1)))) == [{"v": c(1), "k": c(1)}]  # one binding, though four orders match

def test_arg_is_type_exact():
  for arg, good, bad in ((1, c(1), [c(True, dtypes.bool), c(1.0, dtypes.float32)]), (0, c(0), [c(False, dtypes.bool), c(0.0, dtypes.float32)]),
                         (False, c(False, dtypes.bool), [c(0)]), (1.0, c(1.0, dtypes.float32), [c(1), c(True, dtypes.bool)])):
    assert matches(UPat(Ops.CONST, arg=arg), good) == [{}] and all(matches(UPat(Ops.CONST, arg=arg), b) == [] for b in bad)
    nested = UPat(Ops.SINK, src=(UPat.var("a"), UPat(Ops.CONST, arg=arg)))
    assert matches(nested, UOp.sink(x, good)) == [{"a": x}] and all(matches(nested, UOp.sink(x, b)) == [] for b in bad)
  nan = c(float("nan"), dtypes.float32)
  assert matches(UPat(Ops.CONST, arg=float("nan")), nan) == []  # compared with ==, like the arg of any other type

def test_source_counts():
  assert matches(UPat(Ops.SINK, src=(), allow_any_len=True), UOp.sink(x, y)) == [{}] and matches(UPat(Ops.SINK, src=()), UOp.sink(x)) == []
  assert matches(UPat(Ops.SINK, src=()), UOp(Ops.SINK, dtypes.void, ())) == [{}]
  assert matches(UPat(Ops.SINK, src=(UPat.var("a"), UPat.var("b")), allow_any_len=True), UOp.sink(x)) == []
  # a list is always the full count, allow_any_len or not
  assert matches(UPat(Ops.SINK, src=[UPat.var("a"), UPat.cvar("k")], allow_any_len=True), UOp.sink(x, c(1), y)) == []
  five = [UPat.var(n) for n in "abcd"] + [UPat.cvar("k")]  # past four sources a list is tried in the order given only
  assert matches(UPat(Ops.SINK, src=five), UOp.sink(x, y, x, y, c(1))) == [{"a": x, "b": y, "c": x, "d": y, "k": c(1)}]
  assert matches(UPat(Ops.SINK, src=five), UOp.sink(c(1), x, y, x, y)) == []

def test_early_reject():
  p = UPat(Ops.CMPNE, src=[UPat(Ops.CMPLT, src=(UPat.var("a"), UPat.var("b"))), UPat.const(dtypes.bool, True)])
  lt = x < y
  t = c(True, dtypes.bool)
  assert p.early_reject == {Ops.CMPLT, Ops.CONST}
  assert matches(p, lt.ne(t)) == [{"a": x, "b": y}] and matches(p, UOp(Ops.CMPNE, dtypes.bool, (t, lt))) == [{"a": x, "b": y}]
  assert matches(p, UOp(Ops.CMPNE, dtypes.bool, (lt, lt))) == [] and matches(p, UOp(Ops.CMPNE, dtypes.bool, (t, t))) == []

def test_every_source_pattern():
  assert matches(UPat(Ops.SINK, src=UPat(Ops.CONST)), UOp(Ops.SINK, dtypes.void, ())) == [{}]  # no sources: all of them match
  commuted = UPat(Ops.SINK, src=UPat(Ops.ADD, src=[UPat(Ops.DEFINE_VAR), UPat.cvar()]))  # a filter whose check loops
  assert matches(commuted, UOp.sink(add(x, c(1)), add(c(2), y))) == [{}] and matches(commuted, UOp.sink(add(x, c(1)), add(x, y))) == []
  same = UPat(Ops.SINK, src=UPat(name="v"))  # a name in it: every source must be the same node
  assert matches(same, UOp.sink(x, x, x)) == [{"v": x}] and matches(same, UOp.sink(x, y)) == []

def test_nested_alternatives():
  either = UPat.any(UPat(Ops.CONST, name="k"), UPat(Ops.DEFINE_VAR, name="v"))
  p = UPat(Ops.ADD, src=(UPat.var("a"), either))
  assert matches(p, add(x, c(1))) == [{"a": x, "k": c(1)}] and matches(p, add(c(1), y)) == [{"a": c(1), "v": y}]
  assert matches(p, add(x, add(x, y))) == []
  again = UPat(Ops.ADD, src=[UPat.var("a"), UPat.any(UPat(Ops.NEG, src=(UPat.var("a"),)), UPat(Ops.CONST, name="k"))])
  assert matches(again, add(neg(x), x)) == [{"a": x}] and matches(again, add(neg(x), y)) == []
  assert matches(again, add(c(1), y)) == [{"a": y, "k": c(1)}]

def test_match_with_store():
  p = UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("b")])
  assert p.match(add(x, y), {"a": y}) == [{"a": y, "b": x}]
  assert p.match(add(x, y), {"z": c(1)}) == [{"z": c(1), "a": x, "b": y}, {"z": c(1), "a": y, "b": x}]
  assert p.match(add(x, y), {"a": c(1)}) == []

def _corpus() -> list:
  from tinygrad.uop.symbolic import symbolic
  pats = [p for p, _ in symbolic.patterns] + [
    UPat(Ops.ADD, src=[UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("b")]), UPat(Ops.ADD, src=[UPat.var("c"), UPat.var("d")])]),
    UPat(Ops.ADD, src=[UPat(Ops.MUL, src=[UPat.var("a"), UPat.var("b")]), UPat(Ops.MUL, src=[UPat.var("a"), UPat.var("c")])]),
    UPat(Ops.ADD, src=(UPat.var("a"), UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("b")]))),
    UPat(Ops.WHERE, src=[UPat.var("a"), UPat.var("b"), UPat.var("b")]),
    UPat(Ops.ADD, src=UPat(name="v")), UPat(src=(UPat.var("a"),), allow_any_len=True, name="u")]
  leaves = [x, y, c(1), c(2), neg(x)]
  nodes = leaves + [add(a, b) for a in leaves for b in leaves] + [mul(a, b) for a in leaves for b in leaves]
  nodes += [add(add(x, y), add(y, x)), add(mul(x, y), mul(y, x)), add(mul(x, c(2)), mul(c(2), y)), add(x, add(y, x)),
            UOp(Ops.WHERE, dtypes.weakint, (x < 3, x, x)), UOp(Ops.WHERE, dtypes.weakint, (x < y, y, y)), (x < y).ne(c(True, dtypes.bool))]
  return [(p, u) for p in pats for u in nodes]

def test_generated_matchers_agree_with_node_by_node_matching():
  from tinygrad.uop.upat import _interpret, _plain
  pairs = _corpus()
  assert sum(_plain(p) for p, _ in pairs) > len(pairs) // 2
  for p, u in pairs: assert matches(p, u) == _interpret(p, u, {}), (p, u)  # same bindings, in the same order
  assert matches(pairs[-1][0], x + 1) == [{"a": x, "u": x + 1}]
  assert len(matches(UPat(Ops.ADD, src=[UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("b")]), UPat.var("c")]), add(add(x, y), x))) == 2

# *** PatternMatcher ***

def test_first_rule_wins_and_none_falls_through():
  seen = []
  pm = PatternMatcher([
    (UPat(Ops.ADD, name="a"), lambda a: seen.append("skip")),  # returns None: the next rule is tried
    (UPat(Ops.ADD, src=(UPat.var("v"), UPat.cvar("k"))), lambda v, k: v),
    (UPat(Ops.ADD, name="a"), lambda a: c(99)),
  ])
  assert pm.rewrite(add(x, c(1))) is x and pm.rewrite(add(x, y)) is c(99) and pm.rewrite(x) is None and seen == ["skip", "skip"]
  assert PatternMatcher([(UPat(Ops.ADD, name="a"), lambda a: a)]).rewrite(add(x, y)) is None  # returning the node itself is no rewrite

def test_composition_keeps_order():
  first = PatternMatcher([(UPat(Ops.ADD, name="a"), lambda a: c(1))])
  second = PatternMatcher([(UPat(Ops.ADD, name="a"), lambda a: c(2)), (UPat(Ops.MUL, name="a"), lambda a: c(3))])
  assert (first + second).rewrite(add(x, y)) is c(1) and (second + first).rewrite(add(x, y)) is c(2)
  assert (first + second).rewrite(x * 2) is c(3) and len((first + second).patterns) == 3

def test_wildcard_rule_keeps_its_position():
  pm = PatternMatcher([(UPat(Ops.ADD, name="a"), lambda a: c(1)), (UPat(name="u"), lambda u: c(7) if u.op is not Ops.CONST else None)])
  assert pm.rewrite(add(x, y)) is c(1) and pm.rewrite(x * 2) is c(7) and pm.rewrite(c(7)) is None

def test_ctx_callbacks():
  pm = PatternMatcher([(UPat(Ops.DEFINE_VAR, name="v"), lambda ctx, v: ctx.get(v.arg.name))])
  assert pm.rewrite(x, ctx={"x": c(5)}) is c(5) and pm.rewrite(y, ctx={"x": c(5)}) is None
  assert graph_rewrite(x * 2 + y, pm, ctx={"x": c(5), "y": c(6)}) is c(5) * 2 + c(6)
  seen = []
  graph_rewrite(x + y, PatternMatcher([(UPat(Ops.DEFINE_VAR, name="v"), lambda ctx, v: ctx.append(v.arg.name))]), ctx=seen)
  assert seen == ["x", "y"]

def test_top_level_alternatives_keep_rule_order():
  pm = PatternMatcher([
    (UPat.any(UPat(Ops.CONST, name="a"), UPat(name="a")), lambda a: None if a.op is Ops.CONST and a.arg == 1 else c(5)),
    (UPat(Ops.CONST, name="a"), lambda a: c(6))])
  # CONST 1: the first alternative declines, the second (a wildcard) matches the same node and declines too, then rule 2
  assert pm.rewrite(c(1)) is c(6) and pm.rewrite(c(2)) is c(5) and pm.rewrite(x) is c(5)
  assert PatternMatcher([(UPat.any(), lambda: c(1))]).rewrite(x) is None

def test_every_binding_is_tried():
  # x+y matches the commutative pattern twice; the callback declines the first binding and takes the second
  pm = PatternMatcher([(UPat(Ops.ADD, src=[UPat.var("a"), UPat.var("b")]), lambda a, b: b if a is y else None)])
  assert pm.rewrite(add(x, y)) is x and pm.rewrite(add(y, x)) is x

# *** graph_rewrite ***

# a rule on the parent that wants its children as built, and a rule on the children that changes them
_ONE_TO_TWO = PatternMatcher([
  (UPat(Ops.ADD, src=(UPat.const(dtypes.weakint, 1), UPat.const(dtypes.weakint, 1))), lambda: c(10)),  # 1+1 -> 10
  (UPat.const(dtypes.weakint, 1), lambda: c(2)),  # 1 -> 2
])

def test_default_rewrites_sources_first():
  assert graph_rewrite(add(c(1), c(1)), _ONE_TO_TWO) is add(c(2), c(2))  # children became 2 before the parent was looked at

def test_bottom_up_rewrites_the_node_first():
  assert graph_rewrite(add(c(1), c(1)), _ONE_TO_TWO, bottom_up=True) is c(10)

def test_default_reaches_a_fixed_point():
  # each result is rewritten again, also the new nodes a rule builds
  pm = PatternMatcher([(UPat.cvar("k", dtypes.weakint), lambda k: c(k.arg - 1) if k.arg > 0 else None),
                       (UPat(Ops.MUL, src=(UPat.var("a"), UPat.const(dtypes.weakint, 0))), lambda a: add(a, c(3)))])
  assert graph_rewrite(UOp(Ops.MUL, dtypes.weakint, (x, c(4))), pm) is add(x, c(0))

def test_bottom_up_to_fixed_point_then_sources():
  pm = PatternMatcher([(UPat(Ops.MUL, src=(UPat.var("a"), UPat.var("b"))), lambda a, b: add(a, b)),
                       (UPat(Ops.ADD, src=(UPat.var("a"), UPat.var("a"))), lambda a: a)])
  e = UOp(Ops.MUL, dtypes.weakint, (UOp(Ops.MUL, dtypes.weakint, (x, y)), UOp(Ops.MUL, dtypes.weakint, (x, y))))
  assert graph_rewrite(e, pm, bottom_up=True) is add(x, y)  # outer MUL -> ADD(m, m) -> m (same node) -> its MUL -> ADD(x, y)
  assert graph_rewrite(e, pm) is add(x, y)

def test_shared_nodes_rewritten_once():
  calls = []
  pm = PatternMatcher([(UPat(Ops.DEFINE_VAR, name="v"), lambda v: calls.append(v) or c(1))])
  s = add(x, c(2))
  assert graph_rewrite(UOp.sink(s, s * s, s + 1), pm) is UOp.sink(add(c(1), c(2)), add(c(1), c(2)) * add(c(1), c(2)), add(c(1), c(2)) + 1)
  assert calls == [x]

def test_deep_chain_no_recursion_error():
  limit = sys.getrecursionlimit()
  e = x
  for i in range(20000): e = UOp(Ops.MUL, dtypes.weakint, (add(e, c(i % 7)), c(1)))
  assert len(e.toposort()) > 40000 > limit
  drop_mul1 = PatternMatcher([(UPat(Ops.MUL, src=(UPat.var("a"), UPat.const(dtypes.weakint, 1))), lambda a: a)])
  for bottom_up in (False, True):
    out = graph_rewrite(e, drop_mul1, bottom_up=bottom_up)
    assert out.op is Ops.ADD and not any(u.op is Ops.MUL for u in out.toposort()) and len(out.toposort()) == 20000 + 1 + 7
