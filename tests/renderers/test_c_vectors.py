"""The C renderer's vector lanes (renderer/c_vectors.py): lanes the codegen unrolled come out as GCC/clang vector types, computing what
the scalar C did. Hand-built programs against the PYTHON emulator (the same ops, run one node at a time), including orders a vector
may not change; then kernels of tensor ops on DEV=CPU:C against numpy, and bit for bit against DEV=CPU:LLVM where llvmlite is installed."""
import importlib.util
import numpy as np
import pytest
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes
from tinygrad.renderer.cstyle import ClangRenderer
from linprog import Prog, run, device

def tile(n:int, lanes:int, fn) -> Prog:
  """out[r*lanes + k] = fn(p, a, r*lanes, k) for lanes k unrolled, as the expander writes them"""
  p = Prog()
  out, a = p.param(0, dtypes.float32, n), p.param(1, dtypes.float32, n)
  r = p.range(n // lanes, 0)
  base = p.alu(Ops.MUL, r, lanes)
  for k in range(lanes): p.store(out, p.alu(Ops.ADD, base, k) if k else base, fn(p, a, base, k))
  p.end(r)
  return p

def same_as_emulator(prog:Prog, *arrays:np.ndarray):
  if device("C") is None: pytest.skip("no C compiler (clang/gcc/cc) on PATH")
  for c, e in zip(run("C", prog, *arrays), run("PYTHON", prog, *arrays)): np.testing.assert_array_equal(c, e)

def test_consecutive_lanes_are_one_vector():
  prog = tile(32, 8, lambda p, a, base, k: p.alu(Ops.MUL, p.load(a, p.alu(Ops.ADD, base, k) if k else base), 3.0))
  src = ClangRenderer().render("k", prog.uops)
  assert "typedef float tg_float8 __attribute__((vector_size(32)));" in src
  assert src.count("__builtin_memcpy") == 2 and "data0[alu0] =" not in src, src  # one vector load, one vector store
  x = np.arange(32, dtype=np.float32) - 7.5
  same_as_emulator(prog, np.zeros(32, np.float32), x)

def test_lanes_without_a_vector_operator_are_built_per_lane():
  # max and sqrt per lane, each the scalar C; NaN wins in max as in the scalar code
  prog = tile(16, 4, lambda p, a, base, k: p.alu(Ops.SQRT, p.alu(Ops.MAX, p.load(a, p.alu(Ops.ADD, base, k) if k else base), 0.5)))
  assert "tg_float4" in ClangRenderer().render("k", prog.uops)
  x = np.array([np.nan, 4, -1, 9, 0.25, 2, np.inf, 1] * 2, dtype=np.float32)
  same_as_emulator(prog, np.zeros(16, np.float32), x)

def test_a_store_that_a_later_lane_reads_keeps_its_order():
  # out[i+1] = out[i] in place, lane by lane: each lane reads what the lane before wrote, so no vector may load them all first
  p = Prog()
  out = p.param(0, dtypes.float32, 9)
  for k in range(8): p.store(out, k + 1, p.alu(Ops.ADD, p.load(out, k), 1.0))
  assert "tg_float8" not in ClangRenderer().render("k", p.uops)
  same_as_emulator(p, np.array([5, -3, 8, 0.5, 2, 9, -1, 4, 7], dtype=np.float32))

def test_a_load_after_the_stores_it_reads_past_may_move():
  # out[i] = out[i+1] in place: every lane reads before the lane that writes there, a vector keeps that
  p = Prog()
  out = p.param(0, dtypes.float32, 9)
  for k in range(8): p.store(out, k, p.alu(Ops.MUL, p.load(out, k + 1), 2.0))
  assert "tg_float8" in ClangRenderer().render("k", p.uops)
  same_as_emulator(p, np.array([5, -3, 8, 0.5, 2, 9, -1, 4, 7], dtype=np.float32))

def test_a_lane_read_before_its_vector_stays_scalar():
  # lane 0's value goes to a second buffer before lane 7 is computed: a vector would compute lane 0 twice
  p = Prog()
  out, side, a = p.param(0, dtypes.float32, 8), p.param(1, dtypes.float32, 1), p.param(2, dtypes.float32, 8)
  for k in range(8):
    v = p.alu(Ops.MUL, p.load(a, k), 2.0)
    p.store(out, k, v)
    if k == 0: p.store(side, 0, p.alu(Ops.ADD, v, 1.0))
  assert "tg_float8" not in ClangRenderer().render("k", p.uops)
  same_as_emulator(p, np.zeros(8, np.float32), np.zeros(1, np.float32), np.linspace(-1, 1, 8, dtype=np.float32))

def test_register_accumulators_are_a_vector_array():
  # 8 accumulators summing a[i*8 + k] over i, as a reduce's upcast lanes lower: the REG buffers become one array of vectors
  p = Prog()
  out, a = p.param(0, dtypes.float32, 8), p.param(1, dtypes.float32, 40)
  accs = [p.reg(dtypes.float32, 1, slot=k) for k in range(8)]
  for acc in accs: p.store(acc, 0, 0.0)
  r = p.range(5, 0)
  base = p.alu(Ops.MUL, r, 8)
  for k, acc in enumerate(accs):
    total = p.alu(Ops.ADD, p.load(acc, 0), p.load(a, p.alu(Ops.ADD, base, k) if k else base))
    p.store(acc, 0, total)
    p.store(out, k, total)  # in the loop: a load of acc after it would be the same node as the one in it
  p.end(r)
  src = ClangRenderer().render("k", p.uops)
  assert "tg_float8 vreg0[1];" in src and "reg1" not in src, src
  same_as_emulator(p, np.zeros(8, np.float32), np.random.default_rng(0).standard_normal(40).astype(np.float32))

def test_lanes_of_a_vector_array_written_one_by_one():
  # the accumulators are one array of vectors (their reads are a vector), their updates differ per lane: each writes its own element
  p = Prog()
  out, a = p.param(0, dtypes.float32, 8), p.param(1, dtypes.float32, 8)
  accs = [p.reg(dtypes.float32, 1, slot=k) for k in range(8)]
  for acc in accs: p.store(acc, 0, 1.0)
  r = p.range(3, 0)
  vals = [p.load(acc, 0) for acc in accs]
  for k, v in enumerate(vals): p.store(out, k, p.alu(Ops.MUL, v, 2.0))
  for k, (acc, v) in enumerate(zip(accs, vals)): p.store(acc, 0, p.alu(Ops.ADD if k % 2 else Ops.MUL, v, p.load(a, k)))
  p.end(r)
  src = ClangRenderer().render("k", p.uops)
  assert "tg_float8 vreg0[1];" in src and "vreg0[0][7] = " in src, src
  same_as_emulator(p, np.zeros(8, np.float32), np.linspace(-2, 2, 8, dtype=np.float32))

def test_gated_loads_and_bool_lanes_stay_scalar():
  # a gated load per lane (a select) and bool lanes: no vector type of theirs, results as before
  p = Prog()
  out, a, m = p.param(0, dtypes.float32, 8), p.param(1, dtypes.float32, 8), p.param(2, dtypes.bool, 8)
  for k in range(8):
    gate = p.load(m, k)
    p.store(out, k, p.alu(Ops.ADD, p.load(a, k, alt=-1.0, gate=gate), p.alu(Ops.WHERE, gate, 1.0, 2.0, dtype=dtypes.float32)))
  same_as_emulator(p, np.zeros(8, np.float32), np.arange(8, dtype=np.float32), np.array([1, 0, 1, 1, 0, 0, 1, 0], bool))

# *** tensor ops on DEV=CPU:C ***

def c_device() -> str:
  if device("C") is None: pytest.skip("no C compiler (clang/gcc/cc) on PATH")
  return "CPU:C"

RNG = np.random.default_rng(1)
X, Y = RNG.standard_normal((37, 203), dtype=np.float32), RNG.standard_normal((37, 203), dtype=np.float32)

@pytest.mark.parametrize("name, fn, ref", [
  ("mul_add", lambda x, y: x * y + 1.5, lambda x, y: x * y + np.float32(1.5)),
  ("relu_sqrt", lambda x, y: (x.relu() + y.abs()).sqrt(), lambda x, y: np.sqrt(np.maximum(x, 0) + np.abs(y))),
  ("where", lambda x, y: (x < y).where(x, y * 2), lambda x, y: np.where(x < y, x, y * 2)),
  ("pad", lambda x, y: x.pad(((1, 2), (3, 0))) * 2, lambda x, y: np.pad(x, ((1, 2), (3, 0))) * 2),
  ("col_sum", lambda x, y: x.sum(0), lambda x, y: x.astype(np.float64).sum(0)),
])
def test_float_ops_match_numpy(name, fn, ref):
  from tinygrad import Tensor
  out = fn(Tensor(X, device=c_device()), Tensor(Y, device=c_device())).numpy()
  np.testing.assert_allclose(out, ref(X, Y), rtol=1e-5, atol=1e-5)

def test_half_int_and_bool_lanes_match_numpy():
  from tinygrad import Tensor
  dev = c_device()
  h = (X[:, :64] * 4).astype(np.float16)
  np.testing.assert_array_equal((Tensor(h, device=dev) * 3 + 1).numpy(), h * np.float16(3) + np.float16(1))
  i = (X * 1000).astype(np.int32)
  np.testing.assert_array_equal((Tensor(i, device=dev) * 7 - 3).numpy(), i * 7 - 3)
  b = (X * 100).astype(np.int8)
  np.testing.assert_array_equal((Tensor(b, device=dev) * 5).numpy(), (b.astype(np.int32) * 5).astype(np.int8))  # wraps
  np.testing.assert_array_equal(((Tensor(X, device=dev) > 0) & (Tensor(Y, device=dev) < 0)).numpy(), (X > 0) & (Y < 0))
  np.testing.assert_array_equal(Tensor(i, device=dev).cast(dtypes.float32).numpy(), i.astype(np.float32))

@pytest.mark.parametrize("m, k, n", [(67, 45, 93), (256, 256, 256)])
def test_c_matmul_is_bitwise_the_llvm_one(m, k, n):
  if importlib.util.find_spec("llvmlite") is None: pytest.skip("llvmlite is not installed")
  from tinygrad import Tensor
  a, b = RNG.standard_normal((m, k), dtype=np.float32), RNG.standard_normal((k, n), dtype=np.float32)
  c = (Tensor(a, device=c_device()) @ Tensor(b, device=c_device())).numpy()
  np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
  np.testing.assert_array_equal(c, (Tensor(a, device="CPU:LLVM") @ Tensor(b, device="CPU:LLVM")).numpy())

def test_bool_sum_read_before_a_store_is_an_or():
  """C adds two _Bool as ints: (a+b) cast, compared or and-ed before any store narrowed it read 2 for True + True"""
  from tinygrad import Tensor
  dev = c_device()
  a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
  ta, tb, ones = Tensor(a, device=dev), Tensor(b, device=dev), Tensor(np.ones(4, bool), device=dev)
  np.testing.assert_array_equal((ta + tb).cast(dtypes.float32).numpy(), (a | b).astype(np.float32))
  np.testing.assert_array_equal(((ta + tb) == ones).numpy(), a | b)
  np.testing.assert_array_equal(((ta + tb) & ones).numpy(), a | b)
