"""Pack a matmul operand into panels. In a sum of products whose output's innermost axis j is a register tile's vector axis, the operand
B that varies along j and the reduce axes (and is broadcast along another output axis, so every row tile re-reads it) is read WIDE
columns at a time: a panel of reduce-size x WIDE elements per tile. In B's own layout that panel is WIDE floats per row at a stride of
a whole row: a new cache line per step and, at a power-of-two stride, the same few cache sets for every row, so the panel does not stay
in L1 or L2 between the row tiles that share it (matmul 256-2048 at one thread: the same 4x16 kernel runs 1.3-2.6x faster on a packed
B, bench/RESULTS.md). Written once into a panel-major copy (j//WIDE, reduce axes..., j%WIDE) by its own kernel, each panel is contiguous
and the main kernel streams it (codegen/opt/split_ranges.py splits j so the address is affine). The copy costs one read and write of B
against M/tile re-reads of it. A j that WIDE does not divide is padded with zeros in the copy."""
from __future__ import annotations
import math
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite
from tinygrad.uop.symbolic import symbolic, _linear
from tinygrad.helpers import ContextVar, JIT_CAPTURE, all_int, prod
from tinygrad.dtype import dtypes
from tinygrad.schedule.indexing import KernelCtx, at, pm_index

PACK = ContextVar("PACK", 1)  # 0: never; 1: on devices without work items (CPU-style caches); 2: on every device and at any size (tests)
WIDE = 16           # panel width: the register tile's vector axis (two AVX2 vectors of float32)
MIN_REUSE = 16      # at least this many outputs along the broadcast axes re-read the operand, or one copy costs more than it saves
MIN_WORK = 1 << 28  # multiply-adds (twice 512^3) below which the copy's kernel and the schedule-time work (~2.5 ms of Python per realize
                    # outside a JIT: this analysis and a second kernel to build) cost as much as the cache misses they save (512: even at one
                    # thread, slower at two)
MIN_WORK_JIT = 1 << 20  # the same under a TinyJit capture (JIT_CAPTURE), whose schedule is built once and replayed: what is left is
                        # the copy kernel's launch and pass over the operand (jitted x @ w.T at one thread: 64x512x256 0.85 -> 0.42 ms,
                        # 64x1600x128 1.2-1.4 -> 0.47; at 64x128x128, 2^20, both ~0.2 ms)

def _on_cpu(device) -> bool:
  if PACK.value >= 2: return True
  if PACK.value <= 0 or not isinstance(device, str): return False
  from tinygrad.device import Device
  return not getattr(Device[device].renderer, "has_local", False)

def _strides(o:UOp) -> tuple[list[dict[int, int]], int]|None:
  # kept on the (hash-consed) node while it lives: the same graph scheduled again costs nothing the second time
  if "_pack_strides" not in o.__dict__: o.__dict__["_pack_strides"] = _find_strides(o)
  return o.__dict__["_pack_strides"]

def _find_strides(o:UOp) -> tuple[list[dict[int, int]], int]|None:
  """per load of o, {axis: stride} of its address, o read at one range per axis, and the elements of the buffers it loads. A
  contiguous() inside o is read as the row-major buffer it will be. None when an address is not affine in the axes (o is a packed view
  already) or o does not build as one kernel"""
  rngs = tuple(UOp.range(s, i, AxisType.LOOP) if s > 1 else UOp.const(dtypes.weakint, 0) for i, s in enumerate(o.shape))
  cont = [c for c in o.toposort() if c.op is Ops.CONTIGUOUS and c._shape is not None and all_int(c.shape)]
  ctx = KernelCtx({c: UOp.placeholder(prod(c.shape), c.dtype, -1 - i) for i, c in enumerate(cont)}, None, next_axis=len(rngs))
  try: val = graph_rewrite(at(o, UOp.const(dtypes.bool, True), rngs), pm_index, ctx=ctx, bottom_up=True, name="pack strides")
  except (RuntimeError, ValueError): return None
  ret = []
  for u in val.toposort():
    if u.op is Ops.AT: return None
    if u.op is not Ops.LOAD: continue
    idx = graph_rewrite(u.src[0].src[1], symbolic, name="pack strides")
    if (lin := _linear(idx)) is None or any(b.op is not Ops.RANGE for b in lin[0]): return None
    ret.append({b.arg[0]: m for b, m in lin[0].items() if b.arg[1] is AxisType.LOOP})
  sizes = [prod(b.arg.shape) for b in ctx.inputs]
  return (ret, sum(sizes)) if all(isinstance(n, int) for n in sizes) else None

def panel_axis(x_shape:tuple, o_shape:tuple, red:tuple[int, ...]) -> int|None:
  """the output axis the operand is packed along (the innermost output axis of size > 1) when the rule holds, else None. o_shape is
  aligned to x_shape (size 1 where the operand is broadcast)"""
  kept = [i for i in range(len(x_shape)) if i not in red and x_shape[i] > 1]
  if not kept or not red or any(o_shape[i] != x_shape[i] for i in red): return None
  j = kept[-1]
  reuse = prod(x_shape[i] for i in kept if o_shape[i] == 1)
  if o_shape[j] < WIDE or reuse < MIN_REUSE: return None
  return j

def panel_apart(strides:list[dict[int, int]], j:int, red:tuple[int, ...]) -> bool:
  """some load of the operand reads j with a stride (no vector load) or steps a reduce axis by more than WIDE: its panel's rows lie apart"""
  return any(s.get(j, 0) != 1 or any(abs(s.get(r, 0)) > WIDE for r in red) for s in strides)

def packed(o:UOp, j:int, red:tuple[int, ...]) -> UOp:
  """o (shape aligned to the reduce's input, size 1 where broadcast) as a view of its panel-major copy: axes outside j and the reduce
  first, then j//WIDE, the reduce axes, j%WIDE"""
  n, jp = len(o.shape), math.ceil(o.shape[j] / WIDE) * WIDE
  order = tuple(i for i in range(n) if i != j and i not in red) + (j,) + red
  x = o.pad(tuple((0, jp - o.shape[j]) if i == j else (0, 0) for i in range(n))).permute(order)
  pre, rs = x.shape[:n - len(red) - 1], x.shape[n - len(red):]
  x = x.reshape(pre + (jp // WIDE, WIDE) + rs)
  p = len(pre)
  to_packed = tuple(range(p + 1)) + tuple(range(p + 2, n + 1)) + (p + 1,)
  panels = x.permute(to_packed).contiguous()
  back = panels.permute(tuple(to_packed.index(i) for i in range(n + 1))).reshape(pre + (jp,) + rs)
  back = back.shrink(tuple((0, o.shape[j]) if i == p else (0, s) for i, s in enumerate(back.shape)))
  return back.permute(tuple(order.index(i) for i in range(n)))

def pack_operand(r:UOp) -> UOp|None:
  x, (op, red) = r.src[0], r.arg
  if op is not Ops.ADD or x.op is not Ops.MUL or x._shape is None or not all_int(x.shape) or not _on_cpu(x.device): return None
  if prod(x.shape) < (MIN_WORK_JIT if JIT_CAPTURE else MIN_WORK) and PACK.value < 2: return None
  red = tuple(sorted(red))
  for k, o in enumerate(x.src):
    if o._shape is None or not all_int(o.shape): continue
    base = o
    while base.op is Ops.EXPAND: base = base.src[0]
    if base.__dict__.get("_packed"): continue
    aligned = (1,) * (len(x.shape) - len(base.shape)) + tuple(base.shape)
    if (j := panel_axis(x.shape, aligned, red)) is None: continue
    o1 = base.reshape(aligned)
    # the copy holds the operand's elements: no more than it reads (a conv's input read as windows would grow by the window size)
    if (got := _strides(o1)) is None or not got[0] or prod(aligned) > got[1]: continue
    if not panel_apart(got[0], j, red): continue
    view = packed(o1, j, red).reshape(base.shape)
    view.__dict__["_packed"] = True  # the rewrite visits the new reduce too: no analysis of the packed view
    if view.shape != o.shape: view = view.expand(o.shape)
    return r.replace(src=(x.replace(src=x.src[:k] + (view,) + x.src[k+1:]),))
  return None

pm_pack = PatternMatcher([(UPat(Ops.REDUCE_AXIS, name="r"), pack_operand)])

def pack_operands(sink:UOp) -> UOp: return graph_rewrite(sink, pm_pack, name="pack operands") if PACK.value else sink
