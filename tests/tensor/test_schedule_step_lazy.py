"""Optimizer.schedule_step() leaves each parameter lazy, as tinygrad 0.14 does: the parameter reads its pending write, so a write nobody
realizes lands when the parameter is next used or read, stays a requires_grad leaf for the next backward, and runs once however many
handles on it are realized. Expected values come from numpy models of SGD with momentum and Adam on a ReLU model (its gradient depends on
the weights, so a step taken from the wrong weights shows)."""
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, Context, GlobalCounters, nn

R = np.random.default_rng(7)
W0, B0, X = R.standard_normal((3, 2)).astype(np.float32), R.standard_normal(2).astype(np.float32), R.standard_normal((4, 3)).astype(np.float32)

def np_grads(w, b):
  """d/d(w, b) of sum(relu(X @ w + b)^2)"""
  z = X @ w + b
  d = 2 * np.maximum(z, 0)
  return X.T @ d, d.sum(0)

def np_sgd(steps, lr=0.05, momentum=0.9):
  ps, bufs = [W0.astype(np.float64), B0.astype(np.float64)], [0.0, 0.0]
  for _ in range(steps):
    gs = np_grads(*ps)
    for i in range(2):
      bufs[i] = momentum * bufs[i] + gs[i]
      ps[i] = ps[i] - lr * bufs[i]
  return ps

def np_adam(steps, lr=0.05, b1=0.9, b2=0.999, eps=1e-8):
  ps, ms, vs = [W0.astype(np.float64), B0.astype(np.float64)], [0.0, 0.0], [0.0, 0.0]
  for t in range(1, steps + 1):
    gs = np_grads(*ps)
    for i in range(2):
      ms[i], vs[i] = b1 * ms[i] + (1 - b1) * gs[i], b2 * vs[i] + (1 - b2) * gs[i] ** 2
      ps[i] = ps[i] - lr * (ms[i] / (1 - b1 ** t)) / (np.sqrt(vs[i] / (1 - b2 ** t)) + eps)
  return ps

OPTS = {"sgd": (lambda ps: nn.optim.SGD(ps, lr=0.05, momentum=0.9), np_sgd), "adam": (lambda ps: nn.optim.Adam(ps, lr=0.05), np_adam)}

def loss_of(w, b, x): return (x @ w + b).relu().square().sum()

def check(got, want):
  for g, w in zip(got, want): np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)

@pytest.mark.parametrize("read_loss", [False, True])
@pytest.mark.parametrize("opt", list(OPTS))
def test_a_discarded_step_lands_when_the_parameters_are_next_used(opt, read_loss):
  make, model = OPTS[opt]
  w, b, x = Tensor(W0.copy()), Tensor(B0.copy()), Tensor(X)
  o = make([w, b])
  bufs = [w.uop.base, b.uop.base]
  with Context(TRAINING=1):
    for step in range(3):
      o.zero_grad()
      loss = loss_of(w, b, x)  # from the last step's pending writes
      if read_loss: loss.item()  # realizes the writes inside the loss's graph; the gradient still reaches the parameters
      loss.backward()
      assert w.requires_grad and b.requires_grad
      check([w.grad.numpy(), b.grad.numpy()], np_grads(*model(step)))
      o.schedule_step()  # discarded
  check([w.numpy(), b.numpy()], model(3))
  assert [w.uop.base, b.uop.base] == bufs  # written in place, not into new buffers

@pytest.mark.parametrize("order", ["parameters first", "writes first", "together"])
def test_the_write_runs_once_whichever_handle_is_realized(order):
  w, b, x = Tensor(W0.copy()), Tensor(B0.copy()), Tensor(X)
  o = nn.optim.SGD([w, b], lr=0.05)  # no momentum: a second run of a write would subtract the step again
  with Context(TRAINING=1):
    loss_of(w, b, x).backward()
    writes = o.schedule_step()
    first, second = {"parameters first": ([w, b], writes), "writes first": (writes, [w, b]), "together": ([w, b, *writes], [])}[order]
    Tensor.realize(*first)
    GlobalCounters.reset()
    if second: Tensor.realize(*second)
    assert GlobalCounters.kernel_count == 0
  check([w.numpy(), b.numpy()], np_sgd(1, momentum=0.0))
  check([t.numpy() for t in writes], np_sgd(1, momentum=0.0))

def test_a_pending_step_lands_before_the_next_in_place_write():
  w, b, x = Tensor(W0.copy()), Tensor(B0.copy()), Tensor(X)
  o = nn.optim.SGD([w, b], lr=0.05)
  with Context(TRAINING=1):
    loss_of(w, b, x).backward()
    o.schedule_step()
    o.lr.assign(Tensor([0.0]))  # an lr schedule: the pending step keeps the rate it was made with
    b.assign(b - 1)  # assign into a pending parameter: the step lands in its buffer first
  want_w, want_b = np_sgd(1, momentum=0.0)
  check([w.numpy(), b.numpy()], [want_w, want_b - 1])

def test_jitted_steps_in_tinygrads_idiom():
  # the writes are realized with the loss inside the function: a replay runs the captured kernels, and no python is left to land them
  w, b = Tensor(W0.copy()), Tensor(B0.copy())
  o = nn.optim.Adam([w, b], lr=0.05)
  @TinyJit
  @Context(TRAINING=1)
  def step(x):
    o.zero_grad()
    loss = loss_of(w, b, x).backward()
    return loss.realize(*o.schedule_step())
  losses = [step(Tensor(X)).item() for _ in range(4)]
  check([w.numpy(), b.numpy()], np_adam(4))
  want = [float((np.maximum(X @ p[0] + p[1], 0) ** 2).sum()) for p in (np_adam(k) for k in range(4))]
  np.testing.assert_allclose(losses, want, rtol=1e-5)
