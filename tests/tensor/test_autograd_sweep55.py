"""Autograd sweep fixes: max_pool2d(return_indices=True) differentiated (1-D, 2-D, 3-D) and through max_unpool2d; sort and topk keeping a
half or bfloat16 input's dtype in its gradient; an int tensor with requires_grad=True named by the error a later backward raises.
Numpy oracles: test_pool_grad's loop over the windows for the pools, a stable argsort for the sorts."""
import itertools, pathlib, sys
import numpy as np
import pytest
from tinygrad import Tensor, dtypes, nn
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the pool gradient oracle of test_pool_grad
from test_pool_grad import _out_size, np_pool_grad

def np_max_pool_indices(x, ks, ss, ds, ps, ceil_mode):
  """(max, flat index within the pooled axes of the first element equal to it) of each window, by loops over the windows"""
  sp = x.shape[-len(ks):]
  outs = [_out_size(i, k, s, d, p, ceil_mode) for i, k, s, d, p in zip(sp, ks, ss, ds, ps)]
  flat = x.reshape(x.shape[:-len(ks)] + (-1,))
  idx = np.zeros(x.shape[:-len(ks)] + tuple(outs), np.int64)
  for o in itertools.product(*[range(n) for n in outs]):
    taps = [[oa*s - p + j*d for j in range(k)] for oa, k, s, d, p in zip(o, ks, ss, ds, ps)]
    inside = [np.ravel_multi_index(pos, sp) for pos in itertools.product(*taps) if all(0 <= q < i for q, i in zip(pos, sp))]
    vals = flat[..., inside]
    idx[(...,) + o] = np.asarray(inside)[vals.argmax(-1)]  # argmax: the first of equal maxima, and the taps run in flat order
  return np.take_along_axis(flat, idx.reshape(idx.shape[:-len(ks)] + (-1,)), -1).reshape(idx.shape), idx

# (shape, kernel, stride, dilation, padding, ceil_mode): disjoint 2-D, overlapping padded 2-D (ResNet's stem pool), ceil_mode, 1-D, 3-D
POOLS = [((2, 3, 8, 10), (2, 2), (2, 2), (1, 1), (0, 0), False),
         ((2, 3, 12, 12), (3, 3), (2, 2), (1, 1), (1, 1), False),
         ((2, 3, 9, 8), (3, 3), (2, 2), (1, 1), (1, 0), True),
         ((3, 4, 17), (3,), (2,), (1,), (1,), False),
         ((1, 2, 5, 6, 7), (3, 2, 3), (2, 2, 1), (1, 1, 1), (1, 0, 1), False)]

@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("shape, ks, ss, ds, ps, ceil_mode", POOLS)
def test_max_pool_with_indices_has_the_plain_pools_gradient(shape, ks, ss, ds, ps, ceil_mode, ties):
  """the gradient closure read a local the indices' branch rebound (the max unsqueezed): backward raised a broadcast ValueError. Integer
  values tie in most windows: their gradient is split among the tied maxima, as the plain pool's"""
  rng = np.random.default_rng(len(shape) * 5 + ks[0] + ties)
  x = (rng.integers(0, 3, shape) if ties else rng.standard_normal(shape)).astype(np.float32)
  t = Tensor(x, requires_grad=True)
  out, idx = t.max_pool2d(ks, ss, dilation=ds, padding=ps, ceil_mode=ceil_mode, return_indices=True)
  up = rng.standard_normal(out.shape).astype(np.float32)
  (out * Tensor(up)).sum().backward()
  np.testing.assert_allclose(t.grad.numpy(), np_pool_grad(x, up, ks, ss, ds, ps, ceil_mode, "max"), rtol=1e-5, atol=1e-6)
  want_out, want_idx = np_max_pool_indices(x, ks, ss, ds, ps, ceil_mode)
  np.testing.assert_array_equal(out.numpy(), want_out)
  np.testing.assert_array_equal(idx.numpy(), want_idx)

def test_max_pool_with_indices_gradient_by_hand():
  # the sweep's repro: each 2x2 window's max is its bottom-right element
  t = Tensor(np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), requires_grad=True)
  out, _ = t.max_pool2d(2, return_indices=True)
  out.sum().backward()
  np.testing.assert_array_equal(t.grad.numpy()[0, 0], [[0, 0, 0, 0], [0, 1, 0, 1], [0, 0, 0, 0], [0, 1, 0, 1]])

@pytest.mark.parametrize("ks, ss, ps", [((2, 2), (2, 2), (0, 0)), ((3, 3), (2, 2), (1, 1))])
def test_max_pool_then_unpool_trains(ks, ss, ps):
  """gradient through max_pool2d(return_indices=True) and max_unpool2d: the unpooled output's gradient at each max's index goes to that
  max, then to the input element(s) it came from (overlapping windows: an index repeats, and each of its maxima gets the gradient there)"""
  rng = np.random.default_rng(sum(ks) + ps[0])
  x = rng.standard_normal((2, 3, 9, 10)).astype(np.float32)
  t = Tensor(x, requires_grad=True)
  out = t.max_pool2d(ks, ss, padding=ps, return_indices=True)
  un = out[0].max_unpool2d(out[1], ks, ss, padding=ps, output_size=x.shape)
  up = rng.standard_normal(un.shape).astype(np.float32)
  with Tensor.train():
    opt = nn.optim.SGD([t], lr=0.5)
    opt.zero_grad()
    (un * Tensor(up)).sum().backward()
    opt.step()
  _, idx = np_max_pool_indices(x, ks, ss, (1, 1), ps, False)
  g_pool = np.take_along_axis(up.reshape(2, 3, -1), idx.reshape(2, 3, -1), -1).reshape(idx.shape)  # unpool's gradient: a gather at idx
  want = np_pool_grad(x, g_pool, ks, ss, (1, 1), ps, False, "max")
  np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(t.numpy(), x - 0.5 * want, rtol=1e-5, atol=1e-6)

# (name, row length, op, numpy indices of the values picked): the rank sort, the bitonic network (4096: rows*n*n past the rank's limit),
# topk's selection (k <= 64), topk cut from a sort (k past 64, short row), topk's radix select (k a small share of a long row)
def _asc(x): return np.argsort(x, kind="stable")
def _desc(x): return np.argsort(-x, kind="stable")  # ties keep their order, as the sort's
PICKS = [("sort", 8, lambda t: t.sort()[0], _asc),
         ("sort_network", 4096, lambda t: t.sort(descending=True)[0], _desc),
         ("topk_select", 64, lambda t: t.topk(3)[0], lambda x: _desc(x)[:3]),
         ("topk_sorted", 100, lambda t: t.topk(70, largest=False)[0], lambda x: _asc(x)[:70]),
         ("topk_digits", 4096, lambda t: t.topk(100)[0], lambda x: _desc(x)[:100])]

@pytest.mark.parametrize("dt", [dtypes.half, dtypes.bfloat16], ids=str)
@pytest.mark.parametrize("name, n, op, np_idx", PICKS, ids=[p[0] for p in PICKS])
def test_sort_topk_gradient_keeps_a_half_dtype(dt, name, n, op, np_idx):
  """the pick's gradient (a scatter) was left in the sum's accumulator dtype, float32; every other op's keeps the input's dtype. Values
  m/8 and m/4 with |m| <= 256 are exact in half and bfloat16, and tie often"""
  rng = np.random.default_rng(n)
  x = (rng.integers(-256, 257, n) / 8).astype(np.float32)
  t = Tensor(x, dtype=dt, requires_grad=True)
  picked = op(t)
  up = (rng.integers(-256, 257, picked.shape[0]) / 4).astype(np.float32)
  (picked * Tensor(up, dtype=dt)).sum().backward()
  assert t.grad.dtype == dt
  want = np.zeros(n, np.float32)
  want[np_idx(x)] = up
  np.testing.assert_array_equal(picked.float().numpy(), x[np_idx(x)])
  np.testing.assert_array_equal(t.grad.float().numpy(), want)
  g, = picked.sum().gradient(t)
  assert g.dtype == dt

@pytest.mark.parametrize("dt", [dtypes.half, dtypes.bfloat16], ids=str)
def test_related_picks_keep_a_half_dtype(dt):
  # max, min, cummax, cummin and the pools' picks share no code with sort's, but the same promise: the gradient in the input's dtype
  x = np.array([[3, 1, 2, 5, 4, 0, 6, 7]], np.float32) / 2
  for op, want in [(lambda t: t.max(-1), [0, 0, 0, 0, 0, 0, 0, 1]), (lambda t: t.min(-1), [0, 0, 0, 0, 0, 1, 0, 0]),
                   (lambda t: t.cummax(-1)[0], [3, 0, 0, 3, 0, 0, 1, 1]), (lambda t: t.cummin(-1)[0], [1, 4, 0, 0, 0, 3, 0, 0]),
                   (lambda t: t.reshape(1, 1, 2, 4).max_pool2d(2, return_indices=True)[0].reshape(1, 2), [0, 0, 0, 0, 1, 0, 0, 1])]:
    t = Tensor(x, dtype=dt, requires_grad=True)
    op(t).sum().backward()
    assert t.grad.dtype == dt
    np.testing.assert_array_equal(t.grad.float().numpy(), [want])

def test_int_tensor_with_requires_grad_is_named_by_backward():
  """requires_grad=True is taken on an int tensor (tinygrad 0.14 has no requires_grad to refuse it); a later backward of a float loss
  said only "d(dtypes.float)/d(dtypes.int, dtypes.float)", not which tensor"""
  x, w = Tensor([1, 2, 3], requires_grad=True), Tensor([0.5, 0.5, 0.5], requires_grad=True)
  assert x.dtype == dtypes.int and x.requires_grad
  with pytest.raises(RuntimeError, match=r"a tensor of shape \(3,\) dtypes.int has requires_grad=True: only float tensors have gradients"):
    (x * w).sum().backward()
  y = Tensor([[1, 2]]).requires_grad_()
  with pytest.raises(RuntimeError, match=r"a tensor of shape \(1, 2\) dtypes.int has requires_grad=True: only float tensors"):
    (y * w[:2]).sum().backward()
  # gradient() names its int target, and an int tensor differentiated
  with pytest.raises(RuntimeError, match=r"a tensor of shape \(2,\) dtypes.int is a gradient\(\) target: only float tensors"):
    (z := Tensor([1, 2])).mul(w[:2]).sum().gradient(z)
  with pytest.raises(RuntimeError, match=r"the tensor differentiated, of shape \(\), is dtypes.int"):
    Tensor([1, 2]).sum().backward()
