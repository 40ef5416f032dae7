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
- devices without work items (FUSE_ROWS=1): on a GPU every work item of a row would run the whole row's loops."""
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

def _body_reduces(r:UOp, stop:dict[UOp, None]) -> set[UOp]:
  """the reductions inside r's body, down to realized nodes"""
  return {u for u in r.src[0].toposort(lambda w: w not in stop and w.op is not Ops.BUFFER) if u.op is Ops.REDUCE_AXIS}

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
  run once per output: more means some loop around a reduce revisits its rows"""
  free, steps = free_ranges(ast), 0
  for x in ast.toposort():
    if x.op is not Ops.REDUCE: continue
    loops = free[x] | set(x.src[1:])
    if any(size(q) is None for q in loops): return True  # a symbolic loop: left to _hoisted alone
    steps += prod(size(q) for q in loops)
  fused = root.toposort(lambda w: w is root or (w not in stop and w.op is not Ops.BUFFER))
  return steps <= sum(_row(u) * prod(u.shape) for u in fused if u.op is Ops.REDUCE_AXIS and _row(u) is not None)

def row_candidate(r:UOp) -> bool:
  """a broadcast reduce that may stay in its reader's kernel: on a device without work items, a row short enough to stay in cache"""
  return (n := _row(r)) is not None and n <= FUSE_ROWS_MAX.value and _on_host(r.device)

def fused_rows(root:UOp, candidates:list[UOp], stop:dict[UOp, None]) -> set[UOp]:
  """the broadcast reduces among `candidates` (row_candidate, read by root's kernel alone) that stay in root's kernel: all or none"""
  if any(_body_reduces(r, stop) - set(candidates) for r in candidates): return set()
  # the kernel as it would be built, with the realized nodes as stand-in buffers
  realized = {u: UOp.new_buffer(root.device, 1, u.dtype) for u in stop if u is not root and u._shape is not None}
  try: ast, _ = build_kernel(root, UOp.new_buffer(root.device, 1, root.dtype), realized)
  except (RuntimeError, ValueError): return set()
  return set(candidates) if _hoisted(ast) and _runs_once(ast, root, stop) else set()
