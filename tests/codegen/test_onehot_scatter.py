"""The gradient of a gather (an embedding, X[idx], gather along an axis) is a one-hot sum over an output range, lowered as a scatter-add
(codegen/onehot_scatter.py): numpy's np.add.at is the oracle, bit for bit where both add in the ids' order; ids repeated, negative and
out of range; and the kernel moves a few bytes per id and row, not vocab x ids x width (the dense sum coming back fails the byte check)."""
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes, nn
from tinygrad.helpers import Context, GlobalCounters
from tinygrad.uop import Ops
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program

def grad_and_bytes(w:Tensor, loss:Tensor) -> tuple[np.ndarray, int]:
  loss.backward()
  GlobalCounters.reset()
  w.grad.realize()
  return w.grad.numpy(), GlobalCounters.global_mem

def dense_bytes(vocab:int, ids:int, width:int, itemsize:int) -> int: return vocab * ids * width * itemsize  # the sum as written reads this

@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("id_shape", [(40,), (5, 8)])
def test_embedding_gradient_is_numpys_add_at(device, dtype, id_shape):
  rng = np.random.default_rng(0)
  V, D = 53, 24
  ids = rng.integers(0, V, id_shape).astype(np.int32)
  ids.flat[:6] = [7, 7, 0, V - 1, 7, 0]  # repeats and both ends
  w0, g = rng.standard_normal((V, D)).astype(dtype), rng.standard_normal(id_shape + (D,)).astype(dtype)
  w = Tensor(w0, device=device, requires_grad=True)
  got, moved = grad_and_bytes(w, (w[Tensor(ids, device=device)] * Tensor(g, device=device)).sum())
  want = np.zeros_like(w0)
  np.add.at(want, ids, g)
  np.testing.assert_array_equal(got, want)
  assert moved < dense_bytes(V, ids.size, D, w0.itemsize) / 4, f"{moved} bytes moved: the dense one-hot sum is back"

def test_negative_and_out_of_range_ids_follow_the_forward(device):
  # X[idx] wraps -V..-1 and reads nothing past either end; nn.Embedding matches only 0..V-1: each gradient drops what its forward dropped
  rng = np.random.default_rng(1)
  V, D = 17, 8
  ids = np.array([[0, -1, 16, 17], [-17, -18, 5, 5], [40, -3, -1, 3]], dtype=np.int32)
  g = rng.standard_normal(ids.shape + (D,)).astype(np.float32)
  w = Tensor(rng.standard_normal((V, D)).astype(np.float32), device=device, requires_grad=True)
  got, _ = grad_and_bytes(w, (w[Tensor(ids, device=device)] * Tensor(g, device=device)).sum())
  keep = (ids >= -V) & (ids < V)
  want = np.zeros((V, D), np.float32)
  np.add.at(want, np.where(ids < 0, ids + V, ids)[keep], g[keep])
  np.testing.assert_array_equal(got, want)
  emb = nn.Embedding(V, D)
  emb.weight = Tensor(emb.weight.numpy(), device=device, requires_grad=True)
  got, _ = grad_and_bytes(emb.weight, (emb(Tensor(ids, device=device)) * Tensor(g, device=device)).sum())
  keep = (ids >= 0) & (ids < V)
  want = np.zeros((V, D), np.float32)
  np.add.at(want, ids[keep], g[keep])
  np.testing.assert_array_equal(got, want)

def test_ids_are_added_in_order(device):
  # 1e8 + 1 rounds back to 1e8 in float32: in id order the column sums to 0, where pairing the terms otherwise would give 1
  vals = np.array([1e8, 1, -1e8, 3], dtype=np.float32)
  ids = np.array([2, 2, 2, 0], dtype=np.int32)
  w = Tensor.zeros(20, 16, device=device, requires_grad=True).contiguous()
  got, moved = grad_and_bytes(w, (w[Tensor(ids, device=device)] * Tensor(np.repeat(vals[:, None], 16, 1), device=device)).sum())
  want = np.zeros((20, 16), np.float32)
  np.add.at(want, ids, np.repeat(vals[:, None], 16, 1))
  np.testing.assert_array_equal(got, want)
  assert got[2, 0] == 0 and got[0, 0] == 3
  assert moved < dense_bytes(20, 4, 16, 4) / 2, f"{moved} bytes moved: the dense one-hot sum is back"

def test_gather_gradient_along_each_axis(device):
  # the id varies along the other output axis too: each column scatters into its own rows
  rng = np.random.default_rng(2)
  x = rng.standard_normal((23, 19)).astype(np.float32)
  for dim, idx in ((0, rng.integers(0, 23, (9, 19))), (1, rng.integers(0, 19, (23, 6)))):
    g = rng.standard_normal(idx.shape).astype(np.float32)
    w = Tensor(x, device=device, requires_grad=True)
    got, moved = grad_and_bytes(w, (w.gather(dim, Tensor(idx.astype(np.int32), device=device)) * Tensor(g, device=device)).sum())
    want = np.zeros_like(x)
    rows, cols = np.indices(idx.shape)
    np.add.at(want, (idx, cols) if dim == 0 else (rows, idx), g)
    np.testing.assert_array_equal(got, want)
    assert moved < dense_bytes(x.shape[dim], idx.size, 1, 4) / 2, f"{moved} bytes moved: the dense one-hot sum is back"

def test_a_weighted_bincount(device):
  # no output axis besides the one-hot one: one serial pass without work items; targets with work items keep the sum over a grid
  rng = np.random.default_rng(3)
  ids, x = rng.integers(0, 300, 500).astype(np.int32), rng.standard_normal(500).astype(np.float32)
  onehot = Tensor.arange(300, device=device).unsqueeze(1) == Tensor(ids, device=device).unsqueeze(0)
  GlobalCounters.reset()
  got = onehot.where(Tensor(x, device=device).unsqueeze(0), 0).sum(1).realize()
  moved = GlobalCounters.global_mem
  want = np.zeros(300, np.float32)
  np.add.at(want, ids, x)
  np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
  if device.startswith("CPU"): assert moved < dense_bytes(300, 500, 1, 4) / 4, f"{moved} bytes moved: the dense one-hot sum is back"

def test_a_row_is_updated_only_where_its_id_lands():
  # the row's load and store are gated (a branch around the update, in which the clamp of the address folds away): adding the identity
  # to a clamped row on every trip (a select of the value, a clamp each address waited on) took 1.5-2.4x the time; ids past either end
  ids, x = np.array([3, -1, 299, 300, 7, 3, -300, 2**31 - 1], np.int32), np.arange(8, dtype=np.float32)
  got = (Tensor.arange(300).unsqueeze(1) == Tensor(ids).realize().unsqueeze(0)).where(Tensor(x).realize().unsqueeze(0), 0).sum(1)
  items, _ = create_schedule([got.uop])
  (spec,) = [get_program(it.ast, Device["CPU"].renderer) for it in items if it.kind == "kernel"]
  assert Ops.IF in [u.op for u in spec.uops] and Ops.WHERE not in [u.op for u in spec.uops]
  want = np.zeros(300, np.float32)
  keep = (ids >= 0) & (ids < 300)
  np.add.at(want, ids[keep], x[keep])
  np.testing.assert_array_equal(got.numpy(), want)

def test_shared_over_threads_and_untouched_by_beam():
  # big enough for the CPU cores to share the width; BEAM finds the kernel's opts fixed and leaves the serial loop over ids alone
  rng = np.random.default_rng(4)
  V, N, D = 300, 2000, 64
  ids, g = rng.integers(0, V, N).astype(np.int32), rng.standard_normal((N, D)).astype(np.float32)
  want = np.zeros((V, D), np.float32)
  np.add.at(want, ids, g)
  for ctx in ({"THREADS": 2}, {"THREADS": 2, "BEAM": 1}):
    with Context(**ctx):
      w = Tensor(rng.standard_normal((V, D)).astype(np.float32), requires_grad=True)
      got, moved = grad_and_bytes(w, (w[Tensor(ids)] * Tensor(g)).sum())
    np.testing.assert_array_equal(got, want)
    assert moved < dense_bytes(V, N, D, 4) / 16

@pytest.mark.hcq_matrix
def test_work_items_share_the_width(device):
  # on targets with work items the width is the grid (groups of up to 32 neighbouring columns), each item running the ids in order
  rng = np.random.default_rng(5)
  ids, g = rng.integers(0, 20, 30).astype(np.int32), rng.standard_normal((30, 64)).astype(np.float32)
  w = Tensor(rng.standard_normal((20, 64)).astype(np.float32), device=device, requires_grad=True)
  got, moved = grad_and_bytes(w, (w[Tensor(ids, device=device)] * Tensor(g, device=device)).sum())
  want = np.zeros((20, 64), np.float32)
  np.add.at(want, ids, g)
  np.testing.assert_array_equal(got, want)
  assert moved < dense_bytes(20, 30, 64, 4) / 4

def test_few_rows_keep_the_dense_sum():
  # 10 rows: the dense sum's passes over the ids vectorize; the values are the same either way
  ids, x = np.array([3, 1, 3, 3, 0, 9], dtype=np.int32), np.arange(6, dtype=np.float32)
  got = (Tensor.arange(10).unsqueeze(1) == Tensor(ids).unsqueeze(0)).where(Tensor(x).unsqueeze(0), 0).sum(1).numpy()
  np.testing.assert_array_equal(got, np.bincount(ids, weights=x, minlength=10).astype(np.float32))

def test_an_int_sum_scatters_too():
  # counts as int32: the scatter works in the output's dtype, as the sum did
  ids = np.array([3, 1, 3, 3, 0, 19], dtype=np.int32)
  onehot = (Tensor.arange(20).unsqueeze(1) == Tensor(ids).unsqueeze(0)).unsqueeze(-1)  # (vocab, ids, 1)
  got = onehot.where(Tensor(np.arange(18, dtype=np.int32).reshape(6, 3)).unsqueeze(0), 0).sum(1).numpy()
  want = np.zeros((20, 3), np.int32)
  np.add.at(want, ids, np.arange(18, dtype=np.int32).reshape(6, 3))
  np.testing.assert_array_equal(got, want)

def test_ids_and_values_the_compiler_proves_constant():
  # uint8 ids >> 10 are all 0, and the value is a 1: the scatter's add depended on no step of its loop and ran once (a count of 1, not 12)
  a = np.array([[0, 255, 0, 255, 0, 1, 7, 200, 255, 3, 9, 9]], np.uint8)
  ids = Tensor(a).cast(dtypes.int32) >> 10
  onehot = ids.unsqueeze(2) == Tensor.arange(16).reshape(1, 1, 16)
  got = onehot.where(Tensor.ones(1, 12, 1, dtype=dtypes.int32), 0).sum(1).numpy()
  np.testing.assert_array_equal(got, np.eye(16, dtype=np.int32)[:1] * 12)

@pytest.mark.parametrize("op", ["prod", "max"])
def test_products_and_maxima_fold_in_place(device, op):
  # scatter_reduce's folds: the rows start at the op's identity (1, the lowest value) and each id folds its value in, as np.ufunc.at
  rng = np.random.default_rng(6)
  ids, x = rng.integers(0, 40, (50, 1)).astype(np.int32), rng.uniform(0.5, 1.5, (50, 8)).astype(np.float32)
  onehot = Tensor.arange(40, device=device).reshape(1, 40, 1) == Tensor(ids, device=device).unsqueeze(1)  # (ids, rows, 1)
  xs = Tensor(x, device=device).unsqueeze(1)
  GlobalCounters.reset()
  got = (onehot.where(xs, 1).prod(0) if op == "prod" else onehot.where(xs, -np.inf).max(0)).realize()
  moved = GlobalCounters.global_mem
  want = np.full((40, 8), 1 if op == "prod" else -np.inf, np.float32)
  (np.multiply if op == "prod" else np.maximum).at(want, ids[:, 0], x)
  np.testing.assert_array_equal(got.numpy(), want)
  assert moved < dense_bytes(40, 50, 8, 4) / 4, f"{moved} bytes moved: the dense one-hot fold is back"

def test_a_fill_other_than_the_identity_stays_dense():
  # max(where(id == row, x, 5)): rows no id reaches are 5, not the lowest value, so the fold cannot start from the identity
  ids, x = np.array([3, 1, 3, 30], dtype=np.int32), np.array([1, 9, 7, 2], dtype=np.float32)
  got = (Tensor.arange(32).unsqueeze(1) == Tensor(ids).unsqueeze(0)).where(Tensor(x).unsqueeze(0), 5).max(1).numpy()
  want = np.full(32, 5, np.float32)
  np.maximum.at(want, ids, x)
  np.testing.assert_array_equal(got, want)

def test_no_ids_leave_the_identity():
  # an empty fold: every row is the identity (the scatter's loop of no trips must not fold into one)
  onehot = Tensor.zeros(0, 2, dtype=dtypes.int32).unsqueeze(1) == Tensor.arange(20).reshape(1, 20, 1)
  np.testing.assert_array_equal(onehot.where(Tensor.ones(0, 2).unsqueeze(1), 0).sum(0).numpy(), np.zeros((20, 2), np.float32))
  np.testing.assert_array_equal(onehot.where(Tensor.ones(0, 2).unsqueeze(1), 1).prod(0).numpy(), np.ones((20, 2), np.float32))

def test_an_outer_axis_as_long_as_the_shares():
  # 8 rows shared out over 8 shares (2 threads x 4): each share is one row, a thread range and no block loop of one trip
  rng = np.random.default_rng(7)
  x, idx = rng.standard_normal((8, 4000)).astype(np.float32), rng.integers(0, 4000, (8, 62000)).astype(np.int32)
  g = rng.standard_normal(idx.shape).astype(np.float32)
  import tinygrad.codegen.opt.heuristic  # noqa: F401  (defines THREADS)
  with Context(THREADS=2):
    w = Tensor(x, requires_grad=True)
    got, moved = grad_and_bytes(w, (w.gather(1, Tensor(idx)) * Tensor(g)).sum())
  want = np.zeros_like(x)
  np.add.at(want, (np.indices(idx.shape)[0], idx), g)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
  assert moved < dense_bytes(4000, idx.size, 1, 4) / 16
