"""The implicit-broadcast rule for the shard axis: a broadcast source keeps its own rank and its shard axis lines up with the output from
the right; a source that is broadcast along the output's shard axis (or has no such axis) stays whole on every device."""
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop import Ops
from tinygrad.uop.multi import source_axis, split_sizes, reshape_shard
from tinygrad.schedule.multi import push_multi

D2, D3 = ("CPU:1", "CPU:2"), ("CPU:1", "CPU:2", "CPU:3")
A4 = np.arange(4, dtype=np.float32)
R14 = np.arange(10, 14, dtype=np.float32).reshape(1, 4)

def pieces(t:Tensor) -> list:
  """each device's piece as the multi pass builds it"""
  m = push_multi(t.uop.sink()).src[0]
  assert m.op is Ops.MULTI
  return list(m.src)

def test_source_axis_table():
  assert source_axis(1, 2, (4,)) == 0          # (4,) into (1, 4): its axis 0 is the output's axis 1
  assert source_axis(0, 2, (4,)) is None       # (4,) has no axis for the output's axis 0: whole on every device
  assert source_axis(0, 2, (1, 4)) is None     # broadcast along the shard axis: whole
  assert source_axis(1, 3, (3, 1)) == 0
  assert source_axis(2, 3, (5, 1, 7)) == 2

def test_split_sizes_balanced():
  assert split_sizes(7, 3) == (3, 2, 2) and split_sizes(5, 2) == (3, 2) and split_sizes(4, 3) == (2, 1, 1) and split_sizes(6, 3) == (2, 2, 2)

def test_reshape_shard_table():
  assert reshape_shard((4, 6), (24,), 0, (2, 2)) == (0, (12, 12))
  assert reshape_shard((4, 6), (4, 2, 3), 1, (3, 3)) == (1, (1, 1))
  assert reshape_shard((4, 6), (4, 1, 6), 1, (3, 3)) == (2, (3, 3))
  assert reshape_shard((4, 6), (24,), 1, (3, 3)) is None  # each device's columns are not one block of the flat axis

def test_rank1_sharded_plus_replicated_row_is_sharded_on_axis_1():
  out = Tensor(A4).shard(D2, 0) + Tensor(R14).to(D2)
  assert out.shape == (1, 4) and out.uop.axis == 1 and out.shard_sizes == (2, 2)
  assert [p.shape for p in pieces(out)] == [(1, 2), (1, 2)]
  np.testing.assert_allclose(out.numpy(), A4 + R14)

def test_uneven_rank1_into_matrix():
  b = np.arange(21, dtype=np.float32).reshape(3, 7)
  out = Tensor(np.arange(7, dtype=np.float32)).shard(D3, 0) * Tensor(b).to(D3)
  assert out.uop.axis == 1 and out.shard_sizes == (3, 2, 2)
  assert [p.shape for p in pieces(out)] == [(3, 3), (3, 2), (3, 2)]
  np.testing.assert_allclose(out.numpy(), np.arange(7) * b)

def test_broadcast_source_stays_whole():
  # (6, 4) sharded on rows plus a replicated (4,) bias: the bias is broadcast along the shard axis, so every device reads all of it
  x = np.arange(24, dtype=np.float32).reshape(6, 4)
  out = Tensor(x).shard(D3, 0) + Tensor(A4).to(D3)
  assert out.uop.axis == 0
  for p in pieces(out):
    assert p.op is Ops.ADD and p.shape == (2, 4)
    assert any(s.shape == (4,) for s in p.src), [s.shape for s in p.src]  # the whole bias, not a slice of it
  np.testing.assert_allclose(out.numpy(), x + A4)

def test_column_vector_sharded_on_rows():
  c = np.arange(3, dtype=np.float32).reshape(3, 1)
  out = Tensor(c).shard(D3, 0) + Tensor(np.ones((3, 4), np.float32)).to(D3)
  assert out.uop.axis == 0 and [p.shape for p in pieces(out)] == [(1, 4)] * 3
  np.testing.assert_allclose(out.numpy(), c + np.ones((3, 4)))

def test_lower_rank_sharded_into_higher_rank():
  x = np.arange(14, dtype=np.float32).reshape(2, 7)
  y = np.arange(35, dtype=np.float32).reshape(5, 1, 7)
  out = Tensor(x).shard(D3, 1) - Tensor(y).to(D3)
  assert out.shape == (5, 2, 7) and out.uop.axis == 2 and out.shard_sizes == (3, 2, 2)
  np.testing.assert_allclose(out.numpy(), x - y)

def test_gradient_of_broadcast_source_keeps_its_shard():
  a = Tensor(A4).shard(D2, 0).realize().requires_grad_()
  w = np.arange(12, dtype=np.float32).reshape(3, 4)
  (a * Tensor(w).to(D2)).sum().backward()
  assert a.grad.shape == (4,) and a.grad.device == D2
  np.testing.assert_allclose(a.grad.numpy(), w.sum(0))

@pytest.mark.parametrize("devs", [D2, D3])
def test_both_sharded_rank_mismatch(devs):
  # a (4,) sharded on 0 and a (3, 4) sharded on 1 agree after right alignment: no resharding
  b = np.arange(12, dtype=np.float32).reshape(3, 4)
  out = Tensor(A4).shard(devs, 0) + Tensor(b).shard(devs, 1)
  assert out.uop.axis == 1
  # the only copies are the shards' own (each piece from CPU to its device): nothing is moved again to line the sources up
  assert sum(u.op is Ops.COPY for u in push_multi(out.uop.sink()).toposort()) == 2 * len(devs)
  np.testing.assert_allclose(out.numpy(), A4 + b)
