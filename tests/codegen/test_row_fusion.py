"""A chain of row reductions (softmax, log_softmax, layernorm) stays in the kernel that reads it (schedule/row_fusion.py): kernel counts
on tensor-level graphs, where the rule stops (a long row, a column reduce, a reduce over a matmul, a device with work items), and the
fused kernels against numpy on every device of the op matrix and through the GPU renderers."""
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop.ops import UOp, Ops
from tinygrad.dtype import dtypes
from tinygrad.helpers import Context, GlobalCounters
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program

def buf(*shape, device="CPU"):
  n = 1
  for s in shape: n *= s
  return UOp.new_buffer(device, n, dtypes.float).reshape(shape)

def kernels(t:UOp) -> list: return [it for it in create_schedule([t])[0] if it.kind == "kernel"]

def softmax(x:UOp, axis=1) -> UOp:
  e = (x - x.max(axis, keepdim=True)).exp()
  return e / e.sum(axis, keepdim=True)

def layernorm(x:UOp) -> UOp:
  c = x - x.sum(1, keepdim=True) * (1 / x.shape[1])
  return c * ((c * c).sum(1, keepdim=True) * (1 / x.shape[1]) + 1e-5).rsqrt()

def test_row_chains_are_one_kernel():
  x = buf(8, 37)
  assert len(kernels(softmax(x))) == 1
  assert len(kernels(layernorm(x))) == 1
  assert len(kernels(x - x.sum(1, keepdim=True))) == 1
  with Context(FUSE_ROWS=0): assert len(kernels(softmax(x))) == 3

def test_fused_kernel_runs_each_reduce_once_per_row():
  ks = kernels(softmax(buf(8, 37)))
  red = [u for u in ks[0].ast.toposort() if u.op is Ops.REDUCE]
  rows = [u for u in ks[0].ast.toposort() if u.op is Ops.RANGE and u.src[0].arg == 8]
  assert len(red) == 2 and len(rows) == 1
  # each reduce loops over its own range of the row, inside the loop over rows
  assert all(len(r.src) == 2 and r.src[1].src[0].arg == 37 and rows[0] in r.src[0].toposort() for r in red)

def test_long_rows_split_into_kernels():
  with Context(FUSE_ROWS_MAX=36): assert len(kernels(softmax(buf(8, 37)))) == 3
  with Context(FUSE_ROWS_MAX=37): assert len(kernels(softmax(buf(8, 37)))) == 1
  assert len(kernels(softmax(buf(2, 20000)))) == 3  # past the default limit (and short of split_reduce's)

def test_column_reduce_is_not_fused():
  # over axis 0 the reduce depends on the inner loop only: kept in the kernel it would run once per element
  assert len(kernels(softmax(buf(8, 37), axis=0))) == 3

def _matmul(a:UOp, b:UOp) -> UOp: return (a.reshape((a.shape[0], 1, a.shape[1])) * b.T.reshape((1, b.shape[1], b.shape[0]))).sum(2)

def _reduces(it) -> list[UOp]: return [u for u in it.ast.toposort() if u.op is Ops.REDUCE]
def _alone(ks, n:int) -> bool:
  """every reduce over n elements (a matmul's) is the only reduce of its kernel: never nested in a row reduce (it would run once per loop
  over the row)"""
  return all(len(_reduces(it)) == 1 for it in ks if any(r.src[1].src[0].arg == n for r in _reduces(it)))

def test_reduce_over_a_matmul_is_not_fused():
  mm = _matmul(buf(8, 16), buf(16, 12))
  with Context(FUSE_ROWS=0): assert len(kernels(softmax(mm))) == 4  # the matmul, max, sum and the softmax
  # the matmul gets its kernel first, then the chain over its rows is one kernel
  ks = kernels(softmax(mm))
  assert len(ks) == 2 and _alone(ks, 16) and len(_reduces(ks[1])) == 2

def test_chain_read_by_a_matmul_gets_its_own_kernel():
  # softmax(q @ k.T) @ v and layernorm(x) @ w: the matmul after the chain reads each of its elements once per output column, so the chain
  # can't stay in its kernel; its result is one kernel of its own, not a kernel per row reduce and another for what they share
  q, k, v = buf(8, 16), buf(12, 16), buf(12, 6)
  ks = kernels(_matmul(softmax(_matmul(q, k.T)), v))
  assert len(ks) == 3 and _alone(ks, 16) and [len(_reduces(it)) for it in ks] == [1, 2, 1]
  # the scale and the mask before the chain run in the first matmul's kernel, once per element
  mask = UOp.new_buffer("CPU", 8 * 12, dtypes.bool).reshape((8, 12))
  ks = kernels(_matmul(softmax(mask.where(_matmul(q, k.T) * 0.25, float("-inf"))), v))
  assert len(ks) == 3 and any(u.op is Ops.WHERE for u in ks[0].ast.toposort())
  ks = kernels(_matmul(layernorm(buf(8, 37)), buf(37, 5)))
  assert len(ks) == 2 and [len(_reduces(it)) for it in ks] == [2, 1]

def test_rows_read_by_overlapping_windows_are_not_fused():
  # each row's max is read by the 3 windows that hold it: every reduce depends on every loop around it, yet in one kernel each max
  # would be computed 3 times (a pool's gradient: each window's max once per element of the window)
  a = np.random.default_rng(2).standard_normal((10, 37)).astype(np.float32)
  x = Tensor(a).realize()
  out = x.max(1).unfold(0, 3, 1).sum(1)
  assert len(kernels(out.uop)) == 2
  np.testing.assert_allclose(out.numpy(), np.lib.stride_tricks.sliding_window_view(a.max(1), 3).sum(1), rtol=1e-6)
  e = (x - x.max(1, keepdim=True)).exp()
  assert len(kernels(e.sum(1).unfold(0, 3, 1).sum(1).uop)) == 3  # a chain of two: both reduces get their own kernels

def test_pool_tie_count_over_a_realized_max_is_not_recomputed_per_element():
  # the max is realized (the forward reads it too), so the tie count's chain body holds a load, not a reduction; fused into the
  # gradient's kernel it would be recomputed for each of the window's 4 elements: it gets a kernel of its own
  rng = np.random.default_rng(3)
  a, g = rng.standard_normal((2, 3, 8, 8)).astype(np.float32), rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
  x = Tensor(a, requires_grad=True)
  out = x.relu().max_pool2d(2)
  (out * Tensor(g)).sum().backward()
  items = [it for it in create_schedule([out.uop, x.grad.uop])[0] if it.kind == "kernel"]
  grad_kernel = next(it for it in items if it.bufs[0].arg.shape == (a.size,))  # the one kernel writing an input-sized buffer
  assert not [u for u in grad_kernel.ast.toposort() if u.op is Ops.REDUCE]
  win = np.maximum(a, 0).reshape(2, 3, 4, 2, 4, 2)
  hit = win == win.max((3, 5), keepdims=True)
  want = (hit * (g[:, :, :, None, :, None] / hit.sum((3, 5), keepdims=True)) * (a.reshape(win.shape) > 0)).reshape(a.shape)
  Tensor.realize(out, x.grad)
  np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)

def test_devices_with_work_items_keep_separate_kernels():
  x = buf(8, 37, device="PYTHON")
  assert len(kernels(softmax(x))) == 3
  with Context(FUSE_ROWS=2): assert len(kernels(softmax(x))) == 1

def _np_softmax(a):
  e = np.exp(a - a.max(1, keepdims=True))
  return e / e.sum(1, keepdims=True)

def _np_layernorm(a):
  c = a - a.mean(1, keepdims=True)
  return c / np.sqrt((c * c).mean(1, keepdims=True) + 1e-5)

CASES = {
  "softmax": (lambda t: t.softmax(1), _np_softmax),
  "log_softmax": (lambda t: t.log_softmax(1), lambda a: np.log(_np_softmax(a))),
  "layernorm": (lambda t: t.layernorm(), _np_layernorm),
}

# a row that is no multiple of the vector width, one the heuristic unrolls (48: 16 lanes), a row of one, one past a (lowered) limit
@pytest.mark.parametrize("shape, limit, fused", [((5, 37), 1 << 14, True), ((2, 48), 1 << 14, True), ((4, 1), 1 << 14, True),
                                                 ((3, 45), 16, False)])
@pytest.mark.parametrize("case", list(CASES))
def test_fused_rows_match_numpy(device, case, shape, limit, fused):
  fn, ref = CASES[case]
  a = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 4
  t = Tensor(a, device=device).realize()
  with Context(FUSE_ROWS=2, FUSE_ROWS_MAX=limit):  # 2: the emulator and the GPU devices run the fused kernel too
    GlobalCounters.reset()
    out = fn(t).realize()
    assert GlobalCounters.kernel_count == (1 if fused else 3)
  np.testing.assert_allclose(out.numpy(), ref(a), rtol=2e-5, atol=2e-6)

def test_cross_entropy_still_matches_numpy(device):
  # log_softmax inside a loss: the loss is a reduce over the rows, the chain's reduces run inside its loop
  a = np.random.default_rng(1).standard_normal((6, 10)).astype(np.float32)
  y = np.array([1, 0, 9, 3, 3, 7])
  with Context(FUSE_ROWS=2):
    loss = Tensor(a, device=device).sparse_categorical_crossentropy(Tensor(y, device=device)).item()
  np.testing.assert_allclose(loss, -np.log(_np_softmax(a))[np.arange(6), y].mean(), rtol=1e-5)

@pytest.fixture
def fused_softmax_ast():
  with Context(FUSE_ROWS=2): (k,) = kernels(softmax(buf(8, 37, device="PYTHON")))
  return k.ast

def test_fused_kernel_renders_for_ptx(fused_softmax_ast):
  from tinygrad.renderer.ptx import PTXRenderer
  from tinygrad.runtime.ptx_check import check_ptx
  entries = check_ptx(get_program(fused_softmax_ast, PTXRenderer()).src)
  assert list(entries.values()) == [[("u64", "data0"), ("u64", "data1")]]

def test_fused_kernel_compiles_for_amdgpu(fused_softmax_ast):
  from tinygrad.renderer.amdgpu import AMDGPURenderer
  from tinygrad.runtime.compiler_amdgpu import AMDGPUCompiler, read_code_object
  p = get_program(fused_softmax_ast, AMDGPURenderer())
  assert read_code_object(AMDGPUCompiler("gfx1100").compile(p.src), p.name).kd.kernarg_size == 16

def test_exp_is_computed_once_per_element():
  # the sum's loop stores exp(x - max) into a row of scratch that the store's loop reads back (codegen/row_stage.py)
  from tinygrad.codegen.row_stage import stage_rows
  from tinygrad.device import Device
  from tinygrad.dtype import AddrSpace
  (k,) = kernels(softmax(buf(8, 37)))
  assert sum(u.op is Ops.EXP2 for u in k.ast.toposort()) == 2
  staged = stage_rows(k.ast, Device["CPU"].renderer)
  assert sum(u.op is Ops.EXP2 for u in staged.toposort()) == 1
  assert [u.arg.shape for u in staged.toposort() if u.op is Ops.BUFFER and u.arg.addrspace is AddrSpace.REG] == [(37,)]
  # a value of a few ops is recomputed (layernorm's x - mean), and a target with work items keeps the kernel as it is
  (ln,) = kernels(layernorm(buf(8, 37)))
  assert stage_rows(ln.ast, Device["CPU"].renderer) is ln.ast
  assert stage_rows(k.ast, Device["PYTHON"].renderer) is k.ast

def test_recurrence_reading_its_state_in_several_reduces_schedules_in_linear_time():
  """an unrolled GRU: each step reads h in two matmuls and an elementwise update. The estimate of the fused kernel's size took the most
  of a node's elementwise readers, though each sat in its own reduce's body: the candidate kernel grew 3x per step unseen, and building
  it to test it took 30 s at 6 steps (a 16-step ONNX GRU never finished its first call). The estimate now names each place; the real
  kernel's size at 4 steps is what it counts"""
  rng, H, T = np.random.default_rng(0), 8, 12
  xs, W, R = rng.standard_normal((T, 3, 4)).astype(np.float32), rng.standard_normal((3 * H, 4)).astype(np.float32) * .3, \
    rng.standard_normal((3 * H, H)).astype(np.float32) * .3
  sig = lambda v: 1 / (1 + np.exp(-v))
  def step(h, x, Wt, Rt, sigmoid, tanh):
    gx = x @ Wt
    z, r = sigmoid(gx[:, :H] + h @ Rt[:, :H]), sigmoid(gx[:, H:2 * H] + h @ Rt[:, H:2 * H])
    return (1 - z) * tanh(gx[:, 2 * H:] + (r * h) @ Rt[:, 2 * H:]) + z * h
  h, hn, outs, want = Tensor.zeros(3, H).contiguous().realize(), np.zeros((3, H), np.float32), [], []
  for t in range(T):
    h = step(h, Tensor(xs[t]), Tensor(W).T, Tensor(R).T, Tensor.sigmoid, Tensor.tanh)
    hn = step(hn, xs[t], W.T, R.T, sig, np.tanh)
    outs.append(h)
    want.append(hn)
  np.testing.assert_allclose(Tensor.stack(*outs).numpy(), np.stack(want), rtol=1e-5, atol=1e-5)

def test_upcast_of_rows_sharing_a_staged_row_is_refused(monkeypatch):
  """softmax keeps its exp(x - max) row in a scratch array (codegen/row_stage.py); UPCAST of the row axis (a BEAM round-1 candidate) made
  the lanes share it, lane 1 overwriting lane 0's row (row sums 1.06, 1.12, 0.35). The opt is refused; a winner cached before the rule
  falls back to the heuristic's opts"""
  import tinygrad.codegen.opt.search as search
  from tinygrad.codegen.opt import Opt, OptOps
  monkeypatch.setattr(search, "beam_search", lambda ast, renderer, width: [Opt(OptOps.UPCAST, 0, 2)])
  x = np.random.default_rng(0).standard_normal((6, 40)).astype(np.float32)
  with Context(BEAM=1, CACHELEVEL=0): got = Tensor(x).softmax(1).numpy()
  want = np.exp(x - x.max(1, keepdims=True))
  np.testing.assert_allclose(got, want / want.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
