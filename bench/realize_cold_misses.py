"""The eager realize's cold python in cache lines (deterministic, unlike this VM's wall clock; see realize_cold.py for the wall clock):
callgrind simulates this host's L1s and one core's 2 MB L2 as its last level, each call runs right after numpy sweeps 64 MB (as the suite's
`sum, 16M` kernel does), and only the calls are collected (callgrind's client requests, from a small library built here with the host's C
compiler and valgrind's headers). LL = lines the call fetched from beyond L2 (code and data), per call: (12 calls - 2 calls) / 10.
  sum    t.sum().realize() on 1024 floats: the eager python alone, cold
  sum16  the same on 16M floats (the suite's row): its kernel's own ~1048576 lines (64 MB) plus the python around its two kernels
Usage: python bench/realize_cold_misses.py [sum|sum16 ...]   (runs valgrind; the worker mode is internal)"""
import ctypes, os, subprocess, sys, tempfile

CG = "#include <valgrind/callgrind.h>\nvoid cg_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }\n"
EVENTS = "Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw".split()

def worker(lib:str, case:str, n:int):
  import numpy as np
  from tinygrad import Tensor, Device
  toggle = ctypes.CDLL(lib).cg_toggle
  t = Tensor(np.random.default_rng(0).standard_normal(1024 if case == "sum" else 1 << 24, dtype=np.float32)).realize()
  big, dev = np.ones(1 << 24, np.float32), Device[Device.DEFAULT]
  for _ in range(5): t.sum().realize()
  for _ in range(n):
    big.sum()
    toggle()
    t.sum().realize()
    dev.synchronize()
    toggle()

def collected(lib:str, case:str, n:int, out:str) -> list[int]:
  cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--cache-sim=yes", "--LL=2097152,16,64", "--D1=49152,12,64",
         "--I1=65536,16,64", f"--callgrind-out-file={out}", sys.executable, os.path.abspath(__file__), "--worker", lib, case, str(n)]
  env = os.environ | {"PYTHONHASHSEED": "0", "THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
  if (p := subprocess.run(cmd, capture_output=True, text=True, env=env)).returncode != 0: raise RuntimeError(f"valgrind failed:\n{p.stderr[-3000:]}")
  return next([int(x) for x in l.split()[1:]] for l in open(out) if l.startswith("summary:"))

if __name__ == "__main__":
  if sys.argv[1:2] == ["--worker"]: worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
  else:
    with tempfile.TemporaryDirectory() as d:
      lib = os.path.join(d, "libcg.so")
      subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-x", "c", "-", "-o", lib], input=CG.encode(), check=True)
      subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", lib, "sum", "1"], check=True)  # compiled, cached
      for case in sys.argv[1:] or ["sum", "sum16"]:
        a, b = collected(lib, case, 2, os.path.join(d, "a")), collected(lib, case, 12, os.path.join(d, "b"))
        per = {e: (y - x) / 10 for e, x, y in zip(EVENTS, a, b)}
        print(case, {"LL": per["ILmr"] + per["DLmr"] + per["DLmw"], **{e: per[e] for e in ("Ir", "ILmr", "DLmr", "DLmw")}})
