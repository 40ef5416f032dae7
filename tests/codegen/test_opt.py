"""Kernel opts (codegen/opt): every opt list the heuristic may choose, and hand-picked ones, give numpy's results on the CPU (LLVM) and
on the PYTHON emulator; opts that do not fit say why."""
import copy, ctypes
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, KernelInfo
from tinygrad.dtype import dtypes
from tinygrad.helpers import Context, prod
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import Opt, OptOps, OptError, apply_opts, hand_coded_opts
from tinygrad.codegen.opt.heuristic import simd_tiles, SMALL_WORK
from tinygrad.renderer.python import PythonRenderer
from tinygrad.runtime.ops_python import PythonProgram
from tinygrad.renderer.cstyle import ClangRenderer
from tinygrad.runtime import host_toolchain
from tinygrad.runtime.ops_cpu import ClangCompiler

U, N, T, S, P = OptOps.UPCAST, OptOps.UNROLL, OptOps.THREAD, OptOps.SWAP, OptOps.PADTO
rng = np.random.default_rng(0)

def kernel(shape:tuple[int, ...], body, nin:int, in_sizes:list[int], out_size:int, name:str) -> tuple[UOp, list[np.ndarray]]:
  out = UOp.param(0, dtypes.float, (out_size,))
  ins = [UOp.param(i+1, dtypes.float, (n,)) for i, n in enumerate(in_sizes)]
  idx, val, ends = body(out, *ins)
  return out[idx].store(val).end(*ends).sink(arg=KernelInfo(name=name)), [rng.standard_normal(n).astype(np.float32) for n in in_sizes]

def elementwise(h, w):
  def body(out, a):
    i, j = UOp.range(h, 0), UOp.range(w, 1)
    return i*w + j, a[i*w + j].load() * 2.0 + 1.0, (i, j)
  return kernel((h, w), body, 1, [h*w], h*w, "ew"), lambda a: a * 2 + 1

def broadcast(h, w):
  def body(out, a, b):
    i, j = UOp.range(h, 0), UOp.range(w, 1)
    return i*w + j, a[i*w + j].load() + b[j].load(), (i, j)
  return kernel((h, w), body, 2, [h*w, w], h*w, "bc"), lambda a, b: (a.reshape(h, w) + b).ravel()

def transpose(h, w, plus_row:bool=False):
  """out = a.T (w x h), optionally + b (w x h, read along the store like the output)"""
  def body(out, a, *b):
    j, i = UOp.range(w, 0), UOp.range(h, 1)
    v = a[i*w + j].load()
    return j*h + i, (v + b[0][j*h + i].load()) if plus_row else v, (j, i)
  ref = lambda a, *b: a.reshape(h, w).T.ravel() + (b[0] if plus_row else 0)
  return kernel((w, h), body, 1 + plus_row, [h*w] * (1 + plus_row), h*w, "tr"), ref

def row_reduce(h, w, op=Ops.ADD):
  def body(out, a):
    i, j = UOp.range(h, 0), UOp.range(w, 1, AxisType.REDUCE)
    return i, a[i*w + j].load().reduce(j, op=op), (i,)
  return kernel((h, w), body, 1, [h*w], h, "red"), lambda a: (a.reshape(h, w).sum(1) if op is Ops.ADD else a.reshape(h, w).max(1))

def row_centered(h, w, reduce:bool):
  """softmax's kernels: x[i,j] - m[i], summed over j or stored; m[i] does not move in the innermost loop (LLVM hoists it)"""
  def body(out, a, m):
    i, j = UOp.range(h, 0), UOp.range(w, 1, AxisType.REDUCE if reduce else AxisType.LOOP)
    v = a[i*w + j].load() - m[i].load()
    return (i, v.reduce(j, op=Ops.ADD), (i,)) if reduce else (i*w + j, v, (i, j))
  ref = lambda a, m: (a.reshape(h, w) - m[:, None]).sum(1) if reduce else (a.reshape(h, w) - m[:, None]).ravel()
  return kernel((h, w), body, 2, [h*w, h], h if reduce else h*w, "rc"), ref

def full_sum(n):
  def body(out, a):
    k = UOp.range(n, 0, AxisType.REDUCE)
    return UOp.const(dtypes.weakint, 0), a[k].load().reduce(k, op=Ops.ADD), ()
  return kernel((n,), body, 1, [n], 1, "sum"), lambda a: a.sum(keepdims=True)

def matmul(m, n, k):
  def body(out, a, b):
    i, j, r = UOp.range(m, 0), UOp.range(n, 1), UOp.range(k, 2, AxisType.REDUCE)
    return i*n + j, (a[i*k + r].load() * b[r*n + j].load()).reduce(r, op=Ops.ADD), (i, j)
  return kernel((m, n, k), body, 2, [m*k, k*n], m*n, "mm"), lambda a, b: (a.reshape(m, k) @ b.reshape(k, n)).ravel()

def simd_sized(renderer, vector_bytes:int, registers:int):
  """the renderer, with another target's SIMD registers (the heuristic sizes its tiles in them)"""
  (r := copy.copy(renderer)).vector_bytes, r.vector_registers = vector_bytes, registers
  return r

# the hand-checked tiles below are AVX2's (16 registers of 32 bytes); the host's registers may be wider
AVX2, AVX512 = simd_sized(Device["CPU"].renderer, 32, 16), simd_sized(Device["CPU"].renderer, 64, 32)

def run_cpu(ast:UOp, ins:list[np.ndarray], out_size:int, renderer=None, compiler=None) -> np.ndarray:
  dev = Device["CPU"]
  spec = get_program(ast, renderer or dev.renderer)
  prg = (compiler or dev.compiler).load(spec.name, (compiler or dev.compiler).compile(spec.src))
  out = np.zeros(out_size, np.float32)
  gs, ls = spec.launch_dims({})
  prg(*[(ctypes.c_uint8 * x.nbytes).from_buffer(x) for x in [out, *ins]], global_size=gs, local_size=ls)
  return out

def run_python(ast:UOp, ins:list[np.ndarray], out_size:int) -> np.ndarray:
  spec = get_program(ast, PythonRenderer())
  bufs = [memoryview(bytearray(x.tobytes())) for x in [np.zeros(out_size, np.float32), *ins]]
  gs, ls = spec.launch_dims({})
  PythonProgram(spec.name, spec.src.encode())(*bufs, global_size=gs, local_size=ls)
  return np.frombuffer(bufs[0], np.float32)

# (kernel, opt lists): each list is applied in order, axes numbered output axes first, then reduce axes
CASES = [
  (elementwise(6, 24), [[], [Opt(U, 1, 8)], [Opt(U, 1, 12)], [Opt(U, 0, 2), Opt(U, 1, 4)], [Opt(T, 0, 3)], [Opt(U, 1, 4), Opt(T, 0, 2)]]),
  (elementwise(5, 7), [[], [Opt(U, 1, 7)], [Opt(T, 0, 5)], [Opt(U, 0, 5), Opt(T, 0, 7)]]),
  (broadcast(4, 16), [[Opt(U, 1, 8)], [Opt(U, 0, 4), Opt(U, 0, 4)], [Opt(T, 1, 4), Opt(U, 1, 2)]]),
  (row_reduce(12, 40), [[], [Opt(N, 1, 8)], [Opt(N, 1, 20)], [Opt(U, 0, 4), Opt(N, 1, 2)], [Opt(T, 0, 4), Opt(N, 1, 4)]]),
  (row_reduce(6, 9, Ops.MAX), [[Opt(N, 1, 3)], [Opt(U, 0, 3), Opt(N, 1, 9)], [Opt(T, 0, 2)]]),
  (full_sum(96), [[Opt(N, 0, 8)], [Opt(N, 0, 32), Opt(N, 0, 3)]]),
  (matmul(8, 16, 12), [[Opt(U, 1, 8)], [Opt(U, 1, 8), Opt(U, 0, 4)], [Opt(U, 1, 4), Opt(N, 2, 4)], [Opt(T, 0, 4), Opt(U, 1, 8)],
                       [Opt(N, 2, 12), Opt(T, 1, 2)]]),
  (matmul(7, 5, 3), [[Opt(U, 1, 5)], [Opt(U, 0, 7), Opt(N, 1, 3)], [Opt(T, 0, 7)]]),
  (matmul(8, 32, 6), [[Opt(S, 0, 1)], [Opt(U, 1, 16), Opt(U, 0, 4), Opt(S, 0, 1), Opt(T, 0, 2)], [Opt(S, 1, 0), Opt(U, 0, 8), Opt(N, 2, 3)]]),
  # loops of one trip (hand-built kernels have them; BEAM's fuzzed kernels found that they used to break the loop ordering)
  (elementwise(1, 24), [[], [Opt(U, 1, 3)], [Opt(U, 1, 8), Opt(T, 1, 3)]]), (row_reduce(4, 1), [[], [Opt(U, 0, 4)]]),
  # PADTO: sizes no lane count divides, padded up (gated loads and stores, the reduce's identity in the padding)
  (elementwise(5, 57), [[Opt(P, 1, 8), Opt(U, 1, 8)], [Opt(P, 0, 4), Opt(U, 0, 4), Opt(P, 1, 16), Opt(T, 1, 2)], [Opt(P, 1, 4), Opt(P, 1, 16)]]),
  (row_reduce(7, 57), [[Opt(P, 1, 16), Opt(N, 1, 16)], [Opt(P, 0, 4), Opt(U, 0, 4), Opt(P, 1, 8), Opt(N, 1, 4)]]),
  (row_reduce(3, 13, Ops.MAX), [[Opt(P, 1, 8), Opt(N, 1, 8)], [Opt(P, 0, 2), Opt(T, 0, 2), Opt(P, 1, 4)]]),
  (full_sum(1000), [[Opt(P, 0, 16), Opt(N, 0, 16)]]),
  (matmul(7, 5, 9), [[Opt(P, 0, 4), Opt(P, 1, 4), Opt(U, 0, 4), Opt(U, 1, 4), Opt(P, 2, 4), Opt(N, 2, 4)], [Opt(P, 1, 8), Opt(S, 0, 1)]]),
  # every loop upcast past its padding: padded lanes' indices fold to constants that collide (j*10 + 12 is 22 of the next j), under a
  # gate that folds to False (BEAM's search found it: a duplicated IF label)
  (transpose(10, 7, plus_row=True), [[Opt(P, 1, 16), Opt(U, 1, 16), Opt(P, 0, 8), Opt(U, 0, 8)]]),
]
PARAMS = [(k, opts) for k, lists in CASES for opts in lists]
def _id(p): return f"{p[0][0][0].arg.name}-{'+'.join(f'{o.op.name}{o.axis}x{o.amt}' for o in p[1]) or 'none'}"

@pytest.mark.parametrize("case", PARAMS, ids=[_id(p) for p in PARAMS])
@pytest.mark.parametrize("run", [run_cpu, run_python], ids=["CPU", "PYTHON"])
def test_opts_match_numpy(case, run):
  ((ast, ins), ref), opts = case
  out = run(apply_opts(ast, opts), ins, ref(*ins).size)
  np.testing.assert_allclose(out, ref(*ins), rtol=1e-5, atol=1e-5)

@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("k, big", [(elementwise(256, 520), True), (row_reduce(512, 300), True), (matmul(64, 96, 40), True),
                                    (matmul(125, 17, 80), True), (full_sum(4096), False), (elementwise(3, 5), False)],
                         ids=["ew", "red", "mm", "mm-odd", "sum", "tiny"])
def test_heuristic_opts_match_numpy(k, big, threads):
  (ast, ins), ref = k
  with Context(THREADS=threads):
    opts = hand_coded_opts(ast, AVX2)
    # enough work (and an output axis) gets threads; where no axis divides into shares (125 x 17), one is padded to a multiple of them
    assert any(o.op is T for o in opts) == (big and threads > 1), opts
    for run in (run_cpu, run_python): np.testing.assert_allclose(run(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("opts, msg", [
  ([Opt(U, 1, 5)], "amount 5 must be at least 2 and divide the axis size 24"),
  ([Opt(U, 0, 1)], "amount 1 must be at least 2"),
  ([Opt(N, 0, 2)], "UNROLL splits a REDUCE axis, axis 0 is LOOP"),
  ([Opt(U, 2, 4)], "UPCAST splits a LOOP/GLOBAL axis, axis 2 is REDUCE"),
  ([Opt(T, 2, 2)], "THREAD splits a LOOP/GLOBAL axis"),
  ([Opt(U, 3, 2)], "the kernel has 3 splittable axes"),
  ([Opt(U, 1, 24)], "at most 16 lanes per UPCAST axis"),
  ([Opt(T, 0, 2), Opt(T, 1, 2)], "already has a THREAD axis"),
  ([Opt(U, 1, 12), Opt(U, 0, 8), Opt(N, 1, 6)], "576 unrolled lanes, at most 384"),
  ([Opt(S, 0, 2)], "SWAP exchanges two different output axes, got axes 0 and 2"), ([Opt(S, 1, 1)], "SWAP exchanges two different output axes"),
  ([Opt(P, 1, 8)], "PADTO rounds the axis size 24 up to a multiple of 8: it must be at least 2 and not divide 24"),
  ([Opt(P, 2, 1)], "it must be at least 2"), ([Opt(P, 0, 24)], "padding axis 0 from 8 to 24 more than doubles its work"),
  ([Opt(OptOps.GROUP, 0, 2)], "GROUP splits a REDUCE axis, axis 0 is LOOP"), ([Opt(OptOps.GROUPTOP, 2, 5)], "amount 5 must be at least 2 and divide"),
])
def test_invalid_opts_say_why(opts, msg):
  (ast, _), _ = matmul(8, 24, 36)
  with pytest.raises(OptError, match=msg.replace("(", r"\(")): apply_opts(ast, opts)

def _reduce_of(f, op, n:int, rows:int=3):
  """out[i] = reduce(f(a[i, :])) over rows of n"""
  def body(out, a):
    i, j = UOp.range(rows, 0), UOp.range(n, 1, AxisType.REDUCE)
    return i, f(a[i*n + j].load()).reduce(j, op=op), (i,)
  return kernel((rows, n), body, 1, [rows*n], rows, "padred")

@pytest.mark.parametrize("f, op, ref", [
  (lambda x: (x * 1.4426950408889634).exp2(), Ops.ADD, lambda a: np.exp(a).sum(1)),       # exp(0) = 1 is no identity of ADD
  (lambda x: -(x * x) - 1.0, Ops.MAX, lambda a: (-(a * a) - 1).max(1)),                   # every value < 0: a padded 0 would win
  (lambda x: x * 0.01 + 1.0, Ops.MUL, lambda a: (a * 0.01 + 1).prod(1))], ids=["exp-sum", "negative-max", "prod"])
@pytest.mark.parametrize("run", [run_cpu, run_python], ids=["CPU", "PYTHON"])
def test_padded_reduce_sees_its_identity(f, op, ref, run):
  # the padded elements read 0 (gated loads), and 0 through these chains is not the reduce's identity: the padding is selected away
  ast, ins = _reduce_of(f, op, 13)
  want = ref(ins[0].reshape(3, 13))
  np.testing.assert_allclose(run(apply_opts(ast, [Opt(P, 1, 8), Opt(N, 1, 8)]), ins, 3), want, rtol=1e-5, atol=1e-5)

def test_padded_stores_are_gated():
  # out has exactly 5*57 floats: a store past the padding would write out of bounds (the emulator checks every index)
  (ast, ins), ref = elementwise(5, 57)
  count = lambda spec, op: sum(u.op is op for u in spec.uops)
  # the row's 4 tiles of 16: the first 3 are peeled off (opt/peel.py) and store ungated; in the last one the 7 padded lanes' gates fold
  # to False (lane 57 + k is never < 57) and their stores are gone
  spec = get_program(apply_opts(ast, [Opt(P, 1, 16), Opt(U, 1, 16)]), PythonRenderer())
  assert count(spec, Ops.IF) == 0 and count(spec, Ops.STORE) == 16 + 57 % 16
  # rows padded 5 -> 8 and looped: the gate is the row's bound, every store of the tail tile's lanes and of the peeled tiles keeps it
  spec = get_program(apply_opts(ast, [Opt(P, 0, 8), Opt(P, 1, 16), Opt(U, 1, 16)]), PythonRenderer())
  assert count(spec, Ops.IF) == count(spec, Ops.STORE) == 16 + 57 % 16
  for opts in ([Opt(P, 1, 16), Opt(U, 1, 16)], [Opt(P, 0, 8), Opt(P, 1, 16), Opt(U, 1, 16)]):
    np.testing.assert_allclose(run_python(apply_opts(ast, opts), ins, 5 * 57), ref(*ins), rtol=1e-6)

def test_long_chains_are_not_copied_into_lanes():
  out, a = UOp.param(0, dtypes.float, (64,)), UOp.param(1, dtypes.float, (64,))
  i, v = UOp.range(64, 0), a[UOp.range(64, 0)].load()
  for k in range(9000): v = v * 0.999 + float(k % 3)  # 18k nodes: not even 2 lanes fit the budget
  assert hand_coded_opts(out[i].store(v).end(i).sink(arg=KernelInfo(name="chain")), AVX2) == []

def exp2_elementwise(h, w):
  def body(out, a):
    i, j = UOp.range(h, 0), UOp.range(w, 1)
    return i*w + j, a[i*w + j].load().exp2(), (i, j)
  return kernel((h, w), body, 1, [h*w], h*w, "ew_exp2"), lambda a: np.exp2(a)

@pytest.mark.parametrize("h,w", [(64, 4096), (3, 1001), (1, 7)])
def test_polynomial_elementwise_is_left_to_the_loop_vectorizer(h, w):
  # upcast, LLVM's loop vectorizer packed the lanes of exp2's polynomial across trips with shuffles; untiled, it packs the loop itself.
  # The C renderer's compilers run without a loop vectorizer: there the lanes stay
  (ast, ins), ref = exp2_elementwise(h, w)
  llvm, c = Device["CPU"].renderer, ClangRenderer()
  assert llvm.loop_vectorizes and not c.loop_vectorizes
  assert not any(o.op in (U, P) for o in hand_coded_opts(ast, llvm))
  if w % 8 == 0: assert any(o.op is U for o in hand_coded_opts(ast, c))
  (plain, _), _ = elementwise(h, w)
  if w % 8 == 0: assert Opt(U, 1, 8) in hand_coded_opts(plain, llvm)  # a short body keeps its lanes
  np.testing.assert_allclose(run_cpu(apply_opts(ast, hand_coded_opts(ast, llvm)), ins, h * w), ref(*ins), rtol=2e-6)

def row_minus_max(h, w):
  """a row chain: out[i, j] = a[i, j] - max over r of a[i, r], the max kept in the store's kernel (softmax's first steps)"""
  def body(out, a):
    i, j, r = UOp.range(h, 0), UOp.range(w, 1), UOp.range(w, 2, AxisType.REDUCE)
    return i*w + j, a[i*w + j].load() - a[i*w + r].load().reduce(r, op=Ops.MAX), (i, j)
  return kernel((h, w), body, 1, [h*w], h*w, "chain"), lambda a: (a.reshape(h, w) - a.reshape(h, w).max(1, keepdims=True)).ravel()

@pytest.mark.parametrize("w", [64, 60])
def test_row_chain_past_the_cache_stores_whole_vectors(w):
  # an output bigger than the renderer's streaming threshold: the store loop is upcast by one vector, so that its stores can go around
  # the cache (renderer/llvm_streaming.py); a row no vector divides, and an output within the threshold, keep the loop vectorizer's loop
  (ast, ins), ref = row_minus_max(24, w)
  llvm = copy.copy(Device["CPU"].renderer)
  vec = simd_tiles(llvm).vector
  for above, upcast in ((None, False), (24 * w * 4, False), (1024, w % vec == 0)):
    llvm.nontemporal_bytes = above
    opts = hand_coded_opts(ast, llvm)
    assert (Opt(U, 1, vec) in opts) == upcast, (above, opts)
    spec = get_program(apply_opts(ast, opts), llvm)
    assert ("!nontemporal" in spec.src) == upcast
    np.testing.assert_array_equal(run_cpu(apply_opts(ast, opts), ins, 24 * w, llvm), ref(*ins))

def two_reduces(h, w):
  """out[i] = sum over r of a[i, r] + max over s of a[i, s]: two reduce loops one after the other per row (logsumexp's shape)"""
  def body(out, a):
    i, r, q = UOp.range(h, 0), UOp.range(w, 1, AxisType.REDUCE), UOp.range(w, 2, AxisType.REDUCE)
    return i, a[i*w + r].load().reduce(r, op=Ops.ADD) + a[i*w + q].load().reduce(q, op=Ops.MAX), (i,)
  return kernel((h, w), body, 1, [h*w], h, "two"), lambda a: a.reshape(h, w).sum(1) + a.reshape(h, w).max(1)

def test_each_of_several_reduce_loops_gets_partial_accumulators():
  (ast, ins), ref = two_reduces(16, 256)
  with Context(THREADS=1): opts = hand_coded_opts(ast, AVX2)
  assert {o.axis for o in opts if o.op is N} == {1, 2}, opts  # before, only the last reduce axis: the max ran as one serial chain
  np.testing.assert_allclose(run_cpu(apply_opts(ast, opts), ins, 16), ref(*ins), rtol=1e-5, atol=1e-4)
  np.testing.assert_allclose(run_python(apply_opts(ast, opts), ins, 16), ref(*ins), rtol=1e-5, atol=1e-4)

@pytest.mark.parametrize("w", [1001, 4095, 300, 7])
@pytest.mark.parametrize("op", [Ops.ADD, Ops.MAX])
def test_odd_rows_are_padded_for_partial_accumulators(w, op):
  # a max over a row no amount of 4 or more divides is padded with the reduce's identity and unrolled; where 4 divides (300) or no padding
  # within PAD_ROW fits (7), the opts stay. A sum over a row no vector divides is left to LLVM's loop vectorizer (a lone accumulator).
  # All values negative: a padding of 0 would win a MAX
  (ast, _), ref = row_reduce(6, w, op)
  ins = [-10 - np.abs(rng.standard_normal(6 * w)).astype(np.float32)]
  with Context(THREADS=1): opts = hand_coded_opts(ast, AVX2)
  assert (Opt(P, 1, 32) in opts and Opt(N, 1, 32) in opts) == (op is Ops.MAX and w in (1001, 4095)), opts
  if op is Ops.ADD: assert not any(o.op is N for o in opts), opts
  np.testing.assert_allclose(run_cpu(apply_opts(ast, opts), ins, 6), ref(*ins), rtol=1e-5)
  np.testing.assert_allclose(run_python(apply_opts(ast, opts), ins, 6), ref(*ins), rtol=1e-5)

def test_a_lone_accumulator_is_left_to_the_loop_vectorizer():
  # one float accumulator in its loop (no amount divides 4095): `reassoc` lets LLVM's loop vectorizer keep a vector of partial sums with a
  # remainder loop; partial accumulators of an unroll are left as they are, and NOOPT=1 keeps the adds in the order written
  from tinygrad.runtime.ops_cpu import LLVMCompiler
  llvm = Device["CPU"].renderer
  def as_written(ast:UOp, opts:tuple) -> UOp: return ast.replace(arg=KernelInfo(name="red", opts_to_apply=opts))
  (ast, ins), ref = row_reduce(6, 4095)
  src = get_program(as_written(ast, ()), llvm).src
  assert src.count("fadd reassoc") == 1 and "vector.body:" in str(LLVMCompiler().optimized(src))
  np.testing.assert_allclose(run_cpu(as_written(ast, ()), ins, 6), ref(*ins), rtol=1e-4, atol=1e-4)
  with Context(NOOPT=1): assert "reassoc" not in get_program(as_written(ast, ()), llvm).src
  (ast, _), _ = row_reduce(6, 4096)
  assert "reassoc" not in get_program(as_written(ast, (Opt(N, 1, 8),)), llvm).src

def test_empty_axis_takes_no_opts():
  (ast, ins), ref = row_reduce(3, 0)
  with pytest.raises(OptError, match="amount 8 must be at least 2 and divide the axis size 0"): apply_opts(ast, [Opt(N, 1, 8)])
  assert hand_coded_opts(ast, AVX2) == []
  np.testing.assert_equal(run_cpu(apply_opts(ast, hand_coded_opts(ast, AVX2)), ins, 3), np.zeros(3, np.float32))

@pytest.mark.skipif(host_toolchain.find_cc() is None, reason="no C compiler")
def test_c_renderer_runs_threads_and_lanes():
  (ast, ins), ref = matmul(8, 16, 12)
  out = run_cpu(apply_opts(ast, [Opt(T, 0, 4), Opt(U, 1, 8), Opt(N, 2, 3)]), ins, 8 * 16, ClangRenderer(), ClangCompiler())
  np.testing.assert_allclose(out, ref(*ins), rtol=1e-5, atol=1e-5)
  (ast, ins), ref = matmul(7, 5, 9)  # padded: gated stores are branches in C
  out = run_cpu(apply_opts(ast, [Opt(P, 1, 8), Opt(U, 1, 8), Opt(P, 1, 4), Opt(N, 1, 4)]), ins, 7 * 5, ClangRenderer(), ClangCompiler())
  np.testing.assert_allclose(out, ref(*ins), rtol=1e-5, atol=1e-5)

def test_thread_axis_is_a_kernel_argument_on_the_cpu():
  (ast, ins), ref = elementwise(8, 8)
  spec = get_program(apply_opts(ast, [Opt(T, 0, 4)]), Device["CPU"].renderer)
  assert spec.global_size == (4, 1, 1) and "core_id" in spec.src
  if Device["CPU"].renderer.__class__.__name__ == "LLVMRenderer":  # the id's range lets LLVM vectorize the index math (see llvmir.py)
    assert "i32 noundef range(i32 0, 4) %core_id" in spec.src
  assert get_program(apply_opts(ast, [Opt(T, 0, 4)]), PythonRenderer()).global_size == (1, 1, 1)  # work items there: a loop

@pytest.mark.parametrize("noopt", [0, 1])
def test_tensor_results_with_and_without_opts(noopt):
  a, b, c = (np.random.default_rng(i).standard_normal(s).astype(np.float32) for i, s in enumerate([(33, 64), (64, 40), (40,)]))
  with Context(NOOPT=noopt):
    ta, tb, tc = Tensor(a), Tensor(b), Tensor(c)
    np.testing.assert_allclose((ta @ tb + tc).relu().numpy(), np.maximum(a @ b + c, 0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ta.sum(1).numpy(), a.sum(1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ta.max().numpy(), a.max())
    np.testing.assert_allclose(ta.softmax(1).numpy(), np.exp(a) / np.exp(a).sum(1, keepdims=True), rtol=1e-4, atol=1e-6)

def strided_sum(n):
  """the sum of every other element: no lane of the reduce is a vector load"""
  def body(out, a):
    k = UOp.range(n, 0, AxisType.REDUCE)
    return UOp.const(dtypes.weakint, 0), a[k*2].load().reduce(k, op=Ops.ADD), ()
  return kernel((n,), body, 1, [2*n], 1, "ssum"), lambda a: a[::2].sum(keepdims=True)

def test_reduce_accumulators_are_whole_vectors():
  # a stride-1 reduce becomes vector loads, and LLVM packs 8 neighbouring accumulators into one register: 4 vectors of partial sums
  # break the chain of dependent adds; a strided reduce keeps 8 scalar accumulators (32 would spill)
  with Context(THREADS=1):
    for k, want in ((row_reduce(64, 256), [Opt(N, 1, 32)]), (full_sum(4096), [Opt(N, 0, 32)]), (strided_sum(4096), [Opt(N, 0, 8)])):
      (ast, ins), ref = k
      assert (opts := hand_coded_opts(ast, AVX2)) == want, opts
      for run in (run_cpu, run_python): np.testing.assert_allclose(run(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-4)

def col_reduce(h, w):
  """a column sum: the reduce steps over rows, every load walks it with a stride"""
  def body(out, a):
    j, i = UOp.range(w, 0), UOp.range(h, 1, AxisType.REDUCE)
    return j, a[i*w + j].load().reduce(i, op=Ops.ADD), (j,)
  return kernel((h, w), body, 1, [h*w], w, "col"), lambda a: a.reshape(h, w).sum(0)

def weighted_col_reduce(h, w):
  """v @ a: sum over rows of a[i, j] * v[i], v moves with the reduce and is shared by the lanes of j"""
  def body(out, a, v):
    j, i = UOp.range(w, 0), UOp.range(h, 1, AxisType.REDUCE)
    return j, (a[i*w + j].load() * v[i].load()).reduce(i, op=Ops.ADD), (j,)
  return kernel((h, w), body, 2, [h*w, h], w, "wcol"), lambda a, v: v @ a.reshape(h, w)

def test_column_reduce_reads_runs_of_cache_lines():
  # the lanes of a column sum's output axis are its only independent accumulators, and each row visit is a new page past 4 KB rows: a
  # cache line (16) where 8 would load as few per lane, then a second upcast of the same axis to a run of lines per row, up to half the
  # registers (simd.wide: 64 lanes on AVX2, 256 on AVX-512 past SMALL_WORK) and leaving a tile per thread; 8 where 16 does not divide
  with Context(THREADS=1):
    for k, want in ((col_reduce(40, 64), [Opt(U, 0, 16), Opt(U, 0, 4)]), (col_reduce(40, 48), [Opt(U, 0, 16), Opt(U, 0, 3)]),
                    (col_reduce(40, 24), [Opt(U, 0, 8)]), (col_reduce(7, 272), [Opt(U, 0, 16)])):
      (ast, ins), ref = k
      assert (opts := hand_coded_opts(ast, AVX2)) == want, opts
      for run in (run_cpu, run_python): np.testing.assert_allclose(run(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-4)
    # a load the lanes share (v[k] of v @ a) is one broadcast per row visit: the same run
    (ast, ins), ref = weighted_col_reduce(40, 64)
    assert (opts := hand_coded_opts(ast, AVX2)) == [Opt(U, 0, 16), Opt(U, 0, 4)], opts
    np.testing.assert_allclose(run_cpu(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-4)
  with Context(THREADS=2):
    (ast, ins), ref = col_reduce(4096, 4096)
    assert (opts := hand_coded_opts(ast, AVX512)) == [Opt(U, 0, 16), Opt(U, 0, 16), Opt(T, 0, 8)], opts  # streaming: 4 shares a core
    np.testing.assert_allclose(run_cpu(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-2)
    assert (opts := hand_coded_opts(col_reduce(1 << 16, 256)[0][0], AVX512)) == [Opt(U, 0, 16), Opt(U, 0, 8), Opt(T, 0, 2)], opts

@pytest.mark.parametrize("shape,axis", [((37, 4096), 0), ((5, 3, 520), (0, 1)), ((1, 4096), 0), ((300, 1), 0), ((6, 33, 7, 9), (0, 2, 3))])
def test_column_reductions_match_numpy(shape, axis):
  # through the Tensor API at 1 and 2 threads: sum, mean, max over the outer axes, a strided view, a vector-matrix product, and gradients
  rng = np.random.default_rng(len(shape))
  x = rng.standard_normal(shape).astype(np.float32)
  big = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(np.float32)
  for threads in (1, 2):
    with Context(THREADS=threads):
      np.testing.assert_allclose(Tensor(x).sum(axis).numpy(), x.sum(axis), rtol=1e-4, atol=1e-3)
      np.testing.assert_allclose(Tensor(x).mean(axis).numpy(), x.mean(axis), rtol=1e-4, atol=1e-4)
      np.testing.assert_array_equal(Tensor(x).max(axis).numpy(), x.max(axis))
      np.testing.assert_allclose(Tensor(big)[..., 1::2].sum(axis).numpy(), big[..., 1::2].sum(axis), rtol=1e-4, atol=1e-3)
      if len(shape) == 2:
        v = rng.standard_normal(shape[0]).astype(np.float32)
        np.testing.assert_allclose((Tensor(v) @ Tensor(x)).numpy(), v @ x, rtol=1e-4, atol=1e-3)
      t = Tensor(x, requires_grad=True)
      (t * t).mean(axis).sum().backward()
      np.testing.assert_allclose(t.grad.numpy(), 2 * x * x.mean(axis, keepdims=True).size / x.size, rtol=1e-5, atol=1e-6)

def test_streaming_kernels_get_shares_for_free_cores():
  # a kernel that tiles no loads is split into 4 shares per core, which the cores take as they come free; whatever THREADS is when it
  # runs (fewer threads than shares, or one), every share runs exactly once
  (ast, ins), ref = row_reduce(1024, 512)
  with Context(THREADS=2): opts = hand_coded_opts(ast, AVX2)
  assert Opt(T, 0, 8) in opts, opts
  for threads in (1, 2, 3):
    with Context(THREADS=threads): np.testing.assert_allclose(run_cpu(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-3)

def test_transposing_copy_reads_whole_cache_lines():
  # a transpose: a cache line (16 floats) along the axis the load walks with stride 1, 2 along the store's; x.T 2048^2 at THREADS=2 ran
  # 4x faster than with the load-sharing tile (8 along the store, 4 along the load)
  with Context(THREADS=1):
    (ast, ins), ref = transpose(48, 64)
    assert (opts := hand_coded_opts(ast, AVX2)) == [Opt(U, 1, 2), Opt(U, 0, 16)], opts
    for run in (run_cpu, run_python): np.testing.assert_array_equal(run(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins))
    # 8 where 16 does not divide the load's axis
    assert hand_coded_opts(transpose(48, 24)[0][0], AVX2) == [Opt(U, 1, 2), Opt(U, 0, 8)]
    # the same whole lines on AVX-512, whose loop-vectorizer rule (LOOP_GROUP) leaves a transposing copy's tile alone
    assert hand_coded_opts(transpose(48, 64)[0][0], AVX512) == [Opt(U, 1, 2), Opt(U, 0, 16)]
    # an input read along the store as well is no transposing copy: the load-sharing tile
    (ast, ins), ref = transpose(48, 64, plus_row=True)
    assert Opt(U, 0, 16) not in (opts := hand_coded_opts(ast, AVX2)), opts
    np.testing.assert_allclose(run_cpu(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-6)

def test_register_tile_shares_loads():
  # matmul: 16 lanes along j share each A load (and are two vector loads of B), 4 along i share the B loads: 64 accumulators in 8 vectors
  with Context(THREADS=1):
    assert hand_coded_opts(matmul(64, 96, 40)[0][0], AVX2) == [Opt(U, 1, 16), Opt(U, 0, 4)]
    # K=1024: B's 16-column panel is 64 KB, past L1: 8 rows share each B load (fewer loads per FMA for a kernel waiting on memory), and
    # the row tiles loop inside the column tiles so the panel is reused; 4 rows where 8 do not divide them
    assert hand_coded_opts(matmul(64, 96, 1024)[0][0], AVX2) == [Opt(U, 1, 16), Opt(U, 0, 8), Opt(S, 0, 1)]
    assert hand_coded_opts(matmul(36, 96, 1024)[0][0], AVX2) == [Opt(U, 1, 16), Opt(U, 0, 4), Opt(S, 0, 1)]
    # b[j] is shared by the rows, so the rows are upcast too; a row reduction shares nothing: partial accumulators instead
    assert hand_coded_opts(broadcast(64, 32)[0][0], AVX2) == [Opt(U, 1, 8), Opt(U, 0, 4)]
    # (a sum over rows no vector divides: one accumulator, which LLVM's loop vectorizer packs itself)
    assert hand_coded_opts(row_reduce(512, 300)[0][0], AVX2) == []
    # a load the innermost loop does not move is no load there: upcasting rows to share it would make the row's lanes strided loads
    # (softmax's exp-sum kernel was scalar code, 2.5x slower)
    assert hand_coded_opts(row_centered(64, 256, reduce=True)[0][0], AVX2) == [Opt(N, 1, 32)]
    assert hand_coded_opts(row_centered(64, 256, reduce=False)[0][0], AVX2) == [Opt(U, 1, 8)]
    for reduce in (True, False):
      (ast, ins), ref = row_centered(64, 256, reduce)
      np.testing.assert_allclose(run_cpu(apply_opts(ast, hand_coded_opts(ast, AVX2)), ins, ref(*ins).size), ref(*ins), rtol=1e-5, atol=1e-4)
  with Context(THREADS=2):  # the cores split the rows first, then each runs its row tiles inside the column tiles
    assert hand_coded_opts(matmul(64, 96, 1024)[0][0], AVX2) == [Opt(U, 1, 16), Opt(U, 0, 8), Opt(T, 0, 2), Opt(S, 0, 1)]

def packed_matmul(m, n, k):
  """a @ b with b read from its panel-major copy (schedule/pack.py): (n//16, k, 16), each panel of 16 columns contiguous"""
  def body(out, a, b):
    i, p, q, r = UOp.range(m, 0), UOp.range(n // 16, 1), UOp.range(16, 2), UOp.range(k, 3, AxisType.REDUCE)
    return i*n + p*16 + q, (a[i*k + r].load() * b[p*k*16 + r*16 + q].load()).reduce(r, op=Ops.ADD), (i, p, q)
  def ref(a, b): return (a.reshape(m, k) @ b.reshape(n // 16, k, 16).transpose(1, 0, 2).reshape(k, n)).ravel()
  return kernel((m, n, k), body, 2, [m*k, k*n], m*n, "pmm"), ref

def test_register_tile_fills_the_targets_registers():
  # AVX-512 (32 registers of 16 floats): a vector load is 16 lanes and a tile may hold twice AVX2's registers. Matmul K=4096: 8 rows
  # share each B vector, 8 vector accumulators as AVX2's 4x16; from a packed B, 4 panels x 6 rows: 24 accumulators, fewer loads per FMA
  # (matmul 1024 at 2 threads: 8x16 251, 8x2x16 322, 6x4x16 with the rows padded to 1026 440 GFLOP/s). A kernel of under SMALL_WORK loop
  # trips keeps 128 lanes in all (compile time). The tiles compute what numpy does; AVX2's stay as they were
  assert simd_tiles(AVX2) == (8, 32, 64, 128) and simd_tiles(AVX512) == (16, 128, 256, 512)
  assert simd_tiles(AVX512, SMALL_WORK - 1) == (16, 32, 64, 128) and simd_tiles(AVX2, 1) == simd_tiles(AVX2)
  with Context(THREADS=1):
    assert 64 * 96 * 4096 >= SMALL_WORK > 64 * 96 * 40
    assert hand_coded_opts(matmul(64, 96, 4096)[0][0], AVX512) == [Opt(U, 1, 16), Opt(U, 0, 8), Opt(S, 0, 1)]
    assert hand_coded_opts(matmul(64, 96, 40)[0][0], AVX512) == hand_coded_opts(matmul(64, 96, 40)[0][0], AVX2) == [Opt(U, 1, 16), Opt(U, 0, 4)]
    assert hand_coded_opts(packed_matmul(32, 64, 128)[0][0], AVX2) == [Opt(U, 2, 16), Opt(U, 0, 4)]
    llvm, c = copy.copy(AVX512), copy.copy(AVX512)
    llvm.tile_lanes, c.tile_lanes = 384, 256  # LLVM and clang vectorize 24 accumulators of 16 lanes, gcc 16 best: 8 rows x 2 panels there
    assert (opts := hand_coded_opts(packed_matmul(64, 512, 1024)[0][0], llvm)) == [Opt(U, 2, 16), Opt(U, 1, 4), Opt(P, 0, 6), Opt(U, 0, 6),
                                                                                Opt(S, 0, 1)], opts
    assert hand_coded_opts(packed_matmul(64, 512, 1024)[0][0], c) == [Opt(U, 2, 16), Opt(U, 1, 2), Opt(U, 0, 8), Opt(S, 0, 1)]
    # 34 panels: 4 of them do not divide it, the tile stays 8 rows x 2 panels
    assert hand_coded_opts(packed_matmul(64, 544, 1024)[0][0], llvm) == [Opt(U, 2, 16), Opt(U, 1, 2), Opt(U, 0, 8), Opt(S, 0, 1)]
    (ast, ins), ref = packed_matmul(32, 128, 128)  # the same opts on a kernel small enough for the emulator: 32 rows padded to 36
    # the padded rows read A's last row (an unchanged address expression per lane, no gate in the loop), and their stores are gated
    assert all(len(u.src) == 1 for u in apply_opts(ast, opts).toposort() if u.op is Ops.LOAD)
    for run in (run_cpu, run_python): np.testing.assert_allclose(run(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-3)

def batched_matmul(b, m, n, k):
  """a 1x1 conv as b matmuls: out[i, c, p] = sum_r w[c, r] * x[i, r, p], x read with stride 1 along its pixels p"""
  def body(out, w, x):
    i, c, p, r = UOp.range(b, 0), UOp.range(m, 1), UOp.range(n, 2), UOp.range(k, 3, AxisType.REDUCE)
    return i*m*n + c*n + p, (w[c*k + r].load() * x[i*k*n + r*n + p].load()).reduce(r, op=Ops.ADD), (i, c, p)
  def ref(w, x): return np.einsum("cr,irp->icp", w.reshape(m, k), x.reshape(b, k, n)).ravel()
  return kernel((b, m, n, k), body, 2, [m*k, b*k*n], b*m*n, "bmm"), ref

def test_register_tile_prefers_near_lanes():
  # images and output channels save the same loads (a vector of x per image, a weight per channel): the channels, whose weights lie a row
  # apart, go first; each image is a stream of its own (b8 64->64 56x56 1x1 conv, the kernel: 8 images 8.9 ms, 8 channels 2.2 ms)
  (ast, ins), ref = batched_matmul(8, 16, 64, 16)
  with Context(THREADS=1):
    assert (opts := hand_coded_opts(ast, AVX512)) == [Opt(U, 2, 16), Opt(U, 1, 4)], opts
    for run in (run_cpu, run_python): np.testing.assert_allclose(run(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-4)

def direct_conv(b, hw, cin, cout, k=3):
  """a direct conv over a padded input (b, cin, hw+k-1, hw+k-1) with its weight in panels of 16 output channels (cout//16, cin, k, k, 16),
  written channels-last: out[i, y, x, 16p + q] = sum_{c, u, v} inp[i, c, y+u, x+v] * w[p, c, u, v, q] (schedule/pack.py's form)"""
  h, P = hw + k - 1, cout // 16
  def body(out, w, inp):
    i, y, x, p, q = (UOp.range(s, a) for a, s in enumerate((b, hw, hw, P, 16)))
    c, u, v = UOp.range(cin, 5, AxisType.REDUCE), UOp.range(k, 6, AxisType.REDUCE), UOp.range(k, 7, AxisType.REDUCE)
    val = (inp[((i*cin + c)*h + y + u)*h + x + v].load() * w[(((p*cin + c)*k + u)*k + v)*16 + q].load()).reduce(c, u, v, op=Ops.ADD)
    return ((i*hw + y)*hw + x)*cout + p*16 + q, val, (i, y, x, p, q)
  def ref(w, inp):
    win = np.lib.stride_tricks.sliding_window_view(inp.reshape(b, cin, h, h), (k, k), axis=(2, 3))  # (b, cin, hw, hw, k, k)
    return np.einsum("icyxuv,pcuvq->iyxpq", win, w.reshape(P, cin, k, k, 16)).ravel()
  return kernel((b, hw, hw, P, 16), body, 2, [P*cin*k*k*16, b*cin*h*h], b*hw*hw*cout, "conv"), ref

def test_register_tile_counts_cache_lines():
  # a direct conv's 14-pixel rows: 7 pixels x 2 panels, not 2 pixels x 8 panels. Both load about as often per lane, but a pixel's input
  # is a broadcast from the cache line its neighbours share, while each panel is a line of its own from a weight past L1 (b8 256->256
  # 14x14 3x3, the kernel at 2 threads: 21.1 -> 12.0 ms)
  (ast, ins), ref = direct_conv(8, 14, 64, 128)
  with Context(THREADS=1):
    assert (opts := hand_coded_opts(ast, AVX512))[:3] == [Opt(U, 4, 16), Opt(U, 3, 2), Opt(U, 2, 7)], opts
    np.testing.assert_allclose(run_cpu(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-3)

def test_register_tile_pads_a_row_no_upcast_divides():
  # rows of 29 (a strided conv_transpose's phases) and 11 (MNIST's conv-2): no upcast amount divides them, so their pixels, broadcast
  # from one cache line, are padded up (29 -> 32, 11 -> 12) rather than left for lanes a whole image apart (b8 64->32 28x28 4x4 stride 2's
  # phase conv at 2 threads: 8 panels x 2 images 3.1 ms, 16 pixels padded 1.7 ms). A row of 28 keeps a tile that divides it
  with Context(THREADS=1):
    assert (opts := hand_coded_opts(direct_conv(8, 29, 64, 128)[0][0], AVX512))[:3] == [Opt(U, 4, 16), Opt(P, 2, 16), Opt(U, 2, 16)], opts
    assert not any(o.op is P for o in hand_coded_opts(direct_conv(8, 28, 64, 128)[0][0], AVX512))
    (ast, ins), ref = direct_conv(1, 11, 4, 16)
    assert Opt(P, 2, 4) in (opts := hand_coded_opts(ast, AVX512)), opts
    for run in (run_cpu, run_python): np.testing.assert_allclose(run(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-3)

def test_panel_swap_hoists_a_weight_past_l2():
  # a weight panel past L1 loops outside the loop next to it (the pixels of one row); a whole weight past L2 (256x256x3x3: 2.4 MB) loops
  # outside every axis it is not read along, so each panel comes from L3 once, not once per row of pixels (b8 256->256 14x14: 6.4 -> 5.2 ms)
  with Context(THREADS=1):
    assert hand_coded_opts(direct_conv(8, 14, 64, 128)[0][0], AVX512)[3:] == [Opt(S, 2, 3)]
    (ast, ins), ref = direct_conv(8, 14, 256, 256)
    assert (opts := hand_coded_opts(ast, AVX512))[3:] == [Opt(S, 0, 3)], opts
    np.testing.assert_allclose(run_cpu(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-2)

def direct_conv1d(b, n, cin, cout, k=3):
  """direct_conv over one spatial axis: out[i, x, 16p + q] = sum_{c, v} inp[i, c, x+v] * w[p, c, v, q], the input (b, cin, n+k-1)"""
  h, P = n + k - 1, cout // 16
  def body(out, w, inp):
    i, x, p, q = (UOp.range(s, a) for a, s in enumerate((b, n, P, 16)))
    c, v = UOp.range(cin, 4, AxisType.REDUCE), UOp.range(k, 5, AxisType.REDUCE)
    val = (inp[(i*cin + c)*h + x + v].load() * w[((p*cin + c)*k + v)*16 + q].load()).reduce(c, v, op=Ops.ADD)
    return (i*n + x)*cout + p*16 + q, val, (i, x, p, q)
  def ref(w, inp):
    win = np.lib.stride_tricks.sliding_window_view(inp.reshape(b, cin, h), k, axis=2)  # (b, cin, n, k)
    return np.einsum("icxv,pcvq->ixpq", win, w.reshape(P, cin, k, 16)).ravel()
  return kernel((b, n, P, 16), body, 2, [P*cin*k*16, b*cin*h], b*n*cout, "conv1d"), ref

def test_conv1d_tile_within_code_budget_and_no_swap_past_l2():
  # conv1d 256->256 over rows of 1024: the tile greedy chose 16 channels x 2 panels x 16 pixels, past the code budget that every upcast is
  # held to, so the pixels were refused (2 broadcasts a step for 32 FMAs: 67 ms of one core); now it stays within it. And its weight
  # (768 KB) fits in L2 while the input of one image (1 MB) beside a panel does not: the panel loop stays innermost, each tile's input read
  # once, the weight's panels from L2 (the pixels inside it: 25.8 -> 20.0 ms)
  from tinygrad.codegen.opt.heuristic import CODE_BUDGET
  (ast, ins), ref = direct_conv1d(2, 1024, 256, 256)
  with Context(THREADS=1):
    opts = hand_coded_opts(ast, AVX512)
    lanes = prod(o.amt for o in opts if o.op is U)
    assert any(o.op is U and o.axis == 1 for o in opts) and lanes * len(ast.toposort()) <= CODE_BUDGET, opts
    assert not any(o.op is S for o in opts), opts
    np.testing.assert_allclose(run_cpu(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-2)
    # rows of 512: the input of one image beside a panel fits in L2, and the pixels loop inside the panels as before
    assert any(o.op is S for o in hand_coded_opts(direct_conv1d(2, 512, 256, 256)[0][0], AVX512))

@pytest.mark.parametrize("conv", ["1d", "2d"])
def test_packed_conv_tile_fits_the_registers(conv):
  # a conv that reads its weight in packed panels broadcasts its input across the panel's lanes, however its rows of pixels divide into
  # vectors (rows of 1024 or 64: a multiple of 16): its input is no WIDE operand that streams. Counted as one, the tile took every
  # register, 8 pixels x 16 channels, 16 accumulators beside AVX2's 2 panel vectors and a broadcast, and spilled (b8 256->256 1024 k3 at
  # 2 threads 35.9 -> 24.1 ms with 4 pixels; b8 64->64 64x64 3x3 29.9 -> 13.8)
  (ast, ins), ref = direct_conv1d(2, 1024, 256, 32) if conv == "1d" else direct_conv(2, 64, 64, 32)
  with Context(THREADS=1): opts = hand_coded_opts(ast, AVX2)
  lanes = prod(o.amt for o in opts if o.op is U)
  assert any(o.op is U and o.amt == 16 for o in opts) and lanes // 8 + 16 // 8 + 1 <= 16, opts
  np.testing.assert_allclose(run_cpu(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-2)

def panel_copy(n, k):
  """pack.py's copy of a (k, n) B into panels of 16 columns: out[p, r, q] = b[r, 16p + q]"""
  def body(out, b):
    p, r, q = UOp.range(n // 16, 0), UOp.range(k, 1), UOp.range(16, 2)
    return p*k*16 + r*16 + q, b[r*n + p*16 + q].load(), (p, r, q)
  return kernel((n // 16, k, 16), body, 1, [k*n], k*n, "panels"), lambda b: b.reshape(k, n // 16, 16).transpose(1, 0, 2).ravel()

def test_block_copy_walks_its_loads():
  # a copy whose tile is a whole axis (16 lanes: one AVX-512 vector) loops along the axis its load reads with the smallest stride: B's
  # rows, 16 floats a step, instead of a row apart (1024x1024 at 2 threads: 0.48 -> 0.34 ms). With AVX2's 8 lanes a loop is left
  # over the axis (LLVM's loop vectorizer packs it), and nothing is swapped
  (ast, ins), ref = panel_copy(128, 96)
  with Context(THREADS=1):
    assert (opts := hand_coded_opts(ast, AVX512)) == [Opt(U, 2, 16), Opt(S, 0, 1)], opts
    assert hand_coded_opts(ast, AVX2) == [Opt(U, 2, 8)]
    for run in (run_cpu, run_python): np.testing.assert_array_equal(run(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins))
    # an elementwise kernel whose tile leaves a loop over its axis is not a block copy: no swap
    assert not any(o.op is S for o in hand_coded_opts(broadcast(64, 32)[0][0], AVX512))

def test_elementwise_tile_skips_gathered_axes():
  # out[i, j] = a[i, j] + c[j*64 + i%3]: the store and a walk j with stride 1, but c reads it 64 floats apart and has no stride-1 axis,
  # so lanes along j would each load and insert their own element: j is not tiled (the channels-last pool backward's NCHW reads)
  h, w = 6, 32
  def body(out, a, c):
    i, j = UOp.range(h, 0), UOp.range(w, 1)
    return i*w + j, a[i*w + j].load() + c[j*64 + i % 3].load(), (i, j)
  (ast, ins) = kernel((h, w), body, 2, [h*w, w*64], h*w, "gather")
  with Context(THREADS=1): opts = hand_coded_opts(ast, AVX2)
  assert not any(o.op is U and o.axis == 1 for o in opts), opts
  ref = ins[0].reshape(h, w) + ins[1].reshape(w, 64)[:, np.arange(h) % 3].T
  np.testing.assert_allclose(run_cpu(apply_opts(ast, opts), ins, h*w), ref.ravel(), rtol=1e-6)
  # the same read at stride 8 (two lanes per cache line) is no gather: j is tiled
  def body8(out, a, c):
    i, j = UOp.range(h, 0), UOp.range(w, 1)
    return i*w + j, a[i*w + j].load() + c[j*8 + i % 3].load(), (i, j)
  with Context(THREADS=1): assert any(o.op is U and o.axis == 1 for o in hand_coded_opts(kernel((h, w), body8, 2, [h*w, w*8], h*w, "g8")[0], AVX2))

def test_scalar_tile_unrolls_a_streaming_reduce(device):
  """a depthwise conv's weight gradient: a tile of 3x3 taps (scalar lanes) over a reduce along the output's rows, which both loads walk
  with stride 1 (the padded input's gate folds to true): its innermost reduce is unrolled too, so those loads become vectors, as far as
  the lanes x the unroll fit SCALAR_SHARE of the registers (9 x 2 of AVX-512's 24: 9 x 4, 36 partial sums, LLVM left scalar). The
  forward's tile has vector lanes along the rows and keeps its reduce a loop. Values against numpy on every device"""
  from tinygrad.schedule.rangeify import create_schedule
  x, w, g = rng.standard_normal((2, 16, 12, 12)).astype(np.float32), rng.standard_normal((16, 1, 3, 3)).astype(np.float32), \
    rng.standard_normal((2, 16, 12, 12)).astype(np.float32)
  tx, tw = Tensor(x, device=device), Tensor(w, device=device, requires_grad=True)
  gw = (tx.conv2d(tw, groups=16, padding=1) * Tensor(g, device=device)).sum().gradient(tw)[0]
  kernels = {it.ast.arg.name: it.ast for it in create_schedule([gw.uop])[0] if it.kind == "kernel"}
  opts = hand_coded_opts(kernels["r_16_3_3"], AVX512)
  assert [o for o in opts if o.op is U] == [Opt(U, 2, 3), Opt(U, 1, 3)] and Opt(N, 3, 2) in opts, opts
  fwd = [it.ast for it in create_schedule([tx.conv2d(tw.detach(), groups=16, padding=1).uop])[0] if it.ast.arg.name.startswith("r_")][0]
  assert not [o for o in hand_coded_opts(fwd, AVX512) if o.op is N]
  xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
  want = np.array([[[(xp[:, c, i:i+12, j:j+12] * g[:, c]).sum() for j in range(3)] for i in range(3)] for c in range(16)])[:, None]
  np.testing.assert_allclose(gw.numpy(), want, rtol=1e-4, atol=1e-3)

def nchw_conv(hw, cin, cout, k=3):
  """a batch-1 direct conv over a padded input (cin, hw+k-1, hw+k-1) with its weight as it is (cout, cin, k, k), written NCHW: the form of
  a conv whose weight is not packed (too few pixels re-read it, schedule/pack.py MIN_REUSE_ACROSS)"""
  h = hw + k - 1
  def body(out, w, inp):
    o, y, x = UOp.range(cout, 0), UOp.range(hw, 1), UOp.range(hw, 2)
    c, u, v = UOp.range(cin, 3, AxisType.REDUCE), UOp.range(k, 4, AxisType.REDUCE), UOp.range(k, 5, AxisType.REDUCE)
    val = (inp[(c*h + y + u)*h + x + v].load() * w[((o*cin + c)*k + u)*k + v].load()).reduce(c, u, v, op=Ops.ADD)
    return (o*hw + y)*hw + x, val, (o, y, x)
  def ref(w, inp):
    win = np.lib.stride_tricks.sliding_window_view(inp.reshape(cin, h, h), (k, k), axis=(1, 2))  # (cin, hw, hw, k, k)
    return np.einsum("cyxuv,ocuv->oyx", win, w.reshape(cout, cin, k, k)).ravel()
  return kernel((cout, hw, hw), body, 2, [cout*cin*k*k, cin*h*h], cout*hw*hw, "nchw"), ref

def test_narrow_tile_shares_rows_with_channels():
  # rows of 8 pixels (vectors of 8 lanes) in a 32-lane tile: one upcast at a time took 8 pixels x 4 rows (4 vectors sharing one weight
  # broadcast), where 8 x 2 rows x 2 output channels loads a fifth less per lane (1x128x8x8 -> 128 3x3, the kernel alone at 2 threads:
  # 0.25 -> 0.14 ms); the tile is the cheapest of all within the limit, and computes what numpy does
  from tinygrad.codegen.opt.heuristic import _accesses, _per_lane, stored_unit
  from tinygrad.codegen.opt.kernel import axes
  (ast, ins), ref = nchw_conv(8, 4, 16)
  with Context(THREADS=1):
    assert simd_tiles(AVX512, 16 * 64 * 36).tile == 32
    assert (opts := hand_coded_opts(ast, AVX512)) == [Opt(U, 2, 8), Opt(U, 1, 2), Opt(U, 0, 2)], opts
    ax, (acc, unit), stored = axes(ast), _accesses(ast), stored_unit(ast)
    def cost(tile): return _per_lane(acc, {ax[i]: a for i, a in tile.items()}, 16, stored & {ax[i] for i in tile}, True)
    # every tile of 8 pixels along the row and 4 more lanes: the chosen one loads least per lane
    assert cost({2: 8, 1: 2, 0: 2}) == min(cost({2: 8} | t) for t in ({1: 4}, {0: 4}, {1: 2, 0: 2})) < cost({2: 8, 1: 4})
    for run in (run_cpu, run_python): np.testing.assert_allclose(run(apply_opts(ast, opts), ins, ref(*ins).size), ref(*ins), rtol=1e-4, atol=1e-4)
