"""Keep a chain of row reductions in the kernel that reads them. Softmax is max(x) per row, then sum(exp(x - max)) per row, then
exp(x - max) / sum: each reduce's result is broadcast back over its row. Realized apart, that is three kernels and three reads of x
from memory. In one kernel the loops run one after another inside the loop over rows: the max loop reads the row from memory, the sum
and the store loops read it again from cache, so the memory traffic is one read and one write (log_softmax, layernorm and variance
likewise). Each reduce still runs once per row: the linearizer places it in the innermost loop of the ranges it depends on.

Only where that holds and pays:
- each reduce depends on all the loops around it (its row's index is the outer loops), so it is not recomputed per element; checked on
  the kernel as built (`_hoisted`);
- and those loops name each row once: the kernel's reduces do no more steps than the tensor graph's (`_runs_once`). A pool's gradient
  reads each window's max once per input element of the window (9 times for 3x3 windows at stride 1), through the gradient's own
  reduce over the window's taps: every reduce depends on every loop around it, yet each row's max is recomputed per tap;
- at most FUSE_ROWS_MAX elements per reduced row, so the row is still in cache when the next loop reads it again (a longer reduce
  splits into its own kernels, which split_reduce.py can also share out over cores);
- a reduce's body holds no other reduction (softmax over a matmul's rows would redo the matmul in every loop);
- devices without work items (FUSE_ROWS=1): on a GPU every work item of a row would run the whole row's loops.
Where the reader evaluates the chain's result several times per element (softmax's weights in attention's matmul with the values, a
layernorm's output in the linear after it), that result gets a kernel of its own, in which the chain is fused (`chain_outputs`): kept
in a matmul's kernel the chain leaves it without a register tile (layernorm 2048x512 @ 512x2048 at one thread: 780 ms, apart 26 ms), and
where it can't stay there, a kernel per reduce and another for what they share cost more (attention 8x8x256x64: max, exp(x - max) and
sum kernels, 7.6 ms of CPU at one thread, against one softmax kernel of 2.6 ms)."""
from __future__ import annotations
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp
from tinygrad.helpers import ContextVar, all_int, prod
from tinygrad.schedule.indexing import build_kernel
from tinygrad.codegen.opt.kernel import free_ranges, size

FUSE_ROWS = ContextVar("FUSE_ROWS", 1)  # 0: every broadcast reduce is its own kernel; 1: on devices without work items; 2: every device
FUSE_ROWS_MAX = ContextVar("FUSE_ROWS_MAX", 1 << 14)  # elements per reduced row: 64 KB of float32, kept in L2 between the loops

def _on_host(device) -> bool:
  if FUSE_ROWS.value >= 2: return True
  if FUSE_ROWS.value <= 0 or not isinstance(device, str): return False
  from tinygrad.device import Device
  return not getattr(Device[device].renderer, "has_local", False)

def _row(r:UOp) -> int|None:
  """elements reduced into each output of r"""
  if r.src[0]._shape is None or not all_int(r.src[0].shape) or not all_int(r.shape): return None
  return prod(r.src[0].shape) // max(prod(r.shape), 1)

def _body_reduces(rs:list[UOp], stop:dict[UOp, None]) -> set[UOp]:
  """the reductions inside the bodies of rs, down to realized nodes, those left out: a realized one is a buffer there, so it is not redone
  in the chain's loops (whether the chain then runs once per row, _runs_once decides). Counted, they kept a chain from fusing, and a max
  pool's tie count over its realized max then stayed in the gradient's kernel unchecked, recomputed per window element (the MNIST step's
  pool gradient: 4-5.5 ms at one thread, against 0.2 + 1.4 with the tie count a kernel of its own). One walk over all bodies (a walk per
  reduce went through the layers below it once per layer: a 1,000-layer MLP, whose every matmul is a candidate, took 11 s to schedule)"""
  sink = UOp.sink(*[r.src[0] for r in rs])
  return {u for u in sink.toposort(lambda w: w is sink or (w not in stop and w.op is not Ops.BUFFER)) if u.op is Ops.REDUCE_AXIS and u not in stop}

def _hoisted(ast:UOp) -> bool:
  """every REDUCE depends on each loop around it, so it runs once per value: the loops around a REDUCE are the loops around the innermost
  range it depends on. Output loops nest in axis order; the ranges of one REDUCE nest in axis order inside the loops around that REDUCE"""
  free = free_ranges(ast)
  loops = sorted((r for r in ast.toposort() if r.op is Ops.RANGE and r.arg[1] is AxisType.LOOP), key=lambda r: r.arg[0])
  around: dict[UOp, set] = {r: set(loops[:i]) for i, r in enumerate(loops)}
  # outer reduces first: a REDUCE inside another's body may depend on the outer one's ranges
  for x in reversed([u for u in ast.toposort() if u.op is Ops.REDUCE]):
    deps = set(free[x])
    if set().union(deps, *(around.get(q, set()) for q in deps)) != deps: return False
    own = sorted(x.src[1:], key=lambda q: q.arg[0])
    for i, q in enumerate(own): around[q] = deps | set(own[:i])
  return True

def _runs_once(ast:UOp, root:UOp, stop:dict[UOp, None]) -> bool:
  """the kernel's REDUCEs take no more steps (runs of each, times its own range) than root's fused reductions in the tensor graph, each
  run once per output: more means some loop around a reduce revisits its rows. Realized reductions are loads, not steps of the kernel"""
  free, steps = free_ranges(ast), 0
  for x in ast.toposort():
    if x.op is not Ops.REDUCE: continue
    loops = free[x] | set(x.src[1:])
    if any(size(q) is None for q in loops): return True  # a symbolic loop: left to _hoisted alone
    steps += prod(size(q) for q in loops)
  fused = root.toposort(lambda w: w is root or (w not in stop and w.op is not Ops.BUFFER))
  return steps <= sum(_row(u) * prod(u.shape) for u in fused if u.op is Ops.REDUCE_AXIS and u not in stop and _row(u) is not None)

def row_candidate(r:UOp) -> bool:
  """a broadcast reduce that may stay in its reader's kernel: on a device without work items, a row short enough to stay in cache"""
  return (n := _row(r)) is not None and n <= FUSE_ROWS_MAX.value and _on_host(r.device)

def fused_rows(root:UOp, candidates:list[UOp], stop:dict[UOp, None]) -> set[UOp]:
  """the broadcast reduces among `candidates` (row_candidate, read by root's kernel alone) that stay in root's kernel: all or none"""
  if _body_reduces(candidates, stop) - set(candidates): return set()
  if _copies(root, stop, region := _region(root, stop), limit := FUSE_ROWS_GROWTH * len(region)) > limit: return set()
  # the kernel as it would be built, with the realized nodes as stand-in buffers
  realized = {u: UOp.new_buffer(root.device, 1, u.dtype) for u in stop if u is not root and u._shape is not None}
  try: ast, _ = build_kernel(root, UOp.new_buffer(root.device, 1, root.dtype), realized)
  except (RuntimeError, ValueError): return set()
  return set(candidates) if _hoisted(ast) and _runs_once(ast, root, stop) else set()

# the kernel a chain is fused into evaluates a node once per place it is read at: in each reduce's loop whose body holds it, and once more
# outside. A graph of layers whose every reduce is a candidate (a small transformer: each matmul's operand is broadcast into its product,
# so the matmuls qualify as rows too) nests them layer over layer, the copies multiply by ~3 per layer, and building that kernel to test
# it never finished (3 layers at width 16). A real chain (softmax, layernorm) evaluates its nodes ~2x
FUSE_ROWS_GROWTH = 8
_NEW_PLACE = {Ops.REDUCE_AXIS, Ops.EXPAND, Ops.PERMUTE, Ops.SHRINK, Ops.PAD, Ops.FLIP}

def _copies(root:UOp, stop:dict[UOp, None], region:dict[UOp, None], limit:int) -> int:
  """the nodes root's fused kernel holds, each once per place it is read at (a reader that moves the index or opens a reduce's body makes
  a place of its own per place it is at; an elementwise reader reads at its own places), counted up to just past `limit`. Places are
  tracked by name, not counted: two reduces over one shared node (a GRU step's h @ Rz and h @ Rr) read it at two places, and counting the
  readers' most (one) let a recurrence's kernel grow 3x per step unseen (a GRU of 6 steps took 30 s to schedule)"""
  places: dict[UOp, set[int]] = {root: {0}}
  named: dict[tuple[int, int], int] = {}
  total = 0
  for u in reversed(region):  # readers before their sources
    if (total := total + len(at := places.get(u, ()))) > limit: break
    if u is not root and (u in stop or u.op is Ops.BUFFER): continue
    if u.op in _NEW_PLACE: at = {named.setdefault((id(u), p), len(named) + 1) for p in at}
    for x in set(u.src): places.setdefault(x, set()).update(at)
  return total

def _region(root:UOp, stop:dict[UOp, None]) -> dict[UOp, None]:
  """root's kernel graph: its nodes down to realized ones (which it loads), sources first"""
  return root.toposort(lambda w: w is root or (w not in stop and w.op is not Ops.BUFFER))

def _regions(roots:list[UOp], stop:dict[UOp, None]) -> set[UOp]:
  """the union of the roots' _region: one walk (a walk per root went through the layers below it once per layer: a 1,000-layer MLP)"""
  sink, starts = UOp.sink(*roots), set(roots)
  return set(sink.toposort(lambda w: w is sink or w in starts or (w not in stop and w.op is not Ops.BUFFER))) - {sink}

def _reads(region:dict[UOp, None], what:set[UOp], stop:dict[UOp, None]) -> dict[UOp, bool]:
  """for each node of a region, whether it reads one of `what` inside the kernel (a realized node is a load: it reads nothing)"""
  ret: dict[UOp, bool] = {}
  for u in region: ret[u] = u in what or (u not in stop and any(ret.get(x, False) for x in u.src))
  return ret

def inner_reduces(reduces:list[UOp], stop:dict[UOp, None]) -> dict[UOp, None]:
  """what to realize of the reductions in the bodies of `reduces` that are none of them (a matmul under softmax): fused_rows keeps no
  chain over one, which would be redone in each of the chain's loops. Realized first, they leave the chain to fuse (otherwise each row
  reduce gets a kernel that reads it, and it gets one anyway). Where the bodies read such a reduction only through one elementwise node
  of its size (attention's scaled and masked q @ k.T), that node: its ops run once per element, in the reduction's kernel. A reduction
  realized already is none of them (_body_reduces): the node over it would be one more pass over memory (a max pool's windows of a conv's
  output, 0.6 ms of the MNIST step)"""
  ret: dict[UOp, None] = {}
  region = UOp.sink(*[r.src[0] for r in reduces]).toposort(lambda w: w.op is Ops.SINK or (w not in stop and w.op is not Ops.BUFFER))
  chain = _reads(region, set(reduces), stop)
  users: dict[UOp, list[UOp]] = {}
  for u in region:
    for x in u.src: users.setdefault(x, []).append(u)
  for q in _body_reduces(reduces, stop) - set(reduces):
    # the nodes over q that no reduce of the chain is under, and of those the ones something else reads
    over = {u for u, o in _reads(region, {q}, stop).items() if o and not chain[u] and (u is q or u.op is not Ops.REDUCE_AXIS)}
    edge = [u for u in over if any(w not in over for w in users.get(u, ()))]
    ret[edge[0] if len(edge) == 1 and _numel(edge[0]) == _numel(q) else q] = None
  return ret

def _numel(u:UOp) -> int|None: return prod(u.shape) if u._shape is not None and all_int(u.shape) else None

def chain_outputs(root:UOp, reduces:list[UOp], evals:dict[UOp, dict], stop:dict[UOp, None]) -> dict[UOp, None]:
  """the outermost elementwise nodes of root's kernel that read some of `reduces` (its row candidates), have as many elements as the chain
  and that root's kernel evaluates more often than that (`evals`: loop trips per node and root), where each keeps its chain fused in a
  kernel of its own once the reductions in the chain's bodies are realized. {} when there is none, or one would not keep its chain"""
  size = min(_numel(r.src[0]) or 0 for r in reduces)
  if not (cands := [u for u, per_root in evals.items() if (n := _numel(u)) is not None and n >= size and per_root.get(root, 0) > n]): return {}
  reads = _reads(region := _region(root, stop), set(reduces), stop)
  # not inside a reduce of the chain (evals counts its body once per element of root and step of the reduce: unhoisted, as it were)
  inside = _regions([r.src[0] for r in reduces], stop)
  cands = {u: None for u in cands if reads.get(u, False) and u not in inside}
  below: dict[UOp, bool] = {}  # the node is read by a candidate, inside the kernel
  for u in reversed(region):
    if u not in stop or u is root:
      for x in u.src: below[x] = below.get(x, False) or u in cands or below.get(u, False)
  if not (outs := [u for u in cands if not below.get(u, False)]): return {}
  for u in outs:
    # the chain of u's kernel: the reduces it broadcasts back (a matmul's reduce under them is read whole, not a row of the chain)
    fused = _region(u, stop)
    rows = [r for r in reduces if r in fused and (n := _numel(r)) is not None and n < _numel(u)]
    if not rows or not fused_rows(u, rows, stop | inner_reduces(rows, stop)): return {}
  return dict.fromkeys(outs)
