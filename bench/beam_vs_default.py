"""matmul 1024 and conv2d: tg's default opts against BEAM=2 (the first BEAM run searches, the search time is printed) and torch when it is
importable. Use a fresh CACHEDB to see the search; a second run reads the winners from the disk cache.
Usage: python bench/beam_vs_default.py [matmul sizes, default 1024]"""
import sys, time
import numpy as np
try: import torch
except ImportError: torch = None
from tinygrad import Tensor
from tinygrad.helpers import Context
rng = np.random.default_rng(0)
def best(fn, runs=3):
  fn(); ts = []
  for _ in range(runs): st = time.perf_counter(); fn(); ts.append(time.perf_counter() - st)
  return min(ts)
x, w = rng.standard_normal((8, 64, 56, 56), dtype=np.float32), rng.standard_normal((64, 64, 3, 3), dtype=np.float32)
tx, tw = (Tensor(v).realize() for v in (x, w))
px, pw = (torch.from_numpy(v) for v in (x, w)) if torch else (None,)*2
def matmul(n:int):
  a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
  ta, tb = Tensor(a).realize(), Tensor(b).realize()
  pa, pb = (torch.from_numpy(a), torch.from_numpy(b)) if torch else (None, None)
  return (f"matmul {n}", 2*n**3, lambda: (ta @ tb).realize(), lambda: pa @ pb)
for name, flops, tgf, tf in [*(matmul(int(n)) for n in sys.argv[1:] or [1024]),
                             ("conv2d", 2*8*64*64*56*56*9, lambda: tx.conv2d(tw, padding=1).realize(), lambda: torch.nn.functional.conv2d(px, pw, padding=1))]:
  d = flops / best(tgf) / 1e9
  with Context(BEAM=2):
    st = time.perf_counter(); tgf(); search = time.perf_counter() - st
    bm = flops / best(tgf) / 1e9
  t = flops / best(tf) / 1e9 if torch else None
  vs = f", torch {t:.2f} GFLOP/s; ratios {d/t:.2f} / {bm/t:.2f}" if t else ""
  print(f"{name}: default {d:.2f} GFLOP/s, BEAM=2 {bm:.2f} GFLOP/s (search {search:.0f} s){vs}", flush=True)
