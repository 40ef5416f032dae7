"""Wall time of a first tiny computation in a new process (import, device open, schedule, compile, run), beside upstream
tinygrad's when UPSTREAM_PYTHON names a python with tinygrad 0.14 installed. The compile cache is disabled so every run compiles.
Usage: python bench/cold_start.py [runs, default 5]"""
import os, subprocess, sys, time

STMT = "from tinygrad import Tensor; print((Tensor([1,2,3])*2).sum().item())"

# an installed package has its bytecode compiled (pip does it at install time), so the bytecode cache is allowed and filled by an untimed
# first run: a host with PYTHONDONTWRITEBYTECODE set recompiled every module of these source trees on each run (0.26 s against 0.14)
_warmed:set[str] = set()

def cold_start_s(python:str, env_extra:dict) -> float:
  env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | env_extra
  if python not in _warmed:
    subprocess.run([python, "-c", STMT], capture_output=True, env=env, cwd="/")
    _warmed.add(python)
  st = time.perf_counter()
  out = subprocess.run([python, "-c", STMT], capture_output=True, text=True, env=env, cwd="/")
  et = time.perf_counter() - st
  if out.returncode != 0 or out.stdout.strip() != "12": raise RuntimeError(f"{python} failed: {out.stdout}{out.stderr}")
  return et

if __name__ == "__main__":
  runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
  nocache = {"CACHELEVEL": "0", "CCACHE": "0", "DISABLE_COMPILER_CACHE": "1"}
  ours = sorted(cold_start_s(sys.executable, nocache) for _ in range(runs))
  print(f"tg (CPU, llvmlite, no compile cache): best {ours[0]:.3f} s  median {ours[len(ours)//2]:.3f} s over {runs} runs")
  ours_c = sorted(cold_start_s(sys.executable, {**nocache, "DEV": "CPU:C"}) for _ in range(runs))
  print(f"tg (CPU:C, system cc, no compile cache): best {ours_c[0]:.3f} s  median {ours_c[len(ours_c)//2]:.3f} s")
  if up := os.environ.get("UPSTREAM_PYTHON"):
    theirs = sorted(cold_start_s(up, nocache) for _ in range(runs))
    print(f"upstream tinygrad 0.14: best {theirs[0]:.3f} s  median {theirs[len(theirs)//2]:.3f} s  (ratio tg/upstream {ours[0]/theirs[0]:.2f})")
  else: print("upstream tinygrad 0.14: 1.6-1.9 s here with clang (not measured; set UPSTREAM_PYTHON=/path/to/python with tinygrad 0.14)")
