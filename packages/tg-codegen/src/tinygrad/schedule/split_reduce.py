"""Split a large reduction with a small output into two kernels. A reduce of R elements to a few outputs is one long serial loop per
output, so a full sum runs on one core however many there are. Reshaping the reduced elements into `parts` chunks and reducing each
chunk into a realized buffer first gives the first kernel an output axis of `parts` that the optimizer can spread over threads; the
second kernel reduces the partials. Elements past the last whole chunk are reduced on their own and combined with the op.
A one-hot sum (X[idx], gather, an embedding lookup) is left whole: codegen makes it one load per output (codegen/onehot_gather.py),
which leaves nothing to share out, and split it sees a chunk's index p * chunk + c in place of the range, which the arange's binary
digits do not always simplify back to (300000 in chunks of 25000): then each output summed its whole row, 100 x 1M compares and adds."""
from __future__ import annotations
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, ParamArg, graph_rewrite
from tinygrad.uop.symbolic import symbolic
from tinygrad.dtype import dtypes
from tinygrad.helpers import ContextVar, all_int, getenv, prod
from tinygrad.schedule.indexing import KernelCtx, at, pm_index
from tinygrad.codegen.onehot_gather import collapse_onehot_reduces

SPLIT_REDUCE = ContextVar("SPLIT_REDUCE", 1)  # 0: every reduce stays one kernel
SPLIT_MIN = getenv("SPLIT_REDUCE_MIN", 1 << 15)  # reduced elements per output below which one loop is fine
PARTIALS = 256     # outputs of the first kernel (over all kept elements): enough for any core count and a vector of lanes
MIN_CHUNK = 1 << 12  # elements per partial: each chunk stays a long streaming loop

def partial_count(kept:int, reduced:int) -> int:
  """chunks per output: 1 (no split) when the reduce is short or already has outputs enough to share out"""
  if reduced < SPLIT_MIN or kept >= PARTIALS: return 1
  return max(1, min(PARTIALS // kept, reduced // MIN_CHUNK))

def is_gather(r:UOp) -> bool:
  """codegen collapses r's one-hot sum into loads: asked of r's kernel as the scheduler builds it and lowering first simplifies it, with
  the reduces under r read from stand-in buffers, nodes only (they get kernels of their own, and the build stays as small as r's work)"""
  inner = r.src[0].toposort(lambda u: u.op is not Ops.REDUCE_AXIS)
  # cheap exits, that spare the build (two passes over a random tensor's 250 nodes: 50 ms) for most large sums: only a sum picks, and it
  # picks by an equality (a != b negated simplifies to a == b)
  if r.arg[0] is not Ops.ADD or not any(u.op in (Ops.CMPEQ, Ops.CMPNE) for u in inner): return False
  stand_ins = {u: UOp(Ops.BUFFER, u.dtype, (), ParamArg.global_buffer(-1-i, 1, u.device)) for i, u in enumerate(inner) if u.op is Ops.REDUCE_AXIS}
  rngs = tuple(0 if s == 1 else UOp.range(s, i, AxisType.LOOP) for i, s in enumerate(r.shape))
  ctx = KernelCtx(stand_ins, r, next_axis=len(rngs))
  body = graph_rewrite(graph_rewrite(at(r, UOp.const(dtypes.bool, True), rngs), pm_index, ctx=ctx, bottom_up=True), symbolic)
  return collapse_onehot_reduces(body) is not body

def split_reduce(r:UOp) -> UOp|None:
  x, (op, axes) = r.src[0], r.arg
  if x._shape is None or not all_int(x.shape): return None
  keep = [i for i in range(len(x.shape)) if i not in axes]
  kept_shape = tuple(x.shape[i] for i in keep)
  reduced = prod(x.shape[i] for i in axes)
  if (parts := partial_count(prod(kept_shape), reduced)) < 2 or is_gather(r): return None
  # the reduced axes last, as one axis (a flatten when they already are the trailing axes of a contiguous tensor)
  flat = x.permute(tuple(keep) + tuple(axes)).reshape(kept_shape + (reduced,))
  chunk = reduced // parts
  rest = flat.shrink(tuple((0, s) for s in kept_shape) + ((0, parts * chunk),)).reshape(kept_shape + (parts, chunk))
  partials = rest._rop(op, (len(keep) + 1,)).contiguous()
  out = partials._rop(op, (len(keep),)).reshape(kept_shape + (1,))
  if parts * chunk < reduced:
    tail = flat.shrink(tuple((0, s) for s in kept_shape) + ((parts * chunk, reduced),))._rop(op, (len(keep),))
    out = out.alu(op, tail)
  return out.reshape(r.shape)

pm_split_reduce = PatternMatcher([(UPat(Ops.REDUCE_AXIS, name="r"), split_reduce)])

def split_large_reduces(sink:UOp) -> UOp:
  return graph_rewrite(sink, pm_split_reduce, name="split reduce") if SPLIT_REDUCE.value else sink
