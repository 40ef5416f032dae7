"""nn.optim: a few steps of each optimizer against numpy implementations of its update rule, on a loss whose gradient is known
(sum(p * c) + sum(p^2)/2: grad = c + p), with parameters and state updated in their own buffers."""
import numpy as np
import pytest
from tinygrad import Tensor, nn

R = np.random.default_rng(5)
P0, C = [R.standard_normal((3, 4)).astype(np.float32), R.standard_normal(5).astype(np.float32)], \
        [R.standard_normal((3, 4)).astype(np.float32), R.standard_normal(5).astype(np.float32)]

def run(make_opt, steps=4):
  """the params after `steps` optimizer steps; checks each step writes into the same buffers"""
  ps = [Tensor(p.copy()) for p in P0]
  opt = make_opt(ps)
  bufs = [p.uop.base for p in ps]
  with Tensor.train():
    for _ in range(steps):
      opt.zero_grad()
      sum((p * Tensor(c)).sum() + (p * p).sum() / 2 for p, c in zip(ps, C)).backward()
      opt.step()
  assert [p.uop.base for p in ps] == bufs
  return [p.numpy() for p in ps]

def np_sgd(lr, momentum=0.0, wd=0.0, nesterov=False, steps=4):
  ps, bs = [p.astype(np.float64) for p in P0], [np.zeros_like(p, np.float64) for p in P0]
  for _ in range(steps):
    for i, (p, c) in enumerate(zip(ps, C)):
      g = c + p + wd * p
      if momentum:
        bs[i] = momentum * bs[i] + g
        g = g + momentum * bs[i] if nesterov else bs[i]
      ps[i] = p - lr * g
  return ps

def np_lamb(lr, b1, b2, eps, wd, adam, steps=4):
  ps = [p.astype(np.float64) for p in P0]
  ms, vs = [np.zeros_like(p) for p in ps], [np.zeros_like(p) for p in ps]
  for t in range(1, steps+1):
    for i, (p, c) in enumerate(zip(ps, C)):
      g = c + p
      ms[i], vs[i] = b1 * ms[i] + (1 - b1) * g, b2 * vs[i] + (1 - b2) * g * g
      u = (ms[i] / (1 - b1**t)) / (np.sqrt(vs[i] / (1 - b2**t)) + eps) + wd * p
      r = 1.0 if adam else np.linalg.norm(p) / np.linalg.norm(u)
      ps[i] = p - lr * r * u
  return ps

def check(got, want):
  for g, w in zip(got, want): np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)

@pytest.mark.parametrize("kw", [dict(), dict(momentum=0.9), dict(momentum=0.9, nesterov=True), dict(momentum=0.5, weight_decay=0.1)])
def test_sgd(kw):
  check(run(lambda ps: nn.optim.SGD(ps, lr=0.05, **kw)), np_sgd(0.05, kw.get("momentum", 0.0), kw.get("weight_decay", 0.0), kw.get("nesterov", False)))

def test_adam_adamw_lamb():
  check(run(lambda ps: nn.optim.Adam(ps, lr=0.01)), np_lamb(0.01, 0.9, 0.999, 1e-8, 0.0, True))
  check(run(lambda ps: nn.optim.AdamW(ps, lr=0.01, weight_decay=0.1)), np_lamb(0.01, 0.9, 0.999, 1e-8, 0.1, True))
  check(run(lambda ps: nn.optim.LAMB(ps, lr=0.01, b1=0.8, weight_decay=0.05)), np_lamb(0.01, 0.8, 0.999, 1e-6, 0.05, False))

def test_state_is_tensors_and_lr_can_be_changed():
  ps = [Tensor(p.copy()) for p in P0]
  opt = nn.optim.Adam(ps, lr=0.01)
  assert isinstance(opt.lr, Tensor) and opt.lr.shape == (1,)
  with Tensor.train():
    for lr in (0.01, 0.0):
      opt.lr.assign(Tensor([lr]))
      opt.zero_grad()
      sum((p * Tensor(c)).sum() + (p * p).sum() / 2 for p, c in zip(ps, C)).backward()
      before = [p.numpy().copy() for p in ps]
      opt.step()
  check([p.numpy() for p in ps], before)  # lr 0: the last step moved nothing
  np.testing.assert_allclose(opt.b1_t.numpy(), [0.81], rtol=1e-6)
  np.testing.assert_allclose(opt.m[1].numpy(), 0.1 * 0.9 * (C[1] + P0[1]) + 0.1 * (C[1] + before[1]), rtol=1e-4, atol=1e-6)

def test_requires_grad_and_errors():
  w, frozen = Tensor.ones(3), Tensor.ones(2, requires_grad=False)
  opt = nn.optim.SGD([w, frozen], lr=0.1)
  assert w.requires_grad and opt.params == [w]
  with pytest.raises(RuntimeError, match="outside training mode"): opt.step()
  with Tensor.train(), pytest.raises(RuntimeError, match=r"parameters \[0\] have no .grad"): opt.step()
  with pytest.raises(ValueError, match="no parameters that need gradients"): nn.optim.Adam([frozen])
  with pytest.raises(ValueError, match=r"SGD\(nesterov=True\) needs momentum"): nn.optim.SGD([w], nesterov=True)

@pytest.mark.parametrize("make", [lambda ps: nn.optim.SGD(ps, lr=0.5), lambda ps: nn.optim.Adam(ps, lr=0.5)])
def test_each_gradient_reads_the_other_parameter_before_it_is_written(make):
  # loss = sum(a * b): grad a = b and grad b = a, so a step must read both parameters before writing either
  a, b = Tensor([1.0, 2.0]), Tensor([3.0, -4.0])
  opt = make([a, b])
  with Tensor.train():
    (a * b).sum().backward()
    opt.step()
  if isinstance(opt, nn.optim.SGD): want_a, want_b = [1 - 0.5*3, 2 + 0.5*4], [3 - 0.5*1, -4 - 0.5*2]
  else: want_a, want_b = [1 - 0.5, 2 + 0.5], [3 - 0.5, -4 - 0.5]  # Adam's first step moves each element by lr * sign(grad)
  np.testing.assert_allclose(a.numpy(), want_a, rtol=1e-5); np.testing.assert_allclose(b.numpy(), want_b, rtol=1e-5)

def test_reshaped_write_realizes_without_a_copy():
  # a write stores through the flat buffer and reads back reshaped: realizing that view is the write's kernel alone, and the view then
  # reads the buffer (a later realize does not write again)
  from tinygrad.helpers import GlobalCounters
  from tinygrad.nn.inplace import buffer_of, pending_write
  t = buffer_of(Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)))
  w = pending_write(t, t * 2)
  before = GlobalCounters.kernel_count
  Tensor.realize(w)
  assert GlobalCounters.kernel_count - before == 1
  np.testing.assert_equal((w + 1).numpy(), np.arange(12).reshape(3, 4) * 2 + 1)
  np.testing.assert_equal(t.numpy(), np.arange(12).reshape(3, 4) * 2)

@pytest.mark.parametrize("adam_first", [False, True])
def test_optimizer_group_steps_all_parameters_from_the_same_gradients(adam_first):
  # upstream's nn.optim.OptimizerGroup: SGD with momentum on a, Adam on b; loss = sum(a * b) + sum(a^2), so grad a = b + 2a and
  # grad b = a read each other's parameter: neither optimizer may write before the other has read (and the order must not matter)
  a0, b0 = np.array([1.0, 2.0], np.float32), np.array([3.0, -4.0], np.float32)
  a, b = Tensor(a0.copy()), Tensor(b0.copy())
  sgd, adam = nn.optim.SGD([a], lr=0.1, momentum=0.9), nn.optim.Adam([b], lr=0.1)
  group = nn.optim.OptimizerGroup(*((adam, sgd) if adam_first else (sgd, adam)))
  assert group[0] is (adam if adam_first else sgd)
  mom, m, v = np.zeros(2), np.zeros(2), np.zeros(2)
  with Tensor.train():
    for step in range(1, 4):
      group.zero_grad()
      ((a * b).sum() + (a * a).sum()).backward()
      group.step()
      ga, gb = b0 + 2 * a0, a0
      mom = 0.9 * mom + ga
      m, v = 0.9 * m + 0.1 * gb, 0.999 * v + 0.001 * gb * gb
      a0, b0 = a0 - 0.1 * mom, b0 - 0.1 * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
  np.testing.assert_allclose(a.numpy(), a0, rtol=1e-5); np.testing.assert_allclose(b.numpy(), b0, rtol=1e-5)
  with pytest.raises(ValueError, match="more than one"): nn.optim.OptimizerGroup(sgd, nn.optim.SGD([a]))

def test_context_training_is_training_mode():
  # tinygrad 0.14 programs switch training on with Context(TRAINING=1) rather than Tensor.train()
  from tinygrad import Context
  w = Tensor([1.0, -2.0])
  opt = nn.optim.SGD([w], lr=0.5)
  with Context(TRAINING=1):
    (w * w).sum().backward()
    opt.step()
    assert (Tensor.ones(1000).dropout(0.5).numpy() == 0).any()
  np.testing.assert_allclose(w.numpy(), [1.0 - 0.5 * 2, -2.0 + 0.5 * 4])
  with pytest.raises(RuntimeError, match="outside training mode"): opt.step()

@pytest.mark.parametrize("classic", [False, True])
@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_classic_momentum_under_a_changing_lr(classic, nesterov):
  # upstream's SGD(classic=True) keeps lr inside the momentum buffer; torch's (classic=False) applies it to the step. They differ only
  # once lr changes, so the numpy reference runs a schedule
  w0 = np.array([1.0, -2.0, 3.0])
  w, b = w0.copy(), np.zeros(3)
  p = Tensor(w0.astype(np.float32))
  opt = nn.optim.SGD([p], lr=0.1, momentum=0.9, nesterov=nesterov, classic=classic, weight_decay=0.1)
  with Tensor.train():
    for lr in (0.1, 0.5, 0.2):
      opt.lr.assign(Tensor([lr]))
      opt.zero_grad()
      ((p * p).sum() / 2 + p.sum()).backward()
      opt.step()
      g = w + 1 + 0.1 * w
      if classic: b = 0.9 * b + lr * g; w = w - (lr * g + 0.9 * b if nesterov else b)
      else: b = 0.9 * b + g; w = w - lr * (g + 0.9 * b if nesterov else b)
  np.testing.assert_allclose(p.numpy(), w, rtol=1e-5)

@pytest.mark.parametrize("update", ["SGD", "Adam", "assign"])
def test_a_loss_read_after_the_step_is_the_forward_value(update):
  # torch's rule: the loss backward() ran on is realized before the parameters change (with the gradients, or before an assign), so
  # reading it afterwards gives the forward's value, not one that mixes old and new parameters
  rng = np.random.default_rng(3)
  X, W0, Y = rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((8, 3)).astype(np.float32)
  w = Tensor(W0.copy(), requires_grad=True)
  h = Tensor(X) @ w.T
  # h is materialised by the step (the gradient reads it); the weight-decay term reads w itself, and only the loss needs its value
  loss = ((h.relu() * 2 - Tensor(Y)) ** 2).mean() + (h * 0.5).sum() + (w * w).sum() * 0.1
  loss.backward()
  with Tensor.train():
    if update == "assign": w.assign(w.detach() - 0.5 * w.grad)
    else: (nn.optim.SGD([w], lr=0.5) if update == "SGD" else nn.optim.Adam([w], lr=0.5)).step()
  hn = X @ W0.T
  want = ((np.maximum(hn, 0) * 2 - Y) ** 2).mean() + (hn * 0.5).sum() + (W0 * W0).sum() * 0.1
  assert not np.allclose(w.numpy(), W0)  # the step did change the weights
  np.testing.assert_allclose(loss.item(), want, rtol=1e-5)

def run_scheduled(make_opt, steps=4, jit=False):
  """run()'s loop in tinygrad 0.14's idiom: `loss.realize(*opt.schedule_step())`, optionally under TinyJit; (params, losses)"""
  from tinygrad import TinyJit, Context
  ps = [Tensor(p.copy()) for p in P0]
  opt = make_opt(ps)
  def step(c0, c1):
    opt.zero_grad()
    loss = sum((p * c).sum() + (p * p).sum() / 2 for p, c in zip(ps, (c0, c1))).backward()
    return loss.realize(*opt.schedule_step())
  step = Context(TRAINING=1)(step)
  if jit: step = TinyJit(step)
  losses = [step(*[Tensor(c.copy()).realize() for c in C]).item() for _ in range(steps)]
  return [p.numpy() for p in ps], losses

def np_losses(ps_per_step): return [sum(float((p * c).sum() + (p * p).sum() / 2) for p, c in zip(ps, C)) for ps in ps_per_step]

@pytest.mark.parametrize("jit", [False, True])
def test_schedule_step_realized_with_the_loss(jit):
  got, losses = run_scheduled(lambda ps: nn.optim.SGD(ps, lr=0.05, momentum=0.9), jit=jit)
  check(got, np_sgd(0.05, 0.9))
  # each loss is the forward's, from the parameters before that step
  np.testing.assert_allclose(losses, np_losses([P0] + [np_sgd(0.05, 0.9, steps=k) for k in range(1, 4)]), rtol=1e-5)

def test_device_and_fused_keywords():
  # tinygrad 0.14's signatures: fused changes upstream's layout, not the values; device may only be the parameters'
  check(run(lambda ps: nn.optim.AdamW(ps, lr=0.01, weight_decay=0.1, device=ps[0].device, fused=True)), np_lamb(0.01, 0.9, 0.999, 1e-8, 0.1, True))
  check(run(lambda ps: nn.optim.SGD(ps, lr=0.05, momentum=0.9, fused=True)), np_sgd(0.05, 0.9))
  with pytest.raises(ValueError, match="parameters' device"): nn.optim.SGD([Tensor([1.0])], device="PYTHON")
  with pytest.raises(ValueError, match="learning rate"): nn.optim.Adam([Tensor([1.0])], lr=-1.0)
  with pytest.raises(ValueError, match="fused"): nn.optim.Muon([Tensor([[1.0]])], fused=True)
