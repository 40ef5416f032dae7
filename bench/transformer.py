"""A small GPT's forward pass (pre-norm blocks, causal attention, tanh GELU, logits over the vocabulary) beside torch: the first call
(schedule and compile: a model's graph holds every layer, and the scheduler's walks over it must stay linear in the depth), then eager
calls (the schedule cache hit) and TinyJit replays, in alternating blocks. Checked against torch first.
Usage: python bench/transformer.py [layers, default 4] [blocks, default 5]   (needs torch)"""
import json, sys, time, statistics
import numpy as np
import torch
from tinygrad import Tensor, TinyJit, Device

L = int(sys.argv[1]) if len(sys.argv) > 1 else 4
BLOCKS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
D, H, V, T, B = 512, 8, 8192, 128, 4  # width, heads, vocabulary, sequence, batch

def weights() -> dict[str, np.ndarray]:
  rng = np.random.default_rng(0)
  w = {"wte": rng.standard_normal((V, D), dtype=np.float32) * 0.02, "wpe": rng.standard_normal((T, D), dtype=np.float32) * 0.02}
  for l in range(L):
    for name, shape in (("qkv", (3 * D, D)), ("proj", (D, D)), ("fc", (4 * D, D)), ("out", (D, 4 * D))):
      w[f"{l}.{name}"] = rng.standard_normal(shape, dtype=np.float32) * 0.02
    for n in ("ln1", "ln2"): w[f"{l}.{n}.w"], w[f"{l}.{n}.b"] = np.ones(D, np.float32), np.zeros(D, np.float32)
  return w

def tg_forward(w:dict, idx:Tensor) -> Tensor:
  x = w["wte"][idx] + w["wpe"]
  for l in range(L):
    q, k, v = (x.layernorm() * w[f"{l}.ln1.w"] + w[f"{l}.ln1.b"]).linear(w[f"{l}.qkv"].T).reshape(B, T, 3, H, D // H).permute(2, 0, 3, 1, 4)
    x = x + q.scaled_dot_product_attention(k, v, is_causal=True).transpose(1, 2).reshape(B, T, D).linear(w[f"{l}.proj"].T)
    x = x + (x.layernorm() * w[f"{l}.ln2.w"] + w[f"{l}.ln2.b"]).linear(w[f"{l}.fc"].T).gelu().linear(w[f"{l}.out"].T)
  return x.layernorm().linear(w["wte"].T)

def torch_forward(w:dict, idx:torch.Tensor) -> torch.Tensor:
  F = torch.nn.functional
  x = w["wte"][idx] + w["wpe"]
  for l in range(L):
    q, k, v = F.linear(F.layer_norm(x, (D,), w[f"{l}.ln1.w"], w[f"{l}.ln1.b"]), w[f"{l}.qkv"]).reshape(B, T, 3, H, D // H).permute(2, 0, 3, 1, 4)
    x = x + F.linear(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, D), w[f"{l}.proj"])
    x = x + F.linear(F.gelu(F.linear(F.layer_norm(x, (D,), w[f"{l}.ln2.w"], w[f"{l}.ln2.b"]), w[f"{l}.fc"]), approximate="tanh"), w[f"{l}.out"])
  return F.linear(F.layer_norm(x, (D,)), w["wte"])

def main():
  w = weights()
  tw, pw = {k: Tensor(v).realize() for k, v in w.items()}, {k: torch.from_numpy(v) for k, v in w.items()}
  ids = np.random.default_rng(1).integers(0, V, (B, T)).astype(np.int32)
  ti, pi = Tensor(ids).realize(), torch.from_numpy(ids).long()
  dev = Device[Device.DEFAULT]
  st = time.perf_counter()
  got = tg_forward(tw, ti).numpy()
  first = time.perf_counter() - st
  torch.set_num_threads(len(getattr(dev, "pool_cores", ())) or torch.get_num_threads())
  with torch.no_grad(): want = torch_forward(pw, pi).numpy()
  np.testing.assert_allclose(got, want, atol=2e-3, rtol=2e-3)
  jit = TinyJit(lambda i: tg_forward(tw, i).realize())
  fns = {"tg eager": lambda: tg_forward(tw, ti).realize(), "tg TinyJit": lambda: jit(ti), "torch": lambda: torch_forward(pw, pi)}
  for fn in fns.values():
    for _ in range(3): fn()
  times: dict[str, list[float]] = {k: [] for k in fns}
  with torch.no_grad():
    for _ in range(BLOCKS):
      for k, fn in fns.items():
        time.sleep(0.3)  # the last column's threads stop spinning
        block = []
        for _ in range(3):
          st = time.perf_counter(); fn(); dev.synchronize(); block.append(time.perf_counter() - st)
        times[k].append(min(block))
  flops = 2 * B * T * (L * 12 * D * D + D * V) + L * 2 * B * H * T * T * (D // H)  # matmuls, attention's two (the causal half counted whole)
  print(json.dumps({"bench": "transformer", "layers": L, "figure": "first call (schedule + compile)", "s": round(first, 2)}))
  for k, ts in times.items():
    print(json.dumps({"bench": "transformer", "layers": L, "who": k, "ms_best": round(min(ts) * 1e3, 2),
                      "ms_median": round(statistics.median(ts) * 1e3, 2), "GFLOP/s_best": round(flops / min(ts) / 1e9, 1)}))

if __name__ == "__main__": main()
