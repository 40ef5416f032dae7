"""Convolutions, pooling, interpolate, attention and normalisation against small numpy references (CPU only: the kernels are big)."""
import itertools, math
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

R = np.random.default_rng(1)
def rnd(*shape): return R.standard_normal(shape).astype(np.float32)

def np_conv(x, w, b=None, stride=1, dilation=1, pads=0, groups=1):
  """direct loops over outputs: x (N, C, *sp), w (Cout, C/groups, *k); pads: one (before, after) per spatial axis"""
  nd = w.ndim - 2
  st, dl = (stride,)*nd if isinstance(stride, int) else stride, (dilation,)*nd if isinstance(dilation, int) else dilation
  pads = [(pads, pads)]*nd if isinstance(pads, int) else pads
  x = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pads])
  ks = w.shape[2:]
  out = [(x.shape[2+a] - dl[a]*(ks[a]-1) - 1)//st[a] + 1 for a in range(nd)]
  cout, cin_g = w.shape[:2]
  ret = np.zeros((x.shape[0], cout, *out), np.float64)
  for co in range(cout):
    g = co // (cout // groups)
    for o in itertools.product(*[range(n) for n in out]):
      win = x[(slice(None), slice(g*cin_g, (g+1)*cin_g)) + tuple(slice(o[a]*st[a], o[a]*st[a] + dl[a]*(ks[a]-1) + 1, dl[a]) for a in range(nd))]
      ret[(slice(None), co) + o] = (win * w[co]).reshape(x.shape[0], -1).sum(1)
  return ret + (0 if b is None else b.reshape(1, -1, *([1]*nd)))

@pytest.mark.parametrize("kw", [dict(), dict(stride=2), dict(dilation=2, padding=1), dict(groups=2, padding=(1, 2)), dict(stride=(2, 1), padding="same"),
                                dict(padding=(1, 0, 2, 1)), dict(padding="valid", stride=3, dilation=(1, 2))])
def test_conv2d(kw):
  if kw.get("padding") == "same": kw["stride"] = 1
  x, w, b = rnd(2, 4, 7, 8), rnd(6, 4 // kw.get("groups", 1), 3, 3), rnd(6)
  p = kw.get("padding", 0)
  pads = {"same": [(1, 1), (1, 1)], "valid": 0}.get(p, p) if isinstance(p, str) else p
  if isinstance(p, tuple): pads = [(p[0], p[0]), (p[1], p[1])] if len(p) == 2 else [(p[2], p[3]), (p[0], p[1])]
  want = np_conv(x, w, b, kw.get("stride", 1), kw.get("dilation", 1), pads, kw.get("groups", 1))
  np.testing.assert_allclose(Tensor(x).conv2d(Tensor(w), Tensor(b), **kw).numpy(), want, rtol=1e-4, atol=1e-4)

def np_conv_grads(x, w, g, stride, dilation, pads, groups):
  """d(sum(conv * g))/dx and /dw by taps: each tap (ky, kx) reads the padded input at o*s + k*d, so its weight gradient is that strided
  slice against g and its input gradient is g through the tap's weights, added back at the same slice"""
  (n, cin, h, wd), (cout, cin_g, kh, kw) = x.shape, w.shape
  xp = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in pads]).astype(np.float64)
  dxp, dw = np.zeros_like(xp), np.zeros(w.shape)
  oh, ow = g.shape[2:]
  for grp, ky, kx in itertools.product(range(groups), range(kh), range(kw)):
    ci, co = slice(grp*cin_g, (grp+1)*cin_g), slice(grp*(cout//groups), (grp+1)*(cout//groups))
    sl = (slice(None), ci, slice(ky*dilation[0], ky*dilation[0] + (oh-1)*stride[0] + 1, stride[0]),
          slice(kx*dilation[1], kx*dilation[1] + (ow-1)*stride[1] + 1, stride[1]))
    dw[co, :, ky, kx] = np.einsum("nchw,nohw->oc", xp[sl], g[:, co])
    dxp[sl] += np.einsum("nohw,oc->nchw", g[:, co], w[co, :, ky, kx])
  return dxp[:, :, pads[0][0]:pads[0][0]+h, pads[1][0]:pads[1][0]+wd], dw

# out widths 8 and 16 run the direct form (whole vectors along the row), the others the im2col matmul form (one input channel: a row
# of 9 taps, whose gradient is written channels-last)
def _check_conv_and_grads(x, w, b, want, stride, dil, pads, groups, conv_kw:dict):
  """conv2d(**conv_kw) of x, w, b against numpy's `want`, then its input, weight and bias gradients against numpy's for a random g"""
  g = rnd(*want.shape)
  tx, tw, tb = (Tensor(a, requires_grad=True) for a in (x, w, b))
  out = tx.conv2d(tw, tb, **conv_kw)
  (out * Tensor(g)).sum().backward()
  np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
  dx, dw = np_conv_grads(x, w, g, stride, dil, pads, groups)
  np.testing.assert_allclose(tx.grad.numpy(), dx, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(tw.grad.numpy(), dw, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(tb.grad.numpy(), g.sum((0, 2, 3)), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("shape,kw", [((2, 4, 6, 10), dict()), ((2, 4, 5, 16), dict(padding=1)), ((2, 4, 7, 9), dict(stride=2, padding=(0, 1))),
                                      ((1, 4, 9, 13), dict(dilation=2, padding=1)), ((2, 4, 6, 7), dict(groups=2, stride=(1, 2))),
                                      ((2, 6, 8, 9), dict(groups=3, padding=(1, 0))), ((2, 1, 7, 12), dict())])
def test_conv2d_gradients_both_forms(shape, kw):
  from tinygrad.tensor_conv import _im2col_pays
  x, g = rnd(*shape), None
  groups = kw.get("groups", 1)
  w, b = rnd(6, shape[1] // groups, 3, 3), rnd(6)
  p = kw.get("padding", 0)
  pads = [(p, p), (p, p)] if isinstance(p, int) else [(p[0], p[0]), (p[1], p[1])]
  stride, dil = kw.get("stride", 1), kw.get("dilation", 1)
  stride, dil = (stride, stride) if isinstance(stride, int) else stride, (dil, dil) if isinstance(dil, int) else dil
  want = np_conv(x, w, b, stride, dil, pads, groups)
  _check_conv_and_grads(x, w, b, want, stride, dil, pads, groups, kw)
  flat = [q for pr in reversed(pads) for q in pr]
  assert _im2col_pays(shape[0], shape[1], (3, 3), stride, dil, flat, shape[2:]) == (want.shape[-1] % 8 != 0 or stride[1] != 1)

# a depthwise conv (one input channel per group, any multiplier) runs the direct form when a gradient flows (tensor_conv._depthwise): rows that 16 does not divide, a multiplier of 2, a stride, dilation, a 5x5 kernel
@pytest.mark.parametrize("shape,cout,kw", [((2, 8, 12, 28), 8, dict(groups=8, padding=1)), ((2, 4, 9, 11), 8, dict(groups=4, padding=1)),
                                           ((1, 6, 13, 17), 6, dict(groups=6, stride=2, padding=(1, 0))),
                                           ((2, 4, 10, 12), 4, dict(groups=4, dilation=2, padding=2)), ((1, 3, 20, 19), 3, dict(groups=3, padding=2))])
def test_depthwise_conv_direct_with_gradients(shape, cout, kw):
  from tinygrad.tensor_conv import _direct_forward, _out_sizes, _flat_pads
  k = 5 if shape[2] == 20 else 3
  x, w, b = rnd(*shape), rnd(cout, 1, k, k), rnd(cout)
  p, groups = kw.get("padding", 0), kw["groups"]
  pads = [(p, p), (p, p)] if isinstance(p, int) else [(p[0], p[0]), (p[1], p[1])]
  stride, dil = (kw.get("stride", 1),)*2, (kw.get("dilation", 1),)*2
  tw = Tensor(w, requires_grad=True)
  out = _out_sizes(shape[2:], (k, k), stride, dil, _flat_pads(p, (k, k), dil, stride))
  assert _direct_forward(Tensor(x), tw, groups, out)
  _check_conv_and_grads(x, w, b, np_conv(x, w, b, stride, dil, pads, groups), stride, dil, pads, groups, kw)

# a depthwise conv whose output rows are shorter than a vector of 16 (13-15: padded up to one, codegen/opt/heuristic.py PAD_WIDE), with
# paddings 0/1/2, a stride, dilation and a multiplier of 2; forward alone (no gradient: the pad copy and the conv kernel) and with both
# gradients
@pytest.mark.parametrize("shape,cout,kw", [((2, 4, 14, 14), 4, dict(groups=4, padding=1)), ((1, 4, 15, 17), 4, dict(groups=4)),
                                           ((2, 3, 13, 12), 3, dict(groups=3, padding=2)), ((1, 4, 27, 28), 4, dict(groups=4, stride=2, padding=1)),
                                           ((1, 2, 16, 17), 4, dict(groups=2, dilation=2, padding=1))])
def test_depthwise_conv_short_rows(shape, cout, kw):
  x, w, b = rnd(*shape), rnd(cout, 1, 3, 3), rnd(cout)
  p, groups = kw.get("padding", 0), kw["groups"]
  stride, dil = (kw.get("stride", 1),)*2, (kw.get("dilation", 1),)*2
  want = np_conv(x, w, b, stride, dil, [(p, p), (p, p)], groups)
  assert 13 <= want.shape[-1] <= 15
  np.testing.assert_allclose(Tensor(x).conv2d(Tensor(w), Tensor(b), **kw).numpy(), want, rtol=1e-4, atol=1e-4)
  _check_conv_and_grads(x, w, b, want, stride, dil, [(p, p), (p, p)], groups, kw)

# a depthwise conv whose output rows are longer than a vector of 16 and no multiple of it: the last vector of a row is shifted back over
# the one before (codegen/opt/overlap.py), forward and gradients; a stride, padding 2, dilation and a 5x5 kernel
@pytest.mark.parametrize("shape,k,kw", [((2, 4, 40, 40), 3, dict(stride=2, padding=1)), ((1, 3, 30, 45), 3, dict(padding=2)),
                                        ((2, 4, 20, 33), 3, dict(dilation=2, padding=2)), ((1, 4, 24, 70), 5, dict(stride=2, padding=2))])
def test_depthwise_conv_rows_past_a_vector(shape, k, kw):
  x, w, b = rnd(*shape), rnd(shape[1], 1, k, k), rnd(shape[1])
  p, groups = kw.get("padding", 0), shape[1]
  stride, dil = (kw.get("stride", 1),)*2, (kw.get("dilation", 1),)*2
  want = np_conv(x, w, b, stride, dil, [(p, p), (p, p)], groups)
  assert want.shape[-1] > 16 and want.shape[-1] % 16
  np.testing.assert_allclose(Tensor(x).conv2d(Tensor(w), Tensor(b), groups=groups, **kw).numpy(), want, rtol=1e-4, atol=1e-4)
  _check_conv_and_grads(x, w, b, want, stride, dil, [(p, p), (p, p)], groups, dict(groups=groups, **kw))

# the direct form's weight gradient summed per image, then over the images: where the batch's output gradient is past L2 and one
# image's is not (L2_BYTES lowered to one image's to take that path at small shapes), with groups, a stride along the rows and dilation
@pytest.mark.parametrize("shape,cout,kw", [((3, 4, 6, 8), 6, dict(padding=1)), ((2, 6, 5, 10), 4, dict(groups=2)),
                                           ((2, 4, 9, 16), 6, dict(stride=(2, 1), dilation=(1, 2), padding=(0, 2)))])
def test_conv2d_weight_gradient_per_image(shape, cout, kw, monkeypatch):
  import tinygrad.codegen.opt.heuristic as heuristic
  from tinygrad.tensor_conv import _weight_grad_per_image
  groups, p = kw.get("groups", 1), kw.get("padding", 0)
  x, w = rnd(*shape), rnd(cout, shape[1] // groups, 3, 3)
  pads = [(p, p), (p, p)] if isinstance(p, int) else [(p[0], p[0]), (p[1], p[1])]
  stride, dil = kw.get("stride", (1, 1)), kw.get("dilation", (1, 1))
  want = np_conv(x, w, None, stride, dil, pads, groups)
  monkeypatch.setattr(heuristic, "L2_BYTES", want[0].size * 4)  # one image of fp32
  g = rnd(*want.shape)
  tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
  assert _weight_grad_per_image(tx, tw, want.shape[2:])
  out = tx.conv2d(tw, **kw)
  (out * Tensor(g)).sum().backward()
  np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
  dx, dw = np_conv_grads(x, w, g, stride, dil, pads, groups)
  np.testing.assert_allclose(tx.grad.numpy(), dx, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(tw.grad.numpy(), dw, rtol=1e-4, atol=1e-4)

def test_conv2d_weight_gradient_per_image_only_past_l2():
  from tinygrad.tensor_conv import _weight_grad_per_image
  w = Tensor(rnd(64, 64, 3, 3), requires_grad=True)
  # b8 64 channels at 56x56: 8*64*3136 floats, 6.4 MB of output gradient; one image (800 KB) stays in L2; one at 112x112 (3.2 MB)
  # does not; no gradient, no split
  assert _weight_grad_per_image(Tensor.empty(8, 64, 58, 58), w, (56, 56))
  assert not _weight_grad_per_image(Tensor.empty(4, 64, 114, 114), w, (112, 112))
  assert not _weight_grad_per_image(Tensor.empty(1, 64, 58, 58), w, (56, 56))
  assert not _weight_grad_per_image(Tensor.empty(8, 64, 10, 10), w, (8, 8))
  assert not _weight_grad_per_image(Tensor.empty(8, 64, 58, 58), Tensor(rnd(64, 64, 3, 3)), (56, 56))

# the input gradient as one conv (conv_transpose2d of the output gradient) against numpy's taps: strides with rows past the last window,
# paddings 0/1/2 and uneven ones, dilation, groups, depthwise, 1x1 and 5x5 kernels, odd sizes
@pytest.mark.parametrize("shape,cout,k,groups,stride,dil,pads", [
  ((2, 4, 7, 9), 6, 3, 1, (1, 1), (1, 1), [(1, 1), (1, 1)]), ((2, 4, 9, 8), 6, 3, 1, (2, 2), (1, 1), [(1, 1), (1, 1)]),
  ((1, 4, 10, 11), 4, 3, 1, (2, 2), (1, 1), [(0, 0), (0, 0)]), ((2, 4, 9, 9), 6, 3, 2, (1, 1), (2, 2), [(2, 2), (2, 2)]),
  ((2, 6, 8, 7), 6, 3, 6, (1, 1), (1, 1), [(1, 1), (1, 1)]), ((2, 4, 6, 5), 8, 1, 1, (1, 1), (1, 1), [(0, 0), (0, 0)]),
  ((2, 4, 8, 9), 6, 3, 1, (2, 1), (1, 2), [(0, 1), (2, 1)]), ((1, 4, 11, 12), 4, 5, 2, (3, 2), (1, 1), [(2, 2), (1, 1)])])
def test_input_gradient_as_conv(shape, cout, k, groups, stride, dil, pads):
  from tinygrad.tensor_conv import _input_gradient
  x, w = rnd(*shape), rnd(cout, shape[1] // groups, k, k)
  g = rnd(*np_conv(x, w, None, stride, dil, pads, groups).shape)
  dx, _ = np_conv_grads(x, w, g, stride, dil, pads, groups)
  flat = [q for pr in reversed(pads) for q in pr]
  np.testing.assert_allclose(_input_gradient(Tensor(g), Tensor(w), shape[2:], groups, stride, dil, flat).numpy(), dx, rtol=1e-4, atol=1e-4)

def _holds_custom_gradient(t) -> bool:
  from tinygrad.uop import Ops
  return any(u.op is Ops.CUSTOM_GRADIENT for u in t.uop.toposort())

# conv2d's direct form in training gives its input gradient as that conv (a CUSTOM_GRADIENT node); two forward/backward passes add up
# in .grad as a training loop's do without zero_grad. Rows of whole vectors, or of 20 with 72 taps*channels (_direct_trains); fp16
@pytest.mark.parametrize("shape,cout,kw,dtype", [((2, 4, 6, 16), 6, dict(padding=1), "float32"),
                                                 ((2, 4, 9, 16), 6, dict(stride=(2, 1), padding=2, dilation=2), "float32"),
                                                 ((2, 8, 5, 18), 6, dict(groups=2), "float32"), ((1, 8, 6, 20), 8, dict(padding=(0, 1)), "float32"),
                                                 ((2, 4, 5, 18), 4, dict(groups=4), "float32"), ((2, 4, 6, 16), 6, dict(padding=1), "float16")])
def test_direct_form_trains_with_conv_input_gradient(shape, cout, kw, dtype):
  groups, p = kw.get("groups", 1), kw.get("padding", 0)
  x, w = rnd(*shape).astype(dtype), rnd(cout, shape[1] // groups, 3, 3).astype(dtype)
  pads = [(p, p), (p, p)] if isinstance(p, int) else [(p[0], p[0]), (p[1], p[1])]
  stride, dil = kw.get("stride", (1, 1)), kw.get("dilation", 1)
  dil = (dil, dil) if isinstance(dil, int) else dil
  want = np_conv(x.astype(np.float64), w.astype(np.float64), None, stride, dil, pads, groups)
  g = rnd(*want.shape)
  dx, dw = np_conv_grads(x.astype(np.float64), w.astype(np.float64), g, stride, dil, pads, groups)
  tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=2e-2, atol=0.25)  # fp16 sums: an ulp at 32 is 0.03
  tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
  for _ in range(2):
    out = tx.conv2d(tw, **kw)
    assert _holds_custom_gradient(out)
    (out * Tensor(g.astype(dtype))).sum().backward()
    np.testing.assert_allclose(out.numpy(), want, **tol)
  assert tx.grad.dtype == tx.dtype
  np.testing.assert_allclose(tx.grad.numpy(), 2 * dx, **tol)
  np.testing.assert_allclose(tw.grad.numpy(), 2 * dw, **tol)

def test_direct_form_in_training_choice():
  from tinygrad.tensor_conv import _direct_trains
  def trains(n, cin, hw, cout, stride=1, pad=1, x_grad=True):
    x, w = Tensor.empty(n, cin, hw, hw, requires_grad=x_grad), Tensor.empty(cout, cin, 3, 3, requires_grad=True)
    out = ((hw + 2*pad - 3) // stride + 1,)*2
    return _direct_trains(x, w, (3, 3), (stride, stride), [pad]*4, out)
  assert trains(8, 128, 28, 128) and trains(8, 64, 28, 64), "rows of 28: 3.5 vectors"
  assert not trains(8, 256, 14, 256), "rows of 14: the per-image weight gradient has no vector axis"
  assert not trains(64, 32, 13, 64, pad=0), "MNIST's conv-2 (rows of 11)"
  assert not trains(64, 1, 28, 32, pad=0, x_grad=False), "MNIST's conv-1: 9 taps, no input gradient"
  assert not trains(8, 64, 56, 128, stride=2), "a strided row"

@pytest.mark.parametrize("shape,cout,kw", [((2, 16, 7, 7), 16, dict(padding=1)), ((2, 6, 9, 9), 32, dict(stride=2, padding=1)),
                                           ((1, 32, 6, 11), 32, dict(groups=2, padding=(0, 1))), ((2, 4, 7, 7), 16, dict(bias=True)),
                                           # a weight gradient whose tile upcasts whole output axes before the thread split picks one
                                           ((2, 16, 13, 13), 32, dict(dilation=2, padding=2))])
def test_im2col_packed_forward_and_gradients(shape, cout, kw):
  # with a gradient, rows of no whole vectors keep im2col; PACK=2 packs its matmuls at any size, so the forward is the channels-last
  # matmul over Cout panels (read back through a permute) and both gradients read that layout's gradient. Rows of 16 taps*channels per
  # group (16 and 32 input channels) write the windows panel-major as well
  from tinygrad.helpers import Context
  from tinygrad.schedule import pack  # noqa: F401  (defines PACK)
  from tinygrad.tensor_conv import _cols_in_panels
  kw = dict(kw)
  groups, use_bias = kw.get("groups", 1), kw.pop("bias", False)
  x, w, b = rnd(*shape), rnd(cout, shape[1] // groups, 3, 3), rnd(cout)
  p, stride, dil = kw.get("padding", 0), kw.get("stride", 1), kw.get("dilation", 1)
  pads = [(p, p), (p, p)] if isinstance(p, int) else [(p[0], p[0]), (p[1], p[1])]
  want = np_conv(x, w, b if use_bias else None, (stride, stride), (dil, dil), pads, groups)
  g = rnd(*want.shape)
  with Context(PACK=2):
    tx, tw, tb = (Tensor(a, requires_grad=True) for a in (x, w, b))
    kk = shape[1] // groups * 9
    assert _cols_in_panels(tw, groups, 1, kk) == (kk % 16 == 0) and not _cols_in_panels(Tensor(w), groups, 1, kk), "no weight gradient"
    out = tx.conv2d(tw, tb if use_bias else None, **kw)
    (out * Tensor(g)).sum().backward()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
    dx, dw = np_conv_grads(x, w, g, (stride, stride), (dil, dil), pads, groups)
    np.testing.assert_allclose(tx.grad.numpy(), dx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tw.grad.numpy(), dw, rtol=1e-4, atol=1e-4)
    if use_bias: np.testing.assert_allclose(tb.grad.numpy(), g.sum((0, 2, 3)), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("groups,stride", [(1, (1, 1)), (2, (1, 1)), (1, (2, 2)), (2, (3, 2))])
def test_pointwise_conv(groups, stride):
  # a 1x1 conv without padding is a matmul per image over its pixels as one axis (strided: those pixels written out first): forward and
  # both gradients, packed (PACK=2) or not
  from tinygrad.helpers import Context
  from tinygrad.schedule import pack  # noqa: F401  (defines PACK)
  x, w, b = rnd(2, 4, 5, 7), rnd(16, 4 // groups, 1, 1), rnd(16)
  want = np_conv(x, w, b, stride, groups=groups)
  g = rnd(*want.shape)
  dx, dw = np_conv_grads(x, w, g, stride, (1, 1), [(0, 0), (0, 0)], groups)
  for pk in (0, 2):
    with Context(PACK=pk):
      tx, tw, tb = (Tensor(a, requires_grad=True) for a in (x, w, b))
      out = tx.conv2d(tw, tb, groups=groups, stride=stride)
      (out * Tensor(g)).sum().backward()
      np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
      np.testing.assert_allclose(tx.grad.numpy(), dx, rtol=1e-4, atol=1e-4)
      np.testing.assert_allclose(tw.grad.numpy(), dw, rtol=1e-4, atol=1e-4)
      no_bias = Tensor(x).conv2d(Tensor(w), groups=groups, stride=stride).numpy()
      np.testing.assert_allclose(no_bias, want - b.reshape(1, -1, 1, 1), rtol=1e-4, atol=1e-4)

def test_im2col_choice():
  from tinygrad.tensor_conv import _im2col_pays
  # the train step's conv 32->64 on 13x13 (rows of 11): windows written out; the suite's 64->64 56x56 pad 1: direct
  assert _im2col_pays(64, 32, (3, 3), (1, 1), (1, 1), [0]*4, (13, 13))
  assert not _im2col_pays(8, 64, (3, 3), (1, 1), (1, 1), [1]*4, (56, 56))
  assert _im2col_pays(8, 64, (3, 3), (2, 2), (1, 1), [1]*4, (56, 56)), "a strided row has no stride-1 lanes"
  assert not _im2col_pays(64, 64, (3, 3), (1, 1), (1, 1), [0]*4, (227, 227)), "past the size cap the windows stay a view"
  assert not _im2col_pays(4, 8, (1, 1), (1, 1), (1, 1), [0]*4, (7, 7)), "a 1x1 kernel is a matmul already"

@pytest.mark.parametrize("shape,cout,kw", [((2, 8, 7, 7), 16, dict(padding=1)), ((2, 3, 15, 15), 16, dict(stride=2, padding=3)),
                                           ((1, 8, 9, 10), 32, dict(groups=2, stride=(1, 2))), ((2, 4, 6, 6), 16, dict(dilation=2, padding=2))])
def test_forward_conv_direct(shape, cout, kw):
  # rows that are no whole vectors (or strided) take the direct form when no gradient will flow, the weight packed along the output
  # channels (PACK=2: at any size) or not (im2col's window copy cost more than the missing vectors); with a gradient they keep im2col,
  # but for fewer output channels per group than a panel
  from tinygrad.helpers import Context
  from tinygrad.schedule import pack  # noqa: F401  (defines PACK)
  from tinygrad.tensor_conv import _direct_forward
  g = kw.get("groups", 1)
  x, w = rnd(*shape), rnd(cout, shape[1] // g, 3, 3)
  p, s, d = kw.get("padding", 0), kw.get("stride", 1), kw.get("dilation", 1)
  want = np_conv(x, w, None, s, d, p, kw.get("groups", 1))
  with Context(PACK=2):
    assert _direct_forward(Tensor(x), Tensor(w), g, want.shape[2:])
    assert not _direct_forward(Tensor(x), Tensor(w, requires_grad=True), g, want.shape[2:])
    np.testing.assert_allclose(Tensor(x).conv2d(Tensor(w), **kw).numpy(), want, rtol=1e-4, atol=1e-4)
  with Context(PACK=0):
    assert _direct_forward(Tensor(x), Tensor(w), g, want.shape[2:]), "no packing: still no window copy"
    assert not _direct_forward(Tensor(x), Tensor(w, requires_grad=True), g, want.shape[2:])
    np.testing.assert_allclose(Tensor(x).conv2d(Tensor(w), **kw).numpy(), want, rtol=1e-4, atol=1e-4)
    assert _direct_forward(Tensor(x), Tensor(w[:8 * g]), g, want.shape[2:]), "fewer output channels per group than a panel"
    assert not _direct_forward(Tensor(x), Tensor(w[:8 * g], requires_grad=True), g, want.shape[2:])

# fewer output channels per group than a panel (depthwise, a channel multiplier of 2, groups of 4): forward-only, the direct form (no
# window buffer); with gradients, im2col as before. Odd sizes, stride 2, dilation, no padding, a 5x5 kernel, a size-1 axis
@pytest.mark.parametrize("shape,cout,groups,kw", [((2, 6, 9, 11), 6, 6, dict(padding=1)), ((1, 4, 10, 9), 4, 4, dict(stride=2, padding=1)),
                                                  ((2, 3, 9, 9), 3, 3, dict(dilation=2)), ((2, 4, 7, 8), 8, 4, dict(padding=(1, 0))),
                                                  ((2, 8, 7, 7), 8, 2, dict(stride=(1, 2), padding=1)), ((1, 5, 8, 8), 5, 5, dict(padding=2, k=5)),
                                                  ((1, 2, 1, 5), 2, 2, dict(padding=1))])
def test_few_channels_per_group(shape, cout, groups, kw):
  from tinygrad.tensor_conv import _direct_forward
  kw = dict(kw)
  k = kw.pop("k", 3)
  x, w, b = rnd(*shape), rnd(cout, shape[1] // groups, k, k), rnd(cout)
  p = kw.get("padding", 0)
  pads = [(p, p), (p, p)] if isinstance(p, int) else [(p[0], p[0]), (p[1], p[1])]
  stride, dil = kw.get("stride", 1), kw.get("dilation", 1)
  stride, dil = (stride, stride) if isinstance(stride, int) else stride, (dil, dil) if isinstance(dil, int) else dil
  want = np_conv(x, w, b, stride, dil, pads, groups)
  assert _direct_forward(Tensor(x), Tensor(w), groups, want.shape[2:])
  np.testing.assert_allclose(Tensor(x).conv2d(Tensor(w), Tensor(b), groups=groups, **kw).numpy(), want, rtol=1e-4, atol=1e-4)
  # a non-contiguous input: the same values read through a transpose
  xt = Tensor(np.ascontiguousarray(x.transpose(0, 1, 3, 2))).permute(0, 1, 3, 2)
  np.testing.assert_allclose(xt.conv2d(Tensor(w), Tensor(b), groups=groups, **kw).numpy(), want, rtol=1e-4, atol=1e-4)
  _check_conv_and_grads(x, w, b, want, stride, dil, pads, groups, {**kw, "groups": groups})

# a strided conv with fewer output channels per group than a panel reads its input through the stride's phases (tensor_conv
# _phase_windows: the padded input written phase-major, taps padded to a multiple of the stride against zero weights): odd sizes, strides
# 2 and 3, one strided axis, padding 0/1/2, a kernel shorter than the stride, a channel multiplier of 2, 1-D; values and the input's
# gradient (a weight that takes a gradient keeps the strided windows: checked too)
@pytest.mark.parametrize("shape,cout,groups,k,kw", [((2, 2, 7, 67), 2, 2, 3, dict(stride=2, padding=1)), ((1, 3, 9, 70), 3, 3, 5, dict(stride=2, padding=2)),
                                                    ((1, 2, 10, 101), 2, 2, 3, dict(stride=3)), ((1, 2, 5, 66), 4, 2, 3, dict(stride=(1, 2), padding=1)),
                                                    ((1, 2, 8, 97), 2, 2, 2, dict(stride=3, padding=1)), ((1, 4, 9, 70), 4, 2, 7, dict(stride=2, padding=3))])
def test_strided_conv_through_phases(shape, cout, groups, k, kw):
  from tinygrad.tensor_conv import _phased
  x, w, b = rnd(*shape), rnd(cout, shape[1] // groups, k, k), rnd(cout)
  p, stride = kw.get("padding", 0), kw["stride"]
  stride = (stride, stride) if isinstance(stride, int) else stride
  want = np_conv(x, w, b, stride, 1, p, groups)
  assert _phased(Tensor(x), Tensor(w), groups, stride, (1, 1), want.shape[2:])
  assert not _phased(Tensor(x), Tensor(w, requires_grad=True), groups, stride, (1, 1), want.shape[2:]), "the weight takes a gradient"
  # the phases with the input's gradient (its own conv); with the weight's too, the strided windows
  g, tx = rnd(*want.shape), Tensor(x, requires_grad=True)
  out = tx.conv2d(Tensor(w), Tensor(b), groups=groups, **kw)
  (out * Tensor(g)).sum().backward()
  np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(tx.grad.numpy(), np_conv_grads(x, w, g, stride, (1, 1), [(p, p), (p, p)], groups)[0], rtol=1e-4, atol=1e-4)
  _check_conv_and_grads(x, w, b, want, stride, (1, 1), [(p, p), (p, p)], groups, {**kw, "groups": groups})
  # the conv's kernel reads its input along the output's rows with stride 1 (the strided windows step by the stride)
  from tinygrad.schedule.rangeify import create_schedule
  from tinygrad.uop import Ops, AxisType
  from tinygrad.codegen.opt.kernel import axes
  from tinygrad.codegen.opt.heuristic import _Access
  ast = create_schedule([Tensor(x).conv2d(Tensor(w), groups=groups, **kw).uop])[0][-1].ast
  row = [r for r in axes(ast) if r.arg[1] is AxisType.LOOP][-1]
  loads = [_Access(u.src[0].src[1], False) for u in ast.toposort() if u.op is Ops.LOAD and len(u.src[0].src) == 2]
  assert [a for a in loads if row in a.deps] and all(a.stride.get(row) == 1 for a in loads if row in a.deps)
  x1, w1 = rnd(2, 4, 71), rnd(4, 1, 3)
  np.testing.assert_allclose(Tensor(x1).conv2d(Tensor(w1), groups=4, stride=2, padding=1).numpy(),
                             np_conv(x1, w1, None, 2, 1, 1, 4), rtol=1e-4, atol=1e-4)

def test_phases_only_where_rows_hold_the_vectors():
  from tinygrad.tensor_conv import _phased
  x, out = Tensor.empty(1, 32, 9, 66), (4, 32)
  assert _phased(x, Tensor.empty(32, 1, 3, 3), 32, (2, 2), (1, 1), out)
  assert not _phased(x, Tensor.empty(32, 1, 3, 3), 32, (1, 1), (1, 1), out), "no stride"
  assert not _phased(x, Tensor.empty(32, 1, 3, 3), 32, (2, 2), (2, 2), out), "dilated"
  assert not _phased(x, Tensor.empty(64, 32, 3, 3), 1, (2, 2), (1, 1), out), "a panel of output channels holds the vectors"
  assert not _phased(x, Tensor.empty(32, 1, 3, 3), 32, (2, 2), (1, 1), (4, 31)), "a row shorter than two panels"

def test_conv_1d_3d_and_errors():
  x, w = rnd(2, 3, 9), rnd(4, 3, 2)
  np.testing.assert_allclose(Tensor(x).conv2d(Tensor(w), stride=2, padding=1).numpy(), np_conv(x, w, stride=2, pads=1), rtol=1e-4, atol=1e-4)
  x3, w3 = rnd(1, 2, 4, 3, 5), rnd(2, 2, 2, 2, 3)
  np.testing.assert_allclose(Tensor(x3).conv2d(Tensor(w3)).numpy(), np_conv(x3, w3), rtol=1e-4, atol=1e-4)
  with pytest.raises(ValueError, match=r"input \(2, 3, 9\) with weight \(4, 2, 2\).*groups=1"): Tensor(x).conv2d(Tensor.ones(4, 2, 2))
  with pytest.raises(ValueError, match="'same' needs stride 1"): Tensor(x).conv2d(Tensor(w), stride=2, padding="same")
  with pytest.raises(ValueError, match="doesn't fit an axis of size"): Tensor(x).conv2d(Tensor.ones(4, 3, 10))

def np_conv_transpose(x, w, stride, padding, output_padding, dilation, groups):
  """scatter form: every input element adds weight * value to the output window it came from"""
  n, cin, *sp = x.shape
  _, cout_g, *ks = w.shape
  st, pd, op, dl = ((v,)*len(sp) if isinstance(v, int) else v for v in (stride, padding, output_padding, dilation))
  out = [(i-1)*s - 2*p + d*(k-1) + o + 1 for i, k, s, p, d, o in zip(sp, ks, st, pd, dl, op)]
  full = np.zeros((n, cout_g*groups, *[o + 2*p for o, p in zip(out, pd)]))
  cin_g = cin // groups
  for ci in range(cin):
    g = ci // cin_g
    for pos in itertools.product(*[range(i) for i in sp]):
      for kp in itertools.product(*[range(k) for k in ks]):
        tgt = tuple(p*s + k*d for p, k, s, d in zip(pos, kp, st, dl))
        full[(slice(None), slice(g*cout_g, (g+1)*cout_g)) + tgt] += x[(slice(None), ci) + pos][:, None] * w[(ci, slice(None)) + kp]
  return full[(slice(None), slice(None)) + tuple(slice(p, p + o) for o, p in zip(out, pd))]

@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", [(1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (3, 0, 2, 2, 2), (2, 2, 0, 1, 2)])
def test_conv_transpose2d(stride, padding, output_padding, dilation, groups):
  x, w = rnd(2, 4, 3, 4), rnd(4, 3, 3, 2)
  got = Tensor(x).conv_transpose2d(Tensor(w), groups=groups, stride=stride, dilation=dilation, padding=padding, output_padding=output_padding)
  np.testing.assert_allclose(got.numpy(), np_conv_transpose(x, w, stride, padding, output_padding, dilation, groups), rtol=1e-4, atol=1e-4)

def np_conv_transpose_grads(x, w, g, stride, padding, dilation, groups):
  """d(sum(conv_transpose * g))/dx and /dw by the scatter form's loops: each product x * w went to one output position, so each gets
  the gradient there (zero in the cropped border)"""
  n, cin, *sp = x.shape
  _, cout_g, *ks = w.shape
  st, pd, dl = ((v,)*len(sp) if isinstance(v, int) else v for v in (stride, padding, dilation))
  gf = np.pad(g.astype(np.float64), [(0, 0), (0, 0)] + [(p, p) for p in pd])
  gf = np.pad(gf, [(0, 0), (0, 0)] + [(0, max(0, (i-1)*s + (k-1)*d + 1 - f)) for i, k, s, d, f in zip(sp, ks, st, dl, gf.shape[2:])])
  dx, dw = np.zeros(x.shape), np.zeros(w.shape)
  cin_g = cin // groups
  for ci in range(cin):
    co = slice((ci // cin_g)*cout_g, (ci // cin_g + 1)*cout_g)
    for pos in itertools.product(*[range(i) for i in sp]):
      for kp in itertools.product(*[range(k) for k in ks]):
        tgt = tuple(p*s + k*d for p, k, s, d in zip(pos, kp, st, dl))
        gv = gf[(slice(None), co) + tgt]  # (n, cout_g)
        dx[(slice(None), ci) + pos] += gv @ w[(ci, slice(None)) + kp]
        dw[(ci, slice(None)) + kp] += x[(slice(None), ci) + pos] @ gv
  return dx, dw

# a strided conv_transpose as one conv over its stride's phases: kernels a multiple of the stride or not, padding past a phase's taps,
# output_padding, groups, a 1-D and a 3-D case; forward and both gradients
@pytest.mark.parametrize("xs,ws,stride,padding,output_padding,groups", [((2, 4, 5, 6), (4, 3, 4, 4), 2, 1, 0, 1), ((1, 4, 4, 5), (4, 2, 3, 3), 2, 0, 1, 2),
                                                                         ((2, 2, 3, 3), (2, 3, 5, 3), 3, 2, 2, 1), ((2, 4, 7), (4, 3, 4), 3, 1, 0, 1),
                                                                         ((1, 2, 3, 2, 3), (2, 2, 2, 3, 2), 2, 0, 1, 2), ((1, 3, 6, 7), (3, 1, 3, 3), 2, 3, 1, 3),
                                                                         ((2, 3, 3, 4), (3, 2, 2, 2), 3, 0, 1, 1), ((2, 4, 3, 5), (4, 2, 2, 2), 2, 0, 1, 1),
                                                                         ((1, 2, 4, 3), (2, 3, 1, 1), 2, 0, 1, 1), ((2, 4, 5, 6), (4, 8, 4, 4), 2, 1, 0, 1),
                                                                         ((2, 8, 3, 4), (8, 8, 2, 2), 2, 0, 0, 2), ((2, 4, 10, 12), (4, 8, 4, 4), 2, 1, 0, 1),
                                                                         ((2, 4, 28), (4, 8, 4), 2, 1, 0, 1)])
def test_conv_transpose_phases(xs, ws, stride, padding, output_padding, groups, monkeypatch):
  # PACK=2 packs the phases' conv along its output channels at any size (at 16 and more: the last four cases), whose buffer is then
  # channels-last (rows of 11, 13 and 29: no upcast divides them, the tile pads them); unpacked, the conv is written out before the
  # interleave. A kernel no multiple of the stride is one conv with zero
  # taps, or (MIN_SKIPPED_MACS 0, no gradient) a conv per class of phases with as many taps
  from tinygrad.helpers import Context
  from tinygrad.schedule import pack  # noqa: F401  (defines PACK)
  from tinygrad import tensor_conv
  from tinygrad.tensor_conv import _phase_taps
  x, w, b = rnd(*xs), rnd(*ws), rnd(ws[1] * groups)
  nd = len(xs) - 2
  assert _phase_taps(xs[2:], ws[2:], (stride,)*nd, (1,)*nd, (padding,)*nd, (output_padding,)*nd) is not None
  want = np_conv_transpose(x, w, stride, padding, output_padding, 1, groups) + b.reshape((1, -1) + (1,)*nd)
  g = rnd(*want.shape)
  dx, dw = np_conv_transpose_grads(x, w, g, stride, padding, 1, groups)
  for pk, min_skipped in ((0, 1 << 62), (0, 0), (2, 0)):
    monkeypatch.setattr(tensor_conv, "MIN_SKIPPED_MACS", min_skipped)
    with Context(PACK=pk):
      np.testing.assert_allclose(Tensor(x).conv_transpose2d(Tensor(w), Tensor(b), groups=groups, stride=stride, padding=padding,
                                                            output_padding=output_padding).numpy(), want, rtol=1e-4, atol=1e-4)
      tx, tw, tb = (Tensor(a, requires_grad=True) for a in (x, w, b))
      out = tx.conv_transpose2d(tw, tb, groups=groups, stride=stride, padding=padding, output_padding=output_padding)
      (out * Tensor(g)).sum().backward()
      np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
      np.testing.assert_allclose(tx.grad.numpy(), dx, rtol=1e-4, atol=1e-4)
      np.testing.assert_allclose(tw.grad.numpy(), dw, rtol=1e-4, atol=1e-4)
      np.testing.assert_allclose(tb.grad.numpy(), g.sum((0,) + tuple(range(2, 2 + nd))), rtol=1e-4, atol=1e-4)
  # no phases: a dilation along a strided axis
  assert _phase_taps((4, 4), (3, 3), (2, 2), (2, 2), (0, 0), (0, 0)) is None

# per-axis strides, paddings and output_paddings with a non-square kernel and groups: phases along one axis, a plain or dilated one
# along the other, against numpy's scatter loops, forward and both gradients
@pytest.mark.parametrize("stride,padding,output_padding,dilation", [((2, 3), (1, 0), (1, 2), 1), ((3, 1), (2, 1), (0, 0), (1, 2)),
                                                                    ((1, 2), (0, 2), (0, 1), (2, 1))])
def test_conv_transpose_per_axis(stride, padding, output_padding, dilation, monkeypatch):
  from tinygrad import tensor_conv
  # without a gradient, a class of phases per tap count along the kernel's 3 at stride 2 or 3 (MIN_SKIPPED_MACS 0)
  monkeypatch.setattr(tensor_conv, "MIN_SKIPPED_MACS", 0)
  x, w = rnd(2, 4, 4, 5), rnd(4, 3, 3, 4)
  want = np_conv_transpose(x, w, stride, padding, output_padding, dilation, 2)
  kw = dict(groups=2, stride=stride, padding=padding, output_padding=output_padding, dilation=dilation)
  np.testing.assert_allclose(Tensor(x).conv_transpose2d(Tensor(w), **kw).numpy(), want, rtol=1e-4, atol=1e-4)
  g = rnd(*want.shape)
  tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
  out = tx.conv_transpose2d(tw, **kw)
  (out * Tensor(g)).sum().backward()
  np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
  dx, dw = np_conv_transpose_grads(x, w, g, stride, padding, dilation, 2)
  np.testing.assert_allclose(tx.grad.numpy(), dx, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(tw.grad.numpy(), dw, rtol=1e-4, atol=1e-4)

def np_pool(x, k, s, pad, ceil_mode, reduce, count_include_pad=True):
  """torch's pooling rules by loops over output windows: -inf/0 padding, ceil_mode windows that start inside input or left padding"""
  H, W = x.shape[-2:]
  def n_out(i):
    span = i + 2*pad - k
    o = (-(-span // s) if ceil_mode else span // s) + 1
    return o - 1 if ceil_mode and (o-1)*s >= i + pad else o
  oh, ow = n_out(H), n_out(W)
  out, idx = np.zeros(x.shape[:-2] + (oh, ow), np.float64), np.zeros(x.shape[:-2] + (oh, ow), np.int64)
  for i, j in itertools.product(range(oh), range(ow)):
    h0, w0 = i*s - pad, j*s - pad
    h1, w1 = min(h0 + k, H + pad), min(w0 + k, W + pad)
    hs, ws = slice(max(h0, 0), min(h1, H)), slice(max(w0, 0), min(w1, W))
    win = x[..., hs, ws]
    if reduce == "max":
      flat = win.reshape(win.shape[:-2] + (-1,))
      out[..., i, j] = flat.max(-1)
      a = flat.argmax(-1)
      idx[..., i, j] = (hs.start + a // win.shape[-1]) * W + ws.start + a % win.shape[-1]
    else: out[..., i, j] = win.sum((-2, -1)) / ((h1 - h0) * (w1 - w0) if count_include_pad else win.shape[-2] * win.shape[-1])
  return out, idx

@pytest.mark.parametrize("k,s,pad,ceil_mode", [(2, 2, 0, False), (3, 2, 1, False), (3, 2, 1, True), (2, 3, 0, True), (3, 1, 1, False)])
def test_pools(k, s, pad, ceil_mode):
  x = rnd(2, 3, 7, 6)
  want, want_idx = np_pool(x, k, s, pad, ceil_mode, "max")
  got, got_idx = Tensor(x).max_pool2d(k, s, padding=pad, ceil_mode=ceil_mode, return_indices=True)
  np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
  np.testing.assert_array_equal(got_idx.numpy(), want_idx)
  assert got_idx.dtype is dtypes.int32  # tinygrad 0.14's (torch's is int64)
  for cip in (True, False):
    np.testing.assert_allclose(Tensor(x).avg_pool2d(k, s, padding=pad, ceil_mode=ceil_mode, count_include_pad=cip).numpy(),
                               np_pool(x, k, s, pad, ceil_mode, "avg", cip)[0], rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("k,s,d", [(2, 2, 1), (2, 3, 1), (2, 4, 2), (3, 3, 1)])
def test_disjoint_pool_windows_are_views_not_copies(k, s, d):
  # windows that don't overlap are cut out of rows (no expand), so the gradient is the same view backwards, not a sum over copies
  from tinygrad.uop import Ops
  x, H, W = rnd(2, 3, 11, 9), 11, 9
  t = Tensor(x, requires_grad=True)
  out = t.max_pool2d(k, s, dilation=d)
  assert not [u for u in out.uop.toposort() if u.op is Ops.EXPAND and t.uop in u.toposort()], "the input is copied per window tap"
  oh, ow = (H - d*(k-1) - 1)//s + 1, (W - d*(k-1) - 1)//s + 1
  up, want, grad = rnd(2, 3, oh, ow), np.zeros((2, 3, oh, ow), np.float32), np.zeros_like(x)
  for i, j in np.ndindex(oh, ow):  # random values: one max per window, and all of its gradient goes there
    win = x[:, :, i*s:i*s+d*(k-1)+1:d, j*s:j*s+d*(k-1)+1:d].reshape(2, 3, -1)
    want[:, :, i, j], a = win.max(-1), win.argmax(-1)
    for n, c in np.ndindex(2, 3): grad[n, c, i*s + a[n, c]//k*d, j*s + a[n, c] % k*d] += up[n, c, i, j]
  (out * Tensor(up)).sum().backward()
  np.testing.assert_allclose(out.numpy(), want)
  np.testing.assert_allclose(t.grad.numpy(), grad, rtol=1e-6)

def test_pool_defaults_dilation_and_unpool():
  x = rnd(1, 2, 6, 6)
  np.testing.assert_allclose(Tensor(x).max_pool2d().numpy(), x.reshape(1, 2, 3, 2, 3, 2).max((3, 5)))
  # atol: a float32 mean of four values ~1 that nearly cancel is off by a few 1e-8 in either summation order
  np.testing.assert_allclose(Tensor(x).avg_pool2d().numpy(), x.reshape(1, 2, 3, 2, 3, 2).mean((3, 5)), rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(Tensor(x).max_pool2d(2, 1, dilation=2).numpy(),
                             np.maximum.reduce([x[..., i:i+4, j:j+4] for i in (0, 2) for j in (0, 2)]))  # window taps 2 apart
  v, idx = Tensor(x).max_pool2d(2, return_indices=True)
  un = v.max_unpool2d(idx, 2).numpy()
  want = np.zeros_like(x).reshape(1, 2, 36)
  np.put_along_axis(want, idx.numpy().reshape(1, 2, -1), v.numpy().reshape(1, 2, -1), -1)
  np.testing.assert_array_equal(un, want.reshape(x.shape))
  assert v.max_unpool2d(idx, 2, output_size=(1, 2, 7, 7)).shape == (1, 2, 7, 7)

def np_interp_axis(x, axis, o, mode, align_corners):
  i = x.shape[axis]
  if mode == "nearest": src = np.minimum(np.floor(np.arange(o) * i / o).astype(int), i-1); return np.take(x, src, axis)
  if mode == "nearest-exact": src = np.minimum(np.floor((np.arange(o) + 0.5) * i / o).astype(int), i-1); return np.take(x, src, axis)
  src = np.arange(o) * (i-1) / (o-1) if align_corners and o > 1 else np.zeros(o) if align_corners else np.maximum((np.arange(o) + 0.5) * i / o - 0.5, 0)
  lo = np.minimum(np.floor(src).astype(int), i-1); hi = np.minimum(lo + 1, i-1); f = src - lo
  shape = [1]*x.ndim; shape[axis] = o
  return np.take(x, lo, axis) * (1 - f).reshape(shape) + np.take(x, hi, axis) * f.reshape(shape)

@pytest.mark.parametrize("mode,align_corners,size", [("linear", False, (7, 3)), ("bilinear", True, (2, 9)), ("linear", True, (1, 5)),
                                                     ("nearest", False, (9, 2)), ("nearest-exact", False, (3, 8))])
def test_interpolate(mode, align_corners, size):
  x = rnd(2, 3, 4, 5)
  want = x
  for a, o in zip((2, 3), size): want = np_interp_axis(want, a, o, mode, align_corners)
  np.testing.assert_allclose(Tensor(x).interpolate(size, mode, align_corners).numpy(), want, rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("shape,size", [((2, 3, 7, 9), (14, 18)), ((1, 2, 6, 5), (3, 2)), ((1, 1, 5, 7), (13, 11)), ((2, 1, 1, 4), (5, 1)),
                                        ((1, 2, 9, 3), (9, 7))])
@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_linear_ratios(shape, size, align_corners):
  # x2 (the survey's shape, small), x0.5, 5 -> 13 (a step of 5/13: 13 phases), an axis of 1 and an unchanged one, both align modes
  x = rnd(*shape)
  want = x
  for a, o in zip((2, 3), size): want = np_interp_axis(want, a, o, "linear", align_corners)
  np.testing.assert_allclose(Tensor(x).interpolate(size, "bilinear", align_corners).numpy(), want, rtol=1e-5, atol=1e-6)

def test_interpolate_linear_noncontiguous_trilinear_and_gradient():
  x = rnd(2, 5, 4, 3)
  want = np_interp_axis(np_interp_axis(x.transpose(0, 3, 2, 1), 2, 8, "linear", False), 3, 11, "linear", False)
  np.testing.assert_allclose(Tensor(x).permute(0, 3, 2, 1).interpolate((8, 11)).numpy(), want, rtol=1e-5, atol=1e-6)
  v = rnd(1, 2, 3, 4, 5)
  want = v
  for a, o in zip((2, 3, 4), (6, 3, 9)): want = np_interp_axis(want, a, o, "linear", True)
  np.testing.assert_allclose(Tensor(v).interpolate((6, 3, 9), "trilinear", True).numpy(), want, rtol=1e-5, atol=1e-6)
  # the gradient is the transposed resize: each output's weights flow back to its two neighbours (numpy: the matrix of the linear map)
  g, t = rnd(2, 3, 9, 10), Tensor(rnd(2, 3, 4, 5), requires_grad=True)
  (t.interpolate((9, 10)) * Tensor(g)).sum().backward()
  mats = [np_interp_axis(np.eye(n, dtype=np.float64), 0, o, "linear", False) for n, o in ((4, 9), (5, 10))]
  np.testing.assert_allclose(t.grad.numpy(), np.einsum("bcij,ip,jq->bcpq", g, *mats), rtol=1e-5, atol=1e-5)

def test_interpolate_cached_weights_stay_right():
  # the plan and its weight buffers are made once per size: a second call, another dtype, an in-place write into the input and a
  # backward() of a graph without requires_grad must all still match numpy, and the cached weights must never collect a gradient
  from tinygrad import dtypes
  x, y = rnd(1, 2, 5, 6), rnd(1, 2, 5, 6)
  want = lambda a: np_interp_axis(np_interp_axis(a, 2, 10, "linear", False), 3, 12, "linear", False)
  t = Tensor(x).realize()
  for _ in range(2): np.testing.assert_allclose(t.interpolate((10, 12)).numpy(), want(x), rtol=1e-5, atol=1e-6)
  t.assign(Tensor(y))
  np.testing.assert_allclose(t.interpolate((10, 12)).numpy(), want(y), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(t.cast(dtypes.float16).interpolate((10, 12)).numpy(), want(y), rtol=2e-3, atol=2e-3)
  u = Tensor(x)
  (u.interpolate((10, 12)) * 2).sum().backward()
  g1 = u.grad.numpy()
  u.grad = None
  (u.interpolate((10, 12)) * 2).sum().backward()  # again: the same gradient, nothing accumulated anywhere in between
  np.testing.assert_allclose(u.grad.numpy(), g1, rtol=1e-6)

def test_interpolate_linear_work_is_per_output():
  # two loads and a few flops per output, not a row of a (new, old) matrix: x2 along 512 elements did 2*512 flops per output
  from tinygrad.helpers import GlobalCounters
  x = Tensor(rnd(4, 512)).realize()
  GlobalCounters.reset()
  x.interpolate((1024,)).realize()
  assert GlobalCounters.global_ops < 16 * 4 * 1024, GlobalCounters.global_ops

def test_interpolate_ints_and_errors():
  assert Tensor([[1, 2], [3, 4]]).interpolate((4,), "nearest").tolist() == [[1, 1, 2, 2], [3, 3, 4, 4]]
  np.testing.assert_allclose(Tensor([0, 4]).interpolate((3,), align_corners=True).numpy(), [0, 2, 4])
  with pytest.raises(ValueError, match="'cubic'"): Tensor.ones(2, 2).interpolate((3, 3), "cubic")
  with pytest.raises(ValueError, match="'bilinear' resizes 2 axes"): Tensor.ones(2, 2).interpolate((3,), "bilinear")

def np_softmax(x): e = np.exp(x - x.max(-1, keepdims=True)); return e / e.sum(-1, keepdims=True)

def test_scaled_dot_product_attention():
  q, k, v = rnd(2, 3, 4, 8), rnd(2, 3, 5, 8), rnd(2, 3, 5, 6)
  s = q @ k.swapaxes(-1, -2) / math.sqrt(8)
  np.testing.assert_allclose(Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v)).numpy(), np_softmax(s) @ v, rtol=1e-5, atol=1e-5)
  causal = np.tril(np.ones((4, 5), bool))
  np.testing.assert_allclose(Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), is_causal=True).numpy(),
                             np_softmax(np.where(causal, s, -np.inf)) @ v, rtol=1e-5, atol=1e-5)
  bias = rnd(4, 5)
  np.testing.assert_allclose(Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), attn_mask=Tensor(bias)).numpy(),
                             np_softmax(s + bias) @ v, rtol=1e-5, atol=1e-5)
  keep = R.random((4, 5)) > 0.3; keep[:, 0] = True
  np.testing.assert_allclose(Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), attn_mask=Tensor(keep)).numpy(),
                             np_softmax(np.where(keep, s, -np.inf)) @ v, rtol=1e-5, atol=1e-5)
  kg, vg = rnd(2, 1, 5, 8), rnd(2, 1, 5, 6)  # one key/value head shared by 3 query heads
  np.testing.assert_allclose(Tensor(q).scaled_dot_product_attention(Tensor(kg), Tensor(vg), enable_gqa=True).numpy(),
                             np_softmax(q @ kg.swapaxes(-1, -2) / math.sqrt(8)) @ vg, rtol=1e-5, atol=1e-5)
  with pytest.raises(ValueError, match="attn_mask or is_causal"): Tensor(q).scaled_dot_product_attention(Tensor(k), Tensor(v), Tensor(keep), is_causal=True)

def np_attention(q, k, v, mask=None):
  """softmax(q @ k^T / sqrt(d) + mask) @ v and, for a gradient dO of the output, (dq, dk, dv)"""
  s = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])
  if mask is not None: s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
  p = np_softmax(s)
  def grads(do):
    dp = do @ v.swapaxes(-1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) / math.sqrt(q.shape[-1])
    return ds @ k, ds.swapaxes(-1, -2) @ q, p.swapaxes(-1, -2) @ do
  return p @ v, grads

# at the sizes of the matmuls' register tiles (6 rows x 4 panels of 16, padded) and past them, odd and short sequences: the masked scores
# are the first matmul's epilogue, the softmax one kernel, its weights the second matmul's operand
@pytest.mark.parametrize("B,H,T,S,D", [(2, 3, 67, 67, 32), (1, 2, 96, 96, 64), (1, 1, 1, 1, 8), (2, 2, 5, 130, 16)])
@pytest.mark.parametrize("mask", ["causal", "bool", "float", None])
def test_attention_matches_numpy_with_gradients(B, H, T, S, D, mask):
  q, k, v, do = rnd(B, T, H, D).transpose(0, 2, 1, 3), rnd(B, H, S, D), rnd(B, H, S, D), rnd(B, H, T, D)
  m = {"causal": np.tril(np.ones((T, S), bool)), "bool": R.random((T, S)) > 0.4, "float": rnd(T, S), None: None}[mask]
  if mask == "bool": m[:, 0] = True  # no row without a key
  want, grads = np_attention(q, k, v, m)
  # q as the model has it: (B, T, H, D) permuted to heads first, a view
  tq = Tensor(np.ascontiguousarray(q.transpose(0, 2, 1, 3)), requires_grad=True)
  tk, tv = Tensor(k, requires_grad=True), Tensor(v, requires_grad=True)
  kw = {"is_causal": True} if mask == "causal" else {"attn_mask": Tensor(m)} if m is not None else {}
  out = tq.permute(0, 2, 1, 3).scaled_dot_product_attention(tk, tv, **kw)
  np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
  (out * Tensor(do)).sum().backward()
  dq, dk, dv = grads(do)
  for t, g in ((tq, dq.transpose(0, 2, 1, 3)), (tk, dk), (tv, dv)): np.testing.assert_allclose(t.grad.numpy(), g, rtol=1e-3, atol=1e-4)

def test_norms():
  x = rnd(3, 4, 5)
  y = x - x.mean(-1, keepdims=True)
  np.testing.assert_allclose(Tensor(x).layernorm().numpy(), y / np.sqrt((y*y).mean(-1, keepdims=True) + 1e-5), rtol=1e-4, atol=1e-5)
  y = x - x.mean((1, 2), keepdims=True)
  np.testing.assert_allclose(Tensor(x).layernorm((1, 2), eps=0.1).numpy(), y / np.sqrt((y*y).mean((1, 2), keepdims=True) + 0.1), rtol=1e-4, atol=1e-5)
  w, b, m, inv = rnd(4), rnd(4), rnd(4), np.abs(rnd(4))
  sh = (1, 4, 1)
  np.testing.assert_allclose(Tensor(x).batchnorm(Tensor(w), Tensor(b), Tensor(m), Tensor(inv)).numpy(),
                             (x - m.reshape(sh)) * w.reshape(sh) * inv.reshape(sh) + b.reshape(sh), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(Tensor(x).batchnorm(None, None, Tensor(m[:3]), Tensor(inv[:3]), axis=0).numpy(),
                             (x - m[:3].reshape(3, 1, 1)) * inv[:3].reshape(3, 1, 1), rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("call,what", [(lambda x: x.conv2d(Tensor.ones(8, 3, 3, 3), stride=0), "stride 0"),
                                       (lambda x: x.conv2d(Tensor.ones(8, 3, 3, 3), dilation=(1, -1)), r"dilation \(1, -1\)"),
                                       (lambda x: x.conv_transpose2d(Tensor.ones(3, 4, 3, 3), stride=0), "stride 0"),
                                       (lambda x: x.max_pool2d(kernel_size=0), "kernel_size 0"),
                                       (lambda x: x.avg_pool2d(stride=(2, 0)), r"stride \(2, 0\)")])
def test_window_sizes_below_one_are_named(call, what):
  # a stride, dilation or window of 0 divided by zero deep in the shape arithmetic; a negative one built a wrong view
  with pytest.raises(ValueError, match=what + " must be at least 1"): call(Tensor.ones(1, 3, 16, 16))

def test_interpolate_keeps_the_dtype():
  """linear interpolate answers in the input's dtype, tinygrad's rule (an int's truncated; it was float), and weighs a half in float32,
  rounded once (one value was 1 ulp off torch's half bilinear)"""
  a = np.array([[1, 2, 3, 4], [21, 22, 23, 24], [41, 42, 43, 44]])
  want = np_interp_axis(np_interp_axis(a.astype(np.float64), 0, 2, "linear", False), 1, 3, "linear", False)
  got = Tensor(a, dtype=dtypes.int32).interpolate(size=(2, 3), mode="linear")
  assert got.dtype is dtypes.int32 and got.tolist() == np.trunc(want).astype(np.int32).tolist()
  h = Tensor(a.astype(np.float16)).interpolate(size=(2, 3), mode="linear")
  assert h.dtype is dtypes.float16 and h.tolist() == want.astype(np.float16).tolist()

def test_max_pool_indices_at_the_extremes():
  """the index of a max equal to the padding value (-inf, the int minimum) is a real element's (padding's -1 won the tie), and a NaN
  window's is its NaN's (it was prod(spatial), past the map); torch's indices, checked by hand"""
  x = np.full((1, 1, 4, 4), -np.inf, np.float32)
  x[0, 0, 2, 2] = 1
  v, i = Tensor(x).max_pool2d((3, 3), stride=2, padding=1, return_indices=True)
  assert i.flatten().tolist() == [0, 1, 4, 10] and v.flatten().tolist() == [-np.inf, -np.inf, -np.inf, 1.0]
  _, i = Tensor(np.full((1, 1, 2, 2), -2**31, np.int32)).max_pool2d((2, 2), stride=1, padding=1, return_indices=True)
  assert i.flatten().tolist() == [0, 0, 1, 0, 0, 1, 2, 2, 3]
  y = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
  y[0, 0, 1, 1] = np.nan
  v, i = Tensor(y).max_pool2d((2, 2), return_indices=True)
  assert i.flatten().tolist() == [5, 7, 13, 15] and np.isnan(v.numpy()[0, 0, 0, 0])

def test_avg_pool_half_sums_wide():
  x = Tensor(np.full((1, 1, 9, 9), 1000, np.float16))
  assert x.avg_pool2d(9).item() == 1000.0 and x.avg_pool2d(9).dtype is dtypes.float16  # the half sum of 81 of them overflowed

def test_max_unpool_gradient_with_repeated_indices():
  """overlapping windows pick the same max: each pooled value's gradient is the output's at its index (torch's), not only the last
  writer's"""
  x = Tensor(rnd(1, 1, 7, 5))
  v, i = x.max_pool2d((3, 3), stride=2, padding=1, return_indices=True)
  assert len(set(i.flatten().tolist())) < i.numel()  # some repeat
  w = rnd(1, 1, 7, 5)
  p = Tensor(v.numpy(), requires_grad=True)
  (p.max_unpool2d(i, (3, 3), stride=2, padding=1, output_size=(7, 5)) * Tensor(w)).sum().backward()
  np.testing.assert_array_equal(p.grad.numpy().flatten(), w.flatten()[i.numpy().flatten()])

def test_interpolate_nearest_picks_torch_elements():
  """torch's nearest source is floor(j * float32(i/o)) in float32 (upstream's too); the exact fraction picked another element for ~2% of
  sizes. Size 0 gives an empty tensor in every mode (linear divided by 0)"""
  def torch_nearest(i, o, exact):
    scale = np.float32(i / o)
    return np.minimum(np.floor(((np.arange(o, dtype=np.float32) + np.float32(0.5)) if exact else np.arange(o, dtype=np.float32)) * scale), i - 1)
  for i, o, mode in [(2, 82, "nearest"), (3, 123, "nearest"), (4, 41, "nearest-exact"), (7, 300, "nearest"), (5, 199, "nearest-exact")]:
    got = Tensor(np.arange(i, dtype=np.float32)).reshape(1, 1, i).interpolate((o,), mode=mode)
    np.testing.assert_array_equal(got.numpy().flatten(), torch_nearest(i, o, mode == "nearest-exact"))
  for mode in ("linear", "nearest"): assert Tensor.ones(1, 1, 6).interpolate((0,), mode=mode).shape == (1, 1, 0)
