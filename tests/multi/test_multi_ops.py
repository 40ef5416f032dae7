"""Every Tensor op on sharded and replicated tensors against the same op unsharded (numpy as the oracle for values, the one-device
tinygrad gradient for gradients), on 2 and 3 CPU devices, with shards of unequal size (5 rows over 2 devices, 7 columns over 3)."""
import numpy as np
import pytest
from tinygrad import Tensor

DEVS = {2: ("CPU:1", "CPU:2"), 3: ("CPU:1", "CPU:2", "CPU:3")}
RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 7)).astype(np.float32)
Y = RNG.standard_normal((5, 7)).astype(np.float32)

@pytest.fixture(params=[2, 3], ids=["2dev", "3dev"])
def devs(request): return DEVS[request.param]

@pytest.fixture(params=[0, 1, None], ids=["axis0", "axis1", "replicated"])
def axis(request): return request.param

def close(t:Tensor, ref:np.ndarray, **kw): np.testing.assert_allclose(t.numpy(), ref, rtol=kw.get("rtol", 1e-5), atol=kw.get("atol", 1e-5))

def test_layout(devs, axis):
  t = Tensor(X).shard(devs, axis)
  assert t.device == devs and t.uop.axis == axis and t.shape == (5, 7)
  if axis is not None: assert sum(t.shard_sizes) == X.shape[axis] and max(t.shard_sizes) - min(t.shard_sizes) <= 1
  close(t, X)

OPS = {
  "add_const": (lambda t: t * 2 + 1, lambda x: x * 2 + 1),
  "unary": (lambda t: t.exp().sqrt() - t.sigmoid(), lambda x: np.sqrt(np.exp(x)) - 1 / (1 + np.exp(-x))),
  "where": (lambda t: (t > 0).where(t, t * 0.1), lambda x: np.where(x > 0, x, x * 0.1)),
  "cast": (lambda t: (t * 10).cast("int32") // 3, lambda x: np.floor_divide((x * 10).astype(np.int32), 3)),
  "sum0": (lambda t: t.sum(0), lambda x: x.sum(0)), "sum1": (lambda t: t.sum(1), lambda x: x.sum(1)),
  "sum_all": (lambda t: t.sum(), lambda x: x.sum()), "max0": (lambda t: t.max(0), lambda x: x.max(0)),
  "max1_keep": (lambda t: t.max(1, keepdim=True), lambda x: x.max(1, keepdims=True)), "mean": (lambda t: t.mean(), lambda x: x.mean()),
  "prod1": (lambda t: t.prod(1), lambda x: x.prod(1)),
  "softmax": (lambda t: t.softmax(1), lambda x: np.exp(x - x.max(1, keepdims=True)) / np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)),
  "reshape_keep": (lambda t: t.reshape(5, 7, 1), lambda x: x.reshape(5, 7, 1)),
  "reshape_split": (lambda t: t.reshape(5, 1, 7, 1), lambda x: x.reshape(5, 1, 7, 1)),
  "flatten": (lambda t: t.flatten(), lambda x: x.flatten()),
  "permute": (lambda t: t.T, lambda x: x.T),
  "expand": (lambda t: t.unsqueeze(0).expand(3, 5, 7), lambda x: np.broadcast_to(x, (3, 5, 7))),
  "shrink_both": (lambda t: t[1:4, 2:6], lambda x: x[1:4, 2:6]),
  "pad": (lambda t: t.pad(((1, 2), (0, 3))), lambda x: np.pad(x, ((1, 2), (0, 3)))),
  "flip": (lambda t: t.flip(0).flip(1), lambda x: x[::-1, ::-1]),
  "index_int": (lambda t: t[3], lambda x: x[3]), "index_col": (lambda t: t[:, 4], lambda x: x[:, 4]),
  "index_step": (lambda t: t[::2, 1::3], lambda x: x[::2, 1::3]),
  "index_tensor": (lambda t: t[Tensor([4, 0, 2], device=t.device)], lambda x: x[[4, 0, 2]]),
  "cat0": (lambda t: t.cat(t * 2, dim=0), lambda x: np.concatenate([x, x * 2], 0)),
  "cat1": (lambda t: t.cat(t + 1, dim=1), lambda x: np.concatenate([x, x + 1], 1)),
  "stack": (lambda t: t.stack(t - 1, dim=1), lambda x: np.stack([x, x - 1], 1)),
  "cumsum": (lambda t: t.cumsum(1), lambda x: x.cumsum(1)),
}

@pytest.mark.parametrize("name", OPS)
def test_op(devs, axis, name):
  fn, ref = OPS[name]
  close(fn(Tensor(X).shard(devs, axis)), ref(X), rtol=1e-4)

@pytest.mark.parametrize("yaxis", [0, 1, None], ids=["y0", "y1", "yrep"])
def test_binary_any_layouts(devs, axis, yaxis):
  # sources sharded differently meet: the output takes the first sharded source's layout, the other is resliced on each device
  close(Tensor(X).shard(devs, axis) * Tensor(Y).shard(devs, yaxis) + Tensor(Y).shard(devs, yaxis), X * Y + Y)

@pytest.mark.parametrize("waxis", [0, 1, None], ids=["w0", "w1", "wrep"])
def test_matmul(devs, axis, waxis):
  W = RNG.standard_normal((7, 4)).astype(np.float32)
  close(Tensor(X).shard(devs, axis) @ Tensor(W).shard(devs, waxis), X @ W, rtol=1e-4)

def test_matmul_one_side_sharded_other_single(devs):
  W = RNG.standard_normal((7, 3)).astype(np.float32)
  close(Tensor(X).to(devs[0]) @ Tensor(W).shard(devs, 1).to(devs[0]), X @ W, rtol=1e-4)

GRADS = {
  "mul_sum": lambda t, w: (t * w).sum(),
  "matmul_relu": lambda t, w: (t @ w.T).relu().sum(),
  "softmax": lambda t, w: (t.softmax(1) * w).sum(),
  "reshape_permute": lambda t, w: (t.T.reshape(35) * w.flatten()).max(),
  "shrink_pad_flip": lambda t, w: (t[1:4].pad(((1, 1), (0, 0))).flip(0) * w[:5]).sum(),
  "index_cat": lambda t, w: (t[Tensor([4, 0, 2], device=t.device)].cat(t[:2], dim=0) * w).mean(),
  "expand_reduce": lambda t, w: (t.unsqueeze(0).expand(2, 5, 7) * w).sum(0).square().sum(),
}

@pytest.mark.parametrize("name", GRADS)
def test_grad(devs, axis, name):
  f, W = GRADS[name], RNG.standard_normal((5, 7)).astype(np.float32)
  t, w = Tensor(X, requires_grad=True), Tensor(W, requires_grad=True)
  f(t.shard(devs, axis), w.shard(devs, 0 if axis is None else 1 - axis)).backward()
  t1, w1 = Tensor(X, requires_grad=True), Tensor(W, requires_grad=True)
  f(t1, w1).backward()
  close(t.grad, t1.grad.numpy(), rtol=1e-4)
  close(w.grad, w1.grad.numpy(), rtol=1e-4)

def test_grad_of_multi_leaf(devs, axis):
  # a parameter that lives sharded (or replicated) gets a gradient on the same devices
  t = Tensor(X).shard(devs, axis).realize().requires_grad_()
  (t.exp() * Tensor(Y).shard(devs, 0)).sum().backward()
  assert t.grad.device == devs
  close(t.grad, np.exp(X) * Y, rtol=1e-4)

def test_assign(devs, axis):
  t = Tensor(X).shard(devs, axis).realize()
  view = t.uop
  t.assign(t * 3 + Tensor(Y).shard(devs, 1))
  close(t, X * 3 + Y)
  assert Tensor(view).device == devs  # the same buffers were written
  close(Tensor(view), X * 3 + Y)

def test_lazy_sharded_constant_written():
  t = Tensor.zeros(5, 7).shard(DEVS[3], 1)
  t.assign(Tensor(X).shard(DEVS[3], 0))
  close(t, X)

def test_creation_on_devices(devs):
  close(Tensor.ones(3, 4, device=devs) * 2, np.full((3, 4), 2.0))
  close(Tensor([[1.0, 2.0]], device=devs) + 1, np.array([[2.0, 3.0]]))
  assert Tensor.rand(4, device=devs).device == devs
  r = Tensor.rand(4, 3, device=devs).numpy()
  assert ((0 <= r) & (r < 1)).all()

def test_to_single_gathers(devs, axis):
  t = Tensor(X).shard(devs, axis).to("CPU")
  assert t.device == "CPU"
  close(t, X)

def test_in_place_moves(devs):
  t = Tensor(X)
  assert t.to_(devs) is t and t.device == devs and t.uop.axis is None
  assert t.shard_(devs, 1) is t and t.uop.axis == 1
  close(t.to_("CPU:3"), X)
  assert t.device == "CPU:3"

def test_shard_like(devs, axis):
  y = Tensor(Y).shard(devs, axis)
  t = Tensor(X).shard_like(y)
  assert t.device == devs and t.uop.axis == axis and t.shard_sizes == y.shard_sizes
  close(t + y, X + Y)
  assert Tensor(X).shard_like(Tensor(Y, device="CPU:3")).device == "CPU:3"

def test_reshard(devs):
  close(Tensor(X).shard(devs, 0).shard(devs, 1), X)
  assert Tensor(X).shard(devs, 0).shard(devs, 1).uop.axis == 1

def test_shard_errors():
  with pytest.raises(ValueError, match="size 2 .* over 3 devices"): Tensor.ones(2, 4).shard(DEVS[3], 0)
  with pytest.raises(RuntimeError, match="different devices"): Tensor(X).shard(DEVS[2], 0) + Tensor(X).shard(DEVS[3], 0)
  with pytest.raises(Exception, match="distinct"): Tensor(X).shard(("CPU:1", "cpu:1"), 0)

def test_python_devices():
  t = Tensor(X).shard(("PYTHON:1", "PYTHON:2"), 1)
  close((t * 2).sum(1), (X * 2).sum(1))

def test_symbolic_axis_beside_the_shard(devs):
  # a bound Variable on the other axis: each device's kernels compile once and run for every value
  from tinygrad import Variable
  from tinygrad.engine import realize
  n, t = Variable("n", 1, 7), Tensor(X).shard(devs, 0)
  for k in (2, 5, 3):
    r = (t[:, :n.bind(k)] * 2).realize()
    close(r, X[:, :k] * 2)
    close(t[:, :n.bind(k)].sum(1), X[:, :k].sum(1))
    if k == 2: compiled = len(realize._runtimes)
  assert len(realize._runtimes) == compiled

def test_symbolic_shard_axis_is_refused(devs):
  from tinygrad import Variable
  with pytest.raises(ValueError, match="symbolic size"): Tensor(X)[:Variable("m", 3, 5).bind(4)].shard(devs, 0)

def test_tinyjit_with_sharded_arguments(devs):
  from tinygrad import TinyJit
  @TinyJit
  def f(x:Tensor, w:Tensor) -> Tensor: return (x @ w).relu().sum(0)
  W = RNG.standard_normal((7, 3)).astype(np.float32)
  w = Tensor(W).to(devs).realize()
  for i in range(4):
    xs = X + i
    close(f(Tensor(xs).shard(devs, 0), w), np.maximum(xs @ W, 0).sum(0), rtol=1e-4)
  assert f.captured is not None
  with pytest.raises(ValueError, match="split over its devices"): f(Tensor(X).shard(devs, 1), w)

@pytest.mark.parametrize("axis", [0, None], ids=["batch", "replicated"])
def test_tinyjit_returning_its_input_on_several_devices(devs, axis):
  # the input's own device among the devices: that piece of the output is the input's buffer (or a view of it), which a replay returned
  # as the captured call's (stale rows, or the whole output stale for to(devs))
  from tinygrad import TinyJit
  devs = ("CPU",) + devs
  @TinyJit
  def f(x:Tensor) -> Tensor: return x.shard(devs, axis).realize()
  for i in range(5): close(f(Tensor(X + i)), X + i)

@pytest.mark.parametrize("axis", [0, None], ids=["batch", "replicated"])
def test_conv_gradients_with_written_out_gradients(devs, axis):
  # the im2col conv (a 7-wide output row) makes its windows' and its input's gradients buffers (CONTIGUOUS_BACKWARD): each device
  # writes its own piece, and the gradients equal the one-device ones
  xn, wn = RNG.standard_normal((5, 3, 9, 9)).astype(np.float32), RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
  def grads(x:Tensor, w:Tensor):
    loss = (x.conv2d(w).relu() * 0.5).max_pool2d(2).square().sum()
    assert any(u.op.name == "CONTIGUOUS_BACKWARD" for u in loss.uop.toposort())
    loss.backward()
    return x.grad.numpy(), w.grad.numpy()
  x1, w1 = Tensor(xn, requires_grad=True), Tensor(wn, requires_grad=True)
  ref = grads(x1, w1)
  got = grads(Tensor(xn, requires_grad=True).shard_(devs, axis), Tensor(wn, requires_grad=True).shard_(devs, None))
  for g, r in zip(got, ref): np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4)
