"""The kernels of common reductions on 4096x4096 (and 16M + 3) floats, each launched directly (no scheduling; best and median of
RUNS), and each whole realize, beside torch when importable (timed after tg, so its OpenMP threads are not spinning while tg runs).
One JSON line. For A/B against another tree run it alternately with PYTHONPATH at each tree's packages/*/src; a busy machine reads
better with `chrt -f 50` (both cores ours for the run) or THREADS=1.
Usage: python bench/reduce_kernels.py [rows, default all, comma-separated] [runs, default 15]"""
import json, os, statistics, sys, time
import numpy as np
from tinygrad import Tensor
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.engine.realize import prepare_kernel, buffer_of, launch

rng = np.random.default_rng(0)
a, v = rng.standard_normal((4096, 4096), dtype=np.float32), rng.standard_normal((1 << 24) + 3, dtype=np.float32)
ta, tv = Tensor(a).realize(), Tensor(v).realize()
ROWS = {"sum": (lambda x: x.sum(), "a"), "sum 16M+3": (lambda x: x.sum(), "v"), "sum(1)": (lambda x: x.sum(1), "a"),
        "sum(0)": (lambda x: x.sum(0), "a"), "mean": (lambda x: x.mean(), "a"), "max": (lambda x: x.max(), "a"),
        "argmax": (lambda x: x.argmax(), "a"), "argmax(1)": (lambda x: x.argmax(1), "a"), "softmax(1)": (lambda x: x.softmax(1), "a")}
only = sys.argv[1].split(",") if len(sys.argv) > 1 and sys.argv[1] != "all" else list(ROWS)
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 15

def timed(fn) -> tuple[float, float]:
  fn()
  ts = []
  for _ in range(RUNS):
    st = time.perf_counter(); fn(); ts.append(time.perf_counter() - st)
  return round(min(ts) * 1e3, 3), round(statistics.median(ts) * 1e3, 3)

out: dict = {"load": os.getloadavg()[0]}
for name in only:
  make, which = ROWS[name]
  x = ta if which == "a" else tv
  make(x).realize()  # compiled and cached before timing
  for it in create_schedule([make(x).uop])[0]:
    if it.kind != "kernel": continue
    spec, prg = prepare_kernel(it.ast, "CPU")
    bufs = [buffer_of(b) for b in it.bufs]
    out[f"{name}: {len(out)} {spec.name} x{spec.global_size[0]}"] = timed(lambda: launch(spec, prg, bufs, it.var_vals, "CPU"))
  out[f"{name}: realize"] = timed(lambda: make(x).realize())
try:
  import torch
  pa, pv = torch.from_numpy(a), torch.from_numpy(v)
  for name in only:
    make, which = ROWS[name]
    out[f"{name}: torch"] = timed(lambda: make(pa if which == "a" else pv))
except ImportError: pass
print(json.dumps(out))
