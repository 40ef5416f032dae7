"""The replayed training step of bench/train_step.py kernel by kernel: each kernel's best CPU time of the calling thread over the replays
(time.thread_time, so time spent descheduled by other processes does not count; run with THREADS=1, where the calling thread runs every
share), ranked, with the estimated FLOP and bytes of its ProgramSpec. Kernels of the same name are summed, each launch of the step its
own best (the best of all of them times their number hid a slow one: the MNIST pool gradient, 5.5 ms, behind conv-1's 0.3).
Usage: THREADS=1 python bench/train_step_kernels.py [replays, default 10]"""
import collections, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from tinygrad import Tensor
from tinygrad.engine import realize
from tinygrad.helpers import Context
from train_step import tg_train_step, BS

def main(replays:int):
  times: dict[tuple[int, str], list[float]] = collections.defaultdict(list)  # (position in the step, name) -> times
  est: dict[str, tuple[int, int]] = {}
  seq = [0]
  def timed_launch(spec, prg, bufs, var_vals, device):
    global_size, local_size = spec.launch_dims(var_vals)
    st = time.thread_time()
    prg(*[b._buf for b in bufs[:spec.nbufs]], vals=tuple(var_vals[v] for v in spec.vars), global_size=global_size, local_size=local_size, wait=True)
    times[(seq[0], spec.name)].append(time.thread_time() - st)
    seq[0] += 1
    est[spec.name] = (spec.ops, spec.mem)
  step = tg_train_step()
  rng = np.random.default_rng(0)
  plain = realize.launch
  for i in range(3 + replays):  # call 1 runs, call 2 captures, the rest replay (at DEBUG=2 a replay launches each kernel through realize.launch)
    realize.launch, seq[0] = timed_launch if i >= 3 else plain, 0
    with Context(DEBUG=2 if i >= 3 else 0):
      step(Tensor(rng.random((BS, 1, 28, 28), dtype=np.float32)), Tensor(rng.integers(0, 10, BS, dtype=np.int32))).item()
  realize.launch = plain
  by_name: dict[str, list[float]] = collections.defaultdict(list)
  for (_, name), ts in times.items(): by_name[name].append(min(ts))
  rows = sorted(((sum(bests), name, len(bests)) for name, bests in by_name.items()), reverse=True)
  print(f"{'ms':>7} {'runs':>4} {'kernel':32s} {'MFLOP':>8} {'MB moved':>8}")
  for s, name, n in rows: print(f"{s*1e3:7.3f} {n:4d} {name:32s} {est[name][0]*n/1e6:8.2f} {est[name][1]*n/1e6:8.2f}")
  print(f"total {sum(r[0] for r in rows)*1e3:.2f} ms in {sum(r[2] for r in rows)} kernels per step (THREADS={os.environ.get('THREADS', 'default')})")

if __name__ == "__main__": main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
