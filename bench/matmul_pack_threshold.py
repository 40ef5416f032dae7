"""Where packing a matmul operand starts to pay (schedule/pack.py MIN_WORK): square fp32 N x N matmuls realized eagerly with the rule
as it is (`tg`), with every size packed (`Context(PACK=2)`) and torch (when importable), timed in interleaved rounds of 10 calls each
after a pause. Prints GFLOP/s, the best and the median of the rounds' bests.
Usage: python bench/matmul_pack_threshold.py N [rounds, default 8]"""
import sys, time
import numpy as np
from tinygrad import Tensor, Device
from tinygrad.helpers import Context
try: import torch
except ImportError: torch = None

n, rounds = int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 8
a, b = np.random.rand(n, n).astype(np.float32), np.random.rand(n, n).astype(np.float32)
ta, tb = Tensor(a).realize(), Tensor(b).realize()
def tg(): (ta @ tb).realize(); Device[Device.DEFAULT].synchronize()
def tg_packed():
  with Context(PACK=2): tg()
fns = {"tg": tg, "tg PACK=2": tg_packed}
if torch is not None:
  pa, pb = torch.from_numpy(a), torch.from_numpy(b)
  fns["torch"] = lambda: pa @ pb
for f in fns.values(): f(); f()
best: dict[str, list[float]] = {k: [] for k in fns}
for _ in range(rounds):
  for k, f in fns.items():
    time.sleep(0.1)  # the last column's threads stop spinning
    ts = []
    for _ in range(10):
      st = time.perf_counter(); f(); ts.append(time.perf_counter() - st)
    best[k].append(min(ts))
for k, v in best.items(): print(f"n={n} {k:10s} best {2*n**3/min(v)/1e9:6.1f} GFLOP/s  median-of-bests {2*n**3/np.median(v)/1e9:6.1f}")
