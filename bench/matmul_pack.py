"""Tensor-level fp32 matmul (a @ b).realize(), the panel-major copy of B included, with the packing rule on and off (schedule/pack.py,
PACK=1/0) beside torch at the same thread count (torch.set_num_threads(THREADS)) when importable. Best of the interleaved rounds, in
CPU time of the process at THREADS=1 (other processes' load does not count; their use of the shared L3 still does), else wall time. Usage: [THREADS=n] python bench/matmul_pack.py [rounds] N [N ...]   (N or MxKxN)"""
import os, sys, time
import numpy as np
from tinygrad import Tensor, Device
from tinygrad.helpers import Context
try: HAS_PACK = bool(__import__("tinygrad.schedule.pack"))  # defines the PACK switch
except ImportError: HAS_PACK = False  # a tree without the rule (an A/B against main): its default only
try: import torch
except ImportError: torch = None

rounds, shapes = int(sys.argv[1]), [tuple(int(v) for v in s.split("x")) if "x" in s else (int(s),)*3 for s in sys.argv[2:]]
threads = int(os.environ.get("THREADS", os.cpu_count() or 1))
clock = time.process_time if threads == 1 else time.perf_counter
if torch is not None: torch.set_num_threads(threads)
for m, k, n in shapes:
  a, b = np.random.rand(m, k).astype(np.float32), np.random.rand(k, n).astype(np.float32)
  ta, tb = Tensor(a).realize(), Tensor(b).realize()
  def tg(pack:int|None):
    def run():
      with Context(**({} if pack is None else {"PACK": pack})): (ta @ tb).realize()
      Device["CPU"].synchronize()
    return run
  fns = {"tg PACK=1": tg(1), "tg PACK=0": tg(0)} if HAS_PACK else {"tg": tg(None)}
  if torch is not None:
    pa, pb = torch.from_numpy(a), torch.from_numpy(b)
    fns["torch"] = lambda: pa @ pb
  assert np.allclose((ta @ tb).numpy(), a @ b, rtol=1e-3, atol=1e-3 * k)
  for f in fns.values(): f()
  best = {name: float("inf") for name in fns}
  for _ in range(rounds):
    for name, f in fns.items():
      st = clock(); f(); best[name] = min(best[name], clock() - st)
  print(f"{m}x{k}x{n} THREADS={threads} " + "  ".join(f"{name} {2*m*k*n/t/1e9:6.1f}" for name, t in best.items()) + " GFLOP/s", flush=True)
