"""Small eager ops, where the python around a kernel (building the graph, the schedule cache's hit, buffers, the launch) is most of a
call: op_survey's permute, embedding and softmax rows and a 16-float add, per call (realized, device synchronized), beside torch (needed: the oracle).
With source trees as arguments each round runs every tree in a new process, alternating (PYTHONPATH at the tree's packages/*/src), so
trees compare on the same machine load; each figure is the best and median over all rounds' calls.
Usage: python bench/eager_small_ops.py [TREE...]   (ROUNDS=6, CALLS=200 per op per round; no tree: this checkout, one process)"""
import glob, json, os, statistics, subprocess, sys, time

CASES = ("permute 0,2,1,3 8x256x8x64", "embedding 32000x512, 2048 ids", "softmax last axis 2048x512", "(a+b) 16 floats")

def measure(calls:int) -> dict[str, dict[str, list[float]]]:
  """{case: {"tg": microseconds per call, "torch": ...}}, every case checked against torch first"""
  import numpy as np
  from tinygrad import Tensor, Device
  rng = np.random.default_rng(0)
  arrays = {CASES[0]: (rng.standard_normal((8, 256, 8, 64), dtype=np.float32),),
            CASES[1]: (rng.standard_normal((32000, 512), dtype=np.float32), rng.integers(0, 32000, 2048).astype(np.int32)),
            CASES[2]: (rng.standard_normal((2048, 512), dtype=np.float32),),
            CASES[3]: (rng.standard_normal(16, dtype=np.float32), rng.standard_normal(16, dtype=np.float32))}
  tg_fns = {CASES[0]: lambda x: x.permute(0, 2, 1, 3).contiguous(), CASES[1]: lambda w, i: w[i], CASES[2]: lambda x: x.softmax(-1),
            CASES[3]: lambda a, b: a + b}
  dev, out = Device[Device.DEFAULT], {}
  import torch
  for name, arrs in arrays.items():
    ts = [Tensor(a).realize() for a in arrs]
    runs = {"tg": lambda: (tg_fns[name](*ts).realize(), dev.synchronize())}
    pts = [torch.from_numpy(a) if a.dtype != np.int32 else torch.from_numpy(a).long() for a in arrs]  # torch indexes with int64
    runs["torch"] = lambda: tg_fns[name](*pts)
    np.testing.assert_allclose(tg_fns[name](*ts).numpy(), runs["torch"]().numpy(), rtol=1e-5, atol=1e-6)
    times: dict[str, list[float]] = {k: [] for k in runs}
    for f in runs.values():
      for _ in range(5): f()
    for _ in range(max(1, calls // 10)):  # blocks of 10 calls, alternating: each side's threads are awake, as in a loop of one call
      for k, f in runs.items():
        for _ in range(10):
          st = time.perf_counter(); f(); times[k].append((time.perf_counter() - st) * 1e6)
    out[name] = times
  return out

def run_tree(tree:str, calls:int) -> dict:
  env = {**os.environ, "PYTHONPATH": ":".join(sorted(glob.glob(f"{tree}/packages/*/src")))}
  o = subprocess.run([sys.executable, __file__, "--child", str(calls)], capture_output=True, text=True, env=env, cwd=os.path.dirname(__file__))
  if o.returncode: raise RuntimeError(f"{tree}: {o.stderr[-2000:]}")
  return json.loads(o.stdout.strip().splitlines()[-1])

def report(label:str, res:dict):
  for name, sides in res.items():
    fig = {k: (round(min(v), 1), round(statistics.median(v), 1)) for k, v in sides.items()}
    print(json.dumps({"bench": "eager_small_ops", "tree": label, "case": name, **{f"{k}_us_best_median": v for k, v in fig.items()}}))

if __name__ == "__main__":
  calls = int(os.environ.get("CALLS", 200))
  if sys.argv[1:2] == ["--child"]:
    print(json.dumps(measure(int(sys.argv[2]))))
  elif len(sys.argv) > 1:
    trees, res = sys.argv[1:], {}
    for _ in range(int(os.environ.get("ROUNDS", 6))):
      for t in trees:
        for name, sides in run_tree(t, calls).items():
          for k, v in sides.items(): res.setdefault(t, {}).setdefault(name, {}).setdefault(k, []).extend(v)
    for t in trees: report(t, res[t])
  else: report("here", measure(calls))
