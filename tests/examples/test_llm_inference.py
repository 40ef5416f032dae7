"""Transformer inference written the way tinygrad 0.14's example LLM programs are (bench/api_diff_llm.py: Embedding, LayerNorm/RMSNorm,
rotary (cos, sin) pairs, scaled_dot_product_attention with a causal mask, a KV cache written with assign() at a symbolic start_pos, the
decode step under TinyJit with a bound Variable), run unchanged; the oracle is the same model in float64 numpy without a cache."""
import importlib.util, pathlib
import numpy as np
import pytest

def _program():
  path = pathlib.Path(__file__).parents[2] / "bench" / "api_diff_llm.py"
  spec = importlib.util.spec_from_file_location("api_diff_llm", path)
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod

@pytest.mark.parametrize("style", ["gpt2", "llama"])
def test_jitted_decode_matches_numpy(style):
  L = _program()
  from tinygrad import Tensor
  m, toks = L.build(style), list(L.PROMPT)
  for step in range(5):
    start_pos = len(toks) - 1 if step else 0
    tok, logits = m(Tensor([toks[start_pos:]]), start_pos, 0.0, jit=True)
    ref = L.numpy_gpt(toks, style)[-1]
    np.testing.assert_allclose(logits.numpy()[0], ref, atol=2e-4, rtol=1e-4)
    assert int(tok.item()) == int(ref.argmax())
    toks.append(int(tok.item()))
  assert m.forward_jit.cnt == 4 and m.forward_jit.captured is not None  # one capture served positions 6..8
  # the rotary table, .contiguous() of constants never realized by itself, was computed once: its handle reads the buffer
  if style == "llama": assert m.freqs._is_buffer()

def test_sampling_follows_the_softmax():
  L = _program()
  from tinygrad import Tensor
  Tensor.manual_seed(3)
  m = L.build("llama")
  _, logits = m(Tensor([L.PROMPT]), 0, 0.0)
  p = np.exp(logits.numpy()[0] / 0.7 - (logits.numpy()[0] / 0.7).max())
  p /= p.sum()
  draws = (logits / 0.7).softmax().multinomial(4000, replacement=True).numpy()[0]
  np.testing.assert_allclose(np.bincount(draws, minlength=L.VOCAB) / 4000, p, atol=0.03)
