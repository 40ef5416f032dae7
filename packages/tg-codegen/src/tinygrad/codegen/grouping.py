"""GROUP_REDUCE ranges (the GROUP/GROUPTOP opts) -> a reduction shared by the items of a work group. REDUCE(x, r, g) with g a GROUP_REDUCE
range becomes: each item reduces its share, partial = REDUCE(x, r); it stores the partial in a LOCAL buffer at its slot (its LOCAL and
GROUP_REDUCE ids); a BARRIER; then every item reduces the group's partials from LOCAL memory in a loop over the slots of g. The upcast lanes
of one reduce (copies after codegen/expander.py) share one buffer and one barrier; the first item of the group stores the results. When the
reduce sits inside a loop, a barrier before the store keeps an item from overwriting partials another item still reads from the previous
trip. A target without work items runs g as one more loop of the reduce."""
from __future__ import annotations
import functools
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp
from tinygrad.dtype import AddrSpace, dtypes
from tinygrad.helpers import prod

_IDS = (AxisType.GLOBAL, AxisType.LOCAL, AxisType.GROUP_REDUCE, AxisType.WARP)  # ranges that become work-item ids, not loops

def _groups(u:UOp) -> tuple[UOp, ...]: return tuple(sorted((r for r in u.src[1:] if r.arg[1] is AxisType.GROUP_REDUCE), key=lambda r: r.arg))

def _open_ranges(u:UOp) -> set[UOp]:
  """the RANGEs u depends on that no REDUCE or END inside u closes"""
  opn: dict[UOp, frozenset] = {}
  for x in u.toposort():
    s = frozenset().union(*(opn[y] for y in x.src)) if x.src else frozenset()
    if x.op is Ops.RANGE: s = s | {x}
    elif x.op in (Ops.REDUCE, Ops.END): s = s - set(x.src[1:])
    opn[x] = s
  return set(opn[u])

def _flat(rngs:list[UOp]) -> UOp:
  idx = UOp.const(dtypes.weakint, 0)
  for r in rngs: idx = idx * r.src[0].arg + r
  return idx

def _lower_bucket(sink:UOp, bucket:list[UOp]) -> dict[UOp, UOp]:
  """the reduces of `bucket` (one GROUP_REDUCE set, op and dtype) -> their values through one LOCAL buffer"""
  grp, topo = _groups(bucket[0]), sink.toposort()
  # an item's slot: its LOCAL ids and its lane in a tensor core's warp (codegen/opt/tc.py), then the GROUP_REDUCE ids
  local = sorted((u for u in topo if u.op is Ops.RANGE and u.arg[1] in (AxisType.LOCAL, AxisType.WARP)), key=lambda r: r.arg)
  slots = prod(r.src[0].arg for r in local + list(grp))
  partials = [u.src[0].reduce(*[r for r in u.src[1:] if r not in grp], op=u.arg) for u in bucket]
  slot = max([u.arg.slot + 1 for u in topo if u.op is Ops.BUFFER], default=0)
  buf = UOp.placeholder((len(bucket) * slots,), bucket[0].dtype, slot, addrspace=AddrSpace.LOCAL)
  in_loop = any(r.arg[1] not in _IDS for p in partials for r in _open_ranges(p))
  dst = buf.after(partials[0].barrier(*partials[1:])) if in_loop else buf
  stores = [dst[i * slots + _flat(local + list(grp))].store(p) for i, p in enumerate(partials)]
  shared = buf.after(stores[0].barrier(*stores[1:]))
  fresh = max(u.arg[0] for u in topo if u.op is Ops.RANGE) + 1
  rd = [UOp.range(g.src[0].arg, fresh + k, AxisType.REDUCE, g.dtype) for k, g in enumerate(grp)]
  return {u: shared[i * slots + _flat(local + rd)].load().reduce(*rd, op=u.arg) for i, u in enumerate(bucket)}

def lower_groups(sink:UOp, renderer) -> UOp:
  grouped = lambda s: [u for u in s.toposort() if u.op is Ops.REDUCE and _groups(u)]
  if not (todo := grouped(sink)): return sink
  if renderer is None or not renderer.has_local:
    return sink.substitute({g: g.replace(arg=(g.arg[0], AxisType.REDUCE)) for u in todo for g in _groups(u)})
  first = {g: None for u in todo for g in _groups(u)}
  while todo:
    # innermost first: a grouped reduce whose value feeds another one is lowered before it
    pending = set(todo)
    inner = [u for u in todo if not any(v in pending for v in u.src[0].toposort())]
    key = lambda u: (_groups(u), u.arg, u.dtype)
    sink = sink.substitute(_lower_bucket(sink, [u for u in inner if key(u) == key(inner[0])]))
    todo = grouped(sink)
  # every item of a group has the result: only the first stores it (an in-place update, out[i] = out[i] + sum, must run once)
  lead = functools.reduce(lambda a, b: a & b, [g.eq(0) for g in first])
  return sink.substitute({u: u.replace(src=u.src[:2] + ((lead if len(u.src) < 3 else u.src[2] & lead),)) for u in sink.toposort()
                          if u.op is Ops.STORE and _base(u.src[0]).op is Ops.PARAM})

def _base(x:UOp) -> UOp:
  """the buffer an INDEX (or a buffer) addresses, through AFTER"""
  if x.op is Ops.INDEX: x = x.src[0]
  while x.op is Ops.AFTER: x = x.src[0]
  return x
