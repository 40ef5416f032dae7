"""Kernels, schedule-cache hits and python time of a small MLP training step whose forward makes tensors with the creation functions
(Tensor.zeros/ones/full, zeros_like) every step: their constants must fold into the kernels as python numbers do, and a step that makes
new ones must still find its schedules in the cache.
Usage: python bench/creation_consts.py [steps, default 20]"""
import json, sys, time
import numpy as np
from tinygrad import Tensor, nn, GlobalCounters, Context
from tinygrad.schedule import cache

def main(steps:int):
  rng = np.random.default_rng(0)
  Tensor.manual_seed(0)
  l1, l2, norm = nn.Linear(32, 64), nn.Linear(64, 10), nn.LayerNorm(64)
  opt = nn.optim.Adam(nn.state.get_parameters([l1, l2, norm]), lr=1e-3)
  x, y = Tensor(rng.standard_normal((16, 32), dtype=np.float32)), Tensor(rng.integers(0, 10, 16, dtype=np.int32))
  kernels, times = [], []
  with Context(TRAINING=1):
    for i in range(steps):
      st = time.perf_counter()
      GlobalCounters.reset()
      h = norm(l1(x) + Tensor.zeros(16, 64)).relu() * Tensor.ones(64) + Tensor.full((16, 64), 0.0)
      loss = (l2(h) + h.sum(1, keepdim=True).zeros_like()).sparse_categorical_crossentropy(y)
      opt.zero_grad()
      loss.backward()
      loss.realize(*opt.schedule_step())
      kernels.append(GlobalCounters.kernel_count)
      times.append(time.perf_counter() - st)
  out = {"kernels_per_step": kernels[-1], "kernels_step1": kernels[0], "cache_hits": cache.stats["hits"], "cache_misses": cache.stats["misses"],
         "best_step_ms": round(min(times[2:]) * 1e3, 3), "loss": round(loss.item(), 5)}
  print(json.dumps(out))

if __name__ == "__main__": main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
