"""The small GPT of bench/transformer.py trained: its loss (cross-entropy over the next tokens) and every weight's gradient, eager, beside
torch's loss.backward(), in alternating steps with a pause between them. The gradients are checked against torch's first; then the
kernels of one step, slowest first (DEBUG=2 times).
Usage: python bench/transformer_train.py [layers, default 2] [steps, default 3]   (needs torch)"""
import contextlib, io, json, re, sys, time
if not all(a.isdigit() for a in sys.argv[1:3]): raise SystemExit(__doc__)  # transformer.py reads the layer count at import
import numpy as np
import torch
import transformer as gpt
from tinygrad import Tensor, Device
from tinygrad.helpers import Context

STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 3

def main():
  w = gpt.weights()
  tw = {k: Tensor(v, requires_grad=True).realize() for k, v in w.items()}
  pw = {k: torch.from_numpy(v.copy()).requires_grad_(True) for k, v in w.items()}
  rng = np.random.default_rng(1)
  ids, tgt = (rng.integers(0, gpt.V, (gpt.B, gpt.T)).astype(np.int32) for _ in range(2))
  ti, tt, pi, pt = Tensor(ids).realize(), Tensor(tgt).realize(), torch.from_numpy(ids).long(), torch.from_numpy(tgt).long()
  def tg_step():
    loss = gpt.tg_forward(tw, ti).sparse_categorical_crossentropy(tt)
    grads = loss.gradient(*tw.values())
    Tensor.realize(loss, *grads)
    return loss, grads
  def torch_step():
    for p in pw.values(): p.grad = None
    loss = torch.nn.functional.cross_entropy(gpt.torch_forward(pw, pi).reshape(-1, gpt.V), pt.reshape(-1))
    loss.backward()
    return loss
  st = time.perf_counter()
  loss, grads = tg_step()
  first = time.perf_counter() - st
  ploss = torch_step()
  err = max(float(np.abs(g.numpy() - p.grad.numpy()).max() / (np.abs(p.grad.numpy()).max() + 1e-12)) for g, p in zip(grads, pw.values()))
  print(json.dumps({"bench": "transformer training step", "layers": gpt.L, "first step s": round(first, 2), "loss": loss.item(),
                    "torch loss": ploss.item(), "worst relative gradient error": err}))
  if err > 1e-3: raise SystemExit(f"gradients differ from torch's: {err}")
  times: dict[str, list[float]] = {"tg eager": [], "torch": []}
  for _ in range(STEPS):
    for who, step in (("tg eager", tg_step), ("torch", torch_step)):
      time.sleep(0.3)  # the other's threads stop spinning
      st = time.perf_counter(); step(); Device[Device.DEFAULT].synchronize(); times[who].append(time.perf_counter() - st)
  for who, ts in times.items(): print(json.dumps({"bench": "transformer training step", "layers": gpt.L, "who": who, "ms_best": round(min(ts) * 1e3, 1)}))
  out = io.StringIO()
  with contextlib.redirect_stdout(out), Context(DEBUG=2): tg_step()
  rows = [(float(m.group(2)), m.group(1)) for line in out.getvalue().splitlines()
          if (m := re.search(r"\*\*\* \S+\s+\d+ (\S+)\s+([\d.]+) us", re.sub(r"\x1b\[[0-9;]*m", "", line)))]
  print(f"{len(rows)} kernels, {sum(t for t, _ in rows) / 1e3:.1f} ms; the slowest:")
  for t, name in sorted(rows, reverse=True)[:8]: print(f"  {t / 1e3:8.2f} ms {name}")

if __name__ == "__main__":
  gpt.L = int(sys.argv[1]) if len(sys.argv) > 1 else 2  # (transformer.py's default is 4 layers)
  torch.set_num_threads(len(getattr(Device[Device.DEFAULT], "pool_cores", ())) or torch.get_num_threads())  # as many cores as tg's pool
  main()
