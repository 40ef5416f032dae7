"""A large reduce with a small output runs as two kernels (schedule/split_reduce.py): partial results over chunks, then the partials.
Results against numpy for odd sizes (a tail past the last whole chunk), several reduced axes, every reduce op and several dtypes."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.helpers import Context
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.schedule.split_reduce import partial_count
from tinygrad.runtime import host_toolchain

def _kernels(t:Tensor) -> list:
  return [it for it in create_schedule([t.uop])[0] if it.kind == "kernel"]

def test_partial_count():
  assert partial_count(1, 1 << 24) == 256
  assert partial_count(4, 1 << 24) == 64       # outputs x chunks stay about 256
  assert partial_count(1, 1 << 14) == 1        # short: one loop is fine
  assert partial_count(256, 1 << 24) == 1      # outputs enough to share out already
  assert partial_count(1, 40_000) == 9         # each chunk at least 4096 elements

def test_full_sum_is_two_kernels():
  t = Tensor(np.ones(1 << 20, np.float32))
  first, second = _kernels(t.sum())
  assert first.bufs[0].arg.shape == (256,) and second.bufs[0].arg.shape == (1,)
  with Context(SPLIT_REDUCE=0): assert len(_kernels(t.sum())) == 1

def test_small_or_wide_reduce_is_one_kernel():
  assert len(_kernels(Tensor(np.ones(1000, np.float32)).sum())) == 1
  assert len(_kernels(Tensor(np.ones((512, 4096), np.float32)).sum(1))) == 1  # softmax-like rows: threads split the rows

@pytest.mark.parametrize("n", [1 << 16, 65537, 100_003, (1 << 20) + 255])
def test_sum_odd_sizes(device, n):
  x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
  np.testing.assert_allclose(Tensor(x, device=device).sum().numpy(), x.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)

@pytest.mark.parametrize("op", ["max", "min", "prod"])
def test_other_ops_with_a_tail(op):
  rng = np.random.default_rng(1)
  x = rng.uniform(0.999, 1.001, 70_001).astype(np.float32) if op == "prod" else rng.standard_normal(70_001).astype(np.float32)
  x[-1] = 5.0 if op == "max" else -5.0 if op == "min" else x[-1]  # the extreme sits in the tail
  np.testing.assert_allclose(getattr(Tensor(x), op)().numpy(), getattr(x.astype(np.float64), op)(), rtol=1e-4)

def test_int_and_bool_reduces_exact():
  x = np.random.default_rng(2).integers(-1000, 1000, 99_991).astype(np.int32)
  assert Tensor(x).sum().item() == int(x.astype(np.int64).sum())
  assert Tensor(x).max().item() == int(x.max())
  b = np.zeros(99_991, bool)
  assert not Tensor(b).any().item() and Tensor(~b).all().item()
  b[-3] = True
  assert Tensor(b).any().item() and not Tensor(~b).all().item()

def test_half_sum_accumulates_in_float():
  x = np.random.default_rng(3).uniform(0, 1, 65_539).astype(np.float16)
  out = Tensor(x).sum()
  assert out.dtype == dtypes.float16
  np.testing.assert_allclose(float(out.numpy()), x.astype(np.float64).sum(), rtol=2e-3)

def test_column_sums_and_several_axes():
  rng = np.random.default_rng(4)
  x = rng.standard_normal((40_009, 3)).astype(np.float32)  # reduce over the leading axis, 3 outputs
  np.testing.assert_allclose(Tensor(x).sum(0).numpy(), x.astype(np.float64).sum(0), rtol=1e-4, atol=1e-3)
  y = rng.standard_normal((257, 2, 131)).astype(np.float32)  # two reduced axes around a kept one, keepdim
  np.testing.assert_allclose(Tensor(y).max((0, 2), keepdim=True).numpy(), y.max((0, 2), keepdims=True))
  np.testing.assert_allclose(Tensor(y).sum((0, 2)).numpy(), y.astype(np.float64).sum((0, 2)), rtol=1e-4, atol=1e-3)

def test_split_sum_inside_a_bigger_graph():
  # the total is broadcast back: the partials, the total and the elementwise kernel
  x = np.random.default_rng(5).standard_normal(1 << 17).astype(np.float32)
  np.testing.assert_allclose((Tensor(x) - Tensor(x).mean()).numpy(), x - x.astype(np.float64).mean(), atol=1e-5)
  np.testing.assert_allclose(Tensor(x).exp().sum().numpy(), np.exp(x.astype(np.float64)).sum(), rtol=1e-5)

def _big(device:str, cpu_size, emulator_size):
  """full-size cases on the CPU renderers; the PYTHON emulator runs every element in python, so a smaller case of the same kind"""
  return emulator_size if device == "PYTHON" else cpu_size

@pytest.mark.parametrize("device", [pytest.param("CPU", id="CPU-LLVM"), pytest.param("CPU:C", id="CPU-C", marks=pytest.mark.skipif(
  host_toolchain.find_cc() is None, reason="no C compiler on PATH"))])
def test_large_sum_with_a_tail(device):
  # 16M + 3: 256 partials of 65536, the three elements past them reduced on their own (the emulator runs the same split at 65537 in
  # test_sum_odd_sizes)
  x = np.random.default_rng(6).standard_normal((1 << 24) + 3).astype(np.float32)
  np.testing.assert_allclose(Tensor(x, device=device).sum().numpy(), x.astype(np.float64).sum(), rtol=1e-5, atol=1e-2)

def test_large_row_and_column_sums(device):
  # sum(1): one long row loop per output; sum(0): the reduce steps over rows, its lanes along the columns (codegen/opt/heuristic.py)
  h, w = _big(device, (4096, 4096), (96, 80))
  x = np.random.default_rng(7).standard_normal((h, w)).astype(np.float32)
  for axis in (1, 0):
    np.testing.assert_allclose(Tensor(x, device=device).sum(axis).numpy(), x.astype(np.float64).sum(axis), rtol=1e-4, atol=1e-3)

def test_argmax_over_a_split_reduce_shares_threads():
  # the index pass re-reads the max of the partials, a reduce of 32 trips that every share may redo (not unrolled): its 128K elements
  # still go to both cores; its own reduce, a max of n - i, is left to LLVM's loop vectorizer (no unroll). The first maximum wins over a
  # later tie and over the tail
  from tinygrad import Device
  from tinygrad.codegen.opt import OptOps, hand_coded_opts
  from tinygrad.codegen.opt.split_ranges import split_divided_ranges
  from tinygrad.uop.ops import graph_rewrite
  from tinygrad.uop.symbolic import symbolic
  from tinygrad.uop import Ops
  for n, at in ((1 << 17, (70_000, 100_000)), ((1 << 17) + 5, (70_000, 100_000, (1 << 17) + 2))):  # with a tail, the max is realized first
    x = np.random.default_rng(8).standard_normal(n).astype(np.float32)
    x[list(at)] = 9.0
    with Context(THREADS=2):
      index_pass = next(k for k in _kernels(Tensor(x).argmax()) if k.bufs[0].arg.shape == (32,) and
                        any(u.op is Ops.REDUCE and dtypes.is_int(u.dtype) for u in k.ast.toposort()))
      opts = hand_coded_opts(split_divided_ranges(graph_rewrite(index_pass.ast, symbolic)), Device["CPU"].renderer)
      assert [o.op for o in opts] == [OptOps.THREAD], opts
      assert Tensor(x).argmax().item() == 70_000 == Tensor(x).argmax(0).item()

def _reduces_left(k) -> list:
  """the REDUCEs of a scheduled kernel once codegen has collapsed its one-hot sums into loads (codegen/onehot_gather.py)"""
  from tinygrad.codegen.onehot_gather import collapse_onehot_reduces
  from tinygrad.uop.ops import graph_rewrite
  from tinygrad.uop.symbolic import symbolic
  from tinygrad.uop import Ops
  return [u for u in collapse_onehot_reduces(graph_rewrite(k.ast, symbolic)).toposort() if u.op is Ops.REDUCE]

def test_a_gather_is_not_split_and_a_masked_sum_is():
  # x[idx] over a 1M row is a one-hot sum that codegen makes one load per output: split, its chunks compared p * chunk + c with the index
  # and could stay sums (100 x 1M compares and adds). Masked sums that pick no single element keep their reduce and their 256 partials
  rng = np.random.default_rng(9)
  x = rng.integers(-5, 6, 1 << 20).astype(np.float32)
  idx = rng.integers(0, 1 << 20, 100).astype(np.int32)
  X, I = Tensor(x).realize(), Tensor(idx).realize()
  for picked in (X[I], X.gather(0, I), X.reshape(4, -1).gather(1, I.reshape(4, 25) % (1 << 18))):
    (k,) = _kernels(picked)
    assert _reduces_left(k) == [], "the gather still sums its row"
  np.testing.assert_array_equal(X[I].numpy(), x[idx])
  for masked, want in (((X == 3).where(X, 0), np.where(x == 3, x, 0)), ((X > 0).where(X, 0), np.where(x > 0, x, 0))):
    first, second = _kernels(masked.sum())
    assert first.bufs[0].arg.shape == (256,) and second.bufs[0].arg.shape == (1,) and len(_reduces_left(first)) == 1
    assert masked.sum().item() == want.sum()
