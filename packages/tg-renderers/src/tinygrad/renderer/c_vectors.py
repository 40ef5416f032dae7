"""Which scalar lanes of a linear program the C renderer writes as one GCC/clang vector (`__attribute__((vector_size))`).

The expander unrolls a register tile into scalar copies, one per lane; LLVM's SLP vectorizer packs them again, and so does clang's, but
gcc 12 builds each vector lane by lane (matmul 1536: a third of clang's speed). Here the renderer packs them itself, as SLP does:
seeds are stores of consecutive elements of one buffer (and stores into REG accumulators grouped into one vector array), and from each
seed the lanes' operands are packed while they are the same op on the same dtype: consecutive global loads become one vector load,
loads of one slot of W REG buffers a load of a vector array, ALU ops a vector op (or, for ops C has no vector operator for, a vector
built from the per-lane scalar C, which both compilers turn into the vector instruction: `__builtin_fmaf` per lane -> vfmadd...ps).
Other operands (a value shared by every lane, constants, scalars) are built into a vector. A pack is computed where its last lane was,
so one whose lane a scalar node reads before that is dropped (the lane would be computed twice), and so is one that would reorder two
memory accesses that may touch the same element; then the plan is redone. Every lane computes the same C as before, so results are
unchanged."""
from __future__ import annotations
import sys
from dataclasses import dataclass
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp
from tinygrad.dtype import DType, dtypes, AddrSpace

MAX_VECTOR_BYTES = 64  # one AVX-512 register; wider would only be split again
MIN_LANES = 4
# ops whose C operator applies to vectors lane by lane with the same result as on each scalar (narrow ints wrap as their cast does)
NATIVE = {Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG, Ops.AND, Ops.OR, Ops.XOR}
NATIVE_FLOAT = {Ops.FDIV}

@dataclass(eq=False)
class RegGroup:
  """W REG buffers of one dtype and size held as one array of vectors: buffer k is lane k"""
  buffers: tuple[UOp, ...]
  name: str = ""

@dataclass(eq=False)
class Pack:
  """W nodes computed as one vector: kind is load, store (global, consecutive elements), regload, regstore (a slot of a RegGroup) or alu.
  An operand is a Pack or a tuple of per-lane scalars to build a vector from"""
  kind: str
  lanes: tuple[UOp, ...]
  operands: tuple[Pack|tuple[UOp, ...], ...] = ()
  group: RegGroup|None = None
  pos: int = 0
  native: bool = False  # an alu pack in C's vector operators (else a vector of the lanes' scalar C)
  name: str = ""
  used: bool = False  # reached from a seed through vector operands

def _offset(i:UOp) -> tuple[UOp|None, int]:
  """an int index as (x, c): x + c, c alone (x None), or x + 0"""
  if i.op is Ops.CONST: return None, i.arg
  if i.op is Ops.ADD and i.src[1].op is Ops.CONST: return i.src[0], i.src[1].arg
  return i, 0

class LanePlan:
  def __init__(self, uops:list[UOp], scope:dict[UOp, UOp|None], dtypes_ok:set[DType], banned:set[tuple[UOp, ...]]):
    self.uops, self.scope, self.dtypes_ok, self.banned = uops, scope, dtypes_ok, banned
    self.pos = {u: i for i, u in enumerate(uops)}
    self.pack_of: dict[UOp, tuple[Pack, int]] = {}
    self.group_of: dict[UOp, tuple[RegGroup, int]] = {}
    self.seeds: list[Pack] = []
    self.unpackable: set[tuple[UOp, ...]] = set()  # lanes tried and failed: a graph that shares nodes is walked once

  # *** building packs from lanes ***
  def _same(self, lanes:tuple[UOp, ...]) -> bool:
    u0 = lanes[0]
    return len(set(lanes)) == len(lanes) and u0.dtype in self.dtypes_ok and all(
      u.op is u0.op and u.dtype is u0.dtype and u.arg == u0.arg and len(u.src) == len(u0.src) and self.scope[u] is self.scope[u0]
      for u in lanes)

  def _consecutive(self, lanes:tuple[UOp, ...]) -> bool:
    idxs = [u.src[0] for u in lanes]
    if any(i.op is not Ops.INDEX or i.src[0].op is not Ops.PARAM or i.src[0] is not idxs[0].src[0] for i in idxs): return False
    offs = [_offset(i.src[1]) for i in idxs]
    return all(o[0] is offs[0][0] and o[1] == offs[0][1] + k for k, o in enumerate(offs))

  def _reg_group(self, lanes:tuple[UOp, ...]) -> RegGroup|None:
    """the group of the REG buffers lane k reads or writes at one slot, made on first sight"""
    idxs = [u.src[0] for u in lanes]
    if any(i.op is not Ops.INDEX or i.src[1] is not idxs[0].src[1] for i in idxs): return None
    bufs = tuple(i.src[0] for i in idxs)
    b0 = bufs[0]
    if any(b.op is not Ops.BUFFER or b.arg.addrspace is not AddrSpace.REG or b.dtype != b0.dtype or b.arg.shape != b0.arg.shape or
           self.scope[b] is not self.scope[b0] for b in bufs) or len(set(bufs)) != len(bufs): return None
    known = [self.group_of.get(b) for b in bufs]
    if all(g is None for g in known):
      group = RegGroup(bufs)
      for k, b in enumerate(bufs): self.group_of[b] = (group, k)
      return group
    return known[0][0] if all(g is not None and g[0] is known[0][0] and g[1] == k for k, g in enumerate(known)) else None  # type: ignore[index]

  def _make(self, kind:str, lanes:tuple[UOp, ...], operands=(), group=None) -> Pack:
    p = Pack(kind, lanes, tuple(operands), group, max(self.pos[u] for u in lanes))
    for k, u in enumerate(lanes): self.pack_of[u] = (p, k)
    return p

  def build(self, lanes:tuple[UOp, ...]) -> Pack|None:
    if (known := self.pack_of.get(lanes[0])) is not None: return known[0] if known[0].lanes == lanes else None
    if any(u in self.pack_of for u in lanes) or lanes in self.banned or not self._same(lanes): return None
    u0 = lanes[0]
    if u0.op is Ops.LOAD:
      if len(u0.src) != 1 or u0.src[0].op is not Ops.INDEX: return None  # gated: a select per lane
      if u0.src[0].src[0].op is Ops.BUFFER: return self._make("regload", lanes, group=g) if (g := self._reg_group(lanes)) else None
      return self._make("load", lanes) if self._consecutive(lanes) else None
    if u0.op not in GroupOp.ALU and u0.op not in (Ops.CAST, Ops.BITCAST): return None
    operands = [self.operand(tuple(u.src[i] for u in lanes)) for i in range(len(u0.src))]
    if not any(isinstance(o, Pack) for o in operands): return None
    p = self._make("alu", lanes, operands)
    p.native = (u0.op in NATIVE or u0.op is Ops.CAST or (u0.op in NATIVE_FLOAT and dtypes.is_float(u0.dtype))) and \
      all(isinstance(o, Pack) or (o[0].dtype in self.dtypes_ok and all(s.dtype is o[0].dtype for s in o)) for o in operands)
    return p

  def operand(self, lanes:tuple[UOp, ...]) -> Pack|tuple[UOp, ...]:
    if lanes in self.unpackable: return lanes
    if (p := self.build(lanes)) is None: self.unpackable.add(lanes)
    return p or lanes

  # *** seeds ***
  def _store_seed(self, kind:str, lanes:tuple[UOp, ...], group:RegGroup|None=None):
    if lanes in self.banned or any(u in self.pack_of for u in lanes) or not all(self.scope[u] is self.scope[lanes[0]] for u in lanes): return
    if any(len(u.src) != 2 for u in lanes): return  # gated
    vals = tuple(u.src[1] for u in lanes)
    if vals[0].dtype not in self.dtypes_ok or any(v.dtype is not vals[0].dtype for v in vals): return
    value = self.operand(vals)
    if isinstance(value, Pack) or (group is not None and all(v.op is Ops.CONST for v in value)):
      self.seeds.append(self._make(kind, lanes, (value,), group))

  def plan(self):
    stores = [u for u in self.uops if u.op is Ops.STORE and u.src[0].op is Ops.INDEX]
    runs: dict[tuple, list[tuple[int, UOp]]] = {}
    for s in stores:
      if s.src[0].src[0].op is Ops.PARAM:
        o = _offset(s.src[0].src[1])
        runs.setdefault((self.scope[s], s.src[0].src[0], o[0]), []).append((o[1], s))
    for run in runs.values():
      run.sort(key=lambda t: t[0])
      start = 0
      while start < len(run):
        end = start + 1
        while end < len(run) and run[end][0] == run[end-1][0] + 1: end += 1
        width_max = MAX_VECTOR_BYTES // run[start][1].src[1].dtype.itemsize
        while end - start >= MIN_LANES:
          w = min(width_max, 1 << ((end - start).bit_length() - 1))
          self._store_seed("store", tuple(s for _, s in run[start:start+w]))
          start += w
        start = end
    # stores into grouped REG buffers: a slot of every buffer of a group in one scope is one vector store; groups found on the way add more
    done: set[tuple] = set()
    while True:
      slots: dict[tuple, dict[int, UOp]] = {}
      for s in stores:
        if (g := self.group_of.get(s.src[0].src[0])) is not None:
          slots.setdefault((g[0], s.src[0].src[1], self.scope[s]), {}).setdefault(g[1], s)
      todo = [(key, lanes) for key, lanes in slots.items() if key not in done and len(lanes) == len(key[0].buffers)]
      if not todo: break
      for key, lanes in todo:
        done.add(key)
        self._store_seed("regstore", tuple(lanes[k] for k in range(len(key[0].buffers))), key[0])
    # only packs a seed reaches through vector operands are worth their vectors
    def mark(p:Pack):
      if p.used: return
      p.used = True
      for o in p.operands:
        if isinstance(o, Pack): mark(o)
    for s in self.seeds: mark(s)
    self.pack_of = {u: pk for u, pk in self.pack_of.items() if pk[0].used}
    # a group no vector reads or writes stays scalar buffers: an element of a vector array would cost a memory access
    groups = {pk[0].group for pk in self.pack_of.values()}
    self.group_of = {b: g for b, g in self.group_of.items() if g[0] in groups}

  # *** what a pack may not do ***
  def read_early(self) -> set[tuple[UOp, ...]]:
    """packs a scalar node (or a vector built from scalars) reads a lane of before the pack is computed: that lane would be computed
    twice (relu's compare reads its lane of the add)"""
    early: set[tuple[UOp, ...]] = set()
    last = {p.pos: p for p, _ in self.pack_of.values()}
    for pos, u in enumerate(self.uops):
      reads = list(u.src) if u not in self.pack_of else []
      if (p := last.get(pos)) is not None: reads += [s for o in p.operands if not isinstance(o, Pack) for s in o]
      early.update(pk[0].lanes for s in reads if (pk := self.pack_of.get(s)) is not None and pk[0].pos >= pos)
    return early

  def conflicts(self) -> set[tuple[UOp, ...]]:
    """packs that move a memory access past another that may touch the same element, one of them a store"""
    # buffer -> lane (of a REG group; None for others) -> base x of the index x + c -> c -> accesses: two accesses with one base and
    # different c, or in different lanes, never touch the same element
    accesses: dict[object, dict[int|None, dict[UOp|None, dict[int, list[UOp]]]]] = {}
    for u in self.uops:
      if u.op not in (Ops.LOAD, Ops.STORE) or u.src[0].op is not Ops.INDEX: continue
      buf, i = u.src[0].src
      group, lane = self.group_of.get(buf, (buf, None))
      x, c = _offset(i) if buf.op is Ops.PARAM else (i, 0)
      accesses.setdefault(group, {}).setdefault(lane, {}).setdefault(x, {}).setdefault(c, []).append(u)
    bad: set[tuple[UOp, ...]] = set()
    def check(a:UOp, b:UOp):
      if a.op is not Ops.STORE and b.op is not Ops.STORE: return
      if self.pos[a] > self.pos[b]: a, b = b, a
      pa, pb = self.pack_of.get(a), self.pack_of.get(b)
      if pa is None and pb is None or (pa is not None and pb is not None and pa[0] is pb[0]): return
      if (self.pack_of[a][0].pos if pa else self.pos[a]) < (self.pack_of[b][0].pos if pb else self.pos[b]): return
      bad.update(p[0].lanes for p in (pa, pb) if p is not None)
    for lanes in accesses.values():
      for bases in lanes.values():
        items = list(bases.items())
        for n, (xa, by_c) in enumerate(items):
          for same in by_c.values():
            for k, a in enumerate(same):
              for b in same[k+1:]: check(a, b)
          for xb, other in items[n+1:]:
            for ca, la in by_c.items():
              for cb, lb in other.items():
                if _may_overlap(xa, ca, xb, cb):
                  for a in la:
                    for b in lb: check(a, b)
    return bad

def _may_overlap(xa:UOp|None, ca:int, xb:UOp|None, cb:int) -> bool:
  """for indices xa + ca and xb + cb with different bases: only constants are known apart"""
  def const(x, c): return c if x is None else x.arg + c if x.op is Ops.CONST else None
  return (a := const(xa, ca)) is None or (b := const(xb, cb)) is None or a == b

def plan_lanes(uops:list[UOp], scope:dict[UOp, UOp|None], dtypes_ok:set[DType]) -> LanePlan:
  """packs that keep memory order and whose lanes no scalar code reads before them"""
  banned: set[tuple[UOp, ...]] = set()
  # packing follows a chain of ops from its store down, a few python frames per op: an exact float64 fmod is a chain of ~2.5k ops
  # (python-to-python calls take no C stack here)
  limit = sys.getrecursionlimit()
  sys.setrecursionlimit(max(limit, 4 * len(uops) + 1000))
  try:
    while True:
      plan = LanePlan(uops, scope, dtypes_ok, banned)
      plan.plan()
      if not (bad := plan.read_early() | plan.conflicts()): return plan
      banned |= bad
  finally: sys.setrecursionlimit(limit)

def vector_dtypes(emulated) -> set[DType]:
  return {dt for dt in (*dtypes.ints, dtypes.float32, dtypes.float64) if dt not in emulated}
