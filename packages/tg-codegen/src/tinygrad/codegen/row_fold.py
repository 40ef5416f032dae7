"""A column reduce, out[j] = sum over k of x(k, j) where x reads a matrix along its rows (v @ A, A.sum(0)), reduces over rows that lie a
whole row apart. Folded as written, each output's loop walks the reduce innermost: a register tile of lanes along j reads a run of a row
per step (at most GEMV_RUN lanes) and jumps a row further on, so the matrix is read as short runs a page apart, which the hardware
prefetchers do not follow (4096x4096 at 2 threads: 2.3-3x the time of the same 64 MB read as one stream). Where a row is longer than
that run the kernel becomes two loop nests instead: the output set to the fold's identity, then one pass over the rows in order, each
row's run of outputs folded into the output through memory (a load, ROWS rows' ops and a store: the run stays in L1). Each core then
reads whole rows of its share of the columns, one stream (at 2 threads, the kernel alone, tiled -> folded: v @ A 4096x4096 6.5 -> 1.7 ms
median, the sum of the same matrix 2.1; 4096 @ 4096x4095 15 -> 4.2, 1x4096 @ 4096x11008 19 -> 7.2, A.max(0) 8.5 -> 3.1; bench/
row_fold_ab.py). Every output receives the same terms in the same order as the serial loop, so the result is the same bits. Math on the
fold alone (a mean's scale) runs as one more pass over the output in place, where the output's dtype holds the fold's (4096x4096
mean(0): 4.9 -> 2.5 ms). Where the matrix is broadcast over a batch of at most BROADCAST_LANES outputs (4 x 4096 @ 4096x4096), those are
lanes of the fold that share each element it loads (4.7 -> 1.8 ms; 8 vectors 4.3 -> 3.1, 16 level: the tiled form). Only where the
matrix is past the cores' L2s, on a target without work items. Checked on the kernel AST before the optimizer; the kernel's opts are
then fixed (opts_to_apply=())."""
from __future__ import annotations
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, KernelInfo
from tinygrad.helpers import prod
from tinygrad.codegen.opt.kernel import size
from tinygrad.codegen.opt.padding import reduce_identity
from tinygrad.codegen.opt.heuristic import GEMV_RUN, L2_BYTES, THREADS, _Access, _always
from tinygrad.codegen.onehot_scatter import FOLDS, _loops_of, _parallel

ROWS = 8  # rows folded per load and store of the output's run (the most that divides the rows)
BROADCAST_LANES = 8  # outputs of a batch that share each matrix element, as lanes of the fold: the matrix is read once for them all

def _index(u:UOp) -> UOp|None: return u.src[0] if u.src and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2 else None

def _column_reduce(ast:UOp) -> tuple[UOp, UOp, UOp, int, list[UOp]]|None:
  """(END, REDUCE, the stored stride-1 range, the matrix's bytes, the output ranges it is broadcast over) of a kernel that is one store of
  a fold over rows: its innermost output range j walked with stride 1 by the store and by every load that moves with the fold and depends
  on j, none of which walks a reduce range with stride 1 (the others are read once per row: v[k]), one of them (the matrix) depending on
  every output range but at most BROADCAST_LANES of them"""
  info = ast.arg if isinstance(ast.arg, KernelInfo) else KernelInfo()
  if info.opts_to_apply is not None or info.applied_opts: return None
  if len(ast.src) != 1 or (end := ast.src[0]).op is not Ops.END or (st := end.src[0]).op is not Ops.STORE or len(st.src) != 2: return None
  outs = end.src[1:]
  # the stored value: the fold, or math on it alone (a mean's scale), which a last pass applies to the folded output in place where the
  # output's dtype holds the fold's (a float16 mean stores the float32 sum cast down: not folded)
  if (idx := _index(st)) is None or len(reds := [u for u in st.src[1].toposort() if u.op is Ops.REDUCE]) != 1: return None
  if (red := reds[0]).arg not in FOLDS or red.dtype != idx.src[0].dtype.base: return None
  if any(u.op in (Ops.LOAD, Ops.RANGE) and u not in outs for u in st.src[1].toposort(lambda u: u is not red)): return None
  rrs = red.src[1:]
  if not all(r.op is Ops.RANGE and size(r) for r in outs + rrs): return None
  if any(r.arg[1] is not AxisType.LOOP for r in outs) or any(r.arg[1] is not AxisType.REDUCE for r in rrs): return None
  if idx.src[0] in red.toposort(): return None  # the output is set to the identity first: a kernel that also reads it must see its old values
  j = max(outs, key=lambda r: r.arg[0])
  if j not in _Access(idx.src[1], False).unit: return None
  moving = []
  for u in red.toposort():
    if u.op is not Ops.LOAD or (i := _index(u)) is None or not set(rrs) & {r for r in i.src[1].toposort() if r.op is Ops.RANGE}: continue
    moving.append(a := _Access(i.src[1], len(u.src) == 3 and not _always(u.src[2]), i.src[0].dtype.itemsize))
    if j in a.deps and (j not in a.unit or a.unit & set(rrs)): return None
  # the matrix: the moving load with the fewest lanes of output ranges it does not depend on (a batch of vectors, each row shared by them)
  if not (matrices := [a for a in moving if j in a.unit]): return None
  a = min(matrices, key=lambda a: (prod(size(r) for r in set(outs) - a.deps), -prod(size(r) for r in a.deps) * a.itemsize))
  lanes = sorted(set(outs) - a.deps, key=lambda r: r.arg[0])
  return (end, red, j, prod(size(r) for r in a.deps) * a.itemsize, lanes) if prod(size(r) for r in lanes) <= BROADCAST_LANES else None

def fold_rows(ast:UOp, renderer=None) -> UOp:
  if renderer is None or getattr(renderer, "has_local", True) or (m := _column_reduce(ast)) is None: return ast
  end, red, j, matrix, lanes = m
  st, rest = end.src[0], sorted(end.src[1:], key=lambda r: r.arg[0])
  threads = THREADS.value if getattr(renderer, "has_threads", False) else 1
  # a matrix the cores' L2s hold: the tiled form's runs come from cache (64x8x512 max(1), 1 MB, at 2 threads: tiled 0.03 ms, folded 0.04)
  if matrix <= threads * L2_BYTES: return ast
  work = prod(size(r) for r in rest) * prod(size(r) for r in red.src[1:])
  fresh = max(u.arg[0] for u in ast.toposort() if u.op is Ops.RANGE) + 1
  # a share per core: each core's run of a row as long as it gets (4096x4096 at 2 threads, the kernel alone: 4 shares a core 6.7-8.7 ms
  # median, 1 share 3.3; at one thread level); more where no count of one a core divides the outputs (4095 columns in 7)
  # (never across a batch's lanes: each core would read the whole matrix)
  split, shared = _parallel([r for r in rest if r not in lanes], work, renderer, fresh, False, 1)
  if not shared: split, shared = _parallel([r for r in rest if r not in lanes], work, renderer, fresh, False)
  # a row's run per share no longer than the register tile's: the tiled form reads it whole already (a column sum of 1 KB rows)
  shares = prod(size(r) for r in shared)
  if (threads > 1 and not shared) or size(j) // (shares if j in split else 1) <= GEMV_RUN: return ast
  fresh += 1
  ident = red.const_like(reduce_identity(red.arg, red.dtype))
  zero_end = st.src[0].substitute(split).store(ident).end(*[q for r in rest for q in _loops_of(split.get(r, r))], *shared)
  # the fold nest: fresh copies of the output's loops of a share, then the reduce's ranges as serial loops in order, then the copy of
  # the innermost one, the row's run: each output row of a batch folds its own matrix's rows in turn, its run staying in L1. The run's
  # loop is left plain, for LLVM's loop vectorizer (upcast by a vector, it packed a MAX's trips with gathers: 4096x4096 max(0) at 2
  # threads 3.1 -> 7.7 ms)
  loops = [q for r in rest if r not in lanes for q in _loops_of(split.get(r, r))]
  copies: dict[UOp, UOp] = {}
  for r in lanes:
    copies[r] = r.replace(arg=(fresh, AxisType.UPCAST) + r.arg[2:])
    fresh += 1
  for q in loops[:-1]:
    copies[q] = q.replace(arg=(fresh, AxisType.LOOP) + q.arg[2:])
    fresh += 1
  serial: dict[UOp, UOp] = {}
  for r in sorted(red.src[1:], key=lambda r: r.arg[0]):
    serial[r] = r.replace(arg=(fresh, AxisType.LOOP) + r.arg[2:])
    fresh += 1
  if loops: copies[loops[-1]] = loops[-1].replace(arg=(fresh, AxisType.LOOP) + loops[-1].arg[2:])
  # ROWS rows a trip of the innermost serial loop, folded in order into one load and store of the output: the same terms in the same order
  inner = max(red.src[1:], key=lambda r: r.arg[0])
  # (at least two trips: a loop of one trip is dropped, and the nest's order with it)
  rows = next(n for n in range(min(ROWS, max(1, size(inner) // 2)), 0, -1) if size(inner) % n == 0)
  serial[inner] = outer = serial[inner].replace(src=(inner.src[0].const_like(size(inner) // rows),))
  def folded(u:UOp, n:int=0) -> UOp:
    return u.substitute(split).substitute(copies).substitute({**serial, inner: outer * rows + n if rows > 1 else outer})
  idx = folded(st.src[0])
  cur = idx.replace(src=(idx.src[0].after(zero_end),) + idx.src[1:])
  acc = cur.load()
  for n in range(rows): acc = acc.alu(red.arg, folded(red.src[0], n))
  fold_end = cur.store(acc).end(*serial.values(), *copies.values(), *shared)
  nests = [zero_end, fold_end]
  if st.src[1] is not red:  # the math on the fold: one more pass over the output, in place, on its own copies of the share's loops
    post = {q: q.replace(arg=(fresh + 1 + n, AxisType.LOOP) + q.arg[2:]) for n, q in enumerate([*lanes, *loops])}
    pidx = st.src[0].substitute(split).substitute(post)
    pcur = pidx.replace(src=(pidx.src[0].after(fold_end),) + pidx.src[1:])
    def moved(u:UOp) -> UOp: return u.substitute(split).substitute(post)
    nests.append(pcur.store(moved(st.src[1]).substitute({moved(red): pcur.load()})).end(*post.values(), *shared))
  info = ast.arg if isinstance(ast.arg, KernelInfo) else KernelInfo()
  return ast.replace(src=tuple(nests), arg=KernelInfo(info.name, (), info.dont_use_locals, info.applied_opts))
