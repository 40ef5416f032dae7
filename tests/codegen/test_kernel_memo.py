"""Kernels of one structure on other buffers, in one schedule, are built once (schedule/kernel_memo.py): each reads its own buffers, in
the order the first one read its own. Oracle: numpy."""
import numpy as np
from tinygrad import Tensor, Variable
import tinygrad.schedule.rangeify as rangeify

R = np.random.default_rng(0)

def _counting_builds(monkeypatch) -> list:
  built, build = [], rangeify.build_kernel
  monkeypatch.setattr(rangeify, "build_kernel", lambda *a, **k: built.append(1) or build(*a, **k))
  return built

def test_one_build_for_a_structure(monkeypatch):
  xs = [R.standard_normal(64).astype(np.float32) for _ in range(6)]
  ts = [Tensor(x).realize() for x in xs]
  built = _counting_builds(monkeypatch)
  outs = [(t * 2 + 1).exp() for t in ts]
  Tensor.realize(*outs)
  assert len(built) == 1
  for o, x in zip(outs, xs): np.testing.assert_allclose(o.numpy(), np.exp(x * 2 + 1), rtol=1e-6)

def test_the_same_buffer_twice_is_another_structure(monkeypatch):
  x, y = R.standard_normal(32).astype(np.float32), R.standard_normal(32).astype(np.float32)
  tx, ty = Tensor(x).realize(), Tensor(y).realize()
  built = _counting_builds(monkeypatch)
  a, b, c = tx * ty - ty, tx * tx - tx, ty * tx - tx  # (p*q - q), (p*p - p), (q*p - p): three ways to alias two buffers
  Tensor.realize(a, b, c)
  np.testing.assert_allclose(a.numpy(), x * y - y)
  np.testing.assert_allclose(b.numpy(), x * x - x)
  np.testing.assert_allclose(c.numpy(), y * x - x)
  assert len(built) == 2  # a and c are one structure, p*q - q with (p, q) = (x, y) and (y, x); b is p*p - p

def test_realized_views_and_intermediates():
  # each kernel reads an intermediate the schedule realized (a sum broadcast back) and a view of its own buffer
  xs = [R.standard_normal((8, 16)).astype(np.float32) for _ in range(3)]
  ts = [Tensor(x).realize() for x in xs]
  outs = [t[2:6] - t.sum(1, keepdim=True)[2:6] + t.T[:4, :4].sum() for t in ts]
  Tensor.realize(*outs)
  for o, x in zip(outs, xs): np.testing.assert_allclose(o.numpy(), x[2:6] - x.sum(1, keepdims=True)[2:6] + x.T[:4, :4].sum(), rtol=1e-5, atol=1e-5)

def test_a_bound_variable_reads_its_value():
  v = Variable("n", 1, 16).bind(5)
  xs = [R.standard_normal(16).astype(np.float32) for _ in range(3)]
  outs = [(Tensor(x).realize()[:v] * 3).sum() for x in xs]
  Tensor.realize(*outs)
  for o, x in zip(outs, xs): np.testing.assert_allclose(o.item(), (x[:5] * 3).sum(), rtol=1e-5)
