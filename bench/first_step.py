"""A model's first training step in a new process (schedule, lowering, compile: no disk cache), then its warm steps: a small GPT's loss
and gradients (bench/transformer.py's, 2 layers), an unrolled LSTM's gradient, a GRU's, a cross-entropy over 1000 classes. Prints one
JSON line per workload: first-step seconds and the best warm step in ms. Run it under another tree with PYTHONPATH to compare.
Usage: CACHELEVEL=0 python bench/first_step.py [workload ...]   (default: all; each runs in a process of its own)"""
import json, os, subprocess, sys, time
import numpy as np

def _r(*shape, seed=0) -> np.ndarray: return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(np.float32)

def gpt():
  sys.argv[1:] = ["2"]  # transformer.py reads its layer count at import
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  import transformer as g
  from tinygrad import Tensor
  tw = {k: Tensor(v, requires_grad=True).realize() for k, v in g.weights().items()}
  rng = np.random.default_rng(1)
  ids, tgt = (Tensor(rng.integers(0, g.V, (g.B, g.T)).astype(np.int32)).realize() for _ in range(2))
  def step():
    loss = g.tg_forward(tw, ids).sparse_categorical_crossentropy(tgt)
    Tensor.realize(loss, *loss.gradient(*tw.values()))
  return step

def _recurrent(cell:str, T:int=16, B:int=16, H:int=256):
  from tinygrad import Tensor
  n = 4 if cell == "lstm" else 3
  wx, wh, b = (Tensor(_r(*s, seed=i) * 0.05, requires_grad=True).realize() for i, s in enumerate([(H, n * H), (H, n * H), (n * H,)]))
  xs = Tensor(_r(T, B, H, seed=5)).realize()
  def step():
    h = c = Tensor.zeros(B, H)
    for t in range(T):
      if cell == "lstm":
        i, f, g, o = (xs[t] @ wx + h @ wh + b).chunk(4, 1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
      else:
        (xr, xz, xn), (hr, hz, hn) = (xs[t] @ wx + b).chunk(3, 1), (h @ wh).chunk(3, 1)
        r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
        h = (1 - z) * (xn + r * hn).tanh() + z * h
    Tensor.realize(*h.square().mean().gradient(wx, wh, b))
  return step

def xent():
  from tinygrad import Tensor
  w = Tensor(_r(512, 1000) * 0.05, requires_grad=True).realize()
  x, y = Tensor(_r(256, 512)).realize(), Tensor(np.arange(256) % 1000).realize()
  def step(): (x @ w).sparse_categorical_crossentropy(y).gradient(w)[0].realize()
  return step

WORKLOADS = {"gpt2": gpt, "lstm16": lambda: _recurrent("lstm"), "gru16": lambda: _recurrent("gru"), "xent": xent}

def run(name:str):
  from tinygrad import Device
  step = WORKLOADS[name]()
  st = time.perf_counter(); step(); Device[Device.DEFAULT].synchronize(); first = time.perf_counter() - st
  warm = []
  for _ in range(5):
    st = time.perf_counter(); step(); Device[Device.DEFAULT].synchronize(); warm.append(time.perf_counter() - st)
  print(json.dumps({"workload": name, "first_s": round(first, 2), "warm_ms": round(min(warm) * 1e3, 1)}), flush=True)

if __name__ == "__main__":
  if len(sys.argv) == 3 and sys.argv[1] == "--one": run(sys.argv[2])
  else:
    for name in sys.argv[1:] or WORKLOADS:
      if name not in WORKLOADS: raise SystemExit(f"unknown workload {name!r}: one of {', '.join(WORKLOADS)}")
      subprocess.run([sys.executable, __file__, "--one", name], check=True)
