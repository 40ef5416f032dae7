"""The suite's conv2d (batch 8, 64->64, 56x56, 3x3, pad 1, fp32) and matmul 1024/2048 against torch in one process, best of `runs`
realizes each, torch at as many threads as tg's THREADS. Run it alternately with each tree's packages first on PYTHONPATH to A/B two
trees on a busy machine: the ratios to torch of one process are what compares. With CLOCK=cpu the time is the process's CPU time
(time.process_time), which other processes' load moves less: use it with THREADS=1. Usage: python bench/conv_ab.py [runs] [BEAM]"""
import os, sys, time
import numpy as np
from tinygrad import Tensor
from tinygrad.helpers import Context
from tinygrad.codegen.opt import THREADS
try: import torch
except ImportError: torch = None
runs, beam = int(sys.argv[1]) if len(sys.argv) > 1 else 5, int(sys.argv[2]) if len(sys.argv) > 2 else 0
if torch: torch.set_num_threads(THREADS.value)
rng = np.random.default_rng(0)
clock = time.process_time if os.environ.get("CLOCK") == "cpu" else time.perf_counter
def best(fn):
  fn(); ts = []
  for _ in range(runs): st = clock(); fn(); ts.append(clock() - st)
  return min(ts)
def conv():
  x, w = rng.standard_normal((8, 64, 56, 56), dtype=np.float32), rng.standard_normal((64, 64, 3, 3), dtype=np.float32)
  tx, tw = Tensor(x).realize(), Tensor(w).realize()
  px, pw = (torch.from_numpy(v) for v in (x, w)) if torch else (None, None)
  return "conv2d", 2*8*64*64*56*56*9, lambda: tx.conv2d(tw, padding=1).realize(), lambda: torch.nn.functional.conv2d(px, pw, padding=1)
def matmul(n:int):
  a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
  ta, tb = Tensor(a).realize(), Tensor(b).realize()
  pa, pb = (torch.from_numpy(a), torch.from_numpy(b)) if torch else (None, None)
  return f"matmul {n}", 2*n**3, lambda: (ta @ tb).realize(), lambda: pa @ pb
tree = next((p for p in os.environ.get("PYTHONPATH", "").split(":") if p), "installed").split("/packages/")[0]
for name, flops, tgf, tf in (conv(), matmul(1024), matmul(2048)):
  with Context(BEAM=beam): g = flops / best(tgf) / 1e9
  t = flops / best(tf) / 1e9 if torch else float("nan")
  print(f"{tree} BEAM={beam} {name}: tg {g:.1f} GFLOP/s, torch {t:.1f} GFLOP/s, ratio {g/t:.2f}", flush=True)
