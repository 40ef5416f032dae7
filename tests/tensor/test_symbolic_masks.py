"""Masks and aranges over an axis whose length is a bound Variable (a KV cache's start_pos + T): tril/triu, arange and causal attention
build on an arange of the axis, which needed a length known when the graph was built. numpy is the oracle, also under TinyJit for
chunks of several tokens at growing positions; and the buffer= switch of the creation functions."""
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, Variable

SP = Variable("start_pos", 0, 10)

def test_triu_tril_over_a_symbolic_axis():
  sp = SP.bind(3)
  got = Tensor.full((1, 1, 2, sp + 2), float("-inf")).triu(sp + 1).shrink((None, None, None, (0, 5))).numpy()
  np.testing.assert_array_equal(got, np.triu(np.full((1, 1, 2, 5), -np.inf), 4))
  np.testing.assert_array_equal(Tensor.ones(2, sp + 2).tril(sp).shrink((None, (0, 5))).numpy(), np.tril(np.ones((2, 5)), 3))

def test_arange_of_a_symbolic_length():
  assert Tensor.arange(SP.bind(3) + 2).shrink(((0, 5),)).tolist() == [0, 1, 2, 3, 4]
  assert Tensor.arange(SP.bind(4), 9).shrink(((0, 5),)).tolist() == [4, 5, 6, 7, 8]
  assert Tensor.arange(1, SP.bind(7) + 1, 3).shrink(((0, 3),)).tolist() == [1, 4, 7]
  with pytest.raises(ValueError, match="needs an int step > 0"): Tensor.arange(SP.bind(3) + 2, step=0.5)

def _causal_attention(q, k, v, top_left=False):
  """numpy: query i (of T, the last T positions) sees keys 0 .. len(k) - T + i; top_left (torch's is_causal): keys 0 .. i"""
  s = q @ k.T / np.sqrt(q.shape[-1])
  t, n = s.shape
  s = np.where(np.arange(n)[None, :] <= np.arange(t)[:, None] + (0 if top_left else n - t), s, -np.inf)
  w = np.exp(s - s.max(-1, keepdims=True))
  return (w / w.sum(-1, keepdims=True)) @ v

def test_chunked_causal_attention_under_jit():
  """a cache written a chunk of 2 at a time at start_pos and attended up to start_pos + 2 with the causal mask triu(start_pos + 1), as
  tinygrad's llm model builds it: the chunk's mask is over a symbolic axis"""
  rng = np.random.default_rng(0)
  keys, qs = rng.standard_normal((12, 4)).astype(np.float32), rng.standard_normal((12, 4)).astype(np.float32)
  cache = Tensor.zeros(12, 4).contiguous().realize()
  @TinyJit
  def step(q:Tensor, kv:Tensor, sp):
    cache[sp:sp + 2].assign(kv).realize()
    k = cache[:sp + 2]
    mask = Tensor.full((2, sp + 2), float("-inf")).triu(sp + 1)
    return ((q @ k.T) / 2.0 + mask).softmax(-1).matmul(k).realize()
  for pos in range(0, 10, 2):
    got = step(Tensor(qs[pos:pos + 2]), Tensor(keys[pos:pos + 2]), SP.bind(pos)).numpy()
    k = keys[:pos + 2]
    np.testing.assert_allclose(got, _causal_attention(qs[pos:pos + 2], k, k), rtol=1e-5, atol=1e-5)

def test_sdpa_is_causal_over_a_symbolic_axis():
  """is_causal's mask is torch's and tinygrad's (top-left: query i sees keys 0 .. i) over a key axis of length start_pos + 2"""
  rng = np.random.default_rng(1)
  q, kv = rng.standard_normal((1, 1, 2, 4)).astype(np.float32), rng.standard_normal((1, 1, 10, 4)).astype(np.float32)
  k = Tensor(kv).shrink((None, None, (0, SP.bind(3) + 2), None))
  np.testing.assert_allclose(Tensor(q).scaled_dot_product_attention(k, k, is_causal=True).numpy()[0, 0],
                             _causal_attention(q[0, 0], kv[0, 0, :5], kv[0, 0, :5], top_left=True), rtol=1e-5, atol=1e-6)

def test_buffer_switch_of_the_creation_functions():
  """tinygrad's buffer=False (a plain broadcast constant; upstream code passes it: LSTMCell, llm) is accepted; values are the same"""
  assert Tensor.full((2,), 1.5, buffer=False).tolist() == [1.5, 1.5]
  assert Tensor.zeros(2, 3, buffer=False).tolist() == [[0.0] * 3] * 2 and Tensor.ones(2, buffer=False).tolist() == [1.0, 1.0]
  x = Tensor([1.0, 2.0])
  assert x.full_like(7, buffer=False).tolist() == [7.0, 7.0] and x.zeros_like(buffer=False).tolist() == [0.0, 0.0]
  t = Tensor.zeros(3, buffer=False)
  t.assign(Tensor([1.0, 2.0, 3.0]))
  assert t.tolist() == [1.0, 2.0, 3.0] and Tensor.zeros(3, buffer=False).tolist() == [0.0, 0.0, 0.0]  # the write stayed in its own
