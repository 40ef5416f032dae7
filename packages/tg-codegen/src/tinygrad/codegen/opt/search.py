"""BEAM=N: opts chosen by timing. Each round extends every opt list of the beam by one more opt (`actions`), compiles the candidates in
worker processes, runs each on the device with scratch buffers and keeps the N fastest (one slower than BEAM_CUTOFF times the best so
far is stopped there); it stops when a round gains less than BEAM_MIN_GAIN. The finalists are timed again in turn, and the heuristic's
opts are kept unless one beats them by BEAM_MIN_GAIN. The winner is cached on disk keyed by the kernel's content, the renderer and its
target, so a second run searches nothing. Progress goes to stderr: round, candidates timed, best time so far."""
from __future__ import annotations
import concurrent.futures, dataclasses, math, multiprocessing, os, select, signal, struct, sys, time
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, KernelInfo
from tinygrad.helpers import ContextVar, getenv, diskcache_get, diskcache_put, prod
from tinygrad.codegen.opt.kernel import Opt, OptOps, OptError, OUTPUT, REDUCE, apply_opts, axes, lanes, size
from tinygrad.codegen.opt.heuristic import THREADS, CODE_BUDGET, hand_coded_opts
from tinygrad.codegen.opt.tc import tc_actions

BEAM_MIN_GAIN = ContextVar("BEAM_MIN_GAIN", 0.01)  # a round must beat the best so far by this share, or the search ends
BEAM_AMTS = (2, 3, 4, 8, 16)
PAD_AMTS = (4, 8, 16)  # padded up to these, an axis of an odd size (57, 1000) takes an UPCAST/UNROLL/LOCAL of the same amount
GROUP_AMTS = (2, 4, 8, 16, 32, 64, 128, 256)  # work-group items of a LOCAL or GROUP axis
# a candidate slower than this many times the best so far is stopped there: it cannot join a beam the best already leads, and an
# unoptimized matmul 2048 would run for minutes
BEAM_CUTOFF = ContextVar("BEAM_CUTOFF", 2.0)
FORK_SLACK_S = 0.2  # a forked child's start and its copy-on-write faults, on top of the cutoff
CONFIRM_ROUNDS = 5  # the finalists (the beam and the heuristic's opts) timed again in turn this many times each

def actions(ast:UOp, renderer) -> list[Opt]:
  """every opt BEAM may add to `ast` next: TC on each tensor core of the renderer that fits (first only), UPCAST of an output axis, UNROLL of a reduce axis, THREAD of an output axis by the thread
  count (once), SWAP of an output axis with the innermost one, PADTO of an axis no amount divides; where the renderer has work items,
  LOCAL of a grid axis and GROUP/GROUPTOP of a reduce axis. Whether one fits is apply_opt's to say (OptError): the same rules as for
  any other opt list"""
  ret, threads = tc_actions(ast, renderer), THREADS.value if getattr(renderer, "has_threads", False) else 1
  items = getattr(renderer, "has_local", False)
  out = [i for i, r in enumerate(axes(ast)) if r.arg[1] in OUTPUT]
  ret += [Opt(OptOps.SWAP, i, out[-1]) for i in out[:-1]]
  for i, r in enumerate(axes(ast)):
    if (n := size(r)) is None: continue
    kind = OptOps.UPCAST if r.arg[1] in OUTPUT else OptOps.UNROLL if r.arg[1] in REDUCE else None
    if kind is not None: ret += [Opt(kind, i, a) for a in BEAM_AMTS if a <= n and n % a == 0]
    if r.arg[1] in OUTPUT and threads > 1 and n % threads == 0: ret.append(Opt(OptOps.THREAD, i, threads))
    ret += [Opt(OptOps.PADTO, i, a) for a in PAD_AMTS if n % a]
    if items and r.arg[1] is AxisType.GLOBAL: ret += [Opt(OptOps.LOCAL, i, a) for a in GROUP_AMTS if a <= n and n % a == 0]
    if items and r.arg[1] in REDUCE: ret += [Opt(op, i, a) for op in (OptOps.GROUP, OptOps.GROUPTOP) for a in GROUP_AMTS if a <= n and n % a == 0]
  return ret

def _with_opts(ast:UOp, opts:tuple[Opt, ...]) -> UOp:
  info = ast.arg if isinstance(ast.arg, KernelInfo) else KernelInfo()
  return ast.replace(arg=KernelInfo(info.name, tuple(opts), info.dont_use_locals))

def _extend(ast:UOp, opts:tuple[Opt, ...], renderer) -> list[tuple[Opt, ...]]:
  base, nodes = apply_opts(ast, opts, renderer), len(ast.toposort())
  ret = []
  for o in actions(base, renderer):
    if o.op is OptOps.SWAP and opts and opts[-1] == o: continue  # a swap twice is no swap
    try: new = apply_opts(base, [o], renderer)
    except OptError: continue
    if o.op is OptOps.THREAD or nodes * lanes(new) <= CODE_BUDGET: ret.append(opts + (o,))
  return ret

# *** compiling in worker processes: forked, they see the jobs list as it was when the pool started ***

_JOBS: list[tuple[UOp, object]] = []
_CACHED = False  # the jobs' binaries go through the compiler's disk cache

def _compile(i:int):
  from tinygrad.codegen import get_program
  ast, renderer = _JOBS[i]
  try:
    spec = get_program(ast, renderer)
    compiler = _compiler(renderer)
    return dataclasses.replace(spec, uops=()), (compiler.compile_cached if _CACHED else compiler.compile)(spec.src)
  except Exception as e: return None, f"{type(e).__name__}: {e}"

def _compiler(renderer):
  from tinygrad.device import Device
  return Device[renderer.device].compiler

def compile_all(asts:list[UOp], renderer, workers:int|None=None, cached:bool=False) -> list[tuple]:
  """(spec, lib) per kernel AST, or (None, error text); in parallel worker processes where fork exists (BEAM_WORKERS=0: in process).
  cached: the binaries go through the compiler's disk cache (a schedule's programs; not BEAM's candidates)"""
  global _JOBS, _CACHED
  _JOBS, _CACHED = [(a, renderer) for a in asts], cached
  workers = min(getenv("BEAM_WORKERS", os.cpu_count() or 1) if workers is None else workers, len(asts))
  if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods(): return [_compile(i) for i in range(len(asts))]
  _compiler(renderer)  # open the device before forking, so no worker opens its own
  with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
    return list(pool.map(_compile, range(len(asts))))

# *** timing ***

def _scratch(ast:UOp, device:str) -> list:
  """one zero-filled device buffer per PARAM slot of the kernel: timing does not care about values, and index buffers of zeros stay in
  bounds. The zeros are written: memory never written reads the kernel's one shared zero page, always in cache, and every candidate
  would look as fast as its arithmetic"""
  from tinygrad.device import Buffer
  params = {u.arg.slot: u for u in ast.toposort() if u.op is Ops.PARAM and u.dtype is not None and u.arg.shape}
  bufs = [Buffer(device, max(1, prod(params[s].arg.shape)), params[s].dtype).ensure_allocated() for s in sorted(params)]
  for b in bufs: b.copyin(memoryview(bytearray(b.nbytes)))  # a cached buffer holds stale data
  return bufs

def time_program(spec, lib, device:str, bufs:list, budget_s:float=0.5, cutoff_s:float=math.inf) -> float:
  """the best of a few runs, fewer for slow kernels (one run past budget_s). With a finite cutoff_s, on a device whose programs run in
  this process (Compiled.runs_in_process) where fork exists, the runs happen in a forked child that is killed once a run takes longer
  than cutoff_s (the result: inf): a slow candidate costs the cutoff, not its minutes"""
  from tinygrad.device import Device
  prg = Device[device].runtime(spec.name, lib)
  gs, ls = spec.launch_dims({})
  args = [b._buf for b in bufs[:spec.nbufs]]
  def runs():
    spent = 0.0
    for _ in range(3):
      yield (t := prg(*args, global_size=gs, local_size=ls, wait=True))
      if (spent := spent + t) > budget_s or t > cutoff_s: break
  if math.isinf(cutoff_s) or not getattr(Device[device], "runs_in_process", False) or not hasattr(os, "fork"): return min(runs())
  return _in_child(runs, cutoff_s)

def _in_child(runs, cutoff_s:float) -> float:
  """min(runs()) computed in a forked child (it shares the buffers copy-on-write), which reports each time through a pipe and is killed
  when one takes past cutoff_s"""
  r, w = os.pipe()
  if (pid := os.fork()) == 0:
    try:
      os.close(r)
      for t in runs(): os.write(w, struct.pack("<d", t))
    finally: os._exit(0)  # no atexit handlers, no flushing the parent's buffers
  os.close(w)
  best = math.inf
  try:
    while select.select([r], [], [], cutoff_s + FORK_SLACK_S)[0] and len(data := os.read(r, 8)) == 8:
      best = min(best, struct.unpack("<d", data)[0])
  finally:
    os.close(r)
    try: os.kill(pid, signal.SIGKILL)
    except ProcessLookupError: pass
    os.waitpid(pid, 0)
  return best if best <= cutoff_s else math.inf

def _progress(msg:str, final:bool=False):
  """one status line, rewritten in place on a terminal; where stderr is a file or a pipe only the final line, plain"""
  if getenv("BEAM_QUIET", 0): return
  if sys.stderr.isatty(): print(f"\r{msg}\033[K", end="\n" if final else "", file=sys.stderr, flush=True)
  elif final: print(msg, file=sys.stderr, flush=True)

def beam_search(ast:UOp, renderer, width:int) -> list[Opt]:
  """the fastest opt list found by a beam of `width`, from the disk cache when this kernel was searched before"""
  # the SIMD registers too: the same renderer on an AVX2 and an AVX-512 host tiles for different registers (a cache copied across)
  key = {"ast": ast.key.hex(), "renderer": type(renderer).__name__, "target": getattr(renderer, "arch", None) or "",
         "simd": (getattr(renderer, "vector_bytes", None), getattr(renderer, "vector_registers", None)),
         "device": renderer.device, "width": width, "threads": THREADS.value}
  if (hit := diskcache_get("beam_search", key)) is not None: return list(hit)
  if not 0 <= BEAM_MIN_GAIN.value < 1: raise ValueError(f"BEAM_MIN_GAIN={BEAM_MIN_GAIN.value}: the share a round must gain, in [0, 1)")
  if not BEAM_CUTOFF.value >= 1: raise ValueError(f"BEAM_CUTOFF={BEAM_CUTOFF.value}: a candidate stops at this many times the best, at least 1")
  if any(u.op is Ops.DEFINE_VAR for u in ast.toposort()) or any(size(r) is None for r in axes(ast)): return hand_coded_opts(ast, renderer)
  name, bufs, st = ast.arg.name if isinstance(ast.arg, KernelInfo) else "kernel", _scratch(ast, renderer.device), time.perf_counter()
  timed: dict[tuple[Opt, ...], float] = {}
  programs: dict[tuple[Opt, ...], tuple] = {}  # each compiled candidate's (spec, lib): the finalists are timed again
  def run(cands:list[tuple[Opt, ...]]):
    cands = [c for c in dict.fromkeys(cands) if c not in timed]
    for n, (c, (spec, lib)) in enumerate(zip(cands, compile_all([_with_opts(ast, c) for c in cands], renderer))):
      if spec is not None: programs[c] = (spec, lib)
      cutoff = BEAM_CUTOFF.value * min(timed.values(), default=math.inf)
      timed[c] = math.inf if spec is None else time_program(spec, lib, renderer.device, bufs, cutoff_s=cutoff)
      _progress(f"BEAM {name}: {len(timed)} timed, {n+1}/{len(cands)} this round, best {min(timed.values())*1e3:.3f} ms, {time.perf_counter()-st:.1f} s")
  run([heuristic := tuple(hand_coded_opts(ast, renderer)), ()])  # the heuristic's first: it sets the cutoff for the rest
  beam = sorted(timed, key=timed.get)[:width]
  while True:
    best, before = timed[beam[0]], len(timed)
    run([c for opts in beam for c in _extend(ast, opts, renderer)])
    beam = sorted(timed, key=timed.get)[:width]
    # no new candidate, or too little gain (with BEAM_MIN_GAIN=0 an unchanged best ends it: it looped on a beam it had timed)
    if len(timed) == before or timed[beam[0]] >= best * (1 - BEAM_MIN_GAIN.value): break
  finalists = {c: programs[c] for c in [heuristic] + beam if c in programs and math.isfinite(timed[c])}
  winner, ms = _confirmed(renderer, bufs, finalists, heuristic) if finalists else (beam[0], math.inf)
  _progress(f"BEAM {name}: {list(winner)} at {ms:.3f} ms ({len(timed)} timed in {time.perf_counter()-st:.1f} s)", final=True)
  return list(diskcache_put("beam_search", key, winner))

def _confirmed(renderer, bufs:list, finalists:dict, heuristic:tuple[Opt, ...]) -> tuple[tuple[Opt, ...], float]:
  """the fastest of `finalists` (opts -> compiled (spec, lib)) timed again in turn, CONFIRM_ROUNDS times each, by median; and its
  median ms. One timing per candidate lets a noisy host pick (a sum's and a softmax's search kept opts 1.4x slower than the
  heuristic's): the heuristic's opts stay unless another list's median beats theirs by BEAM_MIN_GAIN"""
  rounds: dict[tuple[Opt, ...], list[float]] = {c: [] for c in finalists}
  for _ in range(CONFIRM_ROUNDS):
    for c, (spec, lib) in finalists.items(): rounds[c].append(time_program(spec, lib, renderer.device, bufs))
  median = {c: sorted(ts)[len(ts) // 2] for c, ts in rounds.items()}
  winner = min(median, key=median.get)
  if heuristic in median and median[winner] > median[heuristic] * (1 - BEAM_MIN_GAIN.value): winner = heuristic
  return winner, median[winner] * 1e3
