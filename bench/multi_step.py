"""One data-parallel training step of examples/train_digits_dp.py (the digits CNN, batch BS split over the devices, gradients allreduced,
Adam) on 1 and on 2 devices (CPU, then CPU + CPU:1), under TinyJit. Also counts the kernel launches and copies per step (mean over
all steps; every step, the two warm-up calls included, runs the same ones).
Prints one JSON line per figure and a table. Usage: python bench/multi_step.py [steps to time, default 20]   (BS=128)"""
import json, pathlib, statistics, sys
from tinygrad.helpers import GlobalCounters, getenv
from tinygrad.engine import realize

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from train_digits_dp import train  # noqa: E402

copies = [0]
def _counted_copy(dst, src, _run=realize.run_copy):  # copies between devices (uploads from python are copyins, not counted)
  copies[0] += 1
  _run(dst, src)
realize.run_copy = _counted_copy

def measure(devices:tuple, steps:int, bs:int) -> dict:
  kernels, copies[0] = GlobalCounters.kernel_count, 0
  _, _, times = train(devices, steps + 2, bs, 1e-2, 0)
  ms = [t * 1e3 for t in times]
  return {"devices": len(devices), "bs": bs, "median_ms": round(statistics.median(ms), 2), "min_ms": round(min(ms), 2),
          "kernels_per_step": round((GlobalCounters.kernel_count - kernels) / (steps + 2)), "copies_per_step": round(copies[0] / (steps + 2))}

if __name__ == "__main__":
  steps, bs = int(sys.argv[1]) if len(sys.argv) > 1 else 20, getenv("BS", 128)
  rows = [measure(("CPU",), steps, bs), measure(("CPU", "CPU:1"), steps, bs)]
  for r in rows: print(json.dumps(r))
  print("\n| devices | batch per device | median ms/step | min ms/step | kernels/step | copies/step |\n|---:|---:|---:|---:|---:|---:|")
  for r in rows:
    print(f"| {r['devices']} | {r['bs'] // r['devices']} | {r['median_ms']} | {r['min_ms']} | {r['kernels_per_step']} | {r['copies_per_step']} |")
  print(f"\n2 devices / 1 device: {rows[1]['median_ms'] / rows[0]['median_ms']:.2f}x the step time")
