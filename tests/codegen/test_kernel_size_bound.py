"""Masked attention's backward sums dP * exp(s - max) over the keys, a polynomial per element under a mask that the batch and heads
share. The heuristic tiled the batch and heads to share the mask's load (32 scalar lanes, each evaluating its own exp) and unrolled the
keys 8 on top: 256 accumulators, ~13k ops of code, seconds of LLVM per kernel on the first call (codegen/opt/heuristic.py,
_scalar_polynomial_axes). The kernel now stays about the size of the unmasked one; gradients against numpy."""
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.uop import Ops
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program
import tinygrad.codegen.lowering as lowering

rng = np.random.default_rng(7)

def _inputs(shape) -> tuple[list[Tensor], list[np.ndarray]]:
  xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]
  ts = [Tensor(x, requires_grad=i < 3).realize() for i, x in enumerate(xs)]
  return ts, xs

def _masked(q:Tensor, k:Tensor, v:Tensor, how:str) -> Tensor:
  if how == "causal": return q.scaled_dot_product_attention(k, v, is_causal=True)
  mask = Tensor(np.tril(np.ones((q.shape[-2],) * 2, bool))).realize()  # a buffer, as a model holds it
  if how == "bool": return q.scaled_dot_product_attention(k, v, attn_mask=mask)
  if how == "float": return q.scaled_dot_product_attention(k, v, attn_mask=mask.where(0.0, float("-inf")))
  s = (q @ k.transpose(-2, -1)) / q.shape[-1] ** 0.5  # written out: masked_fill and softmax
  return s.masked_fill(mask.logical_not(), float("-inf")).softmax(-1) @ v

def _reduces_a_polynomial(ast) -> bool:
  return any(u.op is Ops.REDUCE and any(w.op is Ops.EXP2 for w in u.src[0].toposort()) for u in ast.toposort())

@pytest.mark.parametrize("how", ["causal", "bool", "float", "masked_fill"])
def test_masked_attention_backward_kernels_stay_small(how):
  # (16, 4, 128, 32): the shape of a small GPT's attention, whose two such kernels took 8-10 s each to compile; unmasked ~900 ops
  (q, k, v, go), _ = _inputs((16, 4, 128, 32))
  grads = (_masked(q, k, v, how) * go).sum().gradient(q, k, v)
  items, _ = create_schedule([g.uop for g in grads])
  sizes = [len(get_program(it.ast, Device["CPU"].renderer).uops) for it in items if it.kind == "kernel" and _reduces_a_polynomial(it.ast)]
  assert len(sizes) >= 2 and max(sizes) < 3000, sizes

def test_column_sum_of_exp_keeps_its_vector_tile(monkeypatch):
  # lanes along the stride-1 axis of exp's input evaluate it as vectors: those are still tiled
  seen, opt = [], lowering.optimize
  monkeypatch.setattr(lowering, "optimize", lambda ast, r: seen.append(opt(ast, r)) or seen[-1])
  x = rng.standard_normal((64, 512)).astype(np.float32)
  items, _ = create_schedule([Tensor(x).realize().exp().sum(0).uop])
  (ast,) = [it.ast for it in items if it.kind == "kernel"]
  get_program(ast, Device["CPU"].renderer)
  assert any(o.op.name == "UPCAST" for o in seen[0].arg.applied_opts), seen[0].arg.applied_opts
  np.testing.assert_allclose(Tensor(x).exp().sum(0).numpy(), np.exp(x.astype(np.float64)).sum(0), rtol=1e-5)

def _numpy_grads(q, k, v, go):
  q, k, v, go = (a.astype(np.float64) for a in (q, k, v, go))
  T, scale = q.shape[-2], 1 / np.sqrt(q.shape[-1])
  s = np.where(np.tril(np.ones((T, T), bool)), q @ k.swapaxes(-2, -1) * scale, -np.inf)
  p = np.exp(s - s.max(-1, keepdims=True))
  p /= p.sum(-1, keepdims=True)
  dp = go @ v.swapaxes(-2, -1)
  ds = p * (dp - (dp * p).sum(-1, keepdims=True))
  return ds @ k * scale, ds.swapaxes(-2, -1) @ q * scale, p.swapaxes(-2, -1) @ go

@pytest.mark.parametrize("how", ["causal", "bool", "float", "masked_fill"])
@pytest.mark.parametrize("shape", [(2, 3, 16, 8), (3, 2, 12, 4)])
def test_masked_attention_gradients_match_numpy(how, shape):
  (q, k, v, go), xs = _inputs(shape)
  grads = (_masked(q, k, v, how) * go).sum().gradient(q, k, v)
  for got, want in zip(grads, _numpy_grads(*xs)): np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
