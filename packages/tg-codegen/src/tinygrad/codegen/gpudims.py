"""GLOBAL/LOCAL ranges -> work-item ids, for renderers with work items (Renderer.has_local): a GLOBAL range becomes the group's id in
the grid (SPECIAL gidx0..2), a LOCAL or GROUP_REDUCE range the item's id in its group (lidx0..2), and its END goes (an id is no loop). Elsewhere they
stay loops. Ids count the fastest axis first: the last GLOBAL axis is gidx0, so neighbouring items touch neighbouring memory, and
dim 0 has the largest limit. More axes than ids, or an axis over its id's limit (Renderer.global_max / local_max): adjacent axes
share one id, or their flat index is split into factors over several ids, and each axis is recovered with div/mod."""
from __future__ import annotations
import itertools, math, operator, re
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite, sint
from tinygrad.dtype import AddrSpace
from tinygrad.helpers import prod

def workitem(name:str) -> tuple[str, int]:
  """a SPECIAL's name -> (kind, dim): "gidx1" -> ("gidx", 1). Kinds: gidx (the group's id in the grid), lidx (the item's id in its
  group), idx (the item's id in the grid, gidx*local_size+lidx). Renderers dispatch on the kind, never on a first letter."""
  if (m := re.fullmatch(r"(gidx|lidx|idx)([0-2])", name)) is None:
    raise ValueError(f"SPECIAL {name!r} is no work item: work items are gidx0..2, lidx0..2 and idx0..2")
  return m[1], int(m[2])

def _limit(s:sint) -> int: return s if isinstance(s, int) else s.vmax  # a symbolic size fits where its largest value fits

def _factor(n:int, maxes:tuple[int, ...]) -> list[int]|None:
  """n as a product of at most len(maxes) factors, the i-th at most maxes[i], the first ones largest; None if there is none"""
  if n == 1: return []
  if not maxes or n > prod(maxes): return None
  for d in sorted({d for i in range(1, math.isqrt(n)+1) if n % i == 0 for d in (i, n // i)}, reverse=True):
    if 1 < d <= maxes[0] and (rest := _factor(n // d, maxes[1:])) is not None: return [d] + rest
  return None

def fit_dims(sizes:list[sint], maxes:tuple[int, ...]) -> tuple[list[list[int]], list[list[sint]]]:
  """axis sizes (fastest first) -> (runs of adjacent axes that share one flat index, the id sizes each run's index is made of, fastest
  first). Axes keep an id each where they fit, else the fewest merges that fit; failing that, all axes' flat index is split into
  factors that fit. Raises when nothing fits in len(maxes) ids of at most maxes[i]."""
  n = len(sizes)
  for k in range(min(n, len(maxes)), 0, -1):
    for cuts in itertools.combinations(range(1, n), k-1):
      runs = [list(range(a, b)) for a, b in zip((0, *cuts), (*cuts, n))]
      dims = [prod(sizes[i] for i in run) for run in runs]
      if all(_limit(d) <= m for d, m in zip(dims, maxes)): return runs, [[d] for d in dims]
  if all(isinstance(s, int) for s in sizes) and (factors := _factor(prod(sizes), maxes)) is not None: return [list(range(n))], [factors]
  raise RuntimeError(f"axes of sizes {sizes} (fastest first) do not fit in {len(maxes)} work-item ids of at most {maxes}: "
                     "reshape the kernel (fewer or smaller GLOBAL/LOCAL axes) or use a renderer with larger limits")

def _ids(rngs:list[UOp], maxes:tuple[int, ...]|None, prefix:str) -> dict[UOp, UOp]:
  """ranges (slowest axis first) -> the index each one becomes, computed from SPECIAL ids named prefix0, prefix1, .."""
  if not rngs: return {}
  if maxes is None: raise RuntimeError(f"a renderer with work items must say how many there may be ({prefix} has no limits)")
  rngs = rngs[::-1]
  for r in rngs:
    if any(u.op is Ops.RANGE for u in r.src[0].toposort()): raise RuntimeError(f"the size of work-item axis {r.arg} depends on a loop")
  sizes = [r.src[0].arg if r.src[0].op is Ops.CONST else r.src[0] for r in rngs]
  ret: dict[UOp, UOp] = {}
  dim = 0
  for run, pieces in zip(*fit_dims(sizes, maxes)):
    ids = [UOp.special(p, f"{prefix}{dim+j}", rngs[0].dtype) for j, p in enumerate(pieces)]
    dim += len(ids)
    flat = ids[0]  # the run's flat index, its ids as digits
    for sp, stride in zip(ids[1:], itertools.accumulate(pieces, operator.mul)): flat = flat + sp * stride
    stride = 1
    for k, i in enumerate(run):  # each axis is a digit of the flat index
      idx = flat if isinstance(stride, int) and stride == 1 else flat // stride
      ret[rngs[i]] = idx if k == len(run) - 1 else idx % sizes[i]
      stride = stride * sizes[i]
  return ret

def _drop_ids(ctx:dict[UOp, UOp], e:UOp) -> UOp|None:
  if not any(r in ctx for r in e.src[1:]): return None
  return e.src[0].end(*[r for r in e.src[1:] if r not in ctx])

# applied node before sources (bottom_up), so an END still sees the RANGEs it closes
pm_gpudims = PatternMatcher([
  # END(body, gidx-range, loop) -> END(body, loop): only loops are closed
  (UPat(Ops.END, name="e"), _drop_ids),
  # a GLOBAL/LOCAL range -> its index from the ids
  (UPat(Ops.RANGE, name="r"), lambda ctx, r: ctx.get(r)),
])

def _axes(topo:dict[UOp, None], *t:AxisType) -> list[UOp]:
  return sorted((u for u in topo if u.op is Ops.RANGE and len(u.arg) > 1 and u.arg[1] in t), key=lambda r: r.arg[0])

def add_gpudims(sink:UOp, renderer) -> UOp:
  if renderer is None or not renderer.has_local: return sink  # no work items: one item runs every GLOBAL/LOCAL range as a loop
  topo = sink.toposort()
  if not renderer.has_shared and any(u.op is Ops.BUFFER and u.arg.addrspace is AddrSpace.LOCAL for u in topo):
    raise RuntimeError(f"{type(renderer).__name__} has no memory shared by a work group: a LOCAL buffer needs a renderer with has_shared")
  # a tensor core's WARP axis is the fastest id: its lanes are one warp, consecutive items of the group
  ctx = {**_ids(_axes(topo, AxisType.GLOBAL), renderer.global_max, "gidx"),
         **_ids(_axes(topo, AxisType.LOCAL, AxisType.GROUP_REDUCE) + _axes(topo, AxisType.WARP), renderer.local_max, "lidx")}
  return graph_rewrite(sink, pm_gpudims, ctx=ctx, bottom_up=True, name="gpudims") if ctx else sink

def add_threads(sink:UOp, renderer) -> UOp:
  """a THREAD range -> the thread's id (SPECIAL gidx0, its size the thread count) on renderers with has_threads; elsewhere a loop"""
  if renderer is None or not renderer.has_threads or renderer.has_local: return sink
  if not (thr := [u for u in sink.toposort() if u.op is Ops.RANGE and u.arg[1] is AxisType.THREAD]): return sink
  if len(thr) > 1: raise RuntimeError(f"a kernel has one THREAD axis, got {len(thr)}: {[r.arg for r in thr]}")
  return graph_rewrite(sink, pm_gpudims, ctx={thr[0]: UOp.special(thr[0].src[0].arg, "gidx0", thr[0].dtype)}, bottom_up=True, name="threads")
