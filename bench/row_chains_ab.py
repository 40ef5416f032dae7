"""Process CPU time (best of 7) of the other row chains and two single-loop kernels on a 4096x4096 float32 tensor, to A/B two trees in
alternating processes (each tree's packages first on PYTHONPATH; run it with THREADS=1). Usage: python bench/row_chains_ab.py"""
import os, time, numpy as np
from tinygrad import Tensor
a = np.random.default_rng(0).standard_normal((4096, 4096), dtype=np.float32)
ta = Tensor(a).realize()
clock = time.process_time
def best(fn, n=7):
  fn(); ts = []
  for _ in range(n): st = clock(); fn(); ts.append(clock() - st)
  return min(ts) * 1e3
tree = next((p for p in os.environ.get("PYTHONPATH", "").split(":") if p), "installed").split("/packages/")[0]
print(tree, " ".join(f"{k} {best(f):.1f}ms" for k, f in (("log_softmax", lambda: ta.log_softmax(1).realize()), ("layernorm", lambda: ta.layernorm().realize()),
      ("sum", lambda: ta.sum(1).realize()), ("exp", lambda: ta.exp().realize()))))
