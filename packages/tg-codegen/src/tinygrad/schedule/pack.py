"""Pack a matmul operand into panels. In a sum of products whose output's innermost axis j is a register tile's vector axis, the operand
B that varies along j and the reduce axes (and is broadcast along another output axis, so every row tile re-reads it) is read WIDE
columns at a time: a panel of reduce-size x WIDE elements per tile. In B's own layout that panel is WIDE floats per row at a stride of
a whole row: a new cache line per step and, at a power-of-two stride, the same few cache sets for every row, so the panel does not stay
in L1 or L2 between the row tiles that share it (matmul 256-2048 at one thread: the same 4x16 kernel runs 1.3-2.6x faster on a packed
B, bench/RESULTS.md). Written once into a panel-major copy (j//WIDE, reduce axes..., j%WIDE) by its own kernel, each panel is contiguous
and the main kernel streams it (codegen/opt/split_ranges.py splits j so the address is affine). The copy costs one read and write of B
against M/tile re-reads of it. A j that WIDE does not divide is padded with zeros in the copy.
j is the innermost output axis the operand varies along. Where that is not the output's innermost axis (a direct conv's weight varies
along the output channels, the output's rows are its pixels), the operand is packed only if no operand of the innermost axis reads or
can be made to read contiguous panels (the conv's input is read as windows: a copy would grow by the window size, and its channel step
is a whole image). The reduce then writes a buffer of its own with j innermost (channels-last: LLVM's SLP vectorizer builds the tile's
vectors from consecutive stores, so j's lanes must be the store's) and its result is a permuted view of that buffer (LAYOUT: a realized
target stays that view, as a torch channels-last tensor does, instead of a second pass copying it to row-major order). A direct conv
b8 64->64 56x56 3x3 at one thread: 28 -> 85 GFLOP/s for the kernel, 16 channels x 4 pixels (bench/RESULTS.md).
An operand that is no panel operand but steps its reduce a row apart (A of a.T @ b, the inputs of a Linear's weight gradient) is copied
with its reduce axes innermost, as A of a @ b is read (_reduce_inner)."""
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
# multiply-adds below which the copy's kernel (a pass over the operand and a launch per call, outside a JIT) costs as much as the cache
# misses it saves. Square matmuls at 2 threads, default vs packed, GFLOP/s: AVX2 (znver3) 256: 57 / 52, 320: 100 / 81, 384: 78 / 103,
# 512: 92 / 151; AVX-512, where the panels also give the tile a second vector of columns (8 rows x 2 panels: 16 accumulators, where B's
# own j axis takes one upcast of at most 16 lanes), 384: 155 -> 205, 512: 165 -> 240, level at 256
MIN_WORK = 1 << 25
MIN_WORK_JIT = 1 << 20  # the same under a TinyJit capture (JIT_CAPTURE), whose schedule is built once and replayed: what is left is
                        # the copy kernel's launch and pass over the operand (jitted x @ w.T at one thread: 64x512x256 0.85 -> 0.42 ms,
                        # 64x1600x128 1.2-1.4 -> 0.47; at 64x128x128, 2^20, both ~0.2 ms)
# a reduce's own buffer (LAYOUT) takes j in whole panels: 0 never, 1 where j's last panel holds lanes that are no one vector, 2 wherever
# j is no multiple of WIDE (tests, benchmarks)
WHOLE_PANELS = ContextVar("WHOLE_PANELS", 1)
LAYOUT = "pack layout"  # the tag of the contiguous() that holds a reduce in the layout chosen here (rangeify._must_realize)

def _on_cpu(device) -> bool:
  if PACK.value >= 2: return True
  if PACK.value <= 0 or not isinstance(device, str): return False
  from tinygrad.device import Device
  return not getattr(Device[device].renderer, "has_local", False)

# a weight packed along an output axis other than the innermost one (a direct conv's, along its output channels) is re-read by at least
# this many outputs along the others (its pixels), or the copy, a pass over the whole weight on every call, costs more than the panels
# save, where the unpacked form's tile has whole vectors along its rows (a power of two pixels: it reads the weight as broadcasts, each
# once per pixel tile). ResNet-18's convs at batch 1 on 64x64 (TinyJit, where the packing threshold is low): 4x4 and 8x8 pixels packed
# 0.29 and 0.15 ms a conv against 0.19 and 0.15 unpacked, the model 4.6 -> 4.1 ms (bench/onnx_models.py); b8 256->256 4x4 level (0.79 /
# 0.87 ms), b4 512->512 4x4 1.96 -> 1.76. Rows of 7 or 14 keep the copy (1x512x7x7 3x3 1.4 ms packed, 4.7 not)
MIN_REUSE_ACROSS = 256
def _reused_across(pixels:int, row:int) -> bool: return PACK.value >= 2 or pixels >= MIN_REUSE_ACROSS or row & (row - 1) != 0

def packs_along(device, channels:int, macs:int, grid:tuple[int, ...]|None=None) -> bool:
  """whether a product of `macs` multiply-adds gets an operand packed into panels of `channels` here. A direct conv's weight, packed
  along its output channels, gives its `grid` (the batch and the output's spatial sizes: the outputs that re-read the weight): then
  its register tile's vectors run along the output channels, whatever the output's width or stride (tensor_conv chooses its form by it)"""
  if not _on_cpu(device) or channels < WIDE or (grid is not None and not _reused_across(prod(grid), grid[-1])): return False
  return PACK.value >= 2 or macs >= (MIN_WORK_JIT if JIT_CAPTURE else MIN_WORK)

_BOUNDARY = (Ops.CONTIGUOUS, Ops.REDUCE_AXIS)
class StridesCtx:
  """what the address analyses of one pass share: each contiguous() or reduce is one placeholder buffer, and a node asked for at one
  index is built once, whichever operand reads it (a training graph's gradient flows back through the residual stream as one chain of
  adds: every operand over it held the chain below it, and analysing each one again made the pass quadratic in depth)"""
  def __init__(self):
    self.kernel = KernelCtx({}, None, next_axis=1 << 16)  # reduce ranges (a symbolic reduce is built through) apart from the loop axes
    self.built: dict = {}

def _find_strides(o:UOp, ctx:StridesCtx|None=None) -> tuple[list[dict[int, int]], int]|None:
  """per load of o, {axis: stride} of its address, o read at one range per axis, and the elements of the buffers it loads. A
  contiguous() or a reduce inside o is read as the row-major buffer it will be. None when an address is not affine in the axes (o is a
  packed view already) or o does not build as one kernel"""
  if ctx is None: ctx = StridesCtx()
  rngs = tuple(UOp.range(s, i, AxisType.LOOP) if s > 1 else UOp.const(dtypes.weakint, 0) for i, s in enumerate(o.shape))
  # the walk stops at each reduce: built through them, the operand of a model's last matmul held every layer before it, each read at
  # the indices of every path to it (a 2-layer transformer's schedule: 100 s in this analysis, 4 layers would not finish). Its loads and
  # their strides are what the kernel reading o does; the reduce is a buffer by then or a row chain that reads the same rows
  realized = ctx.kernel.realized
  for c in o.toposort(lambda u: u is o or u.op not in _BOUNDARY):
    if c.op in _BOUNDARY and c._shape is not None and all_int(c.shape) and c not in realized:
      realized[c] = UOp.placeholder(prod(c.shape), c.dtype, -1 - len(realized), device=c.device)
  try: val = graph_rewrite(at(o, UOp.const(dtypes.bool, True), rngs), pm_index, ctx=ctx.kernel, bottom_up=True, name="pack strides",
                           done=ctx.built)
  except (RuntimeError, ValueError): return None
  ret, bufs = [], {}
  for u in val.toposort():
    if u.op is Ops.AT: return None
    if u.op is not Ops.LOAD: continue
    bufs[u.src[0].src[0]] = None
    idx = graph_rewrite(u.src[0].src[1], symbolic, name="pack strides")
    if (lin := _linear(idx)) is None or any(b.op is not Ops.RANGE for b in lin[0]): return None
    ret.append({b.arg[0]: m for b, m in lin[0].items() if b.arg[1] is AxisType.LOOP})
  sizes = [prod(b.arg.shape) for b in bufs]
  return (ret, sum(sizes)) if all(isinstance(n, int) for n in sizes) else None

def panel_axis(x_shape:tuple, o_shape:tuple, red:tuple[int, ...]) -> int|None:
  """the output axis the operand is packed along (the innermost output axis it varies along) when the rule holds, else None. o_shape
  is aligned to x_shape (size 1 where the operand is broadcast)"""
  kept = [i for i in range(len(x_shape)) if i not in red and x_shape[i] > 1]
  if not red or any(o_shape[i] != x_shape[i] for i in red) or not (own := [i for i in kept if o_shape[i] > 1]): return None
  j = own[-1]
  reuse = prod(x_shape[i] for i in kept if o_shape[i] == 1)
  if o_shape[j] < WIDE or reuse < MIN_REUSE: return None
  return j

def panel_apart(strides:list[dict[int, int]], j:int, red:tuple[int, ...]) -> bool:
  """some load of the operand reads j with a stride (no vector load) or steps a reduce axis by more than WIDE: its panel's rows lie apart"""
  return any(s.get(j, 0) != 1 or any(abs(s.get(r, 0)) > WIDE for r in red) for s in strides)

def packed(o:UOp, j:int, red:tuple[int, ...], whole:bool=False) -> UOp:
  """o (shape aligned to the reduce's input, size 1 where broadcast) as a view of its panel-major copy: axes outside j and the reduce
  first, then j//WIDE, the reduce axes, j%WIDE. whole: j keeps the copy's zero padding (whole panels)"""
  n, jp = len(o.shape), math.ceil(o.shape[j] / WIDE) * WIDE
  order = tuple(i for i in range(n) if i != j and i not in red) + (j,) + red
  x = o.pad(tuple((0, jp - o.shape[j]) if i == j else (0, 0) for i in range(n))).permute(order)
  pre, rs = x.shape[:n - len(red) - 1], x.shape[n - len(red):]
  x = x.reshape(pre + (jp // WIDE, WIDE) + rs)
  p = len(pre)
  to_packed = tuple(range(p + 1)) + tuple(range(p + 2, n + 1)) + (p + 1,)
  panels = x.permute(to_packed).contiguous()
  back = panels.permute(tuple(to_packed.index(i) for i in range(n + 1))).reshape(pre + (jp,) + rs)
  if not whole: back = back.shrink(tuple((0, o.shape[j]) if i == p else (0, s) for i, s in enumerate(back.shape)))
  return back.permute(tuple(order.index(i) for i in range(n)))

class PackCtx:
  """what one pass knows: the packed views it made (not analysed again when the rewrite visits the new reduce) and each operand's
  strides (analysed once per pass however often its reduces are visited)"""
  def __init__(self): self.packed, self._strides, self._analysis = set(), {}, StridesCtx()
  def strides(self, o:UOp) -> tuple[list[dict[int, int]], int]|None:
    if o not in self._strides: self._strides[o] = _find_strides(o, self._analysis)
    return self._strides[o]

def _operands(x:UOp):
  """(position, operand without its broadcast, its shape aligned to x's) for each operand of the product x"""
  for k, o in enumerate(x.src):
    if o._shape is None or not all_int(o.shape): continue
    base = o
    while base.op in (Ops.EXPAND, Ops.CONTIGUOUS_BACKWARD): base = base.src[0]
    yield k, base, (1,) * (len(x.shape) - len(base.shape)) + tuple(base.shape)

def _packable(ctx:PackCtx, base:UOp, aligned:tuple, j:int, red:tuple[int, ...]) -> bool:
  """its loads' panel rows lie apart and a copy holds no more than the operand reads (a conv's input read as windows would grow by
  the window size)"""
  got = ctx.strides(base.reshape(aligned))
  return got is not None and bool(got[0]) and prod(aligned) <= got[1] and panel_apart(got[0], j, red)

def _vector_axis_served(ctx:PackCtx, x:UOp, inner:int, red:tuple[int, ...]) -> bool:
  """some operand that varies along the output's innermost axis reads it as contiguous panels, or will once packed; or it can't be told"""
  for _, base, aligned in _operands(x):
    if aligned[inner] == 1: continue
    if base in ctx.packed or (got := ctx.strides(base.reshape(aligned))) is None or not panel_apart(got[0], inner, red): return True
    if panel_axis(x.shape, aligned, red) == inner and prod(aligned) <= got[1]: return True
  return False

def pack_operand(ctx:PackCtx, r:UOp) -> UOp|None:
  """pack the operand of the product whose panels lie apart. Along the output's innermost axis first (matmul's B); along another one
  only where no operand of the innermost axis can be made to read contiguous panels (a conv: its input read as windows can't be
  copied, its weight can, along the output channels): then that axis becomes the innermost one of the reduce's own buffer, since the
  tile's vectors follow its store (LLVM's SLP vectorizer starts from consecutive stores), and the result is a permuted view of it"""
  x, (op, red) = r.src[0], r.arg
  # a float16/bfloat16 product is summed in float (mixin/reduce.py: sum_acc_dtype): the reduce reads the product through a widening cast
  cast = x if x.op is Ops.CAST and x.src[0].op is Ops.MUL and x.src[0].dtype.itemsize < x.dtype.itemsize else None
  if cast is not None: x = x.src[0]
  def summed(y:UOp) -> UOp: return cast.replace(src=(y,)) if cast is not None else y
  if op is not Ops.ADD or x.op is not Ops.MUL or x._shape is None or not all_int(x.shape) or not _on_cpu(x.device): return None
  if PACK.value < 2 and prod(x.shape) < (MIN_WORK_JIT if JIT_CAPTURE else MIN_WORK): return None
  red = tuple(sorted(red))
  if not (out := [i for i in range(len(x.shape)) if i not in red and x.shape[i] > 1]): return None
  operands = list(_operands(x))
  for k, base, aligned in operands:
    if base in ctx.packed or (j := panel_axis(x.shape, aligned, red)) is None: continue
    # a panel's lanes pay by sharing each load of another operand that is broadcast along j (matmul's A row across B's panel); where
    # every operand varies along j (a depthwise conv's channels, each its own input plane and weight), the lanes share no load and
    # read the other operand with a stride each (b8 96x56x56 7x7 depthwise: 31 ms packed along the channels)
    if not any(al[j] == 1 for kk, _, al in operands if kk != k): continue
    if j != out[-1] and not _reused_across(prod(x.shape[i] for i in out if aligned[i] == 1), x.shape[out[-1]]): continue
    if (j != out[-1] and _vector_axis_served(ctx, x, out[-1], red)) or not _packable(ctx, base, aligned, j, red): continue
    n, whole = x.shape[j], j != out[-1] and _whole_panels(x, k, j)
    view = packed(base.reshape(aligned), j, red, whole)
    if not whole: view = view.reshape(base.shape)
    ctx.packed.add(view)
    want = tuple(view.shape[i] if i == j and whole else s for i, s in enumerate(x.src[k].shape))
    if view.shape != want: view = view.expand(want)
    x = x.replace(src=x.src[:k] + (view,) + x.src[k+1:])
    if j == out[-1]: return r.replace(src=(summed(x),))
    order = tuple(i for i in range(len(x.shape)) if i != j) + (j,)
    moved = r.replace(src=(summed(x).permute(order),), arg=(op, tuple(order.index(i) for i in red)))
    ret = moved.contiguous().replace(tag=LAYOUT).permute(tuple(order.index(i) for i in range(len(x.shape))))
    return ret.shrink(tuple((0, n) if i == j else (0, s) for i, s in enumerate(ret.shape))) if whole else ret
  return _reduce_inner(ctx, r, x, red, summed)

def _whole_panels(x:UOp, k:int, j:int) -> bool:
  """the reduce's own buffer takes j in whole panels: the packed operand k's zero padding is computed and stored as more of j, and the
  view of that buffer crops it off. Where j's last panel holds lanes that are no one vector (15 of 16: 8+4+2+1), the peeled loop of that
  panel (codegen/opt/peel.py) kept a vector per piece and spilled (b8 64->63 56x56 3x3 at 2 threads, the kernel alone: 15.7 -> 8.0 ms,
  64 channels 7.9); a last panel of one vector's lanes (1, 2, 4 or 8 of 16) runs as that vector, for less than a whole panel (65
  channels: 9.1 ms, 80: 10.5). Only where every other operand is broadcast along j (the conv's input): they read no padding"""
  rem = x.shape[j] % WIDE
  if WHOLE_PANELS.value == 0 or rem == 0 or (WHOLE_PANELS.value == 1 and rem & (rem - 1) == 0): return False
  return all(len(s.shape) == len(x.shape) and (kk == k or s.shape[j] == 1) for kk, s in enumerate(x.src))

def steps_apart(strides:list[dict[int, int]], red:tuple[int, ...]) -> bool:
  """some load steps the innermost reduce axis of the operand (the reduce loop's innermost) by more than WIDE: a new cache line per step"""
  return bool(red) and any(abs(s.get(red[-1], 0)) > WIDE for s in strides)

def _reduce_inner(ctx:PackCtx, r:UOp, x:UOp, red:tuple[int, ...], summed) -> UOp|None:
  """copy an operand that is no panel operand and steps its reduce a row apart (A of a.T @ b, x of a Linear's weight gradient x.T @ g)
  into a buffer with its reduce axes innermost, as A of a @ b is: read in place, each step of the reduce loop is a new cache line, and at
  a power-of-two row length all of a tile's lines fall into the same few cache sets, so the lines a row tile loads are gone before the
  next row tiles read them again (matmul 1024 a.T @ b at 2 threads: 111 ms, a @ b 6.5 ms). The copy costs one pass over the operand
  against one re-read per tile of the other output axis. summed: puts back the widening cast a float16 product is summed through"""
  kept = [i for i in range(len(x.shape)) if i not in red and x.shape[i] > 1]
  for k, base, aligned in _operands(x):
    own = tuple(i for i in red if aligned[i] > 1)
    if base in ctx.packed or not own or prod(x.shape[i] for i in kept if aligned[i] == 1) < MIN_REUSE: continue
    got = ctx.strides(base.reshape(aligned))
    if got is None or not got[0] or prod(aligned) > got[1] or not steps_apart(got[0], own): continue
    order = tuple(i for i in range(len(aligned)) if i not in red) + red
    view = base.reshape(aligned).permute(order).contiguous().permute(tuple(order.index(i) for i in range(len(aligned)))).reshape(base.shape)
    ctx.packed.add(view)
    if view.shape != x.src[k].shape: view = view.expand(x.src[k].shape)
    return r.replace(src=(summed(x.replace(src=x.src[:k] + (view,) + x.src[k+1:])),))
  return None

pm_pack = PatternMatcher([(UPat(Ops.REDUCE_AXIS, name="r"), pack_operand)])

def pack_operands(sink:UOp) -> UOp: return graph_rewrite(sink, pm_pack, ctx=PackCtx(), name="pack operands") if PACK.value else sink
