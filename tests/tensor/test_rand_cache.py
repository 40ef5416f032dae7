"""Random numbers compile once: the threefry key (seed, call number) is a kernel input, so neither a new seed, a new call nor a new
process compiles the rand kernels again, and the disk cache does not grow per run."""
import json, os, sqlite3, subprocess, sys

SCRIPT = """
import json, sys
from tinygrad import Tensor, Device
compiler, compiles = type(Device["CPU"].compiler), []
compile_fn = compiler.compile
compiler.compile = lambda self, src: compiles.append(src) or compile_fn(self, src)
Tensor.manual_seed(int(sys.argv[1]))
first = Tensor.rand(16).numpy().tolist()
after_first = len(compiles)
second = Tensor.rand(16).numpy().tolist()
print(json.dumps({"first": first, "second": second, "compiles": [after_first, len(compiles)]}))
"""

def run(seed:int, cachedb:str) -> dict:
  env = {**os.environ, "CACHEDB": cachedb, "DEV": "CPU"}
  out = subprocess.run([sys.executable, "-c", SCRIPT, str(seed)], capture_output=True, text=True, env=env, timeout=120)
  assert out.returncode == 0, out.stderr
  return json.loads(out.stdout.strip().splitlines()[-1])

def entries(cachedb:str) -> set[tuple[str, str]]:
  with sqlite3.connect(cachedb) as conn:
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {(t, k) for t in tables for (k,) in conn.execute(f'SELECT key FROM "{t}"')}

def test_rand_compiles_once_across_seeds_and_processes(tmp_path):
  cachedb = str(tmp_path / "cache.db")
  one = run(1, cachedb)
  # a fresh cache: the first rand compiles its kernels, the second call (another key) compiles nothing
  assert one["compiles"][0] > 0 and one["compiles"][1] == one["compiles"][0]
  after_one = entries(cachedb)
  assert len(after_one) == one["compiles"][0]
  two = run(2, cachedb)
  assert two["compiles"] == [0, 0] and entries(cachedb) == after_one  # another seed in another process: all from the disk cache
  assert two["first"] != one["first"] and one["first"] != one["second"]
  assert run(1, cachedb)["first"] == one["first"]
