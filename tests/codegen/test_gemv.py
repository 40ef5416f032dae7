"""Matrix-vector products (heuristic.gemv_upcasts): M @ v unrolls the reduce along M's rows instead of a tile of rows, v @ M reads a run
of each row per step; numpy-equal at odd sizes, with non-contiguous, batched and float16 operands and through the gradients, where a
matvec's backward is a vecmat."""
import pathlib, sys
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.helpers import Context
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen.opt import hand_coded_opts, Opt, OptOps
from tinygrad.codegen.opt.split_ranges import split_divided_ranges
from tinygrad.codegen.opt.heuristic import gemv_upcasts, simd_tiles, WIDE
from tinygrad.codegen.opt.kernel import axes
from tinygrad.uop import AxisType
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's test_opt is not on sys.path by itself
from test_opt import AVX2, AVX512

def _reduce_ast(t:Tensor):
  return split_divided_ranges(next(it.ast for it in create_schedule([t.uop])[0] if it.kind == "kernel" and it.ast.arg.name.startswith("r_")))

def _gemv(t:Tensor, shares:int=2, renderer=AVX512):
  ast = _reduce_ast(t)
  return gemv_upcasts(ast, [i for i, r in enumerate(axes(ast)) if r.arg[1] is AxisType.LOOP], simd_tiles(renderer), shares)

def test_which_kernels():
  assert _gemv(Tensor.empty(4096, 4096) @ Tensor.empty(4096)) == []                                  # M @ v: no tile
  assert _gemv(Tensor.empty(8, 512, 512) @ Tensor.empty(8, 512, 1)) == []                            # batched
  assert _gemv(Tensor.empty(1, 4096) @ Tensor.empty(4096, 4096).T) == []                             # a linear layer on one row
  # v @ M: a run of each row, as many lanes as half the registers hold (AVX-512: 16 of 32 zmm; AVX2: 8 of 16 ymm)
  assert _gemv(Tensor.empty(4096) @ Tensor.empty(4096, 4096)) == [(0, WIDE), (0, 16)]
  assert _gemv(Tensor.empty(4096) @ Tensor.empty(4096, 4096), renderer=AVX2) == [(0, WIDE), (0, 4)]
  assert _gemv(Tensor.empty(4096) @ Tensor.empty(4096, 256)) == [(0, WIDE), (0, 8)]              # 2 tiles for 2 shares
  assert _gemv(Tensor.empty(4096) @ Tensor.empty(4096, 64), shares=4) == [(0, WIDE)]                 # 4 tiles of 16 for 4 shares
  # no such product: a matmul (each operand misses an output axis), a sum (no vector), rows shorter than a vector (a depthwise
  # conv's 9 taps), overlapping windows (a conv's input), v @ M with rows no multiple of WIDE
  assert _gemv(Tensor.empty(256, 256) @ Tensor.empty(256, 256)) is None
  assert _gemv(Tensor.empty(4096, 4096).sum(1)) is None and _gemv(Tensor.empty(4096, 4096).sum(0)) is None
  assert _gemv(Tensor.empty(4096, 9) @ Tensor.empty(9)) is None
  assert _gemv(Tensor.empty(8, 1, 28, 28).conv2d(Tensor.empty(1, 1, 3, 3), padding=1)) is None
  assert _gemv(Tensor.empty(4096) @ Tensor.empty(4096, 300)) is None
  # a linear layer on a few rows (x @ w.T, w past L2, rows of whole vectors): the rows upcast whole; not on more rows than FEW_ROWS, a
  # weight that stays in L2, or rows the vectors do not divide (their unroll would be padded)
  assert _gemv(Tensor.empty(4, 4096) @ Tensor.empty(4096, 4096).T) == [(0, 4)]
  assert _gemv(Tensor.empty(2, 8, 1024) @ Tensor.empty(1024, 1024).T) is None  # batch x rows: two axes, neither the matrix's
  assert _gemv(Tensor.empty(8, 1024) @ Tensor.empty(1024, 1024).T) == [(0, 8)]
  assert _gemv(Tensor.empty(3, 1024) @ Tensor.empty(640, 1024).T) == [(0, 3)]           # CASES' "linear few rows"
  assert _gemv(Tensor.empty(16, 1024) @ Tensor.empty(1024, 1024).T) is None
  assert _gemv(Tensor.empty(3, 512) @ Tensor.empty(512, 512).T) is None
  assert _gemv(Tensor.empty(4, 1001) @ Tensor.empty(2048, 1001).T) is None

def test_opts():
  with Context(THREADS=2):
    assert hand_coded_opts(_reduce_ast(Tensor.empty(4096, 4096) @ Tensor.empty(4096)), AVX512) == \
      [Opt(OptOps.UNROLL, 1, 32), Opt(OptOps.THREAD, 0, 8)]
    assert hand_coded_opts(_reduce_ast(Tensor.empty(4096) @ Tensor.empty(4096, 4096)), AVX512) == \
      [Opt(OptOps.UPCAST, 0, 16), Opt(OptOps.UPCAST, 0, 16), Opt(OptOps.THREAD, 0, 2)]
    # a few rows: each a vector accumulator (two where there are fewer than four), the weight's rows read as whole vectors
    assert hand_coded_opts(_reduce_ast(Tensor.empty(4, 4096) @ Tensor.empty(4096, 4096).T), AVX512) == \
      [Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.UNROLL, 1, 16), Opt(OptOps.THREAD, 0, 2)]
    assert hand_coded_opts(_reduce_ast(Tensor.empty(2, 4096) @ Tensor.empty(4096, 4096).T), AVX512) == \
      [Opt(OptOps.UPCAST, 0, 2), Opt(OptOps.UNROLL, 1, 32), Opt(OptOps.THREAD, 0, 2)]
    # a small product (under two threads' work) too: the unroll reads the rows as whole vectors (heuristic._scalar_tile_pays; on AVX2,
    # 64x512: a tile of 16 rows 8 us, untiled 3 us)
    assert not any(o.op is OptOps.UPCAST for o in hand_coded_opts(_reduce_ast(Tensor.empty(64, 512) @ Tensor.empty(512)), AVX512))

def _r(*shape, seed=0, dt=np.float32): return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(dt)

CASES = {  # name: (operands, what tg computes from them, what numpy computes)
  "matvec": ((_r(300, 517), _r(517, seed=1)), lambda m, v: m @ v, lambda m, v: m @ v),
  "vecmat": ((_r(517, seed=1), _r(517, 1024)), lambda v, m: v @ m, lambda v, m: v @ m),
  "vecmat odd": ((_r(517, seed=1), _r(517, 300)), lambda v, m: v @ m, lambda v, m: v @ m),
  "matvec transposed": ((_r(517, 300), _r(517, seed=1)), lambda m, v: m.T @ v, lambda m, v: m.T @ v),
  "vecmat transposed": ((_r(517, seed=1), _r(1024, 517)), lambda v, m: v @ m.T, lambda v, m: v @ m.T),
  "strided vector": ((_r(300, 517), _r(1034, seed=1)), lambda m, v: m @ v[::2], lambda m, v: m @ v[::2]),
  "batched matvec": ((_r(3, 200, 640), _r(3, 640, 1, seed=1)), lambda m, v: m @ v, lambda m, v: m @ v),
  "batched vecmat": ((_r(3, 1, 640, seed=1), _r(3, 640, 256)), lambda v, m: v @ m, lambda v, m: v @ m),
  "linear few rows": ((_r(3, 1024, seed=1), _r(640, 1024), _r(640, seed=2)), lambda x, w, b: x.linear(w.T, b), lambda x, w, b: x @ w.T + b),
  "linear one row": ((_r(1, 640, seed=1), _r(512, 640), _r(512, seed=2)), lambda x, w, b: x.linear(w.T, b), lambda x, w, b: x @ w.T + b),
}

@pytest.mark.parametrize("name", CASES)
def test_numpy(name):
  arrays, tg_fn, np_fn = CASES[name]
  got, want = tg_fn(*[Tensor(a) for a in arrays]).numpy(), np_fn(*arrays)
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(arrays[0].size))

def test_float16():
  m, v = _r(300, 1024, dt=np.float16), _r(1024, seed=1, dt=np.float16)
  for got, (a, b) in (((Tensor(m) @ Tensor(v)).numpy(), (m, v)), ((Tensor(v) @ Tensor(m.T.copy())).numpy(), (v, m.T))):
    prods = (a.astype(np.float32) * b.astype(np.float32)).astype(np.float16).astype(np.float64) if b.ndim == 1 else \
            (a[:, None].astype(np.float32) * b.astype(np.float32)).astype(np.float16).astype(np.float64)
    exact = prods.sum(-1) if b.ndim == 1 else prods.sum(0)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), exact, rtol=2e-3, atol=1e-2)

def test_gradients():
  m, v, g = _r(300, 1024), _r(1024, seed=1), _r(300, seed=2)
  tm, tv = Tensor(m, requires_grad=True), Tensor(v, requires_grad=True)
  (tm @ tv).backward(Tensor(g))
  np.testing.assert_allclose(tv.grad.numpy(), g @ m, rtol=1e-4, atol=1e-3)   # the backward of a matvec is a vecmat
  np.testing.assert_allclose(tm.grad.numpy(), np.outer(g, v), rtol=1e-5, atol=1e-5)
