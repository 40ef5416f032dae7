"""Tensor cores: a renderer declares the matrix instructions its target has (Renderer.tensor_cores), each a `TensorCore`: the tile
D[M,N] = A[M,K] @ B[K,N] + C[M,N] one warp computes, its dtypes, and where each lane's fragment elements sit in A, B and C/D. OptOps.TC
rewrites a kernel's `REDUCE(ADD, MUL(a, b))` into that instruction, with the same rules for every renderer:
  - a REDUCE over ADD of dtype_out whose value is MUL(a, b) (or CAST(MUL) to dtype_out, or such a product padded with `where(valid, .., 0)`),
    a and b of dtype_in (a CAST from dtype_in counts as dtype_in: the tensor core multiplies the inputs exactly);
  - an output axis m that only a reads, an output axis n that only b reads, a reduce axis k both read, all of constant size;
  - each divides its tile dim, or padding it up (PADTO's gates) at most doubles it;
  - TC comes first (only LOOP and REDUCE axes in the kernel), there is one store and one reduce.
The rewrite splits m, n, k into an outer loop and the tile, adds a WARP axis of `threads` lanes, and gives each lane its fragment: A's
element i of lane l is `a` at (m, k) = tc.a.at(l, i), and so on. The store becomes one store per element of the lane's D fragment, each the
sum over the outer k of one WMMA node (C zero); once reduces are lowered to accumulators, `accumulate_in_wmma` makes them the C."""
from __future__ import annotations
from dataclasses import dataclass
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, graph_rewrite
from tinygrad.dtype import DType
from tinygrad.helpers import ContextVar
from tinygrad.codegen.opt.kernel import Opt, OptOps, OptError, ranges, pm_split, _renumber
from tinygrad.codegen.opt.padding import pad_axis

TC = ContextVar("TC", 1)  # TC=0: the heuristic and BEAM leave tensor cores alone

@dataclass(frozen=True)
class Fragment:
  """where a lane's elements of one matrix sit: element e of lane l is at (row, col) = elems[e] + the sum over the set bits b of l of
  lane_bits[b] (hardware layouts are of this form: the lane's bits pick a row/column block, the element its place in the block)"""
  lane_bits: tuple[tuple[int, int], ...]
  elems: tuple[tuple[int, int], ...]
  def at(self, lane:int, e:int) -> tuple[int, int]:
    r, c = self.elems[e]
    for b, (dr, dc) in enumerate(self.lane_bits):
      if lane >> b & 1: r, c = r + dr, c + dc
    return r, c
  def index(self, lane:UOp, e:int) -> tuple[UOp, UOp]:
    """(row, col) of element e as index math on the lane id"""
    return tuple(_bits_expr(lane, [d[i] for d in self.lane_bits], self.elems[e][i]) for i in (0, 1))

def _bits_expr(lane:UOp, steps:list[int], base:int) -> UOp:
  """base + sum of bit_b(lane) * steps[b]; a run of bits whose steps double is one digit: (lane // 2^first % 2^len) * steps[first]"""
  ret, b = lane.const_like(base), 0
  while b < len(steps):
    if steps[b] == 0:
      b += 1
      continue
    e = b + 1
    while e < len(steps) and steps[e] == 2 * steps[e-1]: e += 1
    digit = lane // (1 << b) if b else lane
    if e < len(steps): digit = digit % (1 << (e - b))
    ret, b = ret + digit * steps[b], e
  return ret

@dataclass(frozen=True)
class TensorCore:
  name: str                 # the instruction, for messages and the renderers' spelling
  dims: tuple[int, int, int]  # (N, M, K), upstream's order
  threads: int              # lanes of the warp that run it together
  dtype_in: DType
  dtype_out: DType
  a: Fragment               # A is M x K
  b: Fragment               # B is K x N
  c: Fragment               # C and D are M x N
  def __post_init__(self):
    (n, m, k), t = self.dims, self.threads
    for what, f, rows, cols in (("A", self.a, m, k), ("B", self.b, k, n), ("C", self.c, m, n)):
      cells = sorted(f.at(lane, e) for lane in range(t) for e in range(len(f.elems)))
      # every lane holds the same count; a layout may hold each element in several lanes (RDNA3's A and B: lanes 16-31 repeat 0-15)
      if set(cells) != {(r, c) for r in range(rows) for c in range(cols)} or len(f.lane_bits) != (t - 1).bit_length():
        raise ValueError(f"tensor core {self.name}: the {what} fragments of {t} lanes do not cover its {rows}x{cols} matrix")
  @property
  def elements(self) -> tuple[int, int, int]: return len(self.a.elems), len(self.b.elems), len(self.c.elems)

class TCError(OptError):
  """the kernel has no tensor-core matmul this tensor core can run: the message says why"""

def _strip_cast(x:UOp, dt:DType) -> UOp: return x.src[0] if x.op is Ops.CAST and x.src[0].dtype is dt else x

def _ranges_of(x:UOp) -> set[UOp]: return {u for u in x.toposort() if u.op is Ops.RANGE}

def matmul_of(red:UOp, tc:TensorCore) -> tuple[UOp, UOp, UOp|None]:
  """(a, b, gate) of a REDUCE(ADD) that tc can run, gate the padding's `valid` (or None); TCError says what does not fit"""
  if red.arg is not Ops.ADD or red.dtype is not tc.dtype_out:
    raise TCError(f"{tc.name} accumulates a sum in {tc.dtype_out}, the reduce is {red.arg.name} of {red.dtype}")
  v, gate = red.src[0], None
  if v.op is Ops.WHERE and v.src[2].op is Ops.CONST and v.src[2].arg == 0: gate, v = v.src[0], v.src[1]  # a padded reduce
  if v.op is Ops.CAST and v.src[0].op is Ops.MUL: v = v.src[0]  # a product in dtype_in (checked below) summed in dtype_out
  if v.op is not Ops.MUL: raise TCError(f"{tc.name} runs a sum of products, the reduce sums {v.op.name}")
  a, b = (_strip_cast(s, tc.dtype_in) for s in v.src)
  if a.dtype is not tc.dtype_in or b.dtype is not tc.dtype_in:
    raise TCError(f"{tc.name} multiplies {tc.dtype_in} values, the product is of {a.dtype} and {b.dtype}")
  return a, b, gate

def candidates(ast:UOp, tc:TensorCore) -> list[tuple[int, int, int]]:
  """(m, n, k) axis ids tc could run, in axis order: m an output axis only a reads, n one only b reads, k a reduce axis of the sum"""
  reds = [u for u in ast.toposort() if u.op is Ops.REDUCE]
  if len(reds) != 1: raise TCError(f"{tc.name} runs a kernel with one reduce, this one has {len(reds)}")
  a, b, _ = matmul_of(reds[0], tc)
  ra, rb = _ranges_of(a), _ranges_of(b)
  def const(r:UOp) -> bool: return bool(r.src) and r.src[0].op is Ops.CONST
  out = [r for r in ra ^ rb if r.arg[1] is AxisType.LOOP and const(r)]
  ks = sorted(r.arg[0] for r in reds[0].src[1:] if r in ra and r in rb and const(r))
  return [(m.arg[0], n.arg[0], k) for m in sorted(out, key=lambda r: r.arg) if m in ra for n in sorted(out, key=lambda r: r.arg) if n in rb
          for k in ks]

def _padded(n:int, tile:int, what:str, tc:TensorCore) -> int:
  p = -(-n // tile) * tile
  if p > 2 * n: raise TCError(f"{tc.name}: the {what} axis of size {n} padded to a multiple of {tile} ({p}) more than doubles its work")
  return p

def apply_tc(ast:UOp, tc:TensorCore, choice:int) -> UOp:
  """the kernel with its matmul on tc, the choice-th of `candidates` (m, n, k)"""
  if any(r.arg[1] not in (AxisType.LOOP, AxisType.REDUCE) for r in ranges(ast)):
    raise TCError(f"TC comes first: the kernel already has {sorted({r.arg[1].name for r in ranges(ast)})} axes")
  if len(ast.src) != 1 or ast.src[0].op is not Ops.END or ast.src[0].src[0].op is not Ops.STORE:
    raise TCError(f"{tc.name} runs a kernel with one store in a loop nest")
  if not 0 <= choice < len(cands := candidates(ast, tc)):
    raise TCError(f"{tc.name}: the kernel has {len(cands)} (m, n, k) axis choices, asked for number {choice}")
  (tn, tm, tk), ids = tc.dims, cands[choice]
  by_id = lambda: {r.arg[0]: r for r in ranges(ast)}
  for i, tile, what in zip(ids, (tm, tn, tk), "mnk"):
    r = by_id()[i]
    if (n := r.src[0].arg) % tile: ast = pad_axis(ast, r, _padded(n, tile, what, tc))
  rm, rn, rk = (by_id()[i] for i in ids)
  fresh = max(r.arg[0] for r in ranges(ast)) + 1
  lane = UOp.range(tc.threads, fresh, AxisType.WARP, rm.dtype)
  # each axis -> outer*tile + inner: the inner part a placeholder range the fragments replace, the outer one a loop (none if it is one trip)
  split, inner = {}, []
  for j, (r, tile) in enumerate(((rm, tm), (rn, tn), (rk, tk))):
    part = UOp.range(tile, fresh + 1 + j, AxisType.UNROLL if r is rk else AxisType.UPCAST, r.dtype)
    rest = r.replace(src=(r.src[0].const_like(r.src[0].arg // tile),))
    split[r] = (rest * tile + part, [rest, part]) if r.src[0].arg != tile else (part, [part])
    inner.append(part)
  ast = graph_rewrite(ast, pm_split, ctx=split, bottom_up=True, name="tc split")
  mi, ni, ki = inner
  red = next(u for u in ast.toposort() if u.op is Ops.REDUCE)
  a, b, gate = matmul_of(red, tc)
  if gate is not None: a, b = gate.where(a, a.const_like(0)), gate.where(b, b.const_like(0))
  na, nb, nc = tc.elements
  frag_a = [a.substitute(dict(zip((mi, ki), tc.a.index(lane, i)))) for i in range(na)]
  frag_b = [b.substitute(dict(zip((ki, ni), tc.b.index(lane, i)))) for i in range(nb)]
  zeros = [UOp.const(tc.dtype_out, 0)] * nc
  rest_k = [r for r in red.src[1:] if r is not ki]
  end = ast.src[0]
  stores = []
  for e in range(nc):
    d = UOp(Ops.WMMA, tc.dtype_out, (*frag_a, *frag_b, *zeros), (tc, e))
    st = end.src[0].substitute({red: d.reduce(*rest_k, op=Ops.ADD)})
    stores.append(st.substitute(dict(zip((mi, ni), tc.c.index(lane, e)))))
  loops = [r for r in end.src[1:] if r not in (mi, ni)] + [lane]
  return _renumber(ast.replace(src=(UOp(Ops.GROUP, end.dtype, tuple(stores)).end(*loops),)))

def tc_actions(ast:UOp, renderer) -> list[Opt]:
  """TC(choice, tensor core) for every (m, n, k) choice of every tensor core the renderer declares that fits the kernel (TC=0: none)"""
  if not TC.value or not (tcs := getattr(renderer, "tensor_cores", ())) or any(r.arg[1] not in (AxisType.LOOP, AxisType.REDUCE) for r in ranges(ast)):
    return []
  ret = []
  for i, tc in enumerate(tcs):
    try: ret += [Opt(OptOps.TC, c, i) for c in range(len(candidates(ast, tc)))]
    except TCError: continue
  return ret

def _acc_plus_wmma(u:UOp) -> tuple[UOp, UOp]|None:
  """(accumulator load, WMMA with zero C) of an ADD(LOAD, WMMA) in either order"""
  if u.op is not Ops.ADD or len(u.src) != 2: return None
  w, acc = (u.src[0], u.src[1]) if u.src[0].op is Ops.WMMA else (u.src[1], u.src[0])
  if w.op is not Ops.WMMA or acc.op is not Ops.LOAD: return None
  na, nb, _ = w.arg[0].elements
  return (acc, w) if all(c.op is Ops.CONST and c.arg == 0 for c in w.src[na+nb:]) else None

def accumulate_in_wmma(sink:UOp) -> UOp:
  """after reduces are lowered: `acc_e = acc_e + WMMA_e(a, b, 0)` for every element e of one instruction -> `acc_e = WMMA_e(a, b, acc)`,
  the tensor core adding its product to the accumulators (one rounding, no separate adds)"""
  sums: dict[tuple, dict[int, tuple[UOp, UOp]]] = {}
  for u in sink.toposort():
    if (m := _acc_plus_wmma(u)) is not None: sums.setdefault(m[1].src, {})[m[1].arg[1]] = (u, m[0])
  subs: dict[UOp, UOp] = {}
  for src, adds in sums.items():
    w = next(u for u in next(iter(adds.values()))[0].src if u.op is Ops.WMMA)
    tc, (na, nb, nc) = w.arg[0], w.arg[0].elements
    if len(adds) != nc: continue  # not every element has its accumulator here: the instruction keeps its zeros
    accs = tuple(adds[e][1] for e in range(nc))
    subs.update({add: UOp(Ops.WMMA, tc.dtype_out, (*src[:na+nb], *accs), (tc, e)) for e, (add, _) in adds.items()})
  return sink.substitute(subs) if subs else sink
