"""A kernel is a row chain (reduces one after another per row, untiled: codegen/opt/heuristic.py) where some REDUCE is read across an
output axis it does not depend on, but not where that REDUCE is minor beside the kernel's work: an LSTM's recurrent weight gradient,
the sum over 16 steps of h.T @ dgates whose first h is zeros, sums that step's gates alone (no row axis), and as a row chain the sum of
16 matmuls was left untiled (104 ms, tiled 3.3 ms, the kernel at 2 threads; the LSTM's training step 273 -> 159 ms). Values against
numpy."""
import numpy as np
from tinygrad import Tensor, Device
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program
import tinygrad.codegen.lowering as lowering

def test_sum_of_matmuls_with_a_zero_step_is_tiled(monkeypatch):
  rng = np.random.default_rng(0)
  T, B, H = 16, 16, 256
  hs = [np.zeros((B, H), np.float32)] + [rng.standard_normal((B, H), dtype=np.float32) for _ in range(T - 1)]
  gs = [rng.standard_normal((B, 4 * H), dtype=np.float32) for _ in range(T)]
  th = [Tensor.zeros(B, H)] + [Tensor(h).realize() for h in hs[1:]]
  w = th[0].T @ Tensor(gs[0]).realize()
  for h, g in zip(th[1:], gs[1:]): w = w + h.T @ Tensor(g).realize()
  seen, opt = [], lowering.optimize
  monkeypatch.setattr(lowering, "optimize", lambda ast, r: seen.append(opt(ast, r)) or seen[-1])
  for it in create_schedule([w.uop])[0]:
    if it.kind == "kernel": get_program(it.ast, Device["CPU"].renderer)
  (k,) = [k for k in seen if sum(u.op.name == "REDUCE" for u in k.toposort()) == T]
  assert any(o.op.name == "UPCAST" for o in k.arg.applied_opts), k.arg.applied_opts
  want = sum(h.T.astype(np.float64) @ g for h, g in zip(hs, gs))
  np.testing.assert_allclose(w.numpy(), want, rtol=1e-4, atol=1e-3)
