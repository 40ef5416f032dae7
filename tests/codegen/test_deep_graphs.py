"""The schedule is rewrite rules applied without recursion: deep graphs build and run at python's default recursion limit."""
import sys, numpy as np, pytest
from tinygrad import Tensor
from tinygrad.uop.ops import UOp, Ops
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.helpers import Context

@pytest.fixture(autouse=True)
def default_recursion_limit():
  old = sys.getrecursionlimit()
  sys.setrecursionlimit(1000)  # python's default: nothing here may need more
  yield
  sys.setrecursionlimit(old)

def test_10k_elementwise_chain():
  a = np.linspace(-1, 1, 8, dtype=np.float32)
  x = y = Tensor(a, device="PYTHON")  # one kernel of 20k ops: LLVM's O2 alone takes half a minute on it, the emulator seconds
  for i in range(10_000): y = y * 0.9999 + 0.0001 * (i % 3)
  want = a.copy()
  for i in range(10_000): want = want * np.float32(0.9999) + np.float32(0.0001 * (i % 3))
  (items, _) = create_schedule([y.uop])
  assert len(items) == 1
  np.testing.assert_allclose(y.numpy(), want, rtol=1e-4)

def test_2000_deep_movement_chain():
  a = np.arange(12, dtype=np.float32).reshape(3, 4)
  y, want = Tensor(a), a
  for _ in range(1000):
    y, want = y.permute(1, 0).reshape(3, 4), want.T.reshape(3, 4)
  np.testing.assert_equal((y + 0).numpy(), want)

def test_1000_layer_mlp():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((2, 8)).astype(np.float32)
  ws = [rng.standard_normal((8, 8)).astype(np.float32) * 0.35 for _ in range(1000)]
  h, want = Tensor(x), x
  for w in ws: h, want = (h @ Tensor(w)).relu() + 0.01, np.maximum(want @ w, 0) + 0.01
  assert len([it for it in create_schedule([h.uop])[0] if it.kind == "kernel"]) == 1000
  np.testing.assert_allclose(h.numpy(), want, rtol=1e-3, atol=1e-4)

def test_index_stage_is_checked_by_the_spec(monkeypatch):
  # the index rules' result is checked as a kernel under SPEC=1: a rule that leaves a tensor-level node behind is caught, with the stage
  from tinygrad.uop.spec import SpecError
  from tinygrad.uop.ops import PatternMatcher, UPat
  import tinygrad.schedule.indexing as ix
  leaky = PatternMatcher([(UPat(Ops.AT, src=(UPat(Ops.CONST, name="c"),), allow_any_len=True), lambda c: c.reshape((1,)).reshape(()))])
  monkeypatch.setattr(ix, "pm_index_checked", leaky + ix.pm_index_checked)
  x = Tensor([1., 2.]) + 1
  with Context(SPEC=1), pytest.raises(SpecError, match=r"\[kernel\] Ops.RESHAPE in this form is not part of the kernel stage"):
    ix.build_kernel(x.uop, UOp.new_buffer("CPU", 2, x.dtype), {})
  monkeypatch.undo()
  with Context(SPEC=1): assert ix.build_kernel(x.uop, UOp.new_buffer("CPU", 2, x.dtype), {})[0].op is Ops.SINK

def _np_layernorm(x): return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)

def test_transformer_residual_stream_schedules_layer_by_layer():
  # every layer reads the residual stream twice (the skip and the block), and each matmul's operand sits on all the layers below: an
  # analysis that walks the graph once per path (or builds an operand through the reduces under it) takes time exponential in the depth
  # (a 2-layer GPT's schedule took 100 s, 4 layers did not finish). PACK=2 packs at any size, so the small shapes take that analysis
  rng = np.random.default_rng(0)
  T, D, H, L = 8, 16, 2, 8
  x = rng.standard_normal((T, D)).astype(np.float32)
  ws = [[rng.standard_normal(s).astype(np.float32) * 0.3 for s in ((D, 3 * D), (D, D), (D, 2 * D), (2 * D, D))] for _ in range(L)]
  want = x
  for qkv, proj, fc, out in ws:
    q, k, v = np.split(_np_layernorm(want) @ qkv, 3, axis=1)
    q, k, v = (a.reshape(T, H, D // H).transpose(1, 0, 2) for a in (q, k, v))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(D // H)
    e = np.exp(s - s.max(-1, keepdims=True))
    want = want + ((e / e.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(T, D) @ proj
    want = want + np.maximum(_np_layernorm(want) @ fc, 0) @ out
  with Context(PACK=2):
    h = Tensor(x)
    for qkv, proj, fc, out in (map(Tensor, w) for w in ws):
      q, k, v = (h.layernorm() @ qkv).chunk(3, dim=1)
      q, k, v = (a.reshape(T, H, D // H).transpose(0, 1) for a in (q, k, v))
      h = h + q.scaled_dot_product_attention(k, v).transpose(0, 1).reshape(T, D) @ proj
      h = h + (h.layernorm() @ fc).relu() @ out
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-3, atol=1e-3)
