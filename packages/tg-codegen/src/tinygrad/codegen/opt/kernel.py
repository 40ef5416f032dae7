"""Opts on a kernel AST: each one splits a RANGE in two and gives one part a new AxisType. UPCAST and UNROLL take the inner part (an output or
reduce axis becomes r_outer*amt + r_inner, unrolled later by codegen/expander.py); THREAD takes the outer part (r_thread*(N/amt) + r_inner,
each thread a contiguous block). On GPU-shaped targets GLOBAL makes a whole output axis a grid axis (work-item ids, see codegen/gpudims.py)
and LOCAL takes the inner part of a GLOBAL axis as the items of one work group. SWAP(a, b) exchanges the loop order of two output axes (amt
is the other axis): a matmul whose inner loop walks a column panel of B runs the row tiles innermost, so the panel stays in cache between
them. GROUP and GROUPTOP split a REDUCE axis across the items of a work group (GROUP_REDUCE: the inner part, neighbouring items reading
neighbouring elements; GROUPTOP the outer part, each item a contiguous block); each item reduces its share and codegen/grouping.py combines
the partials through LOCAL memory. PADTO rounds an axis up to a multiple of amt so an UPCAST, UNROLL or LOCAL can divide it: loads and
stores of the padded indices are gated off and a padded reduce adds its identity. OVERLAP rounds an output axis up the same way, its last
block shifted back to end at the axis's end (over the one before it, no gates: opt/overlap.py). Axes are numbered by `axes(ast)`: the
LOOP/GLOBAL axes then the REDUCE axes, in loop order; a split keeps the part that stays splittable at its axis number, so an opt list reads
against the kernel it is applied to in order."""
from __future__ import annotations
import functools
from typing import Callable
from dataclasses import dataclass
from enum import Enum, auto
from tinygrad.uop import Ops, AxisType
from tinygrad.dtype import AddrSpace
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite, KernelInfo
from tinygrad.uop.symbolic import symbolic
from tinygrad.codegen.opt.padding import pad_axis
from tinygrad.codegen.opt.overlap import overlap_axis, overlap_refusal
from tinygrad.codegen.prefix_scan import scans
from tinygrad.helpers import prod

class OptOps(Enum):
  UPCAST = auto(); UNROLL = auto(); THREAD = auto(); GLOBAL = auto(); LOCAL = auto(); SWAP = auto(); GROUP = auto(); GROUPTOP = auto() # noqa: E702
  PADTO = auto(); TC = auto(); OVERLAP = auto() # noqa: E702

@dataclass(frozen=True)
class Opt:
  op: OptOps
  axis: int
  amt: int
  def __repr__(self): return f"Opt({self.op.name}, {self.axis}, {self.amt})"

class OptError(ValueError):
  """an opt that does not fit the kernel (axis kind, divisibility, limits): the message says which and why"""

OUTPUT, REDUCE = (AxisType.LOOP, AxisType.GLOBAL), (AxisType.REDUCE,)
# loop order after every opt: threads outermost, unrolled lanes innermost (they become straight-line code)
_ORDER = {AxisType.THREAD: 0, AxisType.GLOBAL: 1, AxisType.LOOP: 1, AxisType.LOCAL: 2, AxisType.GROUP_REDUCE: 2, AxisType.WARP: 2, AxisType.REDUCE: 3,
          AxisType.UPCAST: 4,          AxisType.UNROLL: 5}
MAX_UPCAST, MAX_UNROLL, MAX_LANES = 16, 32, 384  # per axis, and all upcast x unroll lanes of a kernel (code size: AVX-512's 24-accumulator
                                                  # matmul tile, heuristic.wide_panel_tile)
# a work group: items (LOCAL x GROUP_REDUCE) and LOCAL memory for the partials, limits every renderer with work items meets (OpenCL's
# minimum local memory is 32 KiB; its local_max here is 256 per dim)
MAX_GROUP_ITEMS, MAX_SHARED_BYTES = 256, 32 << 10
_GROUPED = (AxisType.LOCAL, AxisType.GROUP_REDUCE, AxisType.WARP)

def ranges(ast:UOp) -> list[UOp]:
  # kept on the AST node (a pure function of it; no cycle: the SINK is not among them): the optimizer asks many times per kernel
  if (rs := ast.__dict__.get("_ranges_c")) is None:
    rs = ast.__dict__["_ranges_c"] = tuple(sorted((u for u in ast.toposort() if u.op is Ops.RANGE), key=lambda r: r.arg[0]))
  return list(rs)
def axes(ast:UOp) -> list[UOp]:
  """the splittable axes: output (LOOP/GLOBAL) then REDUCE ranges, each group in loop order. A prefix reduce's two ranges are none: its
  store's loop carries the accumulator in order (codegen/prefix_scan.py)"""
  if (rs := ast.__dict__.get("_axes_c")) is None:
    serial = {q for pair in scans(ast) for q in pair}
    rs = ast.__dict__["_axes_c"] = tuple(r for r in ranges(ast) if r not in serial)
  return [r for r in rs if r.arg[1] in OUTPUT] + [r for r in rs if r.arg[1] in REDUCE]
@functools.lru_cache(maxsize=1 << 14)
def simplified(u:UOp) -> UOp:
  """index math or a gate as lowering will render it: the AST keeps it as the views built it (a conv window's `(r*60)//1 % 59`), and
  the optimizer reads strides and gates from it many times per kernel"""
  return graph_rewrite(u, symbolic, name="simplify address")
def size(r:UOp) -> int|None: return r.src[0].arg if r.src and r.src[0].op is Ops.CONST else None  # None: symbolic or bound-less
def free_ranges(ast:UOp) -> dict[UOp, frozenset]:
  """for every node, the ranges its value depends on that no REDUCE or END under it has closed"""
  ret: dict[UOp, frozenset] = {}
  for u in ast.toposort():
    s = frozenset().union(*(ret[x] for x in u.src)) if u.src else frozenset()
    if u.op is Ops.RANGE: s = s | {u}
    elif u.op is Ops.REDUCE: s = s - set(u.src[1:])
    elif u.op is Ops.END: s = s - set(u.ended_ranges)
    ret[u] = s
  return ret

def lanes(ast:UOp, inside:UOp|None=None) -> int:
  """copies of the code the UPCAST and UNROLL axes make: the most that one loop body holds (of the bodies that loop over `inside`, when
  given). Reduces that run one after another (a row chain, schedule/row_fusion.py) are unrolled each apart: their lanes do not multiply"""
  free, n = free_ranges(ast), 1
  for u in ast.toposort():
    body = free[u.src[0]] | set(u.src[1:]) if u.op in (Ops.REDUCE, Ops.END) else set()
    if body and (inside is None or inside in body):
      n = max(n, prod(size(r) for r in body if r.op is Ops.RANGE and r.arg[1] in (AxisType.UPCAST, AxisType.UNROLL)))
  return n

def broadcast_reduce(ast:UOp, minor:Callable[[UOp], bool]|None=None) -> bool:
  """some REDUCE is read across an output axis it does not depend on, one nested inside every output axis it does: a row reduction kept
  in its reader's kernel (softmax's max and sum, schedule/row_fusion.py), its loop one of several that run one after another inside the
  loop over rows. A reduce that depends on an axis nested inside the one it is read across is no such loop: it runs in that axis's loop,
  redone on every trip of the outer one (zeros(16, 256) @ w: each column's sum, the same in every row; an LSTM's first step). minor:
  reduces it leaves out (ones small enough to be redone)"""
  free = free_ranges(ast)
  out = {r for e in ast.src if e.op is Ops.END for r in e.ended_ranges if r.arg[1] in OUTPUT}
  def runs_before_its_readers(u:UOp) -> bool:
    deepest = max([_nesting(r) for r in out & free[u]], default=None)
    return any(deepest is None or deepest < _nesting(b) for b in out - free[u])
  return any(u.op is Ops.REDUCE and runs_before_its_readers(u) and not (minor is not None and minor(u)) for u in ast.toposort())
def _nesting(r:UOp) -> tuple[int, int]: return (_ORDER[r.arg[1]], r.arg[0])  # loops nest in this order (_renumber)

def _split_use(ctx:dict[UOp, tuple[UOp, list[UOp]]], x:UOp) -> UOp|None:
  if not any(s in ctx for s in x.src[1:]): return None
  return x.replace(src=(x.src[0],) + tuple(n for s in x.src[1:] for n in (ctx[s][1] if s in ctx else [s])))

# applied node before sources (bottom_up), so END/REDUCE still see the range they list
pm_split = PatternMatcher([
  # END(body, r) / REDUCE(x, r) -> END(body, r_outer, r_inner): both parts are looped over
  (UPat((Ops.END, Ops.REDUCE), name="x"), _split_use),
  # r -> r_outer*amt + r_inner in index math
  (UPat(Ops.RANGE, name="r"), lambda ctx, r: ctx[r][0] if r in ctx else None),
])

def _renumber(ast:UOp) -> UOp:
  """ids in loop order (loops nest by id); a prefix reduce's loop stays the innermost of its kind: the loops outside it reset its
  accumulator, so a part split off another axis (a fresh id) must not nest inside it"""
  carried = {o for o, _ in scans(ast)}
  rs = sorted(ranges(ast), key=lambda r: (_ORDER[r.arg[1]], r in carried, r.arg[0]))
  return ast.substitute({r: r.replace(arg=(i, r.arg[1])) for i, r in enumerate(rs) if r.arg[0] != i})

def _check(ast:UOp, opt:Opt) -> UOp:
  ax = axes(ast)
  if not 0 <= opt.axis < len(ax): raise OptError(f"{opt}: the kernel has {len(ax)} splittable axes (sizes {[size(r) for r in ax]})")
  r = ax[opt.axis]
  if opt.op is OptOps.SWAP:
    if not (0 <= opt.amt < len(ax) and opt.amt != opt.axis and r.arg[1] in OUTPUT and ax[opt.amt].arg[1] in OUTPUT):
      raise OptError(f"{opt}: SWAP exchanges two different output axes, got axes {opt.axis} and {opt.amt} of {[x.arg[1].name for x in ax]}")
    return r
  if (n := size(r)) is None: raise OptError(f"{opt}: axis {opt.axis} has no constant size; opts split constant-size axes only")
  want = REDUCE if opt.op in (OptOps.UNROLL, OptOps.GROUP, OptOps.GROUPTOP) else OUTPUT + REDUCE if opt.op is OptOps.PADTO else OUTPUT
  if r.arg[1] not in want: raise OptError(f"{opt}: {opt.op.name} splits a {'/'.join(t.name for t in want)} axis, axis {opt.axis} is {r.arg[1].name}")
  if opt.op is OptOps.OVERLAP:
    if (why := overlap_refusal(ast, r, opt.amt)) is not None: raise OptError(f"{opt}: {why}")
    return r
  if opt.op is OptOps.PADTO:
    if opt.amt < 2 or n == 0 or n % opt.amt == 0:
      raise OptError(f"{opt}: PADTO rounds the axis size {n} up to a multiple of {opt.amt}: it must be at least 2 and not divide {n}")
    if (padded := -(-n // opt.amt) * opt.amt) > 2 * n:
      raise OptError(f"{opt}: padding axis {opt.axis} from {n} to {padded} more than doubles its work")
    return r
  if opt.amt < 2 or opt.amt > n or n % opt.amt: raise OptError(f"{opt}: amount {opt.amt} must be at least 2 and divide the axis size {n}")
  if opt.op is OptOps.UPCAST and (rows := _staged_rows(ast)) and r not in rows:
    raise OptError(f"{opt}: the kernel keeps a row in a scratch array (codegen/row_stage.py) that the lanes of axis {opt.axis} would share")
  limit = {OptOps.UPCAST: MAX_UPCAST, OptOps.UNROLL: MAX_UNROLL}.get(opt.op)
  if limit is not None and opt.amt > limit: raise OptError(f"{opt}: at most {limit} lanes per {opt.op.name} axis")
  if limit is not None and (n := lanes(ast, r) * opt.amt) > MAX_LANES: raise OptError(f"{opt}: {n} unrolled lanes, at most {MAX_LANES}")
  if opt.op is OptOps.THREAD and any(u.arg[1] is AxisType.THREAD for u in ranges(ast)):
    raise OptError(f"{opt}: the kernel already has a THREAD axis")
  if opt.op is OptOps.GLOBAL and (r.arg[1] is not AxisType.LOOP or opt.amt != n):
    raise OptError(f"{opt}: GLOBAL makes a whole LOOP axis a grid axis: amount {n} (the axis size), axis {opt.axis} is {r.arg[1].name}")
  if opt.op is OptOps.LOCAL and r.arg[1] is not AxisType.GLOBAL:
    raise OptError(f"{opt}: LOCAL splits a GLOBAL axis, axis {opt.axis} is {r.arg[1].name}")
  if opt.op in (OptOps.LOCAL, OptOps.GROUP, OptOps.GROUPTOP) and (items := group_items(ast) * opt.amt) > MAX_GROUP_ITEMS:
    raise OptError(f"{opt}: a work group of {items} items (LOCAL x GROUP axes), at most {MAX_GROUP_ITEMS}")
  # each thread / work item runs the kernel for its own index: a store outside the axis would run once per index
  encloses = all(r in e.src[1:] for e in ast.src if e.op is Ops.END) and all(e.op is Ops.END for e in ast.src)
  if opt.op in (OptOps.THREAD, OptOps.GLOBAL) and not encloses:
    raise OptError(f"{opt}: a {opt.op.name} axis must enclose every store of the kernel, axis {opt.axis} does not")
  return r

def _staged_rows(ast:UOp) -> set[UOp]:
  """the ranges that index the kernel's REG scratch arrays (a staged row); empty where it has none"""
  return {q for u in ast.toposort() if u.op is Ops.INDEX and u.src[0].op is Ops.BUFFER and u.src[0].arg.addrspace is AddrSpace.REG
          for q in u.src[1].toposort() if q.op is Ops.RANGE}

def group_items(ast:UOp) -> int:
  """items of one work group: the product of the LOCAL, GROUP_REDUCE and (tensor cores') WARP axes"""
  n = 1
  for r in ranges(ast):
    if r.arg[1] in _GROUPED: n *= size(r)
  return n

def shared_bytes(ast:UOp) -> int:
  """LOCAL memory the grouped reduces need: a partial per item of the work group and per upcast lane (codegen/grouping.py)"""
  up = 1
  for r in ranges(ast):
    if r.arg[1] is AxisType.UPCAST: up *= size(r)
  grouped = [u for u in ast.toposort() if u.op is Ops.REDUCE and any(s.arg[1] is AxisType.GROUP_REDUCE for s in u.src[1:])]
  return sum(u.dtype.itemsize for u in grouped) * group_items(ast) * up

_KIND = {OptOps.THREAD: AxisType.THREAD, OptOps.UPCAST: AxisType.UPCAST, OptOps.UNROLL: AxisType.UNROLL, OptOps.GLOBAL: AxisType.GLOBAL,
         OptOps.LOCAL: AxisType.LOCAL, OptOps.GROUP: AxisType.GROUP_REDUCE, OptOps.GROUPTOP: AxisType.GROUP_REDUCE}

def apply_opt(ast:UOp, opt:Opt, renderer=None) -> UOp:
  if opt.op is OptOps.TC: return _apply_tc(ast, opt, renderer)
  r = _check(ast, opt)
  if opt.op is OptOps.SWAP:  # loops nest by axis id: exchange the ids
    q = axes(ast)[opt.amt]
    return _renumber(ast.substitute({r: r.replace(arg=(q.arg[0], r.arg[1])), q: q.replace(arg=(r.arg[0], q.arg[1]))}))
  if opt.op is OptOps.PADTO: return pad_axis(ast, r, -(-size(r) // opt.amt) * opt.amt)
  if opt.op is OptOps.OVERLAP: return overlap_axis(ast, r, opt.amt)
  n, fresh = size(r), max(u.arg[0] for u in ranges(ast)) + 1
  part = UOp.range(opt.amt, fresh, _KIND[opt.op], r.dtype)
  if n == opt.amt: new = (part, [part])  # the whole axis: retyped, no loop of one trip
  elif opt.op in (OptOps.THREAD, OptOps.GROUPTOP):  # the outer part: each thread / item a contiguous block
    rest = r.replace(src=(r.src[0].const_like(n // opt.amt),))
    new = (part * (n // opt.amt) + rest, [part, rest])
  else:
    rest = r.replace(src=(r.src[0].const_like(n // opt.amt),))
    new = (rest * opt.amt + part, [rest, part])
  ret = _renumber(graph_rewrite(ast, pm_split, ctx={r: new}, bottom_up=True, name="opt split"))
  if (b := shared_bytes(ret)) > MAX_SHARED_BYTES:
    raise OptError(f"{opt}: the grouped reduces need {b} bytes of LOCAL memory, at most {MAX_SHARED_BYTES}")
  return ret

def _apply_tc(ast:UOp, opt:Opt, renderer) -> UOp:
  """TC(axis=which (m, n, k) choice, amt=which of the renderer's tensor cores): codegen/opt/tc.py"""
  from tinygrad.codegen.opt.tc import apply_tc
  tcs = getattr(renderer, "tensor_cores", ())
  if tcs and not renderer.has_local: raise OptError(f"{opt}: a tensor core needs work items (a warp of lanes), {type(renderer).__name__} has none")
  if not 0 <= opt.amt < len(tcs): raise OptError(f"{opt}: {type(renderer).__name__} declares {len(tcs)} tensor cores, asked for number {opt.amt}")
  try: return apply_tc(ast, tcs[opt.amt], opt.axis)
  except OptError as e: raise OptError(f"{opt}: {e}") from None

def apply_opts(ast:UOp, opts:list[Opt]|tuple[Opt, ...], renderer=None) -> UOp:
  """the opts in order (TC needs the renderer, whose tensor cores it uses); the applied list is recorded in KernelInfo.applied_opts (and
  names the kernel apart from its unoptimized self)"""
  for o in opts: ast = apply_opt(ast, o, renderer)
  info = ast.arg if isinstance(ast.arg, KernelInfo) else KernelInfo()
  return ast.replace(arg=KernelInfo(info.name, info.opts_to_apply, info.dont_use_locals, tuple(info.applied_opts) + tuple(opts)))
