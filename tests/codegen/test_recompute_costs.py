"""What the scheduler counts before it computes an elementwise node into a buffer of its own instead of recomputing it in each kernel
that reads it (schedule/rangeify.py, _costly). A node read by several kernels once per element is kept apart where its code holds
CHAIN_OPS distinct nodes or more: each distinct node once, not once per path to it (a sigmoid reads t and s twice each, and its gradient
every one of them again, so a count per path doubled at each level: tanh's forward and gradient took 5 kernels). A cat's piece, under
the pad that places it, is evaluated inside its own elements alone, not once per element of the cat (an LSTM cell's 4 gate gradients,
joined into its (16, 1024) gradient, looked read 4 times each and were cut into 37 kernels). Values against numpy."""
import numpy as np
from tinygrad import Tensor
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes
from tinygrad.schedule.rangeify import create_schedule, FusedCosts, CHAIN_OPS

def _kernels(*ts:Tensor) -> int: return sum(1 for it in create_schedule([t.uop for t in ts])[0] if it.kind == "kernel")
def _sig(x): return 1 / (1 + np.exp(-x))

def test_tanh_and_its_gradient_share_the_forward_by_recomputing():
  rng = np.random.default_rng(0)
  xn, wn = rng.standard_normal((16, 256), dtype=np.float32), rng.standard_normal((16, 256), dtype=np.float32)
  x, w = Tensor(xn).realize(), Tensor(wn, requires_grad=True).realize()
  y = (x * w).tanh()
  (gw,) = (y * x).sum().gradient(w)
  assert _kernels(y, gw) == 2
  t = np.tanh(xn.astype(np.float64) * wn)
  np.testing.assert_allclose(y.numpy(), t, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(gw.numpy(), xn * (1 - t * t) * xn, rtol=1e-4, atol=1e-5)

def test_lstm_cell_gradient_counts_each_gate_once():
  rng = np.random.default_rng(1)
  gn, c0n = rng.standard_normal((16, 1024), dtype=np.float32), rng.standard_normal((16, 256), dtype=np.float32)
  g, c0 = Tensor(gn).realize(), Tensor(c0n).realize()
  gw = Tensor(np.ones((16, 1024), np.float32), requires_grad=True).realize()
  i, f, gg, o = (g * gw).chunk(4, 1)
  c = f.sigmoid() * c0 + i.sigmoid() * gg.tanh()
  h = o.sigmoid() * c.tanh()
  (dgw,) = h.square().sum().gradient(gw)
  assert _kernels(h, dgw) <= 15
  a = gn.astype(np.float64)
  si, sf, tg, so = _sig(a[:, :256]), _sig(a[:, 256:512]), np.tanh(a[:, 512:768]), _sig(a[:, 768:])
  cn = sf * c0n + si * tg
  hn = so * np.tanh(cn)
  dh = 2 * hn
  dc = dh * so * (1 - np.tanh(cn) ** 2)
  dgates = np.concatenate([dc * tg * si * (1 - si), dc * c0n * sf * (1 - sf), dc * si * (1 - tg * tg), dh * np.tanh(cn) * so * (1 - so)], 1)
  np.testing.assert_allclose(h.numpy(), hn, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(dgw.numpy(), dgates * a, rtol=1e-4, atol=1e-5)

def _chain(x:UOp, n:int) -> UOp:
  for i in range(n): x = x * (i + 2.0) if i % 2 else x + (i + 2.0)
  return x

def test_chain_ops_counts_a_node_once_per_element_it_is_read_at():
  x = UOp.new_buffer("CPU", 64, dtypes.float).reshape((64,))
  u = _chain(x, 10)  # 10 ops and the load
  costs = FusedCosts(u.sink())
  assert costs.chain_ops(u) == 11
  assert costs.chain_ops(u * u) == 12  # read twice at the same element: one evaluation
  # two shifted windows of u are two evaluations of each of its nodes (20 ops and 2 loads, and the add)
  shifted = u.shrink(((0, 32),)) + u.shrink(((32, 64),))
  assert FusedCosts(shifted.sink()).chain_ops(shifted) == 23
  assert FusedCosts((big := _chain(x, 2 * CHAIN_OPS)).sink()).chain_ops(big) == CHAIN_OPS
