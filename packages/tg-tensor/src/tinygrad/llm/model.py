"""A dense decoder-only transformer read from a GGUF file (tinygrad 0.14's tinygrad.llm.model, the model of `python -m tinygrad.llm`):
llama (and the Mistral models llama.cpp writes as llama), qwen2 and qwen3. Each block keeps a KV cache of max_context positions; a call
runs a chunk of tokens from start_pos and returns the next token. generate() feeds the prompt in chunks, then one token at a time, under
two TinyJits whose start_pos and chunk length are Variables, so every step replays the same kernels."""
from __future__ import annotations
import functools, itertools, pathlib
from dataclasses import dataclass
from tinygrad import Tensor, TinyJit, UOp, getenv, nn
from tinygrad.llm.gguf import gguf_load
from tinygrad.uop.ops import resolve

# GGUF architecture -> whether its q and k weights hold each RoPE pair as neighbours (llama.cpp's "norm" rope: its llama converter
# interleaves the halves Hugging Face stores), which from_gguf turns back into halves for apply_rope; qwen2 and qwen3 ("neox") are halves
DENSE_ARCHITECTURES = {"llama": True, "qwen2": False, "qwen3": False}

@functools.cache  # every block of a model shares one table
def precompute_freqs_cis(dim:int, end:int, theta:float=10000.0, device:str|None=None) -> Tensor:
  """(end, dim): the cos of each position's dim//2 RoPE angles, then their sin; position p turns pair i by p * theta**(-2i/dim)"""
  angles = Tensor.arange(end).float().unsqueeze(1) * (theta ** -(Tensor.arange(0, dim, 2)[:dim // 2].float() / dim)).unsqueeze(0)
  return angles.cos().cat(angles.sin(), dim=-1).clone(device).realize()

def apply_rope(x:Tensor, freqs_cis:Tensor) -> Tensor:
  """x (B, H, T, D) rotated by freqs_cis (T, D): element i of the first half and element i of the second half form pair i"""
  if x.shape[-1] % 2: raise ValueError(f"apply_rope needs an even last axis (pairs of halves), x has shape {x.shape}")
  cos, sin = freqs_cis.reshape(1, 1, *freqs_cis.shape).chunk(2, dim=-1)
  a, b = x.chunk(2, dim=-1)
  return (a * cos - b * sin).cat(a * sin + b * cos, dim=-1)

@dataclass(frozen=True)
class TransformerConfig:
  num_blocks: int
  dim: int
  hidden_dim: int
  n_heads: int
  n_kv_heads: int
  norm_eps: float
  vocab_size: int
  head_dim: int
  rope_theta: float
  rope_dim: int
  v_head_dim: int
  max_context: int = 0
  qk_norm: int = 0  # the size of the q/k RMSNorm applied to each head (qwen3), 0 for none
  qkv_bias: bool = False  # qwen2's q, k and v projections have biases

class TransformerBlock:
  """pre-norm attention (grouped-query, RoPE, KV cache) then a SwiGLU feed-forward, each added to the residual; attribute names are the
  GGUF tensor names (blk.N.attn_q.weight -> blk[N].attn_q.weight)"""
  def __init__(self, config:TransformerConfig):
    c = self.config = config
    if c.v_head_dim != c.head_dim: raise NotImplementedError(f"value heads of {c.v_head_dim} with key heads of {c.head_dim} (MLA) are not supported")
    if c.qk_norm not in (0, c.head_dim): raise NotImplementedError(f"a q/k norm of size {c.qk_norm} is not per head (head_dim {c.head_dim})")
    if c.n_heads % c.n_kv_heads: raise ValueError(f"{c.n_heads} query heads do not share {c.n_kv_heads} kv heads evenly")
    self.attn_norm, self.ffn_norm = nn.RMSNorm(c.dim, c.norm_eps), nn.RMSNorm(c.dim, c.norm_eps)
    self.attn_q = nn.Linear(c.dim, c.n_heads * c.head_dim, bias=c.qkv_bias)
    self.attn_k = nn.Linear(c.dim, c.n_kv_heads * c.head_dim, bias=c.qkv_bias)
    self.attn_v = nn.Linear(c.dim, c.n_kv_heads * c.head_dim, bias=c.qkv_bias)
    self.attn_output = nn.Linear(c.n_heads * c.head_dim, c.dim, bias=False)
    if c.qk_norm: self.attn_q_norm, self.attn_k_norm = nn.RMSNorm(c.head_dim, c.norm_eps), nn.RMSNorm(c.head_dim, c.norm_eps)
    self.ffn_gate, self.ffn_up = nn.Linear(c.dim, c.hidden_dim, bias=False), nn.Linear(c.dim, c.hidden_dim, bias=False)
    self.ffn_down = nn.Linear(c.hidden_dim, c.dim, bias=False)

  def _init_state(self, x:Tensor):
    # the batch size and device are the first input's; the cache is one realized buffer that every later call assigns into
    if hasattr(self, "cache_kv"): return
    c = self.config
    self.cache_kv = Tensor.zeros(2, x.shape[0], c.n_kv_heads, c.max_context, c.head_dim, dtype=self.attn_k.weight.dtype, device=x.device)
    self.cache_kv = self.cache_kv.contiguous().realize()
    self.freqs_cis = precompute_freqs_cis(c.rope_dim, c.max_context, c.rope_theta, device=x.device)

  def _rope(self, x:Tensor, freqs:Tensor) -> Tensor:
    rd = self.config.rope_dim  # partial rotary: only the first rope_dim of each head turn
    return apply_rope(x, freqs) if rd == x.shape[-1] else apply_rope(x[..., :rd], freqs).cat(x[..., rd:], dim=-1)

  def _attention(self, x:Tensor, start_pos:int|UOp) -> Tensor:
    c, (B, T, _) = self.config, x.shape
    q = self.attn_q(x).reshape(B, T, c.n_heads, c.head_dim).transpose(1, 2)
    k = self.attn_k(x).reshape(B, T, c.n_kv_heads, c.head_dim).transpose(1, 2)
    v = self.attn_v(x).reshape(B, T, c.n_kv_heads, c.head_dim).transpose(1, 2)
    if c.qk_norm: q, k = self.attn_q_norm(q), self.attn_k_norm(k)
    freqs = self.freqs_cis[start_pos:start_pos+T]
    q, k = self._rope(q, freqs), self._rope(k, freqs)
    self.cache_kv[:, :, :, start_pos:start_pos+T].assign(k.stack(v).cast(self.cache_kv.dtype))
    k, v = self.cache_kv[0, :, :, :start_pos+T], self.cache_kv[1, :, :, :start_pos+T]
    # query t sits at position start_pos+t and sees the cached keys up to it; a single query sees them all
    mask = Tensor.full((1, 1, T, start_pos+T), float("-inf")).triu(start_pos+1) if resolve(T != 1) else None
    out = q.scaled_dot_product_attention(k, v, attn_mask=mask, enable_gqa=True)
    return self.attn_output(out.transpose(1, 2).reshape(B, T, c.n_heads * c.head_dim))

  def __call__(self, x:Tensor, start_pos:int|UOp) -> Tensor:
    self._init_state(x)
    h = x + self._attention(self.attn_norm(x), start_pos)
    f = self.ffn_norm(h)
    return (h + self.ffn_down(self.ffn_gate(f).silu() * self.ffn_up(f))).contiguous()

class Transformer:
  def __init__(self, config:TransformerConfig):
    self.config, self.max_context = config, config.max_context
    self.blk = [TransformerBlock(config) for _ in range(config.num_blocks)]
    self.token_embd = nn.Embedding(config.vocab_size, config.dim)
    self.output_norm = nn.RMSNorm(config.dim, config.norm_eps)
    self.output = nn.Linear(config.dim, config.vocab_size, bias=False)
    self._cached_tokens: list[int] = []  # the tokens whose keys and values the caches hold, from position 0
    # prefill (a chunk of Variable length) and rollout (one token) are different graphs: one TinyJit each
    self.prefill_jit, self.rollout_jit = TinyJit(self.forward), TinyJit(self.forward)

  def forward(self, tokens:Tensor, start_pos:int|UOp, temperature:Tensor) -> Tensor:
    """tokens (B, T) at positions start_pos.. -> (B, 1) next token ids: the argmax of the last logits at temperature 0, else a sample
    of softmax(logits / temperature) drawn by the Gumbel-max trick, argmax(logits + temperature * gumbel noise)"""
    x = self.token_embd(tokens).float()
    for block in self.blk: x = block(x, start_pos)
    logits = self.output(self.output_norm(x[:, -1:]))[:, -1, :]  # only the last position predicts
    gumbel = -(-Tensor.rand_like(logits).maximum(1e-12).log()).log()  # clamped: log(0) would make 0 * inf at temperature 0
    return (logits + temperature.reshape(-1, 1) * gumbel).argmax(-1, keepdim=True)

  def __call__(self, tokens:Tensor, start_pos:int|UOp, temperature:Tensor) -> Tensor:
    # a python int would be baked into the captured kernels: bind it, so a replay at another position is right
    if isinstance(start_pos, int): start_pos = UOp.variable("start_pos", 0, self.max_context-1).bind(start_pos)
    return (self.prefill_jit if resolve(tokens.shape[1] != 1) else self.rollout_jit)(tokens.contiguous(), start_pos, temperature)

  @staticmethod
  def from_gguf(gguf:Tensor|str|pathlib.Path, max_context:int|None=None, realize=bool(getenv("REALIZE", 0))) -> tuple[Transformer, dict]:
    """(the model, the GGUF's metadata). Weights are cast to float16 (HALF=0 keeps the file's dtypes) and stay lazy views of the file,
    dequantized or cast on every use, unless realize; max_context caps the file's context length (the size of the KV caches)"""
    kv, weights = gguf_load(gguf)
    if "general.architecture" not in kv: raise ValueError("the GGUF metadata has no general.architecture: is this a model file?")
    arch = kv["general.architecture"]
    _check_dense(arch, kv)
    if getenv("HALF", 1): weights = {k: w.cast("float16") for k, w in weights.items()}
    # tied embeddings (Llama 3.2, small Qwens): the output projection is the embedding
    if "output.weight" not in weights and "token_embd.weight" in weights: weights["output.weight"] = weights["token_embd.weight"]
    try:
      n_heads, n_kv_heads = kv[f"{arch}.attention.head_count"], kv[f"{arch}.attention.head_count_kv"]
      head_dim = kv.get(f"{arch}.attention.key_length", kv[f"{arch}.embedding_length"] // n_heads)
      rope_dim = kv.get(f"{arch}.rope.dimension_count", head_dim)
      config = TransformerConfig(
        num_blocks=kv[f"{arch}.block_count"], dim=kv[f"{arch}.embedding_length"], hidden_dim=kv[f"{arch}.feed_forward_length"],
        n_heads=n_heads, n_kv_heads=n_kv_heads, norm_eps=kv[f"{arch}.attention.layer_norm_rms_epsilon"], vocab_size=len(kv["tokenizer.ggml.tokens"]),
        head_dim=head_dim, rope_theta=kv.get(f"{arch}.rope.freq_base", 10000.0), rope_dim=rope_dim,
        v_head_dim=kv.get(f"{arch}.attention.value_length", head_dim),
        max_context=min(kv[f"{arch}.context_length"], max_context or kv[f"{arch}.context_length"]),
        qk_norm=weights["blk.0.attn_q_norm.weight"].shape[0] if "blk.0.attn_q_norm.weight" in weights else 0,
        qkv_bias="blk.0.attn_q.bias" in weights)
    except KeyError as e: raise ValueError(f"the {arch} GGUF's metadata lacks {e}") from None
    if DENSE_ARCHITECTURES[arch]:
      for name, w in weights.items():
        if name.endswith(("attn_q.weight", "attn_k.weight")): weights[name] = _halves_from_pairs(w, head_dim, rope_dim)
    model = Transformer(config)
    params = nn.state.get_state_dict(model)
    if missing := [k for k in params if k not in weights]: raise ValueError(f"the {arch} GGUF lacks tensors {missing}")
    if wrong := [f"{k}: model {p.shape}, file {weights[k].shape}" for k, p in params.items() if p.shape != weights[k].shape]:
      raise ValueError(f"the {arch} GGUF's tensors do not fit its metadata: {'; '.join(wrong)}")
    for k, p in params.items(): p.replace(weights[k].contiguous() if realize else weights[k])  # the file's dtype, not Linear's float32
    if realize: Tensor.realize(*params.values())
    return model, kv

  def get_start_pos(self, tokens:list[int]) -> int:
    """how many leading tokens the caches already hold; the last token is always rerun, its logits are the ones wanted"""
    return sum(1 for _ in itertools.takewhile(lambda ab: ab[0] == ab[1], zip(tokens[:-1], self._cached_tokens)))

  def generate(self, tokens:list[int], chunk_size:int=32, temperature:float=0.0):
    """yield the next tokens after the prompt, appending each to tokens, until max_context. The prompt runs in chunks of up to
    chunk_size from where the caches stop matching it (get_start_pos), then each sampled token is fed back"""
    if not tokens: raise ValueError("generate needs at least one prompt token")
    if len(tokens) > self.max_context: raise ValueError(f"the prompt has {len(tokens)} tokens, more than max_context {self.max_context}")
    v_start_pos, v_toks = UOp.variable("start_pos", 0, self.max_context-1), UOp.variable("toks", 1, chunk_size)
    temp = Tensor([float(temperature)])
    # the whole prompt in one buffer of max_context: each chunk is a Variable slice of it, the same shape to the JIT
    prompt = Tensor(tokens + [0] * (self.max_context - len(tokens)), dtype="int32").reshape(1, self.max_context)
    start_pos, prompt_len, out = self.get_start_pos(tokens), len(tokens), None
    while len(tokens) < self.max_context:
      if start_pos < prompt_len:
        n = min(chunk_size, prompt_len - start_pos)
        sp, nt = v_start_pos.bind(start_pos), v_toks.bind(n)
        out = self(prompt[:, sp:sp+nt], sp, temp).realize()
      else: n, out = 1, self(out, v_start_pos.bind(start_pos), temp).realize()
      start_pos += n
      if start_pos < prompt_len: continue
      tokens.append(int(out.item()))
      self._cached_tokens = tokens[:-1]  # the new token's keys and values are written when it is fed back
      yield tokens[-1]

  def warmup(self):
    """capture both TinyJits (prefill and rollout) before timing anything: each captures on its second call"""
    for _ in range(2): list(zip(range(2), self.generate([0])))

def _halves_from_pairs(w:Tensor, head_dim:int, rope_dim:int) -> Tensor:
  """a q or k weight (heads*head_dim, dim) whose rows of each head's rotated part run x0 y0 x1 y1 ..., reordered to x0 x1 .. y0 y1 .."""
  heads = w.reshape(-1, head_dim, w.shape[-1])
  rot = heads[:, :rope_dim].reshape(heads.shape[0], rope_dim // 2, 2, -1).transpose(1, 2).reshape(heads.shape[0], rope_dim, -1)
  return (rot if rope_dim == head_dim else rot.cat(heads[:, rope_dim:], dim=1)).reshape(w.shape)

def _check_dense(arch:str, kv:dict):
  # which block a non-dense model would need, by the metadata that describes it; Mixtral is a "llama" with experts
  needs = ("mixture-of-experts feed-forward blocks" if kv.get(f"{arch}.expert_count", 0) else
           "multi-head latent attention blocks" if kv.get(f"{arch}.attention.kv_lora_rank", 0) else
           "state-space (gated delta net) blocks" if any(k.startswith((f"{arch}.ssm.", f"{arch}.kda.")) for k in kv) else
           None if arch in DENSE_ARCHITECTURES else "blocks this dense transformer does not have")
  if needs: raise NotImplementedError(f"GGUF architecture {arch!r} needs {needs}, which tinygrad.llm.model does not implement; "
                                      f"it runs the dense architectures {', '.join(DENSE_ARCHITECTURES)}")
