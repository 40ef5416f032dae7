"""Sharded tensors at the edges: creations laid out like a sharded tensor (each device holds its part), optimizer state of a sharded
parameter, values without elements, a 0-d tensor asked for a shard axis, and errors that name the call the user made."""
import numpy as np
import pytest
from tinygrad import Tensor, nn, dtypes, Context

DEVS = {2: ("CPU:1", "CPU:2"), 3: ("CPU:1", "CPU:2", "CPU:3")}
X = np.random.default_rng(2).standard_normal((5, 7)).astype(np.float32)

@pytest.fixture(params=[2, 3], ids=["2dev", "3dev"])
def devs(request): return DEVS[request.param]

LIKES = {"zeros_like": (lambda t: t.zeros_like(), 0.0), "ones_like": (lambda t: t.ones_like(), 1.0),
         "full_like": (lambda t: t.full_like(3, dtype=dtypes.int32), 3), "empty_like": (lambda t: t.empty_like(), None),
         "rand_like": (lambda t: t.rand_like(), None), "randn_like": (lambda t: t.randn_like(), None)}

@pytest.mark.parametrize("name", LIKES)
@pytest.mark.parametrize("axis", [0, 1])
def test_like_keeps_the_shard_axis(devs, axis, name):
  t = Tensor(X).shard(devs, axis)
  make, value = LIKES[name]
  r = make(t)
  assert r.device == devs and r.uop.axis == axis and r.shard_sizes == t.shard_sizes and r.shape == X.shape
  out = r.numpy()
  if value is not None: np.testing.assert_equal(out, np.full(X.shape, value))
  # random pieces differ: every device's stream starts from the same seed, so pieces drawn apart would repeat each other
  if name.startswith("rand"): assert len(np.unique(out)) == out.size

def test_like_with_requires_grad_and_other_device(devs):
  t = Tensor(X).shard(devs, 0)
  r = t.zeros_like(requires_grad=True)
  assert r.requires_grad and r.uop.axis == 0
  assert t.ones_like(device="CPU").device == "CPU"

def test_adam_state_of_sharded_param_is_sharded(devs):
  w, w1, b = Tensor(X).shard(devs, 0), Tensor(X), Tensor(X[:3])
  opts = [nn.optim.Adam([p], lr=0.1) for p in (w, w1)]
  for p, opt, x in zip((w, w1), opts, (b.to(devs), b)):
    for _ in range(2):
      opt.zero_grad()
      (x @ p.T).relu().sum().backward()
      with Context(TRAINING=1): opt.step()
  assert [m.uop.axis for m in opts[0].m + opts[0].v] == [0, 0]
  np.testing.assert_allclose(w.numpy(), w1.numpy(), rtol=1e-5, atol=1e-6)

# *** values without elements ***

@pytest.mark.parametrize("op,ref", [(lambda t: t.sum(1), np.zeros(4)), (lambda t: t.max(1), np.full(4, -np.inf))])
def test_reduce_of_empty_shards(devs, op, ref):
  np.testing.assert_equal(op(Tensor(np.zeros((4, 0), np.float32)).shard(devs, 0)).numpy(), ref)

def test_reduce_of_empty_copy_on_one_device():
  np.testing.assert_equal(Tensor(np.zeros((4, 0), np.float32)).to("CPU:1").sum(1).numpy(), np.zeros(4))

def test_empty_window_of_shard_axis(devs):
  t = Tensor(X).shard(devs, 0)
  np.testing.assert_equal(t[:0].sum(0).numpy(), np.zeros(7))
  np.testing.assert_equal((t[2:2] + 1).numpy(), np.zeros((0, 7)))

# *** clear errors ***

def test_shard_of_0d_tensor(devs):
  with pytest.raises(ValueError, match="cannot shard a 0-d tensor on axis 0"): Tensor(3.0).shard(devs, 0)
  assert Tensor(3.0).shard(devs).item() == 3.0

def test_shard_onto_one_device_named_by_a_string():
  """a device name is one device (its letters were taken for devices: "unknown device 'C'"); a repeated device is refused by name"""
  t = Tensor(X).shard("CPU:1", 0)
  assert t.device == "CPU:1"
  np.testing.assert_equal(t.numpy(), X)
  with pytest.raises(RuntimeError, match=r"distinct devices, got \('CPU:1', 'CPU:1'\)"): Tensor(X).shard(("CPU:1", "CPU:1"), 0)

def test_cat_and_stack_name_themselves():
  a, b = Tensor([1.0], device="CPU:1"), Tensor([2.0], device="CPU:2")
  with pytest.raises(RuntimeError, match="^cat of tensors on different devices"): a.cat(b)
  with pytest.raises(RuntimeError, match="^cat of tensors on different devices"): Tensor.cat(a, b)
  with pytest.raises(RuntimeError, match="^stack of tensors on different devices"): Tensor.stack(a, b)
  with pytest.raises(RuntimeError, match="^cat of tensors on different devices"): Tensor(X).shard(DEVS[2], 0).cat(Tensor(X))

def test_index_tensor_on_other_devices_is_named(devs):
  # tinygrad 0.14 asks for index and tensor on the same devices; a one-device index into a sharded tensor failed in the where() of the
  # one-hot gather, and a CPU index into a CPU:1 tensor only when its kernel ran
  t = Tensor(X).shard(devs, axis=0)
  with pytest.raises(RuntimeError, match=r"index tensor on CPU for a tensor on \('CPU:1'.*\.to\("):
    t[Tensor([0, 3])]
  with pytest.raises(RuntimeError, match=r"index tensor on CPU for a tensor on CPU:1.*\.to\('CPU:1'\)"):
    Tensor(X, device="CPU:1")[Tensor([0, 3])]
  np.testing.assert_array_equal(t[Tensor([0, 3]).to(devs)].numpy(), X[[0, 3]])
  np.testing.assert_array_equal(t[[0, 3]].numpy(), X[[0, 3]])  # a list is made where the tensor is
