"""CPU speed beside numpy (and torch when importable): matmul, conv2d, an elementwise chain, sum, softmax, cold start. One JSON line
per figure, then a table with tg's ratio to the best other and each figure as a share of this machine's probed peaks (numpy matmul
for fp32 FMA throughput, numpy copy for memory bandwidth). Best of a few runs after a warm-up. Usage: python bench/suite.py [runs, default 3]"""
import json, os, sys, time
import numpy as np
from tinygrad import Tensor
from cold_start import cold_start_s

try: import torch
except ImportError: torch = None

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
BEAM = int(sys.argv[sys.argv.index("--beam") + 1]) if "--beam" in sys.argv else 0
if BEAM: ARGS.remove(str(BEAM))
RUNS = int(ARGS[0]) if ARGS else 3

def best(fn, runs=RUNS) -> float:
  fn()
  ts = []
  for _ in range(runs):
    st = time.perf_counter(); fn(); ts.append(time.perf_counter() - st)
  return min(ts)

def probe() -> dict:
  a = np.random.rand(2048, 2048).astype(np.float32)
  src, dst = np.random.rand(1 << 24).astype(np.float32), np.empty(1 << 24, np.float32)
  return {"fp32 GFLOP/s": 2 * 2048**3 / best(lambda: a @ a) / 1e9, "copy GB/s": 2 * src.nbytes / best(lambda: np.copyto(dst, src)) / 1e9}

def rand(*shape): return np.random.default_rng(0).standard_normal(shape, dtype=np.float32)

def figure(name:str, unit:str, work:float, tg_fn, np_fn, torch_fn=None) -> dict:
  """work: FLOPs or bytes of one run; each fn runs the computation once (inputs already in place)"""
  out = {"bench": name, "unit": unit, "tg": work / best(tg_fn) / 1e9, "numpy": work / best(np_fn) / 1e9}
  if BEAM:
    with Context(BEAM=BEAM): out[f"tg BEAM={BEAM}"] = work / best(tg_fn) / 1e9
  out["torch"] = work / best(torch_fn) / 1e9 if torch is not None and torch_fn is not None else None
  return out

def matmul(n:int) -> dict:
  a, b = rand(n, n), rand(n, n)
  ta, tb = Tensor(a).realize(), Tensor(b).realize()
  pa, pb = (torch.from_numpy(a), torch.from_numpy(b)) if torch else (None, None)
  return figure(f"matmul fp32 N={n}", "GFLOP/s", 2 * n**3, lambda: (ta @ tb).realize(), lambda: a @ b, lambda: pa @ pb)

def conv2d() -> dict:
  x, w = rand(8, 64, 56, 56), rand(64, 64, 3, 3)
  tx, tw = Tensor(x).realize(), Tensor(w).realize()
  def np_conv():  # im2col + one matmul: the usual numpy way
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # (8, 64, 56, 56, 3, 3)
    return np.einsum("bchwij,ocij->bohw", cols, w, optimize=True)
  px, pw = (torch.from_numpy(x), torch.from_numpy(w)) if torch else (None, None)
  return figure("conv2d b8 64->64 56x56 3x3", "GFLOP/s", 2 * 8 * 64 * 64 * 56 * 56 * 9, lambda: tx.conv2d(tw, padding=1).realize(), np_conv,
                lambda: torch.nn.functional.conv2d(px, pw, padding=1))

def elementwise() -> dict:
  a, b, c = rand(1 << 24), rand(1 << 24), rand(1 << 24)
  ta, tb, tc = (Tensor(x).realize() for x in (a, b, c))
  pa, pb, pc = (torch.from_numpy(x) for x in (a, b, c)) if torch else (None,) * 3
  return figure("(a*b+c).relu()*0.5, 16M", "GB/s", 4 * a.nbytes, lambda: ((ta * tb + tc).relu() * 0.5).realize(),
                lambda: np.maximum(a * b + c, 0) * 0.5, lambda: (pa * pb + pc).relu() * 0.5)

def total() -> dict:
  a = rand(1 << 24)
  ta, pa = Tensor(a).realize(), torch.from_numpy(a) if torch else None
  return figure("sum, 16M", "GB/s", a.nbytes, lambda: ta.sum().realize(), lambda: a.sum(), lambda: pa.sum())

def softmax() -> dict:
  a = rand(4096, 4096)
  ta, pa = Tensor(a).realize(), torch.from_numpy(a) if torch else None
  def np_softmax():
    e = np.exp(a - a.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)
  return figure("softmax 4096x4096", "GB/s", 2 * a.nbytes, lambda: ta.softmax(1).realize(), np_softmax, lambda: pa.softmax(1))

if __name__ == "__main__":
  peak = probe()
  print(json.dumps({"bench": "probe", **peak}))
  rows = [matmul(512), matmul(1024), matmul(2048), conv2d(), elementwise(), total(), softmax()]
  nocache = {"CACHELEVEL": "0"}
  cs = min(cold_start_s(sys.executable, nocache) for _ in range(RUNS))
  rows.append({"bench": "cold start (no compile cache)", "unit": "s", "tg": cs, "numpy": None, "torch": None, f"tg BEAM={BEAM}": None})
  for r in rows:
    others = [v for v in (r["numpy"], r["torch"]) if v is not None]
    r["ratio_to_best_other"] = r["tg"] / max(others) if others else None
    ref = peak["fp32 GFLOP/s"] if r["unit"] == "GFLOP/s" else peak["copy GB/s"] if r["unit"] == "GB/s" else None
    r["tg_share_of_peak"] = r["tg"] / ref if ref else None
    if BEAM and r[f"tg BEAM={BEAM}"] is not None and others: r[f"BEAM={BEAM} ratio_to_best_other"] = r[f"tg BEAM={BEAM}"] / max(others)
    print(json.dumps(r))
  fmt = lambda v, p=1: "-" if v is None else f"{v:.{p}f}"
  print(f"\nprobe: numpy fp32 matmul {peak['fp32 GFLOP/s']:.1f} GFLOP/s, numpy copy {peak['copy GB/s']:.1f} GB/s; THREADS={os.environ.get('THREADS', os.cpu_count())}")
  beam_cols = f" tg BEAM={BEAM} | BEAM / best other |" if BEAM else ""
  print(f"| figure | unit | tg | numpy | torch | tg / best other | tg share of probe |{beam_cols}\n|---|---|---:|---:|---:|---:|---:|" +
        ("---:|---:|" if BEAM else ""))
  for r in rows:
    beam = f" {fmt(r[f'tg BEAM={BEAM}'])} | {fmt(r.get(f'BEAM={BEAM} ratio_to_best_other'), 2)} |" if BEAM else ""
    print(f"| {r['bench']} | {r['unit']} | {fmt(r['tg'], 3 if r['unit'] == 's' else 1)} | {fmt(r['numpy'])} | {fmt(r['torch'])} | "
          f"{fmt(r['ratio_to_best_other'], 2)} | {fmt(r['tg_share_of_peak'], 2)} |{beam}")
