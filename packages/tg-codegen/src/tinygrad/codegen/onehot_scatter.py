"""A kernel storing out[v, d] = sum over i of where(e(i) == v, x(i, d), 0), with v an output range and e an integer that does not depend on
v, is a scatter-add: each i adds x(i, d) into row e(i). The gradient of a gather builds exactly this (an embedding's or X[idx]'s weight
gradient, a bincount), and scatter_reduce's folds (mixin/select.py) build it with a product or a max in place of the sum and 1 or the
lowest value in place of 0: folded as written every output element loops over every i, vocab x ids x width steps (32000 x 2048 x 512
for an embedding's gradient: 0.6 s where torch takes a few ms). The kernel becomes two loop nests instead: the output set to the fold's
identity, then one pass over i in order folding x(i, d) into out[e(i), d] (a load, the op and a store through memory), gated by
0 <= e < size(v) and the condition's other conjuncts. Each output element receives the same terms in the same order as the dense fold's
serial loop, so the result is the same bits (the dropped terms were the identity, which changes nothing: x * 1 and max(x, lowest) are x,
and a sum that starts at +0.0 is never -0.0).
i must stay serial (two ids may hit one row): the kernel is built with its opts fixed (opts_to_apply=()), so neither the heuristic nor
BEAM splits it, and the other output axes d are the parallel ones, race-free since different d never share an address: shared out over
the CPU cores (THREAD, contiguous blocks of the outermost axis that divides) or, on targets with work items, the grid (GLOBAL, the
innermost axis split into work groups); a target with work items and no axis besides v keeps the dense form, which spreads v over the
grid. Checked on the kernel AST after the one-hot gathers, before the optimizer."""
from __future__ import annotations
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, KernelInfo
from tinygrad.helpers import prod
from tinygrad.dtype import dtypes
from tinygrad.codegen.opt.kernel import size
from tinygrad.codegen.opt.padding import reduce_identity
from tinygrad.codegen.opt.heuristic import THREADS, SHARES_PER_THREAD, WORK_PER_THREAD
from tinygrad.codegen.onehot_gather import _conjuncts, _index_match

FOLDS = (Ops.ADD, Ops.MUL, Ops.MAX)  # reduces with an identity (x op identity is x): the terms a row does not receive drop out
MAX_GROUP = 32  # items of a work group along the innermost parallel axis (a warp's worth of neighbouring columns)
# fewer rows than this keep the dense sum: its few passes over the ids vectorize and share out over the cores, while the scatter's adds
# wait on each other where ids repeat (CPU, 2 threads, 65536 ids x 16 columns: 10 rows dense 0.45 ms, scattered 0.8; 64 rows x 1 column
# of 262144 ids 1.6 against 0.45; 1000 rows 15.5 against 0.22)
MIN_ROWS = 16

def _match(ast:UOp) -> tuple[UOp, UOp, UOp, list[UOp], UOp, UOp]|None:
  """(END, REDUCE, value x, other conjuncts, v, e) of a kernel that is one store of a one-hot sum over an output range"""
  info = ast.arg if isinstance(ast.arg, KernelInfo) else KernelInfo()
  if info.opts_to_apply is not None or info.applied_opts: return None  # opts chosen for the kernel as written
  if len(ast.src) != 1 or (end := ast.src[0]).op is not Ops.END or (st := end.src[0]).op is not Ops.STORE or len(st.src) != 2: return None
  if (red := st.src[1]).op is not Ops.REDUCE or red.arg not in FOLDS or (body := red.src[0]).op is not Ops.WHERE: return None
  cond, x, ident = body.src
  if ident.op is not Ops.CONST or ident.arg != reduce_identity(red.arg, red.dtype) or st.src[0].op is not Ops.INDEX: return None
  outs, rrs = end.src[1:], red.src[1:]
  if not all(r.op is Ops.RANGE and size(r) is not None for r in outs + rrs): return None
  if any(size(r) == 0 for r in rrs): return None  # nothing to fold: the dense form stores the identity (a loop of no trips folds away)
  if any(r.arg[1] is not AxisType.LOOP for r in outs) or any(r.arg[1] is not AxisType.REDUCE for r in rrs): return None
  # the output is set to the identity first: a kernel that also reads it (an in-place update) must see its old values
  if st.src[0].src[0] in red.toposort(): return None
  parts = _conjuncts(cond)
  for k, c in enumerate(parts):
    if (m := _index_match(c, outs)) is not None and m[0] in st.src[0].toposort() and size(m[0]) >= MIN_ROWS:
      return end, red, x, parts[:k] + parts[k+1:], *m
  return None

def _parallel(rest:list[UOp], work:int, renderer, fresh:int, locals_ok:bool, per_thread:int=SHARES_PER_THREAD) -> tuple[dict[UOp, UOp], list[UOp]]|None:
  """the ranges that both loop nests share ({output range: its index from them}, the shared ranges), rest outermost first, at most
  per_thread shares a core; None to keep the dense form"""
  if getattr(renderer, "has_local", False):
    if not rest: return None  # one work item would run the whole scatter: the dense form spreads v over the grid
    glob = {r: r.replace(arg=(r.arg[0], AxisType.GLOBAL) + r.arg[2:]) for r in rest}
    inner = rest[-1]
    grp = max(g for g in range(1, MAX_GROUP + 1 if locals_ok else 2) if size(inner) % g == 0)
    if grp == 1: return glob, list(glob.values())
    lcl = UOp.range(grp, fresh, AxisType.LOCAL, inner.dtype)
    glob[inner] = inner.replace(src=(inner.src[0].const_like(size(inner) // grp),), arg=(inner.arg[0], AxisType.GLOBAL) + inner.arg[2:])
    return {**glob, inner: glob[inner] * grp + lcl}, list(dict.fromkeys([glob[r] for r in rest] + [lcl]))
  threads = THREADS.value if getattr(renderer, "has_threads", False) else 1
  if threads < 2 or work < 2 * WORK_PER_THREAD: return {}, []
  want = min(threads * per_thread, work // WORK_PER_THREAD)
  for amt in range(want, 1, -1):
    for r in rest:  # the outermost axis that divides: each share a contiguous block of it
      if size(r) % amt: continue
      thr = UOp.range(amt, fresh, AxisType.THREAD, r.dtype)
      if size(r) == amt: return {r: thr}, [thr]  # a block of one is no loop (a range of one trip folds away under its END)
      block = r.replace(src=(r.src[0].const_like(size(r) // amt),))
      return {r: thr * (size(r) // amt) + block}, [thr]
  return {}, []

def scatter_onehot_sums(ast:UOp, renderer=None) -> UOp:
  if (m := _match(ast)) is None: return ast
  end, red, x, others, v, e = m
  st, rest = end.src[0], sorted((r for r in end.src[1:] if r is not v), key=lambda r: r.arg[0])
  info = ast.arg if isinstance(ast.arg, KernelInfo) else KernelInfo()
  fresh = max(u.arg[0] for u in ast.toposort() if u.op is Ops.RANGE) + 1
  work = (size(v) + prod(size(r) for r in red.src[1:])) * prod(size(r) for r in rest)
  if (par := _parallel(rest, work, renderer, fresh, not info.dont_use_locals)) is None: return ast
  split, shared = par
  fresh += 1
  ident = red.const_like(reduce_identity(red.arg, red.dtype))
  # the nest setting the identity: the output's own loops, with the parallel split
  zero_idx = st.src[0].substitute(split)
  zero_loops = [q for r in end.src[1:] for q in _loops_of(split.get(r, r))]
  zero_end = zero_idx.store(ident).end(*zero_loops, *shared)
  # the scatter nest: the reduce's ranges as serial loops in order, outermost, then fresh copies of the output's other loops
  serial = {r: r.replace(arg=(r.arg[0], AxisType.LOOP) + r.arg[2:]) for r in red.src[1:]}
  copies: dict[UOp, UOp] = {}
  for q in [q for r in rest for q in _loops_of(split.get(r, r))]:
    copies[q] = q.replace(arg=(fresh, AxisType.LOOP) + q.arg[2:])
    fresh += 1
  if copies and not getattr(renderer, "has_local", True):  # the innermost: the row's stride-1 axis
    copies[q] = _upcast(copies[q], red.dtype.itemsize, renderer, fresh)
  # seen unsigned, a negative id is past every row: one compare bounds both ends
  ue = e.cast(dtypes.uint32 if -2**31 <= e.vmin and e.vmax < 2**31 else dtypes.uint64)
  # clamped into bounds: bounds that keep the address math 32-bit (under the gate the clamp is the id itself, and LLVM drops it)
  at = {v: ue.minimum(size(v) - 1).cast(v.dtype)}
  gate = ue < size(v)
  for c in others: gate = gate & c
  def scattered(u:UOp) -> UOp: return u.substitute(at).substitute(split).substitute(copies).substitute(serial)
  idx, gate = scattered(st.src[0]), scattered(gate)
  cur = idx.replace(src=(idx.src[0].after(zero_end),) + idx.src[1:])
  # the row's load and store are gated, a branch around its update: a select of the identity into an update of every trip made each
  # address wait on the clamp (branchless), where the predicted branch lets the next rows' loads run ahead (CPU, 1M ids into 1000 rows:
  # a float sum 0.83 -> 0.56 ms, an int count 0.87 -> 0.36)
  add = cur.store(cur.load(ident, gate).alu(red.arg, scattered(x)), gate)
  # only memory carries the fold from trip to trip: a serial loop its add does not depend on (a row and a value the compiler proved
  # constant, ids >> 10 of uint8s) had the add moved out of it and run once. The dense form's reduce multiplies such a term instead
  if not set(serial.values()) <= set(add.toposort()): return ast
  scatter_end = add.end(*serial.values(), *[q for c in copies.values() for q in _loops_of(c, AxisType.LOOP, AxisType.UPCAST)], *shared)
  return ast.replace(src=(zero_end, scatter_end), arg=KernelInfo(info.name, (), info.dont_use_locals, info.applied_opts))

def _loops_of(idx:UOp, *kinds:AxisType) -> list[UOp]:
  """the ranges of these kinds (LOOP by default) an output range's index is made of, outermost first (the parallel ones are shared and
  listed apart)"""
  return sorted((u for u in idx.toposort() if u.op is Ops.RANGE and u.arg[1] in (kinds or (AxisType.LOOP,))), key=lambda u: u.arg[0])

def _upcast(q:UOp, itemsize:int, renderer, fresh:int) -> UOp:
  """the innermost loop of the scatter as one vector's lanes per trip: the select of the gate is fixed for the loop, and LLVM's loop
  vectorizer is kept off such a loop (renderer/llvmir.py slp_only_loops) while its SLP vectorizer packs the lanes of a trip"""
  lanes = max(1, getattr(renderer, "vector_bytes", 32) // itemsize)
  while lanes > 1 and size(q) % lanes: lanes //= 2
  if lanes == 1: return q
  if lanes == size(q): return q.replace(arg=(fresh, AxisType.UPCAST) + q.arg[2:])
  return q.replace(src=(q.src[0].const_like(size(q) // lanes),)) * lanes + UOp.range(lanes, fresh, AxisType.UPCAST, q.dtype)
