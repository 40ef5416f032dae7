"""A strided conv whose input or weight takes a gradient (training) is the im2col form (tensor_conv._im2col_conv): its window copy reads
the windows' view, with index math, and its gradient folds the taps back (_tap_fold). The values and all gradients against a numpy conv
(itself checked against finite differences), and the copy's kernel against the select chain it was: a copy of the taps stacked one slice
each picked every element's tap through a compare and a select per tap (49 for a 7x7 ResNet stem: 600-800 ms against 12-50 for the
no-grad forward)."""
import itertools
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.uop import Ops
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program

R = np.random.default_rng(3)

# the oracle: a conv (N, C, *spatial) by (O, C/groups, *kernel) as a sum over the kernel's taps, each tap one strided window of the padded
# input; the gradients are the same windows read backwards (input: g*w added back into each tap's window, weight: the windows against g)
def _windows(xshape, wshape, stride, pad, dil):
  """each tap's index into the padded input (a strided slice per spatial axis), and the output's spatial shape"""
  ks, sp = wshape[2:], [n + 2 * pad for n in xshape[2:]]
  out = tuple((n - dil * (k - 1) - 1) // stride + 1 for n, k in zip(sp, ks))
  return [(tap, (slice(None), slice(None)) + tuple(slice(t * dil, t * dil + stride * (o - 1) + 1, stride) for t, o in zip(tap, out)))
          for tap in itertools.product(*(range(k) for k in ks))], out

def _np_conv(x, w, b=None, stride=1, pad=0, dil=1, groups=1):
  taps, out = _windows(x.shape, w.shape, stride, pad, dil)
  xp, (n, o), gw = np.pad(x, [(0, 0)] * 2 + [(pad, pad)] * (x.ndim - 2)), (x.shape[0], w.shape[0]), w.reshape(groups, -1, *w.shape[1:])
  ret = np.zeros((n, groups, o // groups) + out, x.dtype)
  for tap, idx in taps:
    ret += np.einsum("ngc...,goc->ngo...", xp[idx].reshape(n, groups, -1, *out), gw[(Ellipsis,) + tap])
  return ret.reshape(n, o, *out) + (0 if b is None else b.reshape(-1, *[1] * len(out)))

def _np_conv_grads(x, w, g, stride=1, pad=0, dil=1, groups=1):
  """the gradients of sum(conv(x, w, b) * g) by x, w and b (which none of them reads)"""
  taps, out = _windows(x.shape, w.shape, stride, pad, dil)
  xp, n, gw = np.pad(x, [(0, 0)] * 2 + [(pad, pad)] * (x.ndim - 2)), x.shape[0], w.reshape(groups, -1, *w.shape[1:])
  gg, dxp, dw = g.reshape(n, groups, -1, *out), np.zeros_like(xp), np.zeros_like(gw)
  for tap, idx in taps:  # one tap's window reads each padded element at most once, so += into its slice adds every share
    dxp[idx] += np.einsum("ngo...,goc->ngc...", gg, gw[(Ellipsis,) + tap]).reshape(n, -1, *out)
    dw[(Ellipsis,) + tap] = np.einsum("ngcs,ngos->goc", xp[idx].reshape(n, groups, -1, np.prod(out)), gg.reshape(*gg.shape[:3], -1))
  return dxp[(Ellipsis,) + tuple(slice(pad, pad + s) for s in x.shape[2:])], dw.reshape(w.shape), g.sum(axis=(0, *range(2, g.ndim)))

def _finite_diff(f, a, eps=1e-6):
  """the gradient of the scalar f by a, by central differences (a float64 array, changed in place and restored)"""
  ret = np.zeros_like(a)
  for i in np.ndindex(a.shape):
    a[i] += eps; hi = f(); a[i] -= 2 * eps; lo = f(); a[i] += eps
    ret[i] = (hi - lo) / (2 * eps)
  return ret

@pytest.mark.parametrize("shape,cout,k,stride,pad,dil,groups", [((1, 4, 7, 6), 2, 3, 2, 1, 2, 2), ((2, 2, 8), 3, 2, 3, 2, 1, 1)])
def test_numpy_conv_oracle_against_finite_differences(shape, cout, k, stride, pad, dil, groups):
  # the oracle's gradients are the forward's (its forward a conv: the test below)
  rng, kw = np.random.default_rng(0), dict(stride=stride, pad=pad, dil=dil, groups=groups)
  x, b = rng.standard_normal(shape), rng.standard_normal(cout)
  w = rng.standard_normal((cout, shape[1] // groups) + (k,) * (len(shape) - 2))
  g = rng.standard_normal(_np_conv(x, w, b, **kw).shape)
  def loss(): return (_np_conv(x, w, b, **kw) * g).sum()
  for got, want in zip(_np_conv_grads(x, w, g, **kw), (_finite_diff(loss, x), _finite_diff(loss, w), _finite_diff(loss, b))):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)

def test_numpy_conv_oracle_by_hand():
  # a 1x1 kernel is a matmul, a one-channel one a correlation written out
  rng = np.random.default_rng(0)
  x1, w1 = rng.standard_normal((2, 3, 5, 5)), rng.standard_normal((4, 3, 1, 1))
  np.testing.assert_allclose(_np_conv(x1, w1), np.einsum("nchw,oc->nohw", x1, w1[:, :, 0, 0]), rtol=1e-12)
  x2, w2 = rng.standard_normal((1, 1, 6)), rng.standard_normal((1, 1, 3))
  want = [sum(np.pad(x2[0, 0], 1)[2 * i + 2 * t] * w2[0, 0, t] for t in range(3)) for i in range(2)]  # stride 2, padding 1, dilation 2
  np.testing.assert_allclose(_np_conv(x2, w2, stride=2, pad=1, dil=2)[0, 0], want, rtol=1e-12)

# (input shape, output channels, kernel, stride, padding, dilation, groups): kernels 3, 5 and 7, strides 2 and 3, padding 0 to 3,
# dilation 2, groups 2, a 1-D and a non-square one, rows whose output doesn't fill a vector
CASES = [((2, 3, 17, 17), 4, 3, 2, 1, 1, 1), ((2, 4, 19, 15), 6, 5, 2, 2, 1, 2), ((1, 3, 23, 23), 8, 7, 2, 3, 1, 1),
         ((2, 4, 20, 21), 4, 3, 3, 0, 2, 2), ((2, 2, 22, 22), 4, 5, 3, 2, 2, 1), ((2, 4, 16, 18), 6, 7, 3, 1, 1, 2),
         ((2, 3, 30), 4, 5, 2, 1, 1, 1)]

@pytest.mark.parametrize("shape,cout,k,stride,pad,dil,groups", CASES)
@pytest.mark.parametrize("grads", ["both", "input", "weight"])
def test_strided_conv_values_and_gradients(shape, cout, k, stride, pad, dil, groups, grads):
  nd, kw = len(shape) - 2, dict(stride=stride, pad=pad, dil=dil, groups=groups)
  x, b = R.standard_normal(shape).astype(np.float32), R.standard_normal(cout).astype(np.float32)
  w = R.standard_normal((cout, shape[1] // groups) + (k,)*nd).astype(np.float32)
  tx, tw, tb = Tensor(x, requires_grad=grads != "weight"), Tensor(w, requires_grad=grads != "input"), Tensor(b, requires_grad=grads == "both")
  out = tx.conv2d(tw, tb, groups=groups, stride=stride, dilation=dil, padding=pad)
  want = _np_conv(x.astype(np.float64), w.astype(np.float64), b, **kw)
  np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
  g = R.standard_normal(want.shape).astype(np.float32)  # an upstream gradient that is no constant: every tap's share shows
  (out * Tensor(g)).sum().backward()
  gx, gw, gb = _np_conv_grads(x.astype(np.float64), w.astype(np.float64), g.astype(np.float64), **kw)
  if grads != "weight": np.testing.assert_allclose(tx.grad.numpy(), gx, rtol=1e-4, atol=1e-4)
  else: assert tx.grad is None
  if grads != "input": np.testing.assert_allclose(tw.grad.numpy(), gw, rtol=1e-4, atol=1e-4)
  else: assert tw.grad is None
  if grads == "both": np.testing.assert_allclose(tb.grad.numpy(), gb, rtol=1e-4, atol=1e-4)
  else: assert tb.grad is None

@pytest.mark.parametrize("ones", [True, False])
def test_strided_conv_second_order(ones):
  # the fold's own gradient (the gradient of x's gradient with respect to the output gradient) is the windows again: x's gradient is
  # linear in the output gradient g (gx = A^T g, A the conv), so sum(gx * gx) by g is A(2 gx), the forward conv of 2 gx
  x, w = R.standard_normal((1, 2, 11, 11)).astype(np.float32), R.standard_normal((3, 2, 3, 3)).astype(np.float32)
  g = np.ones((1, 3, 5, 5), np.float32) if ones else R.standard_normal((1, 3, 5, 5)).astype(np.float32)
  tx, tw, tg = Tensor(x, requires_grad=True), Tensor(w), Tensor(g, requires_grad=True)
  gx = tx.conv2d(tw, stride=2).gradient(tx, gradient=tg)[0]
  (gx * gx).sum().backward()
  x64, w64, g64 = x.astype(np.float64), w.astype(np.float64), g.astype(np.float64)
  want_gx = _np_conv_grads(x64, w64, g64, stride=2)[0]
  want_gg = _np_conv(2 * want_gx, w64, stride=2)
  np.testing.assert_allclose(gx.numpy(), want_gx, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(tg.grad.numpy(), want_gg, rtol=1e-4, atol=1e-4)
  # the second derivative's oracle against finite differences of the first (g's 75 entries: 150 numpy gradients)
  fd = _finite_diff(lambda: (_np_conv_grads(x64, w64, g64, stride=2)[0] ** 2).sum(), g64)
  np.testing.assert_allclose(want_gg, fd, rtol=1e-5, atol=1e-6)

def _forward_kernels(x:Tensor, w:Tensor, **kw) -> list:
  items, _ = create_schedule([x.conv2d(w, **kw).uop])
  return [get_program(it.ast, Device["CPU"].renderer) for it in items if it.kind == "kernel"]

@pytest.mark.parametrize("shape,cout,k,stride,pad,dil,groups", [((2, 3, 32, 32), 16, 7, 2, 3, 1, 1), ((2, 4, 20, 20), 8, 5, 2, 2, 1, 1),
                                                                 ((2, 8, 20, 20), 8, 3, 2, 1, 1, 2), ((2, 4, 21, 21), 8, 3, 3, 1, 2, 1)])
def test_training_forward_copies_windows_by_index(shape, cout, k, stride, pad, dil, groups):
  # the training forward's kernels (the window copy, the matmul) select no more than the no-grad forward's (the direct form, none) and
  # compare less often than once per tap: the stacked taps' copy ran a compare and a select per tap for every element (7x7: 96 selects)
  w_shape, kw = (cout, shape[1] // groups, k, k), dict(stride=stride, padding=pad, dilation=dil, groups=groups)
  train = _forward_kernels(Tensor.empty(*shape, requires_grad=True), Tensor.empty(*w_shape, requires_grad=True), **kw)
  infer = _forward_kernels(Tensor.empty(*shape), Tensor.empty(*w_shape), **kw)
  assert any(p.name.endswith(f"_{k*k}") for p in train), [p.name for p in train]  # the im2col form: a copy of (..., taps)
  def count(ps, op): return max(sum(u.op is op for u in p.uops) for p in ps)
  assert count(train, Ops.WHERE) <= count(infer, Ops.WHERE), [(p.name, sum(u.op is Ops.WHERE for u in p.uops)) for p in train]
  assert count(train, Ops.CMPLT) < k * k, [(p.name, sum(u.op is Ops.CMPLT for u in p.uops)) for p in train]
