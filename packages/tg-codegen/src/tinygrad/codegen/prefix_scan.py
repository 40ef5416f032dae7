"""Prefix reduces as one pass. A kernel that stores out[..., o] = REDUCE(op over r, where(r <= o, x(r), identity)) (mixin/scan.py's
triangle: cumsum, cumprod, cummax) does O(n) work per output, O(n^2) per row. Where the target runs loops in order (no work items), the
loop over o can carry the accumulator instead: acc = identity before it, acc = acc op x(o) in each trip, then store acc: O(n) per row,
and the same additions in the same order (r = 0..o), so the same bits. A suffix reduce (valid r >= o: cumsum's gradient) is the prefix
reduce of the axis run backwards (o -> n-1-o in the store's body, r -> n-1-r in the reduce's).

Before the opts, `mark_scans` reverses suffix reduces, puts o innermost among the loops (the accumulator is reset by the loops outside it;
the lanes of an upcast axis each carry their own), and tags the REDUCE; `axes` (opt/kernel.py) then offers neither o nor r to the opts,
so o stays one serial loop while the other axes are split, threaded and upcast as usual. `lower_reduces` (lowering.py) lowers a tagged
REDUCE with `lower_scan`."""
from __future__ import annotations
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp
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
    for o, found in per_axis.items():
      if len({suffix for _, _, suffix in found}) != 1: continue  # a prefix and a suffix reduce would need the axis run both ways
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
