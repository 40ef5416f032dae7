"""Kernel AST -> rendered program: lowering passes, linearize, render. Compiling and running belong to the engine."""
from __future__ import annotations
import contextlib, functools, gc
from dataclasses import dataclass
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, KernelInfo, sint, sym_infer
from tinygrad.helpers import DEBUG, TRANSCENDENTAL, NOOPT, BEAM, to_function_name, prod, all_int
from tinygrad.codegen.lowering import rewrite_to_program, FMA
from tinygrad.codegen.linearize import linearize
from tinygrad.codegen.gpudims import workitem
from tinygrad.codegen.opt import THREADS
from tinygrad.codegen.opt.tc import TC
from tinygrad.codegen.prefix_scan import SCAN
from tinygrad.codegen import lowering_cache

@dataclass(frozen=True)
class ProgramSpec:
  name: str
  src: str
  uops: tuple[UOp, ...]
  nbufs: int                     # PARAM slots 0..nbufs-1 are the buffer arguments
  vars: tuple[str, ...]          # then one int argument per variable, sorted by name
  ops: int                       # estimated ALU ops per run (loops with constant bounds counted fully)
  mem: int                       # estimated bytes loaded and stored per run
  exact: bool                    # False when a loop's trip count is unknown (bound-less or symbolic): ops/mem count it once
  # launch grid, read off the work-item ids (SPECIALs): groups per dim and items per group; symbolic sizes resolve with launch_dims
  global_size: tuple[sint, ...] = (1, 1, 1)
  local_size: tuple[sint, ...] = (1, 1, 1)

  @functools.cached_property
  def fixed_dims(self) -> tuple[tuple[int, ...], tuple[int, ...]]|None:
    return (tuple(self.global_size), tuple(self.local_size)) if all_int(self.global_size + self.local_size) else None
  def launch_dims(self, var_vals:dict[str, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(global_size, local_size) as ints, symbolic sizes evaluated with the variables' values (sizes without any: worked out once)"""
    if (fixed := self.fixed_dims) is not None: return fixed
    return tuple(int(sym_infer(s, var_vals)) for s in self.global_size), tuple(int(sym_infer(s, var_vals)) for s in self.local_size)

def launch_grid(lin:list[UOp]) -> tuple[tuple[sint, ...], tuple[sint, ...]]:
  """(groups per dim, items per group per dim) from the sizes of a program's work-item ids"""
  size: dict[tuple[str, int], UOp] = {}
  for u in lin:
    if u.op is Ops.SPECIAL and size.setdefault(k := workitem(u.arg), u.src[0]) is not u.src[0]:
      raise RuntimeError(f"work item {u.arg} has two sizes: {size[k].render()} and {u.src[0].render()}")
  def dim(kind:str, d:int, default:sint) -> sint: return default if (s := size.get((kind, d))) is None else s.arg if s.op is Ops.CONST else s
  local = tuple(dim("lidx", d, 1) for d in range(3))
  # idx counts the items of the grid: that many items, in groups of local_size
  return tuple(dim("gidx", d, 1) if ("gidx", d) in size else dim("idx", d, local[d]) // local[d] for d in range(3)), local

def _estimates(lin:list[UOp], items:int|None) -> tuple[int, int, bool]:
  """(ops, mem, exact) of a run, over all `items` work items (None: a symbolic grid, counted once)"""
  ops, mem, mult, exact = 0, 0, [1 if items is None else items], items is not None
  for u in lin:
    if u.op is Ops.RANGE:
      known = bool(u.src) and u.src[0].op is Ops.CONST
      mult.append(mult[-1] * (u.src[0].arg if known else 1))
      exact = exact and known
    elif u.op is Ops.END: mult.pop()
    elif u.op in GroupOp.ALU: ops += mult[-1] * (2 if u.op is Ops.MULACC else 1)  # a fused multiply-add is two flops
    elif u.op is Ops.WMMA: ops += mult[-1] * 2 * u.arg[0].dims[2]  # each lane's D element: a K-long dot product
    elif u.op is Ops.LOAD: mem += mult[-1] * u.dtype.itemsize
    elif u.op is Ops.STORE: mem += mult[-1] * u.src[1].dtype.itemsize
  return ops, mem, exact

def strip_after(lin:list[UOp]) -> list[UOp]:
  """renderers address the buffer itself: INDEX(AFTER(buf, ...), i) -> INDEX(buf, i). AFTER made two reads of one address
  different nodes; each rebuilt INDEX/LOAD is tagged with its position so they stay different (and are rendered twice)."""
  new: dict[UOp, UOp] = {}
  out = []
  index, after, load = Ops.INDEX, Ops.AFTER, Ops.LOAD  # read once: every node asks
  for pos, u in enumerate(lin):
    src = tuple([new.get(s, s) for s in u.src])
    if u.op is index:
      b = src[0]
      while b.op is after: b = b.src[0]
      src = (b,) + src[1:]
    if src != u.src: new[u] = u.replace(src=src, tag=pos if u.op is index or u.op is load else u.tag)
    out.append(new.get(u, u))
  return out

@contextlib.contextmanager
def _no_cycle_collection():
  """lowering builds and drops graphs by the hundred thousand nodes, acyclic ones that reference counting frees; each cycle collection
  in between scans the whole heap instead (in the main job's process, with numpy and scikit-learn loaded, ~40% of the time its first
  step spent lowering). A collector someone else turned off stays off"""
  if not gc.isenabled():
    yield
    return
  gc.disable()
  try: yield
  finally: gc.enable()

def get_program(ast:UOp, renderer) -> ProgramSpec:
  with _no_cycle_collection(): return _get_program(ast, renderer)

def _get_program(ast:UOp, renderer) -> ProgramSpec:
  if ast.op is not Ops.SINK: raise RuntimeError(f"a kernel is a SINK, got {ast.op}")
  lin = strip_after(linearize(rewrite_to_program(ast, renderer)))
  # the engine passes buffers by slot: one whose reads all simplified away (where(c, a, a) -> a) is still an argument
  used = set(lin)
  lin = [u for u in ast.toposort() if u.op is Ops.PARAM and u not in used] + lin
  name = to_function_name(ast.arg.name if isinstance(ast.arg, KernelInfo) else "kernel")
  src = renderer.render(name, lin)
  if DEBUG >= 4: print(src)
  nbufs = max([u.arg.slot+1 for u in lin if u.op is Ops.PARAM], default=0)
  variables = tuple(sorted({u.arg.name for u in lin if u.op is Ops.DEFINE_VAR}))
  glob, local = launch_grid(lin)
  items = prod(glob) * prod(local) if all_int(glob + local) else None
  return ProgramSpec(name, src, tuple(lin), nbufs, variables, *_estimates(lin, items), glob, local)

# the switches that change what lowering emits: part of every memo's key (in process and on disk)
LOWERING_SWITCHES = (TRANSCENDENTAL, NOOPT, THREADS, BEAM, FMA, TC, SCAN)

def _switches() -> tuple[int, ...]: return tuple(v.value for v in LOWERING_SWITCHES)

def get_program_cached(ast:UOp, renderer) -> ProgramSpec:
  """get_program memoised per AST and renderer, and per switch that changes what lowering emits; across processes through the disk cache
  (codegen/lowering_cache.py)"""
  return _get_program_memo(ast, renderer, *_switches())

# on a kernel AST: that the memo lowered it (for some renderer and switches), and a program lowered elsewhere (a worker process, an
# earlier process through the disk cache) that the memo's next miss for it takes instead of lowering
_LOWERED, _SEED = "_lowered", "_seeded_program"

@functools.lru_cache(maxsize=4096)
def _get_program_memo(ast:UOp, renderer, *switches:int) -> ProgramSpec:
  ast.__dict__[_LOWERED] = True
  if (seed := _take_seed(ast, renderer)) is not None and seed[1]: return seed[0]  # from the disk cache
  key = lowering_cache.lowering_key(ast, renderer, switches) if lowering_cache.enabled() else None
  if seed is None and key is not None and (spec := lowering_cache.load(key)) is not None: return spec
  spec = seed[0] if seed is not None else get_program(ast, renderer)
  if key is not None: lowering_cache.store(key, spec)
  return spec

def lowered(ast:UOp) -> bool:
  """whether get_program_cached has lowered ast before (for any renderer and switches: one attribute read, asked for every kernel of
  every realize)"""
  return _LOWERED in ast.__dict__

def seed_program(ast:UOp, renderer, spec:ProgramSpec, on_disk:bool=False):
  """spec, lowered elsewhere from ast for this renderer under the same switches, is what get_program_cached returns for it next (on_disk:
  it came from the disk cache, which needs it no more)"""
  ast.__dict__[_SEED] = ((renderer, _switches()), spec, on_disk)

def _take_seed(ast:UOp, renderer) -> tuple[ProgramSpec, bool]|None:
  """(spec, on_disk) seeded for ast, this renderer and the switches now, taken (a seed for others is dropped)"""
  if (seed := ast.__dict__.pop(_SEED, None)) is None or seed[0] != (renderer, _switches()): return None
  return seed[1], seed[2]

def load_lowered(ast:UOp, renderer) -> bool:
  """whether the disk cache has ast's program for this renderer under the switches now: it is then seeded (get_program_cached takes it)"""
  if not lowering_cache.enabled() or (key := lowering_cache.lowering_key(ast, renderer, _switches())) is None: return False
  if (spec := lowering_cache.load(key)) is None: return False
  seed_program(ast, renderer, spec, on_disk=True)
  return True

__all__ = ["ProgramSpec", "get_program", "get_program_cached"]
