"""BEAM=N (codegen/opt/search.py): every opt list the search may time gives numpy's results, on fuzzed kernels, on the CPU (LLVM) and on
the PYTHON emulator; the search returns a list it timed, caches it on disk and a second search of the same kernel times nothing."""
import pathlib, random, sys
import numpy as np
import pytest
from tinygrad import Device
from tinygrad.helpers import Context
from tinygrad.codegen.opt import Opt, OptOps, apply_opts
from tinygrad.codegen.opt import search
from tinygrad.renderer.python import PythonRenderer
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's test_opt is not on sys.path by itself
from test_opt import elementwise, broadcast, row_reduce, full_sum, matmul, run_cpu, run_python

def _fuzzed_kernels(seed:int):
  r = random.Random(seed)
  d = lambda: r.choice([1, 2, 3, 4, 6, 8, 12, 16, 5])
  return [elementwise(d(), d()*2), broadcast(d(), d()*4), row_reduce(d(), d()*3), full_sum(d()*8), matmul(d(), d()*2, d()*2)]

def _reachable(ast, renderer, rnd:random.Random, depth:int=3, per_level:int=4) -> list[tuple[Opt, ...]]:
  """opt lists BEAM's own extension step makes, `depth` opts deep, a random few per level"""
  level, ret = [()], []
  for _ in range(depth):
    nxt = [c for opts in level for c in search._extend(ast, opts, renderer)]
    level = rnd.sample(nxt, min(per_level, len(nxt)))
    ret += level
  return ret

@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("run, renderer", [(run_cpu, None), (run_python, PythonRenderer())], ids=["CPU", "PYTHON"])
def test_every_candidate_matches_numpy(seed, run, renderer):
  rnd = random.Random(seed)
  with Context(THREADS=2):
    for (ast, ins), ref in _fuzzed_kernels(seed):
      want = ref(*ins)
      for opts in _reachable(ast, renderer or Device["CPU"].renderer, rnd):
        np.testing.assert_allclose(run(apply_opts(ast, opts), ins, want.size), want, rtol=1e-4, atol=1e-4, err_msg=str(opts))

def test_actions_follow_the_opt_rules():
  (ast, _), _ = matmul(8, 12, 6)
  acts = search.actions(ast, Device["CPU"].renderer)
  assert Opt(OptOps.UPCAST, 1, 3) in acts and Opt(OptOps.UNROLL, 2, 6) not in acts and Opt(OptOps.UNROLL, 2, 3) in acts
  assert all(o.op is not OptOps.UNROLL or o.axis == 2 for o in acts) and all(o.op is OptOps.UNROLL or o.axis < 2 for o in acts)

@pytest.mark.parametrize("renderer", [None, PythonRenderer()], ids=["CPU", "PYTHON"])
def test_search_caches_its_winner(tmp_path, monkeypatch, renderer):
  monkeypatch.setenv("CACHEDB", str(tmp_path / "cache.db"))
  monkeypatch.setenv("BEAM_QUIET", "1")
  (ast, ins), ref = matmul(16, 16, 8)
  renderer = renderer or Device["CPU"].renderer
  compiled = []
  real = search.compile_all
  monkeypatch.setattr(search, "compile_all", lambda asts, r: compiled.append(len(asts)) or real(asts, r))
  opts = search.beam_search(ast, renderer, 2)
  assert sum(compiled) >= 2
  run = run_python if isinstance(renderer, PythonRenderer) else run_cpu
  np.testing.assert_allclose(run(apply_opts(ast, opts), ins, 256), ref(*ins), rtol=1e-4, atol=1e-4)
  compiled.clear()
  assert search.beam_search(ast, renderer, 2) == opts and compiled == []  # the disk cache answers: nothing compiled or timed

def test_slow_candidate_is_stopped_at_the_cutoff():
  import time
  def slow():
    time.sleep(30)  # stands for a kernel run of minutes: the child is killed long before
    yield 0.01
  st = time.perf_counter()
  assert search._in_child(slow, 0.3) == float("inf") and time.perf_counter() - st < 5
  def stalls():  # runs reported before the stall count
    yield 0.05
    time.sleep(30)
    yield 0.01
  assert search._in_child(stalls, 0.3) == 0.05
  def fast(): yield from (0.02, 0.01, 0.03)
  assert search._in_child(fast, 0.3) == 0.01
  def past(): yield 0.5  # a run that ends but took longer than the cutoff: as slow as one stopped
  assert search._in_child(past, 0.3) == float("inf")

def test_cutoff_timing_runs_threaded_kernels():
  # the forked child makes its own worker threads (the parent's are not there): a THREAD kernel finishes and its time is the same kind
  (ast, _), _ = matmul(64, 64, 64)
  dev = Device["CPU"]
  from tinygrad.codegen import get_program
  spec = get_program(apply_opts(ast, [Opt(OptOps.THREAD, 0, 2), Opt(OptOps.UPCAST, 1, 8)]), dev.renderer)
  lib, bufs = dev.compiler.compile(spec.src), search._scratch(ast, "CPU")
  search.time_program(spec, lib, "CPU", bufs)  # the parent's pool exists before the fork, as in a search
  t = search.time_program(spec, lib, "CPU", bufs, cutoff_s=10.0)
  assert 0 < t < 10.0
