"""A pool of CPU threads that spin in native code between kernels, so that a THREAD kernel's shares start on every core at once.
Python threads that sleep between kernels take tens of microseconds to wake, each share costs a GIL round trip, and a spin in python
would hold the GIL. The spin loop, the launch and one trampoline per kernel signature are LLVM IR compiled by llvmlite, called through
ctypes (which releases the GIL for the whole call). A helper that has spun SPIN_ROUNDS rounds with no work returns to python and sleeps
on a queue; the next launch wakes it.

The control block, one per pool (64-byte lines so that the claim word, the done count and the job do not share a line):
  [0]   claim word: generation << 32 | next unclaimed share (BUSY while the launcher writes a job)
  [64]  shares finished by helpers
  [128] trampoline, kernel address, argument block, share count (the job)
  [192] stop flag; [200] the launcher's generation counter; [208] sched_yield's address (0: none)
A job is read like a seqlock: a helper reads the claim word, the job, then the word again, and claims a share only with a
compare-and-swap on a word that has not changed, so that a helper that read a job late never runs a share of the next one."""
from __future__ import annotations
import ctypes, threading, queue
from tinygrad.helpers import DEBUG

BUSY = 0xFFFFFFFF
SPIN_ROUNDS = 1 << 15  # each round a pause (tens of ns), and a sched_yield every 64: a spin of about 1-2 ms after the last kernel

def _relax(triple:str) -> tuple[str, str]:
  """(declaration, call) of the CPU's spin-wait hint, or nothing where LLVM has no portable one"""
  if triple.startswith(("x86_64", "i386", "i686")): return "declare void @llvm.x86.sse2.pause()", "call void @llvm.x86.sse2.pause()"
  if triple.startswith(("aarch64", "arm64")): return "declare void @llvm.aarch64.hint(i32)", "call void @llvm.aarch64.hint(i32 1)"
  return "", ""

def _field(name:str, offset:int) -> str: return f"  %{name} = getelementptr inbounds i8, ptr %ctl, i64 {offset}"

_FIELDS = "\n".join(_field(n, o) for n, o in (("wordp", 0), ("donep", 64), ("trampp", 128), ("fnp", 136), ("argsp", 144),
                                                ("sharesp", 152), ("stopp", 192), ("genp", 200), ("yieldp", 208)))

def pool_ir(triple:str) -> str:
  decl, relax = _relax(triple)
  # a pause every round, and every 64th round a sched_yield: on a busy machine the thread we wait for may need this core
  def backoff(label:str, counter:str, then:str) -> str:
    return f"""{label}:
  {relax}
  %{label}.k = and i64 %{counter}, 63
  %{label}.y = load ptr, ptr %yieldp
  %{label}.due = icmp eq i64 %{label}.k, 63
  %{label}.has = icmp ne ptr %{label}.y, null
  %{label}.go = and i1 %{label}.due, %{label}.has
  br i1 %{label}.go, label %{label}.yield, label %{then}
{label}.yield:
  %{label}.r = call i32 %{label}.y()
  br label %{then}"""
  def claim_and_run(tramp:str, args:str, lost:str) -> str:
    """share %idx of word %w, claimed by compare-and-swap (to `lost` when another thread took it first), run through the trampoline"""
    return f"""try:
  %w1 = add i64 %w, 1
  %cas = cmpxchg ptr %wordp, i64 %w, i64 %w1 acq_rel monotonic
  %ok = extractvalue {{i64, i1}} %cas, 1
  br i1 %ok, label %run, label %{lost}
run:
  %i = trunc i64 %idx to i32
  call void %{tramp}(ptr %fn, ptr %{args}, i32 %i)"""
  return f"""{decl}

define i64 @tg_pool_launch(ptr %ctl, ptr %tramp, ptr %fn, ptr %args, i64 %shares) nounwind {{
entry:
{_FIELDS}
  %gen = load i64, ptr %genp
  %g1 = add i64 %gen, 1
  %g1s = shl i64 %g1, 32
  %busyw = or i64 %g1s, {BUSY}
  store atomic i64 %busyw, ptr %wordp monotonic, align 8
  fence release
  store atomic ptr %tramp, ptr %trampp monotonic, align 8
  store atomic ptr %fn, ptr %fnp monotonic, align 8
  store atomic ptr %args, ptr %argsp monotonic, align 8
  store atomic i64 %shares, ptr %sharesp monotonic, align 8
  store atomic i64 0, ptr %donep monotonic, align 8
  %g2 = add i64 %gen, 2
  store i64 %g2, ptr %genp
  %openw = shl i64 %g2, 32
  store atomic i64 %openw, ptr %wordp release, align 8
  br label %claim
claim:
  %mine = phi i64 [0, %entry], [%mine, %try], [%mine1, %run]
  %w = load atomic i64, ptr %wordp acquire, align 8
  %idx = and i64 %w, {BUSY}
  %more = icmp ult i64 %idx, %shares
  br i1 %more, label %try, label %wait
{claim_and_run("tramp", "args", "claim")}
  %mine1 = add i64 %mine, 1
  br label %claim
wait:
  %need = sub i64 %shares, %mine
  br label %check
check:
  %n = phi i64 [0, %wait], [%n1, %relax], [%n1, %relax.yield]
  %d = load atomic i64, ptr %donep acquire, align 8
  %fin = icmp uge i64 %d, %need
  %n1 = add i64 %n, 1
  br i1 %fin, label %out, label %relax
{backoff("relax", "n", "check")}
out:
  ret i64 %mine
}}

define i64 @tg_pool_launch_many(ptr %ctl, ptr %jobs, i64 %n) nounwind {{
entry:
  br label %loop
loop:
  %k = phi i64 [0, %entry], [%k1, %body]
  %more = icmp ult i64 %k, %n
  br i1 %more, label %body, label %out
body:
  %job = mul i64 %k, 4
  %jp = getelementptr inbounds i64, ptr %jobs, i64 %job
  %jt = load ptr, ptr %jp, align 8
  %jfp = getelementptr inbounds i64, ptr %jp, i64 1
  %jf = load ptr, ptr %jfp, align 8
  %jap = getelementptr inbounds i64, ptr %jp, i64 2
  %ja = load ptr, ptr %jap, align 8
  %jsp = getelementptr inbounds i64, ptr %jp, i64 3
  %js = load i64, ptr %jsp, align 8
  %ran = call i64 @tg_pool_launch(ptr %ctl, ptr %jt, ptr %jf, ptr %ja, i64 %js)
  %k1 = add i64 %k, 1
  br label %loop
out:
  ret i64 %n
}}

define i64 @tg_pool_work(ptr %ctl, i64 %rounds) nounwind {{
entry:
{_FIELDS}
  br label %loop
loop:
  %idle = phi i64 [0, %entry], [%idle, %try], [0, %run], [%idle, %idle.check], [%idle1, %nap], [%idle1, %nap.yield]
  %stop = load atomic i64, ptr %stopp monotonic, align 8
  %stopped = icmp ne i64 %stop, 0
  br i1 %stopped, label %quit, label %look
look:
  %w = load atomic i64, ptr %wordp acquire, align 8
  %sh = load atomic i64, ptr %sharesp monotonic, align 8
  %tr = load atomic ptr, ptr %trampp monotonic, align 8
  %fn = load atomic ptr, ptr %fnp monotonic, align 8
  %ar = load atomic ptr, ptr %argsp monotonic, align 8
  fence acquire
  %w2 = load atomic i64, ptr %wordp monotonic, align 8
  %same = icmp eq i64 %w, %w2
  %idx = and i64 %w, {BUSY}
  %open = icmp ult i64 %idx, %sh
  %claimable = and i1 %same, %open
  br i1 %claimable, label %try, label %idle.check
idle.check:
  br i1 %same, label %idle.count, label %loop
idle.count:
  %idle1 = add i64 %idle, 1
  %tired = icmp uge i64 %idle1, %rounds
  br i1 %tired, label %sleep, label %nap
{claim_and_run("tr", "ar", "loop")}
  %old = atomicrmw add ptr %donep, i64 1 release
  br label %loop
{backoff("nap", "idle1", "loop")}
quit:
  ret i64 1
sleep:
  ret i64 0
}}
"""

def trampoline_ir(nbufs:int, nvals:int, shared:bool=True) -> str:
  """tramp(kernel, args, share): kernel(args[0..nbufs) as pointers, args[nbufs..] as int32, share), args an array of int64; the share
  left out for a kernel that is not shared (no THREAD axis: it takes no share id)"""
  loads, params = [], []
  for i in range(nbufs + nvals):
    loads.append(f"  %p{i} = getelementptr inbounds i64, ptr %args, i64 {i}")
    if i < nbufs:
      loads.append(f"  %a{i} = load ptr, ptr %p{i}, align 8")
      params.append(f"ptr %a{i}")
    else:
      loads += [f"  %q{i} = load i64, ptr %p{i}, align 8", f"  %a{i} = trunc i64 %q{i} to i32"]
      params.append(f"i32 %a{i}")
  body = "\n".join(loads)
  return f"""define void @tg_tramp(ptr %fn, ptr %args, i32 %share) nounwind {{
entry:
{body}
  call void %fn({', '.join(params + (['i32 %share'] if shared else []))})
  ret void
}}
"""

class _Native:
  """the compiled launch and spin loop, and one trampoline per kernel signature, through the LLVM compiler's disk cache"""
  def __init__(self):
    from tinygrad.runtime.ops_cpu import LLVMCompiler  # the CPU runtime imports this module: no cycle at import
    self.compiler, self.trampolines, self.programs = LLVMCompiler(), {}, []
    launch, work, many = self._load(pool_ir(self.compiler.triple), "tg_pool_launch", "tg_pool_work", "tg_pool_launch_many")
    self.launch = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_void_p]*4, ctypes.c_int64)(launch)
    self.launch_many = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(many)
    self.work = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)(work)

  def _load(self, src:str, *names:str) -> list[int]:
    prg = self.compiler.load(names[0], self.compiler.compile_cached(src))
    self.programs.append(prg)  # keeps its code mapped
    return [prg.addr] + [prg.keepalive.get_function_address(n) for n in names[1:]]

  def trampoline(self, nbufs:int, nvals:int, shared:bool=True) -> int:
    if (addr := self.trampolines.get(key := (nbufs, nvals, shared))) is None:
      addr = self.trampolines[key] = self._load(trampoline_ir(nbufs, nvals, shared), "tg_tramp")[0]
    return addr

class NativePool:
  """n helper threads spinning on one control block. A launch runs a kernel's shares on the caller and the helpers; launches from
  several python threads take turns (the control block holds one job), and one that finds the pool taken runs its shares itself"""
  def __init__(self, native:_Native, n:int):
    self.native, self.n, self.lock = native, n, threading.Lock()
    words = (ctypes.c_int64 * 40)()  # the control block, 64-byte aligned inside
    self._words, self.ctl = words, (ctypes.addressof(words) + 63) // 64 * 64
    ctypes.c_int64.from_address(self.ctl + 208).value = _sched_yield() or 0
    self.asleep, self.wakeups = [False] * n, [queue.SimpleQueue() for _ in range(n)]
    self.threads = [threading.Thread(target=self._helper, args=(i,), name=f"tg-cpu-{i}", daemon=True) for i in range(n)]
    for t in self.threads: t.start()

  def _helper(self, i:int):
    while not self.native.work(self.ctl, SPIN_ROUNDS):  # 0: no work for SPIN_ROUNDS rounds; 1: stopped
      self.asleep[i] = True
      self.wakeups[i].get()

  def run(self, fxn, args:list, shares:int) -> int|None:
    """fxn(*args, i) for every share i (fxn: a ctypes function of pointers, int32s and the share id); how many shares the caller ran
    itself, or None (and nothing run) when another python thread holds the pool"""
    if not self.lock.acquire(blocking=False): return None
    try:
      self._wake()
      if (target := getattr(fxn, "tg_native", None)) is None:
        nbufs = fxn.argtypes.count(ctypes.c_void_p)
        target = fxn.tg_native = (self.native.trampoline(nbufs, len(fxn.argtypes) - nbufs - 1), ctypes.cast(fxn, ctypes.c_void_p).value)
      return self.native.launch(self.ctl, target[0], target[1], (ctypes.c_int64 * len(args))(*args), shares)
    finally: self.lock.release()

  def run_many(self, jobs, n:int) -> bool:
    """n launches in order from one call: `jobs` an int64 array of (trampoline, kernel, argument block, shares) records (a TinyJit
    replay, graph_cpu.py). False (and nothing run) when another python thread holds the pool"""
    if not self.lock.acquire(blocking=False): return False
    try:
      self._wake()
      self.native.launch_many(self.ctl, ctypes.addressof(jobs), n)
      return True
    finally: self.lock.release()

  def _wake(self):
    for i, sleeping in enumerate(self.asleep):
      if sleeping:  # a helper that goes to sleep just after this look misses this launch: the caller runs its shares
        self.asleep[i] = False
        self.wakeups[i].put(None)

  def stop(self):
    """the helpers leave their loops (at exit: none is left spinning while the interpreter shuts down)"""
    ctypes.c_int64.from_address(self.ctl + 192).value = 1
    for q in self.wakeups: q.put(None)

def _sched_yield() -> int|None:
  try: return ctypes.cast(ctypes.CDLL(None).sched_yield, ctypes.c_void_p).value
  except (OSError, AttributeError, TypeError): return None

_native: list = []  # [the _Native], or [None] where it can't be built
def native() -> _Native|None:
  """the compiled pool, or None without llvmlite (or where LLVM rejects the pool for this CPU: the python helpers run the shares)"""
  if not _native:
    try: _native.append(_Native())
    except ImportError: _native.append(None)
    except Exception as e:  # an untested target's spin hint or atomics: slower threads, not a failed kernel
      if DEBUG >= 1: print(f"CPU: no native thread pool ({type(e).__name__}: {e}); python helper threads run THREAD kernels")
      _native.append(None)
  return _native[0]
