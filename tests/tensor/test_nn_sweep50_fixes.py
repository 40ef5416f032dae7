"""nn fixes (sweep 50): a BatchNorm applied twice in one training forward, a number assigned to an optimizer's lr, and int tensors
among the tensors an optimizer is given. References: torch's BatchNorm and optimizers, numpy."""
import numpy as np
import pytest
try: import torch  # an optional oracle (not in requirements-test.txt): the tests that need it say so; numpy ones cover each fix
except ImportError: torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is an optional oracle here")
from tinygrad import Tensor, TinyJit, nn, dtypes

R = np.random.default_rng(50)
# gradients through batch statistics reach ~1e3 with cancellations: float32 error is relative to the largest entry, not each one
def close(a, b, tol=1e-4): np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, float(np.abs(b).max())))

# *** BatchNorm used more than once in a step ***

def _bn_models(w:np.ndarray):
  conv, bn = nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4, momentum=0.2)
  conv.weight = Tensor(w.copy())
  tconv, tbn = torch.nn.Conv2d(3, 4, 3, bias=False), torch.nn.BatchNorm2d(4, momentum=0.2)
  with torch.no_grad(): tconv.weight.copy_(torch.tensor(w))
  return (conv, bn), (tconv, tbn)

def _f(t): return (t.relu() * t).sum()  # a loss whose gradient reaches the conv through the batch statistics

@needs_torch
@pytest.mark.parametrize("uses", [1, 2, 3])
def test_batchnorm_applied_several_times_in_a_forward_matches_torch(uses):
  """a siamese net (one BatchNorm2d on two or three inputs, one loss): the second call realized the first call's pending running-stat
  writes, which put buffers in place of its batch mean and variance in the loss's graph: the conv's gradient silently lost their path"""
  w, xs = R.standard_normal((4, 3, 3, 3)).astype(np.float32), [R.standard_normal((5, 3, 6, 6)).astype(np.float32) for _ in range(uses)]
  (conv, bn), (tconv, tbn) = _bn_models(w)
  opt = nn.optim.SGD([conv.weight, bn.weight, bn.bias], lr=0.1)
  topt = torch.optim.SGD([tconv.weight, tbn.weight, tbn.bias], lr=0.1)
  with Tensor.train():
    for step in range(2):
      opt.zero_grad(); topt.zero_grad()
      loss = sum(_f(bn(conv(Tensor(x + step)))) for x in xs)
      loss.backward()
      (tl := sum(_f(tbn(tconv(torch.tensor(x + step)))) for x in xs)).backward()
      close(loss.item(), tl.item(), 1e-3)
      for t, tt in ((conv.weight, tconv.weight), (bn.weight, tbn.weight), (bn.bias, tbn.bias)): close(t.grad.numpy(), tt.grad.numpy(), 1e-3)
      opt.step(); topt.step()
  close(conv.weight.numpy(), tconv.weight.detach().numpy(), 1e-3)
  close(bn.running_mean.numpy(), tbn.running_mean.numpy())
  close(bn.running_var.numpy(), tbn.running_var.numpy())  # both unbiased
  assert bn.num_batches_tracked.item() == tbn.num_batches_tracked.item() == 2 * uses

def _np_bn_loss(w:np.ndarray, xs:list, eps:float=1e-5) -> float:
  """float64 numpy: each x through a 3x3 conv (no bias) and a training BatchNorm (batch statistics, weight 1, bias 0), _f, summed"""
  total = 0.0
  for x in xs:
    y = np.einsum("ncyxij,ocij->noyx", np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), (3, 3), axis=(2, 3)), w)
    t = (y - y.mean((0, 2, 3), keepdims=True)) / np.sqrt(y.var((0, 2, 3), keepdims=True) + eps)
    total += float((np.maximum(t, 0) * t).sum())
  return total

def test_batchnorm_applied_twice_matches_finite_differences():
  """the siamese case with numpy as the oracle: the conv weight's gradient by central differences of a float64 forward, and the running
  mean after two updates (momentum 0.1 each, in call order)"""
  rng = np.random.default_rng(5)
  w, xs = rng.standard_normal((4, 3, 3, 3)), [rng.standard_normal((5, 3, 6, 6)).astype(np.float32) for _ in range(2)]
  conv, bn = nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4)
  conv.weight = Tensor(w.astype(np.float32), requires_grad=True)
  with Tensor.train(): sum(_f(bn(conv(Tensor(x)))) for x in xs).backward()
  h, fd = 1e-5, np.zeros_like(w)
  for i in np.ndindex(w.shape):
    d = np.zeros_like(w)
    d[i] = h
    fd[i] = (_np_bn_loss(w + d, xs) - _np_bn_loss(w - d, xs)) / (2 * h)
  close(conv.weight.grad.numpy(), fd, 1e-3)
  means = [np.einsum("ncyxij,ocij->noyx", np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3)), w).mean((0, 2, 3)) for x in xs]
  close(bn.running_mean.numpy(), 0.9 * 0.1 * means[0] + 0.1 * means[1])

@needs_torch
def test_batchnorm_applied_twice_in_a_jitted_step_with_a_gradient_through_it():
  """the same, the step (forward, backward, optimizer step) under TinyJit: the second call's update stacks on the first's inside the
  capture, and each replay updates the weights and running statistics as torch does"""
  w, pairs = R.standard_normal((4, 3, 3, 3)).astype(np.float32), [R.standard_normal((2, 5, 3, 6, 6)).astype(np.float32) for _ in range(4)]
  (conv, bn), (tconv, tbn) = _bn_models(w)
  opt = nn.optim.SGD([conv.weight, bn.weight, bn.bias], lr=0.05)
  topt = torch.optim.SGD([tconv.weight, tbn.weight, tbn.bias], lr=0.05)
  @TinyJit
  def step(a, b):
    with Tensor.train():
      opt.zero_grad()
      (_f(bn(conv(a))) + _f(bn(conv(b)))).backward()
      opt.step()
  for a, b in pairs:
    step(Tensor(a), Tensor(b))
    topt.zero_grad()
    (_f(tbn(tconv(torch.tensor(a)))) + _f(tbn(tconv(torch.tensor(b))))).backward()
    topt.step()
  close(conv.weight.numpy(), tconv.weight.detach().numpy(), 1e-3)
  close(bn.weight.numpy(), tbn.weight.detach().numpy(), 1e-3)
  close(bn.running_mean.numpy(), tbn.running_mean.numpy())
  close(bn.running_var.numpy(), tbn.running_var.numpy())
  assert bn.num_batches_tracked.item() == 8

@needs_torch
def test_batchnorm1d_single_use_matches_torch():
  w, x = R.standard_normal((6, 4)).astype(np.float32), R.standard_normal((8, 4)).astype(np.float32)
  lin, bn = nn.Linear(4, 6, bias=False), nn.BatchNorm1d(6)
  lin.weight = Tensor(w.copy())
  tlin, tbn = torch.nn.Linear(4, 6, bias=False), torch.nn.BatchNorm1d(6)
  with torch.no_grad(): tlin.weight.copy_(torch.tensor(w))
  opt = nn.optim.SGD([lin.weight, bn.weight, bn.bias], lr=0.1)
  with Tensor.train():
    _f(bn(lin(Tensor(x)))).backward()
    _f(tbn(tlin(torch.tensor(x)))).backward()
    for t, tt in ((lin.weight, tlin.weight), (bn.weight, tbn.weight), (bn.bias, tbn.bias)): close(t.grad.numpy(), tt.grad.numpy(), 1e-3)
    opt.step()
  close(bn.running_mean.numpy(), tbn.running_mean.numpy())
  close(bn.running_var.numpy(), tbn.running_var.numpy())

# *** a number (or a Tensor) assigned to lr ***

LRS = [0.05, 1, np.float32(0.25), Tensor([0.5]), Tensor(0.125)]

@needs_torch
@pytest.mark.parametrize("make,tmake", [
  (lambda p: nn.optim.SGD(p, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
  (lambda p: nn.optim.SGD(p, lr=0.1, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
  (lambda p: nn.optim.Adam(p, lr=0.1), lambda p: torch.optim.Adam(p, lr=0.1)),
], ids=["sgd", "sgd_momentum", "adam"])
def test_lr_assigned_a_number_or_tensor_takes_effect(make, tmake):
  """opt.lr = 0.05 (an lr schedule written for upstream, whose lr takes a float) crashed in the next step: _scalar_lr reshaped the float"""
  w0, c = R.standard_normal(5).astype(np.float32), R.standard_normal(5).astype(np.float32)
  w, tw = Tensor(w0.copy()), torch.tensor(w0.copy(), requires_grad=True)
  opt, topt = make([w]), tmake([tw])
  with Tensor.train():
    for lr in LRS:
      opt.lr = lr
      for g in topt.param_groups: g["lr"] = float(lr.item()) if isinstance(lr, Tensor) else float(lr)
      opt.zero_grad(); topt.zero_grad()
      (w * w * Tensor(c)).sum().backward(); (tw * tw * torch.tensor(c)).sum().backward()
      opt.step(); topt.step()
      close(w.numpy(), tw.detach().numpy())

@pytest.mark.parametrize("lrs", [[0.1, 0.05, 0.2, 0.01, 0.3],
                                 [0.1, 0.1, 0.1, Tensor([0.0]), Tensor(0.2) * 1, 0.05, Tensor([0.25], dtype=dtypes.float16)]],
                         ids=["numbers", "tensors"])
def test_lr_changes_reach_the_steps_of_a_jitted_step(lrs):
  """a number or a Tensor is written into lr's buffer, which the replays read: a schedule changing it each step is followed (numpy's
  SGD). A Tensor became lr itself, a buffer no replay reads: the steps kept the old rate, and numbers assigned after it went there too"""
  w0 = np.array([1.0, -2.0, 3.0], np.float32)
  w = Tensor(w0.copy())
  opt, want = nn.optim.SGD([w], lr=0.1), w0.astype(np.float64)
  @TinyJit
  def step():
    with Tensor.train():
      opt.zero_grad()
      (w * w).sum().backward()
      opt.step()
  for lr in lrs:
    opt.lr = lr
    step()
    want = want - (lr.item() if isinstance(lr, Tensor) else lr) * 2 * want
    close(w.numpy(), want, 1e-5)

def test_lr_assignment_refuses_what_is_no_learning_rate():
  opt = nn.optim.SGD([Tensor([1.0])], lr=0.1)
  with pytest.raises(ValueError, match="learning rate must be >= 0, got -1"): opt.lr = -1.0
  with pytest.raises(TypeError, match="lr must be a number or a Tensor of one element, got str"): opt.lr = "0.1"
  with pytest.raises(ValueError, match=r"got a Tensor of shape \(2,\)"): opt.lr = Tensor([0.1, 0.2])
  assert opt.lr.tolist() == [pytest.approx(0.1)]

def test_lr_assigned_to_an_optimizer_group_sets_each():
  a, b = Tensor([1.0, 2.0]), Tensor([3.0])
  group = nn.optim.OptimizerGroup(nn.optim.SGD([a], lr=0.1), nn.optim.SGD([b], lr=0.2))
  group.lr = 0.5
  with Tensor.train():
    (a.sum() + b.sum()).backward()
    group.step()
  close(a.numpy(), [0.5, 1.5]); close(b.numpy(), [2.5])
  with pytest.raises(AttributeError, match=r"group\[i\].lr"): group.lr

# *** int tensors among the optimizer's tensors ***

class _WithIndex:
  def __init__(self):
    self.l = nn.Linear(3, 2)
    self.idx = Tensor.arange(2)  # a model's int buffer: get_parameters returns it
  def __call__(self, x:Tensor) -> Tensor: return self.l(x) + self.idx.float()

def test_optimizer_leaves_int_tensors_of_a_model_as_buffers():
  """an int tensor among get_parameters was marked requires_grad: backward then failed with "only float tensors have gradients" naming
  no tensor. Upstream 0.14 takes it as a parameter too and fails in the step (an assert on its missing .grad); torch's int tensors have
  no gradient and its optimizers skip them: tg keeps them as buffers (realized by each step, not updated)"""
  m, x = _WithIndex(), R.standard_normal((4, 3)).astype(np.float32)
  w0, b0 = m.l.weight.numpy(), m.l.bias.numpy()
  opt = nn.optim.SGD(nn.state.get_parameters(m), lr=0.1)
  assert [t.shape for t in opt.params] == [(2, 3), (2,)] and opt.buffers == [m.idx] and not m.idx.requires_grad
  with Tensor.train():
    opt.zero_grad()
    m(Tensor(x)).square().sum().backward()
    opt.step()
  y = x @ w0.T + b0 + np.arange(2)  # d/dy of sum(y^2) is 2y
  close(m.l.weight.numpy(), w0 - 0.1 * (2 * y).T @ x)
  close(m.l.bias.numpy(), b0 - 0.1 * (2 * y).sum(0))
  assert m.idx.tolist() == [0, 1] and m.idx.dtype is dtypes.int32

def test_optimizer_refuses_an_int_tensor_that_asks_for_a_gradient():
  with pytest.raises(ValueError, match=r"parameter 1 of shape \(3,\) is dtypes.int with requires_grad=True: only float tensors have gradients"):
    nn.optim.Adam([Tensor([1.0]), Tensor([1, 2, 3], requires_grad=True)])
  with pytest.raises(ValueError, match="none is a float one with requires_grad"): nn.optim.SGD([Tensor.arange(3)])

def test_optimizer_state_dict_names_lr_as_tinygrad():
  """(sweep) lr is the state dict's "lr" (a property kept it as "_lr": a 0.14 checkpoint's optimizer state failed to load)"""
  from tinygrad.nn.state import get_state_dict, load_state_dict
  opt = nn.optim.Adam([Tensor([1.0, 2.0], requires_grad=True)], lr=0.01)
  assert "lr" in get_state_dict(opt) and "_lr" not in get_state_dict(opt)
  opt.lr = 0.5
  assert get_state_dict(opt)["lr"].tolist() == [0.5]
  other = nn.optim.Adam([Tensor([1.0, 2.0], requires_grad=True)], lr=0.01)
  load_state_dict(other, get_state_dict(opt), verbose=False)
  assert other.lr.tolist() == [0.5]

def test_batchnorm_state_after_training_and_half_output():
  """(sweep) a training call's pending-write bookkeeping is no state of the module (get_state_dict grew 7 -> 13 keys and a clean
  checkpoint no longer loaded), and a half BatchNorm's training output is half, as torch's (it became float32)"""
  from tinygrad.nn.state import get_state_dict, get_parameters, load_state_dict
  conv, bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)
  model = [conv, bn]
  keys, n_params = set(get_state_dict(model)), len(get_parameters(model))
  with Tensor.train(): bn(conv(Tensor(R.standard_normal((2, 3, 5, 5)).astype(np.float32)))).sum().backward()
  assert set(get_state_dict(model)) == keys and len(get_parameters(model)) == n_params
  load_state_dict(model, {k: v.detach() for k, v in get_state_dict([nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)]).items()}, verbose=False)
  hb = nn.BatchNorm2d(4)
  for t in (hb.weight, hb.bias, hb.running_mean, hb.running_var): t.replace(t.half().realize())
  x = R.standard_normal((2, 4, 3, 3)).astype(np.float16)
  with Tensor.train(): out = hb(Tensor(x))
  x64 = x.astype(np.float64)
  assert out.dtype is dtypes.half
  close(out.float().numpy(), (x64 - x64.mean((0, 2, 3), keepdims=True)) / np.sqrt(x64.var((0, 2, 3), keepdims=True) + 1e-5), 2e-3)

def test_a_dropped_graph_behind_a_realized_value_is_an_error_not_missing_gradients():
  """(sweep) logits realized by an accuracy read inside a loss function that returned: the handle that kept their graph died, and
  backward() left most parameters without a gradient, silently. It now says so (tg keeps such a graph only with its handle)"""
  l1, l2 = nn.Linear(6, 16), nn.Linear(16, 3)
  opt = nn.optim.SGD([l1.weight, l1.bias, l2.weight, l2.bias], lr=0.1)
  x, y = Tensor(R.standard_normal((5, 6)).astype(np.float32)), Tensor([0, 1, 2, 0, 1])
  def loss_fn():
    out = l2(l1(x).relu())
    (out.argmax(1) == y).mean().item()
    return out.sparse_categorical_crossentropy(y)
  with Tensor.train():
    opt.zero_grad()
    with pytest.raises(RuntimeError, match="whose graph is gone with the tensor that held it"): loss_fn().backward()
    out = l2(l1(x).relu())  # kept alive: the gradients are all there
    (out.argmax(1) == y).mean().item()
    out.sparse_categorical_crossentropy(y).backward()
  assert all(p.grad is not None for p in opt.params)

def test_the_innermost_training_switch_wins():
  """(sweep) Tensor.train() and tinygrad 0.14's Context(TRAINING=) were OR-ed: an eval helper's Context(TRAINING=0) called from a loop
  under Tensor.train() still applied dropout and updated BatchNorm's running statistics"""
  from tinygrad.helpers import Context
  bn, x = nn.BatchNorm1d(2), Tensor([[1.0, 2.0], [3.0, 6.0]])
  with Tensor.train():
    with Context(TRAINING=0):
      assert x.dropout(0.5).tolist() == [[1.0, 2.0], [3.0, 6.0]]
      close(bn(x).numpy(), x.numpy() / np.sqrt(1 + 1e-5))
    assert bn.num_batches_tracked.item() == 0 and x.dropout(1.0).tolist() == [[0.0, 0.0], [0.0, 0.0]]
  with Context(TRAINING=1):
    with Tensor.train(False): assert x.dropout(0.5).tolist() == [[1.0, 2.0], [3.0, 6.0]]
    assert x.dropout(1.0).tolist() == [[0.0, 0.0], [0.0, 0.0]]
  Tensor.training = True  # assigned directly (older tinygrad): training until set back
  try: assert x.dropout(1.0).tolist() == [[0.0, 0.0], [0.0, 0.0]]
  finally: Tensor.training = False
  assert x.dropout(1.0).tolist() == [[1.0, 2.0], [3.0, 6.0]]
