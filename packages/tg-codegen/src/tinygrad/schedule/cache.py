"""Schedule cache: a program that realizes the same graph again on other buffers (a training step, an inference loop) skips scheduling.
The key is the targets' graph with every device buffer replaced by a numbered placeholder (numbered in toposort order, so which nodes
share a buffer stays in the key) and every bound Variable by the Variable, plus the ContextVars (they steer scheduling). The graph is
hash-consed, so the normalized graph itself is the key. A hit replays the stored schedule: placeholders become this call's buffers, the
buffers the first call allocated become new ones, and each kernel reads this call's Variable values. Anything the abstraction cannot
express (an unbound Variable, a buffer it did not see) is never cached: a miss always schedules from scratch. SCACHE=0 turns it off."""
from __future__ import annotations
import dataclasses
from collections import OrderedDict
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import AddrSpace
from tinygrad.helpers import ContextVar
from tinygrad.schedule.rangeify import ExecItem, create_schedule

SCACHE = ContextVar("SCACHE", 1)
CACHE_SIZE = 256  # entries, least recently used dropped first: a program that builds ever new graphs must not grow it without bound

@dataclasses.dataclass
class _Entry:
  items: list[ExecItem]            # bufs are placeholders; var_vals only name the Variables each kernel reads
  becomes: list[tuple[UOp, UOp]]   # (the node in the normalized graph, its result over placeholders and unbound Variables)
  fresh: list[UOp]                 # placeholders of the buffers the schedule allocates: new ones on every call

_cache: OrderedDict = OrderedDict()
stats = {"hits": 0, "misses": 0}

def clear():
  _cache.clear()
  stats.update(hits=0, misses=0)

def _is_device_buffer(u:UOp) -> bool: return u.op is Ops.BUFFER and u.arg.addrspace is AddrSpace.GLOBAL and u.arg.slot >= 0
def _hole(u:UOp, n:int) -> UOp: return u.replace(arg=dataclasses.replace(u.arg, slot=-1-n))

def _normalize(nodes:list[UOp]) -> tuple[dict[UOp, UOp], list[UOp], dict[str, int]]|None:
  """each node of the graph (nodes in toposort, the sink last) with buffers and bindings taken out, its buffers in order, its Variables'
  values; None where it can't be cached"""
  new: dict[UOp, UOp] = {}
  bufs: list[UOp] = []
  vals: dict[str, int] = {}
  if any(u.op is Ops.DEFINE_VAR for u in nodes) and {u for u in nodes if u.op is Ops.DEFINE_VAR} - {u.src[0] for u in nodes if u.op is Ops.BIND}:
    return None  # a Variable that is not bound has no value to replay with
  for u in nodes:
    if _is_device_buffer(u):
      new[u] = _hole(u, len(bufs))
      bufs.append(u)
    elif u.op is Ops.BIND:
      var, val = u.unbind()
      if vals.setdefault(var.arg.name, val) != val: return None  # two values in one realize: the scheduler says what is wrong
      new[u] = var
    else: new[u] = u if all(new[s] is s for s in u.src) else u.replace(src=tuple(new[s] for s in u.src))
  return new, bufs, vals

def create_schedule_cached(targets:list[UOp]) -> tuple[list[ExecItem], dict[UOp, UOp]]:
  """create_schedule(targets), from the cache when a graph of the same structure was scheduled before"""
  if not SCACHE: return create_schedule(targets)
  nodes = list(UOp.sink(*targets).toposort())
  if (norm := _normalize(nodes)) is None: return create_schedule(targets)
  new, bufs, vals = norm
  key = (new[nodes[-1]], tuple((k, v.value) for k, v in ContextVar._cache.items()))
  try: entry = _cache.get(key)
  except TypeError: return create_schedule(targets)  # a ContextVar set to something unhashable: no key, no cache
  if entry is not None:
    _cache.move_to_end(key)
    stats["hits"] += 1
    return _replay(entry, new, bufs, vals)
  stats["misses"] += 1
  items, becomes = create_schedule(targets)
  if (entry := _abstract(items, becomes, new, bufs)) is not None:
    _cache[key] = entry
    if len(_cache) > CACHE_SIZE: _cache.popitem(last=False)
  return items, becomes

def _abstract(items:list[ExecItem], becomes:dict[UOp, UOp], new:dict[UOp, UOp], bufs:list[UOp]) -> _Entry|None:
  """the schedule with this call's buffers and values taken out; None when some buffer or binding is left that a replay could not redo"""
  holes = {b: _hole(b, i) for i, b in enumerate(bufs)}
  for it in items:
    for b in it.bufs:
      if b not in holes: holes[b] = _hole(b, len(holes))
  fresh = [holes[b] for b in list(holes)[len(bufs):]]
  # a node is found again by its normalized form: unique but for a Variable and its BINDs (all map to the Variable)
  if any(u not in new or u.op in (Ops.BIND, Ops.DEFINE_VAR) for u in becomes): return None
  abstract = [(new[u], r.substitute(holes | _binds_in(r))) for u, r in becomes.items()]
  ast_bufs = [u for it in items if it.ast is not None for u in it.ast.toposort() if _is_device_buffer(u)]
  left = [u for _, r in abstract for u in r.toposort() if _is_device_buffer(u) or u.op is Ops.BIND]
  if ast_bufs or left: return None
  return _Entry([ExecItem(it.kind, it.ast, [holes[b] for b in it.bufs], {k: 0 for k in it.var_vals}) for it in items], abstract, fresh)

def _binds_in(u:UOp) -> dict[UOp, UOp]:
  """the results are rebound to this call's values (create_schedule's _rebind): any BIND in them becomes its Variable"""
  return {b: b.src[0] for b in u.toposort() if b.op is Ops.BIND}

def _replay(entry:_Entry, new:dict[UOp, UOp], bufs:list[UOp], vals:dict[str, int]) -> tuple[list[ExecItem], dict[UOp, UOp]]:
  fill = {_hole(b, i): b for i, b in enumerate(bufs)}
  fill |= {h: UOp.new_buffer(h.arg.device, h.arg.shape[0], h.dtype) for h in entry.fresh}
  items = [ExecItem(it.kind, it.ast, [fill[b] for b in it.bufs], {k: vals[k] for k in it.var_vals}) for it in entry.items]
  bind, original = {}, {}
  for u, n in new.items():
    if u.op is Ops.BIND: bind[u.src[0]] = u
    elif u.op is not Ops.DEFINE_VAR: original[n] = u
  return items, {original[n]: r.substitute(fill | bind) for n, r in entry.becomes}
