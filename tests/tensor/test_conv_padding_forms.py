"""The padding forms tinygrad 0.14 accepts: conv_transpose2d's flat (left, right, top, bottom, ...) crop, last axis first as conv2d's,
and padding strings in any case ('same', 'valid'), any other string refused by name. Oracles are numpy loops."""
import itertools
import numpy as np
import pytest
from tinygrad import Tensor, nn

R = np.random.default_rng(11)
def rnd(*shape): return R.standard_normal(shape).astype(np.float32)

def np_conv_transpose_full(x, w, stride, dilation, groups):
  """the uncropped transposed conv by scatter: each input element adds itself times the kernel at (position * stride + tap * dilation)"""
  n, cin, *sp = x.shape
  _, cout_g, *ks = w.shape
  st, dl = ((v,)*len(sp) if isinstance(v, int) else v for v in (stride, dilation))
  full = np.zeros((n, cout_g*groups, *[(i-1)*s + d*(k-1) + 1 for i, k, s, d in zip(sp, ks, st, dl)]))
  cin_g = cin // groups
  for ci in range(cin):
    co = slice(ci // cin_g * cout_g, (ci // cin_g + 1) * cout_g)
    for pos in itertools.product(*[range(i) for i in sp]):
      for kp in itertools.product(*[range(k) for k in ks]):
        tgt = tuple(p*s + k*d for p, k, s, d in zip(pos, kp, st, dl))
        full[(slice(None), co) + tgt] += x[(slice(None), ci) + pos][:, None] * w[(ci, slice(None)) + kp]
  return full

def crop_flat(full, flat, output_padding=0):
  """full cropped by flat pads, last axis first: (left, right, top, bottom, ...); output_padding rows (zeros) added after each axis"""
  nd = full.ndim - 2
  full = np.pad(full, [(0, 0), (0, 0)] + [(0, output_padding)]*nd)
  return full[(slice(None), slice(None)) + tuple(slice(flat[2*(nd-1-a)], full.shape[2+a] - flat[2*(nd-1-a)+1]) for a in range(nd))]

# the phase form (stride), the zero-stuffed one (no stride; dilation along a strided axis), groups with output_padding, 1-D and 3-D
@pytest.mark.parametrize("xs,ws,stride,dilation,groups,flat,output_padding", [
  ((1, 2, 4, 5), (2, 3, 3, 3), 2, 1, 1, (1, 2, 0, 1), 0), ((2, 2, 4, 4), (2, 3, 3, 2), 1, 1, 1, (1, 0, 2, 1), 0),
  ((1, 2, 4, 5), (2, 3, 3, 3), 2, 2, 1, (1, 2, 0, 1), 0), ((2, 4, 3, 4), (4, 2, 3, 3), 3, 1, 2, (0, 2, 1, 0), 1),
  ((1, 1, 5), (1, 1, 3), 2, 1, 1, (1, 2), 0), ((1, 2, 3, 3, 4), (2, 2, 2, 3, 2), 2, 1, 1, (1, 0, 0, 1, 2, 1), 0)])
def test_conv_transpose2d_flat_padding_crops_each_side(xs, ws, stride, dilation, groups, flat, output_padding):
  x, w = rnd(*xs), rnd(*ws)
  want = crop_flat(np_conv_transpose_full(x, w, stride, dilation, groups), flat, output_padding)
  got = Tensor(x).conv_transpose2d(Tensor(w), groups=groups, stride=stride, dilation=dilation, padding=flat, output_padding=output_padding)
  np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)

def test_conv_transpose_layers_take_flat_padding():
  x, w = rnd(1, 2, 4, 5), rnd(2, 3, 3, 3)
  layer = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=(1, 2, 0, 1))
  layer.weight, layer.bias = Tensor(w), Tensor.zeros(3)
  got = layer(Tensor(x)).numpy()
  assert got.shape == (1, 3, 8, 8)  # (9, 11) uncropped: 0 top, 1 bottom, 1 left, 2 right
  np.testing.assert_allclose(got, np_conv_transpose_full(x, w, 2, 1, 1)[:, :, 0:8, 1:9], rtol=1e-4, atol=1e-4)
  assert nn.ConvTranspose1d(1, 1, 3, stride=2, padding=(1, 2))(Tensor.ones(1, 1, 5)).shape == (1, 1, 8)  # 11 - 1 - 2

@pytest.mark.parametrize("spelling", ["SAME", "Same", "VALID"])
def test_padding_strings_in_any_case(spelling):
  x, w = rnd(1, 2, 5, 6), rnd(3, 2, 3, 3)
  want = Tensor(x).conv2d(Tensor(w), padding=spelling.lower()).numpy()
  np.testing.assert_array_equal(Tensor(x).conv2d(Tensor(w), padding=spelling).numpy(), want)
  layer = nn.Conv2d(2, 3, 3, padding=spelling)
  layer.weight, layer.bias = Tensor(w), Tensor.zeros(3)
  np.testing.assert_allclose(layer(Tensor(x)).numpy(), want, rtol=1e-6, atol=1e-6)

def test_other_padding_strings_are_refused_by_name():
  # a 4-letter string must not pass as four pads
  with pytest.raises(ValueError, match="Invalid padding string 'full'"): nn.Conv2d(1, 1, 3, padding="full")
  with pytest.raises(ValueError, match="Invalid padding string 'full'"): Tensor.ones(1, 1, 5, 5).conv2d(Tensor.ones(1, 1, 3, 3), padding="full")
  with pytest.raises(ValueError, match="no padding string"): Tensor.ones(1, 1, 5, 5).conv_transpose2d(Tensor.ones(1, 1, 3, 3), padding="same")
