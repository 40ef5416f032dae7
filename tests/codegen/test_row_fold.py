"""Column reduces folded row by row into the output (codegen/row_fold.py): v @ A, A.sum(0), A.max(0) equal bit for bit to numpy's serial
fold in float32 (np.cumsum along the rows: the same terms in the same order), at odd sizes, with a strided matrix, batched and at one
thread, with math on the fold (a mean); and which kernels fold (a matvec, a batch of vectors sharing the matrix, short rows and a matrix
in cache keep the tiled form)."""
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes
from tinygrad.helpers import Context
from tinygrad.uop import Ops
from tinygrad.uop.ops import graph_rewrite
from tinygrad.uop.symbolic import symbolic
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen.row_fold import fold_rows

def _r(*shape, seed=0): return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(np.float32)

def _serial_sum(x:np.ndarray) -> np.ndarray: return np.cumsum(x, axis=0, dtype=np.float32)[-1]  # adds row after row, in float32

def _folds(t:Tensor, threads:int=2) -> bool:
  ast = graph_rewrite([it.ast for it in create_schedule([t.uop])[0] if it.kind == "kernel"][-1], symbolic)
  with Context(THREADS=threads): return fold_rows(ast, Device["CPU"].renderer) is not ast

def test_which_kernels():
  assert _folds(Tensor.empty(4096) @ Tensor.empty(4096, 4096))
  assert _folds(Tensor.empty(4096, 4096).sum(0)) and _folds(Tensor.empty(4096, 4095).max(0))
  assert _folds(Tensor.empty(1, 4096) @ Tensor.empty(4096, 11008))
  assert _folds(Tensor.empty(4, 512, 1024).sum(1))                     # a batch of matrices: each its own column sums
  assert not _folds(Tensor.empty(4096, 4096) @ Tensor.empty(4096))     # M @ v walks the reduce with stride 1
  assert not _folds(Tensor.empty(4096, 4096).sum(1))
  assert _folds(Tensor.empty(4, 4096) @ Tensor.empty(4096, 4096))      # a batch of vectors: lanes that share each matrix element
  assert not _folds(Tensor.empty(16, 4096) @ Tensor.empty(4096, 4096))  # more than BROADCAST_LANES of them: the register tile
  assert not _folds(Tensor.empty(65536, 256).sum(0))                   # 1 KB rows: the register tile reads them whole
  assert not _folds(Tensor.empty(64, 8, 512).max(1))                   # 1 MB: the cores' L2s hold it, the tiled form's runs are cached
  assert not _folds(Tensor.empty(4096, 4096).sum(0).cast(dtypes.float16))  # the store is no fold (the cast after it)

def _output_loads(t:Tensor) -> int:
  from tinygrad.codegen.lowering import rewrite_to_program
  from tinygrad.codegen.linearize import linearize
  ast = next(it.ast for it in create_schedule([t.uop])[0] if it.kind == "kernel")
  with Context(THREADS=2): lin = linearize(rewrite_to_program(ast, Device["CPU"].renderer))
  bufs = [u.src[0].src[0] for u in lin if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX]
  return sum(1 for b in bufs if (b.src[0] if b.op is Ops.AFTER else b).op is Ops.PARAM and (b.src[0] if b.op is Ops.AFTER else b).arg.slot == 0)

def test_folded_kernel_reads_the_output():
  # the rows fold into the output through memory: the kernel loads its own output, the tiled form never does
  assert _output_loads(Tensor.empty(2048) @ Tensor.empty(2048, 2048)) == 1
  assert _output_loads(Tensor.empty(2048, 2048) @ Tensor.empty(2048)) == 0

CASES = {  # name: (operands, what tg computes from them, the float32 terms numpy folds row by row)
  "vecmat": ((_r(1024, seed=1), _r(1024, 2048)), lambda v, a: v @ a, lambda v, a: v[:, None] * a),
  "vecmat odd": ((_r(1021, seed=1), _r(1021, 1023)), lambda v, a: v @ a, lambda v, a: v[:, None] * a),
  "vecmat prime rows": ((_r(1031, seed=1), _r(1031, 1024)), lambda v, a: v @ a, lambda v, a: v[:, None] * a),
  "column sum": ((_r(777, 1536),), lambda a: a.sum(0), lambda a: a),
  "column sum strided": ((_r(600, 3000),), lambda a: a[::2, 100:2900].sum(0), lambda a: a[::2, 100:2900]),
  "batched column sums": ((_r(3, 300, 1100),), lambda a: a.sum(1), lambda a: np.moveaxis(a, 1, 0)),
  "few rows": ((_r(128, 8, 600),), lambda a: a.sum(1), lambda a: np.moveaxis(a, 1, 0)),
  "two rows": ((_r(256, 2, 1100),), lambda a: a.sum(1), lambda a: np.moveaxis(a, 1, 0)),
  "two axes": ((_r(6, 100, 1100),), lambda a: a.sum((0, 1)), lambda a: a.reshape(600, 1100)),
  "batch of vectors": ((_r(4, 1024, seed=1), _r(1024, 2048)), lambda v, a: v @ a, lambda v, a: np.moveaxis(v[:, :, None] * a[None], 1, 0)),
  "batch of 3 odd": ((_r(3, 1021, seed=1), _r(1021, 1023)), lambda v, a: v @ a, lambda v, a: np.moveaxis(v[:, :, None] * a[None], 1, 0)),
  "one row of a linear": ((_r(1, 700, seed=1), _r(700, 1300)), lambda x, w: x @ w, lambda x, w: x[0][:, None] * w),
}

@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", CASES)
def test_serial_sum_bits(name, threads):
  arrays, tg_fn, terms = CASES[name]
  assert _folds(tg_fn(*[Tensor(a) for a in arrays]), threads)
  with Context(THREADS=threads): got = tg_fn(*[Tensor(a) for a in arrays]).numpy()
  np.testing.assert_array_equal(got.reshape(-1), _serial_sum(terms(*arrays).astype(np.float32)).reshape(-1))

def test_max_and_int():
  a = _r(900, 1500)
  assert _folds(Tensor(a).max(0)) and _folds(Tensor(a).sum(0))
  a[5, 7], a[800, 9] = np.nan, np.inf
  np.testing.assert_array_equal(Tensor(a).max(0).numpy(), a.max(0))
  n = np.random.default_rng(2).integers(-1000, 1000, (900, 1500)).astype(np.int32)
  np.testing.assert_array_equal(Tensor(n).sum(0).numpy(), n.sum(0, dtype=np.int32))

def test_math_on_the_fold():
  # a mean's scale runs as one more pass over the folded output; a float16 result (the float32 sum cast down) and var (one kernel, its
  # mean's reduce inside the fold) keep the tiled form
  a = _r(1000, 1500)
  assert _folds(Tensor(a).mean(0)) and _folds(Tensor(a).sum(0) * 2 + 1) and not _folds(Tensor(a).var(0))
  assert not _folds(Tensor(a).cast(dtypes.float16).mean(0))
  for threads in (1, 2):
    with Context(THREADS=threads):
      np.testing.assert_allclose(Tensor(a).mean(0).numpy(), a.mean(0, dtype=np.float64), rtol=1e-5, atol=1e-6)
      np.testing.assert_allclose(Tensor(a).var(0).numpy(), a.var(0, ddof=1, dtype=np.float64), rtol=1e-4)
      np.testing.assert_array_equal((Tensor(a).sum(0) * 2 + 1).numpy(), _serial_sum(a) * np.float32(2) + np.float32(1))
      v = _r(3, 1000, seed=3)  # a batch's lanes in the last pass too
      np.testing.assert_array_equal(((Tensor(v) @ Tensor(a)) * 2).numpy(), _serial_sum(np.moveaxis(v[:, :, None] * a[None], 1, 0)) * np.float32(2))

def test_bias_gradient():
  x, w = _r(512, 300), _r(300, 1200)
  xt, wt, bt = Tensor(x), Tensor(w), Tensor.zeros(1200, requires_grad=True)
  ((xt @ wt + bt) * 0.5).sum().backward()
  np.testing.assert_allclose(bt.grad.numpy(), np.full(1200, 256, np.float32))
