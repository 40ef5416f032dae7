"""Conv and pool graphs replayed from a per-shape template (tensor_template.py): the replay is the graph a fresh build makes, node for node,
and grouped convs of many shapes stay numpy-equal on the calls that replay it (the second input of a shape, a first call's constants)."""
import itertools
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.tensor_conv import _windows, _window_products, _phase_windows, _phase_weight, _tap_fold, _phased

R = np.random.default_rng(7)
def rnd(*shape): return R.standard_normal(shape).astype(np.float32)

def np_conv1(x, w, b, stride, dilation, pad, groups):
  """float64 loops over the outputs: x (N, C, *sp), w (Cout, C/groups, *k), the same int stride, dilation and padding on every axis"""
  nd = w.ndim - 2
  xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(pad, pad)]*nd)
  ks, (cout, cin_g) = w.shape[2:], w.shape[:2]
  out = [(xp.shape[2 + a] - dilation*(ks[a] - 1) - 1)//stride + 1 for a in range(nd)]
  ret = np.zeros((x.shape[0], cout, *out))
  for co in range(cout):
    g = co // (cout // groups)
    for o in itertools.product(*[range(n) for n in out]):
      win = xp[(slice(None), slice(g*cin_g, (g+1)*cin_g)) + tuple(slice(o[a]*stride, o[a]*stride + dilation*(ks[a]-1) + 1, dilation) for a in range(nd))]
      ret[(slice(None), co) + o] = (win * w[co]).reshape(x.shape[0], -1).sum(1) + b[co]
  return ret

# (input shape, output channels, groups, kernel, stride, dilation, padding): groups of 2 and 4, depthwise with a channel multiplier of 2,
# stride 2, dilation 2, padding 0 and 2, a 5x5 kernel, 1-D, batch 1, rows whole vectors (16, 32) and not
CASES = [((2, 8, 9, 16), 8, 2, 3, 1, 1, 1), ((2, 8, 10, 11), 12, 4, 3, 1, 1, 0), ((2, 6, 12, 32), 12, 6, 3, 1, 1, 1),
         ((1, 6, 11, 40), 6, 6, 3, 2, 1, 1), ((2, 4, 13, 16), 4, 4, 3, 1, 2, 2), ((1, 4, 12, 20), 8, 4, 5, 1, 1, 2),
         ((2, 8, 40), 8, 8, 3, 1, 1, 1), ((1, 6, 37), 12, 3, 5, 2, 1, 0), ((1, 16, 8, 16), 16, 16, 3, 1, 1, 1)]

@pytest.mark.parametrize("shape,cout,groups,k,stride,dil,pad", CASES)
def test_grouped_conv_replayed(shape, cout, groups, k, stride, dil, pad):
  nd = len(shape) - 2
  w, b = rnd(cout, shape[1] // groups, *(k,)*nd), rnd(cout)
  for _ in range(2):  # the second input of this shape replays the first one's template
    x = rnd(*shape)
    got = Tensor(x).conv2d(Tensor(w), Tensor(b), groups=groups, stride=stride, dilation=dil, padding=pad).numpy()
    np.testing.assert_allclose(got, np_conv1(x, w, b, stride, dil, pad, groups), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("shape,cout,groups,k,stride,dil,pad", [CASES[0], CASES[3], CASES[6]])
def test_grouped_conv_replayed_gradients(shape, cout, groups, k, stride, dil, pad):
  """the gradients through a replayed graph against numpy's: the loss sum(conv * g) is linear in x and in w, so its gradient at one element
  is the loss with that element 1 and the rest of that tensor 0"""
  nd = len(shape) - 2
  w = rnd(cout, shape[1] // groups, *(k,)*nd)
  zero = np.zeros(cout, np.float32)
  for _ in range(2):
    x = rnd(*shape)
    g = rnd(*np_conv1(x, w, zero, stride, dil, pad, groups).shape)
    tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
    (tx.conv2d(tw, groups=groups, stride=stride, dilation=dil, padding=pad) * Tensor(g)).sum().backward()
    for t, arr, which in ((tx, x, 0), (tw, w, 1)):
      flat = arr.reshape(-1)
      for i in R.choice(flat.size, 6, replace=False):
        e = np.zeros_like(flat); e[i] = 1
        args = [x, w]
        args[which] = e.reshape(arr.shape)
        want = (np_conv1(*args, zero, stride, dil, pad, groups) * g).sum()
        np.testing.assert_allclose(t.grad.numpy().reshape(-1)[i], want, rtol=1e-4, atol=1e-4)

def test_replay_is_the_fresh_graph():
  a, b = Tensor(rnd(2, 3, 9, 10)), Tensor(rnd(2, 3, 9, 10))
  w = Tensor(rnd(6, 1, 3, 3))
  for args in (((3, 3), (1, 1), (1, 1)), ((3, 3), (2, 2), (1, 1)), ((2, 3), (1, 2), (2, 1))):
    _windows(a, *args)  # recorded
    assert _windows(b, *args).uop is _windows.__wrapped__(b, *args).uop
    _windows(a, *args, max_runs=4)
    assert _windows(b, *args, max_runs=4).uop is _windows.__wrapped__(b, *args, max_runs=4).uop
  _phase_windows(a, (3, 3), (2, 2), (4, 4))
  assert _phase_windows(b, (3, 3), (2, 2), (4, 4)).uop is _phase_windows.__wrapped__(b, (3, 3), (2, 2), (4, 4)).uop
  g1, g2, args = Tensor(rnd(2, 3, 7, 4, 9)), Tensor(rnd(2, 3, 7, 4, 9)), ((9, 10), (3, 3), (1, 2), (1, 1))  # the windows' gradient of a
  _tap_fold(g1, *args)
  assert _tap_fold(g2, *args).uop is _tap_fold.__wrapped__(g2, *args).uop
  _phase_weight(w, (2, 2))
  w2 = Tensor(rnd(6, 1, 3, 3))
  assert _phase_weight(w2, (2, 2)).uop is _phase_weight.__wrapped__(w2, (2, 2)).uop
  win = _windows(a, (3, 3), (1, 1), (1, 1))
  _window_products(win, w, 3, (7, 8), False, None)
  other = _windows(b, (3, 3), (1, 1), (1, 1))
  assert _window_products(other, w, 3, (7, 8), False, None).uop is _window_products.__wrapped__(other, w, 3, (7, 8), False, None).uop
  # one tensor as both inputs is not keyed (it would be one input of the recording): windows (N, Cin, *taps) with no output axes
  t = rnd(2, 2, 3)
  for _ in range(2): np.testing.assert_allclose(_window_products(Tensor(t), Tensor(t), 1, (), False, None).numpy(), np.einsum("nct,oct->no", t, t), rtol=1e-5)
  tt = Tensor(t)
  for _ in range(2): np.testing.assert_allclose(_window_products(tt, tt, 1, (), False, None).numpy(), np.einsum("nct,oct->no", t, t), rtol=1e-5)

def test_templates_recorded_and_memos_kept():
  """every templated function of the conv records (a None template would build afresh each time), and a replayed node carries the memos
  realize() would have walked for: a buffer read, a gradient path, none from constants alone"""
  from tinygrad.tensor import _memos
  x, w = rnd(2, 4, 9, 70), rnd(4, 1, 3, 3)
  for kw in (dict(groups=4, padding=1), dict(groups=4, stride=2, padding=1), dict(groups=2, padding=1)):
    Tensor(x).conv2d(Tensor(w[:, :1] if kw["groups"] == 4 else rnd(4, 2, 3, 3)), **kw)
  for fn in (_windows, _window_products, _phase_windows, _phase_weight):
    assert fn.templates and all(t is not None for t in fn.templates.values()), fn.__name__
  for tx, reads, grad in ((Tensor(x), True, False), (Tensor(x, requires_grad=True), True, True), (Tensor.ones(2, 4, 9, 70), False, False)):
    win = _windows(tx, (3, 3), (1, 1), (1, 1))
    assert _memos(win.uop) == {k: v for k, v in zip(_memos(win.uop), (grad, reads, False))}
    fresh = _windows.__wrapped__(tx + 0, (3, 3), (1, 1), (1, 1))
    assert _memos(fresh.uop) == _memos(win.uop)

def test_replay_keeps_marks_and_takes_unhashable_arguments():
  """a replay that meets a node that was there before leaves it as it is (a requires_grad mark on it stays), and a list argument (no key)
  builds afresh"""
  from tinygrad.tensor import _on_grad_path
  x = Tensor(rnd(1, 2, 5, 6))
  win = _windows(x, (2, 2), (1, 1), (1, 1))
  win.requires_grad = True
  assert _on_grad_path(_windows(x, (2, 2), (1, 1), (1, 1)).uop)
  got = _windows(x, [2, 2], [1, 1], [1, 1]).numpy()
  np.testing.assert_array_equal(got, np.lib.stride_tricks.sliding_window_view(x.numpy(), (2, 2), axis=(2, 3)))

def test_replay_after_constants_and_pools():
  """a first call on constants (no buffer) records the template a buffer's call replays (where the graph writes a contiguous() of its
  own, the strided depthwise conv's phases, the two are keyed apart), and pools share the windows' templates"""
  w, x = rnd(4, 1, 3, 3), rnd(1, 4, 6, 70)
  for tx, xn in ((Tensor.ones(1, 4, 6, 70), np.ones_like(x)), (Tensor(x), x), (Tensor.full((1, 4, 6, 70), 2.0), np.full_like(x, 2))):
    assert _phased(tx, Tensor(w), 4, (2, 2), (1, 1), (3, 35))
    got = tx.conv2d(Tensor(w), groups=4, stride=2, padding=1).numpy()
    np.testing.assert_allclose(got, np_conv1(xn, w, np.zeros(4), 2, 1, 1, 4), rtol=1e-4, atol=1e-4)
  ones = Tensor.ones(1, 4, 6, 7).conv2d(Tensor(w), groups=4, padding=1).numpy()
  np.testing.assert_allclose(ones, np_conv1(np.ones((1, 4, 6, 7), np.float32), w, np.zeros(4), 1, 1, 1, 4), rtol=1e-4, atol=1e-4)
  x = rnd(1, 4, 6, 7)
  np.testing.assert_allclose(Tensor(x).conv2d(Tensor(w), groups=4, padding=1).numpy(), np_conv1(x, w, np.zeros(4), 1, 1, 1, 4), rtol=1e-4, atol=1e-4)
  for _ in range(2):
    x = rnd(2, 3, 8, 9)
    want = np.max([x[:, :, i:i + 6:1, j:j + 7] for i in range(3) for j in range(3)], axis=0)
    np.testing.assert_allclose(Tensor(x).max_pool2d(3, 1).numpy(), want)
