"""A schedule's new programs are lowered and compiled in forked worker processes (engine/realize.py, _lower_in_workers), or, with
fewer of them or COMPILE_WORKERS=1, compile in a helper thread while the next kernels are lowered (_Compiles): the results, the disk
cache and a failed compile behave as when each is lowered and compiled in turn."""
import os, threading
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.helpers import Context
from tinygrad.uop import Ops
from tinygrad.engine.device_base import CompileError
import tinygrad.codegen as codegen

@pytest.fixture
def compiler_spy(monkeypatch, tmp_path):
  monkeypatch.setenv("CACHEDB", str(tmp_path / "cache.db"))  # nothing compiled before
  compiler, threads = Device["CPU"].compiler, []
  compile_ = type(compiler).compile
  def spy(self, src):
    threads.append(threading.current_thread().name)
    return compile_(self, src)
  monkeypatch.setattr(type(compiler), "compile", spy)
  return compiler, threads

def _kernels(c:float):
  """kernels whose sources no other test compiles (the constant c is in them)"""
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((16, 8), dtype=np.float32), rng.standard_normal((8,), dtype=np.float32)
  x, y = Tensor(a), Tensor(b)
  t = ((x * c).sum(1).contiguous() + c).exp().sum() + (y * c).max()
  want = np.exp((a * np.float32(c)).sum(1) + np.float32(c)).sum() + (b * np.float32(c)).max()
  return t, want

def _many_kernels(c:float, n:int=5):
  """n kernels or more, each summing its own multiple of x (c in each source: no other test compiles them)"""
  a = np.random.default_rng(1).standard_normal((8, 8), dtype=np.float32)
  x = Tensor(a)
  t = sum([((x * (c + i)).sum(1).contiguous() + i).max() for i in range(n)])
  return t, sum([((a * np.float32(c + i)).sum(1) + i).max() for i in range(n)])

@pytest.fixture
def lowering_spy(monkeypatch):
  """the kernels lowered in this process (a forked worker's calls land in its own copy of the list)"""
  here, parent, lower = [], os.getpid(), codegen.rewrite_to_program
  def spy(ast, renderer=None):
    if os.getpid() == parent: here.append(ast)
    return lower(ast, renderer)
  monkeypatch.setattr(codegen, "rewrite_to_program", spy)
  return here

def _has_const(ast, c:float) -> bool: return any(u.op is Ops.CONST and isinstance(u.arg, float) and abs(u.arg - c) < 1e-4 for u in ast.toposort())

@pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked")
def test_new_kernels_lower_in_workers(monkeypatch, compiler_spy, lowering_spy):
  compiler, threads = compiler_spy
  from tinygrad.codegen.opt import search
  made, compile_all = [], search.compile_all
  monkeypatch.setattr(search, "compile_all", lambda *a, **k: made.extend(r := compile_all(*a, **k)) or r)
  with Context(COMPILE_WORKERS=2):
    t, want = _many_kernels(5.678912)
    np.testing.assert_allclose(t.item(), want, rtol=1e-5)
  assert lowering_spy == [] and threads == []  # every kernel lowered and compiled in a worker
  # each program went into the disk cache, as it does when compiled here
  assert len(made) >= 5 and all(spec is not None and compiler.cached(spec.src) == lib for spec, lib in made)

def test_few_new_kernels_or_one_worker_lower_here(compiler_spy, lowering_spy):
  _, threads = compiler_spy
  with Context(COMPILE_WORKERS=1):
    t, want = _many_kernels(6.789123)
    np.testing.assert_allclose(t.item(), want, rtol=1e-5)
  assert len(lowering_spy) >= 5 and len(threads) >= 5
  with Context(COMPILE_WORKERS=2):
    t, want = _many_kernels(7.891234, n=1)
    np.testing.assert_allclose(t.item(), want, rtol=1e-5)
  assert len(lowering_spy) >= 6

@pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked")
def test_a_kernel_a_worker_fails_on_raises_here(monkeypatch, compiler_spy, lowering_spy):
  from tinygrad.engine import realize
  lower, launched, raised = codegen.rewrite_to_program, [], []
  def fails_on_one(ast, renderer=None):  # the kernel of x * (c + 2), in the workers and here
    if _has_const(ast, 8.912345 + 2):
      raised.append(os.getpid())
      raise RuntimeError("no kernel today")
    return lower(ast, renderer)
  monkeypatch.setattr(codegen, "rewrite_to_program", fails_on_one)
  monkeypatch.setattr(realize, "launch", lambda *a: launched.append(a))
  with Context(COMPILE_WORKERS=2):
    t, _ = _many_kernels(8.912345)
    with pytest.raises(RuntimeError, match="no kernel today"): t.realize()
  # the worker's error is not the one raised: the kernel was lowered again here, which raised its own (with its traceback)
  assert launched == [] and not t._is_buffer() and raised == [os.getpid()] and lowering_spy == []

def test_new_programs_compile_in_the_helper_thread(compiler_spy):
  compiler, threads = compiler_spy
  t, want = _kernels(1.234567)
  np.testing.assert_allclose(t.item(), want, rtol=1e-5)
  assert len(threads) >= 2 and all(n.startswith("tg-compile") for n in threads), threads
  compiled = len(threads)
  # each program went into the disk cache: the same kernels again, with the programs in memory dropped, compile nothing
  t, want = _kernels(1.234567)
  from tinygrad.engine import realize
  realize._runtimes.clear()
  np.testing.assert_allclose(t.item(), want, rtol=1e-5)
  assert len(threads) == compiled

def test_one_new_program_compiles_here(compiler_spy):
  _, threads = compiler_spy
  x = Tensor(np.arange(6, dtype=np.float32))
  assert (x * 7.654321).tolist() == pytest.approx(list(np.arange(6) * np.float32(7.654321)))
  assert threads == [threading.current_thread().name]

def test_a_failed_compile_in_the_thread_runs_nothing(monkeypatch, compiler_spy):
  compiler, threads = compiler_spy
  from tinygrad.engine import realize
  launched = []
  def broken(self, src):
    threads.append(threading.current_thread().name)
    raise CompileError("no compiler today")
  monkeypatch.setattr(type(compiler), "compile", broken)
  monkeypatch.setattr(realize, "launch", lambda *a: launched.append(a))
  t, _ = _kernels(2.345678)
  with pytest.raises(CompileError, match="no compiler today"): t.realize()
  assert launched == [] and any(n.startswith("tg-compile") for n in threads) and not t._is_buffer()

def test_a_forked_child_compiles_in_its_own_thread(compiler_spy):
  # the parent's helper thread does not exist in a forked child: the child starts its own (else its compiles would wait forever)
  import multiprocessing, os
  if "fork" not in multiprocessing.get_all_start_methods(): pytest.skip("no fork on this platform")
  t, want = _kernels(3.456789)
  np.testing.assert_allclose(t.item(), want, rtol=1e-5)  # the parent's helper exists now
  pid = os.fork()
  if pid == 0:
    try:
      t, want = _kernels(4.567891)
      os._exit(0 if abs(t.item() - want) <= 1e-4 * abs(want) else 1)
    except BaseException: os._exit(2)
  import signal, time
  deadline = time.monotonic() + 60
  while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline: time.sleep(0.05)
  if done[0] == 0:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the child's compiles never finished")
  assert os.waitstatus_to_exitcode(done[1]) == 0

def test_beam_compiles_here(compiler_spy, tmp_path):
  # BEAM's search forks workers: a fork while the helper thread is inside LLVM would leave the child llvmlite's lock held, forever
  _, threads = compiler_spy
  with Context(BEAM=1):
    t, want = _kernels(9.123456)
    np.testing.assert_allclose(t.item(), want, rtol=1e-5)
  here = threading.current_thread().name
  assert threads and not any(n.startswith("tg-compile") for n in threads), threads
  assert here in threads

def test_a_failed_lowering_leaves_the_thread_idle(monkeypatch, compiler_spy):
  # compiles already handed to the helper thread are waited for before the error goes up: a fork right after (BEAM's, the workers')
  # must not find the thread inside LLVM
  import time
  from concurrent.futures import ThreadPoolExecutor
  compiler, threads = compiler_spy
  compile_, futures, submit = type(compiler).compile, [], ThreadPoolExecutor.submit
  monkeypatch.setattr(type(compiler), "compile", lambda self, src: time.sleep(0.3) or compile_(self, src))
  monkeypatch.setattr(ThreadPoolExecutor, "submit", lambda self, *a: futures.append(f := submit(self, *a)) or f)
  lower, lowered = codegen.rewrite_to_program, []
  def fails_third(ast, renderer=None):  # two new programs are in the thread by then
    if len(lowered) == 2: raise RuntimeError("no kernel today")
    lowered.append(ast)
    return lower(ast, renderer)
  monkeypatch.setattr(codegen, "rewrite_to_program", fails_third)
  with Context(COMPILE_WORKERS=1):
    t, _ = _many_kernels(0.5432)
    with pytest.raises(RuntimeError, match="no kernel today"): t.realize()
  assert len(futures) >= 2 and all(f.done() for f in futures)
