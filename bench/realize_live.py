"""Cost of one realize() beside many unrelated live lazy tensors: it must not grow with their number (autograd leaves exactly this
pattern behind). Each live tensor is its own small lazy graph (arange, add, mul, sum) that is never realized; the timed realize is
a fresh buffer through an already compiled kernel, so the figure is scheduling + retargeting + launch.
Prints one JSON line per figure, then a table. Usage: python bench/realize_live.py [reps per figure, default 30]"""
import json, statistics, sys, time
from tinygrad import Tensor

LIVE = (10, 1_000, 10_000)

def realize_ms(reps:int) -> tuple[float, float]:
  times = []
  for _ in range(reps):
    t = (Tensor([1.0, 2.0, 3.0, 4.0]) * 3 + 1).sum()
    st = time.perf_counter()
    t.realize()
    times.append((time.perf_counter() - st) * 1e3)
  return min(times), statistics.median(times)

if __name__ == "__main__":
  reps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
  realize_ms(3)  # compile the kernel once, outside the figures
  rows = []
  for n in LIVE:
    live = [(Tensor.arange(8) + i) * 2 for i in range(n)]  # unrelated lazy graphs, kept alive
    best, median = realize_ms(reps)
    rows.append((n, best, median))
    print(json.dumps({"bench": "realize_live", "live_lazy_tensors": n, "realize_ms_best": round(best, 3), "realize_ms_median": round(median, 3),
                      "reps": reps}))
    del live
  print(f"\n{'live lazy tensors':>18} | {'best ms':>8} | {'median ms':>9}\n{'-'*18}-|-{'-'*8}-|-{'-'*9}")
  for n, best, median in rows: print(f"{n:>18,} | {best:8.3f} | {median:9.3f}")
  print(f"median at {LIVE[-1]:,} / at {LIVE[0]}: {rows[-1][2] / rows[0][2]:.2f}x")
