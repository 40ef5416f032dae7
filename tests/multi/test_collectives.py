"""Collectives are graphs of COPY and ALU nodes: their values against numpy, and the number of copies each algorithm schedules."""
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.helpers import Context
from tinygrad.uop import Ops
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.schedule.collectives import allreduce, reduce_scatter, allgather

D2, D3 = ("CPU:1", "CPU:2"), ("CPU:1", "CPU:2", "CPU:3")
X = np.random.default_rng(1).standard_normal((6, 7)).astype(np.float32)

def copies(t:Tensor) -> int: return sum(it.kind == "copy" for it in create_schedule([t.uop])[0])

@pytest.mark.parametrize("ring", ["0", "1"], ids=["naive", "ring"])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_allreduce_values(ring, op):
  x = Tensor(X).shard(D3, 0).realize()
  with Context(RING=int(ring)): out = getattr(x, op)(0).realize()
  assert out.device == D3 and out.uop.axis is None
  np.testing.assert_allclose(out.numpy(), getattr(X, op)(0), rtol=1e-5)
  for i, d in enumerate(D3):  # every device holds the whole result
    np.testing.assert_allclose(Tensor(out.uop.src[i]).numpy(), getattr(X, op)(0), rtol=1e-5)

def test_ring_moves_chunks_naive_moves_pieces():
  x = Tensor(X).shard(D3, 0).realize()
  with Context(RING=0): assert copies(x.sum(0)) == 3 * 2   # every device copies the 2 other partial sums
  with Context(RING=1): assert copies(x.sum(0)) == 3 * 2 + 3 * 2  # reduce-scatter: 3 chunks, 2 hops each; allgather: the same

@Context(RING=-1, RING_ALLREDUCE_THRESHOLD=7)
def test_allreduce_chosen_by_size():
  assert copies(Tensor(X).shard(D3, 0).realize().sum(0)) == 12     # 7 elements: big enough for the ring
  assert copies(Tensor(X).shard(D3, 0).realize().sum((0, 1))) == 6  # 1 element: naive
  assert copies(Tensor(X).shard(D2, 0).realize().sum(0)) == 2     # two devices: the ring saves nothing

@Context(RING=1)
def test_ring_with_fewer_elements_than_devices_falls_back():
  x = Tensor(X[:, :1].copy()).shard(D3, 0).realize()
  np.testing.assert_allclose(x.sum(0).numpy(), X[:, :1].sum(0), rtol=1e-5)

def test_reduce_scatter_and_allgather():
  parts = [Tensor(X[i], device=d).realize() for i, d in enumerate(D3)]  # one (7,) piece per device
  chunks = reduce_scatter(Ops.ADD, [p.uop for p in parts])
  total, ends = X[:3].sum(0), [0, 3, 5, 7]
  for c, (chunk, d) in enumerate(zip(chunks, D3)):
    assert chunk.device == d
    np.testing.assert_allclose(Tensor(chunk).numpy(), total[ends[c]:ends[c+1]], rtol=1e-5)
  whole = allgather(chunks, 0, "CPU:2")
  assert whole.device == "CPU:2"
  np.testing.assert_allclose(Tensor(whole).numpy(), total, rtol=1e-5)
  for d, got in zip(D3, allreduce(Ops.MAX, [p.uop for p in parts])):
    assert got.device == d
    np.testing.assert_allclose(Tensor(got).numpy(), X[:3].max(0))

def test_window_of_the_shard_axis_copies_only_its_rows():
  x = Tensor(X).shard(D3, 0).realize()  # rows 0-1, 2-3, 4-5
  assert copies(x[0]) == 2            # row 0 from CPU:1 to the two others
  assert copies(x[1:4, 2:5]) == 2 * 2  # rows 1-3 live on CPU:1 and CPU:2: each device gets the part it lacks
  np.testing.assert_allclose(x[1:4, 2:5].numpy(), X[1:4, 2:5])
  np.testing.assert_allclose(x[5].numpy(), X[5])
