"""`import tinygrad` wall cost from `python -X importtime`, beside upstream tinygrad's when UPSTREAM_PYTHON names
a python with upstream tinygrad installed. Usage: python bench/import_time.py [what to import, default "tinygrad"]"""
import os, re, subprocess, sys

def import_ms(python:str, stmt:str) -> float:
  # -X importtime lines: "import time: self_us | cumulative_us | name"; unindented names are top-level imports,
  # and everything `import tinygrad.x` pulls in nests under the top-level tinygrad* lines (interpreter startup does not)
  err = subprocess.run([python, "-X", "importtime", "-c", stmt], capture_output=True, text=True, check=True, cwd="/").stderr
  root = stmt.split()[1].split(".")[0]
  return sum(int(m[1]) for m in re.finditer(r"^import time:\s+\d+ \|\s+(\d+) \| (\S+)$", err, re.M) if m[2].split(".")[0] == root) / 1000

if __name__ == "__main__":
  stmt = f"import {sys.argv[1] if len(sys.argv) > 1 else 'tinygrad'}"
  best = min(import_ms(sys.executable, stmt) for _ in range(5))  # best of 5: warm file cache, least noise
  ref = f"{min(import_ms(os.environ['UPSTREAM_PYTHON'], stmt) for _ in range(5)):.1f} ms (measured)" if os.environ.get("UPSTREAM_PYTHON") else \
        "~110-160 ms on this machine (not measured here; set UPSTREAM_PYTHON=/path/to/python with tinygrad 0.14 installed)"
  print(f"{stmt!r}: tg {best:.1f} ms   upstream tinygrad 0.14: {ref}")
