"""The native pool of spinning CPU helpers: every share runs exactly once, the trampolines pass each argument to its parameter, helpers
that went to sleep are woken by the next launch, launches from several python threads keep their shares apart, a forked child gets
its own pool, stop() ends the helpers, and without llvmlite the python helpers run the shares."""
import ctypes, multiprocessing, os, subprocess, sys, textwrap, threading, time
import pytest
from tinygrad.helpers import Context
from tinygrad.runtime import cpu_pool, cpu_threads, host_toolchain
from tinygrad.runtime.ops_cpu import LLVMCompiler
from tinygrad.codegen.opt import THREADS  # noqa: F401  (defines the ContextVar)

# hits[share] += 1 after `iters` rounds of busy work, so that a share lasts long enough for a helper to take some
COUNT = """define void @count(ptr %hits, i32 %iters, i32 %share) nounwind {
entry:
  br label %loop
loop:
  %i = phi i32 [0, %entry], [%i1, %loop]
  %v = load volatile i32, ptr %hits
  %i1 = add i32 %i, 1
  %more = icmp slt i32 %i1, %iters
  br i1 %more, label %loop, label %done
done:
  %s = add i32 %share, 1
  %p = getelementptr inbounds i32, ptr %hits, i32 %s
  %old = atomicrmw add ptr %p, i32 1 monotonic
  ret void
}"""

# out[4*share ..] = a, b, c, in[share]: each argument lands in its own parameter
ARGS = """define void @args(ptr %out, ptr %in, i32 %a, i32 %b, i32 %c, i32 %share) nounwind {
  %base = mul i32 %share, 4
  %p0 = getelementptr inbounds i32, ptr %out, i32 %base
  store i32 %a, ptr %p0
  %o1 = add i32 %base, 1
  %p1 = getelementptr inbounds i32, ptr %out, i32 %o1
  store i32 %b, ptr %p1
  %o2 = add i32 %base, 2
  %p2 = getelementptr inbounds i32, ptr %out, i32 %o2
  store i32 %c, ptr %p2
  %q = getelementptr inbounds i32, ptr %in, i32 %share
  %x = load i32, ptr %q
  %o3 = add i32 %base, 3
  %p3 = getelementptr inbounds i32, ptr %out, i32 %o3
  store i32 %x, ptr %p3
  ret void
}"""

@pytest.fixture(scope="module")
def kernels():
  comp = LLVMCompiler()
  count, args = comp.load("count", comp.compile(COUNT)), comp.load("args", comp.compile(ARGS))
  return count, count.fxn(1, 1, True), args, args.fxn(2, 3, True)

def launch_counts(fxn, shares:int, launches:int=1, iters:int=1000) -> list[int]:
  hits = (ctypes.c_int32 * (shares + 1))()
  for _ in range(launches): cpu_threads.run_shared(fxn, [ctypes.addressof(hits), iters], shares)
  return list(hits)[1:]

@pytest.mark.parametrize("threads,shares", [(2, 2), (2, 37), (3, 8), (3, 1)])
def test_each_share_runs_once(kernels, threads, shares):
  with Context(THREADS=threads): assert launch_counts(kernels[1], shares, launches=30) == [30] * shares

def test_arguments_reach_their_parameters(kernels):
  _, _, _, fxn = kernels
  src, out = (ctypes.c_int32 * 5)(7, -8, 9, 10, 11), (ctypes.c_int32 * 20)()
  with Context(THREADS=2): cpu_threads.run_shared(fxn, [ctypes.addressof(out), ctypes.addressof(src), 3, -2147483648, 2147483647], 5)
  assert list(out) == [v for s in range(5) for v in (3, -2147483648, 2147483647, src[s])]

def test_helpers_take_shares_and_wake_after_sleeping(kernels):
  _, fxn, _, _ = kernels
  pool = cpu_pool.NativePool(cpu_pool.native(), 1)
  try:
    hits = (ctypes.c_int32 * 9)()
    def helper_ran() -> bool:  # over many launches of 8 ~0.5 ms shares the helper takes some, however busy the machine
      return any(pool.run(fxn, [ctypes.addressof(hits), 2_000_000], 8) < 8 for _ in range(50))
    assert helper_ran()
    deadline = time.monotonic() + 10
    while not pool.asleep[0] and time.monotonic() < deadline: time.sleep(0.001)
    assert pool.asleep[0], "the helper spins on with no work"
    assert helper_ran(), "a launch after the helper slept did not wake it"
    assert list(hits)[1:] == [list(hits)[1]] * 8
  finally: pool.stop()
  for t in pool.threads: t.join(5)
  assert not any(t.is_alive() for t in pool.threads)

def test_concurrent_launches_keep_their_shares_apart(kernels):
  _, fxn, _, _ = kernels
  results = {}
  def launch(tag): results[tag] = launch_counts(fxn, 6, launches=25)
  with Context(THREADS=2):
    callers = [threading.Thread(target=launch, args=(tag,)) for tag in "abc"]
    for c in callers: c.start()
    for c in callers: c.join()
  assert results == {tag: [25] * 6 for tag in "abc"}

def _child_sum(q):
  import numpy as np
  from tinygrad import Tensor
  with Context(THREADS=2): q.put(float(Tensor(np.ones(1 << 20, dtype=np.float32)).sum().numpy()))

@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_forked_child_gets_its_own_helpers(kernels):
  with Context(THREADS=2): launch_counts(kernels[1], 4)  # the parent's pool exists and its helper spins
  ctx = multiprocessing.get_context("fork")
  q = ctx.Queue()
  p = ctx.Process(target=_child_sum, args=(q,))
  p.start()
  assert q.get(timeout=60) == float(1 << 20)
  p.join(10)
  assert p.exitcode == 0

def test_without_llvmlite_python_helpers_run_the_shares():
  if host_toolchain.find_cc() is None: pytest.skip("the CPU without llvmlite needs a C compiler")
  code = textwrap.dedent("""
    import sys
    class Block:
      def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'llvmlite': raise ImportError('llvmlite is blocked')
    sys.meta_path.insert(0, Block())
    import numpy as np
    from tinygrad import Tensor
    from tinygrad.helpers import Context
    from tinygrad.runtime import cpu_pool, cpu_threads
    from tinygrad.codegen.opt import THREADS
    with Context(THREADS=2): s = Tensor(np.ones(1 << 20, dtype=np.float32), device='CPU:C').sum().numpy()
    print(float(s), cpu_pool.native(), len(cpu_threads._pools))
  """)
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
  assert out.returncode == 0, out.stderr[-3000:]
  assert out.stdout.split() == [str(float(1 << 20)), "None", "1"]
