"""Kernel AST -> program-level graph: GLOBAL/LOCAL ranges become work-item ids where the target has them, reductions become REG
accumulators in loops, multi-axis indexing is flattened, python-style integer division and other ops a target lacks are decomposed,
and weak index math gets a concrete integer type."""
from __future__ import annotations
import itertools, math
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite
from tinygrad.dtype import dtypes, AddrSpace
from tinygrad.helpers import ContextVar
from tinygrad.codegen.gpudims import add_gpudims, add_threads
from tinygrad.codegen.opt import optimize
from tinygrad.codegen.opt.heuristic import whole_vector_tile
from tinygrad.codegen.opt.padding import reduce_identity, pad_axis
from tinygrad.codegen.opt.tc import accumulate_in_wmma
from tinygrad.codegen.expander import expand
from tinygrad.codegen.opt.peel import peel_gates
from tinygrad.codegen.grouping import lower_groups
from tinygrad.codegen.row_stage import stage_rows
from tinygrad.codegen import prefix_scan
from tinygrad.codegen.nonpositive_exp import mark_nonpositive_exp
from tinygrad.codegen.small_sin import mark_small_sin

_NONE: frozenset = frozenset()
def open_ranges(sink:UOp, known:dict[UOp, frozenset]|None=None) -> dict[UOp, frozenset]:
  """for every node, the RANGEs it depends on that no END between it and them has closed. `known`: the result of earlier calls, which
  is extended (the parts of the graph it has are not walked again)"""
  ret: dict[UOp, frozenset] = {} if known is None else known
  for u in sink.toposort(None if known is None else lambda u: u not in known):
    if u in ret: continue
    s = _NONE
    for x in u.src:  # the sources' sets are mostly the same object: a union only where they differ
      if (t := ret[x]) is not s and t: s = s | t if s else t
    if u.op is Ops.RANGE: s = s | {u}
    elif u.op is Ops.END: s = s - set(u.ended_ranges)
    ret[u] = s
  return ret

def _loops_around(topo:list[UOp]) -> dict[UOp, tuple[UOp, ...]]:
  """each range an END closes -> the ranges of every loop around it: its own END's and those of the ENDs whose bodies hold that END (a
  peeled edge region's END sits in the END of the loops outside it: a scan's accumulator is reset in all of them)"""
  ends = [e for e in topo if e.op is Ops.END]
  around: dict[UOp, tuple[UOp, ...]] = {e: e.ended_ranges for e in ends}
  for outer in ends:
    for inner in outer.src[0].toposort():
      if inner.op is Ops.END and inner is not outer: around[inner] += tuple(q for q in outer.ended_ranges if q not in around[inner])
  return {q: around[e] for e in ends for q in e.ended_ranges}

def lower_reduces(sink:UOp) -> UOp:
  """REDUCE(x, *rngs) -> acc = identity; loop rngs { acc = acc op x }; then read acc. Inner reduces are lowered first. A tagged prefix
  reduce (prefix_scan.py) instead carries its accumulator through its store's loop"""
  slot = itertools.count(max([u.arg.slot+1 for u in sink.toposort() if u.op is Ops.BUFFER], default=0))
  topo = (sink := prefix_scan.lower_lane_scans(sink, slot)).toposort()
  opn: dict[UOp, frozenset] = {}  # shared by every reduce: the graphs below them overlap
  loops = _loops_around(topo)
  def fix(r:UOp):
    val, rngs, op = r.src[0], r.src[1:], r.arg
    if r.tag == prefix_scan.TAG and (m := prefix_scan.match(r, list(loops))) is not None:
      return prefix_scan.lower_scan(r, m[0], m[1], [q for q in loops[m[0]] if q is not m[0] and q.op is Ops.RANGE], next(slot))
    outer = sorted(open_ranges(val, opn)[val] - set(rngs), key=lambda x: x.arg)
    acc = UOp.placeholder((1,), r.dtype, next(slot), addrspace=AddrSpace.REG)
    init = acc.after(*outer)[0].store(reduce_identity(op, r.dtype))
    cur = acc.after(init, *rngs)
    upd = cur[0].store(cur[0].load().alu(op, val))
    return acc.after(upd.end(*rngs))[0].load()
  done: dict[UOp, UOp] = {}
  for u in topo:
    nu = u if all(done[s] is s for s in u.src) else u.replace(src=tuple(done[s] for s in u.src))
    done[u] = fix(nu) if nu.op is Ops.REDUCE else nu
  return done[sink]

def _flatten_index(x:UOp) -> UOp|None:
  buf, idx = x.src[0], x.src[1:]
  if buf._shape is None or len(idx) < 2: return None
  lin, stride = UOp.const(dtypes.weakint, 0), 1
  for i, s in reversed(list(zip(idx, buf.shape))):
    lin, stride = lin + i * stride, stride * s
  return UOp(Ops.INDEX, x.dtype, (buf, lin))

def _floordiv(a:UOp, b:UOp) -> UOp:
  if a.vmin >= 0 and b.vmin > 0: return a.alu(Ops.CDIV, b)
  q = a.alu(Ops.CDIV, b)
  # C division truncates; python floors: step down when the signs differ and there is a remainder
  fix = a.alu(Ops.CMOD, b).alu(Ops.CMPNE, a.const_like(0)) & (a < 0).alu(Ops.CMPNE, b < 0)
  return fix.where(q + q.const_like(-1), q)

def _floormod(a:UOp, b:UOp) -> UOp:
  if a.vmin >= 0 and b.vmin > 0: return a.alu(Ops.CMOD, b)
  r = a.alu(Ops.CMOD, b)
  fix = r.alu(Ops.CMPNE, r.const_like(0)) & (r < 0).alu(Ops.CMPNE, b < 0)
  return fix.where(r + b, r)

def _safe_divisor(d:UOp, a:UOp, b:UOp) -> UOp|None:
  """x86 traps on x/0 and on INT_MIN/-1, and a kernel's padding divides what its gated loads read (0) before a WHERE throws the
  quotient away: such a divisor is 1 instead (INT_MIN/1 is the wrapped INT_MIN/-1, and x%1 == 0 == INT_MIN%-1). x/0 is 0, as in numpy."""
  if not (dtypes.is_int(b.dtype) or b.dtype is dtypes.bool) or b.tag == "safe divisor": return None
  zero = b.vmin <= 0 <= b.vmax
  wrap = not dtypes.is_unsigned(b.dtype) and b.vmin <= -1 <= b.vmax and a.vmin <= dtypes.min(a.dtype)
  if not (zero or wrap): return None
  ok = b.alu(Ops.CMPNE, b.const_like(0)) if zero else None
  if wrap:
    not_wrap = (b.alu(Ops.CMPEQ, b.const_like(-1)) & a.alu(Ops.CMPEQ, a.const_like(dtypes.min(a.dtype)))).logical_not()
    ok = not_wrap if ok is None else ok & not_wrap
  ret = d.replace(src=(a, ok.where(b, b.const_like(1)).replace(tag="safe divisor")))
  return b.alu(Ops.CMPNE, b.const_like(0)).where(ret, ret.const_like(0)) if zero and d.op is Ops.CDIV else ret

def _pow(a:UOp, b:UOp) -> UOp:
  if not dtypes.is_float(a.dtype):
    raise RuntimeError(f"POW of {a.dtype} is not supported in kernels; cast to a float dtype first")
  mag = a.alu(Ops.MAX, a.alu(Ops.NEG)).alu(Ops.LOG2).alu(Ops.MUL, b).alu(Ops.EXP2)
  # negative base: defined only for integer exponents, with the sign of (-1)^b
  b_int = b.alu(Ops.TRUNC).alu(Ops.CMPNE, b).logical_not()
  odd = (b * 0.5).alu(Ops.TRUNC).alu(Ops.CMPNE, b * 0.5)
  def equal(x:UOp, v:float) -> UOp: return x.alu(Ops.CMPNE, x.const_like(v)).logical_not()
  # -inf to a power that is no integer is |a| ** b (IEEE: inf for b > 0, 0 for b < 0), a finite negative base's is NaN
  neg = b_int.where(odd.where(mag.alu(Ops.NEG), mag), equal(a, -math.inf).where(mag, mag.const_like(math.nan)))
  # a zero base keeps its sign for an odd integer exponent (IEEE: (-0.0) ** -1 is -inf, (-0.0) ** 3 is -0.0): 1/a and a carry it; a NaN
  # exponent gives NaN
  odd_int = b_int & odd
  at_zero = (b < 0).where(odd_int.where(a.alu(Ops.RECIPROCAL), a.const_like(math.inf)),
                          equal(b, 0).where(a.const_like(1), odd_int.where(a, b.alu(Ops.CMPNE, b).where(a.const_like(math.nan), a.const_like(0)))))
  ret = (a < 0).where(neg, equal(a, 0).where(at_zero, mag))
  # IEEE pow (C, numpy, torch): x ** 0 is 1 and 1 ** y is 1 for every x and y, NaN included, and (-1) ** +-inf is 1, where log2 and
  # exp2 would give NaN
  one = equal(b, 0) | equal(a, 1) | (equal(a, -1) & equal(b.alu(Ops.MAX, b.alu(Ops.NEG)), math.inf))
  return one.where(a.const_like(1), ret)

pm_decompose = PatternMatcher([
  # p[i, j] -> p[i*cols + j]: renderers see one linear index per access
  (UPat(Ops.INDEX, name="x"), _flatten_index),
  (UPat(Ops.FLOORDIV, src=(UPat.var("a"), UPat.var("b"))), _floordiv),
  (UPat(Ops.FLOORMOD, src=(UPat.var("a"), UPat.var("b"))), _floormod),
  (UPat((Ops.CDIV, Ops.CMOD), src=(UPat.var("a"), UPat.var("b")), name="d"), _safe_divisor),
  (UPat(Ops.POW, src=(UPat.var("a"), UPat.var("b"))), _pow),
]) + (pm_true_gates := PatternMatcher([
  # a gated load or store whose gate folded to True (padding where the padded part is known not to be reached)
  (UPat(Ops.LOAD, src=(UPat.var("i"), UPat(), UPat.const(dtypes.bool, True))), lambda i: i.load()),
  (UPat(Ops.STORE, src=(UPat.var("i"), UPat.var("v"), UPat.const(dtypes.bool, True))), lambda i, v: i.store(v)),
  # ... or to False (a padded lane that is never in bounds): the load reads its alternative, the store never happens
  (UPat(Ops.LOAD, src=(UPat(), UPat.var("alt"), UPat.const(dtypes.bool, False))), lambda alt: alt),
  (UPat(Ops.STORE, src=(UPat(), UPat(), UPat.const(dtypes.bool, False))), lambda: UOp(Ops.NOOP)),
  # where(g, load gated by g with alt a, a) is that load: a padded reduce whose identity is what the gated load reads
  (UPat(Ops.WHERE, src=(UPat.var("g"), UPat(Ops.LOAD, name="ld"), UPat.var("a"))),
   lambda g, ld, a: ld if len(ld.src) == 3 and ld.src[2] is g and ld.src[1] is a else None),
]))

def _index_dtype(topo:dict[UOp, None]):
  weakint = dtypes.weakint
  return dtypes.int64 if any([not -2**31 <= u.vmin <= u.vmax <= 2**31-1 for u in topo if u.dtype is weakint]) else dtypes.int32

def lower_weak(sink:UOp) -> UOp:
  """commit weak dtypes: index math -> int32 (int64 when its bounds need it), weak floats -> default_float"""
  idt = _index_dtype(topo := sink.toposort())
  weakint, weakfloat, default_float, const = dtypes.weakint, dtypes.weakfloat, dtypes.default_float, Ops.CONST  # read once: every node asks
  done: dict[UOp, UOp] = {}
  for u in topo:
    src = tuple([done[s] for s in u.src])
    dt = idt if (udt := u.dtype) is weakint else default_float if udt is weakfloat else udt
    if u.op is const:
      arg = dtypes.as_const(u.arg, dt)
      done[u] = u if (src, dt, arg) == (u.src, udt, u.arg) else UOp(u.op, dt, src, arg, u.tag)
    else: done[u] = u if dt is udt and src == u.src else UOp(u.op, dt, src, u.arg, u.tag)
  return done[sink]

def _one_trip(r:UOp) -> bool: return r.op is Ops.RANGE and bool(r.src) and r.src[0].vmin == r.src[0].vmax == 1

def _drop_one_trip(x:UOp) -> UOp|None:
  if not any(_one_trip(r) for r in x.src[1:]): return None
  rest = tuple(r for r in x.src[1:] if not _one_trip(r))
  return x.replace(src=(x.src[0],) + rest) if rest else x.src[0]

# a loop of one trip is no loop: its range is 0 (symbolic folds it by bounds), and END/REDUCE drop it. Left in, an END would close a range
# that nothing in its body uses any more. A REDUCE over one element is that element. One trip: a size of 1, or a Variable's size that its
# bounds pin to 1 (a KV cache written one token at a time: Variable("toks", 1, 1))
pm_one_trip = PatternMatcher([
  (UPat((Ops.END, Ops.REDUCE), name="x"), _drop_one_trip),
  (UPat(Ops.RANGE, name="r"), lambda r: r.const_like(0) if _one_trip(r) else None),
])

def pad_short_loops(sink:UOp) -> UOp:
  """a loop over a Variable's size that is at most 1 but may be 0 (Variable("toks", 0, 1)) -> one trip with its body gated by 0 < size.
  Its range is 0 wherever it runs, so symbolic folds it away by bounds as for one trip, but its body must not run when the size is 0"""
  short = [u for u in sink.toposort() if u.op is Ops.RANGE and u.src and u.src[0].op is not Ops.CONST and u.src[0].vmax <= 1 and not _one_trip(u)]
  for r in short: sink = pad_axis(sink, r, 1)
  return sink

# a*b+c -> MULACC(a, b, c), rounded once (a fused multiply-add), with FMA=1 on targets that declare it: half the instructions of a
# matmul's inner loop. Only for float32/float64, which those targets compute natively; the result differs from two roundings, so it is
# formed by the same rule wherever the target has the op, and the PYTHON emulator computes it exactly (dtype.fma).
# Off elsewhere by default: on the host CPU LLVM's SLP vectorizer packs fmul+fadd lanes into vector ops but left the train step's scalar-tiled
# llvm.fma lanes scalar (conv weight gradient 18 -> 59 ms), and on CPUs with add pipes beside the FMA pipes (Zen) a fused multiply-add
# raises no peak (matmul 1024/2048 measured equal; bench/RESULTS.md). FMA=2 (the default) fuses only kernels whose tile is whole vectors
# (heuristic.whole_vector_tile): a packed panel's 16 lanes (schedule/pack.py; matmul 2048 at one thread: 10-15%), or a reduce's 16 lanes
# along the stride-1 axis of its store and a load (a direct conv of 10 output channels, its vectors along the rows, b8 64->10 56x56
# 3x3: 4.7 -> 4.2 ms at 2 threads; an unpacked matmul 128x512x128 0.17 -> 0.15 ms). There only a reduce's accumulation is fused (a*b
# added to its register), which the tile's order of summation rounds differently anyway: an elementwise a*b+c rounds the same in every
# kernel. Two kernels recompute one value where a max's gradient compares it with the max (x == x.max()): fused in one of them, no element
# was equal, and the gradient of a conv net with a norm between two pools was wrong by 6
FMA = ContextVar("FMA", 2)
def _reads_accumulator(c:UOp) -> bool:
  """c loads a reduce's accumulator (a register buffer)"""
  if c.op is not Ops.LOAD: return False
  b = c.src[0]
  while b.op is not Ops.BUFFER and b.src: b = b.src[0]
  return b.op is Ops.BUFFER and b.arg.addrspace is AddrSpace.REG
def _mulacc_rules(accumulations_only:bool) -> PatternMatcher:
  return PatternMatcher([
    (UPat(Ops.ADD, (dtypes.float32, dtypes.float64), [UPat(Ops.MUL, name="m"), UPat.var("c")], name="x"),
     lambda x, m, c: UOp(Ops.MULACC, x.dtype, (*m.src, c)) if not accumulations_only or _reads_accumulator(c) else None),
  ])
pm_mulacc, pm_mulacc_accumulations = _mulacc_rules(False), _mulacc_rules(True)

def rewrite_to_program(sink:UOp, renderer=None) -> UOp:
  from tinygrad.uop.symbolic import symbolic
  from tinygrad.codegen.transcendental import lower_transcendental
  from tinygrad.codegen.onehot_gather import collapse_onehot_reduces
  from tinygrad.codegen.disjoint_gather import merge_disjoint_loads
  from tinygrad.codegen.onehot_scatter import scatter_onehot_sums
  from tinygrad.codegen.row_fold import fold_rows
  from tinygrad.codegen.true_division import true_divisions
  from tinygrad.codegen.float_to_int import define_float_to_int
  from tinygrad.codegen.threefry import lower_threefry
  from tinygrad.codegen.valid_index import fold_valid_indices
  # the names are spec stages: under SPEC=1 the input is checked as a kernel AST and the lowered result as a program
  sink = pad_short_loops(define_float_to_int(lower_threefry(sink)))
  sink = graph_rewrite(graph_rewrite(sink, pm_one_trip, bottom_up=True, name="one trip"), symbolic, name="kernel", memo="_simplified")
  if (gathered := collapse_onehot_reduces(sink)) is not sink: sink = graph_rewrite(gathered, symbolic, name="kernel", memo="_simplified")
  if (merged := merge_disjoint_loads(sink)) is not sink: sink = graph_rewrite(merged, symbolic, name="kernel", memo="_simplified")
  if (scattered := scatter_onehot_sums(sink, renderer)) is not sink: sink = graph_rewrite(scattered, symbolic, name="kernel", memo="_simplified")
  if (folded := fold_rows(sink, renderer)) is not sink: sink = graph_rewrite(folded, symbolic, name="kernel", memo="_simplified")
  sink = optimize(prefix_scan.mark_scans(stage_rows(mark_small_sin(mark_nonpositive_exp(sink)), renderer), renderer), renderer)
  sink = fold_valid_indices(sink)
  fused = pm_mulacc if FMA.value == 1 else pm_mulacc_accumulations if FMA.value == 2 and whole_vector_tile(sink) else None
  sink = lower_groups(expand(peel_gates(sink)), renderer)
  sink = add_threads(add_gpudims(sink, renderer), renderer)
  sink = lower_reduces(sink)
  if getattr(renderer, "tensor_cores", ()): sink = accumulate_in_wmma(sink)
  # simplified while floor division is still FLOORDIV, before pm_decompose turns it into C division that the symbolic rules leave alone:
  # a lane's index (8*r + 1)//2 folds to 4*r, (8*r + 3)%2 to 1, and the lane's gates with it
  sink = graph_rewrite(graph_rewrite(sink, symbolic, name="lanes", memo="_simplified"), pm_decompose, name="decompose")
  sink = lower_transcendental(sink, renderer)
  sink = graph_rewrite(graph_rewrite(sink, symbolic, name="program", memo="_simplified"), pm_true_gates, name="program")
  sink = true_divisions(lower_weak(sink), renderer)
  return graph_rewrite(sink, fused, name="mulacc") if fused is not None and renderer is not None and Ops.MULACC in renderer.code_for_op else sink
