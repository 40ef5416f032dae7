"""Schedule cache: a program that realizes the same graph again on other buffers (a training step, an inference loop) skips scheduling.
The key is the targets' graph with every device buffer replaced by a numbered placeholder (numbered in toposort order, so which nodes
share a buffer stays in the key), every bound Variable by the Variable and every tensor-level tag (an identity that Tensor.full gives each
constant it makes, and contiguous() each copy of constants alone) by its number in the graph, plus the ContextVars (they steer
scheduling). The graph is hash-consed, so the normalized targets themselves are the key (compared by identity). A hit replays the stored schedule: placeholders
become this call's buffers, the buffers the first call allocated become new ones, and each kernel reads this call's Variable values.
Anything the abstraction cannot express (an unbound Variable, a buffer it did not see) is never cached: a miss always schedules from
scratch. SCACHE=0 turns it off."""
from __future__ import annotations
import dataclasses, weakref
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
  becomes: list[tuple[UOp, UOp]]   # (the node in the normalized graph, its result over placeholders and unbound Variables), but static ones
  fresh: list[UOp]                 # placeholders of the buffers the schedule allocates: new ones on every call
  rebuild: list[UOp]               # the results' nodes above a placeholder or Variable, sources first: what a replay makes again
  # a replay works by position, not through dicts keyed by node: each call's buffers are a list, the targets' own (in _normalize's order)
  # then the fresh ones, and placeholder n is its item n
  holes: list[UOp]                 # the placeholders in that order
  slots: list[tuple[int, ...]]     # each item's buffers as indices into it
  at: list[tuple[int, UOp]]        # each becomes key as its index in _walk_order (the same on every graph of one key), and result
  fixed: list[tuple[UOp, UOp]]     # the becomes keys that are static nodes (a constant graph realized), the same node on every call

_cache: OrderedDict = OrderedDict()
stats = {"hits": 0, "misses": 0}

def clear():
  _cache.clear()
  stats.update(hits=0, misses=0)

def _is_device_buffer(u:UOp) -> bool: return u.op is Ops.BUFFER and u.arg.addrspace is AddrSpace.GLOBAL and u.arg.slot >= 0

# a hole is found again rather than rebuilt (dataclasses.replace and a new ParamArg cost more than the rest of a hit): each call's new
# buffers map to the same few holes, which live as long as some cached graph holds them. The last hole a buffer became is also kept
# on the buffer's node: a weight or input realized again and again is one attribute read
_holes: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_LAST_HOLE = "_last_hole"
def _hole(u:UOp, n:int) -> UOp:
  if (last := u.__dict__.get(_LAST_HOLE)) is not None and last[0] == n: return last[1]
  a = u.arg
  if (h := _holes.get(key := (u.dtype, u.src, u.tag, a.shape, a.addrspace, a.device, a.name, a.vmin_vmax, a.volatile, n))) is None:
    h = _holes[key] = u.replace(arg=dataclasses.replace(a, slot=-1-n))
  u.__dict__[_LAST_HOLE] = (n, h)
  return h

# on a node whose graph holds nothing _normalize takes out (no buffer, BIND, Variable or tagged node: constants, aranges, masks, their
# movement ops): it is its own normalized form, so later walks stop there. A pure function of the node's graph, which never changes.
# A non-static node never normalizes to a static one (its form holds a hole, a Variable or a tag), so static nodes are the same node in
# every graph of one key, and the non-static ones come in the same order in every walk: positions are counted among those alone
_STATIC = "_static_graph"
def _is_static(u:UOp) -> bool: return _STATIC in u.__dict__
def _walk_order(new:dict[UOp, UOp], statics:bool) -> list[UOp]:
  """the walk's non-static nodes in its order: the same on every graph of one key, whichever static nodes it went into. statics: the
  walk met some (else every node counts, no test per node)"""
  return [u for u in new if _STATIC not in u.__dict__] if statics else list(new)

def _normalize(roots:list[UOp]) -> tuple[dict[UOp, UOp], list[UOp], dict[str, int], bool]|None:
  """each node of the roots' graph with buffers and bindings taken out, its buffers in toposort order, its Variables' values, whether it
  met a static node; None where it can't be cached. One walk (the toposort's, building as it finishes each node, not entering a static node): this runs on every
  realize"""
  new: dict[UOp, UOp] = {}
  bufs: list[UOp] = []
  vals: dict[str, int] = {}
  defined, bound, statics = set(), set(), False
  tags: dict = {}  # a tensor-level tag (Tensor.full's constant, a contiguous() of constants: unique per call) -> its number in this graph
  # enum members read once, not per node: a local read is cheaper than a class attribute's
  BUFFER, BIND, DEFINE_VAR, CONST, CONTIGUOUS, GLOBAL = Ops.BUFFER, Ops.BIND, Ops.DEFINE_VAR, Ops.CONST, Ops.CONTIGUOUS, AddrSpace.GLOBAL
  stack = [(r, False) for r in reversed(roots)]
  pop, push = stack.pop, stack.append
  while stack:
    u, done = pop()
    if not done:
      if u in new: continue
      if _STATIC in u.__dict__: new[u], statics = u, True
      else:
        push((u, True))
        for s in reversed(u.src):
          if s in new: continue
          # a static source is its own form, taken without a trip through the stack (a movement op's sizes: most sources of a conv's graph)
          if _STATIC in s.__dict__: new[s], statics = s, True
          else: push((s, False))
    elif (op := u.op) is BUFFER and u.arg.slot >= 0 and u.arg.addrspace is GLOBAL:
      # _hole's first test inline: a buffer realized again and again is at the same place in its graph
      new[u] = last[1] if (last := u.__dict__.get(_LAST_HOLE)) is not None and last[0] == len(bufs) else _hole(u, len(bufs))
      bufs.append(u)
    elif op is BIND:
      var, val = u.src[0], u.src[1].arg
      if vals.setdefault(var.arg.name, val) != val: return None  # two values in one realize: the scheduler says what is wrong
      bound.add(var)
      new[u] = var
    elif (op is CONST or op is CONTIGUOUS) and u.tag is not None:
      # the tag only keeps the node apart from equal ones (for autograd, for realize to keep): numbered like the buffers, so which
      # ones are the same stays in the key while a step that makes new ones finds the last step's schedule
      new[u] = UOp(op, u.dtype, tuple([new[s] for s in u.src]), u.arg, tags.setdefault(u.tag, len(tags)))
    elif op is DEFINE_VAR:
      defined.add(u)
      new[u] = u
    # the tuples compare their nodes by identity: the node itself when nothing below it changed
    elif (src := tuple([new[s] for s in u.src])) != u.src: new[u] = UOp(op, u.dtype, src, u.arg, u.tag)
    else:
      new[u] = u
      # a leftover buffer (a hole, a scratch one) is never static: a hole is what a non-static node's form holds
      if op is not BUFFER and all([_STATIC in s.__dict__ for s in src]): u.__dict__[_STATIC] = statics = True
  if defined and defined - bound: return None  # a Variable that is not bound has no value to replay with
  return new, bufs, vals, statics

def create_schedule_cached(targets:list[UOp]) -> tuple[list[ExecItem], dict[UOp, UOp]]:
  """create_schedule(targets), from the cache when a graph of the same structure was scheduled before"""
  if not SCACHE.value: return create_schedule(targets)
  if (norm := _normalize(targets)) is None: return create_schedule(targets)
  new, bufs, vals, statics = norm
  # the ContextVars as a number for their values: the tuple of them would be hashed on every lookup
  try: key = (tuple([new[t] for t in targets]), ContextVar.snapshot_id())
  except TypeError: return create_schedule(targets)  # a ContextVar set to something unhashable: no key, no cache
  if (entry := _cache.get(key)) is not None:
    _cache.move_to_end(key)
    stats["hits"] += 1
    return _replay(entry, new, bufs, vals, statics)
  stats["misses"] += 1
  items, becomes = create_schedule(targets)
  if (entry := _abstract(items, becomes, new, bufs, statics)) is not None:
    _cache[key] = entry
    if len(_cache) > CACHE_SIZE: _cache.popitem(last=False)
  return items, becomes

def _abstract(items:list[ExecItem], becomes:dict[UOp, UOp], new:dict[UOp, UOp], bufs:list[UOp], statics:bool) -> _Entry|None:
  """the schedule with this call's buffers and values taken out; None when some buffer or binding is left that a replay could not redo"""
  holes = {b: _hole(b, i) for i, b in enumerate(bufs)}
  for it in items:
    for b in it.bufs:
      if b not in holes: holes[b] = _hole(b, len(holes))
  order = list(holes.values())
  fresh = order[len(bufs):]
  # a node is found again by its normalized form: unique but for a Variable and its BINDs (all map to the Variable)
  if any(u.op in (Ops.BIND, Ops.DEFINE_VAR) or (u not in new and not _is_static(u)) for u in becomes): return None
  abstract = [(new.get(u, u), r.substitute(holes | _binds_in(r))) for u, r in becomes.items()]
  ast_bufs = [u for it in items if it.ast is not None for u in it.ast.toposort() if _is_device_buffer(u)]
  left = [u for _, r in abstract for u in r.toposort() if _is_device_buffer(u) or u.op is Ops.BIND]
  if ast_bufs or left: return None
  index = {u: i for i, u in enumerate(_walk_order(new, statics))}
  moving = [(n, r, u) for (n, r), u in zip(abstract, becomes) if not _is_static(u)]
  return _Entry([ExecItem(it.kind, it.ast, [holes[b] for b in it.bufs], {k: 0 for k in it.var_vals}, it.offset) for it in items],
                [(n, r) for n, r, _ in moving], fresh, _above(set(order), [r for _, r in abstract]), order,
                [tuple([-1 - holes[b].arg.slot for b in it.bufs]) for it in items], [(index[u], r) for _, r, u in moving],
                [(u, r) for (_, r), u in zip(abstract, becomes) if _is_static(u)])

def _above(leaves:set[UOp], results:list[UOp]) -> list[UOp]:
  """the nodes of results that have a leaf or a Variable below them (the leaves excluded), sources first"""
  above: dict[UOp, None] = {}
  for r in results:
    for u in r.toposort():
      if u not in leaves and u not in above and any(s in leaves or s in above or s.op is Ops.DEFINE_VAR for s in u.src): above[u] = None
  return list(above)

def _binds_in(u:UOp) -> dict[UOp, UOp]:
  """the results are rebound to this call's values (create_schedule's _rebind): any BIND in them becomes its Variable"""
  return {b: b.src[0] for b in u.toposort() if b.op is Ops.BIND}

def _replay(entry:_Entry, new:dict[UOp, UOp], bufs:list[UOp], vals:dict[str, int], statics:bool) -> tuple[list[ExecItem], dict[UOp, UOp]]:
  slots = bufs + [UOp.new_buffer(h.arg.device, h.arg.shape[0], h.dtype) for h in entry.fresh]
  items = [ExecItem(it.kind, it.ast, [slots[i] for i in idx], {k: vals[k] for k in it.var_vals} if it.var_vals else {}, it.offset)
           for it, idx in zip(entry.items, entry.slots)]
  fill = dict(zip(entry.holes, slots))
  if vals: fill |= {u.src[0]: u for u in new if u.op is Ops.BIND}
  # the results are made again from the nodes _abstract listed (no walk): each on its sources' replacements
  for u in entry.rebuild: fill[u] = UOp(u.op, u.dtype, tuple([fill.get(s, s) for s in u.src]), u.arg, u.tag)
  if vals:  # a Variable and its BINDs are one normalized node, so the walks of two graphs of one key may differ: found by node
    # the becomes keys are never a Variable or a BIND (_abstract), the only nodes that several originals share
    original = {n: u for u, n in new.items()}
    results = {original[n]: fill.get(r, r) for n, r in entry.becomes}
  else:  # without them normalizing is one-to-one, so this graph and the first one are the same shape and _normalize walks them alike
    nodes = _walk_order(new, statics)
    results = {nodes[i]: fill.get(r, r) for i, r in entry.at}
  for u, r in entry.fixed: results[u] = fill.get(r, r)
  return items, results
