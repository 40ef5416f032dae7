import itertools, math, operator
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad.uop.ops import UOp, Ops, Variable, graph_rewrite
from tinygrad.uop.symbolic import symbolic_simple, symbolic, sym, simplify_index
from tinygrad.uop.render import python_eval
from tinygrad.dtype import dtypes
from tinygrad.helpers import Context

def c(v, dt=dtypes.weakint): return UOp.const(dt, v)
def ren(u:UOp) -> str: return u.simplify().render(simplify=False)
x, y, z = Variable("x", 0, 100), Variable("y", 0, 3), Variable("z", 0, 4)
n = Variable("n", -5, 5)
r0, r1, r2 = UOp.range(5, 0), UOp.range(3, 1), UOp.range(4, 2)
f = UOp.param(0, dtypes.float32, name="f")  # an opaque float value

# *** golden: input -> printed result ***

GOLDEN = [
  # identities
  (lambda: x + 0, "x"), (lambda: x * 1, "x"), (lambda: x * 0, "0"), (lambda: x // 1, "x"), (lambda: x % 1, "0"), (lambda: x - x, "0"),
  (lambda: -(-x), "x"), (lambda: x.maximum(x), "x"), (lambda: x + x, "(x*2)"), (lambda: x*3 + x*4, "(x*7)"), (lambda: (x + 3) + 4, "(x+7)"),
  (lambda: (x + 3) - x, "3"), (lambda: (x + 1)*2 - x*2, "2"), (lambda: 3 + x, "(x+3)"), (lambda: 2 * x * 3, "(x*6)"), (lambda: x*2*y, "((x*y)*2)"),
  (lambda: x + y - x, "y"), (lambda: (x + y)*2 - y, "((x*2)+y)"), (lambda: -(x + y), "((x*-1)+(y*-1))"),
  # floor div and mod, by bounds and by splitting off multiples of the divisor
  (lambda: (x*4 + y)//4, "x"), (lambda: (x*4 + y) % 4, "y"), (lambda: (x*4 + z)//4, "(x+(z//4))"), (lambda: (x*4 + 7)//4, "(x+1)"),
  (lambda: (x*4 + 6)//4, "(x+1)"), (lambda: (x*6 + 4)//4, "(((x*3)+2)//2)"), (lambda: (x*4 + 2) % 6, "((((x*2)+1)%3)*2)"),
  (lambda: (x//4)//3, "(x//12)"), (lambda: (x % 12) % 4, "(x%4)"), (lambda: (x % 4) % 12, "(x%4)"), (lambda: y // 4, "0"), (lambda: y % 4, "y"),
  (lambda: (y + 4) % 4, "y"), (lambda: (y + 4)//4, "1"), (lambda: (x*8 + y*5 + 1) % 4, "(((y*5)+1)%4)"), (lambda: (x//4)*4 + x % 4, "x"),
  (lambda: ((x//4) % 3)*4 + (x//12)*12 + x % 4, "x"),
  # negative values: python floor semantics
  (lambda: (n*4 + 3)//4, "n"), (lambda: (n*4 - 1) % 4, "3"), (lambda: (n*4 - 1)//4, "(n+-1)"), (lambda: (n + 5)//11, "0"), (lambda: n // 4, "(n//4)"),
  (lambda: n % -3, "(n%-3)"),
  # comparisons
  (lambda: x*4 < 9, "(x<3)"), (lambda: x + 3 < 10, "(x<7)"), (lambda: x < 200, "True"), (lambda: x < 0, "False"), (lambda: -x < 5, "True"),
  (lambda: n*-2 < 3, "(-2<n)"), (lambda: 9 < x*4, "(2<x)"), (lambda: (x*2 + 1).ne(4), "True"), (lambda: (x*2 + 1).eq(5), "(x==2)"),
  (lambda: x < x, "False"), (lambda: x.ne(x), "False"), (lambda: (x >= 5), "(4<x)"), (lambda: (x <= 5), "(x<6)"),
  # max, where, bools
  (lambda: x.maximum(y + 200), "(y+200)"), (lambda: (x < 50).where(y, y), "y"), (lambda: c(True, dtypes.bool).where(x, y), "x"),
  (lambda: (x < 50).where(c(True, dtypes.bool), c(False, dtypes.bool)), "(x<50)"), (lambda: ((x < 50) & (y < 2)) & True, "((x<50)&(y<2))"),
  (lambda: (x < 50) | True, "True"), (lambda: (x < 50).logical_not().logical_not(), "(x<50)"),
  (lambda: (f < 1.0).logical_not().where(x, y), "(y if (f<1.0) else x)"),  # where(!c,a,b) -> where(c,b,a)
]

@pytest.mark.parametrize("build,want", GOLDEN)
def test_golden(build, want):
  assert ren(build()) == want

def test_div_mod_not_folded_without_proof():
  # z in [0, 4] reaches 4: (x*4+z)//4 is not x; a negative divisor, an unknown numerator and C division stay
  assert ren((x*4 + z) % 4) == "(z%4)"
  for e in [x // -4, (x*4 + y).alu(Ops.CDIV, c(4)), UOp.param(1, dtypes.int32).alu(Ops.FLOORMOD, c(4, dtypes.int32))]:
    assert e.simplify() is e

def test_floats_are_exact():
  # NaN*0 is NaN, inf-inf is NaN, NaN != NaN: none of these fold on floats
  for e in [f * 0.0, f - f, f.ne(f), f.eq(f), f.alu(Ops.FLOORDIV, f.const_like(1.0)), f.alu(Ops.FLOORMOD, f.const_like(1.0))]:
    assert e.simplify() is e, e.render(False)
  assert (f * 1.0).simplify() is f and (f + 0.0).simplify() is f and (f < f).simplify().arg is False
  assert (f + 1.0 + 2.0).simplify() is f + 1.0 + 2.0  # reassociation rounds differently on floats

def test_const_fold_wraps_like_the_dtype():
  i32, u8, i8 = dtypes.int32, dtypes.uint8, dtypes.int8
  assert (c(2**31-1, i32) + c(1, i32)).simplify().arg == -2**31
  assert (c(255, u8) + c(1, u8)).simplify().arg == 0 and (c(-128, i8) * c(-1, i8)).simplify().arg == -128
  assert UOp(Ops.CAST, u8, (c(300, i32),)).simplify().arg == 44
  assert (c(7, i32) // c(-2, i32)).simplify().arg == -4 and (c(7, i32) % c(-2, i32)).simplify().arg == -1  # floor
  assert c(7, i32).alu(Ops.CDIV, c(-2, i32)).simplify().arg == -3 and c(7, i32).alu(Ops.CMOD, c(-2, i32)).simplify().arg == 1  # C
  assert (c(1, i32) << c(31, i32)).simplify().arg == -2**31

def test_const_fold_float_ieee():
  f32 = dtypes.float32
  assert c(0.0, f32).alu(Ops.RECIPROCAL).simplify().arg == math.inf and c(-0.0, f32).alu(Ops.RECIPROCAL).simplify().arg == -math.inf
  assert math.isnan(c(-1.0, f32).alu(Ops.SQRT).simplify().arg) and c(0.0, f32).alu(Ops.LOG2).simplify().arg == -math.inf
  assert c(200.0, f32).alu(Ops.EXP2).simplify().arg == math.inf  # float32 overflow
  assert c(0.1, f32).alu(Ops.ADD, c(0.2, f32)).simplify().arg == dtypes.as_const(dtypes.as_const(0.1, f32) + dtypes.as_const(0.2, f32), f32)
  assert math.isnan(c(math.nan, f32).maximum(c(1.0, f32)).simplify().arg) and (c(math.nan, f32) < c(1.0, f32)).simplify().arg is False

def test_unfoldable_constants_stay():
  for e in [c(1) // c(0), c(1) % c(0), c(1).alu(Ops.CDIV, c(0)), c(1).alu(Ops.SHL, c(-1)), UOp(Ops.CAST, dtypes.int32, (c(math.nan, dtypes.float32),))]:
    assert e.simplify() is e
  assert (c(1) << c(-1)).simplify() is c(0)  # the mixin's shift defines it: every bit shifted out

def test_casts():
  i = Variable("i", 0, 100, dtypes.int32)
  assert i.cast(dtypes.weakint).cast(dtypes.int32).simplify() is i  # weakint holds every int
  assert i.cast(dtypes.int8).cast(dtypes.int32).simplify() is i  # int8 holds 0..100
  big = Variable("b", 0, 300, dtypes.int32)
  assert (e := big.cast(dtypes.int8).cast(dtypes.int32)).simplify() is e  # 300 doesn't fit int8: the round trip wraps
  assert i.cast(dtypes.int8).cast(dtypes.int16).simplify() is i.cast(dtypes.int16)
  assert UOp(Ops.CAST, dtypes.int32, (i,)).simplify() is i  # cast to its own dtype

def test_int32_overflow_blocks_bounds_rules():
  # i*2^30 may wrap in int32: its bounds are the full range, so (i*2^30 + 1)//2^30 must not become i
  i = Variable("i", 0, 100, dtypes.int32)
  e = (i * c(2**30, dtypes.int32) + c(1, dtypes.int32)) // c(2**30, dtypes.int32)
  assert e.simplify().op is Ops.FLOORDIV

def test_shape_kept():
  v = UOp.placeholder((3, 4), dtypes.int32, 0)
  assert (v * 0).simplify().shape == (3, 4) and (v - v).simplify().shape == (3, 4)
  assert (v < v).simplify().shape == (3, 4)

def test_symbolic_simple_is_only_local():
  assert graph_rewrite(x + x, symbolic_simple) is x + x and graph_rewrite(c(2) + c(3), symbolic_simple).arg == 5
  assert graph_rewrite(3 + x, symbolic) is x + 3

def test_sym_extras_and_simplify_index():
  cond = x < 10
  assert simplify_index(cond.where(cond.where(y, z), x)).render(False) == "(y if (x<10) else x)"
  assert simplify_index(x // 4 < 3).render(False) == "(x<12)" and simplify_index(2 < x // 4).render(False) == "(11<x)"
  assert x.simplify() is x and simplify_index(x) is x and simplify_index(x // 4 < 3) is graph_rewrite(x // 4 < 3, sym)
  assert (x // 4 < 3).simplify().render(False) == "((x//4)<3)"  # the extra rules are sym's, not symbolic's

def test_long_chains():
  # collecting terms looks at most 128 nodes down a chain, so a long sum (an unrolled reduction) costs linear time; it still folds
  v = [Variable(f"v{i}", 0, 10) for i in range(8)]
  e = v[0]
  for i in range(1, 4000): e = e + v[i % 8]
  s = e.simplify()
  assert len(s.toposort()) < 30 and python_eval(s, {f"v{i}": i for i in range(8)}) == python_eval(e, {f"v{i}": i for i in range(8)})

def test_simplify_with_spec():
  with Context(SPEC=1):
    assert ren(((r0*12 + r1*4 + r2)//4) % 3) == "r1"

# *** index expressions from reshapes and flattens must shrink ***

def _corpus():
  a, b, d = UOp.range(6, 3), UOp.range(2, 4), UOp.range(8, 5)
  flat = r0*12 + r1*4 + r2  # a (5,3,4) view flattened
  return [
    ((flat // 4) % 3, "r1"), (flat // 12, "r0"), (flat % 4, "r2"), ((flat // 4) * 4 + flat % 4, "(((r0*12)+(r1*4))+r2)"),
    (((r1*4 + r2) // 6) * 6 + (r1*4 + r2) % 6, "((r1*4)+r2)"),  # (3,4) -> (2,6) -> flat again
    (((r0*4 + r2) % 8) // 4, "(r0%2)"), (((r0 + 1)*4 + r2 - 4) // 4, "r0"), (((r0*3 + r1) // 3) % 5, "r0"),
    ((((r0*6 + r1*2 + b) // 2) % 3)*2 + b, "((r1*2)+r4)"), ((r0*4 + r2 < 12), "(r0<3)"), ((r1*4 + r2) < 12, "True"),
    (((a*8 + d) // 4) % 2, "(r5//4)"), (((a*8 + d) % 16) // 8, "(r3%2)"), ((a*2 + b) % 2, "r4"), (((a*2 + b) // 2) * 2, "(r3*2)"),
    ((((r0*12 + r1*4 + r2) % 12) // 4) * 4 + (r0*12 + r1*4 + r2) % 4, "((r1*4)+r2)"),
    ((r0*12 + r1*4 + r2 + 1) // 4, "(((r0*3)+r1)+((r2+1)//4))"),
  ]

@pytest.mark.parametrize("expr,want", _corpus())
def test_index_corpus_shrinks(expr, want):
  s = simplify_index(expr)
  before, after = len(expr.toposort()), len(s.toposort())
  print(f"{expr.render(False)}: {before} nodes -> {s.render(False)}: {after} nodes")
  assert after < before
  assert s.render(False) == want
  rngs = sorted({u for u in expr.toposort() if u.op is Ops.RANGE}, key=lambda r: r.arg)
  for vals in itertools.product(*[range(r.vmax + 1) for r in rngs]):
    env = {f"r{r.arg[0]}": v for r, v in zip(rngs, vals)}
    assert python_eval(s, env) == python_eval(expr, env)

# *** property: simplify keeps the value ***

@st.composite
def _expr(draw):
  vs = [Variable(f"v{i}", (lo := draw(st.integers(-12, 12))), lo + draw(st.integers(0, 20))) for i in range(draw(st.integers(2, 3)))]
  leaf = st.sampled_from(vs) | st.integers(-9, 9).map(c)
  def extend(sub):
    div = st.integers(-7, 13).filter(bool)
    cmp = st.builds(lambda a, b, o: [operator.lt, UOp.ne, UOp.eq][o](a, b), sub, sub, st.integers(0, 2))
    return st.one_of(st.builds(operator.add, sub, sub), st.builds(operator.sub, sub, sub), st.builds(operator.mul, sub, sub),
                     st.builds(operator.mul, sub, st.integers(-6, 8)), st.builds(operator.add, sub, st.integers(-6, 6)),
                     st.builds(operator.floordiv, sub, div), st.builds(operator.mod, sub, div), st.builds(UOp.maximum, sub, sub),
                     st.builds(lambda b, t, e: b.where(t, e), cmp, sub, sub), st.builds(operator.neg, sub))
  e = draw(st.recursive(leaf, extend, max_leaves=16))
  if draw(st.booleans()): e = e < draw(st.integers(-12, 12))
  return vs, e

@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_expr(), st.randoms(use_true_random=False))
def test_simplify_keeps_value(ve, rnd):
  vs, e = ve
  s = e.simplify()
  for vals in itertools.product(*[sorted({v.vmin, v.vmax, rnd.randint(v.vmin, v.vmax)}) for v in vs]):
    env = {v.arg.name: a for v, a in zip(vs, vals)}
    assert python_eval(s, env) == python_eval(e, env), f"{e.render(False)} -> {s.render(False)} at {env}"

@st.composite
def _index_expr(draw):
  # the shapes index math takes: sum(var*coef)+k, then div/mod/scale chains, then maybe a bound check
  vs = [Variable(f"v{i}", (lo := draw(st.sampled_from([0, 0, -3, 1]))), lo + draw(st.integers(0, 12))) for i in range(draw(st.integers(1, 3)))]
  e = sum((v * draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12, -1, -4, 5])) for v in vs), start=c(draw(st.integers(-20, 20))))
  for _ in range(draw(st.integers(1, 4))):
    op, d = draw(st.integers(0, 5)), draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 5, 7, -2, -3]))
    e = [lambda: e // d, lambda: e % d, lambda: e * d, lambda: e + draw(st.sampled_from(vs)) * d, lambda: (e // abs(d)) * abs(d) + e % abs(d),
         lambda: e + draw(st.integers(-9, 9))][op]()
  if draw(st.booleans()): e = e < draw(st.integers(-30, 30)) if draw(st.booleans()) else draw(st.integers(-30, 30)) < e
  return vs, e

@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_index_expr())
def test_simplify_index_keeps_value(ve):
  vs, e = ve
  s = simplify_index(e)
  assert len(s.toposort()) <= 2*len(e.toposort())  # distributing a scale over a sum may grow it, never blow it up
  for vals in itertools.product(*[range(v.vmin, v.vmax + 1) for v in vs]):
    env = {v.arg.name: a for v, a in zip(vs, vals)}
    assert python_eval(s, env) == python_eval(e, env), f"{e.render(False)} -> {s.render(False)} at {env}"

# *** div/mod with coefficients past the divisor: x = d*Q + R, folded when R spans one quotient ***

def test_window_index_folds():
  # conv's sliding window: k rows of i+2d read from k copies of rows of i+d, (j*60 + t) % 59 with t < 56, j < 3 is t + j
  t, j = UOp.range(56, 0), UOp.range(3, 1)
  assert simplify_index((t + j*60) % 59).render(False) == "(r0+r1)"
  assert simplify_index((t + j*60) // 59).render(False) == "r1"
  assert simplify_index((j*59 + 2) % 60).render(False) == "((r1*-1)+2)"  # 59 = 60 - 1: the remainder nearest 0
  assert simplify_index((t + j*60) % 58).op is Ops.FLOORMOD  # t + 2j reaches 58: not one quotient, stays

@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-70, 70), st.integers(1, 6)), min_size=1, max_size=3), st.integers(-80, 80), st.integers(2, 61),
       st.booleans())
def test_divmod_remainders_brute_force(terms, k, d, div):
  rngs = [UOp.range(n, i) for i, (_, n) in enumerate(terms)]
  e = sum((r*m for r, (m, _) in zip(rngs, terms)), start=c(k))
  e = e // d if div else e % d
  s = simplify_index(e)
  for vals in itertools.product(*[range(n) for _, n in terms]):
    env = {f"r{i}": v for i, v in enumerate(vals)}
    assert python_eval(s, env) == python_eval(e, env), f"{e.render(False)} -> {s.render(False)} at {env}"

def test_binary_digits_fold_to_the_index():
  # Tensor._arange sums binary digits, each a padded constant: where(0 < (i//2^j)%2, 2^j, 0) in int32. In index math they fold back to i
  # (argmax's n - arange is then n - i), and a cast of index math to an int32 that holds it moves out of the sum
  i = UOp.range(1000, 0)
  digits = [(c(0) < (i // c(1 << j)) % c(2)).where(c(1 << j, dtypes.int32), c(0, dtypes.int32)) for j in range(10)]
  total = digits[0]
  for d in digits[1:]: total = total + d
  assert (e := (total * c(-1, dtypes.int32) + c(1000, dtypes.int32)).simplify()).render(False) == "int(((r0*-1)+1000))", e.render(False)
  assert all(python_eval(e, {"r0": v}) == 1000 - v for v in (0, 1, 511, 999))
  # a digit that may be 2 (no %2) or a negative one is no digit; a cast whose int8 cannot hold the sum stays inside
  assert (c(0) < i // c(256)).where(c(5, dtypes.int32), c(0, dtypes.int32)).simplify().op is Ops.WHERE
  k = UOp.range(300, 1)
  assert (k.cast(dtypes.int8) + c(1, dtypes.int8)).simplify().op is Ops.ADD
