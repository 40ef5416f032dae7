"""Optimizers as tinygrad 0.14 has them: 0-d parameters keep their shape, fused=True makes LAMB's and LARS's trust ratio one over all
the parameters together (upstream concatenates them), and the attributes params, buffers, fused and param_dtype. Oracles are numpy
models of the update rules; the fused single-step values were printed by tinygrad 0.14 itself (CPU)."""
import numpy as np
import pytest
from tinygrad import Tensor, nn, dtypes
from tinygrad.helpers import Context

def np_norms(ts, fused):
  """each array's L2 norm, or the norm of all of them together for each"""
  if fused: return [np.sqrt(sum((t * t).sum() for t in ts))] * len(ts)
  return [np.sqrt((t * t).sum()) for t in ts]

def np_sgd(ps, grads_of, steps, lr, momentum=0.0, nesterov=False, classic=False):
  ps, bs = [np.float64(p) for p in ps], [0.0] * len(ps)
  for _ in range(steps):
    for i, g in enumerate(grads_of(ps)):
      if classic: g = lr * g
      if momentum:
        bs[i] = momentum * bs[i] + g
        g = g + momentum * bs[i] if nesterov else bs[i]
      ps[i] = ps[i] - (g if classic else lr * g)
  return ps

def np_lamb(ps, grads_of, steps, lr, b1=0.9, b2=0.999, eps=1e-6, wd=0.0, adam=False, fused=False):
  ps = [np.float64(p) for p in ps]
  ms, vs = [0.0] * len(ps), [0.0] * len(ps)
  for t in range(1, steps + 1):
    gs, us = grads_of(ps), []
    for i, g in enumerate(gs):
      ms[i], vs[i] = b1 * ms[i] + (1 - b1) * g, b2 * vs[i] + (1 - b2) * g * g
      us.append((ms[i] / (1 - b1**t)) / (np.sqrt(vs[i] / (1 - b2**t)) + eps) + wd * ps[i])
    rs = [1.0] * len(ps) if adam else [pn / un for pn, un in zip(np_norms(ps, fused), np_norms(us, fused))]
    ps = [p - lr * r * u for p, r, u in zip(ps, rs, us)]
  return ps

def np_lars(ps, grads_of, steps, lr, momentum, wd, tcoef, fused):
  """LARS with classic momentum and weight decay before the trust ratio's scaling (its defaults)"""
  ps, bs = [np.float64(p) for p in ps], [0.0] * len(ps)
  for _ in range(steps):
    gs = grads_of(ps)
    rs = [tcoef * pn / (gn + wd * pn) for pn, gn in zip(np_norms(ps, fused), np_norms(gs, fused))]
    for i, (g, r) in enumerate(zip(gs, rs)):
      bs[i] = momentum * bs[i] + (g + wd * ps[i]) * r * lr
      ps[i] = ps[i] - bs[i]
  return ps

def run(make_opt, params, loss_of, steps):
  ps = [Tensor(np.array(p, np.float32)) for p in params]
  opt = make_opt(ps)
  with Context(TRAINING=1):
    for _ in range(steps):
      opt.zero_grad()
      loss_of(ps).backward()
      opt.step()
  return ps

def check(got, want):
  for g, w in zip(got, want):
    assert g.shape == np.shape(w)
    np.testing.assert_allclose(g.numpy(), w, rtol=1e-4, atol=1e-5)

# sum(p^2) over a 0-d parameter and a vector: each update must keep its parameter's shape, not broadcast against lr's (1,)
SQUARES = (lambda ps: sum((p * p).sum() for p in ps), lambda ps: [2 * p for p in ps])
ZERO_D = {
  "sgd": (lambda ps: nn.optim.SGD(ps, lr=0.1), lambda ps, gr: np_sgd(ps, gr, 3, 0.1)),
  "sgd momentum": (lambda ps: nn.optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps, gr: np_sgd(ps, gr, 3, 0.1, 0.9)),
  "sgd nesterov": (lambda ps: nn.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True), lambda ps, gr: np_sgd(ps, gr, 3, 0.1, 0.9, True)),
  "sgd classic": (lambda ps: nn.optim.SGD(ps, lr=0.1, momentum=0.9, classic=True), lambda ps, gr: np_sgd(ps, gr, 3, 0.1, 0.9, classic=True)),
  "adam": (lambda ps: nn.optim.Adam(ps, lr=0.1), lambda ps, gr: np_lamb(ps, gr, 3, 0.1, eps=1e-8, adam=True)),
  "adamw": (lambda ps: nn.optim.AdamW(ps, lr=0.1, weight_decay=0.1), lambda ps, gr: np_lamb(ps, gr, 3, 0.1, eps=1e-8, wd=0.1, adam=True)),
  "lamb": (lambda ps: nn.optim.LAMB(ps, lr=0.1, weight_decay=0.01), lambda ps, gr: np_lamb(ps, gr, 3, 0.1, wd=0.01)),
  "lars": (lambda ps: nn.optim.LARS(ps, lr=0.1, tcoef=0.5), lambda ps, gr: np_lars(ps, gr, 3, 0.1, 0.9, 1e-4, 0.5, False)),
}

@pytest.mark.parametrize("name", ZERO_D)
def test_0d_parameters_keep_their_shape(name):
  make, model = ZERO_D[name]
  check(run(make, [2.0, [1.0, -0.5, 3.0]], SQUARES[0], 3), model([2.0, np.array([1.0, -0.5, 3.0])], SQUARES[1]))

def test_0d_parameter_single_steps_match_torch():
  # torch.optim.SGD / Adam at lr=0.1 on s*s from s=2 (gradient 4), one step: 2 - 0.1*4 and 2 - 0.1
  for make, want in ((lambda ps: nn.optim.SGD(ps, lr=0.1), 1.6), (lambda ps: nn.optim.Adam(ps, lr=0.1), 1.9)):
    (s,) = run(make, [2.0], SQUARES[0], 1)
    assert s.shape == () and s.item() == pytest.approx(want, abs=1e-6)

def test_fused_trust_ratio_is_tinygrads():
  # printed by tinygrad 0.14 (DEV=CPU) for a = [3, 4], b = [0.01], loss a.sum() + b.sum(), lr=0.1, one step with fused=True
  loss = lambda ps: ps[0].sum() + ps[1].sum()
  a, b = run(lambda ps: nn.optim.LAMB(ps, lr=0.1, fused=True), [[3.0, 4.0], [0.01]], loss, 1)
  np.testing.assert_allclose(a.numpy(), [2.7113242, 3.7113242], rtol=1e-5); np.testing.assert_allclose(b.numpy(), [-0.27867573], rtol=1e-5)
  a, b = run(lambda ps: nn.optim.LARS(ps, lr=0.1, fused=True), [[3.0, 4.0], [0.01]], loss, 1)
  np.testing.assert_allclose(a.numpy(), [2.9997113, 3.9997113], rtol=1e-6); np.testing.assert_allclose(b.numpy(), [0.00971141], rtol=1e-5)

R = np.random.default_rng(3)
P0, C = [R.standard_normal((3, 4)), R.standard_normal(5) * 0.01], [R.standard_normal((3, 4)), R.standard_normal(5)]
# sum(p * c) + sum(p^2) / 2: grad = c + p; the second parameter is small, so its own trust ratio differs from the global one
LINEAR = (lambda ps: sum((p * Tensor(c.astype(np.float32))).sum() + (p * p).sum() / 2 for p, c in zip(ps, C)),
          lambda ps: [c + p for p, c in zip(ps, C)])

FUSED = {  # one over all the parameters moves the small one differently from its own trust ratio
  "lamb": (lambda ps: nn.optim.LAMB(ps, lr=0.01, weight_decay=0.05, fused=True), lambda fused: np_lamb(P0, LINEAR[1], 3, 0.01, wd=0.05, fused=fused)),
  "lars": (lambda ps: nn.optim.LARS(ps, lr=0.1, momentum=0.9, weight_decay=0.01, tcoef=0.05, fused=True),
           lambda fused: np_lars(P0, LINEAR[1], 3, 0.1, 0.9, 0.01, 0.05, fused)),
}

@pytest.mark.parametrize("name", FUSED)
def test_fused_trust_ratio_over_steps(name):
  make, model = FUSED[name]
  got = run(make, P0, LINEAR[0], 3)
  check(got, model(True))
  assert not np.allclose(got[1].numpy(), model(False)[1], rtol=1e-3)

def test_optimizer_attributes_are_tinygrads():
  w, stat = Tensor([1.0, 2.0]), (Tensor.zeros(2) + 3).requires_grad_(False)  # stat: a lazy buffer, like a BatchNorm's running mean
  opt = nn.optim.SGD([w, stat], lr=0.5, fused=True)
  assert [t is w for t in opt.params] == [True] and [t is stat for t in opt.buffers] == [True]
  assert opt.fused is True and opt.param_dtype == dtypes.float32 and nn.optim.Adam([w]).fused is False
  with Context(TRAINING=1):
    (w * w).sum().backward()
    opt.step()
  assert stat._is_buffer() and stat.tolist() == [3.0, 3.0] and w.tolist() == [0.0, 0.0]  # buffers are realized by the step, not updated
  group = nn.optim.OptimizerGroup(opt, nn.optim.Adam([Tensor([1.0]), Tensor([5.0], requires_grad=False)]))
  assert [t.tolist() for t in group.buffers] == [[3.0, 3.0], [5.0]]

def test_fused_newton_schulz_is_refused():
  with pytest.raises(ValueError, match="fused=True"): nn.optim.LARS([Tensor([[1.0, 2.0]])], ns_steps=2, ns_coefficients=(1.5, -0.5), fused=True)

@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_parameters_on_different_devices_are_named(opt):
  # a replicated parameter beside a one-device one: step() failed in a MUL of tensors on different devices
  a = Tensor.ones(3).to(("CPU:1", "CPU:2")).realize()
  b = Tensor.ones(3, device="CPU:1").realize()
  with pytest.raises(ValueError, match=r"parameters on different devices \[\('CPU:1', 'CPU:2'\), 'CPU:1'\].*OptimizerGroup"):
    getattr(nn.optim, opt)([a, b], lr=0.1)
