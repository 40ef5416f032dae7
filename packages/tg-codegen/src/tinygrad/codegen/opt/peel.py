"""Loop peeling for gates that split a vector. A load or store whose gate `a*r + lanes + rest < n` varies along the access's stride-1
UPCAST lanes (an output width that the 16-lane tile does not divide: matmul 1000's last panel holds 8 columns, or the panel copy that
pads B to it) is a branch per lane in every trip of the loop, though only the last trips of r can fail it. LLVM's SLP vectorizer packs
no vector across those branches: it builds the whole tile from the store groups that share a gate, xmm and scalar pieces of 16-lane
accumulators (matmul 1000, tile 8x16, the kernel alone at 2 threads: 13.0 ms; with an output 1008 wide, no gate: 5.9 ms). The kernel
is split into copies of its loop nest instead: r over [lo, hi), where every lane's gate holds and folds away, then r over [0, lo) and
[hi, size) with the gates kept. A gate bounded at both ends (a padded copy's row, `0 < x*2 + lane < 29`) peels both ends: its loads were
a select per lane (pad of 8x256x28x28 by 1, 2 threads: 0.63 -> 0.3 ms). A loop is cut wherever such a gate turns, so gates that hold in
different trips (a cat's inputs, each read where its own gate holds) each leave one piece in which every gate is decided: there a gate
that holds is dropped and a load whose gate fails gives its alternative value without reading. A scalar loop (no width divides an odd
axis: a cat of 1000 and 1001 columns) is cut the same way where a gate moves along the loop its access walks with stride 1: each access
was a select, which LLVM's loop vectorizer does not pack (4096x(2048+2047) at 2 threads: 3.9 -> 1.9 ms). The copies are of the loop nest
below the cut loop and run one after another inside the loops outside it, which they share (and the THREAD axis); every other range of a
copy after the first is a new one."""
from __future__ import annotations
import math
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes
from tinygrad.uop.symbolic import _linear
from tinygrad.codegen.opt.kernel import simplified, size

# the second copy gets fresh ranges of these kinds; a kernel with any other kind (work items, a group reduce) is left as it is
_COPIED = (AxisType.LOOP, AxisType.UPCAST, AxisType.UNROLL, AxisType.REDUCE)
# the kinds of loop the copies may share: a loop outside the cut one
_SHARED = (AxisType.LOOP, AxisType.THREAD)
# a loop cut into more pieces than this shares only the THREAD axis (see _peeled)
SHARED_PIECES_MAX = 8

def _conjuncts(g:UOp) -> list[UOp]: return _conjuncts(g.src[0]) + _conjuncts(g.src[1]) if g.op is Ops.AND else [g]

def _stride_one(idx:UOp) -> tuple[set[UOp], set[UOp]]:
  """the ranges the address idx walks with stride 1: its UPCAST lanes (one vector access), and where it has none, its LOOP ranges (a
  scalar loop LLVM's loop vectorizer packs into vectors, unless a gate that moves along it makes each access a select: a cat along the
  last axis, 4096x(1000+1001) at 2 threads: 1.8 ms)"""
  lin = _linear(simplified(idx))
  ones = {b for b, m in lin[0].items() if b.op is Ops.RANGE and m == 1} if lin is not None else set()
  lanes = {b for b in ones if b.arg[1] is AxisType.UPCAST}
  return lanes, set() if lanes else {b for b in ones if b.arg[1] is AxisType.LOOP}

def _bounds(c:UOp) -> tuple[dict[UOp, int], int, float, float]|None:
  """(coefficients, constant, lo, hi) of a conjunct `expr < n` or `k < expr` read as `lo <= expr < hi`, expr affine in output ranges of
  known sizes with every coefficient positive; None for any other"""
  if c.op is not Ops.CMPLT: return None
  if c.src[1].op is Ops.CONST: side, bound = c.src[0], (-math.inf, c.src[1].arg)
  elif c.src[0].op is Ops.CONST: side, bound = c.src[1], (c.src[0].arg + 1, math.inf)
  else: return None
  if (e := _linear(side)) is None: return None
  if not all(b.op is Ops.RANGE and size(b) is not None and m > 0 and b.arg[1] is not AxisType.REDUCE for b, m in e[0].items()): return None
  return (e[0], e[1]) + bound

def _splitting(gate:UOp, idx:UOp, load:bool=False) -> list[tuple[dict[UOp, int], int, float, float]]:
  """(coefficients, constant, lo, hi) of each conjunct `lo <= expr < hi` of the gate (`expr < n` or `k < expr`) that varies along the
  vector lanes of the address idx (or along the loop a scalar access walks with stride 1), or of a load's any conjunct where the address
  has vector lanes (a gated load is a select per lane, even where its gate is one for all of them: a padded copy's first and last rows),
  with expr affine in output ranges of known sizes, every coefficient positive"""
  (unit, loops), ret = _stride_one(idx), []
  walk = unit or loops
  for c in _conjuncts(simplified(gate)) if walk else []:
    if (b := _bounds(c)) is not None and ((load and unit) or walk & b[0].keys()): ret.append(b)
  return ret

def _gated(ast:UOp) -> list[tuple[UOp, UOp, bool]]:
  """(gate, address, is a load) of each gated load and store"""
  return [(u.src[2], u.src[0].src[1], u.op is Ops.LOAD) for u in ast.toposort() if u.op in (Ops.LOAD, Ops.STORE) and len(u.src) == 3
          and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2]

def vector_gate_ranges(ast:UOp) -> set[UOp]:
  """the ranges of the gates that split vectors: a THREAD split of another axis leaves them to one loop the peel can split"""
  return {r for g, idx, ld in _gated(ast) for coefs, _, _, _ in _splitting(g, idx, ld) for r in coefs}

def _decided(coefs:dict[UOp, int], k:int, lo:float, hi:float, r:UOp) -> tuple[tuple[int, int], int, int]:
  """for `lo <= expr < hi` along r: the trips [a, b) in which it holds for every value of the other ranges, and the trips [0, below)
  and [above, size) in which it fails for every value of them"""
  m, least = coefs[r], k  # the other ranges at 0
  most = k + sum(mb * (size(b) - 1) for b, mb in coefs.items() if b is not r)
  n = size(r)
  def clip(t:float) -> int: return min(n, max(0, t))
  a = 0 if lo == -math.inf else clip(math.ceil((lo - least) / m))
  b = n if hi == math.inf else clip(math.ceil((hi - most) / m))
  below = 0 if lo == -math.inf else clip(math.ceil((lo - most) / m))
  above = n if hi == math.inf else clip(math.ceil((hi - least) / m))
  return (a, max(a, b)), below, above

def _pieces(ast:UOp) -> dict[UOp, list[tuple[int, int, bool]]]:
  """{LOOP range r of a conjunct that splits vectors: its trips cut where such a conjunct turns from holding everywhere to failing
  somewhere or back, as (start, end, every such conjunct is decided there: holds or fails for every value of the other ranges)},
  neighbouring pieces alike merged, for each r cut into two pieces or more with one decided"""
  conds: dict[UOp, list[tuple[tuple[int, int], int, int]]] = {}
  for g, idx, ld in _gated(ast):
    for coefs, k, lo, hi in _splitting(g, idx, ld):
      for r in coefs:
        if r.arg[1] is AxisType.LOOP: conds.setdefault(r, []).append(_decided(coefs, k, lo, hi, r))
  ret = {}
  for r, cs in conds.items():
    cuts = sorted({0, size(r)} | {t for (a, b), below, above in cs for t in (a, b, below, above)})
    def state(s:int, e:int) -> tuple:
      return tuple(True if a <= s and e <= b else False if e <= below or s >= above else None for (a, b), below, above in cs)
    merged: list[list] = []
    for s, e in zip(cuts, cuts[1:]):
      st = state(s, e)
      if merged and (merged[-1][2] == st or (None in st and None in merged[-1][2])): merged[-1][1] = e  # alike, or both undecided
      else: merged.append([s, e, st])
    pieces = [(s, e, None not in st) for s, e, st in merged]
    if len(pieces) > 1 and any(d for _, _, d in pieces): ret[r] = pieces
  return ret

def peel_gates(sink:UOp) -> UOp:
  """the kernel with its loops split where a gate splits the vectors of a load or store (see the module's docstring); unchanged where
  none does, where a part whose gates are decided would still gate vector lanes, or where the kernel is not one loop nest (one END) of
  ranges the copy can renew"""
  if len(sink.src) != 1 or (end := sink.src[0]).op is not Ops.END: return sink
  rngs = [u for u in end.toposort() if u.op is Ops.RANGE]
  if any(r.arg[1] not in _COPIED + (AxisType.THREAD,) for r in rngs): return sink
  leaves: list[tuple[UOp, bool]] = []
  new = _peeled(end, [max(x.arg[0] for x in rngs) + 1], leaves)
  # only where that frees the vectors of the parts whose gates are decided
  if len(leaves) == 1 or any(_lane_gated(p) for p, decided in leaves if decided): return sink
  return sink.replace(src=new.src if new.op is Ops.GROUP else (new,))

def _peeled(end:UOp, next_id:list[int], leaves:list[tuple[UOp, bool]]) -> UOp:
  """the loop nest end with the loop that has the largest share of decided trips cut into pieces, then each decided piece again while a
  gate is left (a padded copy: rows, then each row's first and last vector); each piece is appended to leaves as (part, its gates are
  decided). The pieces run one after another inside the loops outside the cut one, which they share: each piece's trips of one value of
  those loops touch the same cache lines (a padded copy's rows of one plane; a conv's row ends beside its row), where pieces that each
  loop over the whole kernel pass over its buffers once per piece (the pad of 8x256x28x28: five passes over each image)"""
  cands = {r: ps for r, ps in _pieces(end).items() if r in end.ended_ranges}
  if not cands:
    leaves.append((end, True))
    return end
  r = max(cands, key=lambda x: sum(e - s for s, e, d in cands[x] if d) / size(x))
  # many pieces (a cat's inputs, each read from a buffer of its own) share the THREAD axis alone: inside a shared loop their copies are
  # one loop body of thousands of accesses, whose dependences LLVM 22's loop passes check pairwise (a cat of 30 inputs along the last
  # axis, all inside the row loop: 20 s to compile, 0.2 s without unrolling)
  shared = _SHARED if len(cands[r]) <= SHARED_PIECES_MAX else (AxisType.THREAD,)
  outer = tuple(x for x in end.ended_ranges if x.arg[1] in shared and x.arg[0] < r.arg[0])
  inner = end.src[0].end(*[x for x in end.src[1:] if x not in outer])
  # renewed in each copy: the loops this nest ends and the ranges closed inside it (reduces); the loops around it are shared
  rngs, pieces = [u for u in inner.toposort() if u.op is Ops.RANGE and (u in inner.ended_ranges or u.arg[1] not in _SHARED)], []
  failing, order = _failing_trips(inner.src[0], r), inner.src[0].toposort()
  for n, (lo, hi, decided) in enumerate(cands[r]):
    fresh: dict[UOp, UOp] = {}
    if n:
      off, next_id[0] = next_id[0], next_id[0] + max(x.arg[0] for x in rngs) + 1
      fresh = {x: x.replace(arg=(x.arg[0] + off,) + tuple(x.arg[1:])) for x in rngs if x.arg[1] in _COPIED}
    part = _part(inner, r, fresh.pop(r, r), lo, hi, fresh, order, failing)
    if decided: pieces.append(_peeled(part, next_id, leaves))
    else:
      leaves.append((part, False))
      pieces.append(part)
  return UOp(Ops.GROUP, dtypes.void, tuple(pieces)).end(*outer)

def _lane_gated(x:UOp) -> bool:
  """some gated load or store of x has a gate that depends on the vector lanes of its address (or on the loop a scalar access walks with
  stride 1), or is a load with vector lanes"""
  for g, idx, ld in _gated(x):
    if (sg := simplified(g)).op is Ops.CONST and sg.arg is True: continue
    lanes, loops = _stride_one(idx)
    if (lanes | loops) & set(sg.toposort()) or (ld and lanes): return True
  return False

def _decided_gates_folded(x:UOp) -> UOp:
  """each gated load whose gate holds for every value of its ranges as a plain load, each whose gate fails for every value as what it
  gives there (its alternative value); each store whose gate holds everywhere ungated"""
  new: dict[UOp, UOp] = {}
  for u in x.toposort():
    nu = u if all(new[s] is s for s in u.src) else u.replace(src=tuple(new[s] for s in u.src))
    if u.op in (Ops.LOAD, Ops.STORE) and len(u.src) == 3 and (g := simplified(u.src[2])).op is Ops.CONST:
      if g.arg: nu = nu.replace(src=nu.src[:1 if u.op is Ops.LOAD else 2])
      elif u.op is Ops.LOAD: nu = nu.src[1]
    new[u] = nu
  return new[x]

def _failing_trips(x:UOp, r:UOp) -> dict[UOp, list[tuple[int, int]]]:
  """{gated load or where of x: for each conjunct of its gate (condition) affine along r, the trips [below, above) of r outside which it
  fails for every value of the other ranges}"""
  ret: dict[UOp, list[tuple[int, int]]] = {}
  for u in x.toposort():
    if (u.op is Ops.LOAD and len(u.src) == 3) or u.op is Ops.WHERE:
      bs = [b for c in _conjuncts(simplified(u.src[2 if u.op is Ops.LOAD else 0])) if (b := _bounds(c)) is not None and r in b[0]]
      if bs: ret[u] = [_decided(*b, r)[1:] for b in bs]
  return ret

def _failing_loads_dropped(x:UOp, order:dict[UOp, None], failing:dict[UOp, list[tuple[int, int]]], lo:int, hi:int) -> UOp:
  """x (its nodes in `order`) with each gated load (and where) whose gate fails in every trip of [lo, hi) as its alternative value, and
  a sum with that value's 0 as its other term (x+0 -> x, as the symbolic rules fold it): a cat's other inputs and the adds joining them.
  Folding the whole body per piece (every load's gate simplified after the substitution, the chain rebuilt) made the peel of a cat of
  n inputs n^2 gate rewrites and node builds: 1.7 s of the first call of a stack of 100"""
  new: dict[UOp, UOp] = {}
  for u in order:
    if all(new[s] is s for s in u.src): nu = u
    elif u.op is Ops.ADD and any((z := new[s]).op is Ops.CONST and z.arg == 0 and z is not s for s in u.src):
      nu = new[u.src[1]] if new[u.src[0]].op is Ops.CONST and new[u.src[0]].arg == 0 else new[u.src[0]]
    else: nu = u.replace(src=tuple(new[s] for s in u.src))
    if any(hi <= below or lo >= above for below, above in failing.get(u, ())): nu = nu.src[1 if u.op is Ops.LOAD else 2]
    new[u] = nu
  return new[x]

def _part(end:UOp, r:UOp, new:UOp, lo:int, hi:int, fresh:dict[UOp, UOp], order:dict[UOp, None], failing:dict[UOp, list[tuple[int, int]]]) -> UOp:
  """the loop nest `end` with r running over [lo, hi) as the range new, the other ranges renamed by fresh, the loads failing there
  (`failing`, _failing_trips) dropped; order: the nodes of its body; one trip is no loop"""
  n = new.replace(src=(new.src[0].const_like(hi - lo),)) if hi - lo > 1 else None
  body = _failing_loads_dropped(end.src[0], order, failing, lo, hi)
  body = _decided_gates_folded(body.substitute(fresh | {r: r.const_like(lo) if n is None else n + lo if lo else n}))
  return body.end(*[n if x is r else fresh.get(x, x) for x in end.src[1:] if x is not r or n is not None])
