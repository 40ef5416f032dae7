"""RSS of a jitted training loop: a 16x4 linear layer with a hand-written SGD update by assign, 10,000 replayed steps.
A replay allocates nothing but its inputs, so RSS at step 10k should equal RSS at step 1k.
Run: .venv/bin/python bench/jit_memory.py   (STEPS=n to change the step count)"""
import os, resource
from tinygrad import Tensor, TinyJit

def rss_mib() -> float:
  with open("/proc/self/statm") as f: return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

def main(steps:int):
  Tensor.manual_seed(0)
  w, b = Tensor.uniform(16, 4, low=-0.1, high=0.1).contiguous().realize(), Tensor.zeros(4).contiguous().realize()
  true_w = Tensor.uniform(16, 4).realize()
  @TinyJit
  def step(x, y):
    err = x @ w + b - y
    loss = (err * err).mean()
    g = err * (2 / err.numel())
    w.assign(w - 0.05 * (x.T @ g))  # d loss / d w and d b, by hand
    b.assign(b - 0.05 * g.sum(0))
    return loss
  xs = [Tensor.uniform(32, 16).realize() for _ in range(8)]
  ys = [(x @ true_w).realize() for x in xs]
  for i in range(1, steps + 1):
    loss = step(xs[i % 8], ys[i % 8])
    if i in (1_000, steps): print(f"step {i:6d}: RSS {rss_mib():7.1f} MiB  (max {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024:.1f} MiB)  loss {loss.item():.5f}")

if __name__ == "__main__": main(int(os.environ.get("STEPS", 10_000)))
