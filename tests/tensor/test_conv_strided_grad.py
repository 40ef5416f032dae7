"""A strided conv whose input or weight takes a gradient (training) is the im2col form (tensor_conv._im2col_conv): its window copy reads
the windows' view, with index math, and its gradient folds the taps back (_tap_fold). The values and both gradients against torch, and
the copy's kernel against the select chain it was: a copy of the taps stacked one slice each picked every element's tap through a
compare and a select per tap (49 for a 7x7 ResNet stem: 600-800 ms against 12-50 for the no-grad forward)."""
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.uop import Ops
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program

R = np.random.default_rng(3)

# (input shape, output channels, kernel, stride, padding, dilation, groups): kernels 3, 5 and 7, strides 2 and 3, padding 0 to 3,
# dilation 2, groups 2, a 1-D and a non-square one, rows whose output doesn't fill a vector
CASES = [((2, 3, 17, 17), 4, 3, 2, 1, 1, 1), ((2, 4, 19, 15), 6, 5, 2, 2, 1, 2), ((1, 3, 23, 23), 8, 7, 2, 3, 1, 1),
         ((2, 4, 20, 21), 4, 3, 3, 0, 2, 2), ((2, 2, 22, 22), 4, 5, 3, 2, 2, 1), ((2, 4, 16, 18), 6, 7, 3, 1, 1, 2),
         ((2, 3, 30), 4, 5, 2, 1, 1, 1)]

@pytest.mark.parametrize("shape,cout,k,stride,pad,dil,groups", CASES)
@pytest.mark.parametrize("grads", ["both", "input", "weight"])
def test_strided_conv_values_and_gradients(shape, cout, k, stride, pad, dil, groups, grads):
  nd = len(shape) - 2
  x, b = R.standard_normal(shape).astype(np.float32), R.standard_normal(cout).astype(np.float32)
  w = R.standard_normal((cout, shape[1] // groups) + (k,)*nd).astype(np.float32)
  tx, tw = Tensor(x, requires_grad=grads != "weight"), Tensor(w, requires_grad=grads != "input")
  out = tx.conv2d(tw, Tensor(b), groups=groups, stride=stride, dilation=dil, padding=pad)
  torch = pytest.importorskip("torch")  # the oracle (optional in the test requirements); the structural test below needs none
  conv = torch.nn.functional.conv1d if nd == 1 else torch.nn.functional.conv2d
  px, pw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
  want = conv(px, pw, torch.tensor(b), stride=stride, padding=pad, dilation=dil, groups=groups)
  np.testing.assert_allclose(out.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)
  g = R.standard_normal(want.shape).astype(np.float32)  # an upstream gradient that is no constant: every tap's share shows
  (out * Tensor(g)).sum().backward()
  (want * torch.tensor(g)).sum().backward()
  if grads != "weight": np.testing.assert_allclose(tx.grad.numpy(), px.grad.numpy(), rtol=1e-4, atol=1e-4)
  else: assert tx.grad is None
  if grads != "input": np.testing.assert_allclose(tw.grad.numpy(), pw.grad.numpy(), rtol=1e-4, atol=1e-4)
  else: assert tw.grad is None

def test_strided_conv_second_order():
  torch = pytest.importorskip("torch")
  # the fold's own gradient (the gradient of x's gradient with respect to the output gradient) is the windows again
  x, w = R.standard_normal((1, 2, 11, 11)).astype(np.float32), R.standard_normal((3, 2, 3, 3)).astype(np.float32)
  tx, tw, tg = Tensor(x, requires_grad=True), Tensor(w), Tensor.ones(1, 3, 5, 5, requires_grad=True)
  gx = tx.conv2d(tw, stride=2).gradient(tx, gradient=tg)[0]
  (gx * gx).sum().backward()
  px, pg = torch.tensor(x, requires_grad=True), torch.ones(1, 3, 5, 5, requires_grad=True)
  pgx, = torch.autograd.grad(torch.nn.functional.conv2d(px, torch.tensor(w), stride=2), px, pg, create_graph=True)
  (pgx * pgx).sum().backward()
  np.testing.assert_allclose(gx.numpy(), pgx.detach().numpy(), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(tg.grad.numpy(), pg.grad.numpy(), rtol=1e-4, atol=1e-4)

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
