"""CPU speed beside numpy (and torch when importable, and upstream tinygrad when an interpreter for it is given): matmul, conv2d, an
elementwise chain, sum, softmax, cold start. One JSON line per figure, then a table with tg's ratio to the best other and to upstream, and
each figure as a share of this machine's probed peaks (numpy matmul for fp32 FMA throughput, numpy copy for memory bandwidth). Best of
`runs` runs after a warm-up (more for a fast workload, until they add up to MIN_SAMPLE_S), each run ending when the device has finished;
a figure's columns are timed in turn, in ROUNDS blocks each.
Usage: python bench/suite.py [runs, default 3] [--beam N] [--upstream PYTHON]
  --beam N          adds a column with BEAM=N (and BEAM=N for upstream)
  --upstream PYTHON runs the same workloads, same shapes and timing, in PYTHON (an interpreter with upstream tinygrad 0.14 installed) in a
                    subprocess on its DEV=CPU (UPSTREAM_DEV to change; it compiles with clang, which must be on PATH)
  --worker          (internal) times the tinygrad columns of whatever tinygrad this interpreter imports, a block at a time as asked on
                    stdin (upstream's columns take their turns in the rounds)"""
import json, os, subprocess, sys, tempfile, time
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
# the columns of one figure are sampled in turn, ROUNDS blocks each: this host's memory bandwidth drifts by 1.5x over minutes (other
# guests' load), and a column timed in a block of its own caught a quiet or a busy spell alone (torch's sum read 32 and 54 GB/s in two
# runs of the suite while tg's read 41-45). Upstream's columns, in a worker process, take their turns in the same rounds
ROUNDS = 5
# before each block, a pause: the last column's threads still spin for a while after its run (tg's pool ~1-2 ms, numpy's OpenBLAS
# threads a large part of a second), and on 2 cores they take the next column's cores (torch's matmul 512 read 23.5 GFLOP/s in blocks
# right after numpy's with no pause, 87-142 for 1024-2048 after a 50 ms one; ~200 alone)
PAUSE_S = 0.3

def timed_block(fn, runs:int=RUNS) -> float:
  """the fastest of one block's runs of fn: a share of `runs` (at least one), more while they add up to under a share of MIN_SAMPLE_S"""
  ts, least, budget = [], -(-runs // ROUNDS), MIN_SAMPLE_S / ROUNDS
  time.sleep(PAUSE_S)
  while len(ts) < least or (sum(ts) < budget and len(ts) < MAX_SAMPLES // ROUNDS):
    st = time.perf_counter(); fn(); ts.append(time.perf_counter() - st)
  return min(ts)

def best(fn, runs=RUNS) -> float:
  """the fastest of at least `runs` runs after a warm-up, more while they add up to under MIN_SAMPLE_S (the probe's rule)"""
  fn()
  return min(timed_block(fn, runs) for _ in range(ROUNDS))

def probe() -> dict:
  a = np.random.rand(2048, 2048).astype(np.float32)
  src, dst = np.random.rand(1 << 24).astype(np.float32), np.empty(1 << 24, np.float32)
  return {"fp32 GFLOP/s": 2 * 2048**3 / best(lambda: a @ a) / 1e9, "copy GB/s": 2 * src.nbytes / best(lambda: np.copyto(dst, src)) / 1e9}

def rand(*shape): return np.random.default_rng(0).standard_normal(shape, dtype=np.float32)

def synced(fn, beam:int=0):
  """fn, then wait for the device (upstream's devices run kernels asynchronously); under BEAM=beam when given"""
  def run():
    fn()
    Device[Device.DEFAULT].synchronize()
  def run_beam():
    with Context(BEAM=beam): run()
  return run_beam if beam else run

def tg_columns(tg_fn) -> dict:
  return {"tg": synced(tg_fn)} | ({f"tg BEAM={BEAM}": synced(tg_fn, BEAM)} if BEAM else {})

# each workload: (name, unit, work (FLOPs or bytes of one run), setup); setup() places the inputs and returns {column: fn}, each fn
# running the computation once
def matmul(n:int):
  def setup():
    a, b = rand(n, n), rand(n, n)
    ta, tb = Tensor(a).realize(), Tensor(b).realize()
    pa, pb = (torch.from_numpy(a), torch.from_numpy(b)) if torch is not None else (None, None)
    return tg_columns(lambda: (ta @ tb).realize()) | {"numpy": lambda: a @ b, "torch": lambda: pa @ pb}
  return f"matmul fp32 N={n}", "GFLOP/s", 2 * n**3, setup

def conv2d():
  def setup():
    x, w = rand(8, 64, 56, 56), rand(64, 64, 3, 3)
    tx, tw = Tensor(x).realize(), Tensor(w).realize()
    def np_conv():  # im2col + one matmul: the usual numpy way
      xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
      cols = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # (8, 64, 56, 56, 3, 3)
      return np.einsum("bchwij,ocij->bohw", cols, w, optimize=True)
    px, pw = (torch.from_numpy(x), torch.from_numpy(w)) if torch is not None else (None, None)
    return tg_columns(lambda: tx.conv2d(tw, padding=1).realize()) | {"numpy": np_conv,
                                                                      "torch": lambda: torch.nn.functional.conv2d(px, pw, padding=1)}
  return "conv2d b8 64->64 56x56 3x3", "GFLOP/s", 2 * 8 * 64 * 64 * 56 * 56 * 9, setup

def elementwise():
  def setup():
    a, b, c = rand(1 << 24), rand(1 << 24), rand(1 << 24)
    ta, tb, tc = (Tensor(x).realize() for x in (a, b, c))
    pa, pb, pc = (torch.from_numpy(x) for x in (a, b, c)) if torch is not None else (None,) * 3
    return tg_columns(lambda: ((ta * tb + tc).relu() * 0.5).realize()) | {"numpy": lambda: np.maximum(a * b + c, 0) * 0.5,
                                                                           "torch": lambda: (pa * pb + pc).relu() * 0.5}
  return "(a*b+c).relu()*0.5, 16M", "GB/s", 4 * 4 * (1 << 24), setup

def total():
  def setup():
    a = rand(1 << 24)
    ta, pa = Tensor(a).realize(), torch.from_numpy(a) if torch is not None else None
    return tg_columns(lambda: ta.sum().realize()) | {"numpy": lambda: a.sum(), "torch": lambda: pa.sum()}
  return "sum, 16M", "GB/s", 4 * (1 << 24), setup

def softmax():
  def setup():
    a = rand(4096, 4096)
    ta, pa = Tensor(a).realize(), torch.from_numpy(a) if torch is not None else None
    def np_softmax():
      e = np.exp(a - a.max(1, keepdims=True))
      return e / e.sum(1, keepdims=True)
    return tg_columns(lambda: ta.softmax(1).realize()) | {"numpy": np_softmax, "torch": lambda: pa.softmax(1)}
  return "softmax 4096x4096", "GB/s", 2 * 4 * 4096 * 4096, setup

WORKLOADS = [matmul(512), matmul(1024), matmul(2048), conv2d(), elementwise(), total(), softmax()]

class Upstream:
  """upstream tinygrad's columns, timed by this file run as a worker in `python` (its own environment: no PYTHONPATH to these sources),
  one block at a time on request, so that they take their turns in each figure's rounds"""
  def __init__(self, python:str):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DEV")} | {"DEV": os.environ.get("UPSTREAM_DEV", "CPU")}
    self.python, self.dev = python, env["DEV"]
    self.cmd = [python, os.path.abspath(__file__), "--worker", str(RUNS)] + (["--beam", str(BEAM)] if BEAM else [])
    self.errors = tempfile.TemporaryFile("w+")  # a file, not a pipe: a BEAM search's progress bars would fill a pipe nobody reads
    self.p = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, text=True, env=env,
                              cwd=os.path.dirname(os.path.abspath(__file__)))
  def ask(self, *words) -> list[str]:
    self.p.stdin.write(" ".join(map(str, words)) + "\n")
    self.p.stdin.flush()
    if not (line := self.p.stdout.readline()):
      self.errors.seek(0)
      raise RuntimeError(f"upstream worker died ({' '.join(self.cmd)}):\n{self.errors.read()[-3000:]}")
    return line.split()
  def setup(self, i:int) -> list[str]: return self.ask("setup", i)  # its column names (with underscores for spaces)
  def block(self, i:int, column:str) -> float: return float(self.ask("block", i, column)[0])
  def cold_start(self) -> float:
    self.p.stdin.close()
    self.p.wait()
    saved = os.environ.pop("PYTHONPATH", None)
    try: return min(cold_start_s(self.python, NOCACHE | {"DEV": self.dev}) for _ in range(RUNS))
    finally:
      if saved is not None: os.environ["PYTHONPATH"] = saved

def worker():
  """upstream's side of Upstream: `setup i` places workload i and warms its tinygrad columns, `block i column` times one block"""
  columns: dict = {}
  for line in sys.stdin:
    words = line.split()
    if words[0] == "setup":
      columns = {k.replace(" ", "_"): fn for k, fn in WORKLOADS[int(words[1])][3]().items() if k.startswith("tg")}
      for fn in columns.values(): fn()
      print(" ".join(columns), flush=True)
    else: print(timed_block(columns[words[2]]), flush=True)

def figure(i:int, upstream:Upstream|None) -> dict:
  """workload i's figures (work over the fastest run, in units of 1e9) with every column, upstream's too, timed in turn each round"""
  name, unit, work, setup = WORKLOADS[i]
  columns = {k: fn for k, fn in setup().items() if k != "torch" or torch is not None}
  for fn in columns.values(): fn()
  theirs = upstream.setup(i) if upstream else []
  ours_best, theirs_best = {k: float("inf") for k in columns}, {k: float("inf") for k in theirs}
  for _ in range(ROUNDS):
    for k, fn in columns.items(): ours_best[k] = min(ours_best[k], timed_block(fn))
    for k in theirs: theirs_best[k] = min(theirs_best[k], upstream.block(i, k))
  rate = lambda t: work / t / 1e9
  return {"bench": name, "unit": unit, "torch": None} | {k: rate(t) for k, t in ours_best.items()} | \
         {k.replace("tg", "upstream", 1).replace("_", " "): rate(t) for k, t in theirs_best.items()}

def ratio(a, b): return a / b if a is not None and b else None

if __name__ == "__main__" and WORKER:
  worker()
elif __name__ == "__main__":
  peak = probe()
  print(json.dumps({"bench": "probe", **peak}))
  upstream = Upstream(UPSTREAM) if UPSTREAM else None
  rows = [figure(i, upstream) for i in range(len(WORKLOADS))]
  up_cs = upstream.cold_start() if upstream else None
  cs = min(cold_start_s(sys.executable, NOCACHE) for _ in range(RUNS))
  rows.append({"bench": "cold start (no compile cache)", "unit": "s", "tg": cs, "numpy": None, "torch": None} | ({f"tg BEAM={BEAM}": None} if BEAM else {}))
  for r in rows:
    if r["unit"] == "s": r["upstream"] = up_cs
    r.setdefault("upstream", None)
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
