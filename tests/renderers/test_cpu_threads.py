"""The CPU runtime's share runner: every share of a THREAD kernel runs exactly once, on the caller and the helper threads, errors reach the
caller, the caller waits for the shares in flight but not for a helper that has not woken, and launches from several python threads at
once each get their own shares back."""
import threading, time
import pytest
from tinygrad.helpers import Context
from tinygrad.runtime.cpu_threads import run_shared
from tinygrad.codegen.opt import THREADS  # noqa: F401  (defines the ContextVar)

def recorder():
  seen, lock, caller = [], threading.Lock(), threading.get_ident()
  def share(tag, i):
    if threading.get_ident() != caller: time.sleep(0.001)  # a helper's share still runs when the caller has run out of shares
    with lock: seen.append((tag, i, threading.get_ident()))
  return seen, share

@pytest.mark.parametrize("threads", [1, 2, 3])
def test_each_share_runs_once(threads):
  seen, share = recorder()
  with Context(THREADS=threads): run_shared(share, ["k"], 37)
  assert sorted(i for _, i, _ in seen) == list(range(37))
  assert len({t for *_, t in seen}) <= threads

def test_an_error_in_a_share_reaches_the_caller():
  def share(i):
    if i == 5: raise ValueError("share 5 failed")
  with Context(THREADS=2), pytest.raises(ValueError, match="share 5"): run_shared(share, [], 8)
  seen, ok = recorder()
  with Context(THREADS=2): run_shared(ok, ["after"], 4)  # the helpers survive it
  assert sorted(i for _, i, _ in seen) == [0, 1, 2, 3]

def test_concurrent_launches_keep_their_shares_apart():
  seen, share = recorder()
  def launch(tag):
    for _ in range(20): run_shared(share, [tag], 6)
  with Context(THREADS=2):
    callers = [threading.Thread(target=launch, args=(tag,)) for tag in ("a", "b", "c")]
    for c in callers: c.start()
    for c in callers: c.join()
  for tag in ("a", "b", "c"): assert sorted(i for t, i, _ in seen if t == tag) == sorted(list(range(6)) * 20)

def test_a_helper_that_has_not_woken_is_not_waited_for():
  from tinygrad.runtime.cpu_threads import _helpers
  busy, release = threading.Event(), threading.Event()
  _helpers(1).start(lambda: busy.set() or release.wait(10))  # the one helper is held, as a thread the OS has not scheduled yet
  try:
    busy.wait(5)
    seen, share = recorder()
    st = time.perf_counter()
    with Context(THREADS=2): run_shared(share, ["k"], 5)
    assert time.perf_counter() - st < 5 and sorted(i for _, i, _ in seen) == list(range(5))
    assert {t for *_, t in seen} == {threading.get_ident()}  # the caller ran them all
  finally: release.set()
