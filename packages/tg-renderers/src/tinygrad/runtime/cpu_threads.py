"""The CPU runtime's threads: a THREAD kernel is called once per share, on the caller and helper threads that each take the next unrun
share. A compiled kernel runs on the native pool (cpu_pool: helpers that spin between kernels); without llvmlite, or for a python
callable, on python threads that sleep between kernels (ctypes releases the GIL during each call, so they use every core too)."""
from __future__ import annotations
import atexit, ctypes, os
from tinygrad.runtime import cpu_pool

_THREADS = None  # the THREADS ContextVar: loaded with the first kernel anyway, but a plain copy-out does not need it
def _threads() -> int:
  """THREADS' value; its module imported on the first kernel, then a global read (an import statement costs ~1 us per launch)"""
  global _THREADS
  if _THREADS is None: from tinygrad.codegen.opt.heuristic import THREADS as _THREADS
  return _THREADS.value

def run_shared(fxn, args:list, shares:int):
  """fxn(*args, i) for every share i, on up to THREADS threads: the caller and helpers that each take the next unrun share. The caller
  waits only for shares a helper took: a helper that wakes after the last share was taken does nothing, and nobody waits for it (on a
  busy machine a sleeping thread may get a core only milliseconds later, long after the caller ran every share itself)"""
  todo = iter(range(shares))  # next() on it holds the GIL: each share is taken once
  if (n := min(shares, max(1, _threads()))) <= 1:
    for i in todo: fxn(*args, i)
    return
  if isinstance(fxn, ctypes._CFuncPtr) and (pool := _native_pool(n - 1)) is not None and pool.run(fxn, args, shares) is not None: return
  helpers = _helpers(n - 1)
  done = helpers.queue()  # one entry per share a helper took: None, or what it raised; this call's own queue
  def helper():
    for i in todo:
      try: fxn(*args, i)
      except BaseException as e:
        done.put(e)
        return
      done.put(None)
  helpers.start(helper)
  mine, error = 0, None
  try:
    for i in todo:
      mine += 1
      fxn(*args, i)
  except BaseException as e:
    error = e
    for _ in todo: mine += 1  # take the rest unrun, so that no helper starts one after this call returns
  # the buffers must outlive every share in flight: wait for the helpers' shares even when one failed
  errors = [e for e in (done.get() for _ in range(shares - mine)) if e is not None]
  if error is not None: raise error
  if errors: raise errors[0]

class _Helpers:
  """n daemon threads that each run every job put on one queue: C-level queues, no futures (a ThreadPoolExecutor's submit and result
  cost ~10 us more per kernel)"""
  def __init__(self, n:int):
    import queue, threading
    self.n, self.jobs, self.queue = n, queue.SimpleQueue(), queue.SimpleQueue
    for i in range(n): threading.Thread(target=self._work, name=f"tg-cpu-{i}", daemon=True).start()
  def _work(self):
    while True:
      job = self.jobs.get()
      try: job()
      except BaseException: pass  # a job reports its own errors (run_shared's helper puts them on its call's queue)
  def start(self, job):
    """job on every helper, as each wakes"""
    for _ in range(self.n): self.jobs.put(job)

_pools: dict[int, _Helpers] = {}  # n -> its helpers, kept for the next kernel that needs n
_native_pools: dict[int, cpu_pool.NativePool] = {}
def _forget_threads():
  _pools.clear()
  _native_pools.clear()
# a forked child (BEAM times candidates in one) has none of the parent's worker threads: it makes its own
if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_forget_threads)
def _helpers(n:int) -> _Helpers:
  if (p := _pools.get(n)) is None: p = _pools[n] = _Helpers(n)
  return p
def _native_pool(n:int) -> cpu_pool.NativePool|None:
  if (p := _native_pools.get(n)) is None and (native := cpu_pool.native()) is not None: p = _native_pools[n] = cpu_pool.NativePool(native, n)
  return p

@atexit.register
def _stop_native_helpers():
  for p in _native_pools.values(): p.stop()
