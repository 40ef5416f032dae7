"""A schedule's new programs compile in a helper thread while the next kernels are lowered (engine/realize.py, _Compiles): the
results, the disk cache and a failed compile behave as when each compiles in turn."""
import threading
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.engine.device_base import CompileError

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
