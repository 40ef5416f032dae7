"""What realize() walks to decide which computed nodes it keeps (tensor.py _realize): a node is kept when its graph reads memory or a
gradient flows through it, and record() asks every kept node for the second. The gradient path is asked first, so a training graph's
nodes (on it) are walked once, for that alone, and before the kernels run. The walk visits a node once, however many kept nodes share
it. Gradients against numpy."""
import numpy as np
import tinygrad.tensor as tensor_module
from tinygrad import Tensor

def _count_walks(monkeypatch) -> dict[str, int]:
  visits: dict[str, int] = {}
  fill = tensor_module.fill_memo
  def counting(u, key, rule):
    def counted(x):
      visits[key] = visits.get(key, 0) + 1
      return rule(x)
    return fill(u, key, counted)
  monkeypatch.setattr(tensor_module, "fill_memo", counting)
  return visits

def _mlp(x:Tensor, w1:Tensor, w2:Tensor) -> Tensor: return ((x @ w1).tanh() @ w2).sigmoid().square().mean()

def test_training_realize_walks_the_gradient_path_alone(monkeypatch):
  rng = np.random.default_rng(0)
  xn, w1n, w2n = (rng.standard_normal(s, dtype=np.float32) for s in ((8, 16), (16, 32), (32, 4)))
  x, w1, w2 = Tensor(xn).realize(), Tensor(w1n, requires_grad=True).realize(), Tensor(w2n, requires_grad=True).realize()
  loss = _mlp(x, w1, w2)
  g1, g2 = loss.gradient(w1, w2)
  nodes = len((g1.uop.sink(g2.uop, loss.uop)).toposort())
  visits = _count_walks(monkeypatch)
  Tensor.realize(loss, g1, g2)
  assert tensor_module._READS not in visits, visits
  assert 0 < visits[tensor_module._GRAD_PATH] <= nodes, (visits, nodes)
  h = np.tanh(xn.astype(np.float64) @ w1n)
  s = 1 / (1 + np.exp(-(h @ w2n)))
  ds = 2 * s / s.size * s * (1 - s)
  dh = ds @ w2n.T * (1 - h * h)
  np.testing.assert_allclose(loss.numpy(), (s * s).mean(), rtol=1e-5)
  np.testing.assert_allclose(g2.numpy(), h.T @ ds, rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(g1.numpy(), xn.T @ dh, rtol=1e-4, atol=1e-6)
