"""BEAM=N (codegen/opt/search.py): every opt list the search may time gives numpy's results, on fuzzed kernels, on the CPU (LLVM) and on
the PYTHON emulator (which runs work groups: LOCAL and GROUP opts are reachable there); the search returns a list it
timed, caches it on disk and a second search of the same kernel times nothing."""
import copy, pathlib, random, sys
import numpy as np
import pytest
from tinygrad import Device
from tinygrad.helpers import Context
from tinygrad.uop import Ops
from tinygrad.codegen.opt import Opt, OptOps, apply_opts, hand_coded_opts
from tinygrad.codegen.opt import search
from tinygrad.renderer.python import PythonRenderer
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's test_opt is not on sys.path by itself
from test_opt import elementwise, broadcast, row_reduce, full_sum, matmul, run_cpu, run_python

def _fuzzed_kernels(seed:int):
  r = random.Random(seed)
  d = lambda: r.choice([1, 2, 3, 4, 6, 8, 12, 16, 5])
  odd = lambda: r.choice([7, 9, 13, 57, 100])  # sizes no upcast divides: PADTO, and GROUP after it
  small_odd = lambda: r.choice([7, 9, 13])
  return [elementwise(d(), d()*2), broadcast(d(), d()*4), row_reduce(d(), d()*3), full_sum(d()*8), matmul(d(), d()*2, d()*2),
          elementwise(d(), odd()), row_reduce(d(), odd(), r.choice([Ops.ADD, Ops.MAX])), full_sum(odd() * 4), matmul(small_odd(), d(), small_odd()),
          row_reduce(2, 128), full_sum(256)]  # long reductions with few outputs: what GROUP is for

def _reachable(ast, renderer, rnd:random.Random, depth:int=3, per_level:int=4) -> list[tuple[Opt, ...]]:
  """opt lists BEAM's own extension step makes, `depth` opts deep, a random few per level, from BEAM's own starting points: no opts
  and the heuristic's (on a renderer with work items: a grid, so LOCAL and GROUP are reachable)"""
  level, ret = [(), tuple(hand_coded_opts(ast, renderer))], []
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
  U, N, P, G, GT, L = OptOps.UPCAST, OptOps.UNROLL, OptOps.PADTO, OptOps.GROUP, OptOps.GROUPTOP, OptOps.LOCAL
  (ast, _), _ = matmul(8, 12, 6)
  acts = search.actions(ast, Device["CPU"].renderer)
  assert Opt(U, 1, 3) in acts and Opt(N, 2, 6) not in acts and Opt(N, 2, 3) in acts
  assert all(o.op is not N or o.axis == 2 for o in acts) and all(o.op in (N, P) or o.axis < 2 for o in acts)
  # padding only where the amount does not divide the axis; no work groups on the CPU
  assert Opt(P, 2, 4) in acts and Opt(P, 0, 4) not in acts and Opt(P, 1, 8) in acts and not any(o.op in (L, G, GT) for o in acts)
  grid = apply_opts(ast, [Opt(OptOps.GLOBAL, 0, 8), Opt(OptOps.GLOBAL, 0, 12)])
  acts = search.actions(grid, PythonRenderer())
  assert {Opt(L, 1, 4), Opt(G, 2, 2), Opt(GT, 2, 2)} <= set(acts) and Opt(L, 1, 8) not in acts and Opt(G, 2, 4) not in acts

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
  # a host with other SIMD registers (the cache copied from an AVX2 machine to an AVX-512 one) searches again
  (other := copy.copy(renderer)).vector_bytes = renderer.vector_bytes * 2
  search.beam_search(ast, other, 2)
  assert sum(compiled) >= 2

def _tensor_programs(dev:str):
  """scheduler-made kernels of odd sizes: nested reduces (softmax), an index reduce (argmax), a conv, a scan, a gather, an in-place update"""
  from tinygrad import Tensor
  rng = np.random.default_rng(7)
  x, w, v = rng.standard_normal((3, 57)).astype(np.float32), rng.standard_normal((2, 1, 3, 3)).astype(np.float32), rng.standard_normal(9)
  img, idx = rng.standard_normal((1, 1, 7, 9)).astype(np.float32), np.array([4, 0, 8, 8, 2], np.int32)
  a, b = rng.standard_normal((7, 9)).astype(np.float32), rng.standard_normal((9, 5)).astype(np.float32)
  X = lambda arr: Tensor(arr, device=dev)
  def inplace():
    acc = X(np.ones(3, np.float32)).contiguous().realize()
    return acc.assign(acc + X(x).exp().sum(1)).numpy(), 1 + np.exp(x).sum(1)
  return [lambda: (X(x).softmax(1).numpy(), np.exp(x) / np.exp(x).sum(1, keepdims=True)),
          lambda: (X(x).argmax(1).numpy(), x.argmax(1)),
          lambda: (X(img).conv2d(X(w)).numpy(), np.stack([sum(img[0, 0, i:i+5, j:j+7] * w[c, 0, i, j] for i in range(3) for j in range(3))
                                                          for c in range(2)])[None]),
          lambda: (X(v.astype(np.float32)).cumsum().numpy(), np.cumsum(v.astype(np.float32))),
          lambda: (X(v.astype(np.float32))[X(idx)].numpy(), v.astype(np.float32)[idx]),
          lambda: (X(a).matmul(X(b)).relu().numpy(), np.maximum(a @ b, 0)), inplace]

@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
def test_reachable_opts_on_tensor_kernels(seed, dev, monkeypatch):
  # every kernel of these programs gets a random opt list BEAM could reach, in place of the heuristic's
  import tinygrad.codegen.opt as opt
  from tinygrad.codegen import _get_program_memo
  rnd, chosen = random.Random(seed), []
  def pick(ast, renderer):
    chosen.append(list(rnd.choice(_reachable(ast, renderer, rnd) or [()])))
    return chosen[-1]
  monkeypatch.setattr(opt, "hand_coded_opts", pick)
  _get_program_memo.cache_clear()
  try:
    with Context(THREADS=2):
      for prog in _tensor_programs(dev):
        got, want = prog()
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=str(chosen[-3:]))
  finally: _get_program_memo.cache_clear()  # the next test gets programs with the heuristic's opts again
  assert any(o.op is OptOps.PADTO for opts in chosen for o in opts), chosen

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

def test_finalists_are_timed_again_and_the_heuristic_kept_within_the_margin(monkeypatch):
  """the search's one timing per candidate picks by noise on a shared host: the finalists run again in turn and the median decides"""
  heuristic, other, lucky = (Opt(OptOps.UPCAST, 0, 4),), (Opt(OptOps.UPCAST, 0, 8),), (Opt(OptOps.UNROLL, 0, 4),)
  script = {"h": iter([1.0, 1.0, 1.3, 1.0, 1.0]), "o": iter([0.7, 0.7, 0.71, 2.0, 0.7]), "l": iter([0.4, 1.5, 1.5, 1.5, 1.5])}
  monkeypatch.setattr(search, "time_program", lambda spec, lib, dev, bufs: next(script[spec]))
  finalists = {heuristic: ("h", b""), other: ("o", b""), lucky: ("l", b"")}
  assert search._confirmed(Device["CPU"].renderer, [], finalists, heuristic) == (other, 0.7 * 1e3)  # medians 1.0, 0.7, 1.5
  # a list whose median is within BEAM_MIN_GAIN of the heuristic's does not replace it
  script = {"h": iter([1.0] * 5), "o": iter([0.995] * 5)}
  with Context(BEAM_MIN_GAIN=0.01):
    assert search._confirmed(Device["CPU"].renderer, [], {heuristic: ("h", b""), other: ("o", b"")}, heuristic)[0] == heuristic

def test_knobs_min_gain_zero_ends_and_a_bad_cutoff_is_named(tmp_path, monkeypatch):
  """BEAM_MIN_GAIN=0 (search while a round improves) looped for ever on a beam it had timed; BEAM_CUTOFF=0 made a NaN time limit deep
  in a worker"""
  monkeypatch.setenv("CACHEDB", str(tmp_path / "cache.db"))
  monkeypatch.setenv("BEAM_QUIET", "1")
  (ast, ins), ref = matmul(3, 4, 3)
  with Context(BEAM_MIN_GAIN=0.0): opts = search.beam_search(ast, Device["CPU"].renderer, 1)
  np.testing.assert_allclose(run_cpu(apply_opts(ast, opts), ins, 12), ref(*ins), rtol=1e-5)
  (ast, ins), _ = matmul(5, 4, 3)
  for knob, value in [("BEAM_CUTOFF", 0.0), ("BEAM_MIN_GAIN", -0.5)]:
    with Context(**{knob: value}), pytest.raises(ValueError, match=knob): search.beam_search(ast, Device["CPU"].renderer, 1)

def test_progress_into_a_file_is_the_final_line_alone(monkeypatch):
  """carriage returns and erase-line escapes went into logs (and an erase before the program's next line)"""
  import io
  monkeypatch.setattr(search, "getenv", lambda key, default=0: 0)  # BEAM_QUIET off (getenv is cached per process)
  monkeypatch.setattr(sys, "stderr", out := io.StringIO())
  search._progress("BEAM k: 3 timed")
  search._progress("BEAM k: [] at 1.000 ms", final=True)
  assert out.getvalue() == "BEAM k: [] at 1.000 ms\n"
