import gc, os, pickle, subprocess, sys, pathlib
import pytest
from tinygrad.uop.ops import UOp, UOpMetaClass, Ops, Variable
from tinygrad.uop import GroupOp
from tinygrad.dtype import dtypes

ROOT = pathlib.Path(__file__).resolve().parents[2]
x, y = Variable("x", 0, 10), Variable("y", 0, 5)

# *** hash-consing ***

def test_equal_construction_is_the_same_object():
  assert UOp(Ops.CONST, dtypes.int32, arg=3) is UOp(Ops.CONST, dtypes.int32, arg=3)
  assert x + y is x + y and (x * 4 + y) // 2 is (x * 4 + y) // 2 and Variable("x", 0, 10) is x
  assert UOp.range(4, 0) is UOp.range(4, 0) and UOp.range(4, 0) is not UOp.range(4, 1)

def test_any_field_makes_a_new_node():
  base = UOp(Ops.CONST, dtypes.int32, arg=3)
  others = [UOp(Ops.CONST, dtypes.int64, arg=3), UOp(Ops.CONST, dtypes.int32, arg=4), UOp(Ops.CONST, dtypes.int32, arg=3, tag=1),
            UOp(Ops.CONST, dtypes.int32, (UOp(Ops.DEVICE, arg="CPU"),), 3), x + y + 0]
  assert all(o is not base for o in others) and len({id(o) for o in others}) == len(others)
  assert UOp.const(dtypes.float32, 0.0) is not UOp.const(dtypes.float32, -0.0)  # 0.0 == -0.0, but they are different constants

def test_weak_cache_does_not_leak():
  gc.collect()
  before = len(UOpMetaClass.ucache)
  def build():
    e = x
    for i in range(20000): e = e * (i + 7) + y
    return len(e.toposort())
  assert build() > 20000
  gc.collect()
  assert len(UOpMetaClass.ucache) - before < 100  # the 40k+ nodes of the chain are gone with their last reference

def test_dead_nodes_are_rebuilt_equal():
  key = ((x + 123457) * 3).key
  gc.collect()
  assert ((x + 123457) * 3).key == key

def test_pickle_returns_the_same_object():
  e = ((x * 4 + y) // 3).maximum(x) < 7
  assert pickle.loads(pickle.dumps(e)) is e
  buf = UOp.param(0, dtypes.float32, (4, 4), name="a")
  assert pickle.loads(pickle.dumps(buf.index(x % 4, y % 4).load())) is buf.index(x % 4, y % 4).load()

def test_buffer_args_hash_like_their_fields_and_pickle_without_the_kept_hash():
  from tinygrad.uop.ops import ParamArg
  from tinygrad.dtype import AddrSpace
  fast, plain = ParamArg.global_buffer(7, 4, "CPU"), ParamArg(7, (4,), AddrSpace.GLOBAL, "CPU")
  assert fast == plain and hash(fast) == hash(plain) and repr(fast) == repr(plain)
  # a string hashes differently in another process: the hash kept on the arg must not travel
  code = "import pickle, sys; from tinygrad.uop.ops import ParamArg; a = pickle.loads(sys.stdin.buffer.read()); print(hash(a) == hash(ParamArg(*a.__reduce__()[1])))"
  out = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(fast), capture_output=True, env={**os.environ, "PYTHONHASHSEED": "123"})
  assert out.stdout.strip() == b"True", out.stderr
  b = UOp.new_buffer("CPU", 4, dtypes.float32)
  assert pickle.loads(pickle.dumps(b)) is b and b.arg.shape == (4,) and b.arg.addrspace is AddrSpace.GLOBAL

def test_immutable_and_no_truth_value():
  with pytest.raises(AttributeError, match="immutable"): x.arg = 3
  with pytest.raises(TypeError, match="truth value"): bool(x < 3)
  with pytest.raises(TypeError): UOp(Ops.ADD, dtypes.int32, [x, y])
  with pytest.raises(TypeError, match="tuple of UOps"): UOp(Ops.ADD, dtypes.int32, (x, 1))

def test_eq_is_identity_ne_builds():
  assert (x == x) is True and (x == y) is False and x in {x: 1}
  assert (x != y).op is Ops.CMPNE and (x != y).dtype is dtypes.bool

# *** graph walks ***

def test_toposort_order():
  a, b = x + 1, y * 2
  e = (a + b) * a
  order = list(e.toposort())
  assert order[-1] is e and set(order) == {x, y, a, b, a + b, e, a.src[1], b.src[1]}
  pos = {u: i for i, u in enumerate(order)}
  assert all(pos[s] < pos[u] for u in order for s in u.src)  # sources before users
  assert order == list((((x + 1) + y * 2) * (x + 1)).toposort())  # deterministic
  assert list((a + b).toposort(gate=lambda u: u is not a)) == [a, y, b.src[1], b, a + b]  # gate: a is kept, its sources are not walked

def test_toposort_deep_graph():
  e = x
  for i in range(30000): e = e + i
  assert len(e.toposort()) > 30000  # iterative: no recursion limit

def test_backward_slice():
  e = (x + 1) * y
  assert set(e.backward_slice()) == {x, y, x + 1, (x + 1).src[1]} and e not in e.backward_slice()

def test_substitute():
  e = (x + 1) * (x + 2)
  z = Variable("z", 0, 3)
  assert e.substitute({x: z}) is (z + 1) * (z + 2)
  assert e.substitute({x + 1: y}) is y * (x + 2) and e.substitute({}) is e and e.substitute({e: x}) is x

def test_replace():
  e = x + y
  assert e.replace() is e and e.replace(src=(x, y)) is e
  assert e.replace(op=Ops.MUL) is x * y and e.replace(tag="t").tag == "t" and e.replace(tag="t") is not e
  with pytest.raises(TypeError, match="unknown fields"): e.replace(shape=(1,))

# *** printing ***

def test_repr_names_shared_nodes():
  a = x + 1
  text = repr(a * a)
  assert text.startswith("UOp(Ops.MUL, dtypes.weakint, arg=None, src=(") and "x0:=UOp(Ops.ADD" in text and text.count("Ops.ADD") == 1
  assert "VarArg(name='x', vmin=0, vmax=10)" in text and text.count("\n") == 4

def test_render():
  r0, r1 = UOp.range(3, 0), UOp.range(4, 1)
  assert (r0 * 4 + r1).render() == "((r0*4)+r1)" and ((r0 * 4 + r1) // 4).render() == "r0"
  assert ((r0 * 4 + r1) // 4).render(simplify=False) == "(((r0*4)+r1)//4)"
  assert x.maximum(y).render() == "max(x, y)" and (x < y).where(x, y).render() == "(x if (x<y) else y)"
  assert x.bind(3).render() == "x=3" and UOp.param(2, dtypes.float32).render() == "data2" and UOp.loop(5).render() == "loop5"

# *** content keys ***

_KEY_SCRIPT = ("from tinygrad.uop.ops import UOp, Variable; from tinygrad.dtype import dtypes; x = Variable('x', 0, 10); "
               "b = UOp.param(0, dtypes.float32, (4,)); print(((b.index(x % 4).load() * 2.5) < 1.0).key.hex())")

def test_key_is_stable_across_processes():
  env = {**os.environ, "PYTHONPATH": str(ROOT / "packages/tg-uop/src"), "PYTHONHASHSEED": "random"}
  keys = {subprocess.run([sys.executable, "-c", _KEY_SCRIPT], env=env, capture_output=True, text=True, check=True).stdout.strip() for _ in range(2)}
  b = UOp.param(0, dtypes.float32, (4,))
  assert keys == {((b.index(x % 4).load() * 2.5) < 1.0).key.hex()}
  assert (x + 1).key != (x + 2).key and (x + 1).key == (x + 1).key and len((x + 1).key) == 32

# *** import isolation: tg-uop needs nothing outside itself and the stdlib ***

def test_uop_imports_only_itself_and_stdlib():
  code = ("import sys; before = set(sys.modules); import tinygrad.uop.ops, tinygrad.uop.symbolic, tinygrad.uop.spec; "
          "print('\\n'.join(sorted(set(sys.modules) - before)))")
  out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT / "packages/tg-uop/src")},
                       capture_output=True, text=True, check=True).stdout.split()
  ours = ("tinygrad.uop", "tinygrad.mixin")
  foreign = [m for m in out if m.split(".")[0] not in sys.stdlib_module_names and m != "tinygrad" and
             m not in ("tinygrad.dtype", "tinygrad.helpers") and not any(m == o or m.startswith(o + ".") for o in ours)]
  assert foreign == [], f"import tinygrad.uop.ops loaded modules outside tg-uop and the stdlib: {foreign}"
  assert "tinygrad.uop.ops" in out and not any(m.split(".")[0] in ("numpy", "pluggy") for m in out)

def test_ops_groups_are_consistent():
  assert GroupOp.Comparison <= GroupOp.Binary and GroupOp.Commutative <= GroupOp.Binary
  assert GroupOp.ALU == GroupOp.Unary | GroupOp.Binary | GroupOp.Ternary
