"""Gradients of max and average pooling (1-D, 2-D, 3-D; overlapping, disjoint, dilated, padded and ceil_mode windows) against a numpy
oracle that loops over the windows. tinygrad's max splits a window's gradient equally among the elements tied for its max (torch's
picks one; upstream tinygrad 0.14 splits too): random inputs have no ties, integer ones tie in most windows. Also what the gradient
costs: the schedule does not recompute each window's max once per element of the window (schedule/row_fusion.py), nor write a mask per
window tap (tensor_pool._max_pool_grad)."""
import itertools
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop import Ops
from tinygrad.codegen.opt.kernel import free_ranges, size
from tinygrad.schedule.rangeify import create_schedule

def _out_size(i, k, s, d, p, ceil_mode):
  """torch's: in ceil_mode the last window must start inside the input or the left padding"""
  span = i + 2*p - d*(k-1) - 1
  o = (-(-span // s) if ceil_mode else span // s) + 1
  return o - 1 if ceil_mode and (o-1)*s >= i + p else o

def np_pool_grad(x, up, ks, ss, ds, ps, ceil_mode, reduce, count_include_pad=True):
  """d(sum(pool(x) * up))/dx by loops over the output windows; padding is -inf for max (never the max), 0 for avg"""
  sp, nd = x.shape[-len(ks):], len(ks)
  grad = np.zeros(x.shape, np.float64)
  for o in itertools.product(*[range(_out_size(i, k, s, d, p, ceil_mode)) for i, k, s, d, p in zip(sp, ks, ss, ds, ps)]):
    taps = [[oa*s - p + j*d for j in range(k)] for oa, k, s, d, p in zip(o, ks, ss, ds, ps)]
    inside = [pos for pos in itertools.product(*taps) if all(0 <= q < i for q, i in zip(pos, sp))]
    g = up[(...,) + o]
    if reduce == "max":
      vals = np.stack([x[(...,) + pos] for pos in inside], -1)
      # a window holding a NaN has a NaN max, whose gradient its NaNs share
      nan = np.isnan(vals)
      mask = np.where(nan.any(-1, keepdims=True), nan, vals == vals.max(-1, keepdims=True))
      share = mask / mask.sum(-1, keepdims=True)
      for t, pos in enumerate(inside): grad[(...,) + pos] += g * share[..., t]
    else:
      # the divisor counts the user's padding (count_include_pad), never the room ceil_mode adds past it
      padded = [pos for pos in itertools.product(*taps) if all(-p <= q < i + p for q, i, p in zip(pos, sp, ps))]
      n = len(padded) if count_include_pad else len(inside)
      for pos in inside: grad[(...,) + pos] += g / n
  return grad

def _pool(t, reduce, ks, ss, ds, ps, ceil_mode, cip=True):
  if reduce == "max": return t.max_pool2d(ks, ss, dilation=ds, padding=ps, ceil_mode=ceil_mode)
  return t.avg_pool2d(ks, ss, dilation=ds, padding=ps, ceil_mode=ceil_mode, count_include_pad=cip)

# (shape, kernel, stride, dilation, padding, ceil_mode): ResNet's stem pool, disjoint 2x2, stride 1, dilated, ceil_mode, odd sizes,
# a size-1 axis, 1-D and 3-D; windows stacked from disjoint runs (tensor_conv._stacked_window: stride 2 and up, at most 4 runs) and
# folded through copies (stride 1, 3x3x3), dilated runs of one tap, runs of two dilated taps, a 3-D pool that overlaps on one axis,
# a negative padding (a crop, as tinygrad's pad takes it)
CASES = [((2, 3, 12, 12), (3, 3), (2, 2), (1, 1), (1, 1), False),
         ((2, 3, 8, 10), (2, 2), (2, 2), (1, 1), (0, 0), False),
         ((1, 2, 7, 9), (3, 3), (1, 1), (1, 1), (1, 1), False),
         ((2, 2, 11, 9), (3, 2), (2, 1), (2, 3), (0, 1), False),
         ((2, 3, 9, 8), (3, 3), (2, 2), (1, 1), (1, 0), True),
         ((1, 1, 1, 7), (1, 3), (1, 2), (1, 1), (0, 1), False),
         ((3, 4, 17), (3,), (2,), (1,), (1,), False),
         ((1, 2, 5, 6, 7), (3, 2, 3), (2, 2, 1), (1, 1, 1), (1, 0, 1), False),
         ((2, 2, 9, 10), (2, 2), (2, 2), (2, 2), (0, 1), False),
         ((2, 3, 23), (5,), (2,), (1,), (2,), True),
         ((1, 2, 13, 11), (3, 3), (3, 3), (2, 2), (1, 0), False),
         ((1, 2, 6, 7, 9), (1, 1, 3), (1, 1, 2), (1, 1, 1), (0, 0, 1), False),
         ((1, 2, 7, 8), (3, 3), (1, 2), (1, 1), (-1, 1), False)]

@pytest.mark.parametrize("reduce", ["max", "avg"])
@pytest.mark.parametrize("shape, ks, ss, ds, ps, ceil_mode", CASES)
def test_pool_grad_matches_numpy(reduce, shape, ks, ss, ds, ps, ceil_mode):
  rng = np.random.default_rng(len(shape) * 7 + ks[0])
  x = rng.standard_normal(shape).astype(np.float32)
  t = Tensor(x, requires_grad=True)
  out = _pool(t, reduce, ks, ss, ds, ps, ceil_mode)
  up = rng.standard_normal(out.shape).astype(np.float32)
  (out * Tensor(up)).sum().backward()
  np.testing.assert_allclose(t.grad.numpy(), np_pool_grad(x, up, ks, ss, ds, ps, ceil_mode, reduce), rtol=1e-5, atol=1e-6)
  # with a gradient an avg pool's windows may be stacked from runs (tensor_pool._pooled), a max pool has its own gradient: the same values
  np.testing.assert_allclose(out.numpy(), _pool(Tensor(x), reduce, ks, ss, ds, ps, ceil_mode).numpy(), rtol=1e-6, atol=1e-7)

def test_avg_pool_grad_without_padding_in_the_count():
  x = np.random.default_rng(3).standard_normal((2, 2, 7, 6)).astype(np.float32)
  t = Tensor(x, requires_grad=True)
  out = t.avg_pool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=False)
  out.sum().backward()
  want = np_pool_grad(x, np.ones(out.shape), (3, 3), (2, 2), (1, 1), (1, 1), True, "avg", count_include_pad=False)
  np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-5, atol=1e-6)

def test_pool_grad_of_a_permuted_input():
  # a non-contiguous input: the windows view a transposed buffer
  x = np.random.default_rng(4).standard_normal((2, 9, 10, 3)).astype(np.float32)
  t = Tensor(x, requires_grad=True)
  out = t.permute(0, 3, 1, 2).max_pool2d(3, 2, padding=1)
  up = np.random.default_rng(5).standard_normal(out.shape).astype(np.float32)
  (out * Tensor(up)).sum().backward()
  want = np_pool_grad(x.transpose(0, 3, 1, 2), up, (3, 3), (2, 2), (1, 1), (1, 1), False, "max").transpose(0, 2, 3, 1)
  np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-5, atol=1e-6)

def test_indices_of_a_pool_with_a_gradient():
  # with a gradient, the values come through a custom gradient (tensor_pool._max_pool_grad): the same values and indices as without
  x = np.random.default_rng(8).standard_normal((2, 3, 9, 11)).astype(np.float32)
  v, idx = Tensor(x, requires_grad=True).max_pool2d(3, 2, padding=1, return_indices=True)
  want_v, want_idx = Tensor(x).max_pool2d(3, 2, padding=1, return_indices=True)
  np.testing.assert_array_equal(idx.numpy(), want_idx.numpy())
  np.testing.assert_array_equal(v.numpy(), want_v.numpy())
  np.testing.assert_array_equal(np.take_along_axis(x.reshape(2, 3, -1), idx.numpy().reshape(2, 3, -1), -1).reshape(v.shape), v.numpy())

def test_max_pool_grad_splits_ties():
  # integer values with many ties: each window's gradient is shared equally by the elements equal to its max
  x = np.random.default_rng(6).integers(0, 3, (2, 2, 7, 8)).astype(np.float32)
  t = Tensor(x, requires_grad=True)
  out = t.max_pool2d(3, 2, padding=1)
  up = np.random.default_rng(7).standard_normal(out.shape).astype(np.float32)
  (out * Tensor(up)).sum().backward()
  np.testing.assert_allclose(t.grad.numpy(), np_pool_grad(x, up, (3, 3), (2, 2), (1, 1), (1, 1), False, "max"), rtol=1e-5, atol=1e-6)
  # by hand: one 2x2 window of four equal values gets a quarter each
  t = Tensor.ones(1, 1, 2, 2, requires_grad=True)
  t.max_pool2d(2).sum().backward()
  np.testing.assert_array_equal(t.grad.numpy(), np.full((1, 1, 2, 2), 0.25, np.float32))

@pytest.mark.parametrize("shape, ks, ss, ds, ps, ceil_mode", CASES)
def test_max_pool_grad_with_ties_and_nans_matches_numpy(shape, ks, ss, ds, ps, ceil_mode):
  # values in {0, 1, 2}: most windows tie, overlapping ones at the same elements, next to padding; a few NaNs take their windows' gradient
  rng = np.random.default_rng(len(shape) * 11 + ks[-1])
  x = rng.integers(0, 3, shape).astype(np.float32)
  x.reshape(-1)[rng.choice(x.size, max(1, x.size // 40), replace=False)] = np.nan
  t = Tensor(x, requires_grad=True)
  out = _pool(t, "max", ks, ss, ds, ps, ceil_mode)
  up = rng.standard_normal(out.shape).astype(np.float32)
  (out * Tensor(up)).sum().backward()
  np.testing.assert_allclose(t.grad.numpy(), np_pool_grad(x, up, ks, ss, ds, ps, ceil_mode, "max"), rtol=1e-5, atol=1e-6)

def test_max_pool_grad_of_its_grad():
  # the input's gradient is linear in the output's: differentiated by the output's gradient, each window gets v's share-weighted sum over
  # its hits (the oracle's gradient for each window alone, dotted with v)
  rng = np.random.default_rng(9)
  x = rng.integers(0, 3, (1, 2, 7, 8)).astype(np.float32)
  w = Tensor(rng.standard_normal((1, 2, 4, 4)).astype(np.float32), requires_grad=True)
  v = rng.standard_normal(x.shape).astype(np.float32)
  t = Tensor(x, requires_grad=True)
  gx = (t.max_pool2d(3, 2, padding=1) * w).sum().gradient(t)[0]
  gw = (gx * Tensor(v)).sum().gradient(w)[0]
  want = np.zeros(w.shape)
  for i in np.ndindex(w.shape):
    e = np.zeros(w.shape); e[i] = 1
    want[i] = (np_pool_grad(x, e, (3, 3), (2, 2), (1, 1), (1, 1), False, "max") * v).sum()
  np.testing.assert_allclose(gw.numpy(), want, rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("ks, ss, ds, ps", [((3, 3), (2, 2), (1, 1), (1, 1)), ((3, 3), (1, 1), (1, 1), (1, 1)),
                                            ((3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1)), ((2, 2), (2, 2), (2, 2), (0, 0))])
def test_max_pool_grad_writes_no_mask_per_tap(ks, ss, ds, ps):
  # autograd through the windows wrote each window's hit mask out, prod(ks) bytes a window (2.25x the input's elements for 3x3 stride 2,
  # 9x at stride 1), and the kernel scattering it back gathered those bytes with SSE4a insertq, 0.2 us each beside AVX code on this CPU
  # (ResNet's stem pool 16x64x112x112: 0.8 s): no kernel of the gradient writes more elements than the input holds
  t = Tensor.empty(2, 4, *([12] * len(ks)), requires_grad=True)
  out = t.max_pool2d(ks, ss, dilation=ds, padding=ps)
  (out * Tensor.empty(*out.shape)).sum().backward()
  items, _ = create_schedule([out.uop, t.grad.uop])
  assert max(int(np.prod(b.arg.shape)) for it in items if it.kind == "kernel" for b in it.bufs) <= t.numel()

def _reduce_steps(ast) -> int:
  """REDUCE steps a kernel takes: runs of each (the loops around it) times its own range"""
  free = free_ranges(ast)
  return sum(int(np.prod([size(q) for q in free[x] | set(x.src[1:])])) for x in ast.toposort() if x.op is Ops.REDUCE)

@pytest.mark.parametrize("k, s", [(3, 2), (3, 1), (2, 2)])
def test_max_pool_grad_computes_each_max_once(k, s):
  # kept in the gradient's kernel, a window's max (and its tie count) would be recomputed once per element of the window: k*k times
  t = Tensor.empty(2, 4, 16, 16, requires_grad=True)
  out = t.max_pool2d(k, s, padding=k//2)
  out.sum().backward()
  items, _ = create_schedule([t.grad.uop])
  window_steps = out.numel() * k * k
  assert sum(_reduce_steps(it.ast) for it in items if it.kind == "kernel") <= 6 * window_steps

@pytest.mark.parametrize("shape, ks, ss, ds", [((2, 4, 16, 16), (3, 3), (2, 2), (1, 1)), ((2, 4, 64), (5,), (2,), (1,)),
                                               ((2, 4, 16, 16), (2, 2), (2, 2), (2, 2))])
def test_stacked_pool_grad_is_elementwise(shape, ks, ss, ds):
  # windows stacked from disjoint runs: the input's gradient is a sum of views of the windows' gradient, no reduce over window copies
  t = Tensor.empty(*shape, requires_grad=True)
  t.max_pool2d(ks, ss, dilation=ds).sum().backward()
  items, _ = create_schedule([t.grad.uop])
  assert not [u for u in items[-1].ast.toposort() if u.op is Ops.REDUCE]

def _np_conv(x, w):
  """valid cross-correlation, (N, C, H, W) by (O, C, kh, kw)"""
  kh, kw = w.shape[2:]
  oh, ow = x.shape[2] - kh + 1, x.shape[3] - kw + 1
  return sum(np.einsum("nchw,oc->nohw", x[:, :, i:i+oh, j:j+ow], w[:, :, i, j]) for i in range(kh) for j in range(kw))

def _np_pool2(x):
  h, w = x.shape[2] // 2 * 2, x.shape[3] // 2 * 2
  return x[:, :, :h, :w].reshape(*x.shape[:2], h // 2, 2, w // 2, 2).max((3, 5))

def test_max_of_a_value_two_kernels_recompute():
  """conv -> pool -> conv -> layernorm -> pool: the pool's gradient compares each normalized value with the window's max, and two
  kernels computed those values, one with fused multiply-adds (FMA=2 fused whole-vector tiles' elementwise a*b+c too): no element
  was equal, and the first conv's weight gradient was off by 6. Oracle: central differences of a float64 numpy forward"""
  rng = np.random.default_rng(1)
  w1, w2 = rng.standard_normal((1, 1, 3, 3)), rng.standard_normal((16, 1, 3, 3))
  x = np.random.default_rng(0).standard_normal((2, 1, 12, 12))
  def loss(w):
    h = _np_conv(_np_pool2(_np_conv(x, w)), w2)
    h = (h - h.mean((2, 3), keepdims=True)) / np.sqrt(h.var((2, 3), keepdims=True) + 1e-5)
    return (_np_pool2(h) ** 2).sum()
  eps, want = 1e-6, np.zeros_like(w1)
  for i in np.ndindex(w1.shape):
    d = np.zeros_like(w1); d[i] = eps
    want[i] = (loss(w1 + d) - loss(w1 - d)) / (2 * eps)
  w = Tensor(w1.astype(np.float32), requires_grad=True)
  h = Tensor(x.astype(np.float32)).conv2d(w).max_pool2d().conv2d(Tensor(w2.astype(np.float32))).layernorm(axis=(2, 3)).max_pool2d()
  h.square().sum().backward()
  g = w.grad * 1
  Tensor.realize(h, g)  # the forward value realized with the gradient: one schedule, the kernels where it went wrong
  np.testing.assert_allclose(g.numpy(), want, rtol=1e-3, atol=1e-3)
