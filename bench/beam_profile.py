"""Where a BEAM search of one matmul kernel spends its time: compiling candidates (wall time of compile_all, worker processes) against
running them (time_program), with a fresh CACHEDB unless one is given. Usage: python bench/beam_profile.py N [width, default 2]"""
import os, pathlib, sys, tempfile, time
sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "tests" / "codegen"))  # the test kernels: one matmul AST
os.environ.setdefault("CACHEDB", os.path.join(tempfile.mkdtemp(), "beam.db"))
from test_opt import matmul
from tinygrad import Device
import tinygrad.codegen.opt.search as search

n, width = int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 2
(ast, _), _ = matmul(n, n, n)
spent = {"compile": 0.0, "run": 0.0, "candidates": 0}
compile_all, time_program = search.compile_all, search.time_program
def timed_compile(asts, r):
  st = time.perf_counter(); out = compile_all(asts, r)
  spent["compile"] += time.perf_counter() - st; spent["candidates"] += len(asts)
  return out
def timed_run(*args, **kwargs):
  st = time.perf_counter(); out = time_program(*args, **kwargs)
  spent["run"] += time.perf_counter() - st
  return out
search.compile_all, search.time_program = timed_compile, timed_run
st = time.perf_counter()
opts = search.beam_search(ast, Device["CPU"].renderer, width)
print(f"matmul {n}: {time.perf_counter()-st:.1f} s, compile {spent['compile']:.1f} s ({spent['candidates']} candidates), "
      f"runs {spent['run']:.1f} s -> {opts}")
