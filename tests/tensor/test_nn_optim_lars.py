"""LARS and Muon against a numpy model of the same rules (You et al. 2017; Jordan et al. 2024, in tinygrad's parametrisation), and
Optimizer.schedule_step, tinygrad's `loss.realize(*opt.schedule_step())`."""
import numpy as np
import pytest
from tinygrad import Tensor, nn
from tinygrad.helpers import Context

def np_newton_schulz(g, steps, coefs, eps=1e-7):
  tall = g.shape[0] > g.shape[1]
  x = g.T if tall else g
  x = x / (np.sqrt((x * x).sum()) + eps)
  for _ in range(steps):
    a = x @ x.T
    x = sum(c * np.linalg.matrix_power(a, i) @ x for i, c in enumerate(coefs))
  return x.T if tall else x

def np_lars(params, grads_of, steps, lr, momentum, wd, ns_steps, coefs, nesterov, classic, pre_wd, tcoef):
  ps, bs = [p.astype(np.float64) for p in params], [np.zeros(p.shape) for p in params]
  for _ in range(steps):
    gs = grads_of(ps)
    for i, (p, g) in enumerate(zip(ps, gs)):
      pn, gn = np.sqrt((p * p).sum()), np.sqrt((g * g).sum())
      r = tcoef * pn / (gn + wd * pn) if tcoef and pn > 0 and gn > 0 else 1.0
      if pre_wd and wd: g = g + wd * p
      if classic: g = g * r * lr
      if momentum:
        bs[i] = momentum * bs[i] + g
        g = g + momentum * bs[i] if nesterov else bs[i]
      if coefs: g = np_newton_schulz(g.reshape(g.shape[0], -1), ns_steps, coefs).reshape(g.shape)
      if not classic: g = g * r * lr
      if not pre_wd and wd: g = g + wd * lr * p
      ps[i] = p - g
  return ps

rng = np.random.default_rng(0)
X, W0, C0, B0 = (rng.standard_normal(s).astype(np.float32) for s in ((6, 12), (5, 3, 2, 2), (5, 12), (5,)))

def grads_of(ps):
  """d/d(w, c, b) of sum((X @ (w.reshape(5, 12) * c).T + b)^2)"""
  w, c, b = ps
  err = 2 * (X @ (w.reshape(5, 12) * c).T + b)  # (6, 5)
  dm = err.T @ X  # d/d(w*c): (5, 12)
  return [(dm * c).reshape(w.shape), dm * w.reshape(5, 12), err.sum(0)]

def run(make_opt, steps, use_schedule_step=False):
  w, c, b = Tensor(W0), Tensor(C0), Tensor(B0)
  opt = make_opt([w, c, b])
  with Context(TRAINING=1):
    for _ in range(steps):
      opt.zero_grad()
      loss = (Tensor(X) @ (w.reshape(5, 12) * c).T + b).square().sum().backward()
      if use_schedule_step: loss.realize(*opt.schedule_step())
      else: opt.step()
  return [w.numpy(), c.numpy(), b.numpy()]

CONFIGS = {  # lr, momentum, wd, ns_steps, coefs, nesterov, classic, pre_wd, tcoef
  "muon": (0.02, 0.95, 0.1, 5, (3.4445, -4.775, 2.0315), True, False, False, 0.0),
  "lars": (0.1, 0.9, 1e-4, 0, None, False, True, True, 0.001),
  "lars nesterov, trust ratio": (0.1, 0.5, 0.01, 0, None, True, True, True, 0.05),
  "lars popular momentum": (0.05, 0.9, 0.01, 0, None, False, False, True, 0.02),
}

@pytest.mark.parametrize("name", CONFIGS)
def test_matches_the_rule(name):
  lr, mom, wd, ns, coefs, nest, classic, pre_wd, tcoef = cfg = CONFIGS[name]
  make = (lambda ps: nn.optim.Muon(ps, lr=lr, momentum=mom, weight_decay=wd)) if name == "muon" else \
         (lambda ps: nn.optim.LARS(ps, *cfg[:3], ns_steps=ns, ns_coefficients=coefs, nesterov=nest, classic=classic, pre_wd=pre_wd, tcoef=tcoef))
  got, want = run(make, 3), np_lars([W0, C0, B0], grads_of, 3, *cfg)
  for g, w in zip(got, want): np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)

def test_muon_defaults_are_tinygrads():
  opt = nn.optim.Muon([Tensor(W0)])
  assert (opt.momentum, opt.wd, opt.ns_steps, opt.ns_coefficients, opt.nesterov, opt.classic, opt.pre_wd, opt.tcoef) == \
         (0.95, 0.1, 5, (3.4445, -4.775, 2.0315), True, False, False, 0.0)
  assert opt.lr.tolist() == [pytest.approx(0.001)]

def test_schedule_step_is_step():
  make = lambda ps: nn.optim.Adam(ps, lr=0.01)
  for a, b in zip(run(make, 3), run(make, 3, use_schedule_step=True)): np.testing.assert_array_equal(a, b)

def test_schedule_step_keeps_the_loss_value():
  w = Tensor([1.0, 2.0])
  opt = nn.optim.SGD([w], lr=0.5)
  with Context(TRAINING=1):
    loss = (w * w).sum().backward()
    loss.realize(*opt.schedule_step())
  assert loss.item() == 5.0 and w.tolist() == [0.0, 0.0]  # w - 0.5 * 2w

def test_bad_arguments_are_named():
  with pytest.raises(ValueError, match="learning rate must be >= 0, got -1"): nn.optim.SGD([Tensor([1.0])], lr=-1)
  with pytest.raises(ValueError, match="Invalid momentum value: -0.5"): nn.optim.LARS([Tensor([1.0])], momentum=-0.5)
  with pytest.raises(ValueError, match="0-d parameter"): nn.optim.Muon([Tensor(1.0)])
  with pytest.raises(ValueError, match="at least one coefficient"): Tensor(W0[0, 0]).newton_schulz(2, ())

def test_newton_schulz_with_any_number_of_coefficients():
  a = rng.standard_normal((3, 5)).astype(np.float32)
  for coefs in ((1.5, -0.5), (2, -1.5, 0.5), (1.875, -1.25, 0.375)):
    np.testing.assert_allclose(Tensor(a).newton_schulz(3, coefs).numpy(), np_newton_schulz(a.astype(np.float64), 3, coefs), rtol=1e-4, atol=1e-5)
