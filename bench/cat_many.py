"""Cat and stack of many inputs beside torch: the first call (a new process, no compile cache: what a data loader's first batch pays)
and the warm call (best of `runs`), each result checked against numpy. Usage: python bench/cat_many.py [runs, default 10]
Cases: stack of 32 and 128 (3, 32, 32) images, cat of 100 (64, 64) along axis 0 and along axis 1."""
import json, os, subprocess, sys, time
import numpy as np

CASES = [("stack", 32, (3, 32, 32), 0), ("stack", 128, (3, 32, 32), 0), ("cat", 100, (64, 64), 0), ("cat", 100, (64, 64), 1)]

def one(op:str, n:int, shape:tuple, dim:int, runs:int) -> dict:
  from tinygrad import Tensor, Device
  xs = [np.random.default_rng(i).standard_normal(shape, dtype=np.float32) for i in range(n)]
  ts = [Tensor(x).realize() for x in xs]
  def run():
    st = time.perf_counter(); out = getattr(Tensor, op)(*ts, dim=dim).realize(); Device["CPU"].synchronize()
    return time.perf_counter() - st, out
  first, out = run()
  np.testing.assert_array_equal(out.numpy(), getattr(np, "stack" if op == "stack" else "concatenate")(xs, dim))
  warm = min(run()[0] for _ in range(runs))
  row = {"case": f"{op} {n}x{shape} dim {dim}", "first_s": round(first, 3), "warm_ms": round(warm * 1e3, 3)}
  try:
    import torch
    torch.set_num_threads(2)
    ps = [torch.from_numpy(x) for x in xs]
    row["torch_ms"] = round(min(_timed(lambda: getattr(torch, op)(ps, dim=dim)) for _ in range(runs)) * 1e3, 3)
  except ImportError: pass
  return row

def _timed(fn) -> float:
  st = time.perf_counter(); fn(); return time.perf_counter() - st

if __name__ == "__main__":
  if sys.argv[1:2] == ["--case"]:
    op, n, shape, dim, runs = sys.argv[2], int(sys.argv[3]), tuple(json.loads(sys.argv[4])), int(sys.argv[5]), int(sys.argv[6])
    print(json.dumps({"bench": "cat_many", **one(op, n, shape, dim, runs)}))
  else:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    env = {**os.environ, "CACHELEVEL": "0"}  # each case's first call compiles
    for op, n, shape, dim in CASES:
      subprocess.run([sys.executable, __file__, "--case", op, str(n), json.dumps(shape), str(dim), str(runs)], env=env, check=True)
