"""A one-hot sum (where(r == e, v, 0) summed over r) is lowered as a gather: same values as numpy's indexing, including indices out of
bounds (0, as the sum gives) and negative ones, and the kernel reads one row per index instead of every row. A comparison whose range
side is cast to a type that wraps is not a one-hot pick and stays a sum."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes, nn
from tinygrad.helpers import GlobalCounters

def bytes_moved(fn):
  GlobalCounters.reset()
  out = fn()
  return out, GlobalCounters.global_mem

def test_batch_of_rows_reads_only_those_rows(device):
  rng = np.random.default_rng(0)
  x, idx = rng.standard_normal((1437, 64), dtype=np.float32), rng.integers(-1437, 1437, 128).astype(np.int32)
  X, I = Tensor(x, device=device).realize(), Tensor(idx, device=device).realize()
  out, moved = bytes_moved(lambda: X[I].numpy())
  np.testing.assert_array_equal(out, x[idx])
  assert moved < 4 * x[idx].nbytes, f"{moved} bytes moved for a {x[idx].nbytes}-byte gather: the sum over all 1437 rows is still there"

def test_out_of_bounds_indices_pick_zero():
  v = np.arange(10, dtype=np.float32) + 1
  e = np.array([-20, -1, 0, 9, 10, 57], dtype=np.int32)
  onehot = (Tensor.arange(10).unsqueeze(0) == Tensor(e).unsqueeze(1))
  got = onehot.where(Tensor(v).unsqueeze(0), 0).sum(1).numpy()
  np.testing.assert_array_equal(got, [0, 0, 1, 10, 0, 0])  # by hand: only 0 and 9 are in 0..9

def test_integer_values_and_an_embedding():
  rng = np.random.default_rng(1)
  y, idx = rng.integers(0, 10, 300).astype(np.int32), rng.integers(0, 300, (4, 7)).astype(np.int32)
  np.testing.assert_array_equal(Tensor(y)[Tensor(idx)].numpy(), y[idx])
  emb = nn.Embedding(50, 8)
  tok = rng.integers(0, 50, (3, 5)).astype(np.int32)
  np.testing.assert_allclose(emb(Tensor(tok)).numpy(), emb.weight.numpy()[tok], rtol=0, atol=0)

def test_a_further_condition_on_the_range_still_applies():
  v, e = np.arange(8, dtype=np.float32) * 10, np.array([1, 3, 6, 7], dtype=np.int32)
  r = Tensor.arange(8).unsqueeze(0)
  got = ((r == Tensor(e).unsqueeze(1)) & (r < 5)).where(Tensor(v).unsqueeze(0), 0).sum(1).numpy()
  np.testing.assert_array_equal(got, [10, 30, 0, 0])

def test_a_wrapping_cast_is_not_a_gather():
  # int8(r) == e matches r and r + 256 when 300 values wrap: a sum of two rows, not a pick of one
  v, e = np.arange(300, dtype=np.float32), np.array([0, 20, 43, 100], dtype=np.int8)
  r = Tensor.arange(300).cast(dtypes.int8).unsqueeze(0)
  got = (r == Tensor(e).unsqueeze(1)).where(Tensor(v).unsqueeze(0), 0).sum(1).numpy()
  want = [(v * (np.arange(300).astype(np.int8) == k)).sum() for k in e]
  np.testing.assert_array_equal(got, want)

@pytest.mark.parametrize("ignore_index", [-1, 3])
def test_cross_entropy_picks_its_class_term(ignore_index):
  rng = np.random.default_rng(2)
  logits, y = rng.standard_normal((16, 10), dtype=np.float32), rng.integers(0, 10, 16).astype(np.int32)
  got = Tensor(logits).sparse_categorical_crossentropy(Tensor(y), ignore_index=ignore_index).numpy()
  logp = logits - logits.max(1, keepdims=True)
  logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
  keep = y != ignore_index
  np.testing.assert_allclose(got, -logp[np.arange(16), y][keep].mean(), rtol=1e-5)

def test_embedding_rows_repeats_ends_and_gradient():
  # odd sizes, ids repeated, 0 and vocab-1, a 2-D batch; the gradient of a lookup is a scatter-add: numpy's np.add.at
  rng = np.random.default_rng(3)
  emb = nn.Embedding(37, 5)
  emb.weight.requires_grad = True
  tok = np.array([[0, 36, 7, 7], [36, 0, 0, 19], [7, 7, 7, 7]], dtype=np.int32)
  out, w = emb(Tensor(tok)), emb.weight.numpy()
  g = rng.standard_normal((3, 4, 5)).astype(np.float32)
  (out * Tensor(g)).sum().backward()
  np.testing.assert_array_equal(out.numpy(), w[tok])
  want = np.zeros_like(w)
  np.add.at(want, tok, g)
  np.testing.assert_allclose(emb.weight.grad.numpy(), want, rtol=1e-6, atol=1e-6)

def test_tensor_index_2d_negative_and_out_of_range_ids():
  # x[idx] with a 2-D int32 idx: -k counts from the end like numpy; past either end (tinygrad's rule) is a row of zeros
  rng = np.random.default_rng(4)
  x = rng.standard_normal((11, 3)).astype(np.float32)
  idx = np.array([[0, -1, 10], [-11, 5, 5]], dtype=np.int32)
  np.testing.assert_array_equal(Tensor(x)[Tensor(idx)].numpy(), x[idx])
  far = np.array([11, -12, 3, 40], dtype=np.int32)
  np.testing.assert_array_equal(Tensor(x)[Tensor(far)].numpy(), np.where(((far >= -11) & (far < 11))[:, None], x[np.clip(far, -11, 10)], 0))
  # a non-contiguous source: the transposed view's rows
  np.testing.assert_array_equal(Tensor(x.T.copy()).T[Tensor(idx)].numpy(), x[idx])

def test_gather_along_each_axis():
  rng = np.random.default_rng(5)
  x = rng.standard_normal((4, 7)).astype(np.float32)
  i0, i1 = rng.integers(0, 4, (3, 7)).astype(np.int32), rng.integers(0, 7, (4, 9)).astype(np.int32)
  np.testing.assert_array_equal(Tensor(x).gather(0, Tensor(i0)).numpy(), np.take_along_axis(x, i0, 0))
  np.testing.assert_array_equal(Tensor(x).gather(1, Tensor(i1)).numpy(), np.take_along_axis(x, i1, 1))

def test_an_axis_arange_is_built_once():
  # indexing builds an arange of the axis on every call: the same graph node for the same device, size and dtype (0.3 ms of python)
  x = Tensor.ones(4, 4)
  assert x._arange(32000).uop is Tensor.zeros(2)._arange(32000).uop
  np.testing.assert_array_equal(x._arange(13).numpy(), np.arange(13))
  assert x._arange(13, dtypes.int16).dtype is dtypes.int16

def test_gather_from_a_long_row_reads_only_the_picked_elements():
  # a row of 1M splits into chunks (schedule/split_reduce.py) before codegen sees the one-hot sum: each chunk compares chunk * p + r, not
  # r, with the index, and must still collapse to a load instead of 100 x 1M compares and adds (0.9 GB moved)
  rng = np.random.default_rng(6)
  x = rng.standard_normal(1 << 20).astype(np.float32)
  idx = np.concatenate([[0, (1 << 19) - 1, 1 << 19, (1 << 20) - 1], rng.integers(0, 1 << 20, 96)]).astype(np.int32)
  X, I = Tensor(x).realize(), Tensor(idx).realize()
  for fn in (lambda: X[I].numpy(), lambda: X.gather(0, I).numpy()):
    out, moved = bytes_moved(fn)
    np.testing.assert_array_equal(out, x[idx])
    assert moved < 64 * 1024, f"{moved} bytes moved to pick 100 elements: the sum over the 1M row is still there"
  # negative ids count from the end, like numpy
  neg = np.array([-1, -(1 << 20), -5, 3, -(1 << 19)], dtype=np.int32)
  out, moved = bytes_moved(lambda: X[Tensor(neg)].numpy())
  np.testing.assert_array_equal(out, x[neg])
  assert moved < 64 * 1024, moved

def test_gather_along_a_long_second_axis():
  # 4 rows of 300000: 20 outputs, each row split in 12 chunks of 25000
  rng = np.random.default_rng(7)
  x = rng.standard_normal((4, 300_000)).astype(np.float32)
  idx = np.array([[0, 299_999, 24_999, 25_000, 150_000]] * 2 + [rng.integers(0, 300_000, 5)] * 2).astype(np.int32)
  X, I = Tensor(x).realize(), Tensor(idx).realize()
  out, moved = bytes_moved(lambda: X.gather(1, I).numpy())
  np.testing.assert_array_equal(out, np.take_along_axis(x, idx, 1))
  assert moved < 64 * 1024, f"{moved} bytes moved: the 20 x 300000 one-hot sum is still there"
