"""CPU speed beside numpy (and torch when importable, and upstream tinygrad when an interpreter for it is given): matmul, conv2d, an
elementwise chain, sum, softmax, cold start. One JSON line per figure, then a table with tg's ratio to the best other and to upstream, and
each figure as a share of this machine's probed peaks (numpy matmul for fp32 FMA throughput, numpy copy for memory bandwidth). Best of
`runs` runs after a warm-up (more for a fast workload, until they add up to MIN_SAMPLE_S), each run ending when the device has finished.
Usage: python bench/suite.py [runs, default 3] [--beam N] [--upstream PYTHON]
  --beam N          adds a column with BEAM=N (and BEAM=N for upstream)
  --upstream PYTHON runs the same workloads, same shapes and timing, in PYTHON (an interpreter with upstream tinygrad 0.14 installed) in a
                    subprocess on its DEV=CPU (UPSTREAM_DEV to change; it compiles with clang, which must be on PATH)
  --worker          (internal) only the tinygrad figures of whatever tinygrad this interpreter imports, as one JSON line"""
import json, os, subprocess, sys, time
import numpy as np
from tinygrad import Tensor, Device
from tinygrad.helpers import Context
from cold_start import cold_start_s

WORKER = "--worker" in sys.argv
try:
  if WORKER: raise ImportError  # a worker times tinygrad only
  import torch
except ImportError: torch = None

def _flag(name:str) -> str|None: return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None
BEAM, UPSTREAM = int(_flag("--beam") or 0), _flag("--upstream")
ARGS = [a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith("--") and sys.argv[i-1] not in ("--beam", "--upstream")]
RUNS = int(ARGS[0]) if ARGS else 3
NOCACHE = {"CACHELEVEL": "0", "CCACHE": "0", "DISABLE_COMPILER_CACHE": "1"}  # tg's and upstream's names for "no compile cache"

# a fast workload is run more often than `runs`: on a shared host the best of 3 runs of a 1.5 ms sum is often one another process
# disturbed (the sum row's torch figure moved 14-35 GB/s between runs of the suite); every column is sampled by the same rule
MIN_SAMPLE_S, MAX_SAMPLES = 0.25, 200

def best(fn, runs=RUNS) -> float:
  """the fastest of at least `runs` runs after a warm-up, more while they add up to under MIN_SAMPLE_S (at most MAX_SAMPLES)"""
  fn()
  ts = []
  while len(ts) < runs or (sum(ts) < MIN_SAMPLE_S and len(ts) < MAX_SAMPLES):
    st = time.perf_counter(); fn(); ts.append(time.perf_counter() - st)
  return min(ts)

def probe() -> dict:
  a = np.random.rand(2048, 2048).astype(np.float32)
  src, dst = np.random.rand(1 << 24).astype(np.float32), np.empty(1 << 24, np.float32)
  return {"fp32 GFLOP/s": 2 * 2048**3 / best(lambda: a @ a) / 1e9, "copy GB/s": 2 * src.nbytes / best(lambda: np.copyto(dst, src)) / 1e9}

def rand(*shape): return np.random.default_rng(0).standard_normal(shape, dtype=np.float32)

def synced(fn):
  """fn, then wait for the device: upstream's devices run kernels asynchronously"""
  def run():
    fn()
    Device[Device.DEFAULT].synchronize()
  return run

def figure(name:str, unit:str, work:float, tg_fn, np_fn, torch_fn=None) -> dict:
  """work: FLOPs or bytes of one run; each fn runs the computation once (inputs already in place)"""
  out = {"bench": name, "unit": unit, "tg": work / best(synced(tg_fn)) / 1e9}
  if BEAM:
    with Context(BEAM=BEAM): out[f"tg BEAM={BEAM}"] = work / best(synced(tg_fn)) / 1e9
  if WORKER: return out
  out["numpy"] = work / best(np_fn) / 1e9
  out["torch"] = work / best(torch_fn) / 1e9 if torch is not None and torch_fn is not None else None
  return out

def matmul(n:int) -> dict:
  a, b = rand(n, n), rand(n, n)
  ta, tb = Tensor(a).realize(), Tensor(b).realize()
  pa, pb = (torch.from_numpy(a), torch.from_numpy(b)) if torch is not None else (None, None)
  return figure(f"matmul fp32 N={n}", "GFLOP/s", 2 * n**3, lambda: (ta @ tb).realize(), lambda: a @ b, lambda: pa @ pb)

def conv2d() -> dict:
  x, w = rand(8, 64, 56, 56), rand(64, 64, 3, 3)
  tx, tw = Tensor(x).realize(), Tensor(w).realize()
  def np_conv():  # im2col + one matmul: the usual numpy way
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # (8, 64, 56, 56, 3, 3)
    return np.einsum("bchwij,ocij->bohw", cols, w, optimize=True)
  px, pw = (torch.from_numpy(x), torch.from_numpy(w)) if torch is not None else (None, None)
  return figure("conv2d b8 64->64 56x56 3x3", "GFLOP/s", 2 * 8 * 64 * 64 * 56 * 56 * 9, lambda: tx.conv2d(tw, padding=1).realize(), np_conv,
                lambda: torch.nn.functional.conv2d(px, pw, padding=1))

def elementwise() -> dict:
  a, b, c = rand(1 << 24), rand(1 << 24), rand(1 << 24)
  ta, tb, tc = (Tensor(x).realize() for x in (a, b, c))
  pa, pb, pc = (torch.from_numpy(x) for x in (a, b, c)) if torch is not None else (None,) * 3
  return figure("(a*b+c).relu()*0.5, 16M", "GB/s", 4 * a.nbytes, lambda: ((ta * tb + tc).relu() * 0.5).realize(),
                lambda: np.maximum(a * b + c, 0) * 0.5, lambda: (pa * pb + pc).relu() * 0.5)

def total() -> dict:
  a = rand(1 << 24)
  ta, pa = Tensor(a).realize(), torch.from_numpy(a) if torch is not None else None
  return figure("sum, 16M", "GB/s", a.nbytes, lambda: ta.sum().realize(), lambda: a.sum(), lambda: pa.sum())

def softmax() -> dict:
  a = rand(4096, 4096)
  ta, pa = Tensor(a).realize(), torch.from_numpy(a) if torch is not None else None
  def np_softmax():
    e = np.exp(a - a.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)
  return figure("softmax 4096x4096", "GB/s", 2 * a.nbytes, lambda: ta.softmax(1).realize(), np_softmax, lambda: pa.softmax(1))

def workloads() -> list[dict]: return [matmul(512), matmul(1024), matmul(2048), conv2d(), elementwise(), total(), softmax()]

def upstream_rows(python:str) -> tuple[dict, float]:
  """{bench: its row} from upstream tinygrad run as a worker in `python`, and its cold start; its own environment (no PYTHONPATH to
  these sources)"""
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DEV")} | {"DEV": os.environ.get("UPSTREAM_DEV", "CPU")}
  cmd = [python, os.path.abspath(__file__), "--worker", str(RUNS)] + (["--beam", str(BEAM)] if BEAM else [])
  p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=os.path.dirname(os.path.abspath(__file__)))
  if p.returncode != 0: raise RuntimeError(f"upstream run failed ({' '.join(cmd)}):\n{p.stderr[-3000:]}")
  rows = {r["bench"]: r for r in json.loads(p.stdout.strip().splitlines()[-1])}
  saved = os.environ.pop("PYTHONPATH", None)
  try: cs = min(cold_start_s(python, NOCACHE | {"DEV": env["DEV"]}) for _ in range(RUNS))
  finally:
    if saved is not None: os.environ["PYTHONPATH"] = saved
  return rows, cs

def ratio(a, b): return a / b if a is not None and b else None

if __name__ == "__main__" and WORKER:
  print(json.dumps(workloads()))
elif __name__ == "__main__":
  peak = probe()
  print(json.dumps({"bench": "probe", **peak}))
  rows = workloads()
  cs = min(cold_start_s(sys.executable, NOCACHE) for _ in range(RUNS))
  rows.append({"bench": "cold start (no compile cache)", "unit": "s", "tg": cs, "numpy": None, "torch": None} | ({f"tg BEAM={BEAM}": None} if BEAM else {}))
  up, up_cs = upstream_rows(UPSTREAM) if UPSTREAM else ({}, None)
  for r in rows:
    u = up.get(r["bench"], {})
    r["upstream"] = up_cs if r["unit"] == "s" else u.get("tg")
    if BEAM: r[f"upstream BEAM={BEAM}"] = u.get(f"tg BEAM={BEAM}")
    others = [v for v in (r["numpy"], r["torch"], r["upstream"]) if v is not None and r["unit"] != "s"]
    r["ratio_to_best_other"] = r["tg"] / max(others) if others else None
    # speed over upstream: its time over ours for cold start, our rate over its rate for the rest
    r["tg_over_upstream"] = ratio(r["upstream"], r["tg"]) if r["unit"] == "s" else ratio(r["tg"], r["upstream"])
    ref = peak["fp32 GFLOP/s"] if r["unit"] == "GFLOP/s" else peak["copy GB/s"] if r["unit"] == "GB/s" else None
    r["tg_share_of_peak"] = r["tg"] / ref if ref else None
    if BEAM and r[f"tg BEAM={BEAM}"] is not None:
      if others: r[f"BEAM={BEAM} ratio_to_best_other"] = r[f"tg BEAM={BEAM}"] / max(others)
      r[f"BEAM={BEAM} over upstream BEAM={BEAM}"] = ratio(r[f"tg BEAM={BEAM}"], r.get(f"upstream BEAM={BEAM}"))
    print(json.dumps(r))
  fmt = lambda v, p=1: "-" if v is None else f"{v:.{p}f}"
  cpu = Device["CPU"].renderer  # the tiles' registers and the streaming-store threshold differ between hosts: figures compare only beside them
  host = f"; tg's CPU renderer: {type(cpu).__name__}, SIMD {cpu.vector_registers} x {cpu.vector_bytes} bytes" + \
         (f", streaming stores past {cpu.nontemporal_bytes >> 20} MB" if getattr(cpu, "nontemporal_bytes", None) else "")
  print(f"\nprobe: numpy fp32 matmul {peak['fp32 GFLOP/s']:.1f} GFLOP/s, numpy copy {peak['copy GB/s']:.1f} GB/s; THREADS={os.environ.get('THREADS', os.cpu_count())}"
        + host
        + (f"; upstream: {UPSTREAM} DEV={os.environ.get('UPSTREAM_DEV', 'CPU')}" if UPSTREAM else ""))
  beam_cols = f" tg BEAM={BEAM} | BEAM / best other | upstream BEAM={BEAM} | BEAM / upstream BEAM |" if BEAM else ""
  print(f"| figure | unit | tg | numpy | torch | upstream | tg / best other | tg / upstream | tg share of probe |{beam_cols}\n"
        f"|---|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|---:|" if BEAM else ""))
  for r in rows:
    p = 3 if r["unit"] == "s" else 1
    beam = (f" {fmt(r[f'tg BEAM={BEAM}'])} | {fmt(r.get(f'BEAM={BEAM} ratio_to_best_other'), 2)} | {fmt(r.get(f'upstream BEAM={BEAM}'))} | "
            f"{fmt(r.get(f'BEAM={BEAM} over upstream BEAM={BEAM}'), 2)} |") if BEAM else ""
    print(f"| {r['bench']} | {r['unit']} | {fmt(r['tg'], p)} | {fmt(r['numpy'])} | {fmt(r['torch'])} | {fmt(r['upstream'], p)} | "
          f"{fmt(r['ratio_to_best_other'], 2)} | {fmt(r['tg_over_upstream'], 2)} | {fmt(r['tg_share_of_peak'], 2)} |{beam}")
