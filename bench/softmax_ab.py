"""The suite's softmax 4096x4096 beside its numpy copy probe in one process, best of `runs` each (GB/s counted as the suite does: 2 x
64 MiB over the wall time of `ta.softmax(1).realize()`; the probe is measured before and after, the better one kept). Run it alternately
with each tree's packages first on PYTHONPATH to A/B two trees on a busy machine: the share of the probe within one process is what
compares. With CLOCK=cpu the times are the process's CPU time (time.process_time), which other processes' load moves less: use it with
THREADS=1. Usage: python bench/softmax_ab.py [runs]"""
import os, sys, time
import numpy as np
from tinygrad import Tensor, Device
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
clock = time.process_time if os.environ.get("CLOCK") == "cpu" else time.perf_counter
def best(fn):
  fn(); ts = []
  for _ in range(runs): st = clock(); fn(); ts.append(clock() - st)
  return min(ts)
src, dst = np.random.rand(1 << 24).astype(np.float32), np.empty(1 << 24, np.float32)
a = np.random.default_rng(0).standard_normal((4096, 4096), dtype=np.float32)
ta = Tensor(a).realize()
def softmax():
  ta.softmax(1).realize()
  Device[Device.DEFAULT].synchronize()
def copy(): np.copyto(dst, src)
probe = [2 * src.nbytes / best(copy) / 1e9]
sm = 2 * a.nbytes / best(softmax) / 1e9
probe.append(2 * src.nbytes / best(copy) / 1e9)
tree = next((p for p in os.environ.get("PYTHONPATH", "").split(":") if p), "installed").split("/packages/")[0]
print(f"{tree}: softmax {sm:.2f} GB/s, numpy copy {max(probe):.2f} GB/s, share {sm / max(probe):.2f}, load {os.getloadavg()[0]:.1f}", flush=True)
