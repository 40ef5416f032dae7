"""The C renderer (DEV=CPU:C: C source compiled by the system cc) beside the default LLVM one on matmul and the suite's conv2d: each result
checked against numpy, then the best of `runs` eager realizes. Each renderer runs in its own process (the device is chosen at import).
Usage: python bench/c_renderer.py [runs, default 5] [matmul sizes, default 520 1024 1536 2048]"""
import os, subprocess, sys
import numpy as np
from sampling import best

def worker(runs:int, sizes:list[int]):
  from tinygrad import Tensor
  rng = np.random.default_rng(0)
  for n in sizes:
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    ta, tb = Tensor(a).realize(), Tensor(b).realize()
    np.testing.assert_allclose((ta @ tb).numpy(), a @ b, rtol=1e-3, atol=1e-2)
    print(f"matmul {n:5d}  {2 * n**3 / best(lambda: (ta @ tb).realize(), runs) / 1e9:7.1f} GFLOP/s", flush=True)
  x, w = rng.standard_normal((8, 64, 56, 56), dtype=np.float32), rng.standard_normal((64, 64, 3, 3), dtype=np.float32)
  tx, tw = Tensor(x).realize(), Tensor(w).realize()
  cols = np.lib.stride_tricks.sliding_window_view(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), (3, 3), axis=(2, 3))
  np.testing.assert_allclose(tx.conv2d(tw, padding=1).numpy(), np.einsum("bchwij,ocij->bohw", cols, w, optimize=True), rtol=1e-3, atol=1e-2)
  flops = 2 * 8 * 64 * 64 * 56 * 56 * 9
  print(f"conv2d b8 64->64 56x56 3x3  {flops / best(lambda: tx.conv2d(tw, padding=1).realize(), runs) / 1e9:7.1f} GFLOP/s", flush=True)

if __name__ == "__main__":
  runs, sizes = int(sys.argv[1]) if len(sys.argv) > 1 else 5, [int(s) for s in sys.argv[2:]] or [520, 1024, 1536, 2048]
  if os.environ.get("C_RENDERER_WORKER"): worker(runs, sizes)
  else:
    for dev in ("CPU:C", "CPU:LLVM"):
      print(f"DEV={dev}", flush=True)
      subprocess.run([sys.executable, __file__, *sys.argv[1:]], env={**os.environ, "DEV": dev, "C_RENDERER_WORKER": "1"}, check=True)
