"""Gradients, in-place writes and setitem on sharded tensors, against numpy and the same program on one device: a sharded parameter
realized before backward (an optimizer realizes its parameters), a write whose value is laid out differently from the target and
reads it, and writes into a window of the shard axis (each device writes the rows its piece holds)."""
import numpy as np
import pytest
from tinygrad import Tensor, nn, Context

DEVS = {2: ("CPU:1", "CPU:2"), 3: ("CPU:1", "CPU:2", "CPU:3")}
RNG = np.random.default_rng(1)
X = RNG.standard_normal((5, 7)).astype(np.float32)
Y = RNG.standard_normal((5, 7)).astype(np.float32)
B = RNG.standard_normal((4, 7)).astype(np.float32)

@pytest.fixture(params=[2, 3], ids=["2dev", "3dev"])
def devs(request): return DEVS[request.param]

@pytest.fixture(params=[0, 1], ids=["axis0", "axis1"])
def axis(request): return request.param

def close(t:Tensor, ref:np.ndarray): np.testing.assert_allclose(t.numpy(), ref, rtol=1e-5, atol=1e-5)

# *** gradients of sharded tensors realized before backward ***

def test_optimizer_param_gets_grad_and_steps(devs, axis):
  # SGD sets requires_grad and realizes its parameters: d(sum(B @ w.T))/dw = ones @ B, summed over B's rows
  w = Tensor(X).shard(devs, axis)
  opt = nn.optim.SGD([w], lr=0.1)
  (Tensor(B).to(devs) @ w.T).sum().backward()
  close(w.grad, np.broadcast_to(B.sum(0), X.shape))
  with Context(TRAINING=1): opt.step()
  close(w, X - 0.1 * B.sum(0))

def test_requires_grad_then_realize(devs, axis):
  w = Tensor(X).shard(devs, axis)
  w.requires_grad = True
  w.realize()
  (w * w).sum().backward()
  close(w.grad, 2 * X)

def test_realized_intermediate_of_lazy_sharded_leaf(devs, axis):
  # the leaf's pieces are realized with y: the gradient still reaches the leaf, as it does on one device
  t = Tensor(X).shard(devs, axis)
  t.requires_grad = True
  y = t * t
  y.realize()
  y.sum().backward()
  close(t.grad, 2 * X)

def test_realized_lazy_copy_leaf_on_one_device():
  t = Tensor(X).to("CPU:1")
  t.requires_grad = True
  y = t.exp()
  y.realize()
  y.sum().backward()
  close(t.grad, np.exp(X))

# *** assign whose value is laid out differently and reads the target ***

@pytest.mark.parametrize("target_axis,value_axis", [(0, 1), (1, 0)])
def test_assign_value_on_other_axis_reads_target(devs, target_axis, value_axis):
  t = Tensor(X).shard(devs, target_axis).realize()
  t.assign(Tensor(Y).shard(devs, value_axis) + t)
  close(t, X + Y)

@pytest.mark.parametrize("axis", [0, None])
def test_assign_value_gathered_from_target(devs, axis):
  t = Tensor(X).shard(devs, axis).realize()
  t.assign(Tensor(Y).shard(devs, 1) + t.to(devs[0]).to(devs))
  close(t, X + Y)

def test_assign_flip_of_shard_axis_writes_the_same_buffers(devs):
  t = Tensor(X).shard(devs, 1).realize()
  pieces = t.uop
  t.assign(t.flip(1) * 2)
  close(t, X[:, ::-1] * 2)
  close(Tensor(pieces), X[:, ::-1] * 2)

# *** setitem and assign into windows of the shard axis ***

def _write(name, t, a, devs, axis):
  """the write `name` on tensor t and on numpy array a"""
  full = lambda shape, v: Tensor(np.full(shape, v, np.float32)).to(devs)
  if name == "row": t[0] = 7.0; a[0] = 7.0
  elif name == "last_row": t[-1] = 7.0; a[-1] = 7.0
  elif name == "element": t[2, 3] = 7.0; a[2, 3] = 7.0
  elif name == "rows": t[1:3] = 7.0; a[1:3] = 7.0
  elif name == "rows_value": t[0:2] = Tensor(Y[:2]).to(devs); a[0:2] = Y[:2]
  elif name == "rows_sharded_value": t[1:4] = Tensor(Y[:3]).shard(devs, axis); a[1:4] = Y[:3]
  elif name == "columns": t[:, 1:4] = 7.0; a[:, 1:4] = 7.0
  elif name == "row_vector": t[2] = Tensor(Y[0]).to(devs); a[2] = Y[0]
  elif name == "assign_view": t[1:3].assign(full((2, 7), 9.0)); a[1:3] = 9.0
  elif name == "reads_target": t[1:4] = t[0:3] * 2; a[1:4] = a[0:3] * 2
  elif name == "transposed": t.T[2:5].assign(full((3, 5), 9.0)); a.T[2:5] = 9.0
  elif name == "in_place_add": t[1:3] += 1; a[1:3] += 1

# the writes whose window cuts the shard axis, per axis
WRITES = [(0, n) for n in ("row", "last_row", "element", "rows", "rows_value", "rows_sharded_value", "row_vector", "assign_view",
                           "reads_target", "in_place_add")] + [(1, n) for n in ("columns", "element", "transposed")]

@pytest.mark.parametrize("axis,name", WRITES)
def test_write_into_window(devs, axis, name):
  t, a = Tensor(X).shard(devs, axis).realize(), X.copy()
  pieces = t.uop
  _write(name, t, a, devs, axis)
  close(t, a)
  close(Tensor(pieces), a)  # written in place: every device's own buffer

def test_write_through_flat_view_of_row_shards(devs):
  t, a = Tensor(X).shard(devs, 0).realize(), X.copy()
  t.reshape(35)[10:20].assign(Tensor(np.full(10, 9.0, np.float32)).to(devs))
  a.reshape(35)[10:20] = 9.0
  close(t, a)

def test_write_through_view_that_interleaves_shards_is_refused(devs):
  t = Tensor(X).shard(devs, 1).realize()
  with pytest.raises(RuntimeError, match="cannot write through a RESHAPE .* across the shard axis 1"):
    t.reshape(35)[10:20].assign(Tensor(np.full(10, 9.0, np.float32)).to(devs))
  close(t, X)

@pytest.mark.parametrize("shard_axis", [None, 0, 1])
def test_setitem_through_a_view_handle_writes_the_tensor(devs, shard_axis):
  # x.T[2] = v: setitem on a view's handle of a realized sharded tensor wrote a copy of its own (the view was realized first), silently
  t, a = Tensor(X).shard(devs, shard_axis).realize(), X.copy()
  t.T[2] = 1.0
  a.T[2] = 1.0
  close(t, a)
  if shard_axis == 1: return  # a flat view interleaves the pieces: refused (below)
  t.reshape(35)[3:5] = 7.0
  a.reshape(35)[3:5] = 7.0
  close(t, a)

@pytest.mark.parametrize("shard_axis", [None, 0, 1])
def test_setitem_of_a_one_device_value(devs, shard_axis):
  # tinygrad's t[1:4] = Tensor.ones(3, 4) on a sharded t: the value is copied to t's devices (it raised "assign needs the same device")
  t, a = Tensor(X).shard(devs, shard_axis).realize(), X.copy()
  t[1:4, 2:5] = Tensor(B[:3, :3])
  a[1:4, 2:5] = B[:3, :3]
  close(t, a)

def test_setitem_through_a_view_that_interleaves_shards_is_refused(devs):
  t = Tensor(X).shard(devs, 1).realize()
  with pytest.raises(RuntimeError, match="cannot write through a RESHAPE .* across the shard axis 1"):
    t.reshape(35)[10:20] = 9.0
  close(t, X)

@pytest.mark.parametrize("n, window", [(2, 0), (2, slice(0, 1)), (4, slice(0, 2)), (6, slice(0, 3)), (4, slice(2, 4)), (7, slice(0, 4))])
@pytest.mark.parametrize("devs", [("CPU:0", "CPU:1"), ("CPU:0", "CPU:1", "CPU:2")], ids=["2dev", "3dev"])
def test_setitem_over_a_whole_piece_of_a_1d_tensor(devs, n, window):
  """a window of a 1-D sharded tensor covering one device's whole piece, sharded from the default device (whose piece is a view of
  the source buffer): the copy of the written piece read a view of part of a buffer, an internal error ("SHRINK ... was not realized")"""
  n = max(n, len(devs))  # a piece of one element at least on each device
  x, ref = Tensor(np.arange(n, dtype=np.float32)).shard(devs, 0).realize(), np.arange(n, dtype=np.float32)
  x[window] = 9.0; ref[window] = 9.0
  x[window] += 1; ref[window] += 1
  close(x, ref)
