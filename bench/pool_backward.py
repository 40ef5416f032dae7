"""max_pool2d / avg_pool2d forward and forward+backward beside torch (same shapes, the input requiring a gradient in both), warm: the
best of `runs` after a warm-up. tg's graph is built anew each run, as an eager training step does (no TinyJit). The gradient is
checked against torch's first (on random inputs, so no ties: tg splits a tied window's gradient, torch gives it to one element).
Usage: python bench/pool_backward.py [runs, default 5] [N C H W, default 16 64 112 112]   (needs torch)"""
import sys
import numpy as np
import torch
from tinygrad import Tensor, Device
from sampling import best

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
SHAPE = tuple(int(v) for v in sys.argv[2:6]) if len(sys.argv) > 5 else (16, 64, 112, 112)
CASES = [("max", 3, 2, 1), ("max", 2, 2, 0), ("max", 3, 1, 1), ("avg", 3, 2, 1), ("avg", 2, 2, 0), ("avg", 3, 1, 1)]  # (pool, k, s, pad)

def tg_pool(x, pool, k, s, p): return x.max_pool2d(k, s, padding=p) if pool == "max" else x.avg_pool2d(k, s, padding=p)
def torch_pool(x, pool, k, s, p):
  return torch.nn.functional.max_pool2d(x, k, s, p) if pool == "max" else torch.nn.functional.avg_pool2d(x, k, s, p)

if __name__ == "__main__":
  torch.set_num_threads(len(Device["CPU"].pool_cores) if hasattr(Device["CPU"], "pool_cores") else 2)
  x = np.random.default_rng(0).standard_normal(SHAPE, dtype=np.float32)
  tx, px = Tensor(x).realize(), torch.from_numpy(x).requires_grad_()
  tx.requires_grad = True
  print(f"input {'x'.join(map(str, SHAPE))}, torch threads {torch.get_num_threads()}")
  print("| pool | tg fwd ms | torch fwd ms | tg/torch fwd | tg fwd+bwd ms | torch fwd+bwd ms | tg/torch fwd+bwd |")
  print("|---|---:|---:|---:|---:|---:|---:|")
  for pool, k, s, p in CASES:
    def tg_fwd(): tg_pool(tx, pool, k, s, p).realize()
    def tg_step():
      tx.grad = None
      out = tg_pool(tx, pool, k, s, p)
      out.sum().backward()
      Tensor.realize(out, tx.grad)
    def torch_fwd():
      with torch.no_grad(): torch_pool(px, pool, k, s, p)
    def torch_step():
      px.grad = None
      torch_pool(px, pool, k, s, p).sum().backward()
    tg_step(), torch_step()
    np.testing.assert_allclose(tx.grad.numpy(), px.grad.numpy(), rtol=1e-5, atol=1e-6)
    f, tf, b, tb = best(tg_fwd, RUNS), best(torch_fwd, RUNS), best(tg_step, RUNS), best(torch_step, RUNS)
    print(f"| {pool} {k}x{k} s{s} p{p} | {f*1e3:.1f} | {tf*1e3:.1f} | {f/tf:.2f} | {b*1e3:.1f} | {tb*1e3:.1f} | {b/tb:.2f} |", flush=True)
