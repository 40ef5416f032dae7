"""The python cost of running again what ran before: an eager realize whose graph the schedule cache has seen, and a TinyJit replay.
  tiny realize   (t*2).sum().realize() on 4 floats: the kernel is nothing, the figure is building the graph, the cache hit, buffers, launch
  sum 16M        ta.sum().realize() (the suite's sum row) beside its kernels alone: the same programs called on the same buffers in a loop
  sum 1M         the same two kernels on 16x less data: short enough that the best of many runs is one nobody preempted (a busy machine)
  jit replay     a TinyJit step of 32 small kernels (4 floats each, no copies): microseconds per kernel of a replay
  sum 16M beside torch   the eager sum, the same sum under TinyJit (its kernels without the eager python) and torch's sum (when
                 importable), in alternating blocks: how far the kernels alone are from torch, and what the eager python adds
Prints one JSON line per figure. Usage: python bench/realize_overhead.py [reps, default 2000]"""
import json, statistics, sys, time
import numpy as np
from tinygrad import Tensor, TinyJit, Device
from tinygrad.engine import realize
from tinygrad.schedule.cache import create_schedule_cached

def timed(fn, reps:int) -> tuple[float, float]:
  """best and median microseconds of fn() (each run ends when the device has finished)"""
  dev, ts = Device[Device.DEFAULT], []
  for _ in range(reps):
    st = time.perf_counter(); fn(); dev.synchronize(); ts.append((time.perf_counter() - st) * 1e6)
  return min(ts), statistics.median(ts)

def row(name:str, best:float, median:float, **extra):
  print(json.dumps({"bench": "realize_overhead", "figure": name, "us_best": round(best, 1), "us_median": round(median, 1), **extra}))

def tiny(reps:int):
  t = Tensor([1.0, 2.0, 3.0, 4.0]).realize()
  for _ in range(20): (t * 2).sum().realize()  # compiled and cached
  row("tiny realize", *timed(lambda: (t * 2).sum().realize(), reps))

def total(reps:int, n:int=1 << 24, name:str="sum 16M"):
  ta = Tensor(np.random.default_rng(0).standard_normal(n, dtype=np.float32)).realize()
  for _ in range(3): ta.sum().realize()
  wall = timed(lambda: ta.sum().realize(), reps)
  items, _ = create_schedule_cached([ta.sum().uop])
  runs = [(*realize.prepare_kernel(it.ast, Device.DEFAULT), [realize.buffer_of(b) for b in it.bufs], it.var_vals) for it in items]
  def kernels():
    for spec, prg, bufs, vals in runs: prg(*[b._buf for b in bufs[:spec.nbufs]], global_size=spec.global_size, local_size=spec.local_size)
  alone = timed(kernels, reps)
  row(name, *wall, kernels_us_best=round(alone[0], 1), kernels_us_median=round(alone[1], 1), kernels=len(runs),
      python_us_best=round(wall[0] - alone[0], 1), python_us_median=round(wall[1] - alone[1], 1))

def jit_replay(reps:int, kernels:int=32):
  @TinyJit
  def step(x:Tensor) -> Tensor:
    for i in range(kernels): x = (x * 1.0001 + i).contiguous().realize()  # one kernel each
    return x
  inputs = [Tensor(np.full(4, i, np.float32)).realize() for i in range(reps)]
  for x in inputs[:3]: step(x)  # run, capture, first replay
  it = iter(inputs)
  best, median = timed(lambda: step(next(it)), reps - 3)
  row("jit replay per kernel", best / kernels, median / kernels, kernels=kernels)

def sum_beside_torch(reps:int, n:int=1 << 24):
  a = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
  ta = Tensor(a).realize()
  jitted = TinyJit(lambda x: x.sum().realize())
  fns = {"eager": lambda: ta.sum().realize(), "TinyJit": lambda: jitted(ta)}
  try:
    import torch
    pa = torch.from_numpy(a)
    fns["torch"] = lambda: pa.sum()
  except ImportError: pass
  for f in fns.values():
    for _ in range(3): f()
  times: dict[str, list[float]] = {k: [] for k in fns}
  for _ in range(max(1, reps // 10)):  # blocks of 10: each one's threads (tg's pool, torch's) are awake, as in a loop of the same call
    for k, f in fns.items(): times[k] += [timed(f, 1)[0] for _ in range(10)]
  for k, ts in times.items():
    row(f"sum 16M {k}", min(ts), statistics.median(ts), GB_s_best=round(a.nbytes / min(ts) / 1e3, 1))

if __name__ == "__main__":
  reps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
  tiny(reps)
  total(max(10, reps // 50))
  total(max(50, reps // 4), 1 << 20, "sum 1M")
  jit_replay(max(50, reps // 10))
  sum_beside_torch(max(20, reps // 20))
