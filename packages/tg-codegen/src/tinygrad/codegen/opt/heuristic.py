"""The default opts, chosen by hand. For a CPU-style target: vector lanes along the stored (contiguous) axis, partial accumulators for a
reduction that has no such lanes, then the outermost output axis split across cores when there is enough work. For a target with work
items (Renderer.has_local): every output axis becomes a grid axis, the fastest one split into work groups, and a reduction gets partial
accumulators."""
from __future__ import annotations
import os
from tinygrad.uop.ops import UOp
from tinygrad.helpers import ContextVar, prod
from tinygrad.uop import AxisType
from tinygrad.codegen.opt.kernel import Opt, OptOps, OptError, REDUCE, apply_opt, axes, lanes, ranges, size

THREADS = ContextVar("THREADS", os.cpu_count() or 1)
WORK_PER_THREAD = 1 << 16  # loop trips (outputs x reduce steps) below which another thread costs more than it saves
CODE_BUDGET = 1 << 14      # AST nodes x unrolled lanes: a long fused chain is not copied into lanes (compile time grows with code)

def hand_coded_opts(ast:UOp, renderer) -> list[Opt]:
  ax = axes(ast)
  if not ax or any(size(r) is None for r in ranges(ast)): return []  # symbolic or bound-less loops: left as written
  # LOOP axes only: a GLOBAL axis is a grid someone laid out by hand
  out = [i for i, r in enumerate(ax) if r.arg[1] is AxisType.LOOP]
  red = [i for i, r in enumerate(ax) if r.arg[1] in REDUCE]
  work, chosen, nodes = prod(size(r) for r in ax), [], len(ast.toposort())
  if getattr(renderer, "has_local", False): return _gpu_opts(ast, red)
  def attempt(op:OptOps, axis:int, amts:tuple[int, ...]) -> bool:
    nonlocal ast
    for amt in amts:
      if op is not OptOps.THREAD and nodes * lanes(ast) * amt > CODE_BUDGET: continue
      try: ast = apply_opt(ast, o := Opt(op, axis, amt))
      except OptError: continue
      chosen.append(o)
      return True
    return False
  # 8 fp32 lanes fill an AVX2 register; with a reduction each lane is its own accumulator, and a second upcast axis reuses loads
  upcast = bool(out) and attempt(OptOps.UPCAST, out[-1], (8, 4, 2))
  if upcast and red and len(out) > 1: attempt(OptOps.UPCAST, out[-2], (4, 2))
  if red and not upcast: attempt(OptOps.UNROLL, red[-1], (8, 4, 2))
  threads = THREADS.value if getattr(renderer, "has_threads", False) else 1
  if threads > 1 and work >= 2 * WORK_PER_THREAD:
    want = min(threads, work // WORK_PER_THREAD)
    for i in out:
      if attempt(OptOps.THREAD, i, tuple(range(want, 1, -1))): break
  return chosen

GROUP_SIZES = (256, 128, 64, 32, 16, 8, 4, 2)  # items per work group, largest first: a multiple of the 32-wide warp where the axis allows

def _gpu_opts(ast:UOp, red:list[int]) -> list[Opt]:
  """each LOOP output axis that encloses every store -> a grid axis; the fastest (last) one's inner part -> the items of a work group"""
  chosen: list[Opt] = []
  if any(r.arg[1] in (AxisType.GLOBAL, AxisType.LOCAL) for r in ranges(ast)): return chosen  # a grid someone laid out by hand
  def attempt(op:OptOps, axis:int, amts:tuple[int, ...]) -> bool:
    nonlocal ast
    for amt in amts:
      try: ast = apply_opt(ast, o := Opt(op, axis, amt))
      except OptError: continue
      chosen.append(o)
      return True
    return False
  # the outermost LOOP axis each time: a retyped axis moves behind the LOOP axes, so the grid axes keep their loop order
  skipped = 0
  while len(loops := [i for i, r in enumerate(axes(ast)) if r.arg[1] is AxisType.LOOP]) > skipped:
    if not attempt(OptOps.GLOBAL, loops[skipped], (size(axes(ast)[loops[skipped]]),)): skipped += 1
  if grid := [i for i, r in enumerate(axes(ast)) if r.arg[1] is AxisType.GLOBAL]: attempt(OptOps.LOCAL, grid[-1], GROUP_SIZES)
  if red: attempt(OptOps.UNROLL, len(axes(ast)) - 1, (4, 2))
  return chosen
