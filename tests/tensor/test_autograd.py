"""Autograd against independent oracles: central finite differences of a numpy version of each function in float64, and hand-checked
values where a function has a kink (ties of max, zeros of prod, pow at 0)."""
import math, sys
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, dtypes, nn
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.uop.gradient import compute_gradient

def numeric_grad(f, arrays:list, i:int, eps:float=1e-6) -> np.ndarray:
  """d f(*arrays) / d arrays[i] by central differences (f returns a float64 scalar)"""
  a = [x.copy() for x in arrays]
  g = np.zeros_like(a[i])
  for idx in np.ndindex(a[i].shape):
    orig = a[i][idx]
    a[i][idx] = orig + eps
    hi = f(*a)
    a[i][idx] = orig - eps
    lo = f(*a)
    a[i][idx] = orig
    g[idx] = (hi - lo) / (2 * eps)
  return g

def check(fn, ref, *arrays, rtol=1e-5, atol=1e-6, device=None):
  """fn on Tensors and ref on numpy compute the same thing; the gradient of sum(fn(*xs) * w) (w fixed random weights, so each output
  element gets its own upstream gradient) matches finite differences of ref. Returns the ops of fn's graph (before anything realizes it)"""
  xs = [Tensor(a, device=device, requires_grad=True) for a in arrays]
  out = fn(*xs)
  ops = {u.op for u in out.uop.toposort()}
  want = np.asarray(ref(*arrays))
  assert tuple(out.shape) == want.shape, f"shape {out.shape}, numpy says {want.shape}"
  w = np.random.default_rng(len(arrays)).uniform(0.5, 1.5, want.shape)
  grads = (out * Tensor(w, device=device)).sum().gradient(*xs)
  for i, (x, g) in enumerate(zip(xs, grads)):
    assert g.shape == x.shape and g.dtype == x.dtype, f"gradient {i} is {g.shape} {g.dtype}, input is {x.shape} {x.dtype}"
    np.testing.assert_allclose(g.numpy(), numeric_grad(lambda *a: float((np.asarray(ref(*a)) * w).sum()), list(arrays), i),
                               rtol=rtol, atol=atol, err_msg=f"gradient of input {i}")
  return ops

rng = np.random.default_rng(0)
def pos(*shape): return rng.uniform(0.5, 2.0, shape)
def anyv(*shape): return rng.uniform(-2.0, 2.0, shape)
def distinct(*shape):
  """values at least 0.1 apart: max/min/relu/where are smooth around them"""
  return rng.permutation(np.arange(int(np.prod(shape)), dtype=np.float64)).reshape(shape) * 0.25 - 1.1

# *** every differentiable op of the tensor-level IR, through the Tensor method that emits it ***

PRIMITIVES = [
  (Ops.NEG, lambda x: -x, lambda x: -x, [anyv(3, 4)]),
  (Ops.RECIPROCAL, lambda x: x.reciprocal(), lambda x: 1 / x, [pos(3, 4)]),
  (Ops.SQRT, lambda x: x.sqrt(), np.sqrt, [pos(3, 4)]),
  (Ops.EXP2, lambda x: x.exp2(), np.exp2, [anyv(3, 4)]),
  (Ops.LOG2, lambda x: x.log2(), np.log2, [pos(3, 4)]),
  (Ops.SIN, lambda x: x.sin(), np.sin, [anyv(3, 4)]),
  (Ops.TRUNC, lambda x: x.trunc() * x, lambda x: np.trunc(x) * x, [anyv(3, 4) + 0.05]),
  (Ops.ADD, lambda x, y: x + y, lambda x, y: x + y, [anyv(3, 4), anyv(4)]),
  (Ops.MUL, lambda x, y: x * y, lambda x, y: x * y, [anyv(2, 3, 1), anyv(4)]),
  (Ops.MAX, lambda x, y: x.maximum(y), np.maximum, [distinct(3, 4), distinct(4) + 0.1]),
  (Ops.POW, lambda x, y: x ** y, lambda x, y: x ** y, [pos(3, 4), anyv(3, 1)]),
  (Ops.WHERE, lambda x, y: (x > y).where(x, y * 2), lambda x, y: np.where(x > y, x, y * 2), [distinct(3, 4), distinct(4) + 0.1]),
  (Ops.CAST, lambda x: x.float().square().double(), lambda x: x * x, [anyv(3, 4)]),
  (Ops.REDUCE_AXIS, lambda x: x.sum(1), lambda x: x.sum(1), [anyv(3, 4)]),
  (Ops.REDUCE_AXIS, lambda x: x.max(0), lambda x: x.max(0), [distinct(3, 4)]),
  (Ops.REDUCE_AXIS, lambda x: x.prod(1), lambda x: x.prod(1), [anyv(3, 4)]),
  (Ops.RESHAPE, lambda x: x.reshape(6, 2) * Tensor(np.arange(12.).reshape(6, 2)), lambda x: x.reshape(6, 2) * np.arange(12.).reshape(6, 2),
   [anyv(3, 4)]),
  (Ops.EXPAND, lambda x: x.expand(2, 3, 4), lambda x: np.broadcast_to(x, (2, 3, 4)), [anyv(3, 1)]),
  (Ops.PERMUTE, lambda x: x.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1), [anyv(2, 3, 4)]),
  (Ops.PAD, lambda x: x.pad(((1, 2), (0, 1))), lambda x: np.pad(x, ((1, 2), (0, 1))), [anyv(3, 4)]),
  (Ops.SHRINK, lambda x: x.shrink(((1, 3), (0, 2))), lambda x: x[1:3, 0:2], [anyv(3, 4)]),
  (Ops.FLIP, lambda x: x.flip(0, 1), lambda x: x[::-1, ::-1], [anyv(3, 4)]),
  (Ops.CONTIGUOUS, lambda x: x.contiguous() * x, lambda x: x * x, [anyv(3, 4)]),
  (Ops.COPY, lambda x: x.to("PYTHON").sin().to("CPU"), np.sin, [anyv(2, 3)]),
]

@pytest.mark.parametrize("op,fn,ref,arrays", PRIMITIVES, ids=[f"{c[0].name}{i}" for i, c in enumerate(PRIMITIVES)])
def test_primitive(op, fn, ref, arrays):
  assert op in check(fn, ref, *arrays), f"{op} is not in the graph this case builds"

# *** composite methods ***

def sm(x, axis=-1):
  e = np.exp(x - x.max(axis, keepdims=True))
  return e / e.sum(axis, keepdims=True)

COMPOSITES = {
  "matmul": (lambda x, y: x @ y, lambda x, y: x @ y, [anyv(3, 4), anyv(4, 5)]),
  "matmul_batched": (lambda x, y: x @ y, lambda x, y: x @ y, [anyv(2, 3, 4), anyv(4, 2)]),
  "matmul_vec": (lambda x, y: x @ y, lambda x, y: x @ y, [anyv(4), anyv(4, 3)]),
  "softmax": (lambda x: x.softmax(), sm, [anyv(3, 5)]),
  "softmax_axis0": (lambda x: x.softmax(0), lambda x: sm(x, 0), [anyv(3, 5)]),
  "log_softmax": (lambda x: x.log_softmax(), lambda x: np.log(sm(x)), [anyv(3, 5)]),
  "logsumexp": (lambda x: x.logsumexp(1), lambda x: np.log(np.exp(x).sum(1)), [anyv(3, 5)]),
  "mean": (lambda x: x.mean(), lambda x: x.mean(), [anyv(3, 4)]),
  "mean_axis": (lambda x: x.mean(0, keepdim=True), lambda x: x.mean(0, keepdims=True), [anyv(3, 4)]),
  "var": (lambda x: x.var(1), lambda x: x.var(1, ddof=1), [anyv(3, 4)]),
  "std": (lambda x: x.std(correction=0), lambda x: x.std(), [anyv(3, 4)]),
  "relu": (lambda x: x.relu(), lambda x: np.maximum(x, 0), [distinct(3, 4)]),
  "sigmoid": (lambda x: x.sigmoid(), lambda x: 1 / (1 + np.exp(-x)), [anyv(3, 4)]),
  "tanh": (lambda x: x.tanh(), np.tanh, [anyv(3, 4)]),
  "exp": (lambda x: x.exp(), np.exp, [anyv(3, 4)]),
  "log": (lambda x: x.log(), np.log, [pos(3, 4)]),
  "sqrt": (lambda x: x.sqrt(), np.sqrt, [pos(3, 4)]),
  "rsqrt": (lambda x: x.rsqrt(), lambda x: x ** -0.5, [pos(3, 4)]),
  "sin_cos_tan": (lambda x: x.sin() + x.cos() * x.tan(), lambda x: np.sin(x) + np.cos(x) * np.tan(x), [anyv(3, 4) * 0.6]),
  "div": (lambda x, y: x / y, lambda x, y: x / y, [anyv(3, 4), pos(4)]),
  "pow_const": (lambda x: x ** 3, lambda x: x ** 3, [anyv(3, 4)]),
  "rpow": (lambda x: 2 ** x, lambda x: 2 ** x, [anyv(3, 4)]),
  "abs_clip": (lambda x: x.abs() + x.clip(-0.5, 0.7), lambda x: np.abs(x) + np.clip(x, -0.5, 0.7), [distinct(3, 4) + 0.01]),
  "minimum": (lambda x, y: x.minimum(y), np.minimum, [distinct(3, 4), distinct(3, 4) + 0.1]),
  "max_axis_keepdim": (lambda x: x.max(1, keepdim=True), lambda x: x.max(1, keepdims=True), [distinct(3, 4)]),
  "min": (lambda x: x.min(), lambda x: x.min(), [distinct(3, 4)]),
  "slice_steps": (lambda x: x[1:, ::2], lambda x: x[1:, ::2], [anyv(4, 5)]),
  "slice_negative_steps": (lambda x: x[::-2, 3:0:-2], lambda x: x[::-2, 3:0:-2], [anyv(5, 5)]),
  "index_int_none_ellipsis": (lambda x: x[None, ..., -1], lambda x: x[None, ..., -1], [anyv(2, 3, 4)]),
  "pad_value": (lambda x: x.pad((1, 2, 0, 1), value=1.5), lambda x: np.pad(x, ((0, 1), (1, 2)), constant_values=1.5), [anyv(3, 4)]),
  "pad_crop": (lambda x: x.pad((-1, 2)), lambda x: np.pad(x[:, 1:], ((0, 0), (0, 2))), [anyv(3, 4)]),
  "pad_reflect": (lambda x: x.pad((2, 1), mode="reflect"), lambda x: np.pad(x, ((0, 0), (2, 1)), mode="reflect"), [anyv(3, 4)]),
  "pad_replicate": (lambda x: x.pad((2, 1), mode="replicate"), lambda x: np.pad(x, ((0, 0), (2, 1)), mode="edge"), [anyv(3, 4)]),
  "pad_circular": (lambda x: x.pad((2, 1), mode="circular"), lambda x: np.pad(x, ((0, 0), (2, 1)), mode="wrap"), [anyv(3, 4)]),
  "cat": (lambda x, y: x.cat(y, y * x[:1], dim=0), lambda x, y: np.concatenate([x, y, y * x[:1]], 0), [anyv(2, 3), anyv(1, 3)]),
  "stack": (lambda x, y: x.stack(y, dim=1), lambda x, y: np.stack([x, y], 1), [anyv(2, 3), anyv(2, 3)]),
  "where": (lambda x, y: (x < 0).where(x * y, y.exp()), lambda x, y: np.where(x < 0, x * y, np.exp(y)), [distinct(3, 4), anyv(4)]),
  "flip_permute_transpose": (lambda x: x.flip(1).permute(1, 0, 2).transpose(0, 2), lambda x: x[:, ::-1].transpose(1, 0, 2).swapaxes(0, 2),
                             [anyv(2, 3, 4)]),
  "broadcast_outer": (lambda x, y: x * y + x, lambda x, y: x * y + x, [anyv(3, 1), anyv(1, 4)]),
  "expand_repeat": (lambda x: x.expand(2, 3, 4).repeat(1, 2, 1), lambda x: np.tile(np.broadcast_to(x, (2, 3, 4)), (1, 2, 1)), [anyv(3, 4)]),
  "cumsum": (lambda x: x.cumsum(1), lambda x: x.cumsum(1), [anyv(3, 4)]),
  "prod_all": (lambda x: x.prod(), lambda x: x.prod(), [anyv(2, 3)]),
}

@pytest.mark.parametrize("name", COMPOSITES)
def test_composite(name):
  fn, ref, arrays = COMPOSITES[name]
  check(fn, ref, *arrays)

# *** one node used directly and through a broadcast: both contributions add up ***

def test_broadcast_and_direct_use():
  x, p = Tensor([1.0, 2.0, 3.0], dtype=dtypes.float64), Tensor(0.3, dtype=dtypes.float64, requires_grad=True)
  z = (x * p.sin()).sum() + p.sin()
  (g,) = z.gradient(p)
  assert g.shape == ()
  np.testing.assert_allclose(g.numpy(), 7 * math.cos(0.3), rtol=1e-12)

def test_broadcast_and_direct_use_where():
  x, p = Tensor([1.0, 2.0, 3.0], dtype=dtypes.float64), Tensor(0.3, dtype=dtypes.float64, requires_grad=True)
  z = (x > 0).where(x * p.sin(), 0).sum() + (x[0] > 0).where(p.sin(), 0)
  (g,) = z.gradient(p)
  np.testing.assert_allclose(g.numpy(), 7 * math.cos(0.3), rtol=1e-12)

# *** kinks: the rule's choice, checked by hand ***

def test_max_reduce_splits_ties():
  x = Tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]], requires_grad=True)
  x.max(1).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [0.5, 0, 0.5]])
  y = Tensor([5.0, 5.0, 5.0, 1.0], requires_grad=True)
  y.max().backward()
  np.testing.assert_allclose(y.grad.numpy(), [1/3, 1/3, 1/3, 0])

def test_min_reduce_splits_ties():
  x = Tensor([4.0, 1.0, 1.0], requires_grad=True)
  (x.min() * 2).backward()
  np.testing.assert_allclose(x.grad.numpy(), [0, 1, 1])

def test_maximum_splits_ties():
  x, y = Tensor([1.0, 2.0, 3.0], requires_grad=True), Tensor([1.0, 3.0, 0.0], requires_grad=True)
  x.maximum(y).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [0.5, 0, 1])
  np.testing.assert_allclose(y.grad.numpy(), [0.5, 1, 0])

def test_relu_at_zero_has_no_gradient():
  x = Tensor([-1.0, 0.0, 2.0], requires_grad=True)
  x.relu().sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [0, 0, 1])

def test_prod_with_zeros():
  for vals, want in (([2.0, 0.0, 3.0], [0, 6, 0]), ([0.0, 0.0, 3.0], [0, 0, 0]), ([2.0, -1.0, 3.0], [-3, 6, -2])):
    x = Tensor(vals, requires_grad=True)
    x.prod().backward()
    np.testing.assert_allclose(x.grad.numpy(), want, err_msg=f"prod of {vals}")

def test_pow_at_zero():
  b, e = Tensor([0.0, 0.0, 0.0, 2.0], requires_grad=True), Tensor([0.0, 2.0, 0.5, 0.0], requires_grad=True)
  (b ** e).sum().backward()
  # d/db: e*b^(e-1), 0 where e is 0; d/de: b^e*ln(b), 0 where b is 0 and e >= 0
  np.testing.assert_allclose(b.grad.numpy(), [0, 0, np.inf, 0])
  np.testing.assert_allclose(e.grad.numpy(), [0, 0, 0, math.log(2)])

def test_trunc_and_comparisons_carry_no_gradient():
  x = Tensor([0.5, 1.5, -2.5], requires_grad=True)
  ((x.floor() + x.round() + (x > 0).float() + x.int().float()) * x).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), np.floor([0.5, 1.5, -2.5]) + np.round([0.5, 1.5, -2.5]) + [1, 1, 0] + [0, 1, -2])

# *** property test: random shapes and broadcasts through elementwise math and reductions ***

@st.composite
def broadcast_pair(draw):
  shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
  other = tuple(1 if draw(st.booleans()) else s for s in shape[draw(st.integers(0, len(shape) - 1)):])
  return (shape, other) if draw(st.booleans()) else (other, shape)

PROGRAMS = [
  (lambda x, y, ax: ((x * y).sin() + y.square()).sum(ax).exp(), lambda x, y, ax: np.exp((np.sin(x * y) + y * y).sum(ax))),
  (lambda x, y, ax: (x - y.mean(ax, keepdim=True)).softmax(-1) * y, lambda x, y, ax: sm(x - y.mean(ax, keepdims=True)) * y),
  (lambda x, y, ax: (x.exp() + y).log() / (y * y + 1).sum(ax, keepdim=True).sqrt(),
   lambda x, y, ax: np.log(np.exp(x) + y) / np.sqrt((y * y + 1).sum(ax, keepdims=True))),
]

@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(broadcast_pair(), st.integers(0, len(PROGRAMS) - 1), st.data())
def test_random_broadcast_programs(shapes, k, data):
  sx, sy = shapes
  ax = data.draw(st.integers(-len(sy), len(sy) - 1))
  ax = ax if len(sy) == len(np.broadcast_shapes(sx, sy)) else None  # a reduce of y over an axis x doesn't have would change the rank
  fn, ref = PROGRAMS[k]
  r = np.random.default_rng(sum(sx) * 7 + sum(sy))
  check(lambda x, y: fn(x, y, ax), lambda x, y: ref(x, y, ax), r.uniform(-1, 1, sx), r.uniform(0.5, 1.5, sy), rtol=1e-5, atol=1e-6)

# *** .grad, backward, detach, gradient() ***

def test_backward_fills_grad_of_requires_grad_tensors_only():
  x, y, c = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0]), Tensor([0.5, 0.5], requires_grad=False)
  assert (x * y * c).sum().backward() is not None
  np.testing.assert_allclose(x.grad.numpy(), [1.5, 2.0])
  assert y.grad is None and c.grad is None

def test_grad_accumulates_over_backward_calls():
  x = Tensor([1.0, -2.0], requires_grad=True)
  (x * x).sum().backward()
  (x * 3).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [2 + 3, -4 + 3])

def test_detach_stops_gradient():
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  (x.detach() * x).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [1, 2, 3])  # not 2x
  y = Tensor([1.0, 2.0], requires_grad=True)
  with pytest.raises(RuntimeError, match="only\\s+through detach"): (y.detach() * 2).sum().gradient(y)
  np.testing.assert_equal((y.detach() * 2).sum().gradient(y, materialize_grads=True)[0].numpy(), [0, 0])

def test_custom_gradient():
  # _custom_gradient: the value's own graph takes the gradient as usual (w), each input gets what the function gives (x: 3*g*w, not
  # the g*w autograd would derive), None gives nothing; hand-checked values
  x, w, z = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, -1.0], requires_grad=True), Tensor([5.0, 5.0], requires_grad=True)
  y = (x.detach() * w)._custom_gradient((x, z), lambda g: (g * w * 3, None))
  np.testing.assert_allclose(y.numpy(), [3, -2])
  (y * Tensor([1.0, 2.0])).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [9, -6])
  np.testing.assert_allclose(w.grad.numpy(), [1, 4])
  np.testing.assert_equal(z.grad.numpy(), [0, 0])
  # a second use of the same value adds up
  (y * 2).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [9 + 18, -6 - 6])
  # through gradient() and a gradient of the gradient (the function's own graph is differentiated as usual)
  gx, = (y * y).sum().gradient(x)
  np.testing.assert_allclose(gx.numpy(), [2 * 3 * 3 * 3, 2 * -2 * -1 * 3])
  ggw, = gx.sum().gradient(w)
  np.testing.assert_allclose(ggw.numpy(), [2 * 1 * 2 * 3 * 3, 2 * 2 * 2 * -1 * 3])

def test_custom_gradient_leaves_the_schedule():
  # realize() schedules the value alone (the node is gone, as the schedule cache sees it), and the node and what is built on it become
  # buffers like any realized node; a graph scheduled directly drops it too
  from tinygrad.schedule.rangeify import create_schedule
  x = Tensor([1.0, 2.0], requires_grad=True)
  y = (x.detach() + 1)._custom_gradient((x,), lambda g: (g * 0,))
  z = y * 2
  assert any(u.op is Ops.CUSTOM_GRADIENT for u in z.uop.toposort())
  items, _ = create_schedule([z.uop])
  assert all(u.op is not Ops.CUSTOM_GRADIENT for it in items if it.ast is not None for u in it.ast.toposort())
  z.realize()
  assert z.uop.base.op is Ops.BUFFER and not any(u.op is Ops.CUSTOM_GRADIENT for u in z.uop.toposort())
  np.testing.assert_allclose(z.numpy(), [4, 6])
  z.sum().backward()
  np.testing.assert_equal(x.grad.numpy(), [0, 0])  # the function's gradient, through the realized graph

def test_custom_gradient_made_by_hand_before_any(monkeypatch):
  # realize() walks graphs for CUSTOM_GRADIENT nodes only once _custom_gradient has made one; a node made by hand before that is taken out
  # by the scheduler, so the value is right either way (and the schedule cache sees its function: a miss, not a wrong kernel)
  monkeypatch.setattr(UOp, "custom_gradients_made", False)
  x = Tensor([1.0, 2.0])
  y = Tensor(UOp(Ops.CUSTOM_GRADIENT, x.dtype, ((x + 1).uop,), lambda g: ()))
  np.testing.assert_allclose((y * 3).numpy(), [6, 9])
  z = (x.detach() * 2)._custom_gradient((x,), lambda g: (g,))
  assert UOp.custom_gradients_made
  np.testing.assert_allclose(z.numpy(), [2, 4])

def test_no_gradient_path_walk_before_any_requires_grad(monkeypatch):
  # before any tensor was given requires_grad=True no graph is on a gradient path: realize() keeps no graph for autograd and walks none
  from tinygrad import tensor as tensor_module
  monkeypatch.setattr(tensor_module, "_grad_marks_made", False)
  x = Tensor([1.0, 2.0])
  y = (x * 2 + 1).realize()
  assert "_built" not in y.__dict__ and tensor_module._GRAD_PATH not in (x * 3).uop.__dict__
  w = Tensor([3.0, 4.0], requires_grad=True)
  z = (w * x).realize()
  assert tensor_module._grad_marks_made and "_built" in z.__dict__
  z.sum().backward()
  np.testing.assert_allclose(w.grad.numpy(), [1, 2])

def test_backward_gives_zeros_where_only_detach_leads():
  x, y = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0], requires_grad=True)
  (x.sum() + y.detach().sum()).backward()
  np.testing.assert_equal(y.grad.numpy(), [0])

def test_gradient_leaves_grad_alone():
  x = Tensor([1.0, 2.0], requires_grad=True)
  gx, = (x * x).sum().gradient(x)
  np.testing.assert_allclose(gx.numpy(), [2, 4])
  assert x.grad is None

def test_gradient_of_tensor_without_requires_grad():
  # like upstream tinygrad, gradient() differentiates with respect to any tensor in the graph; requires_grad only steers backward()
  x = Tensor([1.0, 2.0])
  np.testing.assert_allclose((x * x).sum().gradient(x)[0].numpy(), [2, 4])

def test_gradient_of_intermediate_and_several_targets():
  x = Tensor([1.0, 2.0], requires_grad=True)
  h = x * 3
  gh, gx = (h * h).sum().gradient(h, x)
  np.testing.assert_allclose(gh.numpy(), [6, 12])
  np.testing.assert_allclose(gx.numpy(), [18, 36])

def test_backward_with_gradient_argument():
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  (x * x).backward(Tensor([1.0, 0.0, -1.0]))
  np.testing.assert_allclose(x.grad.numpy(), [2, 0, -6])

def test_requires_grad_():
  x = Tensor([1.0, 2.0])
  assert x.requires_grad_() is x and x.requires_grad
  x.exp().sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)

def test_creation_requires_grad():
  x = Tensor.rand(3, requires_grad=True)
  (x * 2).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [2, 2, 2])

def test_equal_constant_leaves_have_their_own_gradients():
  # two Tensor.zeros(3) are one hash-consed node until requires_grad gives each a buffer of its own
  a, b, c = Tensor.zeros(3, requires_grad=True), Tensor.zeros(3, requires_grad=True), Tensor(2.0, requires_grad=True)
  (a + b * 2 + c * Tensor.ones(3)).sum().backward()
  np.testing.assert_equal([a.grad.numpy(), b.grad.numpy(), c.grad.numpy()], [[1, 1, 1], [2, 2, 2], 3])
  np.testing.assert_equal(a.numpy(), [0, 0, 0])

def test_python_device():
  check(lambda x, y: (x @ y).relu().sum(0) * x.max(), lambda x, y: np.maximum(x @ y, 0).sum(0) * x.max(), distinct(2, 3), anyv(3, 2) + 0.05,
        device="PYTHON")

def test_float32_matches():
  a = anyv(3, 4).astype(np.float32)
  x = Tensor(a, requires_grad=True)
  x.softmax().log().sum().backward()
  assert x.grad.dtype == dtypes.float32
  want = numeric_grad(lambda v: float(np.log(sm(v)).sum()), [a.astype(np.float64)], 0)
  np.testing.assert_allclose(x.grad.numpy(), want, atol=1e-5)

# *** errors ***

def test_backward_of_non_scalar_names_shape():
  x = Tensor([[1.0, 2.0]], requires_grad=True)
  with pytest.raises(RuntimeError, match=r"shape \(1, 2\)"): (x * 2).backward()

def test_gradient_argument_shape_checked():
  x = Tensor([1.0, 2.0], requires_grad=True)
  with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"): (x * 2).backward(Tensor([1.0, 1.0, 1.0]))

def test_gradient_of_tensor_not_in_graph():
  x, y = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0], requires_grad=True)
  with pytest.raises(RuntimeError, match=r"\(1,\) dtypes.float target"): (x * 2).sum().gradient(y)
  np.testing.assert_equal((x * 2).sum().gradient(y, materialize_grads=True)[0].numpy(), [0])

def test_int_gradient_refused():
  x = Tensor([1, 2])
  with pytest.raises(RuntimeError, match="only float tensors"): (x * 2).sum().gradient(x)

def test_op_without_rule_is_named():
  x = UOp.new_buffer("CPU", 3, dtypes.float32)
  y = UOp(Ops.SUB, dtypes.float32, (x, x))
  with pytest.raises(RuntimeError, match="no gradient rule for Ops.SUB"): compute_gradient(y, y.const_like(1.0), {x})

# *** deep graphs: the walk is a loop ***

def test_deep_graph_at_default_recursion_limit():
  old = sys.getrecursionlimit()
  sys.setrecursionlimit(1000)
  try:
    x = Tensor([0.5, -0.25], requires_grad=True)
    y = x
    for _ in range(5_000): y = y * 1.0001 + x  # 10k ALU nodes (plus constants) between the loss and x
    grads = compute_gradient(y.sum().uop, y.sum().uop.const_like(1.0), {x.uop})
    assert len(grads[x.uop].toposort()) > 10_000
  finally: sys.setrecursionlimit(old)

def test_deep_chain_value():
  x = Tensor([1.0, 2.0], dtype=dtypes.float64, requires_grad=True)
  y = x
  for _ in range(300): y = y + (y * 0.5).sin() * 0.01
  y.sum().backward()
  a, g = np.array([1.0, 2.0]), np.ones(2)
  vals = []
  for _ in range(300): vals.append(a); a = a + np.sin(a * 0.5) * 0.01
  for v in reversed(vals): g = g * (1 + np.cos(v * 0.5) * 0.005)
  np.testing.assert_allclose(x.grad.numpy(), g, rtol=1e-10)

# *** a small CNN: the scheduler realizes the ReLU masks its gradient kernels share, the pool's windows are views ***

def _np_conv_valid(x, w):
  cols = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=(2, 3))  # (N, C, oh, ow, kh, kw)
  return np.einsum("bchwij,ocij->bohw", cols, w)

def _np_cnn(x, w1, b1, w2):
  h = np.maximum(_np_conv_valid(x, w1) + b1.reshape(1, -1, 1, 1), 0)
  n, c, hh, ww = h.shape
  h = h[:, :, :hh//2*2, :ww//2*2].reshape(n, c, hh//2, 2, ww//2, 2).max((3, 5))
  return np.maximum(_np_conv_valid(h, w2), 0)

def test_cnn_gradients():
  # conv, relu, max-pool, conv, relu: every gradient (input, weights, bias) against finite differences of the numpy version
  r = np.random.default_rng(3)
  x, w1, b1, w2 = r.uniform(-1, 1, (2, 2, 9, 8)), r.uniform(-1, 1, (3, 2, 3, 3)), r.uniform(-0.5, 0.5, 3), r.uniform(-1, 1, (4, 3, 2, 2))
  check(lambda x, w1, b1, w2: x.conv2d(w1, b1).relu().max_pool2d(2).conv2d(w2).relu(), _np_cnn, x, w1, b1, w2, rtol=1e-5, atol=1e-7)

def test_clamp_and_abs_gradients_at_the_kinks_follow_torch():
  # torch: clamp passes the whole gradient at a value equal to a bound; abs' gradient is sign(x), 0 at 0
  x = Tensor([-0.5, 0.5, 0.0, 1.0, -2.0])
  np.testing.assert_equal(x.clamp(-0.5, 0.5).sum().gradient(x)[0].numpy(), [1, 1, 1, 0, 0])
  np.testing.assert_equal(x.clip(max_=0.5).sum().gradient(x)[0].numpy(), [1, 1, 1, 0, 1])
  np.testing.assert_equal(x.abs().sum().gradient(x)[0].numpy(), [-1, 1, 0, 1, -1])
  out = Tensor([-0.0, -3.0]).abs().numpy()
  assert out.tolist() == [0.0, 3.0] and not np.signbit(out).any()
  np.testing.assert_equal(Tensor([-3, 4]).clamp(-1.5, 2).numpy(), [-1.5, 2.0])  # an int tensor with a float bound becomes float

def test_gradient_through_chained_realizes():
  """h = x.exp() realized, then h * 2 realized, then used with x: the second realize's graph reads h's buffer, which was not marked as
  on a gradient path, so that graph was not kept and backward lost the path through it (2e^x instead of 2e^x (x + 1))"""
  v = np.array([1.0, -2.0, 0.5])
  x = Tensor(v.astype(np.float32), requires_grad=True)
  h = x.exp().realize()
  h2 = (h * 2).realize()
  h3 = (h2 + h).realize()
  (h2 * x).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(v) * (v + 1), rtol=1e-6)
  np.testing.assert_allclose((h3 * x).sum().gradient(x)[0].numpy(), 3 * np.exp(v) * (v + 1), rtol=1e-6)

def test_max_gradient_goes_to_a_nan_max():
  """a NaN max takes its NaN's gradient (torch's): NaN equals nothing, so no element was a hit and ctx / 0 made the whole row NaN (a
  max_pool2d window holding a NaN)"""
  x = Tensor([1.0, math.nan, 3.0], requires_grad=True)
  x.max().backward()
  assert x.grad.tolist() == [0.0, 1.0, 0.0]
  y = Tensor([[1.0, math.nan], [3.0, 2.0]], requires_grad=True)
  (y.max(1).sum() + y.min(1).sum()).backward()
  assert y.grad.tolist() == [[0.0, 2.0], [1.0, 1.0]]
  z = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
  z[0, 0, 1, 1] = np.nan
  p = Tensor(z, requires_grad=True)
  p.max_pool2d(2).sum().backward()
  np.testing.assert_array_equal(p.grad.numpy()[0, 0], [[0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 0], [0, 1, 0, 1]])

# *** a gradient through a value computed before an in-place write ***
WRITTEN = "written in place .* after this graph's value was computed from it"

def test_loss_built_before_its_weights_are_written_refuses_backward():
  """torch's "modified by an inplace operation": the loss kept its value (computed before the write), and its gradient read the new w"""
  w, x = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0])
  loss = (w * w * x).sum()
  w.assign(Tensor([10.0, 10.0]))
  with pytest.raises(RuntimeError, match=WRITTEN): loss.backward()
  assert loss.item() == 19.0

def test_loss_over_an_intermediate_written_in_place_refuses_backward():
  """the write into h's buffer cut the link back to w * 3: the loss built before it silently gave w no gradient"""
  w = Tensor([1.0, 2.0], requires_grad=True)
  h = (w * 3).realize()
  loss = (h * h).sum()
  h += 1
  with pytest.raises(RuntimeError, match="written in place"): loss.backward()
  with pytest.raises(RuntimeError, match="the path back through that value is cut"): (h * w).sum().backward()  # built after the write

def test_optimizer_step_between_a_loss_and_its_backward_refuses_it():
  from tinygrad import nn
  w = Tensor([[0.5, -1.0]], requires_grad=True)
  opt = nn.optim.SGD([w], lr=0.1)
  with Tensor.train():
    (w.sum() ** 2).backward()
    loss = ((w * 2).sum() ** 2)
    opt.step()
    with pytest.raises(RuntimeError, match=WRITTEN): loss.backward()

def test_writes_the_gradient_does_not_read_leave_backward_alone():
  """c = a + w * w, then a.assign(c): d c/d w = 2w never reads a. A loss read (item()) before backward, over a realized intermediate, with
  no write: the gradient as ever"""
  a, w = Tensor([1.0, 2.0]).realize(), Tensor([4.0, 5.0], requires_grad=True)
  c = a + w * w
  a.assign(c)
  c.sum().backward()
  np.testing.assert_equal(w.grad.numpy(), [8.0, 10.0])
  w2 = Tensor([1.0, 2.0], requires_grad=True)
  h = (w2 * 3).realize()
  loss = (h.exp() * 2).sum()
  np.testing.assert_allclose(loss.item(), 2 * (np.exp(3.0) + np.exp(6.0)), rtol=1e-6)
  loss.backward()
  np.testing.assert_allclose(w2.grad.numpy(), 6 * np.exp(3 * np.array([1.0, 2.0])), rtol=1e-6)

@pytest.mark.parametrize("write", ["add", "setitem_mask", "setitem_view_layout"])
def test_write_into_a_realized_intermediate_cuts_its_path_with_an_error(write):
  """y realized, then written in place: the graph over y's buffer gets no gradient through y's old graph (w.grad stayed None, or for a
  y realized in its own layout the old graph's gradient reached every element, overwritten ones too): an error names it"""
  w = Tensor([[1.0, -2.0, 3.0], [0.5, 1.5, -1.0]], requires_grad=True)
  y = (w.reshape(3, 2).T * 1 if write == "setitem_view_layout" else w * w).realize()
  if write == "add": y += 1
  elif write == "setitem_mask": y[y > 0] = 0.0
  else: y[0] = 5.0
  with pytest.raises(RuntimeError, match="written in place"): (y * y).sum().backward()

@pytest.mark.parametrize("op", [lambda t: t.pad((1, 1)), lambda t: t @ Tensor.ones(0, 2)], ids=["pad", "matmul"])
def test_empty_leaf_gets_zeros_after_its_output_was_realized(op):
  # the output is realized first (printed): its graph over an empty leaf reads no memory, and backward must still reach the leaf
  t = Tensor(np.ones((3, 0), np.float32), requires_grad=True)
  y = op(t)
  y.numpy()
  y.sum().backward()
  assert t.grad is not None and t.grad.shape == (3, 0) and t.grad.numpy().shape == (3, 0)

def test_requires_grad_set_after_the_graph_on_a_filled_leaf():
  """an optimizer made after the loss (it sets requires_grad): a Tensor.ones/zeros leaf (LayerNorm's weight and bias) kept its constant
  in the loss graph but was moved to a buffer, and got no gradient. Two equal fills are still apart: each its own gradient"""
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  w, v = Tensor.ones(3, 2), Tensor.ones(3, 2)
  loss = (Tensor(x) @ w).sum() + 2 * (Tensor(x) @ v).sum()
  w.requires_grad = v.requires_grad = True
  loss.backward()
  np.testing.assert_allclose(w.grad.numpy(), np.repeat(x.sum(0)[:, None], 2, 1))
  np.testing.assert_allclose(v.grad.numpy(), 2 * np.repeat(x.sum(0)[:, None], 2, 1))
  ln = nn.LayerNorm(3)
  out = ln(Tensor(x)).square().sum()
  opt = nn.optim.SGD(nn.state.get_parameters(ln), lr=0.1)
  out.backward()
  with Tensor.train(): opt.step()
  assert ln.weight.grad is not None and ln.bias.grad is not None
  np.testing.assert_allclose(ln.bias.numpy(), -0.1 * ln.bias.grad.numpy(), atol=1e-6)
