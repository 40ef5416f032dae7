"""Bad input to nn layers, conv arguments, optimizers and load_state_dict: a clear error naming what was wrong, not an IndexError,
ZeroDivisionError or AttributeError from inside; and the edge cases torch accepts (zero features or channels) work as torch's."""
import numpy as np
import pytest
try: import torch  # an optional oracle: the cases stand without it
except ImportError: torch = None
from tinygrad import Tensor, nn
from tinygrad.nn.state import load_state_dict, get_parameters

def test_linear_needs_an_input_of_at_least_one_dim():
  with pytest.raises(ValueError, match=r"Linear\(4, 3\) got input of shape \(\): it needs at least 1 dimension, the last of size 4"):
    nn.Linear(4, 3)(Tensor(1.0))
  with pytest.raises(ValueError, match=r"Linear\(4, 3\) got input of shape \(2, 5\): it needs at least 1 dimension, the last of size 4"):
    nn.Linear(4, 3)(Tensor.ones(2, 5))
  assert nn.Linear(4, 3)(Tensor.ones(4)).shape == (3,)  # 1-D is fine, as torch

@pytest.mark.parametrize("make,err,msg", [
  (lambda: nn.Linear(-1, 3), ValueError, "in_features must be >= 0, got -1"),
  (lambda: nn.Linear(3, -2), ValueError, "out_features must be >= 0, got -2"),
  (lambda: nn.Linear(1.5, 3), TypeError, "in_features must be an int, got 1.5"),
  (lambda: nn.Conv2d(3, 4, kernel_size=0), ValueError, "kernel_size 0 must be at least 1"),
  (lambda: nn.Conv2d(3, 4, kernel_size=(3, -1)), ValueError, r"kernel_size \(3, -1\) must be at least 1"),
  (lambda: nn.Conv2d(-1, 4, 3), ValueError, "in_channels must be >= 0, got -1"),
  (lambda: nn.Conv2d(3, -4, 3), ValueError, "out_channels must be >= 0, got -4"),
  (lambda: nn.Conv2d(3, 3, 3, groups=0), ValueError, "groups must be a positive int, got 0"),
  (lambda: nn.ConvTranspose2d(3, 3, 3, groups=-1), ValueError, "groups must be a positive int, got -1"),
  (lambda: nn.Conv1d(3, 3, 0), ValueError, r"kernel_size \(0,\) must be at least 1"),
])
def test_layer_sizes_are_checked(make, err, msg):
  with pytest.raises(err, match=msg): make()

@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")
def test_zero_features_and_channels_work_as_torch():
  # torch allows in_features=0 / in_channels=0: the weight is empty and the bias, uniform in +-0, is zero
  lin = nn.Linear(0, 3)
  np.testing.assert_array_equal(lin(Tensor.ones(2, 0)).numpy(), np.zeros((2, 3), np.float32))
  np.testing.assert_array_equal(lin.bias.numpy(), np.zeros(3, np.float32))
  conv = nn.Conv2d(0, 4, 3)
  assert conv.weight.shape == (4, 0, 3, 3)
  # a sum over no channels is 0, plus the bias of 0 (torch answers an empty (1, 0, 6, 6) here, dropping the output channels)
  np.testing.assert_array_equal(conv(Tensor.ones(1, 0, 8, 8)).numpy(), np.zeros((1, 4, 6, 6), np.float32))
  assert nn.Linear(3, 0)(Tensor.ones(2, 3)).shape == (2, 0)

R = np.random.default_rng(0)
X, W = R.standard_normal((1, 3, 8, 8)).astype(np.float32), R.standard_normal((4, 3, 3, 3)).astype(np.float32)

@pytest.mark.parametrize("kw,msg", [
  (dict(padding=3/2), r"padding must be an int or a tuple of ints, got 1\.5"),
  (dict(padding=1.0), r"padding must be an int or a tuple of ints, got 1\.0"),  # torch rejects an integral float too
  (dict(padding=(1, 1.0)), r"padding must be an int or a tuple of ints, got \(1, 1\.0\)"),
  (dict(stride=1.5), r"stride must be an int or a tuple of ints, got 1\.5"),
  (dict(dilation=(1.0, 1)), r"dilation must be an int or a tuple of ints, got \(1\.0, 1\)"),
  (dict(groups=1.0), r"groups must be an int, got 1\.0"),
])
def test_conv2d_float_arguments_are_named(kw, msg):
  if torch is not None:
    with pytest.raises(TypeError):  # torch rejects each of these with a TypeError
      torch.nn.functional.conv2d(torch.from_numpy(X), torch.from_numpy(W), **kw)
  with pytest.raises(TypeError, match=msg): Tensor(X).conv2d(Tensor(W), **kw)

def test_conv_layers_check_their_arguments():
  with pytest.raises(TypeError, match=r"padding must be an int or a tuple of ints, got 1\.0"): nn.Conv2d(3, 4, 3, padding=1.0)
  with pytest.raises(TypeError, match=r"stride must be an int or a tuple of ints, got 1\.5"): nn.Conv2d(3, 4, 3, stride=1.5)
  with pytest.raises(TypeError, match=r"groups must be an int, got 1\.0"): nn.Conv2d(3, 3, 3, groups=1.0)
  with pytest.raises(TypeError, match=r"output_padding must be an int or a tuple of ints, got 0\.5"):
    Tensor.ones(1, 3, 4, 4).conv_transpose2d(Tensor.ones(3, 2, 3, 3), stride=2, output_padding=0.5)
  with pytest.raises(ValueError, match="groups must be a positive int, got 0"): Tensor(X).conv2d(Tensor(W), groups=0)

def _conv_s2p1(x, w):
  """numpy's cross-correlation with stride 2 and padding 1 (the oracle)"""
  xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
  oh, ow = (xp.shape[2] - w.shape[2]) // 2 + 1, (xp.shape[3] - w.shape[3]) // 2 + 1
  win = np.stack([np.stack([xp[:, :, 2*i:2*i+w.shape[2], 2*j:2*j+w.shape[3]] for j in range(ow)], -1) for i in range(oh)], -2)  # n c kh kw oh ow
  return np.einsum("nchwyx,ochw->noyx", win, w)

def test_conv2d_integer_like_arguments_still_work():
  want = _conv_s2p1(X, W)
  for kw in (dict(stride=np.int64(2), padding=np.int64(1)), dict(stride=[2, 2], padding=[1, 1]), dict(stride=(2, 2), padding=(1, 1, 1, 1))):
    np.testing.assert_allclose(Tensor(X).conv2d(Tensor(W), **kw).numpy(), want, rtol=1e-4, atol=1e-4)
  conv = nn.Conv2d(3, 4, 3, stride=np.int64(2), padding=np.int64(1))
  conv.weight.assign(Tensor(W))
  np.testing.assert_allclose(conv(Tensor(X)).numpy(), want + conv.bias.numpy().reshape(1, 4, 1, 1), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("params,msg", [
  ([1, 2], r"optimizer params must be Tensors, but params\[0\] is of type int"),
  ([Tensor.ones(2), "w"], r"params\[1\] is of type str.*nn\.state\.get_parameters\(model\)"),
  ([{"params": [Tensor.ones(2)]}], r"params\[0\] is of type dict.*param groups are not supported"),
  ({"w": Tensor.ones(2)}, r"optimizer params must be an iterable of Tensors, got dict.*nn\.state\.get_parameters\(model\)"),
  (Tensor.ones(2, requires_grad=True), r"optimizer params must be an iterable of Tensors, got Tensor"),
  (3, r"optimizer params must be an iterable of Tensors, got int"),
])
def test_optimizer_params_must_be_tensors(params, msg):
  for opt in (nn.optim.SGD, nn.optim.Adam):
    with pytest.raises(TypeError, match=msg): opt(params)

def test_optimizer_takes_any_iterable_of_tensors():
  m = nn.Linear(2, 3)
  opt = nn.optim.SGD(t for t in get_parameters(m))
  assert len(opt.params) == 2

def test_load_state_dict_needs_tensor_values():
  m = nn.Linear(2, 3)
  sd = {"weight": np.ones((3, 2), np.float32), "bias": np.ones(3, np.float32)}
  with pytest.raises(TypeError, match=r"state_dict\['weight'\] is a numpy\.ndarray, not a Tensor: wrap it with Tensor\(\.\.\.\)"):
    load_state_dict(m, sd, verbose=False)
  with pytest.raises(TypeError, match=r"state_dict must be a dict of \{name: Tensor\}, got a list"): load_state_dict(m, [np.ones(2)], verbose=False)
  # values the model doesn't use may be anything (a checkpoint's extras); wrapped, the arrays load
  load_state_dict(m, {k: Tensor(v) for k, v in sd.items()} | {"step": 3}, verbose=False)
  np.testing.assert_array_equal(m.weight.numpy(), sd["weight"])
