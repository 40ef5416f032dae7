"""A kernel is a row chain (reduces one after another per row, untiled: codegen/opt/heuristic.py) where some REDUCE is read across an
output axis it does not depend on, but not where that REDUCE is minor beside the kernel's work: an LSTM's recurrent weight gradient,
the sum over 16 steps of h.T @ dgates whose first h is zeros, sums that step's gates alone (no row axis), and as a row chain the sum of
16 matmuls was left untiled (104 ms, tiled 3.3 ms, the kernel at 2 threads; the LSTM's training step 273 -> 159 ms). Nor where the
REDUCE depends on an output axis nested inside the one it is read across: it runs inside that axis's loop, not before it (a constant's
matmul, zeros(16, 256) @ w at an LSTM's first step: each column's sum, the same in every row, untiled 6-10 ms, tiled 0.1). Values
against numpy."""
import numpy as np
from tinygrad import Tensor, Device
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program
from tinygrad.codegen.opt.kernel import broadcast_reduce
import tinygrad.codegen.lowering as lowering

def _kernels(monkeypatch, *uops) -> list:
  """the kernels the schedule of uops lowers to, optimized"""
  seen, opt = [], lowering.optimize
  monkeypatch.setattr(lowering, "optimize", lambda ast, r: seen.append(opt(ast, r)) or seen[-1])
  for it in create_schedule(list(uops))[0]:
    if it.kind == "kernel": get_program(it.ast, Device["CPU"].renderer)
  return seen

def test_matmul_of_a_broadcast_constant_is_tiled(monkeypatch):
  w = np.random.default_rng(1).standard_normal((256, 1024), dtype=np.float32)
  out = Tensor.full((16, 256), 0.5) @ Tensor(w).realize()
  (k,) = _kernels(monkeypatch, out.uop)
  # the column axis, stride 1 in the load and the store, in vectors; the rows, whose sums are one value, share it
  assert {(o.op.name, o.axis) for o in k.arg.applied_opts} >= {("UPCAST", 0), ("UPCAST", 1)}, k.arg.applied_opts
  np.testing.assert_allclose(out.numpy(), np.broadcast_to(0.5 * w.astype(np.float64).sum(0), (16, 1024)), rtol=1e-4, atol=1e-3)

def _scheduled(*uops) -> list: return [it.ast for it in create_schedule(list(uops))[0] if it.kind == "kernel"]

def test_softmax_rows_stay_a_chain(monkeypatch):
  x = np.random.default_rng(2).standard_normal((64, 1000), dtype=np.float32)
  out = Tensor(x).realize().softmax(-1)
  # the rule itself: softmax's max and sum run before the loop over the row they are read across; the constant's matmul is none
  assert [broadcast_reduce(k) for k in _scheduled(out.uop)] == [True]
  assert [broadcast_reduce(k) for k in _scheduled((Tensor.full((16, 256), 0.5) @ Tensor.empty(256, 1024)).uop)] == [False]
  ks = _kernels(monkeypatch, out.uop)
  assert not any(o.op.name == "UPCAST" and o.axis == 0 for k in ks for o in k.arg.applied_opts), [k.arg.applied_opts for k in ks]
  e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
  np.testing.assert_allclose(out.numpy(), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)

def test_sum_of_matmuls_with_a_zero_step_is_tiled(monkeypatch):
  rng = np.random.default_rng(0)
  T, B, H = 16, 16, 256
  hs = [np.zeros((B, H), np.float32)] + [rng.standard_normal((B, H), dtype=np.float32) for _ in range(T - 1)]
  gs = [rng.standard_normal((B, 4 * H), dtype=np.float32) for _ in range(T)]
  th = [Tensor.zeros(B, H)] + [Tensor(h).realize() for h in hs[1:]]
  w = th[0].T @ Tensor(gs[0]).realize()
  for h, g in zip(th[1:], gs[1:]): w = w + h.T @ Tensor(g).realize()
  (k,) = [k for k in _kernels(monkeypatch, w.uop) if sum(u.op.name == "REDUCE" for u in k.toposort()) == T]
  assert any(o.op.name == "UPCAST" for o in k.arg.applied_opts), k.arg.applied_opts
  want = sum(h.T.astype(np.float64) @ g for h, g in zip(hs, gs))
  np.testing.assert_allclose(w.numpy(), want, rtol=1e-4, atol=1e-3)
