"""tinygrad.llm.model on tiny random GGUF files, checked against a float64 numpy forward pass written here (no cache: full causal attention
over the whole sequence, RoPE as llama.cpp applies it: neighbouring pairs for llama, halves for qwen2/qwen3)."""
import pathlib, sys
import numpy as np
import pytest
from tinygrad import Tensor, getenv
from tinygrad.llm.model import Transformer, precompute_freqs_cis
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the tiny GGUF files shared with test_llm_cli
from llm_gguf_helpers import DIM, LAYERS, HEADS, KV_HEADS, VOCAB, CTX, EPS, THETA, HD, gguf_file, tiny_weights, tiny_metadata, write_tiny_gguf

PROMPT = [3, 17, 5, 42, 8, 1, 29]

def _rms(x, g): return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * g

def _rope(x, interleaved:bool):
  """x (heads, T, HD) at positions 0..T-1; llama.cpp's llama rope turns pairs (2i, 2i+1), qwen's (neox) pairs (i, i + HD/2)"""
  ang = np.arange(x.shape[1])[:, None] * THETA ** (-2 * np.arange(HD // 2) / HD)
  cos, sin = np.cos(ang), np.sin(ang)
  a, b = (x[..., 0::2], x[..., 1::2]) if interleaved else (x[..., :HD//2], x[..., HD//2:])
  ra, rb = a * cos - b * sin, a * sin + b * cos
  out = np.empty_like(x)
  if interleaved: out[..., 0::2], out[..., 1::2] = ra, rb
  else: out[..., :HD//2], out[..., HD//2:] = ra, rb
  return out

def ref_logits(W:dict, arch:str, toks:list[int]) -> np.ndarray:
  """(T, VOCAB) logits of every position"""
  P, T = {k: v.astype(np.float64) for k, v in W.items()}, len(toks)
  x = P["token_embd.weight"][toks]
  def heads(h, b, n): return (h @ P[b+".weight"].T + P.get(b+".bias", 0)).reshape(T, n, HD).transpose(1, 0, 2)
  for i in range(LAYERS):
    b = f"blk.{i}."
    h = _rms(x, P[b+"attn_norm.weight"])
    q, k, v = heads(h, b+"attn_q", HEADS), heads(h, b+"attn_k", KV_HEADS), heads(h, b+"attn_v", KV_HEADS)
    if b+"attn_q_norm.weight" in P: q, k = _rms(q, P[b+"attn_q_norm.weight"]), _rms(k, P[b+"attn_k_norm.weight"])
    q, k = _rope(q, arch == "llama"), _rope(k, arch == "llama")
    k, v = np.repeat(k, HEADS // KV_HEADS, 0), np.repeat(v, HEADS // KV_HEADS, 0)  # query head j reads kv head j // 2
    s = q @ k.transpose(0, 2, 1) / np.sqrt(HD) + np.triu(np.full((T, T), -np.inf), 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    x = x + ((p / p.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(T, DIM) @ P[b+"attn_output.weight"].T
    f = _rms(x, P[b+"ffn_norm.weight"])
    g = f @ P[b+"ffn_gate.weight"].T
    x = x + (g / (1 + np.exp(-g)) * (f @ P[b+"ffn_up.weight"].T)) @ P[b+"ffn_down.weight"].T
  return _rms(x, P["output_norm.weight"]) @ P.get("output.weight", P["token_embd.weight"]).T

def ref_greedy(W:dict, arch:str, toks:list[int], n:int) -> list[int]:
  toks = list(toks)
  for _ in range(n): toks.append(int(ref_logits(W, arch, toks)[-1].argmax()))
  return toks[-n:]

def model_logits(model:Transformer, toks:list[int]) -> np.ndarray:
  """every position's logits, through the model's own blocks (forward keeps only the last position's token)"""
  x = model.token_embd(Tensor([toks])).float()
  for block in model.blk: x = block(x, 0)
  return model.output(model.output_norm(x)).numpy()[0]

@pytest.fixture
def full_precision(monkeypatch):
  """HALF=0 keeps the file's float32 weights, for a tight comparison with numpy (getenv caches what it read: cleared both ways)"""
  monkeypatch.setenv("HALF", "0")
  getenv.cache_clear()
  yield
  getenv.cache_clear()

@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_forward_matches_numpy(tmp_path, full_precision, arch):
  W = tiny_weights(arch)
  write_tiny_gguf(path := tmp_path / "m.gguf", arch, W)
  model, kv = Transformer.from_gguf(path)
  assert kv["general.architecture"] == arch and model.max_context == CTX and model.blk[0].attn_q.weight.dtype.name == "float"
  ref = ref_logits(W, arch, PROMPT)
  np.testing.assert_allclose(model_logits(model, PROMPT), ref, atol=2e-4, rtol=1e-4)
  assert model.forward(Tensor([PROMPT]), 0, Tensor([0.0])).tolist() == [[int(ref[-1].argmax())]]

def test_precompute_freqs_cis():
  f = precompute_freqs_cis(8, 5, theta=100.0).numpy()
  ang = np.arange(5)[:, None] * 100.0 ** (-np.arange(0, 8, 2) / 8)
  np.testing.assert_allclose(f, np.concatenate([np.cos(ang), np.sin(ang)], -1), atol=1e-6)

def test_generate_greedy_matches_numpy(tmp_path, full_precision):
  """a 7-token prompt in chunks of 4 and 3 (the prefill TinyJit: its second call captures, Variable chunk length), then one token at a
  time (the rollout TinyJit replays at each start_pos); a longer prompt then reuses the cached prefix"""
  W = tiny_weights("llama")
  write_tiny_gguf(path := tmp_path / "m.gguf", "llama", W)
  model, _ = Transformer.from_gguf(Tensor(path), max_context=32)  # upstream's CLI passes a Tensor of the file
  assert model.max_context == 32
  toks = list(PROMPT)
  got = [t for _, t in zip(range(8), model.generate(toks, chunk_size=4))]
  assert got == ref_greedy(W, "llama", PROMPT, 8) and toks == PROMPT + got
  assert model.get_start_pos(toks + [9]) == len(toks) - 1  # the last token generated is not in the caches until it is fed back
  more = toks + [9, 30]
  assert [t for _, t in zip(range(3), model.generate(list(more), chunk_size=4))] == ref_greedy(W, "llama", more, 3)

def test_quantized_half_weights(tmp_path):
  """Q8_0 block weights and F16 norms and embedding, loaded as upstream does by default (float16 weights and KV cache)"""
  W = tiny_weights("llama", seed=1)
  held = write_tiny_gguf(path := tmp_path / "m.gguf", "llama", W, quantize=True)
  model, _ = Transformer.from_gguf(path, realize=True)
  assert model.blk[0].attn_q.weight.dtype.name == "half"
  np.testing.assert_allclose(model_logits(model, PROMPT), ref_logits(held, "llama", PROMPT), atol=0.05, rtol=0.02)
  assert [t for _, t in zip(range(4), model.generate(list(PROMPT)))] == ref_greedy(held, "llama", PROMPT, 4)

def test_sampling(tmp_path):
  """temperature > 0 samples softmax(logits / temperature): 500 draws of the token after [3] (rollout TinyJit replays, each with new
  noise) against numpy's probabilities; generate's sampled tokens are token ids"""
  W = tiny_weights("llama")
  write_tiny_gguf(path := tmp_path / "m.gguf", "llama", W)
  model, _ = Transformer.from_gguf(path, max_context=16)
  Tensor.manual_seed(0)
  got = list(model.generate([3, 17], temperature=1.0))
  assert len(got) == 14 and all(isinstance(t, int) and 0 <= t < VOCAB for t in got)
  tok, temperature = Tensor([[3]], dtype="int32"), Tensor([2.0])
  freq = np.bincount([model(tok, 0, temperature).item() for _ in range(500)], minlength=VOCAB) / 500
  logits = ref_logits(W, "llama", [3])[-1] / 2.0
  p = np.exp(logits - logits.max())
  np.testing.assert_allclose(freq, p / p.sum(), atol=0.05)  # the largest probability is 0.086; a frequency's std is at most 0.013

@pytest.mark.parametrize("arch, extra, needs", [
  ("llama", {"expert_count": 8, "expert_used_count": 2}, "mixture-of-experts"),  # Mixtral
  ("deepseek2", {"attention.kv_lora_rank": 512}, "multi-head latent attention"),
  ("qwen35", {"ssm.conv_kernel": 4}, "state-space"),
  ("gpt2", {}, "blocks this dense transformer does not have")])
def test_unsupported_architecture(tmp_path, arch, extra, needs):
  (path := tmp_path / "m.gguf").write_bytes(gguf_file(tiny_metadata(arch, **extra), {}))
  with pytest.raises(NotImplementedError, match=rf"architecture '{arch}' needs {needs}.*dense architectures llama, qwen2, qwen3"):
    Transformer.from_gguf(path)

def test_bad_file_names_what_is_wrong(tmp_path):
  kv = tiny_metadata("llama")
  del kv["llama.block_count"]
  (path := tmp_path / "m.gguf").write_bytes(gguf_file(kv, {}))
  with pytest.raises(ValueError, match="the llama GGUF's metadata lacks 'llama.block_count'"): Transformer.from_gguf(path)
  W = tiny_weights("llama")
  del W["blk.1.ffn_down.weight"]
  write_tiny_gguf(path, "llama", W)
  with pytest.raises(ValueError, match=r"the llama GGUF lacks tensors \['blk.1.ffn_down.weight'\]"): Transformer.from_gguf(path)
