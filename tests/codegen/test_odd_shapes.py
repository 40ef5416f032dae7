"""Kernels without a reduce over sizes no vector divides (bench/odd_shapes.py): contiguous loops merged into one (opt/merge_ranges.py), a
flat odd axis padded to whole vectors, a transposing copy's lines padded, and the thread split of an axis no share count divides shifted
back (OVERLAP) instead of gated; each against numpy on the CPU and on the PYTHON emulator, and the heuristic's choices by hand."""
import pathlib, sys
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp
from tinygrad.helpers import Context
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen.opt import Opt, OptOps, apply_opts, hand_coded_opts
from tinygrad.codegen.opt.kernel import ranges, size
from tinygrad.codegen.opt.merge_ranges import merge_adjacent_ranges
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's test_opt is not on sys.path by itself
from test_opt import kernel, elementwise, broadcast, transpose, run_cpu, run_python, AVX2, AVX512

U, T, P, O = OptOps.UPCAST, OptOps.THREAD, OptOps.PADTO, OptOps.OVERLAP

def flat(n:int):
  def body(out, a):
    i = UOp.range(n, 0)
    return i, a[i].load() * 2.0 + 1.0, (i,)
  return kernel((n,), body, 1, [n], n, "flat"), lambda a: a * 2 + 1

def kernel_of(t:Tensor) -> UOp: return [it.ast for it in create_schedule([t.uop])[0] if it.kind == "kernel"][-1]
def loop_sizes(ast:UOp) -> list[int]: return [size(r) for r in ranges(ast) if r.arg[1] is AxisType.LOOP]

@pytest.mark.parametrize("make, merged", [
  (lambda: Tensor.empty(5, 7, 3) + Tensor.empty(5, 7, 3), [5 * 7 * 3]),    # every access reads (i, j, k) as one flat index
  (lambda: Tensor.empty(35, 3).T.contiguous(), None),                        # x.T: the load's order is not the store's
  (lambda: Tensor.empty(5, 7, 3) + Tensor.empty(5, 7, 1), [5 * 7, 3]),      # broadcast along the last axis: a % per element
  (lambda: Tensor.empty(5, 7, 3).pad(((0, 0), (0, 0), (1, 1))).contiguous(), [5 * 7, 5]),  # the pad's gate reads the last axis alone
], ids=["add", "transpose", "broadcast", "pad"])
def test_merge_keeps_index_math_free_of_divisions(make, merged):
  ast = kernel_of(make())
  if merged is None: assert merge_adjacent_ranges(ast) is ast  # nothing merges: the kernel as it came
  else:
    assert loop_sizes(new := merge_adjacent_ranges(ast)) == merged, loop_sizes(new)
    assert not any(u.op in (Ops.FLOORDIV, Ops.FLOORMOD) for u in new.toposort())

def test_merge_leaves_reduces_alone():
  ast = kernel_of(Tensor.empty(4, 5, 6).sum(2))
  assert merge_adjacent_ranges(ast) is ast

@pytest.mark.parametrize("run", [run_cpu, run_python], ids=["CPU", "PYTHON"])
def test_merged_kernel_matches_numpy(run):
  (ast, ins), ref = elementwise(13, 11)
  merged = merge_adjacent_ranges(ast)
  assert loop_sizes(merged) == [143]
  with Context(THREADS=1): opts = hand_coded_opts(merged, AVX2)
  np.testing.assert_allclose(run(apply_opts(merged, opts), ins, 143), ref(*ins), rtol=1e-6)

def test_flat_odd_axis_is_padded_to_whole_vectors():
  # 2^18-1 floats: the scalar loop's shares started off a vector; padded to whole vectors of 8 (LOOP_GROUP, on AVX-512 too), every
  # thread's share starts on one
  with Context(THREADS=2):
    opts = hand_coded_opts(flat((1 << 18) - 1)[0][0], AVX512)
    assert opts == [Opt(P, 0, 8), Opt(U, 0, 8), Opt(T, 0, 2)], opts
    # a row of 1021 starts off a vector however its loop is split: no tile
    assert not any(o.op in (U, P) for o in hand_coded_opts(elementwise(257, 1021)[0][0], AVX512))
    # a broadcast row read across the padded axis is no flat buffer either
    assert not any(o.op in (U, P) for o in hand_coded_opts(broadcast(257, 1021)[0][0], AVX512))

@pytest.mark.parametrize("run", [run_cpu, run_python], ids=["CPU", "PYTHON"])
def test_flat_odd_axis_matches_numpy(run):
  (ast, ins), ref = flat(1021)
  with Context(THREADS=1): opts = hand_coded_opts(ast, AVX2)
  assert opts == [Opt(P, 0, 8), Opt(U, 0, 8)], opts
  np.testing.assert_allclose(run(apply_opts(ast, opts), ins, 1021), ref(*ins), rtol=1e-6)

def test_odd_transpose_takes_padded_lines():
  with Context(THREADS=1):
    # the load's axis of 255 (no 16, 8 or 4 divides it), whose store rows lie 48 floats (3 cache lines) apart, takes a whole line padded
    assert hand_coded_opts(transpose(48, 255)[0][0], AVX2) == [Opt(U, 1, 2), Opt(P, 0, 16), Opt(U, 0, 16)]
    # store rows 47 floats apart: left untiled, as before
    assert not any(o.op in (U, P) for o in hand_coded_opts(transpose(47, 255)[0][0], AVX2))
    # the store's odd axis of 47 takes its 2 lanes padded to 48
    assert hand_coded_opts(transpose(47, 64)[0][0], AVX2) == [Opt(P, 1, 2), Opt(U, 1, 2), Opt(U, 0, 16)]
    # an odd store axis shorter than a line keeps its one lane (its padding would be a large share of the work)
    assert hand_coded_opts(transpose(7, 64)[0][0], AVX2) == [Opt(U, 0, 16)]
    # a short load axis that pads by more than PAD_ROW: no line
    assert Opt(U, 0, 16) not in hand_coded_opts(transpose(48, 17)[0][0], AVX2)

@pytest.mark.parametrize("run", [run_cpu, run_python], ids=["CPU", "PYTHON"])
@pytest.mark.parametrize("h, w", [(48, 255), (47, 64)])
def test_odd_transpose_matches_numpy(run, h, w):
  (ast, ins), ref = transpose(h, w)
  with Context(THREADS=1): opts = hand_coded_opts(ast, AVX2)
  assert any(o.op is P for o in opts), opts
  np.testing.assert_array_equal(run(apply_opts(ast, opts), ins, h * w), ref(*ins))

def test_thread_split_of_an_axis_no_share_count_divides_overlaps():
  # 257 x 1021, both prime: no axis divides into its 4 shares. Without a reduce the rows' last block of 8 is shifted back over the one before
  # (no gate on the store inside the row loop); a reduce still pads (tests/codegen/test_opt.py: matmul 125 x 17)
  (ast, ins), ref = elementwise(257, 1021)
  with Context(THREADS=2): opts = hand_coded_opts(ast, AVX2)
  assert opts == [Opt(O, 0, 4), Opt(T, 0, 4)], opts
  np.testing.assert_allclose(run_cpu(apply_opts(ast, opts), ins, 257 * 1021), ref(*ins), rtol=1e-6)
  # fewer shares of an axis come first (2047 = 23 x 89 rows of 513 = 27 x 19: 3 shares of every row)
  with Context(THREADS=2): assert hand_coded_opts(elementwise(2047, 513)[0][0], AVX2) == [Opt(T, 1, 3)]

@pytest.mark.parametrize("run", [run_cpu, run_python], ids=["CPU", "PYTHON"])
def test_overlapped_thread_split_matches_numpy(run):
  (ast, ins), ref = elementwise(67, 13)
  np.testing.assert_allclose(run(apply_opts(ast, [Opt(O, 0, 8), Opt(T, 0, 8)]), ins, 67 * 13), ref(*ins), rtol=1e-6)

rng = np.random.default_rng(0)
# (254, 1018) pads to 257 x 1021, both prime: the thread split's OVERLAP
@pytest.mark.parametrize("shape", [(254, 1018), (256, 1023), (1, 262143), (262143,)], ids=str)
@pytest.mark.parametrize("op", ["add", "T", "pad", "where", "half", "slice", "cat"])
def test_tensor_ops_at_odd_shapes_match_numpy(shape, op):
  # through the whole pipeline (merge, heuristic, peel) at 2 threads, sizes past the thread split's work threshold
  x, y = rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(shape, dtype=np.float32)
  fns = {"add": (lambda a, b: a + b, lambda a, b: a + b), "T": (lambda a, b: a.T.contiguous(), lambda a, b: a.T),
         "pad": (lambda a, b: a.pad(((1, 2),) * a.ndim).contiguous(), lambda a, b: np.pad(a, (1, 2))),
         "where": (lambda a, b: (a > 0).where(a, b), lambda a, b: np.where(a > 0, a, b)),
         "half": (lambda a, b: a.half(), lambda a, b: a.astype(np.float16)),
         "slice": (lambda a, b: a[..., 1:].contiguous(), lambda a, b: a[..., 1:]),
         "cat": (lambda a, b: a.cat(b[..., :-3], dim=-1), lambda a, b: np.concatenate([a, b[..., :-3]], -1))}
  tg, ref = fns[op]
  with Context(THREADS=2): got = tg(Tensor(x), Tensor(y)).numpy()
  np.testing.assert_array_equal(got, ref(x, y))
