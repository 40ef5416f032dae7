"""Why the eager `sum, 16M` row of bench/suite.py stays under torch on a 2-core host: the python of a realize runs on caches that the
kernel's 64 MB stream emptied. Two measurements:
  sweep  a small cached `t.sum().realize()` (1024 floats: its python is nearly all of its time) timed right after numpy reads an array
         of 0.5 ... 64 MB, after a 1.2 ms sleep, after 1.2 ms of python spinning, and warm (best and median us)
  hints  a C sum of 16M floats on two threads (each one half; the system C compiler, -O2 -march=native), plain and with cache hints that
         keep the streamed lines out of the caller's L2 (prefetchnta ahead of the loads; clflushopt or cldemote of each line read,
         where the CPU has them), and the same small realize right after each: the kernel's time against the python it leaves cold
Usage: python bench/cold_python.py [sweep|hints|both, default both] [rounds, default 100]"""
import ctypes, mmap, os, pathlib, subprocess, sys, tempfile, time
import numpy as np
from tinygrad import Tensor

MODE = sys.argv[1] if len(sys.argv) > 1 else "both"
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 100
N = 1 << 24

small = Tensor(np.ones(1024, np.float32)).realize()
def realize_us() -> float:
  st = time.perf_counter()
  small.sum().realize()
  return (time.perf_counter() - st) * 1e6

def stats(ts:list[float]) -> str:
  ts = sorted(ts)
  return f"best {ts[0]:7.1f}  median {ts[len(ts)//2]:7.1f}"

def spin(s:float):
  end = time.perf_counter() + s
  while time.perf_counter() < end: pass

def sweep():
  arrays = {mb: np.random.default_rng(0).random(int(mb * (1 << 18)), dtype=np.float32) for mb in (0.5, 1, 2, 4, 8, 16, 32, 64)}
  before = {"warm": lambda: None, "sleep 1.2 ms": lambda: time.sleep(0.0012), "spin 1.2 ms": lambda: spin(0.0012)}
  before |= {f"numpy sum of {mb} MB": a.sum for mb, a in arrays.items()}
  for _ in range(5): realize_us()
  got: dict[str, list[float]] = {k: [] for k in before}
  for _ in range(ROUNDS):
    for k, f in before.items():
      f()
      got[k].append(realize_us())
  print("small sum().realize() in us, right after:")
  for k, ts in got.items(): print(f"  {k:22s} {stats(ts)}")

C_SRC = r"""
#include <pthread.h>
#include <immintrin.h>
typedef struct { const float *p; long n; int mode; float out; } job;
static void *run(void *a) {
  job *j = a; float acc[64] = {0}; const float *p = j->p;
  for (long i = 0; i < j->n; i += 64) {
    if (j->mode == 1) for (int k = 0; k < 64; k += 16) _mm_prefetch((const char *)(p + i + 2048 + k), _MM_HINT_NTA);
    for (int k = 0; k < 64; k++) acc[k] += p[i + k];
#ifdef __CLFLUSHOPT__
    if (j->mode == 2 && i >= 1024) for (int k = 0; k < 64; k += 16) _mm_clflushopt((void *)(p + i - 1024 + k));
#endif
#ifdef __CLDEMOTE__
    if (j->mode == 3 && i >= 1024) for (int k = 0; k < 64; k += 16) _mm_cldemote((void *)(p + i - 1024 + k));
#endif
  }
  float s = 0; for (int k = 0; k < 64; k++) s += acc[k]; j->out = s; return 0;
}
float sum2(const float *p, long n, int mode) {
  job a = {p, n/2, mode, 0}, b = {p + n/2, n/2, mode, 0}; pthread_t t;
  pthread_create(&t, 0, run, &b); run(&a); pthread_join(t, 0); return a.out + b.out;
}
int has(int mode) {
#ifdef __CLFLUSHOPT__
  if (mode == 2) return 1;
#endif
#ifdef __CLDEMOTE__
  if (mode == 3) return 1;
#endif
  return mode < 2;
}
"""

def hints():
  d = pathlib.Path(tempfile.mkdtemp())
  (d / "sum.c").write_text(C_SRC)
  cc = next((c for c in ("clang", "cc", "gcc") if subprocess.run(["which", c], capture_output=True).returncode == 0), None)
  if cc is None: raise SystemExit("hints needs a C compiler (clang, cc or gcc) on PATH")
  subprocess.run([cc, "-O2", "-march=native", "-ffast-math", "-shared", "-fPIC", "-o", str(d / "sum.so"), str(d / "sum.c"), "-lpthread"],
                 check=True)
  lib = ctypes.CDLL(str(d / "sum.so"))
  lib.sum2.restype, lib.sum2.argtypes = ctypes.c_float, [ctypes.c_void_p, ctypes.c_long, ctypes.c_int]
  m = mmap.mmap(-1, (N + 4096) * 4, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
  if hasattr(mmap, "MADV_HUGEPAGE"): m.madvise(mmap.MADV_HUGEPAGE)
  a = np.frombuffer(m, np.float32)
  a[:] = np.random.default_rng(0).random(a.size, dtype=np.float32)
  ref = float(a[:N].astype(np.float64).sum())
  for _ in range(5): realize_us()
  print(f"C sum of {N} floats on two threads ({cc}), then a small sum().realize(); us:")
  for mode, name in enumerate(("plain loads", "prefetchnta ahead", "clflushopt behind", "cldemote behind")):
    if not lib.has(mode): print(f"  {name:18s} (this CPU or compiler lacks it)"); continue
    ks, ps = [], []
    for _ in range(ROUNDS):
      st = time.perf_counter()
      got = lib.sum2(a.ctypes.data, N, mode)
      ks.append((time.perf_counter() - st) * 1e6)
      ps.append(realize_us())
    assert abs(got - ref) <= 1e-3 * abs(ref), (name, got, ref)
    print(f"  {name:18s} kernel {stats(ks)}   python after it {stats(ps)}")

if __name__ == "__main__":
  if MODE in ("sweep", "both"): sweep()
  if MODE in ("hints", "both"): hints()
