"""Schedule: decide which tensor-level nodes live in buffers, then cut the graph into kernels (one per realized node) and copies.
Everything between realized nodes is fused: elementwise chains, movement (as index math) and reductions whose result is not
broadcast back; a reduced value that is broadcast (softmax, layernorm) gets its own kernel instead of being recomputed per element."""
from __future__ import annotations
from dataclasses import dataclass, field
import functools, heapq, operator
from typing import Any, Callable
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite, ssimplify
from tinygrad.uop.threefry import OPS as THREEFRY_OPS
from tinygrad.helpers import prod, gc_paused
from tinygrad.dtype import dtypes
from tinygrad.device import Device
from tinygrad.schedule.indexing import build_kernel
from tinygrad.schedule.multi import push_multi
from tinygrad.schedule.split_reduce import split_large_reduces
from tinygrad.schedule.kernel_memo import KernelMemo
from tinygrad.schedule.pack import pack_operands, LAYOUT
from tinygrad.schedule.row_fusion import row_candidate, fused_rows, chain_outputs, inner_reduces
from tinygrad.schedule.byte_views import byte_range
from tinygrad.schedule.cat_pieces import cat_pieces, VIEW_ALIGN

@dataclass
class ExecItem:
  kind: str                      # "kernel" (ast is a SINK over PARAMs), "copy" (bufs = [dst, src]), "view" (bufs = [view, its buffer])
  ast: UOp|None
  bufs: list[UOp]                # BUFFER UOps in PARAM slot order
  var_vals: dict[str, int] = field(default_factory=dict)
  offset: int = 0                # a view's first byte in its buffer

def _numel(u:UOp) -> int|None:
  """elements of u; a symbolic size counts its Variables' maximum (what a buffer for it holds)"""
  if u._shape is None: return None
  return int(n.vmax) if isinstance(n := prod(u.shape), UOp) else n

def _is_plain_buffer(u:UOp) -> bool:
  """a node that already is a whole, contiguous buffer"""
  while u.op is Ops.AFTER: u = u.src[0]
  return u.op is Ops.BUFFER

def _is_assign(u:UOp) -> bool:
  """a tensor-level STORE(target view, value); a custom kernel's body (inside a CALL) stores through INDEX"""
  return u.op is Ops.STORE and u.src[0].op is not Ops.INDEX

def _written(u:UOp) -> bool:
  """an AFTER whose buffer a write in this graph fills (an assign or a custom kernel)"""
  return any(s.op is Ops.CALL or _is_assign(s) for s in u.src[1:])

def _assign_on_bytes(u:UOp) -> bool:
  """an assign into a device that runs no kernels: a copy of the value's bytes into the target's (_assign_copy)"""
  return _is_assign(u) and not Device.runs_kernels(u.src[0].device)

def _must_realize(sink:UOp, targets:list[UOp]) -> dict[UOp, None]:
  want: dict[UOp, None] = {}
  # the value moved to such a device for an assign is copied straight into the target: a buffer of its own there would be the file's
  # first bytes (every DISK buffer maps the file from its start)
  into_bytes = {u.src[1] for u in sink.toposort() if _assign_on_bytes(u)}
  for t in targets:
    # a reshape of a written buffer (an optimizer's write, reshaped back from the flat buffer it stores through) is that buffer: no copy
    if t.base.op is not Ops.BUFFER and not ((x := _under_reshapes(t)).op is Ops.AFTER and _written(x) and _is_plain_buffer(x)) and \
       _layout_under(t) is None: want[t] = None
  for u in sink.toposort():
    if u.op is Ops.CONTIGUOUS: want[u] = None
    if u.op is Ops.COPY and u not in into_bytes:
      want[u] = None
      if not _is_plain_buffer(u.src[0]) and _viewable_range(u.src[0], {}) is None: want[u.src[0]] = None
    if u.op is Ops.CALL:
      for a in u.src[1:]:
        if not _is_plain_buffer(a): want[a] = None
  return want

def _layout_under(t:UOp) -> UOp|None:
  """the contiguous() that t views through reshapes (its buffer is t in row-major order), or through reshapes, permutes and shrinks of a
  layout the scheduler chose (pack.LAYOUT: a direct conv's channels-last buffer; a strided conv_transpose's phases, interleaved by a
  permute and cropped by a shrink): t is realized as that view of its buffer, no copy. A user's own x.contiguous().permute() still gets a
  buffer of its own in its row-major order (upstream leaves a view): in-place writes and optimizer steps write whole buffers"""
  x, moved = t, False
  while x.op in (Ops.RESHAPE, Ops.PERMUTE, Ops.SHRINK):
    moved, x = moved or x.op is not Ops.RESHAPE, x.src[0]
  return x if x.op is Ops.CONTIGUOUS and x is not t and _static(t) and _static(x) and (not moved or x.tag == LAYOUT) else None

def _static(u:UOp) -> bool: return u._shape is not None and all(isinstance(s, int) for s in u.shape)
def _axes(u:UOp) -> int: return sum(1 for s in u.shape if s != 1)

def _realize_under_reshapes(want:dict[UOp, None], sink:UOp) -> dict[UOp, None]:
  """a node to realize that is a reshape splitting the axes of a computed node (a weight's gradient: the sum over the batch in the
  convolution's (Cout, Cin*KH*KW) form, reshaped to (Cout, Cin, KH, KW)): the node under it is realized instead, since a contiguous
  buffer reshapes for free, and its kernel loops over the merged axes: one stride-1 run of Cin*KH*KW, not runs of KW. Only a target:
  what a copy or a custom kernel reads has to be a buffer itself"""
  ret: dict[UOp, None] = {}
  targets = set(sink.src) - {s for u in sink.toposort() if u.op in (Ops.COPY, Ops.CALL) for s in u.src}
  for u in want:
    x = _under_reshapes(u)
    if u in targets and x is not u and x.op not in GroupOp.Movement and x.op not in (Ops.BUFFER, Ops.AFTER) and _static(x) and _static(u) and \
       _axes(x) < _axes(u): ret[x] = None
    else: ret[u] = None
  return ret

def _under_reshapes(u:UOp) -> UOp:
  while u.op is Ops.RESHAPE: u = u.src[0]
  return u

class ReduceReach:
  """reduces read where something bigger than their output is computed (broadcast back), and which kernel roots reach each reduce. Each
  root's kernel walks down to the stops (other roots end its walk where they are stops). The largest size on the way down only grows
  along a path, so one pass over all roots' walks at once, in topological order, takes each node's maximum over every path from every
  root (a walk per path went through a transformer's residual stream once per path: 25 s to schedule 8 layers; a walk per root, before
  the first reduces are realized, went through the backward graph once per weight), and carries the set of roots reaching it as bits.
  Kept across the rounds of create_schedule's loop: a round's new stops change only what lies below them, so an update goes down from
  them while a node's state changes (a pass over the graph per round made scheduling quadratic in depth: ~20 rounds for 8 GPT layers)"""
  def __init__(self): self._reset()
  def _reset(self):
    self.bit: dict[UOp, int] = {}
    self.order: list[UOp] = []  # the roots by bit
    self.pos: dict[UOp, int] = {}  # the nodes the walks enter or end at, users first
    self.reduces: list[UOp] = []
    self.users: dict[UOp, list[UOp]] = {}
    self.entered: set[UOp] = set()  # the nodes whose sources the walks reach
    self.into: dict[UOp, tuple] = {}  # what reaches a node from its users: (the largest size on the way down, the roots' bits)
    self.out: dict[UOp, tuple] = {}  # what a node passes to its sources
    self.stop: set[UOp] = set()
    self.numel: dict[UOp, int] = {}  # each node's elements (0 where unknown), looked up once

  def update(self, roots:dict[UOp, None], stop:dict[UOp, None]) -> tuple[dict[UOp, None], dict[UOp, set]]:
    if not roots: return {}, {}
    new_roots = [r for r in roots if r not in self.bit]
    if any(r not in self.entered for r in new_roots) or not self.stop <= stop.keys(): self._reset()  # not a later round of one graph
    for r in new_roots:
      self.bit[r] = 1 << len(self.order)
      self.order.append(r)
    if not self.pos: self._index(roots, stop)  # a first pass over everything: nothing left to update
    else: self._propagate([u for u in stop if u not in self.stop and u in self.pos] + new_roots, stop)
    self.stop |= stop.keys()
    bcast: dict[UOp, None] = {}
    reached: dict[UOp, set] = {}
    for u in self.reduces:
      if u in stop or (got := self.into.get(u)) is None: continue
      reached[u] = _roots_of(got[1], self.order)
      if (n := _numel(u)) is None or got[0] > n: bcast[u] = None
    return bcast, reached

  def _index(self, roots:dict[UOp, None], stop:dict[UOp, None]):
    sink = UOp.sink(*roots)
    nodes = list(reversed(sink.toposort(lambda u: u is sink or u in roots or (u not in stop and u.op is not Ops.BUFFER))))[1:]
    self.pos = {u: i for i, u in enumerate(nodes)}
    self.reduces = [u for u in nodes if u.op is Ops.REDUCE_AXIS]
    self.numel = {u: _numel(u) or 0 for u in nodes}
    self.users = {u: [] for u in nodes}
    self.entered = {u for u in nodes if u in roots or (u not in stop and u.op is not Ops.BUFFER)}
    for u in nodes:
      if u not in self.entered: continue
      for s in dict.fromkeys(u.src):
        if s._shape is not None: self.users[s].append(u)
    for u in nodes: self._update(u, stop)  # users first: each node's users are done before it

  def _propagate(self, start:list[UOp], stop:dict[UOp, None]):
    """recompute the nodes in start and, users first, every node below one whose output changed"""
    todo = [(self.pos[u], u) for u in start]
    heapq.heapify(todo)
    seen: set[UOp] = set()
    while todo:
      _, u = heapq.heappop(todo)
      if u in seen: continue
      seen.add(u)
      if self._update(u, stop):
        for s in u.src:
          if s in self.pos and s not in seen: heapq.heappush(todo, (self.pos[s], s))

  def _update(self, u:UOp, stop:dict[UOp, None]) -> bool:
    """what reaches u from its users and what it passes on, again; whether what it passes on changed"""
    out = self.out
    if len(got := [out[w] for w in self.users[u] if w in out]) == 1: self.into[u] = got[0]
    elif got: self.into[u] = self._merge(got)
    else: self.into.pop(u, None)
    if (new := self._passes(u, stop)) == out.get(u): return False
    if new is None: del out[u]
    else: out[u] = new
    return True

  def _merge(self, got:list[tuple]) -> tuple: return max(g[0] for g in got), functools.reduce(operator.or_, [g[1] for g in got])

  def _passes(self, u:UOp, stop:dict[UOp, None]) -> tuple|None:
    """(the largest size below u, the roots' bits) u passes to its sources; None where no walk enters u"""
    n = self.numel[u]
    if u in stop: here, into = (n, self.bit[u]) if u in self.bit else (0, 0)  # other roots' walks end here; its own starts with its size
    else:
      here, into = self.into[u][:2] if u in self.into and u.op is not Ops.BUFFER else (0, 0)
      if u in self.bit: here, into = max(here, n), into | self.bit[u]  # an assign's value: a root that other roots' walks go through
    if not into: return None
    return (n if u.op is Ops.REDUCE_AXIS else max(here, n)), into

def _roots_of(bits:int, order:list[UOp]) -> set[UOp]:
  """the roots whose bits are set: one step per set bit (most nodes are reached by one or two of a training graph's thousand roots)"""
  ret = set()
  while bits:
    low = bits & -bits
    ret.add(order[low.bit_length() - 1])
    bits ^= low
  return ret

class RegionMemo:
  """values computed over a node's region (its graph down to the stops), kept across the rounds of create_schedule's loop until a new
  stop falls inside the region: a round realizes a few more nodes and changes only what entered them (computing everything again each
  round made scheduling quadratic in depth: an 8-layer GPT's training graph takes ~20 rounds over ~600 roots)"""
  def __init__(self): self.kept, self.stops = {}, set()
  def advance(self, stop:dict[UOp, None]) -> list[tuple]:
    """forget what a new stop cuts; the keys forgotten"""
    if not (new := stop.keys() - self.stops): return []
    self.stops |= new
    cut = [k for k, v in self.kept.items() if not v[0].keys().isdisjoint(new)]  # a dict's keys against a set: walks the smaller
    for k in cut: del self.kept[k]
    return cut
  def get(self, key:tuple, compute:Callable[[], tuple[dict, Any]]) -> Any:
    """compute() gives the region (its walk's toposort: the node itself is in it, which as a stop changes nothing) and the value"""
    if (kept := self.kept.get(key)) is None: kept = self.kept[key] = compute()
    return kept[1]
  def region(self, key:tuple) -> dict: return self.kept[key][0]

def _region_gate(u:UOp, stop:dict[UOp, None]) -> Callable[[UOp], bool]:
  """a kernel computing u enters every node down to the realized ones"""
  return lambda w: w is u or (w not in stop and w.op is not Ops.BUFFER)

class LoopTrips(ReduceReach):
  """ReduceReach's pass, which also finds how often each root's kernel evaluates each elementwise node (`evals`: the trips of the loops
  around it, the root's elements times the steps of each reduce on the way), and for each elementwise node in the body of a sum of
  products the most elements of such a product (`body`: a matmul's operand, the product it is broadcast into). Each root's most trips
  over its paths only grows along a path, and so does the size of a sum of products above: the pass carries, per node, the roots' bits
  by their trips there and the largest product. A walk per root, again for each root a round's new stops cut, went down every later
  step of an unrolled recurrence, whose state each step's kernels read until the rounds realize it: an LSTM's gradient of 16 steps
  walked 430K nodes, 100 times its graph"""
  def __init__(self, memo:RegionMemo):
    super().__init__()
    self.memo = memo  # each row root's trips, for row_fusion.chain_outputs
    self.changed: set[UOp] = set()  # the nodes whose trips or product changed, or that became stops, until the reader takes them

  def update(self, roots:dict[UOp, None], stop:dict[UOp, None]) -> tuple[dict[UOp, None], dict[UOp, set]]:
    self.memo.advance(stop)
    into, new_stops = self.into, stop.keys() - self.stop
    ret = super().update(roots, stop)
    if self.into is not into: self.changed |= into.keys()  # a new graph: the old one's nodes are gone
    self.changed |= new_stops
    return ret

  def _update(self, u:UOp, stop:dict[UOp, None]) -> bool:
    old = self.into.get(u)
    ret = super()._update(u, stop)
    # _costly_recomputes judges a node again where what it reads changed: how many roots per trip count and the product, not which roots
    # (below a new stop, its bit takes over from its users')
    if u.op in GroupOp.ALU and _counted(self.into.get(u)) != _counted(old): self.changed.add(u)
    return ret

  def trips(self, u:UOp) -> dict[int, int]:
    """the roots whose kernels evaluate elementwise node u, as bits by their trips around it; {} where none does"""
    if u.op not in GroupOp.ALU or u in self.stop or (got := self.into.get(u)) is None: return {}
    return got[2]
  def inside(self, u:UOp) -> int:
    """the most elements of a sum of products whose body holds elementwise node u; 0 where none does"""
    return self.into[u][3] if self.trips(u) else 0

  @property
  def evals(self) -> dict[UOp, dict[UOp, int]]:
    """`trips` by root, for each elementwise node a kernel evaluates"""
    return {u: {r: t for t, bits in got.items() for r in _roots_of(bits, self.order)} for u in self.into if (got := self.trips(u))}
  @property
  def body(self) -> dict[UOp, int]: return {u: n for u in self.into if (n := self.inside(u))}

  def of(self, root:UOp, stop:dict[UOp, None]) -> dict[UOp, dict[UOp, int]]:
    """root's part of `evals`: its kernel's trips around each node"""
    def walk():
      region, b = root.toposort(_region_gate(root, stop)), self.bit[root]
      return region, {u: {root: t} for u in region for t, bits in self.trips(u).items() if bits & b}
    return self.memo.get(("trips", root), walk)

  # what reaches a node: ReduceReach's (the largest size on the way down, the roots' bits), then the roots' bits by their trips and the
  # largest sum of products above
  def _merge(self, got:list[tuple]) -> tuple:
    size, bits, trips, inside = 0, 0, {}, 0
    for g in got:
      size, bits, inside = max(size, g[0]), bits | g[1], max(inside, g[3])
      for t, b in g[2].items(): trips[t] = trips.get(t, 0) | b
    if len(trips) > 1:  # a root under several counts keeps its most: the larger counts take their roots first
      seen = 0
      for t in sorted(trips, reverse=True):
        if b := trips[t] & ~seen: trips[t], seen = b, seen | b
        else: del trips[t]
    return size, bits, trips, inside

  def _passes(self, u:UOp, stop:dict[UOp, None]) -> tuple|None:
    """ReduceReach's, then (the roots' bits by trips, the product above) u passes to its sources"""
    if (reach := super()._passes(u, stop)) is None: return None
    trips, inside = self.into[u][2:] if u in self.into and u not in stop and u.op is not Ops.BUFFER else ({}, 0)
    if u in self.bit: trips = {**trips, (n := self.numel[u]): trips.get(n, 0) | self.bit[u]}  # its own kernel's walk starts here
    if u.op is Ops.REDUCE_AXIS:
      # a sum of products is a matmul's (or a conv's) reduce: its operands are read once per tile of the other output axis
      inside = (_numel(u.src[0]) or 0) if u.arg[0] is Ops.ADD and u.src[0].op is Ops.MUL else 0
      if n := self.numel[u]:
        steps, through, trips = _numel(u.src[0]) or n, trips, {}
        for t, bits in through.items(): trips[t * steps // n] = trips.get(t * steps // n, 0) | bits
    elif u.op is Ops.PAD and (n := self.numel[u]) and (m := _numel(u.src[0])) and m < n:
      # the source is evaluated inside its own elements alone (the pad's gate): each piece of a cat once per element of it, not once per
      # element of the cat (the 4 gate gradients of an LSTM cell, joined into its (16, 1024) gradient, looked read 4 times: 37 kernels)
      through, trips = trips, {}
      for t, bits in through.items():
        piece = -(-t * m // n)
        trips[piece] = trips.get(piece, 0) | bits
    return *reach, trips, inside

def _counted(got:tuple|None) -> tuple|None:
  """what reaches a node, as the costs read it: how many roots per trip count, and the product above"""
  return None if got is None else ({t: bits.bit_count() for t, bits in got[2].items()}, got[3])

# a matmul's operand broadcast into a product this many times its size is recomputed by its kernel, however many kernels read it: a
# register tile of up to 32 columns (two panels of 16) evaluates its operand once for all of them, so a product as narrow as that
# recomputes nothing
OPERAND_REUSE = 64
OPERAND_OPS = 4  # fewer (a one-hot gather's compare, a ReLU) cost less than the pass a buffer takes; codegen reads a gather directly
STORE_COST = 2  # a written element costs about two reads (the cache line is read before it is written)
# ALU ops per element that a kernel streaming its inputs hides behind the loads; a node of more that several kernels read is computed once
# into a buffer even where each reads it once per element: each reader would carry, and compile, the whole chain again
CHAIN_OPS = 32

class FusedCosts:
  """what evaluating one element of a node inside a kernel (its fused subgraph, down to realized nodes) costs: whether it reads several
  inputs, its ALU ops, and whether it is no matmul operand: a node over a reduce is a row chain's (softmax's exp(x - max), a variance's
  mean), which row_fusion decides; one that reads no float data is index math (a one-hot gather's mask over its ids), which codegen turns
  into an address, and as a buffer it is a real matmul. Each node's costs come from its sources' (a walk per node down its whole subgraph
  was quadratic in depth: an unrolled LSTM's gradient asks for every node of its chains, T=32 walked 10M nodes, 57 s). Kept across the
  rounds of create_schedule's loop: a new stop changes the costs of the nodes above it, up to the stops, and only those are forgotten"""
  def __init__(self, sink:UOp):
    # every node's users, for the walks up from a node
    self.users: dict[UOp, list[UOp]] = {}
    for u in sink.toposort():
      for s in dict.fromkeys(u.src): self.users.setdefault(s, []).append(u)
    self.stops: set[UOp] = set()  # the realized nodes, as of the last advance
    # up to two of its inputs, ops, over a reduce, reads floats, and the distinct nodes its code holds (None: CHAIN_OPS or more)
    self.got: dict[UOp, tuple[tuple[UOp, ...], int, bool, bool, frozenset|None]] = {}

  def advance(self, stop:dict[UOp, None]) -> list[UOp]:
    """a new round: forget the costs that its new stops change; the nodes forgotten"""
    if not (new := stop.keys() - self.stops): return []
    self.stops |= new
    todo, forgotten = list(new), []
    while todo:
      for w in self.users.get(todo.pop(), ()):
        # a stop's users read its buffer, not what is below it; a user already forgotten had its users forgotten with it
        if self.got.pop(w, None) is not None:
          forgotten.append(w)
          if w not in self.stops: todo.append(w)
    return forgotten

  def get(self, u:UOp) -> tuple[bool, int, bool]:
    got, leaf = self.got, lambda w: w is not u and (w in self.stops or w.op is Ops.BUFFER)
    if u not in got:
      for v in u.toposort(lambda w: w is u or not (leaf(w) or w in got)):
        if v in got or leaf(v): continue
        ins, ops, over_reduce, floats, code = (), 0, v.op is Ops.REDUCE_AXIS, False, frozenset()
        for s in v.src:  # a source read twice (x * x) counts twice in ops: the most the kernel evaluates it
          s_ins, s_ops, s_reduce, s_floats, s_code = ((s,), 1, False, dtypes.is_float(s.dtype), frozenset((s,))) if leaf(s) else got[s]
          ins, ops, over_reduce, floats = tuple(dict.fromkeys(ins + s_ins))[:2], ops + s_ops, over_reduce or s_reduce, floats or s_floats
          code = None if code is None or s_code is None else code | s_code
        if v.op in GroupOp.ALU: ops += THREEFRY_OPS if v.op is Ops.THREEFRY else 1
        elif v.op is Ops.REDUCE_AXIS: ops *= (_numel(v.src[0]) or 1) // max(_numel(v) or 1, 1)
        got[v] = (ins, ops, over_reduce, floats, _code_of(v, code))
    ins, ops, over_reduce, floats, _ = got[u]
    return len(ins) > 1, ops, over_reduce or not floats

  def chain_ops(self, u:UOp) -> int:
    """the ops and loads one element of u takes in a kernel's code, each distinct node once (ops counts a node once per path to it: a
    sigmoid's t and s, read twice each, and every gradient over them, doubled at each level), CHAIN_OPS at most"""
    self.get(u)
    return CHAIN_OPS if (code := self.got[u][4]) is None else len(code)

  def nested(self, nodes:dict[UOp, None]) -> set[UOp]:
    """the nodes inside another one's fused subgraph: a walk up from each through its users, to the stops (a round's nodes lie just
    below what earlier rounds realized, and a walk down from them went through the rest of a deep chain every round)"""
    ret: set[UOp] = set()
    for u in nodes:
      todo, seen = [u], set()
      while todo and u not in ret:
        for w in self.users.get(todo.pop(), ()):
          if w in seen: continue
          seen.add(w)
          if w in nodes:
            ret.add(u)
            break
          if w not in self.stops and w.op is not Ops.BUFFER: todo.append(w)
    return ret

def _code_of(v:UOp, code:frozenset|None) -> frozenset|None:
  """the distinct nodes of v's code from its sources': v itself where it is an op. Through a movement op the nodes below are other
  elements (a window's shifted reads of one node are evaluated apart), and a reduce's body runs per trip: CHAIN_OPS or more"""
  if code is None or v.op in (Ops.REDUCE_AXIS, Ops.THREEFRY): return None  # THREEFRY: its rounds are over CHAIN_OPS ops alone
  if v.op in GroupOp.Movement: code = frozenset((v, c) for c in code)
  elif v.op in GroupOp.ALU: code = code | {v}
  return code if len(code) < CHAIN_OPS else None

def _costly_recomputes(trips:LoopTrips, stop:dict[UOp, None], costs:FusedCosts, kept:set[UOp]) -> dict[UOp, None]:
  """elementwise nodes that several kernels read, some of them broadcast (evaluated more than once per element, like the ReLU mask
  of a convolution's gradient read by the weight- and the input-gradient kernels once per weight tap), where recomputing in every
  kernel costs more loads and ops than computing them once into a buffer that each kernel loads. A node every kernel reads once per
  element stays fused: both ways stream the same inputs, and recomputing only adds ALU work next to the memory traffic. So does a node
  of one input: it costs the one load its buffer would, and its ALU ops are invariant along the axes it is broadcast over (hoisted).
  Not a node of CHAIN_OPS ops or more, read once per element or not: a top-k loop's steps each mask the previous step's vector, read by
  the max and the index pass of every later step, so fused, each of its 2k kernels is a longer chain of its own (k=40: 80 different
  kernels, 178 s to compile; upstream realizes each step's vector, its kernels the same AST each step).
  One kernel counts too (one input too) where the node is a matmul's operand, broadcast into a product OPERAND_REUSE times its size
  (`body`), of at least OPERAND_OPS ops: computed in the matmul's kernel (a layernorm's (x - mean) * rstd * w + b before a Linear), it
  is recomputed for every tile of output columns, and the register tile loads a computed value, not a packed panel (a small GPT's qkv
  projection: 21 ms against 3.6 for the same matmul on a buffer; its MLP's second matmul over the GELU: 41 against 4.8).
  `kept` holds the last round's candidates: only a node whose trips or costs changed is judged again (judging every node each round
  was quadratic in depth: an unrolled LSTM's gradient takes ~2.5 rounds per step)"""
  for u in trips.changed | set(costs.advance(stop)):
    if _costly(u, trips, costs): kept.add(u)
    else: kept.discard(u)
  trips.changed = set()
  # the outermost of nested candidates: once it is a buffer, the ones inside it are read by its kernel alone
  inner = costs.nested(kept)
  return {u: None for u in kept if u not in inner}

def _costly(u:UOp, trips:LoopTrips, costs:FusedCosts) -> bool:
  """whether elementwise node u costs more recomputed than as a buffer (_costly_recomputes)"""
  if not (per_trips := trips.trips(u)) or (n := _numel(u)) is None: return False
  readers = sum(bits.bit_count() for bits in per_trips.values())
  if max(per_trips) <= n: return readers > 1 and costs.chain_ops(u) >= CHAIN_OPS
  operand = trips.inside(u) >= n * OPERAND_REUSE
  if readers == 1 and not operand: return False
  several, ops, not_an_operand = costs.get(u)
  reads = sum(t * bits.bit_count() for t, bits in per_trips.items())
  # a matmul's operand is recomputed even with one input: its reduce loop runs inside the loop it is broadcast along (a GELU before a
  # Linear, read by the forward's matmul alone, or also by the backward's GELU')
  operand = operand and ops >= OPERAND_OPS and not not_an_operand
  return (operand or (readers > 1 and several)) and reads * ops > n * (ops + STORE_COST) + reads

def _sibling_products(reached:dict[UOp, set], stop:dict[UOp, None]) -> dict[UOp, None]:
  """a sum of products (a matmul's or a conv's reduce, its product OPERAND_REUSE times its size) that shares its kernel with other
  reduces beside it, neither inside the other, and those others: each gets a kernel of its own (a tied embedding's gradient, the
  logits' matmul plus the lookup's one-hot sum over the same tokens: in one loop nest the register tile is laid out for neither and
  every step of the matmul also evaluates the other's compare and select, GPT's 8192x512 weight over 512 tokens 61 ms; the matmul alone
  takes 20 and the one-hot sum, a kernel of its own, is a scatter, codegen/onehot_scatter.py: 1.2)"""
  roots: dict[UOp, list[UOp]] = {}
  for r, rs in reached.items():
    for root in rs: roots.setdefault(root, []).append(r)
  ret: dict[UOp, None] = {}
  for rs in roots.values():
    # each reduce's region, walked only where a root reaches a sum of products and another reduce
    if len(rs) < 2 or not (products := [r for r in rs if _sum_of_products(r)]): continue
    inside = {r: set(r.toposort(_region_gate(r, stop))) for r in rs}
    for r in products:
      if siblings := [s for s in rs if s is not r and s not in inside[r] and r not in inside[s]]: ret |= dict.fromkeys([r] + siblings)
  return ret

def _sum_of_products(r:UOp) -> bool:
  """a matmul's or a conv's reduce: a sum of products OPERAND_REUSE times its size"""
  return r.arg[0] is Ops.ADD and r.src[0].op is Ops.MUL and (n := _numel(r)) is not None and (_numel(r.src[0]) or 0) >= n * OPERAND_REUSE

# a bound Variable becomes its DEFINE_VAR and its value goes to the schedule: a kernel over a Variable is the same AST for every value.
# A CUSTOM_GRADIENT is its value (Tensor.realize takes them out first; this is for a graph scheduled directly)
pm_unbind = PatternMatcher([(UPat(Ops.BIND, name="b"), lambda ctx, b: _unbind(ctx, b)),
                            (UPat(Ops.CUSTOM_GRADIENT, name="c"), lambda ctx, c: c.src[0])])
@dataclass
class _Binds:
  """what pm_unbind found: each Variable's value and the Variables (DEFINE_VARs) of each name"""
  vals: dict[str, int] = field(default_factory=dict)
  vars: dict[str, dict[UOp, None]] = field(default_factory=dict)

def _unbind(ctx:_Binds, b:UOp) -> UOp:
  var, val = b.unbind()
  if ctx.vals.setdefault(var.arg.name, val) != val:
    raise ValueError(f"Variable {var.arg.name} is bound to both {ctx.vals[var.arg.name]} and {val} in one realize")
  ctx.vars.setdefault(var.arg.name, {})[var] = None
  return var

def _one_var_per_name(sink:UOp, binds:_Binds) -> UOp:
  """Variables of one name and value but different ranges (Variable("i", 1, 10) and Variable("i", 1, 5)) become one Variable over the
  ranges' overlap, where the value lies: a kernel takes a Variable by name, once"""
  merged: dict[UOp, UOp] = {}
  for name, vs in binds.vars.items():
    if len(vs) < 2: continue
    if len(dts := {v.dtype for v in vs}) > 1: raise ValueError(f"Variable {name} has several dtypes in one realize: {sorted(map(str, dts))}")
    one = UOp.variable(name, max(v.arg.vmin for v in vs), min(v.arg.vmax for v in vs), dts.pop())
    merged |= {v: one for v in vs}
  return sink.substitute(merged) if merged else sink

@gc_paused()
def create_schedule(targets:list[UOp]) -> tuple[list[ExecItem], dict[UOp, UOp]]:
  """the work that realizes `targets`, in order, and the buffer-based UOp that replaces each target and each other node it materialises"""
  binds = _Binds()
  sink = _one_var_per_name(graph_rewrite(UOp.sink(*targets), pm_unbind, ctx=binds, name="tensor"), binds)
  sink, var_vals = split_large_reduces(pack_operands(push_multi(sink))), binds.vals
  # a multi-device target is realized piece by piece: one single-device target per device
  pushed = list(sink.src)
  sink = UOp.sink(*[p for t in pushed for p in (t.src if t.op is Ops.MULTI else (t,))])
  want = _realize_under_reshapes(_must_realize(sink, list(sink.src)), sink)
  stored = {u.src[1]: None for u in sink.toposort() if _is_assign(u)}  # an assign's value is computed by its own kernel
  # reduces: realize the ones shared by several kernels and the ones broadcast back (recomputing them would be O(n^2)), except a chain of
  # row reductions its one reader keeps in its kernel (row_fusion.py), decided once the rest is settled; then elementwise nodes that
  # several kernels would recompute at a higher cost than a buffer's
  trips, costs, costly = LoopTrips(RegionMemo()), FusedCosts(sink), set()
  while True:
    bcast, reached = trips.update(want | stored, want)
    # not in an assign's kernel: another write of the same schedule may overwrite what the reduce reads (a -= b.sum(); b -= a.sum())
    rows = {r: root for r in bcast if len(reached[r]) == 1 and (root := next(iter(reached[r]))) not in stored and row_candidate(r)}
    extra = {r: None for r in bcast if r not in rows} | {r: None for r, roots in reached.items() if len(roots) > 1}
    if not (extra.keys() - want.keys()):
      extra = {}
      for root in set(rows.values()):
        mine = [r for r in rows if rows[r] is root]
        # a reader that evaluates the chain's result several times per element (a matmul after softmax or layernorm) gets that result as
        # a kernel of its own (row_fusion.chain_outputs): kept in its kernel, the chain leaves it without a register tile (layernorm
        # 2048x512 @ 512x2048, one thread: 780 ms, 26 ms apart). A chain that does not fuse: the reductions under it get kernels first,
        # only then a kernel per row reduce
        if not (outs := chain_outputs(root, mine, trips.of(root, want), want)) and fused_rows(root, mine, want): continue
        extra |= outs or inner_reduces(mine, want) or dict.fromkeys(mine)
    if not (extra.keys() - want.keys()): extra = _sibling_products(reached, want)
    if not (extra.keys() - want.keys()): extra = _costly_recomputes(trips, want, costs, costly)
    if not (extra.keys() - want.keys()): break
    want |= extra
  items: list[ExecItem] = []
  realized: dict[UOp, UOp] = {}
  memo = KernelMemo()
  for u in _writes_last(sink):
    if u.op is Ops.BUFFER: realized[u] = u; continue
    if u.op is Ops.AFTER and _written(u):
      realized[u] = realized.get(u.src[0], u.src[0])  # read after the write: the written buffer (or view of it)
      continue
    if u.op is Ops.CALL: items.append(_custom_call(u, realized)); continue
    if _assign_on_bytes(u): items.append(_assign_copy(u, realized, items, var_vals)); continue
    if _is_assign(u): items.extend(_assign_kernel(u, realized, var_vals)); continue
    if u not in want: continue
    if u.base.op is Ops.BUFFER and u.op not in GroupOp.Movement: realized[u] = u.base; continue
    if u.op is Ops.COPY:
      out = UOp.new_buffer(u.device, _numel(u) or 1, u.dtype)
      items.append(ExecItem("copy", None, [out, _copy_source(u.src[0], realized, items, var_vals)]))
    elif not Device.runs_kernels(u.device):
      if (r := byte_range(u, realized)) is None: raise _no_kernels(u)
      out = _view(u, *r, items)
    elif (pieces := cat_pieces(u)) is not None and all(Device[u.device].allocator.views_at(at * u.dtype.itemsize) for _, at in pieces):
      out = _computed_by_pieces(u, pieces, realized, items, var_vals)
    else: out = _computed(u, realized, items, var_vals, memo)
    realized[u] = out
  # every materialised node of the caller's graph (not only the targets) becomes its buffer: live handles on it never redo the work
  # (a node over a Variable is found in the caller's graph by binding it again: pm_unbind turned the caller's BINDs into Variables).
  # Not a view of a buffer copied for a copy's source: it stays a view, and sees later writes into that buffer (a sharded tensor's piece)
  bound = UOp.sink(*targets).toposort()
  callers = {u: _rebind(u, var_vals) if var_vals else u for u in realized if u.base.op is not Ops.BUFFER}
  becomes = {b: _result(b, u, realized) for u, b in callers.items() if b in bound}
  return items, becomes | {t: _rebind(UOp.multi([_result(p, p, realized) for p in u.src], u.arg), var_vals) if u.op is Ops.MULTI
                           else _result(t, u, realized) for t, u in zip(targets, pushed)}

def _rebind(u:UOp, var_vals:dict[str, int]) -> UOp:
  """u (built after the unbind) with its Variables bound again to this realize's values, as the caller's graph had them"""
  vs = {v: v.bind(var_vals[v.arg.name]) for v in u.toposort() if v.op is Ops.DEFINE_VAR and v.arg.name in var_vals}
  return u.substitute(vs) if vs else u

def _writes_last(sink:UOp) -> list[UOp]:
  """the graph in an order where each in-place write (a tensor-level STORE) comes as late as it can: after every kernel that does not
  depend on it, so those read the buffer's old values; what reads the written buffer (through its AFTER) depends on it and follows"""
  nodes = sink.toposort()
  users: dict[UOp, list[UOp]] = {u: [] for u in nodes}
  waiting = {u: len(set(u.src)) for u in nodes}
  for u in nodes:
    for s in set(u.src): users[s].append(u)
  ready, writes, order = [u for u in nodes if not waiting[u]], [], []
  while ready or writes:
    u = ready.pop() if ready else writes.pop(0)
    order.append(u)
    for v in users[u]:
      waiting[v] -= 1
      if not waiting[v]: (writes if _is_assign(v) else ready).append(v)
  return order

def _kernel_item(ast:UOp, bufs:list[UOp], var_vals:dict[str, int]) -> ExecItem:
  ast = _to_params(ast, bufs)
  if unbound := [v.arg.name for v in ast.variables() if v.arg.name not in var_vals]:
    raise RuntimeError(f"unbound Variable {unbound[0]!r} used by a kernel: bind it to a value (Variable(...).bind(n)) before realizing")
  return ExecItem("kernel", ast, bufs, {v.arg.name: var_vals[v.arg.name] for v in ast.variables()})

def _assign_kernel(store:UOp, realized:dict[UOp, UOp], var_vals:dict[str, int]) -> list[ExecItem]:
  """STORE(target, value) at tensor level: a kernel that writes value into the buffer the target views. A target that is one aligned run
  of its buffer (out[i] of a stack filled in a loop) is written as a view of its own, so the kernel holds no offset and the assigns into
  each run share one program, unless the value reads that buffer: the view and the buffer would be two noalias arguments of one kernel"""
  target, value = store.src[0], store.src[1]
  if (r := byte_range(target, realized)) is not None and r[1] % VIEW_ALIGN == 0 and Device[r[0].arg.device].allocator.views_at(r[1]) and \
     (r[1] or _numel(target) != r[0].arg.shape[0] or target.dtype is not r[0].dtype):  # a whole buffer is written as it is
    view_item, kernel, reads = _into_view(value, r[0], r[1], target.dtype, _numel(target) or 1, realized, var_vals)
    if r[0] not in reads: return [view_item, kernel]
  ast, kctx = build_kernel(value, target, realized, assign=True)
  return [_kernel_item(ast, [target.base] + [b for b in kctx.inputs if b is not target.base], var_vals)]

def _whole_buffer(u:UOp, realized:dict[UOp, UOp]) -> UOp|None:
  """the buffer u is all of, in order, or None: a reshape of a whole buffer is its memory in order (a written device piece of a sharded
  tensor, read by a copy)"""
  u = realized.get(u, u)
  while u.op in (Ops.AFTER, Ops.RESHAPE): u = u.src[0]
  return u if u.op is Ops.BUFFER else None

def _as_buffer(u:UOp, realized:dict[UOp, UOp]) -> UOp:
  if (b := _whole_buffer(u, realized)) is not None: return b
  raise RuntimeError(f"internal error: {u.op} of shape {u._shape} was not realized")

def _computed(u:UOp, realized:dict[UOp, UOp], items:list[ExecItem], var_vals:dict[str, int], memo:KernelMemo|None=None) -> UOp:
  """a new buffer, with the kernel that computes u into it added to items; memo: the kernels built so far in this schedule, by region"""
  out = UOp.new_buffer(u.device, _numel(u) or 1, u.dtype)
  if memo is not None:
    key, bufs = memo.region(u, realized)
    if (hit := memo.built.get(key)) is not None:
      ast, slots, names = hit
      items.append(ExecItem("kernel", ast, [out] + [bufs[i] for i in slots], {k: var_vals[k] for k in names}))
      return out
  ast, kctx = build_kernel(u, out, realized)
  items.append(item := _kernel_item(ast, [out] + (reads := [b for b in kctx.inputs if b is not out]), var_vals))
  if memo is not None:
    number = {b: i for i, b in enumerate(bufs)}
    if all(b in number for b in reads): memo.built[key] = (item.ast, [number[b] for b in reads], tuple(item.var_vals))
  return out

def _computed_by_pieces(u:UOp, pieces:list[tuple[UOp, int]], realized:dict[UOp, UOp], items:list[ExecItem], var_vals:dict[str, int]) -> UOp:
  """a new buffer for the cat u, with a kernel per piece that computes it into a view of the buffer (schedule/cat_pieces.py)"""
  out = UOp.new_buffer(u.device, _numel(u), u.dtype)
  for piece, start in pieces: items.extend(_into_view(piece, out, start * u.dtype.itemsize, u.dtype, prod(piece.shape), realized, var_vals)[:2])
  return out

def _into_view(value:UOp, buf:UOp, offset:int, dtype, numel:int, realized:dict[UOp, UOp], var_vals:dict[str, int]) -> tuple:
  """(the view item of `numel` elements of buf from byte `offset`, the kernel computing value into that view, the buffers it reads).
  value is computed as an assign's: one realized on its own is read from its buffer"""
  view = UOp.new_buffer(buf.arg.device, numel, dtype)
  ast, kctx = build_kernel(value, view, realized, assign=True)
  reads = [b for b in kctx.inputs if b is not view]
  return ExecItem("view", None, [view, buf], offset=offset), _kernel_item(ast, [view] + reads, var_vals), reads

def _copy_source(u:UOp, realized:dict[UOp, UOp], items:list[ExecItem], var_vals:dict[str, int]) -> UOp:
  """a copy's source as a buffer: a run of one's bytes is a view of it; any other view of part of one (the window of a 1-D sharded
  setitem over a device's whole piece, x[0] of 2 on 2 devices) is gathered into a buffer of its own by a kernel first"""
  if (b := _whole_buffer(u, realized)) is not None: return b
  if (r := _viewable_range(u, realized)) is not None: return _view(u, *r, items)
  if not Device.runs_kernels(u.device): raise _no_kernels(u)
  return _computed(u, realized, items, var_vals)

def _viewable_range(u:UOp, realized:dict[UOp, UOp]) -> tuple[UOp, int]|None:
  """byte_range, where the buffer's device can view its memory from that byte (an OpenCL sub-buffer starts at an aligned address)"""
  if (r := byte_range(u, realized)) is not None and Device[r[0].arg.device].allocator.views_at(r[1]): return r
  return None

def _no_kernels(u:UOp) -> RuntimeError:
  return RuntimeError(f"{u.device} runs no kernels, and {u.op} of shape {u.shape} is no run of a buffer's bytes: move the tensor to a "
                      f"device that computes first, e.g. .to('CPU')")

def _view(u:UOp, buf:UOp, offset:int, items:list[ExecItem]) -> UOp:
  """u's elements, which lie in buf from byte `offset` on, as a buffer: buf itself where they are all of it"""
  if offset == 0 and u.dtype is buf.dtype and _numel(u) == buf.arg.shape[0]: return buf
  view = UOp.new_buffer(buf.arg.device, _numel(u) or 1, u.dtype)
  items.append(ExecItem("view", None, [view, buf], offset=offset))
  return view

def _assign_copy(store:UOp, realized:dict[UOp, UOp], items:list[ExecItem], var_vals:dict[str, int]) -> ExecItem:
  """an assign into a device that runs no kernels: the value's bytes copied into the target's, which must be one run of its buffer"""
  target, value = store.src[0], store.src[1]
  if (r := byte_range(target, realized)) is None:
    raise RuntimeError(f"{target.device} runs no kernels: an assign into it writes one run of its bytes (whole rows), not a {target.op} "
                       f"of shape {target.shape}")
  if value.op is Ops.COPY: source = _copy_source(value.src[0], realized, items, var_vals)
  elif (v := byte_range(value, realized)) is not None: source = _view(value, *v, items)
  else: raise RuntimeError(f"{value.device} runs no kernels: the value assigned is computed there ({value.op}); compute it elsewhere")
  return ExecItem("copy", None, [_view(target, *r, items), source])

def _custom_call(call:UOp, realized:dict[UOp, UOp]) -> ExecItem:
  bufs = [_as_buffer(a, realized) for a in call.src[1:]]
  ast = call.src[0]
  if ast.op is not Ops.SINK: raise RuntimeError(f"custom kernel must return a SINK UOp, got {ast.op}")
  return ExecItem("kernel", ast, bufs)

def _to_params(ast:UOp, bufs:list[UOp]) -> UOp:
  """buffers become numbered PARAMs so that equal kernels on different buffers are the same AST (and share a compile)"""
  return ast.substitute({b: UOp.param(i, b.dtype, b.arg.shape) for i, b in enumerate(bufs)})

def _result(t:UOp, unbound:UOp, realized:dict[UOp, UOp]) -> UOp:
  """t as a view of its buffer, in t's own (bound) shape"""
  if _numel(t) == 0: return t  # no elements (a copy of an empty shard): nothing to read, and its one-element buffer is no view of it
  if unbound.op is Ops.RESHAPE and unbound not in realized and (buf := realized.get(_under_reshapes(unbound))) is not None and \
     buf.op is Ops.BUFFER:
    return buf.reshape(t.shape)  # realized under its reshape (_realize_under_reshapes)
  if unbound not in realized and (x := _layout_under(unbound)) is not None and (buf := realized.get(x)) is not None and buf.op is Ops.BUFFER:
    return unbound.substitute({x: buf.reshape(x.shape)})
  if unbound not in realized: return t  # a view of a buffer stays a view
  buf = realized[unbound]
  if buf.op is not Ops.BUFFER: return t.src[0]  # read after a write (assign, custom kernel): the written buffer or view of it
  if isinstance(n := ssimplify(prod(t.shape)), UOp): buf = buf.shrink(((0, n),))
  return buf if tuple(t.shape) == tuple(buf.shape) else buf.reshape(t.shape)
