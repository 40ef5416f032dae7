"""Prefix reduces as one pass. A kernel that stores out[..., o] = REDUCE(op over r, where(r <= o, x(r), identity)) (mixin/scan.py's
triangle: cumsum, cumprod, cummax) does O(n) work per output, O(n^2) per row. Where the target runs loops in order (no work items), the
loop over o can carry the accumulator instead: acc = identity before it, acc = acc op x(o) in each trip, then store acc: O(n) per row,
and the same additions in the same order (r = 0..o), so the same bits. A suffix reduce (valid r >= o: cumsum's gradient) is the prefix
reduce of the axis run backwards (o -> n-1-o in the store's body, r -> n-1-r in the reduce's).

Before the opts, `mark_scans` reverses suffix reduces, puts o innermost among the loops (the accumulator is reset by the loops outside it;
the lanes of an upcast axis each carry their own), and tags the REDUCE; `axes` (opt/kernel.py) then offers neither o nor r to the opts,
so o stays one serial loop while the other axes are split, threaded and upcast as usual. `lower_reduces` (lowering.py) lowers a tagged
REDUCE with `lower_scan`, or, along an axis its memory walks with stride 1 and with an op that regroups, `lower_lane_scans` first: a
block of outputs a trip, the block's running value by doubling in vector registers, one carried op per block."""
from __future__ import annotations
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, graph_rewrite
from tinygrad.uop.symbolic import symbolic
from tinygrad.dtype import dtypes, AddrSpace
from tinygrad.helpers import ContextVar

SCAN = ContextVar("SCAN", 1)  # 0: never; 1: on devices without work items; 2: every device (tests run the emulator's programs)
TAG = "prefix scan"

def serial_scan(device) -> bool:
  """whether `device` runs prefix reduces as one pass, so mixin/scan.py should build the plain triangle for it"""
  if SCAN.value >= 2: return True
  if SCAN.value <= 0 or not isinstance(device, str): return False
  from tinygrad.device import Device
  return not getattr(Device[device].renderer, "has_local", False)

def _size(r:UOp) -> int|None: return r.src[0].arg if r.op is Ops.RANGE and r.src and r.src[0].op is Ops.CONST else None

def _uncast(u:UOp) -> UOp:
  """a range under int casts (they hold a range's values: its size is an int)"""
  while u.op is Ops.CAST and dtypes.is_int(u.dtype) and dtypes.is_int(u.src[0].dtype): u = u.src[0]
  return u

def _identity(op, dtype) -> object:
  if op is Ops.ADD: return 0
  if op is Ops.MUL: return 1
  return dtypes.min(dtype)  # MAX: -inf for floats

def match(red:UOp, outs) -> tuple[UOp, UOp, bool]|None:
  """(o, x, suffix) where red is REDUCE(op over r, where(r <= o, x, identity)) (suffix: r >= o) with o one of `outs`, of r's size, and x
  not depending on o"""
  if red.op is not Ops.REDUCE or len(red.src) != 2 or (n := _size(r := red.src[1])) is None: return None
  if (w := red.src[0]).op is not Ops.WHERE or (c := w.src[0]).op is not Ops.CMPLT: return None
  a, b = _uncast(c.src[0]), _uncast(c.src[1])
  # where(a < b, identity, x): x where b <= a. b = r: r <= o, a prefix; a = r: r >= o, a suffix
  if w.src[1].op is not Ops.CONST or w.src[1].arg != _identity(red.arg, red.dtype) or (a is r) == (b is r): return None
  o, x = (a if b is r else b), w.src[2]
  if o not in outs or o.op is not Ops.RANGE or _size(o) != n or o in x.toposort(): return None
  return o, x, a is r

def scans(ast:UOp) -> tuple[tuple[UOp, UOp], ...]:
  """(o, r) of every tagged prefix reduce: no opt may split them (kept on the AST node, a pure function of it, as opt/kernel.py's ranges)"""
  if (ret := ast.__dict__.get("_scans_c")) is None:
    ret = ast.__dict__["_scans_c"] = tuple(dict.fromkeys(
      (m[0], u.src[1]) for u in ast.toposort() if u.op is Ops.REDUCE and u.tag == TAG
      and (m := match(u, [q for q in u.src[0].src[0].toposort() if q.op is Ops.RANGE])) is not None))
  return ret

def _outside_reduces(x:UOp) -> list[UOp]: return list(x.toposort(lambda w: w is x or w.op is not Ops.REDUCE))

def _canonical(red:UOp, x:UOp, o:UOp, suffix:bool) -> UOp:
  """red as the tagged prefix reduce where(o < r, identity, x) over r, its body read from the end for a suffix reduce"""
  r, w = red.src[1], red.src[0]
  body = x.substitute({r: (r.src[0] - 1) - r}) if suffix else x
  return red.replace(src=(w.replace(src=(UOp(Ops.CMPLT, dtypes.bool, (o, r)), w.src[1], body)), r), tag=TAG)

def mark_scans(ast:UOp, renderer) -> UOp:
  """tag every prefix reduce stored along a loop axis of its END (see the module's comment); only for targets without work items"""
  if renderer is None or SCAN.value <= 0 or (getattr(renderer, "has_local", False) and SCAN.value < 2): return ast
  fresh = max([q.arg[0] for q in ast.toposort() if q.op is Ops.RANGE], default=-1) + 1
  for end in [e for e in ast.src if e.op is Ops.END]:
    loops = [q for q in end.ended_ranges if q.op is Ops.RANGE and q.arg[1] is AxisType.LOOP]
    per_axis: dict[UOp, list[tuple[UOp, UOp, bool]]] = {}
    for u in _outside_reduces(end.src[0]):
      if u.tag is None and (m := match(u, loops)) is not None: per_axis.setdefault(m[0], []).append((u, m[1], m[2]))
    body, sub, renamed = end.src[0], {}, {}
    # a prefix and a suffix reduce would need the axis run both ways; and only one loop can be innermost (an accumulator carried along
    # an outer loop would be reset by the inner one): the axis with the most reduces is scanned, the others stay plain reduces
    one_way = [(o, found) for o, found in per_axis.items() if len({suffix for _, _, suffix in found}) == 1]
    for o, found in sorted(one_way, key=lambda of: -len(of[1]))[:1]:
      # o becomes the innermost of the loops (the ones outside it reset the accumulator); a suffix reduce runs it backwards
      renamed[o], fresh = (new_o := o.replace(arg=(fresh, o.arg[1]))), fresh + 1
      body = body.substitute({u: _canonical(u, x, new_o, suffix) for u, x, suffix in found})
      sub[o] = (o.src[0] - 1) - new_o if found[0][2] else new_o
    if sub: ast = ast.substitute({end: body.substitute(sub).end(*[renamed.get(q, q) for q in end.ended_ranges])})
  return ast

def lower_scan(red:UOp, o:UOp, x:UOp, loops, slot:int) -> UOp:
  """the value of tagged prefix reduce `red` at o: an accumulator reset inside `loops` (the END's other ranges), updated in o's loop"""
  acc = UOp.placeholder((1,), red.dtype, slot, addrspace=AddrSpace.REG)
  init = acc.after(*loops)[0].store(red.const_like(_identity(red.arg, red.dtype)))
  cur = acc.after(init, o)
  return acc.after(cur[0].store(cur[0].load().alu(red.arg, x.substitute({red.src[1]: o}))))[0].load()


# *** lanes along the scanned axis: a block of outputs a trip, its running value by doubling ***
# outputs a trip of a lane scan, the most of these that divides the axis: the doubling's code grows as lanes * log2(lanes), and LLVM's
# compile time with it. cummax along 1024x1024 at one thread, the index's kernel and the first call (compiles included): one a trip
# 0.95 ms and 0.23 s, 16 lanes 0.7-0.9 ms, 32 lanes 0.47-0.51 ms and 0.33 s, 64 lanes 0.36 ms and 0.48 s
LANES = (32, 16, 8)

def _regroups(red:UOp) -> bool:
  """whether red's running value is the same in any grouping and its doubling packs well: an int MAX. Not a float sum or product (the
  order of its adds decides its bits), nor a float MAX in practice: its NaN-aware compare and select packed poorly (cummax's values
  along 1024x1024: 1.05-1.3 ms, by blocks 0.85-0.95)"""
  return red.arg is Ops.MAX and dtypes.is_int(red.dtype)

def _unit_stride(u:UOp, rng:UOp) -> bool:
  """every address u reads or writes that moves with rng moves by one element per step of rng"""
  for idx in [q for q in u.toposort() if q.op is Ops.INDEX and rng in q.src[1].toposort()]:
    step = graph_rewrite(idx.src[1].substitute({rng: rng + 1}) - idx.src[1], symbolic)
    if step.op is not Ops.CONST or step.arg != 1: return False
  return True

def _lane_scan(end:UOp) -> tuple[UOp, int, list[tuple[UOp, UOp]]]|None:
  """(o, lanes, [(reduce, x)]) where every tagged prefix reduce under END end scans the same loop o with an op that regroups, the
  stores and the reduces' loads walk o and r with stride 1, and o's size has a number of LANES as a factor whose copies of the kernel
  fit the heuristic's code budget"""
  from tinygrad.codegen.opt.heuristic import CODE_BUDGET  # here: the heuristic imports this module
  reds = [u for u in end.src[0].toposort() if u.op is Ops.REDUCE and u.tag == TAG]
  found = [(u, m) for u in reds if (m := match(u, list(end.ended_ranges))) is not None]
  if not found or len(found) != len(reds) or len({m[0] for _, m in found}) != 1 or not all(_regroups(u) for u in reds): return None
  o = found[0][1][0]
  if not _unit_stride(end.src[0], o) or not all(_unit_stride(m[1], u.src[1]) for u, m in found): return None
  nodes = len(end.toposort())
  if (lanes := next((k for k in LANES if _size(o) % k == 0 and k * nodes <= CODE_BUDGET), None)) is None: return None
  return o, lanes, [(u, m[1]) for u, m in found]

def lower_lane_scans(sink:UOp, slot) -> UOp:
  """a tagged prefix reduce along a loop that its store and loads walk with stride 1 (a scan along the last axis), with an op that
  regroups (an int MAX: cummax's index), runs a block of outputs a trip: the trip computes the block's elements side by side, takes
  their running value by doubling (step s combines each lane with the lane s before it, the earlier first: log2(lanes) steps of
  whole-block ops, which LLVM's SLP vectorizer packs into vector ops and shuffles), combines each lane with the accumulator carried
  from the trips before and carries the last lane on. One element a trip, the scalar loop ran ~11 instructions per element; now the
  chain takes one op per block and the block's work runs in vector registers (see LANES). `slot`: the accumulators' numbers"""
  for end in [u for u in sink.toposort() if u.op is Ops.END]:
    if (found := _lane_scan(end)) is None: continue
    o, lanes, reds = found
    trip, outer = o.replace(src=(o.src[0].const_like(_size(o) // lanes),)), [q for q in end.ended_ranges if q is not o]
    values: list[dict[UOp, UOp]] = [{} for _ in range(lanes)]
    carries = []
    for red, x in reds:
      vals, step = [x.substitute({red.src[1]: trip * lanes + j}) for j in range(lanes)], 1
      while step < lanes: vals, step = [v if j < step else vals[j - step].alu(red.arg, v) for j, v in enumerate(vals)], step * 2
      acc = UOp.placeholder((1,), red.dtype, next(slot), addrspace=AddrSpace.REG)
      carry = (cur := acc.after(acc.after(*outer)[0].store(red.const_like(_identity(red.arg, red.dtype))), trip))[0].load()
      for j, v in enumerate(vals): values[j][red] = carry.alu(red.arg, v)
      carries.append(cur[0].store(values[-1][red]))
    lanes_body = [end.src[0].substitute({**values[j], o: trip * lanes + j}) for j in range(lanes)]
    sink = sink.substitute({end: UOp(Ops.GROUP, dtypes.void, (*lanes_body, *carries)).end(*[trip if q is o else q for q in end.ended_ranges])})
  return sink
