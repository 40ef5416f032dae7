"""Tensor.topk on float32 rows beside a full sort cut to k (the path topk took for every k past 64 before its radix select) and
torch.topk (2 threads) where torch imports. Each case runs in a new process with the compile cache off (CACHELEVEL=0): `first` is the
first call's wall time (schedule, compile, run), `warm` the best of later calls (bench/sampling.py).
Usage: python bench/topk.py [rows,n,k ...]  (default: the cases below)"""
import os, subprocess, sys

CASES = [(1, 100_000, 100), (1, 100_000, 500), (1, 100_000, 2000), (1, 1 << 20, 100), (1, 1 << 20, 500), (1, 1 << 20, 2000),
         (1024, 4096, 100), (1024, 4096, 512), (64, 50_000, 128)]

def run_case(rows:int, n:int, k:int, how:str) -> str:
  """one case in this process: 'first warm' in seconds"""
  import time
  import numpy as np
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  from sampling import best
  a = np.random.default_rng(0).standard_normal((rows, n) if rows > 1 else (n,)).astype(np.float32)
  if how == "torch":
    import torch
    torch.set_num_threads(2)
    t = torch.from_numpy(a)
    return f"0 {best(lambda: torch.topk(t, k), 5)}"
  from tinygrad import Tensor, Device
  t = Tensor(a).realize()
  def tg():
    if how == "topk": v, i = t.topk(k)
    else: v, i = (x[..., :k] for x in t.sort(-1, descending=True))
    Tensor.realize(v, i)
    Device[t.device].synchronize()
  st = time.perf_counter()
  tg()
  return f"{time.perf_counter() - st} {best(tg, 5)}"

def measure(rows:int, n:int, k:int, how:str) -> tuple[float, float]|None:
  env = os.environ | {"CACHELEVEL": "0"}
  out = subprocess.run([sys.executable, __file__, "--case", str(rows), str(n), str(k), how], capture_output=True, text=True, env=env)
  if out.returncode != 0:
    if how == "torch": return None
    raise RuntimeError(f"{how} {rows}x{n} k={k} failed:\n{out.stderr}")
  first, warm = map(float, out.stdout.split()[-2:])
  return first, warm

if __name__ == "__main__":
  if sys.argv[1:2] == ["--case"]:
    print(run_case(*map(int, sys.argv[2:5]), sys.argv[5]))
    sys.exit(0)
  cases = [tuple(map(int, c.split(","))) for c in sys.argv[1:]] or CASES
  print(f"{'case':>22} | {'topk warm ms':>12} {'first s':>8} | {'sort+cut warm ms':>16} {'first s':>8} | {'torch ms':>8}")
  for rows, n, k in cases:
    tk, so, th = measure(rows, n, k, "topk"), measure(rows, n, k, "sort"), measure(rows, n, k, "torch")
    print(f"{f'{rows}x{n} k={k}':>22} | {tk[1]*1e3:12.2f} {tk[0]:8.2f} | {so[1]*1e3:16.2f} {so[0]:8.2f} | "
          f"{f'{th[1]*1e3:.3f}' if th else '-':>8}", flush=True)
