"""api_diff cases for transformer inference written the way tinygrad's example LLM programs are: token embedding, LayerNorm / RMSNorm,
rotary embeddings as (cos, sin) pairs, scaled_dot_product_attention with a causal mask, a KV cache in a realized Tensor written with
assign() at a symbolic start_pos, the decode step under TinyJit with a bound Variable, greedy and temperature sampling, and the model
file helpers. The weights are seeded numpy arrays, so tg and upstream run the same model; `numpy_gpt` is the reference both meet.

register(case) adds the cases to api_diff's table; `python bench/api_diff_llm.py [--jit] [--tokens N]` times the decode loop."""
import math, os, sys, tempfile, time
import numpy as np

DIM, HEADS, LAYERS, VOCAB, MAX_CTX, HIDDEN = 32, 4, 2, 64, 48, 64

def weights(seed:int=1234, style:str="gpt2") -> dict:
  """the tiny model's weights as float32 numpy arrays, named the way the model classes below hold them"""
  rng = np.random.default_rng(seed)
  def w(*shape, scale=None): return (rng.standard_normal(shape) * (scale or 1 / math.sqrt(shape[-1]))).astype(np.float32)
  out = {"wte.weight": w(VOCAB, DIM, scale=0.5), "ln_f.weight": 1 + w(DIM, scale=0.1), "lm_head.weight": w(VOCAB, DIM)}
  if style == "gpt2": out.update({"wpe.weight": w(MAX_CTX, DIM, scale=0.2), "ln_f.bias": w(DIM, scale=0.1)})
  for i in range(LAYERS):
    p = f"h.{i}."
    out.update({p + "attn.wqkv.weight": w(3 * DIM, DIM), p + "attn.wo.weight": w(DIM, DIM), p + "ln_1.weight": 1 + w(DIM, scale=0.1),
                p + "ln_2.weight": 1 + w(DIM, scale=0.1), p + "mlp.up.weight": w(HIDDEN, DIM), p + "mlp.down.weight": w(DIM, HIDDEN)})
    if style == "gpt2":
      out.update({p + "attn.wqkv.bias": w(3 * DIM, scale=0.1), p + "attn.wo.bias": w(DIM, scale=0.1), p + "ln_1.bias": w(DIM, scale=0.1),
                  p + "ln_2.bias": w(DIM, scale=0.1), p + "mlp.up.bias": w(HIDDEN, scale=0.1), p + "mlp.down.bias": w(DIM, scale=0.1)})
    else: out[p + "mlp.gate.weight"] = w(HIDDEN, DIM)
  return out

def build(style:str="gpt2", seed:int=1234):
  """a tinygrad program's model: classes holding nn layers, weights loaded with load_state_dict"""
  from tinygrad import Tensor, TinyJit, Variable, dtypes, nn
  from tinygrad.nn.state import load_state_dict

  def precompute_freqs(dim:int, end:int, theta:float=10000.0) -> Tensor:
    freqs = 1.0 / (theta ** (Tensor.arange(0, dim, 2)[:dim // 2] / dim))
    freqs = Tensor.arange(end).unsqueeze(1) * freqs.unsqueeze(0)
    return Tensor.stack(freqs.cos(), freqs.sin(), dim=-1).reshape(1, end, 1, dim // 2, 2)

  def rotate(x:Tensor, freqs:Tensor) -> Tensor:
    """x (..., head_dim) taken as head_dim/2 complex numbers (re, im) times freqs' (cos, sin)"""
    x = x.reshape(*x.shape[:-1], -1, 2)
    a, b, c, d = x[..., 0:1], x[..., 1:2], freqs[..., 0:1], freqs[..., 1:2]
    return (a * c - b * d).cat(a * d + b * c, dim=-1).flatten(3)

  class Attention:
    def __init__(self):
      self.wqkv, self.wo = nn.Linear(DIM, 3 * DIM, bias=style == "gpt2"), nn.Linear(DIM, DIM, bias=style == "gpt2")
    def __call__(self, x:Tensor, start_pos, freqs, mask):
      bsz, seqlen, _ = x.shape
      xq, xk, xv = [t.reshape(bsz, seqlen, HEADS, DIM // HEADS) for t in self.wqkv(x).chunk(3, dim=2)]
      if freqs is not None: xq, xk = rotate(xq, freqs), rotate(xk, freqs)
      if not hasattr(self, "cache_kv"):
        self.cache_kv = Tensor.zeros(2, bsz, MAX_CTX, HEADS, DIM // HEADS, dtype=x.dtype).contiguous().realize()
      self.cache_kv.shrink((None, None, (start_pos, start_pos + seqlen), None, None)).assign(Tensor.stack(xk, xv)).realize()
      keys = self.cache_kv[0].shrink((None, (0, start_pos + seqlen), None, None))
      values = self.cache_kv[1].shrink((None, (0, start_pos + seqlen), None, None))
      xq, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
      return self.wo(xq.scaled_dot_product_attention(keys, values, mask).transpose(1, 2).reshape(bsz, seqlen, DIM))

  class FeedForward:
    def __init__(self):
      self.up, self.down = nn.Linear(DIM, HIDDEN, bias=style == "gpt2"), nn.Linear(HIDDEN, DIM, bias=style == "gpt2")
      if style != "gpt2": self.gate = nn.Linear(DIM, HIDDEN, bias=False)
    def __call__(self, x:Tensor) -> Tensor:
      return self.down(self.up(x).gelu()) if style == "gpt2" else self.down(self.gate(x).silu() * self.up(x))

  def norm(): return nn.LayerNorm(DIM) if style == "gpt2" else nn.RMSNorm(DIM, eps=1e-5)

  class Block:
    def __init__(self): self.attn, self.mlp, self.ln_1, self.ln_2 = Attention(), FeedForward(), norm(), norm()
    def __call__(self, x, start_pos, freqs, mask):
      h = x + self.attn(self.ln_1(x), start_pos, freqs, mask)
      return (h + self.mlp(self.ln_2(h))).contiguous()

  class Transformer:
    def __init__(self):
      self.wte = nn.Embedding(VOCAB, DIM)
      if style == "gpt2": self.wpe, self.allpos = nn.Embedding(MAX_CTX, DIM), Tensor.arange(0, MAX_CTX).reshape(1, -1).realize()
      else: self.freqs = precompute_freqs(DIM // HEADS, MAX_CTX).contiguous()
      self.h, self.ln_f, self.lm_head = [Block() for _ in range(LAYERS)], norm(), nn.Linear(DIM, VOCAB, bias=False)
      self.forward_jit = TinyJit(self.forward)

    def forward(self, tokens:Tensor, start_pos, temperature:float):
      seqlen = tokens.shape[1]
      x = self.wte(tokens)
      if style == "gpt2":
        x, freqs = x + self.wpe(self.allpos.shrink((None, (start_pos, start_pos + seqlen)))), None
      else: freqs = self.freqs.shrink((None, (start_pos, start_pos + seqlen), None, None, None))
      mask = Tensor.full((1, 1, seqlen, start_pos + seqlen), float("-inf"), dtype=x.dtype).triu(start_pos + 1) if seqlen > 1 else None
      for blk in self.h: x = blk(x, start_pos, freqs, mask)
      logits = self.lm_head(self.ln_f(x))[:, -1, :]
      if temperature < 1e-6: return logits.argmax(-1).realize(), logits.realize()
      return (logits / temperature).softmax().multinomial().flatten().realize(), logits.realize()

    def __call__(self, tokens:Tensor, start_pos:int, temperature:float=0.0, jit:bool=False):
      # the decode step (one token, start_pos > 0) runs under the JIT with start_pos a bound Variable: one capture serves every position
      if jit and tokens.shape[1] == 1 and start_pos > 0:
        return self.forward_jit(tokens, Variable("start_pos", 1, MAX_CTX - 1).bind(start_pos), temperature)
      return self.forward(tokens, start_pos, temperature)

  model = Transformer()
  load_state_dict(model, {k: Tensor(v) for k, v in weights(seed, style).items()}, strict=False, verbose=False)  # allpos / freqs are computed, not loaded
  return model

def generate(model, prompt:list[int], n:int, temperature:float=0.0, jit:bool=False, seed:int|None=None):
  """greedy (temperature 0) or sampled generation; the tokens and the last step's logits"""
  from tinygrad import Tensor
  if seed is not None: Tensor.manual_seed(seed)
  toks, start_pos, logits = list(prompt), 0, None
  for _ in range(n):
    tok, logits = model(Tensor([toks[start_pos:]]), start_pos, temperature, jit)
    start_pos = len(toks)
    toks.append(int(tok.item()))
  return toks[len(prompt):], logits

# ---- the numpy reference
def _layernorm(x, w, b, eps=1e-5): return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * w + b
def _rmsnorm(x, w, eps=1e-5): return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w
def _gelu(x): return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))

def _rope(x, pos):
  """x (seq, heads, head_dim) at positions pos: pairs (x[2i], x[2i+1]) rotated by pos * theta**(-2i/head_dim)"""
  hd = x.shape[-1]
  ang = np.asarray(pos, np.float64)[:, None] * (1.0 / 10000.0 ** (np.arange(0, hd, 2) / hd))[None]
  c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
  re, im = x[..., 0::2], x[..., 1::2]
  return np.stack([re * c - im * s, re * s + im * c], -1).reshape(x.shape)

def numpy_gpt(tokens:list[int], style:str="gpt2", seed:int=1234) -> np.ndarray:
  """logits (len(tokens), VOCAB) of the whole sequence in float64, no cache: what every step of generate() must match"""
  W = {k: v.astype(np.float64) for k, v in weights(seed, style).items()}
  n, hd = len(tokens), DIM // HEADS
  x = W["wte.weight"][tokens] + (W["wpe.weight"][:n] if style == "gpt2" else 0)
  def norm(p, x): return _layernorm(x, W[p + ".weight"], W[p + ".bias"]) if style == "gpt2" else _rmsnorm(x, W[p + ".weight"])
  def lin(p, x): return x @ W[p + ".weight"].T + (W[p + ".bias"] if p + ".bias" in W else 0)
  causal = np.triu(np.full((n, n), -np.inf), 1)
  for i in range(LAYERS):
    p = f"h.{i}."
    q, k, v = np.split(lin(p + "attn.wqkv", norm(p + "ln_1", x)).reshape(n, 3 * HEADS, hd), 3, axis=1)
    if style != "gpt2": q, k = _rope(q, range(n)), _rope(k, range(n))
    s = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd) + causal
    a = np.exp(s - s.max(-1, keepdims=True)); a /= a.sum(-1, keepdims=True)
    h = x + lin(p + "attn.wo", np.einsum("hqk,khd->qhd", a, v).reshape(n, DIM))
    u = norm(p + "ln_2", h)
    m = _gelu(lin(p + "mlp.up", u)) if style == "gpt2" else (lambda g: g / (1 + np.exp(-g)))(lin(p + "mlp.gate", u)) * lin(p + "mlp.up", u)
    x = h + lin(p + "mlp.down", m)
  return lin("lm_head", norm("ln_f", x))

def numpy_greedy(prompt:list[int], n:int, style:str="gpt2") -> list[int]:
  toks = list(prompt)
  for _ in range(n): toks.append(int(numpy_gpt(toks, style)[-1].argmax()))
  return toks[len(prompt):]

TORCH_PY = os.environ.get("TORCH_PY", "/work/main/.venv/bin/python")  # an interpreter with torch, to write a real checkpoint

def write_torch_checkpoint(tmp:str):
  """tmp/real.pt written by torch.save (float16, a strided view, an int64 buffer, nested dicts); API_DIFF_TORCH_PT names it"""
  path = os.path.join(tmp, "real.pt")
  code = ("import torch, sys; w = torch.arange(12, dtype=torch.float32).reshape(3, 4); "
          "torch.save({'model': {'wte.weight': w.half(), 'lm_head.weight': w.t(), 'pos': torch.arange(5), 'tail': w[1:, 2:]}, 'step': 3}, sys.argv[1])")
  import subprocess
  if os.path.exists(TORCH_PY) and subprocess.run([TORCH_PY, "-c", code, path], capture_output=True).returncode == 0:
    os.environ["API_DIFF_TORCH_PT"] = path

# ---- the api_diff cases
PROMPT = [3, 14, 15, 9, 26]

def register(case):
  @case
  def llm_gpt2_greedy(T, nn, dt, rng):
    toks, logits = generate(build("gpt2"), PROMPT, 16)
    return [toks == numpy_greedy(PROMPT, 16, "gpt2"), T(np.array(toks, np.int32)), logits]
  @case
  def llm_gpt2_greedy_jit(T, nn, dt, rng):
    m = build("gpt2"); toks, logits = generate(m, PROMPT, 16, jit=True)
    return [toks == numpy_greedy(PROMPT, 16, "gpt2"), T(np.array(toks, np.int32)), logits, m.forward_jit.cnt if hasattr(m.forward_jit, "cnt") else None]
  @case
  def llm_llama_greedy_jit(T, nn, dt, rng):
    toks, logits = generate(build("llama"), PROMPT, 16, jit=True)
    return [toks == numpy_greedy(PROMPT, 16, "llama"), T(np.array(toks, np.int32)), logits]
  @case
  def llm_llama_logits_match_numpy(T, nn, dt, rng):
    """every decode step's logits against the numpy model run on the whole sequence"""
    m, toks, errs = build("llama"), list(PROMPT), []
    for i in range(8):
      tok, logits = m(T([toks[len(toks) - 1:] if i else toks]), len(toks) - 1 if i else 0, 0.0, jit=True)
      errs.append(float(np.abs(logits.numpy()[0] - numpy_gpt(toks, "llama")[-1]).max()) < 1e-3)
      toks.append(int(tok.item()))
    return errs
  @case
  def llm_sampled(T, nn, dt, rng):
    """temperature sampling with a seed: the same tokens jitted and not (both sides' own generator); counts stay in range"""
    a, _ = generate(build("llama"), PROMPT, 12, temperature=0.8, seed=42)
    b, _ = generate(build("llama"), PROMPT, 12, temperature=0.8, jit=True, seed=42)
    return [a == b, all(0 <= t < VOCAB for t in a), len(a)]

  register_more(case)
  @case
  def llm_sdpa_masks(T, nn, dt, rng):
    q, k, v = T(rng.standard_normal((2, 3, 4, 8)).astype(np.float32)), T(rng.standard_normal((2, 3, 6, 8)).astype(np.float32)), \
        T(rng.standard_normal((2, 3, 6, 8)).astype(np.float32))
    bmask = T(rng.integers(0, 2, (4, 6)).astype(bool)) | T.ones(4, 6, dtype=dt.bool).tril(2)
    fmask = T.full((1, 1, 4, 6), float("-inf")).triu(3)
    kg, vg = k[:, :1], v[:, :1]
    return [lambda: q.scaled_dot_product_attention(k, v), lambda: q.scaled_dot_product_attention(k, v, is_causal=True),
            lambda: q.scaled_dot_product_attention(k, v, attn_mask=bmask), lambda: q.scaled_dot_product_attention(k, v, fmask),
            lambda: q.scaled_dot_product_attention(kg, vg, enable_gqa=True), lambda: q[0].scaled_dot_product_attention(k[0], v[0], is_causal=True),
            lambda: q.scaled_dot_product_attention(k, v, attn_mask=bmask, is_causal=True), lambda: q.half().scaled_dot_product_attention(k.half(),
            v.half(), is_causal=True), lambda: q.scaled_dot_product_attention(k, v, dropout_p=0.5)]
  @case
  def llm_kv_cache_symbolic(T, nn, dt, rng):
    """a realized cache written at a bound Variable's position with shrink().assign(), read back up to start_pos+1"""
    from tinygrad import Variable
    cache = T.zeros(2, 1, 8, 2, 3).contiguous().realize()
    reads = []
    for pos in range(1, 5):
      sp = Variable("start_pos", 1, 7).bind(pos)
      cache.shrink((None, None, (sp, sp + 1), None, None)).assign(T.full((2, 1, 1, 2, 3), float(pos))).realize()
      reads.append(cache[0].shrink((None, (0, sp + 1), None, None)).sum())
    v = Variable("start_pos", 1, 7)
    return [cache, *reads, v.bind(3).unbind()[1], v.vmin, v.vmax, v.expr,
            lambda: cache[:, :, 2:4].assign(T.ones(2, 1, 2, 2, 3) * 9).realize().sum(), cache]
  @case
  def llm_jit_variable(T, nn, dt, rng):
    """one capture serving many positions: a jitted step with a bound Variable, each call's output against its own position"""
    from tinygrad import TinyJit, Variable
    buf = T(np.arange(16, dtype=np.float32)).contiguous().realize()
    @TinyJit
    def step(x:T, pos) -> T: return (buf.shrink(((0, pos + 1),)).sum() * x).realize()
    outs = [step(T([2.0]), Variable("p", 1, 15).bind(p)).numpy().tolist() for p in (1, 2, 5, 9, 15)]
    return [outs, step.cnt, lambda: step(T([2.0, 3.0]), Variable("p", 1, 15).bind(3))]
  @case
  def llm_sampling(T, nn, dt, rng):
    logits = T(rng.standard_normal((3, 10)).astype(np.float32) * 3)
    p = logits.softmax()
    T.manual_seed(7); s1 = p.multinomial(200, replacement=True)
    T.manual_seed(7); s2 = p.multinomial(200, replacement=True)
    counts = [np.bincount(s1.numpy()[i], minlength=10) for i in range(3)]
    return [lambda: (s1 == s2).all(), lambda: s1.shape, lambda: s1.dtype, lambda: bool(all(np.abs(c / 200 - p.numpy()[i]).max() < 0.12
            for i, c in enumerate(counts))), lambda: p[0].multinomial().shape, lambda: p.multinomial(3).shape, lambda: p[0].multinomial(4).shape,
            lambda: logits.argmax(-1), lambda: logits.topk(3)[1], lambda: logits.topk(3, largest=False)[0], lambda: (logits / 0.7).softmax(-1),
            lambda: logits.softmax(-1, dtype=dt.half), lambda: logits.log_softmax(), lambda: T([[0.0, 1.0, 0.0]]).multinomial(5, replacement=True),
            lambda: T([1.0, 1.0]).multinomial(3), lambda: T.ones(2, 2, 2).multinomial(), lambda: T([1.0, 2.0]).multinomial(0)]
  @case
  def llm_rng_stream(T, nn, dt, rng):
    """the counter-based generator's values for a seed (programs re-seed and expect the same tokens across tinygrad builds)"""
    T.manual_seed(42); a = T.rand(5)
    T.manual_seed(42); b = T.randn(2, 3)
    T.manual_seed(3); c = T([[0.1, 0.2, 0.7]]).multinomial(6, replacement=True)
    return [a, b, c]
  @case
  def llm_creation_helpers(T, nn, dt, rng):
    return [lambda: T.arange(5), lambda: T.arange(2, 11, 3), lambda: T.arange(0, 1, 0.25), lambda: T.arange(5, 0, -2), lambda: T.arange(0, 8, 2)[:4 // 2],
            lambda: T.full((2, 3), float("-inf")).triu(1), lambda: T.full((2, 3), 2).dtype, lambda: T.full((3, 3), 1.5).tril(-1),
            lambda: T.ones(3, 5).triu(2), lambda: T.ones(4, 4, dtype=dt.bool).tril(), lambda: T.ones(2, 3, 4).triu(-1),
            lambda: T.stack(T([1, 2]), T([3, 4]), dim=-1), lambda: T([1, 2]).stack(T([3, 4]), T([5, 6])), lambda: T([[1.0]]).cat(T([[2.0]]), dim=1),
            lambda: T.cat(T.zeros(2, 0), T.ones(2, 1), dim=1), lambda: T.arange(6).reshape(2, 3).chunk(3, dim=1)[2], lambda: T.arange(12).reshape(3, 4).split([1, 3], dim=1)[1],
            lambda: T.full_like(T([1, 2]), 7.5), lambda: T.arange(3).unsqueeze(1) * T.arange(4).unsqueeze(0),
            lambda: (1.0 / (10000.0 ** (T.arange(0, 8, 2)[:4] / 8))), lambda: T.arange(4).float().cos().stack(T.arange(4).float().sin(), dim=-1)]
  @case
  def llm_state_files(T, nn, dt, rng):
    """the model's state dict: names, safetensors round trip, a torch checkpoint read by torch_load, a gguf file by gguf_load"""
    from tinygrad.nn.state import safe_save, safe_load, get_state_dict, load_state_dict, torch_load, get_parameters
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "tensor", "state"))
    from torch_writer import FakeTensor, FakeStorage, zip_checkpoint
    from gguf_writer import gguf_file, q8_0
    m = build("llama"); sd = get_state_dict(m)
    with tempfile.TemporaryDirectory() as tmp:
      fn = os.path.join(tmp, "m.safetensors"); safe_save(sd, fn)
      loaded = safe_load(fn)
      m2 = build("llama", seed=99); load_state_dict(m2, loaded, strict=False, verbose=False)
      same = all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(get_parameters(m), get_parameters(m2)))
      pt = os.path.join(tmp, "m.pt")
      with open(pt, "wb") as f:
        st = FakeStorage("FloatStorage", "f", [float(i) for i in range(12)])
        f.write(zip_checkpoint({"wte.weight": FakeTensor(st, 0, (3, 4), (4, 1)), "lm_head.weight": FakeTensor(st, 2, (2, 3), (1, 2)),
                                "step": 7}))
      tl = torch_load(pt)
      gg = os.path.join(tmp, "m.gguf")
      with open(gg, "wb") as f:
        f.write(gguf_file({"general.architecture": "llama", "llama.context_length": 48, "tokenizer.ggml.tokens": ["a", "b"]},
                          {"tok_embd.weight": (0, (4, 2), np.arange(8, dtype=np.float32).tobytes()),
                           "w16": (1, (3,), np.array([1.5, -2, 0.25], np.float16).tobytes()),
                           "q8": (8, (32,), q8_0([0.5], [list(range(-16, 16))]))}))
      try: from tinygrad.llm.gguf import gguf_load
      except ImportError as e: gguf = [lambda e=e: (_ for _ in ()).throw(e)]
      else:
        kv, gt = gguf_load(T(__import__("pathlib").Path(gg)))
        gguf = [sorted(kv.items()), sorted(gt), gt["tok_embd.weight"].to("CPU"), gt["w16"].to("CPU"), gt["q8"].to("CPU")]
      real = []
      if pt := os.environ.get("API_DIFF_TORCH_PT"):
        rd = torch_load(pt)
        real = [sorted(rd), rd["step"], *(rd["model"][k].to("CPU") for k in ("wte.weight", "lm_head.weight", "pos", "tail"))]
      return [list(sd)[:6], len(sd), sorted(loaded)[:4], same, sorted(tl), tl["wte.weight"].to("CPU"), tl["lm_head.weight"].to("CPU"), *gguf, real]
  @case
  def llm_runtime_helpers(T, nn, dt, rng):
    from tinygrad import Context, Device, GlobalCounters
    GlobalCounters.reset()
    with Context(BEAM=0, DEBUG=0): toks, _ = generate(build("gpt2"), PROMPT[:2], 3, jit=True)
    return [toks == numpy_greedy(PROMPT[:2], 3), isinstance(Device.DEFAULT, str), GlobalCounters.kernel_count > 0, GlobalCounters.global_ops > 0,
            GlobalCounters.global_mem > 0, type(GlobalCounters.time_sum_s).__name__, type(GlobalCounters.mem_used).__name__,
            lambda: (GlobalCounters.reset(), GlobalCounters.kernel_count, GlobalCounters.global_ops)[1:]]

def register_more(case):
  @case
  def llm_symbolic_idioms(T, nn, dt, rng):
    """other spellings of the cache write and the positions at a bound start_pos"""
    from tinygrad import Variable, TinyJit
    cache = T.zeros(1, 6, 2).contiguous().realize()
    sp = Variable("start_pos", 1, 5).bind(2)
    def setitem(): cache[:, sp:sp + 1, :] = T([[[7.0, 8.0]]]); return cache.realize()
    @TinyJit
    def positions(x:T, p) -> T: return ((T.arange(x.shape[1]) + p).reshape(1, -1).float() * x).realize()
    outs = [positions(T([[1.0, 1.0]]), Variable("p", 0, 9).bind(k)).numpy().tolist() for k in (0, 3, 6, 9)]
    return [lambda: setitem(), lambda: outs, lambda: T.arange(3).shrink(((0, Variable("n", 1, 3).bind(2)),)).sum(),
            lambda: (T.ones(4) * Variable("s", 1, 9).bind(4)).sum(), lambda: T.full((2,), Variable("s", 1, 9).bind(5)).sum()]
  @case
  def llm_symbolic_reads(T, nn, dt, rng):
    """reads at a bound position: an int Variable as an index, a window start_pos:start_pos+2, arange from it, reductions over a prefix"""
    from tinygrad import Variable
    x = T(np.arange(24, dtype=np.float32).reshape(2, 12)).realize(); sp = Variable("start_pos", 1, 10).bind(3)
    return [lambda: x[:, sp], lambda: x[:, sp:sp + 2], lambda: T.arange(sp, sp + 2), lambda: T.zeros(2, sp + 1).sum(),
            lambda: x.shrink((None, (0, sp))).pad((None, (0, 12 - sp))).sum(), lambda: x.shrink((None, (0, sp + 1))).softmax().sum(-1),
            lambda: x.shrink((None, (0, sp + 1))).max(-1), lambda: x.shrink((None, (0, sp))) @ T.ones(12, 3).shrink(((0, sp), None)),
            lambda: x.shrink((None, (0, sp))).cat(x[:, :2], dim=1).sum(1), lambda: T([6.0]) / sp, lambda: T(sp % 2), lambda: T.ones(2, 5).triu(sp).sum()]
  @case
  def llm_half_decode(T, nn, dt, rng):
    """the model cast to float16 in place (Tensor.replace), decoded under the JIT: each step's logits near numpy's float64 ones"""
    from tinygrad.nn.state import get_state_dict
    m = build("llama")
    for v in get_state_dict(m).values(): v.replace(v.cast(dt.half).realize())
    toks, errs, dtypes_seen = list(PROMPT), [], set()
    for i in range(5):
      tok, logits = m(T([toks[len(toks) - 1:] if i else toks]), len(toks) - 1 if i else 0, 0.0, jit=True)
      dtypes_seen.add(str(logits.dtype)); errs.append(bool(np.abs(logits.numpy()[0] - numpy_gpt(toks, "llama")[-1]).max() < 0.05))
      toks.append(int(numpy_gpt(toks, "llama")[-1].argmax()))  # teacher-forced: a near tie in float16 must not change later steps
    return [errs, sorted(dtypes_seen), str(m.h[0].attn.cache_kv.dtype)]
  @case
  def llm_topk_topp_filter(T, nn, dt, rng):
    """the deterministic half of top-k / top-p sampling: the filtered, renormalised distribution handed to multinomial"""
    logits = T(rng.standard_normal((1, 20)).astype(np.float32) * 2)
    def filtered(k, p, temp):
      probs = (logits / temp).softmax(-1)
      vals, idx = probs.topk(k)
      keep = (vals.cumsum(-1) - vals) < p  # a token stays while the mass before it is under p
      vals = keep.where(vals, 0)
      return T.zeros_like(probs).scatter(-1, idx, vals / vals.sum(-1, keepdim=True))
    sv, si = logits.sort(-1, descending=True)
    return [lambda: filtered(5, 0.9, 0.8), lambda: filtered(20, 0.5, 1.0), lambda: filtered(1, 1.0, 0.7), lambda: si[:, :4], lambda: sv.cumsum(-1),
            lambda: logits.softmax(-1).max(-1), lambda: (logits * 0).argmax(-1), lambda: logits.topk(3, sorted_=False)[0].sort(-1)[0]]
  @case
  def llm_state_dict_consume(T, nn, dt, rng):
    from tinygrad.nn.state import get_state_dict, load_state_dict
    m = build("gpt2"); sd = {k: T(v) for k, v in weights(5, "gpt2").items()}
    load_state_dict(m, sd, strict=False, verbose=False, consume=True)
    return [len(sd), m.wte.weight[:2], m.h[1].mlp.down.bias, lambda: load_state_dict(m, {"wte.weight": T.zeros(3, 3)}, strict=False, verbose=False),
            lambda: load_state_dict(m, {"nope": T.zeros(1)}, verbose=False), sorted(get_state_dict(m.h[0]))]

def main():
  """tokens/s of the decode loop: python bench/api_diff_llm.py [--style gpt2|llama] [--tokens N] [--nojit]"""
  args = sys.argv[1:]
  style = args[args.index("--style") + 1] if "--style" in args else "gpt2"
  n = int(args[args.index("--tokens") + 1]) if "--tokens" in args else 32
  jit = "--nojit" not in args
  m = build(style)
  generate(m, PROMPT, 4, jit=jit)  # warm: the prompt's kernels, the decode step's capture
  for layer in m.h: layer.attn.cache_kv.assign(layer.attn.cache_kv.zeros_like()).realize()
  from tinygrad import Tensor
  from tinygrad.helpers import GlobalCounters
  steps = min(n, MAX_CTX - len(PROMPT))
  decode = []
  for _ in range(3):
    toks = list(PROMPT)
    tok, _ = m(Tensor([toks]), 0, 0.0, jit); toks.append(int(tok.item()))  # the prompt, not timed
    GlobalCounters.reset()
    t0 = time.perf_counter()
    for _ in range(steps - 1):
      tok, _ = m(Tensor([toks[-1:]]), len(toks) - 1, 0.0, jit); toks.append(int(tok.item()))
    decode.append(time.perf_counter() - t0)
    kernels = GlobalCounters.kernel_count / (steps - 1)
  import tinygrad
  where = tinygrad.__file__.split("/site-packages/")[0] if "site-packages" in tinygrad.__file__ else "tg"
  print(f"{style} jit={jit} {where}: {steps - 1} decode steps, best {min(decode) * 1e3:.1f} ms = {(steps - 1) / min(decode):.1f} tok/s "
        f"(runs {[round(d * 1e3) for d in decode]} ms), {kernels:.1f} kernels per decode step; "
        f"tokens match numpy: {toks[len(PROMPT):] == numpy_greedy(PROMPT, steps, style)}")

if __name__ == "__main__": main()
