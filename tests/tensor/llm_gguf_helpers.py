"""Tiny random dense-transformer GGUF files for the tinygrad.llm tests (test_llm_model, test_llm_cli)."""
import pathlib, sys
import numpy as np
sys.path.insert(0, str(pathlib.Path(__file__).parent / "state"))  # importlib mode: the GGUF writer of the loader tests
from gguf_writer import gguf_file, q8_0

DIM, LAYERS, HEADS, KV_HEADS, VOCAB, CTX, HIDDEN, EPS, THETA = 32, 2, 4, 2, 50, 64, 64, 1e-5, 10000.0
HD = DIM // HEADS

def tiny_weights(arch:str, seed:int=0, vocab:int=VOCAB) -> dict:
  rng = np.random.default_rng(seed)
  def w(*shape, scale=0.3): return (rng.standard_normal(shape) * scale).astype(np.float32)
  W = {"token_embd.weight": w(vocab, DIM, scale=1.0), "output_norm.weight": 1 + w(DIM, scale=0.1)}
  if arch == "llama": W["output.weight"] = w(vocab, DIM)  # qwen3 here ties the output to the embedding
  for i in range(LAYERS):
    b = f"blk.{i}."
    W |= {b+"attn_norm.weight": 1 + w(DIM, scale=0.1), b+"ffn_norm.weight": 1 + w(DIM, scale=0.1), b+"attn_q.weight": w(HEADS*HD, DIM),
          b+"attn_k.weight": w(KV_HEADS*HD, DIM), b+"attn_v.weight": w(KV_HEADS*HD, DIM), b+"attn_output.weight": w(DIM, HEADS*HD),
          b+"ffn_gate.weight": w(HIDDEN, DIM), b+"ffn_up.weight": w(HIDDEN, DIM), b+"ffn_down.weight": w(DIM, HIDDEN)}
    if arch == "qwen2": W |= {b+"attn_q.bias": w(HEADS*HD), b+"attn_k.bias": w(KV_HEADS*HD), b+"attn_v.bias": w(KV_HEADS*HD)}
    if arch == "qwen3": W |= {b+"attn_q_norm.weight": 1 + w(HD, scale=0.1), b+"attn_k_norm.weight": 1 + w(HD, scale=0.1)}
  return W

def tiny_metadata(arch:str, tokens:list[str]|None=None, **extra) -> dict:
  """the model's metadata (tokens: the vocabulary, t0.. by default); extra keys are under the architecture's prefix"""
  return {"general.architecture": arch, f"{arch}.block_count": LAYERS, f"{arch}.embedding_length": DIM, f"{arch}.feed_forward_length": HIDDEN,
          f"{arch}.attention.head_count": HEADS, f"{arch}.attention.head_count_kv": KV_HEADS, f"{arch}.context_length": CTX,
          f"{arch}.attention.layer_norm_rms_epsilon": EPS, f"{arch}.rope.freq_base": THETA,
          "tokenizer.ggml.tokens": tokens or [f"t{i}" for i in range(VOCAB)], **{f"{arch}.{k}": v for k, v in extra.items()}}

def _q8_0(a:np.ndarray) -> tuple[bytes, np.ndarray]:
  """a quantized to Q8_0 (blocks of 32 along rows: an fp16 scale and 32 int8) and the values it dequantizes to"""
  blocks = a.reshape(-1, 32)
  scales = (np.abs(blocks).max(-1) / 127).astype(np.float16)
  quants = np.round(blocks / scales.astype(np.float32)[:, None]).astype(np.int8)
  return q8_0(scales.tolist(), quants.tolist()), (quants * scales.astype(np.float32)[:, None]).reshape(a.shape)

def write_tiny_gguf(path:pathlib.Path, arch:str, W:dict, quantize:bool=False, kv:dict|None=None) -> dict:
  """write W to path (F32, or Q8_0 for the 2-D block weights and F16 for the rest) with kv as metadata (tiny_metadata(arch) by default)
  and return the values the file holds"""
  tensors, held = {}, {}
  for k, v in W.items():
    dims = tuple(reversed(v.shape))
    if quantize and k.startswith("blk.") and v.ndim == 2: (raw, held[k]), ttype = _q8_0(v), 8
    elif quantize: raw, held[k], ttype = v.astype(np.float16).tobytes(), v.astype(np.float16).astype(np.float32), 1
    else: raw, held[k], ttype = v.tobytes(), v, 0
    tensors[k] = (ttype, dims, raw)
  path.write_bytes(gguf_file(kv or tiny_metadata(arch), tensors))
  return held
