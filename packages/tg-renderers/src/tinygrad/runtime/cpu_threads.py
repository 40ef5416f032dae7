"""The CPU runtime's threads: a THREAD kernel is called once per share, on the caller and helper threads that each take the next unrun
share. ctypes releases the GIL during the call, so python threads use every core."""
from __future__ import annotations
import os

def run_shared(fxn, args:list, shares:int):
  """fxn(*args, i) for every share i, on up to THREADS threads: the caller and helpers that each take the next unrun share"""
  from tinygrad.codegen.opt.heuristic import THREADS  # loaded with the first kernel anyway: a plain copy-out does not need it
  todo = iter(range(shares))  # next() on it holds the GIL: each share is taken once
  def run_shares():
    for i in todo: fxn(*args, i)
  # the caller is one of the threads: one handoff fewer to wait for (a pool of n for n shares cost ~40 us more per launch)
  if (n := min(shares, max(1, THREADS.value))) > 1: _helpers(n - 1).run(run_shares)
  else: run_shares()

class _Helpers:
  """n daemon threads waiting on one queue of jobs. A job is a function and the queue its caller waits on: C-level queues, no futures,
  so a launch costs a put per helper and a get per helper (a ThreadPoolExecutor's submit and result cost ~10 us more per kernel)"""
  def __init__(self, n:int):
    import queue, threading
    self.n, self.jobs, self.queue = n, queue.SimpleQueue(), queue.SimpleQueue
    for i in range(n): threading.Thread(target=self._work, name=f"tg-cpu-{i}", daemon=True).start()
  def _work(self):
    while True:
      fn, done = self.jobs.get()
      try: fn()
      except BaseException as e: done.put(e)
      else: done.put(None)
  def run(self, fn):
    """fn on every helper and on the caller at once; returns when all are done, raising the first error"""
    done = self.queue()  # this call's own: threads of the program may launch kernels at the same time
    for _ in range(self.n): self.jobs.put((fn, done))
    try: fn()
    finally: errors = [e for e in (done.get() for _ in range(self.n)) if e is not None]
    if errors: raise errors[0]

_pools: dict[int, _Helpers] = {}  # n -> its helpers, kept for the next kernel that needs n
# a forked child (BEAM times candidates in one) has none of the parent's worker threads: it makes its own
if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_pools.clear)
def _helpers(n:int) -> _Helpers:
  if (p := _pools.get(n)) is None: p = _pools[n] = _Helpers(n)
  return p
