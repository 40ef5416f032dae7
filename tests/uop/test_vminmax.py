import itertools, math, operator
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad.uop.ops import UOp, Ops, Variable, resolve, smax, smin
from tinygrad.uop.render import python_eval
from tinygrad.dtype import dtypes

def c(v, dt=dtypes.weakint): return UOp.const(dt, v)
def mm(u:UOp) -> tuple: return (u.vmin, u.vmax)
x, y, n = Variable("x", 0, 10), Variable("y", 2, 5), Variable("n", -7, 3)

def test_leaves():
  assert mm(c(4)) == (4, 4) and mm(x) == (0, 10) and mm(x.bind(3)) == (0, 10) and mm(UOp.range(6, 0)) == (0, 5)
  assert mm(UOp.special(32, "gidx0")) == (0, 31) and mm(UOp.range(x + 1, 1)) == (0, 10)
  assert mm(UOp.param(0, dtypes.int32, vmin_vmax=(3, 9))) == (3, 9) and mm(UOp.param(1, dtypes.uint8)) == (0, 255)
  assert mm(UOp.param(2, dtypes.float32)) == (-math.inf, math.inf) and mm(UOp.param(3, dtypes.bool)) == (False, True)

def test_arithmetic():
  assert mm(x + y) == (2, 15) and mm(x - y) == (-5, 8) and mm(-n) == (-3, 7) and mm(x * y) == (0, 50) and mm(n * -2) == (-6, 14)
  assert mm(n * y) == (-35, 15) and mm(x.maximum(y)) == (2, 10) and mm(n.maximum(0)) == (0, 3)

def test_floor_div_and_mod():
  assert mm(x // 3) == (0, 3) and mm(n // 4) == (-2, 0) and mm(n % 4) == (0, 3) and mm(x % 20) == (0, 10)
  assert mm((y + 1) % 8) == (3, 6) and mm((y + 1) % 4) == (0, 3)  # a span inside one period keeps its ends
  assert mm(x // y) == (-(2**63), 2**63 - 1)  # a symbolic divisor: unknown
  assert mm(x.alu(Ops.CDIV, c(3))) == (0, 3) and mm(n.alu(Ops.CDIV, c(3))) == (-(2**63), 2**63 - 1)  # C division: only for x >= 0

def test_comparisons_and_where():
  assert mm(x < 11) == (True, True) and mm(x < 0) == (False, False) and mm(x < 5) == (False, True)
  assert mm(x.ne(11)) == (True, True) and mm(c(3).eq(c(3))) == (True, True) and mm(y.eq(x + 20)) == (False, False)
  assert mm((x < 5).where(y, n)) == (-7, 5) and mm((x < 5) & (y < 10)) == (False, True) and mm((x < 11) & (y < 10)) == (True, True)
  assert resolve(x < 11) is True and resolve(x < 5) is True and resolve(x < 5, False) is False and resolve(x > 20) is False

def test_bounds_of_bitwise():
  assert mm(x & 6) == (0, 6) and mm(x << 2) == (0, 40) and mm(x >> 1) == (0, 5)

def test_overflow_gives_the_full_range():
  i = Variable("i", 0, 2**30, dtypes.int32)
  assert mm(i * 4) == (-(2**31), 2**31 - 1) and mm(i + 1) == (1, 2**30 + 1) and mm(-UOp.param(0, dtypes.uint32)) == (0, 2**32 - 1)

def test_casts():
  i = Variable("i", 0, 100, dtypes.int32)
  assert mm(i.cast(dtypes.int8)) == (0, 100) and mm(i.cast(dtypes.uint8)) == (0, 100) and mm((i + 200).cast(dtypes.int8)) == (-128, 127)
  # float -> int truncates, so a float's bounds don't carry over
  assert mm(UOp.param(0, dtypes.float32, vmin_vmax=(0.5, 2.5)).cast(dtypes.int32)) == (-(2**31), 2**31 - 1)

def test_float_where_is_unknown():
  # min/max can't order NaN: where(c, nan, 1.0) must not claim bounds that would decide a comparison
  w = (x < 5).where(c(math.nan, dtypes.float32), c(1.0, dtypes.float32))
  assert mm(w) == (-math.inf, math.inf) and (w < 5.0).simplify().op is Ops.CMPLT

def test_smax_smin():
  assert smax(3, 7) == 7 and smin(3, 7) == 3 and smax(x, 20) == 20 and smax([x, -1]) is x and smin(x, -1) == -1

@st.composite
def _expr(draw):
  vs = [Variable(f"v{i}", (lo := draw(st.integers(-10, 10))), lo + draw(st.integers(0, 12))) for i in range(draw(st.integers(1, 3)))]
  leaf = st.sampled_from(vs) | st.integers(-6, 6).map(c)
  def extend(sub):
    div = st.integers(-5, 7).filter(bool)
    return st.one_of(st.builds(operator.add, sub, sub), st.builds(operator.sub, sub, sub), st.builds(operator.mul, sub, sub),
                     st.builds(operator.floordiv, sub, div), st.builds(operator.mod, sub, div), st.builds(UOp.maximum, sub, sub),
                     st.builds(lambda a, b, t, e: (a < b).where(t, e), sub, sub, sub, sub), st.builds(operator.neg, sub))
  return vs, draw(st.recursive(leaf, extend, max_leaves=10))

@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_expr())
def test_bounds_hold_for_every_node(ve):
  # the simplifier trusts vmin/vmax: every node's value, for every assignment, must lie inside them
  vs, e = ve
  nodes = [u for u in e.toposort() if u.dtype is not dtypes.bool]
  for vals in itertools.product(*[range(v.vmin, v.vmax + 1) for v in vs]):
    env = {v.arg.name: a for v, a in zip(vs, vals)}
    for u in nodes: assert u.vmin <= python_eval(u, env) <= u.vmax, f"{u.render(False)} = {python_eval(u, env)} at {env}, bounds {mm(u)}"

def test_shift_past_the_width_has_the_dtypes_bounds():
  """a constant shift past the width has no bounds of its own: working out 3 << (2**64 - 1) as a python int filled memory"""
  huge = UOp.const(dtypes.uint64, 3).alu(Ops.SHL, UOp.const(dtypes.uint64, 2**64 - 1))
  assert (huge.vmin, huge.vmax) == (0, 2**64 - 1)
  small = UOp.const(dtypes.uint64, 3).alu(Ops.SHL, UOp.const(dtypes.uint64, 4))
  assert (small.vmin, small.vmax) == (48, 48)
