"""The default opts, chosen by hand. For a CPU-style target: output axes upcast where the lanes share loads (a register tile), partial
accumulators for a reduction that has no such lanes, then the outermost output axis split across cores when there is enough work. For a
target with work items (Renderer.has_local): every output axis becomes a grid axis, a reduction with few outputs is shared by the items
of a work group, the fastest grid axis is split into work groups, and a reduction gets partial accumulators."""
from __future__ import annotations
import math, os
from typing import NamedTuple
from tinygrad.uop import Ops, AxisType, GroupOp
from tinygrad.uop.ops import UOp
from tinygrad.uop.symbolic import _linear
from tinygrad.helpers import ContextVar, prod, all_int
from tinygrad.dtype import dtypes
from tinygrad.codegen.opt.kernel import Opt, OptOps, OptError, REDUCE, MAX_UPCAST, MAX_UNROLL, apply_opt, apply_opts, axes, broadcast_reduce, free_ranges, \
  lanes, ranges, simplified, size
from tinygrad.codegen.opt.tc import tc_actions
from tinygrad.codegen.opt.peel import vector_gate_ranges
from tinygrad.codegen.opt.split_ranges import stored_unit
from tinygrad.codegen.prefix_scan import TAG as SCAN_TAG, scans

THREADS = ContextVar("THREADS", os.cpu_count() or 1)
SHARES_PER_THREAD = 4      # shares of a streaming kernel per core, taken by the cores as they come free (runtime/ops_cpu)
WORK_PER_THREAD = 1 << 16  # loop trips (outputs x reduce steps) below which another thread costs more than it saves
CODE_BUDGET = 1 << 14      # AST nodes x unrolled lanes: a long fused chain is not copied into lanes (compile time grows with code)
WIDE = 16                  # a stride-1 axis this wide (pack.py's panel width) gives a tile whose accumulators are whole vectors

# lanes of one trip of a loop without a reduce that LLVM's loop vectorizer still packs across trips into whole vectors: its interleave
# groups hold at most 8 accesses, so a 16-lane trip became gathers and scatters ((a*b+c).relu()*0.5 on 16M, AVX-512: 32 -> 25 GB/s)
LOOP_GROUP = 8

class SimdTiles(NamedTuple):
  """register tiles in fp32 lanes, from the target's SIMD registers (Renderer.vector_bytes, vector_registers). AVX2 (16 of 8 floats):
  8, 32, 64, 128; AVX-512 (32 of 16 floats): 16, 128, 256, 512"""
  vector: int     # lanes of one vector load: neighbouring lanes of a stride-1 axis cost one load together
  tile: int       # accumulators of a register tile: a quarter of the registers, leaving room for the loads
  wide: int       # with a WIDE stride-1 axis the accumulators are whole vectors: half of the registers
  # a WIDE tile whose loads stream a panel past L1 (panel_streams): every register, which spills a few but loads fewer vectors per FMA,
  # and the kernel waits on memory, not on the FMA pipes. AVX2, matmul at THREADS=1, CPU time, 4x16 -> 8x16 (both with SWAP): 1024
  # 30.5 -> 41.4, 2048 22.2 -> 37.0 GFLOP/s; in cache it loses (512: 62.1 -> 46.0, 256: 84 -> 42). kernel.MAX_LANES caps every tile
  streaming: int

# loop trips under which a kernel's tiles stay within 128 lanes in all (AVX2's whole register file). A tile's lanes are unrolled code, and
# LLVM's and codegen's time grows with them: the 8x8 digits CNN's kernels (2^19-2^23 trips, tens of microseconds each) tiled for
# AVX-512's registers took its first training step from 2.0 to 2.6 s, for 0.1 ms per later step
SMALL_WORK = 1 << 24

def simd_tiles(renderer, work:int|None=None) -> SimdTiles:
  vector, registers = max(1, getattr(renderer, "vector_bytes", 32) // 4), getattr(renderer, "vector_registers", 16)
  lanes = vector * registers if work is None or work >= SMALL_WORK else min(vector * registers, 128)
  return SimdTiles(vector, lanes // 4, lanes // 2, lanes)

UPCAST_AMTS = (2, 3, 4, 7, 8, WIDE)  # ascending: on a tie the smaller tile wins. 7: a row of 7, 14, 28 or 56 pixels (ResNet)
LINE_FLOATS = 16           # elements of 4 bytes in a 64-byte cache line
L1_BYTES = 32 << 10        # a panel bigger than this falls out of L1 between two tiles unless the next tile reads it too
L2_BYTES = 1 << 20         # a core's L2 (1-2 MB on recent x86): an operand past it is read from L3 again by every pass over it
MINOR_REDUCE = 1 << 10     # a chain's reduce with at most 1/MINOR_REDUCE of the kernel's loop trips: see _minor_reduce
CACHE_LINE = 64            # bytes

class _Access:
  """one memory access of the kernel: the ranges its address depends on and the ones it walks with stride 1. A gated load (padding) is
  a branch per lane: it counts double and its lanes never share a vector load"""
  def __init__(self, idx:UOp, gated:bool, itemsize:int=4):
    self.deps, self.itemsize = {u for u in idx.toposort() if u.op is Ops.RANGE}, itemsize
    lin = _linear(simplified(idx))
    self.unit = {b for b, m in lin[0].items() if b.op is Ops.RANGE and m == 1} if lin is not None and not gated else set()
    self.strided = {b for b, m in lin[0].items() if b.op is Ops.RANGE and abs(m) > 1} if lin is not None else set(self.deps)
    self.stride = {b: abs(m) for b, m in lin[0].items() if b.op is Ops.RANGE} if lin is not None else {}
    self.weight = 2 if gated else 1
  def cost(self, tile:dict[UOp, int], vector:int, along:set[UOp]|None=None) -> int:
    """loads of this access per step of the tile; neighbours share a vector load only in power-of-two groups (3 lanes are 3 loads), and
    only along an axis of `along` (the tile's vectors: a conv's input pixels, stride 1 along the row, are broadcast one by one into
    vectors that run along the output channels)"""
    return self.weight * prod(math.ceil(a / vector) if r in self.unit and (along is None or r in along) and a & (a-1) == 0 else a
                              for r, a in tile.items() if r in self.deps)
  def lines(self, tile:dict[UOp, int]) -> int:
    """cache lines this access touches per step of the tile: lanes along a stride-1 axis share lines, lanes along any other axis don't"""
    return prod(math.ceil(a * self.itemsize / CACHE_LINE) if r in self.unit else a for r, a in tile.items() if r in self.deps)

def _always(gate:UOp) -> bool:
  """the gate simplifies to True (lowering folds it the same way, so the load is a plain one)"""
  return (g := simplified(gate)).op is Ops.CONST and g.arg is True

def _accesses(ast:UOp, shifted:bool=False) -> tuple[list[_Access], set[UOp]]:
  """the loads inside the innermost loop (and the stores too when nothing is reduced: they run as often), and the ranges some ungated
  access of that loop, or a store, walks with stride 1. shifted: a load that walks an innermost reduce and an output axis both with
  stride 1 (a conv's input at w + kw, in its weight gradient) counts double: its vectors along the reduce start one element further on
  for each step of that axis, most of them across two cache lines"""
  reduce = any(u.op is Ops.REDUCE for u in ast.toposort())
  innermost = _main_inner(ast)
  inner, unit = [], set()
  for u in ast.toposort():
    if u.op not in (Ops.LOAD, Ops.STORE) or u.src[0].op is not Ops.INDEX or len(u.src[0].src) != 2: continue
    # a gate that folds to True (padding that the view shrinks away again: a conv's window over its padded input) gates nothing
    gated = u.op is Ops.LOAD and len(u.src) == 3 and not _always(u.src[2])
    a = _Access(u.src[0].src[1], gated, u.src[0].src[0].dtype.itemsize)
    # a hoisted load walks its axes once per trip of the loops around: lanes along them are no vectors where the work is (a BatchNorm
    # backward's per-channel scale made a conv's weight gradient 16 channels wide, scalar lanes: 5.8 ms, 3 x 4 of them 1.0 ms)
    if u.op is Ops.STORE or innermost in a.deps: unit |= a.unit
    if shifted and u.op is Ops.LOAD and innermost in a.unit and any(r.arg[1] not in REDUCE for r in a.unit): a.weight *= 2
    # a load the innermost loop does not move is hoisted out of it (softmax's row max and sum): lanes sharing it save nothing there
    if (u.op is Ops.LOAD and innermost in a.deps) or (u.op is Ops.STORE and not reduce): inner.append(a)
  return inner, unit

# ops lowered to a polynomial of ~20-30 vector ops per element (codegen/transcendental.py)
POLYNOMIAL = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.POW})

def _long_body(ast:UOp, r:UOp) -> bool:
  """a reduce over r evaluates a polynomial per element: its ~30 ops per vector hide the latency of the add into one accumulator"""
  return any(u.op is Ops.REDUCE and r in u.src[1:] and any(w.op in POLYNOMIAL for w in u.src[0].toposort(lambda w: w.op is not Ops.REDUCE))
             for u in ast.toposort())

def _evaluates_polynomial(ast:UOp) -> bool: return any(u.op in POLYNOMIAL for u in ast.toposort())

def _scalar_polynomial_axes(ast:UOp, out:list[int]) -> set[int]:
  """the output axes a reduce's tile leaves alone when the reduce evaluates a polynomial per element that depends on every output axis
  (no lane shares it): those that no load under it walks with stride 1, along which each lane evaluates its own as scalar code. The loads
  such lanes share are a small part of the work beside it; they add a stream each and a copy of the polynomial's code (masked attention's
  backward, the sum over keys of dP * exp(s - max): tiled 4 batches x 8 heads to share the mask, then unrolled 8 along the keys into
  vectors, 256 accumulators and 13k ops of code, 8 s to compile and twice the time of the untiled kernel, whose loads stream the keys as
  vectors). Lanes along a load's stride-1 axis evaluate it as vectors (the column sum of exp(x))"""
  ax = axes(ast)
  if not (outs := {ax[i] for i in out if size(ax[i]) > 1}): return set()
  for u in ast.toposort():
    if u.op is not Ops.REDUCE: continue
    for w in u.src[0].toposort(lambda w: w.op is not Ops.REDUCE):
      if w.op not in POLYNOMIAL or not outs <= {r for r in w.toposort() if r.op is Ops.RANGE}: continue
      vector = {r for x in w.toposort() if x.op is Ops.LOAD and x.src[0].op is Ops.INDEX and len(x.src[0].src) == 2
                for r in _Access(x.src[0].src[1], len(x.src) == 3 and not _always(x.src[2])).unit}
      return {i for i in out if ax[i] not in vector}
  return set()

# a tile of scalar lanes (no load of the innermost loop walks a tile axis with stride 1) over a reduce whose loads all stream its innermost
# axis with stride 1 is kept only where it loads SCALAR_TILE_GAIN times fewer per lane than untiled, and the reduce is shorter than
# LONG_ROW: untiled, the reduce's unroll reads every load as whole vectors, and a long row pays for the vectors' horizontal sum at its end
# (a @ b.T of 64x64 by K, the kernel at 2 threads, 4 x 16 lanes against untiled: K=64 0.024 / 0.059 ms, 256 0.069 / 0.113, 512 level;
# 16x64 by 4096: 1.5 / 0.4). A tile that shares little adds a stream and a copy of the body per lane: a GPT's layernorm gradient (B x T
# rows of 512: six row streams, a weight and the positional table shared) as 4 rows x 16 positions 1.5-2.8 ms, untiled 0.08-0.15
SCALAR_TILE_GAIN, LONG_ROW = 2, 512

def _scalar_tile_pays(ast:UOp, tile:dict[int, int], simd:SimdTiles, shifted:bool=False) -> bool:
  """whether a reduce's register tile is worth its lanes (see SCALAR_TILE_GAIN): always where some lane runs along a vector"""
  ax, acc = axes(ast), _accesses(ast, shifted)[0]
  # the loads of the innermost loop count: a row's scalar hoisted out of it (a layernorm's 1/std) or the store make no vectors there
  vectors = {r for a in acc for r in a.unit}
  if any(ax[i] in vectors for i in tile) or not _streams_vectors(ast, inner := _main_inner(ast)): return True
  gain = _per_lane(acc, {}, simd.vector) / _per_lane(acc, {ax[i]: a for i, a in tile.items()}, simd.vector)
  return gain >= SCALAR_TILE_GAIN and size(inner) < LONG_ROW

def _scalar_tile(ast:UOp, tile:dict[int, int]) -> bool:
  """no power-of-two run of the tile lies along an axis some access walks with stride 1: its lanes are scalars, no vectors"""
  ax, walked = axes(ast), _accesses(ast)[1]
  return not any(amt & (amt - 1) == 0 and ax[i] in walked for i, amt in tile.items())

# A reduce's tile of scalar lanes over a reduce that streams its innermost axis as vectors, on a target whose compiler loop-vectorizes
# (LLVM). Its SLP vectorizer packs the partial sums of the reduce's unroll into vectors, a few per lane, where the innermost reduce is a
# multiple of two vectors long (_packs_reduce) and no lane reads runs shifted from another's by steps of a reduce (_window_axes: a conv's
# taps beside its pixels, which such a kernel then does not tile; a load walking both counts double, _accesses). Lanes x unroll are then
# held to PACKED_SHARE of the registers in vectors, the tile to what leaves each lane two of them. Where it does not pack them (a row of
# 28, a tile along the taps) it left every partial sum scalar, each lane a serial chain: lanes x unroll are held to SCALAR_SHARE of the
# registers in scalars.
# 3x3 conv weight gradients (sum over batch and pixels of dy x the shifted input), the kernel at 2 threads, ms, best of 15-20, AVX2:
#   | kernel                   | 3 taps x 8 channels, unroll 8 | 3 x 4, no unroll | 4 channels, unroll 16 (packed) |
#   | b8 32->32 16x16          | 5.1-5.4                       | 1.2-2.5          | 0.57-0.64                      |
#   | b8 16->16 32x32          | 2.5-4.7                       | 1.1-2.2          | 0.57-0.66                      |
#   | b4 3->16 64x64           | 1.7-2.1                       | 0.60-0.77        | 0.21-0.24                      |
#   | b8 3->16 32x32, BN fused | (3 x 16, one thread) 5.8      | 0.50-1.0         | 0.21-0.36 (no tile 0.31-0.33)  |
# 3 input channels x 2 output channels, unroll 16 (BN fused): 0.84-1.33, its 12 vectors of partial sums spilled. Depthwise b8 128x32x32:
# 3x3 taps unrolled 32 1.35-1.46, not unrolled 0.80-1.13, no tile unrolled 32 0.61-0.63; rows of 28 or 56 (not packed): 3 taps
# unrolled 4 0.26-0.44, not 0.62; 9 taps of 56 not unrolled 1.07-1.13, no tile unrolled 8 or 14 0.98-0.99
SCALAR_SHARE, PACKED_SHARE = 0.75, 0.5

def _scalar_lanes(renderer) -> int: return int(getattr(renderer, "vector_registers", 16) * SCALAR_SHARE)

def _main_inner(ast:UOp) -> UOp|None:
  """the innermost axis of the reduces that are not minor (_minor_reduce): the loop the kernel's work runs in, where the last axis may
  be a minor reduce's (a BatchNorm-fused weight gradient also sums 8 partial statistics after its main reduce; an LSTM's recurrent
  weight gradient sums its first step's zeros)"""
  ax = axes(ast)
  if any(size(r) is None for r in ranges(ast)): return ax[-1] if ax else None  # symbolic trips: no sizes to weigh
  free, work = free_ranges(ast), _chain_trips(ast)
  main = [r for u in ast.toposort() if u.op is Ops.REDUCE and not _minor_reduce(u, free, work) for r in u.src[1:] if r in ax]
  return max(main, key=ax.index) if main else ax[-1] if ax else None

def _packs_reduce(ast:UOp, renderer, vector:int) -> bool:
  """on a target that loop-vectorizes, the main reduce's innermost axis streams whole vectors (every load moving with it at stride 1)
  and is a multiple of two vectors long: its unroll's partial sums pack into vectors"""
  if not getattr(renderer, "loop_vectorizes", False) or not any(r.arg[1] in REDUCE for r in axes(ast)): return False
  return size(inner := _main_inner(ast)) % (2 * vector) == 0 and _streams_vectors(ast, inner)

def _window_axes(ast:UOp, out:list[int]) -> set[int]:
  """the output axes along which some load moving with the main reduce's innermost axis moves by the same step as along a reduce axis
  (a conv's weight gradient: the input at w + kw, h + kh): lanes along them read runs shifted by steps of the reduce"""
  ax, inner = axes(ast), _main_inner(ast)
  red = [r for r in ax if r.arg[1] in REDUCE]
  acc = [a for u in ast.toposort() if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2
         and inner in (a := _Access(u.src[0].src[1], False)).deps]
  return {i for i in out for a in acc if (st := a.stride.get(ax[i])) is not None and any(a.stride.get(r) == st for r in red)}

def _scalar_budget(renderer, vector:int, packs:bool) -> int:
  """lanes x unroll of a tile of scalar lanes (see SCALAR_SHARE): PACKED_SHARE of the registers in vectors where the reduce packs,
  else SCALAR_SHARE of them in scalars"""
  return int(getattr(renderer, "vector_registers", 16) * PACKED_SHARE) * vector if packs else _scalar_lanes(renderer)

def _scalar_lanes_cap(ast:UOp, tile:dict[int, int], renderer, vector:int, packs:bool) -> int|None:
  """the lanes that a reduce's tile of scalar lanes over a reduce streaming vectors is held to, where it has more, on a target that
  loop-vectorizes; else None"""
  if not getattr(renderer, "loop_vectorizes", False) or not _scalar_tile(ast, tile): return None
  if not _streams_vectors(ast, _main_inner(ast)): return None
  cap = _scalar_budget(renderer, vector, packs) // (2 * vector) if packs else _scalar_lanes(renderer)
  return cap if prod(tile.values()) > cap else None

def _counts_in_ints(ast:UOp, r:UOp, renderer) -> bool:
  """an int reduce over r that LLVM's loop vectorizer packs better than unrolled lanes. One whose value depends on r itself, not only
  through addresses (argmax's index pass: max of where(hit, n-i, 0)): it packs such a loop with a vector of the induction variable, which
  its SLP vectorizer does not build from unrolled lanes (per-lane inserts). Argmax's index pass over 16M at 2 threads: unrolled 32
  3.5-3.8 ms, 8 3.1-3.7, not unrolled 2.5-2.8. On a renderer that loop-vectorizes, any: an int add, max or min is a reduction it may
  reorder, and unrolled lanes are separate ones, which it vectorized across the loop's trips with a gather per lane (a top-k step's index
  pass, max of (t == t.max()) * ids over a 32000-long vector under a 16-step mask chain: 1.7k lines of IR grew to 19k, 3.6 s of LLVM)"""
  ints = [u for u in ast.toposort() if u.op is Ops.REDUCE and r in u.src[1:] and dtypes.is_int(u.dtype)]
  return bool(ints) and (getattr(renderer, "loop_vectorizes", False) or any(r in u.src[0].toposort(lambda w: w.op is not Ops.INDEX) for u in ints))

def _streams_vectors(ast:UOp, r:UOp) -> bool:
  """every load that moves with the reduce axis r reads it with stride 1: its lanes become vector loads"""
  moving = [a for u in ast.toposort() if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2
            and r in (a := _Access(u.src[0].src[1], len(u.src) == 3 and not _always(u.src[2]))).deps]
  return bool(moving) and all(r in a.unit for a in moving)

def _elementwise_tile_axes(ast:UOp, out:list[int]) -> list[int]:
  """the output axes a kernel without a reduction may tile: an axis its store walks with stride 1, or one at least half of its loads
  don't depend on (a broadcast input, loaded once for all lanes), or one every load that depends on it walks with stride 1 (a
  transpose: its loads become vectors; a conv's channels-last buffer read back as NCHW, one thread: 2.4 -> 1.2 ms). Otherwise each
  lane is one more stream through every buffer and the lanes share nothing worth it: conv1's pool backward (5 buffers) tiled 8
  channels wide for its one channels-last input ran 4x slower than untiled, tiled 8 images wide (sharing only the bias) 8x. Never an
  axis that a load with no stride-1 axis of its own reads a cache line or more apart per step: its lanes can never share a vector load,
  each is a load and an insert (conv-1's pool backward written channels-last, its NCHW pool gradient read across 8 channels: 3-3.8 ms,
  untiled 1.8-2.0, 1 thread)"""
  ax = axes(ast)
  loads = [u for u in ast.toposort() if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2]
  strided = {r for u in ast.toposort() if u.op is Ops.STORE and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2
             for r in _Access(u.src[0].src[1], False).strided}
  acc = [_Access(u.src[0].src[1], False) for u in loads]
  # a load whose gate moves along r is not shared by r's lanes: each lane picks it or not (a stack's inputs, each read where its gate
  # holds along the new axis: tiled 3 wide there, every lane did all 33 gated loads of a stack of 33)
  gates = [{g for g in u.src[2].toposort() if g.op is Ops.RANGE} if len(u.src) == 3 else set() for u in loads]
  def shared(r:UOp) -> int: return sum(1 for a, g in zip(acc, gates) if r not in a.deps and r not in g)
  def transposed(r:UOp) -> bool: return any(r in a.unit for a in acc) and all(r in a.unit for a in acc if r in a.deps)
  def gathered(r:UOp) -> bool: return any(a.stride.get(r, 0) >= LINE_FLOATS and not a.unit for a in acc)
  # most loads gated along r by gates of their own: the pieces of a cat along r, every lane of which would evaluate every piece's gated
  # loads (an LSTM gradient's 4 gates' pieces along the hidden axis, 29 loads: 8 lanes 21 us and 1 s of LLVM, untiled 8 us and 0.1 s).
  # Each piece is a run along r (its load walks r with stride 1), unlike an interleave's (a stack flattened: lanes of a pair pick a
  # piece each, a constant gate once upcast). One pad's gate is no cat (a padded copy's 2 lanes: 0.37 against 1.3 ms untiled)
  def pieces(r:UOp) -> bool:
    along = [u.src[2] for u, a, g in zip(loads, acc, gates) if r in g and r in a.unit]
    return 2 * len(along) > len(loads) and len(set(along)) > 1
  return [i for i in out if not gathered(ax[i]) and not pieces(ax[i]) and (ax[i] not in strided or 2 * shared(ax[i]) >= len(loads) or transposed(ax[i]))]

def transpose_tile(ast:UOp, out:list[int]) -> dict[int, int]:
  """{output axis: upcast amount} for a transposing copy: an output axis every load that depends on it reads with stride 1 and the store
  with a stride (a channels-last buffer read back as NCHW, x.T): a whole cache line of it, and 2 along the axis the store walks with
  stride 1, which the loads read with a stride. Then each line read is used whole before it leaves the cache, and LLVM's loop vectorizer
  packs the store loop's trips into vector stores of gathered lanes. The load-sharing tile (8 along the store, 4 along the loads) reads a
  quarter of each line per pass (one thread, CPU time, bench/transpose_copy.py: 2048x2048 8.7 -> 3.7 ms, the conv's (8, 56, 56, 64) ->
  NCHW 1.6 -> 0.79 ms; at two threads 4 along the store was level with 2 or slower, 8 slower, 1 about half as fast). {} when the kernel
  is no such copy"""
  ax = axes(ast)
  loads = [_Access(u.src[0].src[1], False, u.src[0].src[0].dtype.itemsize) for u in ast.toposort()
           if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2]
  stores = [_Access(u.src[0].src[1], False) for u in ast.toposort() if u.op is Ops.STORE and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2]
  if not loads or len(stores) != 1: return {}
  st = stores[0]
  line = [i for i in out if ax[i] in st.strided and any(ax[i] in a.unit for a in loads) and all(ax[i] in a.unit for a in loads if ax[i] in a.deps)]
  along = [i for i in out if ax[i] in st.unit and any(ax[i] in a.strided for a in loads)]
  if not line or not along: return {}
  lanes = min(WIDE, CACHE_LINE // max(a.itemsize for a in loads))
  # a line axis shorter than a quarter line is taken whole: the stride's phases of a strided conv's input rows, written side by side
  # (tensor_conv._phase_windows: b8 32x112x112 stride 2, 1.8 -> 1.0 ms with rows of phases apart), each lane a phase read from one line
  n = size(ax[line[-1]])
  # an axis that no part of a line divides takes a whole line padded up (the caller's PADTO), where that adds at most PAD_ROW of work and
  # the store's rows along it start a whole number of cache lines apart (untiled, its stores crowd a few cache sets: x.T of 4096x4095 at
  # 2 threads, the kernel 54 -> 32 ms; with rows of 4095 untiled was faster, 4095x4097 medians of alternating runs 12-21 against 17-33),
  # and an odd store axis of WIDE or more its 2 padded: with one lane along the store each trip wrote 16 rows an element each (x.T of
  # 4095x4096 30 -> 15.5 ms)
  pad = st.stride.get(ax[line[-1]], 0) % LINE_FLOATS == 0 and -(-n // lanes) * lanes <= PAD_ROW * n
  amt = next((a for a in (lanes, lanes // 2, lanes // 4) if a > 1 and n % a == 0), n if 1 < n < lanes // 4 else lanes if pad else None)
  if amt is None: return {}
  return {line[-1]: amt} | ({along[-1]: 2} if size(ax[along[-1]]) % 2 == 0 or size(ax[along[-1]]) >= WIDE else {})

def aligned_vector_tile(ast:UOp, out:list[int], vector:int) -> dict[int, int]:
  """{output axis: vector} for a kernel without a reduce whose store walks an axis with stride 1 that vector does not divide (a flat
  buffer of 2^24-1), where every access that walks it with stride 1 moves by whole vectors along every other axis: the axis is padded to
  whole vectors (the caller's PADTO, its last trip's gated lanes peeled off, opt/peel.py), so that every trip and every thread's share
  starts on a vector boundary. Untiled, the scalar loop's shares started off it, and LLVM's loop vectorizer packed it into vectors each
  split across cache lines (x + y over 2^24-1 at 2 threads, the kernel: 7.4 -> 5.3 ms; 2^24: 4.6). {} where there is no such axis (a
  row of 4095 starts off a vector however it is split)"""
  ax, acc, stored = axes(ast), _accesses(ast)[0], stored_unit(ast)
  for i in reversed(out):
    if (r := ax[i]) not in stored or size(r) % vector == 0 or size(r) < 16 * vector: continue
    walking = [a for a in acc if r in a.unit]
    if all(not a.deps - a.stride.keys() and all(m % vector == 0 for q, m in a.stride.items() if q is not r) for a in walking): return {i: vector}
  return {}

_INT_DIVISIONS = frozenset({Ops.CDIV, Ops.CMOD, Ops.FLOORDIV, Ops.FLOORMOD})

def _divided_lanes(ast:UOp, tile:dict[int, int]) -> dict[int, int]:
  """{axis: its whole size} for each axis of at most WIDE that a load's address divides or takes a remainder of, where the tile takes it
  in part or the store walks it with stride 1: an im2col panel copy's lanes (k = 16 * panel + lane, split into a channel and its 3x3
  taps), an NCHW pool gradient's row (the pooled one read at w // 2). Taken whole, that address math is constants and terms of the loops
  around the tile, which LLVM hoists out of the loops inside it; in part or untiled, each element divides again (a conv 32->64 weight
  gradient's panel copy (18, 7744, 16), 8 lanes 3.0 ms, 16 1.2; MNIST's pool gradient (64, 64, 11, 11), untiled 0.65, 11 lanes 0.16;
  both at 2 threads)"""
  ax, divided = axes(ast), set()
  for u in ast.toposort():
    if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX:
      divided |= {r for d in u.src[0].src[1].toposort() if d.op in _INT_DIVISIONS for r in d.toposort() if r.op is Ops.RANGE}
  if not divided: return {}
  stored = stored_unit(ast)
  return {i: size(r) for i, r in enumerate(ax) if r in divided and tile.get(i, 0) < size(r) <= WIDE and (i in tile or r in stored)}

def _per_lane(acc:list[_Access], tile:dict[UOp, int], vector:int, along:set[UOp]|None=None, lines:bool=False) -> float:
  return sum(a.cost(tile, vector, along) + (a.lines(tile) if lines else 0) for a in acc) / prod(tile.values())

def _reduce_strided(ast:UOp) -> bool:
  """the kernel reduces, and no load walks a reduce axis with stride 1: its reduce loop steps over rows (a column sum), so the lanes of
  the output axes are the only independent accumulators it has"""
  red = {r for r in ranges(ast) if r.arg[1] in REDUCE}
  moving = [a for a in _accesses(ast)[0] if a.deps & red]
  return bool(moving) and not any(a.unit & red for a in moving)

# a reduce's stored stride-1 axis that WIDE does not divide is padded up to a multiple of it where that adds at most this share of work:
# its lanes are then whole vectors (an axis of 16 or more runs its last vector shifted back over the one before, OVERLAP; a shorter one's
# padded lanes' stores are gated, opt/peel.py runs the ungated trips apart), where a tile that divides
# it loads and stores pieces (a depthwise 3x3 conv's rows of 28 as 7 x 4 lanes: b8 256x28x28, one thread, 0.66 -> 0.42 ms as 2 x 16). An
# axis shorter than WIDE too: a row of 14 as one vector of 16 instead of 7 lanes, whose tile then took 4 images, a load stream each (b8
# 512x14x14 3x3 at 2 threads, the pad copy and the conv: 0.78 -> 0.48 ms)
PAD_WIDE = 1.25
# a reduce's axis that some load walks with stride 1 (a direct conv's pixels, broadcast to its lanes from one cache line) and that no
# upcast amount divides (a row of 29: a strided conv_transpose's phases) is padded up to a multiple of the amount where that adds at most
# this share of work: else its tile falls back to lanes whose loads lie a whole image apart (the kernel alone at 2 threads: b8 64->32 28x28
# 4x4 stride 2's phase conv, 8 panels x 2 images 3.1 ms, 16 pixels padded to 32 1.7 ms; b8 96->256 55x55 5x5, 263 -> 146 ms)
PAD_ROW = 1.125

def _stored_bytes(ast:UOp) -> int:
  """the size of the largest buffer the kernel stores to"""
  return max((prod(b.arg.shape) * b.dtype.itemsize for u in ast.toposort() if u.op is Ops.STORE and u.src[0].op is Ops.INDEX
              and (b := u.src[0].src[0]).op is Ops.PARAM and isinstance(b.arg.shape, tuple) and all_int(b.arg.shape)), default=0)

def _padded(r:UOp, amt:int, reduces:bool, stored:set[UOp], unit:set[UOp]) -> float|None:
  """padded size / size where an upcast of r by amt pads it (see PAD_WIDE, PAD_ROW), else None"""
  if not reduces: return None
  waste = -(-size(r) // amt) * amt / size(r)
  if amt == WIDE and r in stored: return waste if waste <= PAD_WIDE else None
  if size(r) < amt: return None
  if r in unit and not any(size(r) % a == 0 for a in UPCAST_AMTS): return waste if waste <= PAD_ROW else None
  return None

def register_tile(ast:UOp, out:list[int], simd:SimdTiles, streaming:bool=False, shifted:bool=False) -> dict[int, int]:
  """{output axis: upcast amount}, greedy: each step takes the upcast that lowers the loads per lane the most, at most simd.tile
  lanes (simd.wide with a WIDE stride-1 axis, simd.streaming when its panel streams). Lanes that read the same address share the load
  (a matmul's A row across the lanes of j, B across i; a conv's input across output channels, its weight across pixels); lanes along a
  stride-1 axis share vector loads (in a reduce, once the tile holds the store's stride-1 axis, only along it). A reduce also counts the
  cache lines its lanes touch per step: a direct conv's pixels are broadcasts from one line, its weight panels a line each from a weight
  past L1 (b8 256->256 14x14 3x3: 2 pixels x 8 panels 21.1 ms, 7 pixels x 2 panels 12.0 ms, at 2 threads). On a tie the smaller
  tile wins, except in a reduce that steps over rows (_reduce_strided): there a WIDE tile is two vector chains instead of one and a
  whole cache line per row (4096x4096 sum(0), one thread: 8 lanes 20.3 ms, 16 lanes 7.2 ms, 32 8.3 ms; row_run then widens it)"""
  ax, (acc, unit) = axes(ast), _accesses(ast, shifted)
  if not acc: return {}
  tile = _shared_whole_axis(ast, out, acc, simd.wide)
  # on a tie the axis the store walks with stride 1 goes first: LLVM's SLP vectorizer builds its vectors from consecutive stores, so the
  # tile's vectors follow the store (linear 1600->128's weight gradient, both loads stride 1: 16 lanes along the store 2x faster)
  stored = stored_unit(ast)
  # then one some load walks with stride 1: lanes broadcast from one cache line (a conv's neighbouring pixels) before lanes from as many
  # lines (its images: b8 64->64 56x56, 2 panels x 8 pixels 4.2 ms, x 8 images 5.4); then the axis whose loads lie closest together: a 1x1
  # conv's output channels (weight rows 64 floats apart, in L1) before its images (a whole image apart, a stream each: 8 images x 16 pixels
  # 8.9 ms, 8 channels x 2 x 16 pixels 2.2 ms, b8 64->64 56x56 at 2 threads)
  out = sorted(out, key=lambda i: (ax[i] not in stored, ax[i] not in unit, max((a.stride.get(ax[i], 0) for a in acc), default=0)))
  wide_on_tie, reduces = _reduce_strided(ast), any(u.op is Ops.REDUCE for u in ast.toposort())
  start = dict(tile)
  while True:
    # a reduce's tile vectors follow its store once the tile holds an axis the store walks (a copy's lanes are laid out by transpose_tile
    # and LLVM's loop vectorizer instead)
    along = (stored & {ax[i] for i in tile} or None) if reduces else None
    best, cur = None, _per_lane(acc, {ax[i]: a for i, a in tile.items()}, simd.vector, along, reduces)
    for i in out:
      if i in tile: continue
      for amt in UPCAST_AMTS:
        if amt == WIDE and ax[i] not in unit: continue
        limit = (simd.streaming if streaming else simd.wide) if WIDE in tile.values() or amt == WIDE else simd.tile
        if (size(ax[i]) % amt and not (waste := _padded(ax[i], amt, reduces, stored, unit))) or prod(tile.values()) * amt > limit: continue
        c = _per_lane(acc, {ax[j]: a for j, a in (tile | {i: amt}).items()}, simd.vector, along, reduces)
        if size(ax[i]) % amt: c *= waste
        if c < cur - 1e-9 and (best is None or c < best[0] - 1e-9 or (wide_on_tie and amt == WIDE != best[2] and c < best[0] + 1e-9)): best = (c, i, amt)
    if best is None: return tile if WIDE in tile.values() or not reduces else _narrow_tile(ast, out, acc, unit, stored, simd, start, tile)
    tile[best[1]] = best[2]

def _narrow_tile(ast:UOp, out:list[int], acc:list[_Access], unit:set[UOp], stored:set[UOp], simd:SimdTiles, start:dict[int, int],
                 greedy:dict[int, int]) -> dict[int, int]:
  """a reduce's tile of narrow vectors (no WIDE axis: rows of 8 pixels or fewer): of all tiles within simd.tile lanes that keep the
  greedy tile's vectors, the one with the fewest loads per lane (the greedy one where none loads less). One upcast at a time, the
  greedy's first step takes the pixels' rows, which then leaves no room for the output channels that share them (1x128x8x8 -> 128
  3x3: 8x4 pixels, 4 vectors of 8 lanes, where 8x2 pixels x 2 channels load a fifth less; the kernel alone at 2 threads 0.25 -> 0.14
  ms, 1x256x4x4 -> 256 0.20 -> 0.15 ms). Only for narrow tiles: among WIDE ones the greedy's tiles measured level or better (a padded
  row of 14 or 30 and a row upcast beside it built its vectors from pieces: b8 32->32 14x14 0.27 -> 0.45 ms)"""
  ax = axes(ast)
  # the greedy's vectors along the store's rows are kept: the search is over what shares them. A tile of scalar lanes (a weight
  # gradient's 3 taps) measured slower so (b64 16->32 4x4's weight gradient: 0.36 -> 0.39 ms)
  if (vec := next((i for i, a in greedy.items() if ax[i] in stored and ax[i] in unit and a > 1 and a & (a - 1) == 0), None)) is None: return greedy
  start = start | {vec: greedy[vec]}
  def cost(tile:dict[int, int]) -> float:
    waste = prod(_padded(ax[i], a, True, stored, unit) or 1.0 for i, a in tile.items() if size(ax[i]) % a)
    return _per_lane(acc, {ax[i]: a for i, a in tile.items()}, simd.vector, stored & {ax[i] for i in tile} or None, True) * waste
  def amounts(i:int) -> list[int]:
    return [a for a in UPCAST_AMTS if a != WIDE and (size(ax[i]) % a == 0 or _padded(ax[i], a, True, stored, unit))]
  def tiles(free:list[int], tile:dict[int, int]):
    if not free: yield tile; return
    yield from tiles(free[1:], tile)
    for a in amounts(free[0]):
      if prod(tile.values()) * a <= simd.tile: yield from tiles(free[1:], tile | {free[0]: a})
  # fewest loads per lane, then fewest lanes, then (any fixed order) the larger amounts on the axes first in `out`
  best = min(tiles([i for i in out if i not in start], start), key=lambda t: (round(cost(t), 9), prod(t.values()), [-t.get(i, 0) for i in out]))
  return best if cost(best) < cost(greedy) - 1e-9 else greedy

def _shared_whole_axis(ast:UOp, out:list[int], acc:list[_Access], lanes:int) -> dict[int, int]:
  """{axis: its size} for the innermost output axis shorter than WIDE, of a size the tile takes (UPCAST_AMTS), that the reduce's largest
  load does not depend on (a direct conv's 3 output channels beside its input's windows), where the tile still has room for a WIDE
  vector beside it (`lanes`), else {}. Taken whole first, its lanes share every load of that operand: the greedy's first step, by the
  loads per lane, took that operand's own rows instead and then had no room for the axis (b8 64->3 56x56 3x3, one thread: 16 pixels x
  4 rows 1.9-2.4 ms, 16 pixels x 3 channels 1.2-1.7). Not in a kernel that reads a packed panel, whose tile wide_panel_tile lays out"""
  if not any(u.op is Ops.REDUCE for u in ast.toposort()) or _packed_panel(ast) is not None: return {}
  ax, largest = axes(ast), max(acc, key=lambda a: prod(size(r) for r in a.deps))
  small = [i for i in out if ax[i] not in largest.deps and size(ax[i]) < WIDE and size(ax[i]) in UPCAST_AMTS and size(ax[i]) * WIDE <= lanes]
  return {small[-1]: size(ax[small[-1]])} if small else {}

def _contiguous_panel(a:_Access, red:set[UOp]) -> bool:
  """the load reads an output axis with stride 1 and steps the reduce by at most WIDE: its panel's rows lie next to each other (a
  panel-major copy, schedule/pack.py), which the hardware prefetchers stream"""
  return any(r.arg[1] not in REDUCE for r in a.unit) and min((a.stride.get(r, 0) for r in a.strided & red), default=0) <= WIDE

def _packed_panel(ast:UOp) -> _Access|None:
  """the load that reads a panel-major copy (schedule/pack.py): a WIDE output axis at stride 1 and the reduce in steps of exactly WIDE"""
  red = {r for r in ranges(ast) if r.arg[1] in REDUCE}
  return next((a for a in _accesses(ast)[0] if a.strided & red and min(a.stride[r] for r in a.strided & red) == WIDE and
               any(r.arg[1] not in REDUCE and size(r) == WIDE for r in a.unit)), None)

def reads_packed_panel(ast:UOp) -> bool: return _packed_panel(ast) is not None

def whole_vector_tile(ast:UOp) -> bool:
  """the kernel reads a packed panel, or reduces into accumulators that are whole vectors: WIDE lanes of the reduce's value that its
  store and a load walk with stride 1 (a direct conv of too few output channels to pack, its vectors along the output's rows: b8 64->10
  56x56 3x3)"""
  if reads_packed_panel(ast): return True
  lanes = {r for r in stored_unit(ast) if r.arg[1] is AxisType.UPCAST and size(r) == WIDE}
  summed = {r for u in ast.toposort() if u.op is Ops.REDUCE for r in u.src[0].toposort() if r in lanes}
  return any(summed & a.unit for a in _accesses(ast)[0])

def panel_streams(ast:UOp) -> bool:
  """some load walks its reduce axes with a stride over more than L1 holds for a WIDE tile (matmul's B panel at K past 512 floats), and
  its panel's rows are apart in memory. Only a load that may be the tile's WIDE operand counts (stride 1 along an output axis that WIDE
  divides, or an address it can't read): a conv's input read along its rows of 56 is broadcast across the output channels, and 16x8
  spills there for nothing. Nor where the kernel reads a packed panel: that is the WIDE operand, read in order, and every other load is
  broadcast across its lanes (conv1d b8 256->256 1024 k3, its input rows of 1024: 8 pixels x 16 channels, 16 accumulators of AVX2's 16
  registers, spilled; 4 x 16 at 2 threads 35.9 -> 24.1 ms; b8 64->64 64x64 3x3 29.9 -> 13.8)"""
  if _packed_panel(ast) is not None: return False
  red = {r for r in ranges(ast) if r.arg[1] in REDUCE}
  return any(a.strided & red and prod(size(r) for r in red if r in a.deps) * WIDE * a.itemsize > L1_BYTES and not _contiguous_panel(a, red)
             and (a.deps - a.stride.keys() or any(r.arg[1] not in REDUCE and size(r) % WIDE == 0 for r in a.unit)) for a in _accesses(ast)[0])

# a packed panel's tile on a target with registers for 24 accumulators: 4 panels x 6 rows or 3 panels x 8, 10 or 11 loads per 24 FMAs
# (8 rows x 2 panels: 10 per 16), each axis padded up where the tile does not divide it (PADTO reads the padded rows at the last one, no
# gate in the loop; the padded panels' gated stores are peeled off the loop, opt/peel.py). AVX-512 at 2 threads, the kernel alone
# (bench/matmul_tiles.py): 1536 401 -> 437, 3072 412 -> 432 GFLOP/s; padded, 1024 403 -> 440, 2048 397 -> 440
PANEL_TILES = ((6, 4), (8, 3))  # (rows, panels): on equal padded work the first
# a tile's speed beside one of 24 accumulators, by its accumulators (the kernel alone at 2 threads: 8x2 0.92 of 6x4 at 1024, level with
# 8x3 on 34 panels padded to 36; 8x1 0.77 of 8x3 at 1000): a padded tile must save more than this on the tile that divides the axes
def _tile_speed(acc:int) -> float: return 1.0 if acc >= 24 else 0.95 if acc >= 16 else 0.75

def value_nodes(ast:UOp) -> int:
  """the AST's nodes without its addresses' math, for a panel tile's code budget: every lane's address is the first lane's plus a
  constant, while the AST spells out each axis's index (a batched matmul's heads: 48 nodes against a matmul's 30, which kept the heads'
  q @ k.T at 8 rows x 2 panels)"""
  return len(ast.toposort(lambda u: u.op is not Ops.INDEX))

def wide_panel_tile(ast:UOp, tile:dict[int, int], simd:SimdTiles, tile_lanes:int) -> dict[int, int]:
  """{rows axis: R, panels axis: P, WIDE axis: 16} of PANEL_TILES for the tile register_tile chose from a packed panel, where the
  registers, the renderer's compiler (Renderer.tile_lanes) and the code budget allow it and its padded work, at full speed, costs less
  than the chosen tile's at _tile_speed (matmul 1000 at 2 threads, the kernel alone: 8x1 on 63 panels 6.8 ms, 8x3 5.2; 1001: 1x3, 8x3
  with its rows padded to 1008)"""
  ax, limit = axes(ast), min(simd.streaming, tile_lanes, CODE_BUDGET // value_nodes(ast))
  if WIDE not in tile.values() or (b := _packed_panel(ast)) is None: return tile
  # the WIDE axis is the panel's stride-1 one (a tile may hold 16 rows too); a batch axis (every load reads along it: a batched matmul's
  # heads) is neither the rows nor the panels, each step of it is a matmul of its own
  acc = _accesses(ast)[0]
  out = [i for i, r in enumerate(ax) if r.arg[1] is AxisType.LOOP and not (tile.get(i) == WIDE and r in b.unit) and not all(r in a.deps for a in acc)]
  panels, rows = [i for i in out if ax[i] in b.deps], [i for i in out if ax[i] not in b.deps]
  if len(panels) != 1 or len(rows) != 1: return tile
  (p,), (r,) = panels, rows
  def padded(i:int, amt:int) -> int|None: return n if (n := -(-size(ax[i]) // amt) * amt) <= 2 * size(ax[i]) else None
  best, cost = tile, size(ax[r]) * size(ax[p]) / _tile_speed(prod(tile.values()) // WIDE)
  for rows_amt, panels_amt in PANEL_TILES:
    if rows_amt * panels_amt * WIDE > limit or (pr := padded(r, rows_amt)) is None or (pp := padded(p, panels_amt)) is None: continue
    if pr * pp < cost - 1e-9: best, cost = {i: a for i, a in tile.items() if i not in (r, p)} | {r: rows_amt, p: panels_amt}, pr * pp
  return best

def _footprint(a:_Access, inner:set[UOp]) -> int:
  """bytes the access touches over the ranges `inner` (the others held): its ranges by stride, each one either extends the contiguous
  block so far (its stride within the block: a conv's pixels and taps, a row and the next) or repeats the block (a channel apart)"""
  block, copies = 1, 1
  for r, m in sorted(((r, m) for r, m in a.stride.items() if r in inner and size(r) > 1), key=lambda rm: rm[1]):
    if m <= block: block += m * (size(r) - 1)
    else: copies *= size(r)
  return block * copies * a.itemsize

def panel_swap(ast:UOp) -> Opt|None:
  """a load that walks its reduce axes with a stride reads a panel (reduce size x its tile lanes) per tile; bigger than L1, it is only
  still in cache for the next tile if that tile reads the same panel: then the output axis it does not depend on goes innermost
  (matmul: B's column panel is shared by the row tiles, so the rows loop inside the columns). Where the whole operand is past L2, its
  panel loop goes outside every loop that does not read it, so that each panel is read once per share, not once per row (a direct conv's
  weight, b8 256->256 14x14 3x3, 2.4 MB: the kernel 6.4 -> 5.2 ms; b8 512->512 7x7, 9.4 MB: 6.0 -> 5.4 ms). No swap where the operand
  fits in L2 but the other loads over the loop moved inside, beside its panel, do not: they would come from past L2 once per panel, where
  the operand's panels come from L2 (conv1d b8 256->256 1024 k3: the input, 1 MB an image, re-read per panel: 25.8 -> 20.0 ms, one
  thread)"""
  ax = axes(ast)
  out = [i for i, r in enumerate(ax) if r.arg[1] is AxisType.LOOP and size(r) > 1]
  red = [r for r in ranges(ast) if r.arg[1] in REDUCE]
  tile = [r for r in ranges(ast) if r.arg[1] is AxisType.UPCAST]
  if len(out) < 2 or not red: return None
  acc = _accesses(ast)[0]
  for a in acc:
    if not a.strided & set(red): continue
    panel = prod(size(r) for r in red if r in a.deps) * prod(size(r) for r in tile if r in a.deps) * a.itemsize
    free = [i for i in out if ax[i] not in a.deps]
    whole = prod(size(r) for r in ranges(ast) if r in a.deps) * a.itemsize
    if panel > L1_BYTES and free and out[-1] not in free:
      if whole > L2_BYTES: return Opt(OptOps.SWAP, free[0], out[-1])
      inner = set(ranges(ast)) - {ax[i] for i in out if i < free[-1]} - {r for r in ranges(ast) if r.arg[1] is AxisType.THREAD}
      if panel + sum(_footprint(b, inner) for b in acc if b is not a and ax[free[-1]] in b.deps) > L2_BYTES: return None
      return Opt(OptOps.SWAP, free[-1], out[-1])
  return None

def copy_swap(ast:UOp) -> Opt|None:
  """a block copy (no reduce, its tile whole axes, as pack.py's panels) walks its innermost loop along the axis its loads read with the
  smallest stride: a load stream is what the hardware prefetchers follow, while each store writes its lanes whole. The panel copy of a
  1024x1024 B read a row apart per step (0.68 ms at 2 threads with 8 lanes, 0.48 with 16); walking B's rows, 0.34"""
  ax = axes(ast)
  out = [i for i, r in enumerate(ax) if r.arg[1] is AxisType.LOOP and size(r) > 1]
  if len(out) < 2: return None
  loads = [a for u in ast.toposort() if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2
           and (a := _Access(u.src[0].src[1], False)).stride]
  def widest(i:int) -> int: return max((a.stride.get(ax[i], 0) for a in loads), default=0)
  best = min(out, key=lambda i: (widest(i), -i))
  return Opt(OptOps.SWAP, best, out[-1]) if loads and best != out[-1] and widest(best) < widest(out[-1]) else None

def _trips(u:UOp, free:dict[UOp, frozenset]) -> int:
  """loop trips of one REDUCE or END's body: the ranges its body depends on and the ones it closes"""
  return prod(size(r) for r in free[u.src[0]] | set(u.src[1:]) if r.op is Ops.RANGE)

def _minor_reduce(u:UOp, free:dict[UOp, frozenset], work:int) -> bool:
  """a REDUCE of a row chain small beside the kernel (argmax's index pass over a split reduce re-reads the max of 256 partials, in a
  kernel of 16M trips): every thread's share may redo it, and it is not unrolled (its 32 lanes made that index pass 1.4x slower: 2.7-2.9
  against 4.0-4.2 ms at 2 threads)"""
  return u.op is Ops.REDUCE and _trips(u, free) * MINOR_REDUCE <= work

def _innermost_reduce_axes(ast:UOp, red:list[int]) -> list[int]:
  """of the reduce axes `red` (indices into axes(ast)), the innermost one of each REDUCE"""
  ax = axes(ast)
  last = {max(ax.index(r) for r in u.src[1:] if r in ax) for u in ast.toposort() if u.op is Ops.REDUCE and any(r in ax for r in u.src[1:])}
  return [i for i in red if i in last]

def _unroll_padding(n:int, amts:tuple[int, ...]) -> int|None:
  """the unroll amount a reduce of n trips is padded up to: where no amount of 4 or more divides n, the widest one that adds at most
  PAD_ROW of trips and is not n's divisor already"""
  if any(n % a == 0 for a in amts if a >= 4): return None
  pad = next((a for a in amts if a <= min(n, MAX_UNROLL) and -(-n // a) * a <= PAD_ROW * n), None)
  return pad if pad and n % pad else None

def _only_adds(ast:UOp, r:UOp) -> bool:
  """every REDUCE over the range r sums"""
  return bool(reds := [u for u in ast.toposort() if u.op is Ops.REDUCE and r in u.src[1:]]) and all(u.arg is Ops.ADD for u in reds)

def _only_minor(ast:UOp, r:UOp, work:int) -> bool:
  """every REDUCE over the range r is minor"""
  free = free_ranges(ast)
  return bool(reds := [u for u in ast.toposort() if u.op is Ops.REDUCE and r in u.src[1:]]) and all(_minor_reduce(u, free, work) for u in reds)

def _encloses_loops(ast:UOp, r:UOp) -> bool:
  """some REDUCE over r holds in its body a reduce that still loops: r's loop runs around that one (a loss's mean over the rows of a
  logsumexp), and an unroll of r copies the inner loops per lane. The cross-entropy of 256 x 1000, the inner loops unrolled 8 and the
  rows 8 on top: 3.6k ops, 1.3 s to lower and compile, 0.19 ms; the rows not unrolled: 0.5k ops, 0.2 s, 0.14 ms"""
  free = free_ranges(ast)  # a reduce in the body that does not depend on r runs before r's loop (softmax's max before its sum)
  return any(u.op is Ops.REDUCE and r in u.src[1:] and any(w.op is Ops.REDUCE and r in free[w] and any(s.op is Ops.RANGE for s in w.src[1:])
                                                           for w in u.src[0].toposort()) for u in ast.toposort())

def _chain_trips(ast:UOp) -> int:
  """loop trips of a kernel whose loops run one after another (a row chain's, several reduces summed): the trips of each loop body add
  up, where the product of every axis would count each reduce once per trip of the others"""
  free = free_ranges(ast)
  return sum(_trips(u, free) for u in ast.toposort() if u.op in (Ops.REDUCE, Ops.END))

def _read_once(a:_Access) -> bool:
  """the access's address is linear and no two values of its ranges give the same element (each stride at least the span of the smaller
  ones): a matrix read once, not a conv's input read as overlapping windows (w + kw)"""
  if a.deps - a.stride.keys(): return False
  span = 1
  for r, st in sorted(a.stride.items(), key=lambda x: x[1]):
    if st < span: return False
    span = st * size(r)
  return True

GEMV_RUN = 256  # lanes of a matrix row read per step of a vecmat's reduce (gemv_upcasts), at most simd.wide: 16 cache lines of float32

FEW_ROWS = 8  # rows of x @ w.T upcast whole (gemv_upcasts), each one a vector accumulator beside a vector of w: 8 of 16 zmm registers

def _few_rows(ax:list[UOp], out:list[int], outs:set[UOp], moving:list[_Access], red:set[UOp]) -> int|None:
  """the output axis of at most FEW_ROWS rows that one load, a matrix past L2 read once and along the innermost reduce with stride 1
  in whole vectors, misses and every other load that moves with the reduce reads (x of x @ w.T, w being the matrix)"""
  inner = next(r for r in reversed(ax) if r in red)
  for i in out:
    if not 1 < size(ax[i]) <= FEW_ROWS: continue
    if len(m := [a for a in moving if outs - {ax[i]} <= a.deps and ax[i] not in a.deps and _read_once(a)]) == 1 and \
       all(ax[i] in a.deps for a in moving if a is not m[0]) and inner in m[0].unit and size(inner) % WIDE == 0 and \
       prod(size(r) for r in m[0].deps) * m[0].itemsize > L2_BYTES: return i
  return None

def gemv_upcasts(ast:UOp, out:list[int], simd:SimdTiles, shares:int) -> list[tuple[int, int]]|None:
  """the upcasts (axis, amount), in order, of a matrix-vector product (M @ v, v @ M, a linear layer on one row; on a few rows see
  _few_rows): one load, the matrix, depends on every output axis and moves with the reduce, each element read once; each other load that
  moves with it (the vector) misses some output axis. The kernel is bound by reading the matrix, and a register tile only saves loads of
  the vector, which stay in cache.
  Where the matrix walks the innermost reduce with stride 1 (M @ v): no upcast, so that the reduce's unroll reads each row as whole
  vectors; a tile of 16 rows read them as a gather per step (512x512, one thread: 46 -> 13 us; 1024x1024 at 2 threads 0.23 -> 0.14 ms;
  at 4096x4096, past the caches, a single row stream per core was no faster on a host loaded by others). Where it walks an output axis
  with stride 1 (v @ M): that axis WIDE, then again up to GEMV_RUN lanes, at most simd.wide accumulators (half the registers), leaving
  `shares` tiles for the thread split, so that each step of the reduce, a row further on, reads a run of cache lines and not one: at a
  row of 4 KB or more every step is a new page, where the hardware prefetchers stop (at 2 threads on a loaded host, 4096x4096: 40-48 ->
  14-15 ms, 2048x2048: 1.8 -> 0.8 ms; 512x512, one thread: 17 -> 10 us). None where the kernel is no such product"""
  ax, red = axes(ast), {r for r in ranges(ast) if r.arg[1] in REDUCE}
  outs = {ax[i] for i in out if size(ax[i]) > 1}
  moving = [_Access(u.src[0].src[1], len(u.src) == 3 and not _always(u.src[2]), u.src[0].src[0].dtype.itemsize) for u in ast.toposort()
            if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2 and red & {r for r in u.src[0].src[1].toposort()}]
  matrix = [a for a in moving if outs <= a.deps and _read_once(a)]
  if not matrix and (few := _few_rows(ax, out, outs, moving, red)) is not None:
    # a linear layer on a few rows (x @ w.T) whose weight streams past L2: the rows' axis upcast whole shares each vector of the weight's
    # row among them, and the reduce's unroll reads that row as whole vectors. A tile of 16 columns x the rows read the weight as a gather
    # of 16 rows per step (4096x4096 at 2 threads, the kernel alone: 4 rows 8.5 -> 3.0 ms, 8 rows 14.7 -> 5.7; 8 x 1024x1024 2.5 -> 0.5;
    # in L2, 3 x 512x512, the gather's lines stay in cache: 32 against 40 us)
    return None if (g := gemv_upcasts(ast, [i for i in out if i != few], simd, shares)) is None or g else [(few, size(ax[few]))]
  if not outs or len(matrix) != 1 or len(moving) < 2 or any(not (outs - a.deps) for a in moving if a is not matrix[0]): return None
  inner = next(r for r in reversed(ax) if r in red)
  # rows shorter than a vector (a depthwise conv's 9 taps) give the unroll no vector loads: the tile's shared loads count there
  if inner in matrix[0].unit: return [] if size(inner) >= WIDE else None
  if len(along := [i for i in out if ax[i] in matrix[0].unit]) != 1 or size(ax[j := along[0]]) % WIDE: return None
  run = next((amt for amt in (16, 8, 4, 2) if amt * WIDE <= min(GEMV_RUN, simd.wide) and size(ax[j]) % (WIDE * amt) == 0
               and size(ax[j]) // (WIDE * amt) >= shares), 1)
  return [(j, WIDE)] + ([(j, run)] if run > 1 else [])

def row_run(ast:UOp, tile:dict[int, int], simd:SimdTiles, shares:int, half_registers:int) -> tuple[int, int]|None:
  """(axis, amount) of a second upcast of a one-axis WIDE tile, for a reduce that steps over rows (a column sum, a vector-matrix product):
  every load that depends on that axis walks it with stride 1 and the reduce with a stride (the others, v[k] of v @ a, are one broadcast
  per row): each row visit then reads a run of cache lines, where one line a visit, a row apart, is a stream the hardware prefetchers do
  not follow. Up to simd.wide lanes and `half_registers` bytes weighed by _run_lane_bytes (1: no second upcast), leaving a tile for
  each of `shares` threads. sum(0) at one thread, CPU time of the kernel, 16 -> 64 -> 128 -> 256 lanes: 4096x4096 14.2 -> 4.9 -> 4.4 -> 4.7 ms (sum(1): 4.6), 65536x256 (1 KB rows) 15.0 ->
  6.7 -> 5.9 -> 4.3, 1024x16384 14.0 -> 6.7 -> 5.6 -> 5.1"""
  ax, red = axes(ast), {r for r in ranges(ast) if r.arg[1] in REDUCE}
  if len(tile) != 1: return None
  (i, amt), = tile.items()
  moving = [a for a in _accesses(ast)[0] if a.deps & red and ax[i] in a.deps]
  if amt != WIDE or not moving or not all(ax[i] in a.unit and not a.unit & red for a in moving): return None
  rest, outputs = size(ax[i]) // WIDE, prod(size(r) for r in ax if r.arg[1] is AxisType.LOOP) // WIDE
  lane_bytes = max(_run_lane_bytes(u) for u in ast.toposort() if u.op is Ops.REDUCE)
  fits = [n for n in range(MAX_UPCAST, 1, -1) if rest % n == 0 and WIDE * n <= simd.wide and outputs // n >= shares]
  # a run its lanes' bytes leave at 1 (no second upcast) still streams its rows: it keeps a streaming kernel's thread shares
  return (i, next((n for n in fits if WIDE * n * lane_bytes <= half_registers), 1)) if fits else None

# ops a lane of a float MAX combines with: a NaN test, a compare, an or and a select (an add is one, reading memory)
FLOAT_MAX_OPS = 4

def _run_lane_bytes(red:UOp) -> int:
  """register bytes a lane of a row run counts for: its accumulator in the reduce's dtype, and for a MAX times the ops it runs per element
  (its value's math and the compare and select), whose temporaries hold registers beside the accumulators. 2 threads, 16 lanes x
  1/2/4/8/16: 4096x4096 max(0) (4 ops) - / 3.9 / 5.1 / 8.3 / 6.5 ms; a column min of int64 keys computed from floats (4096x8x512, 5 ops
  of 8 bytes) 4.4 / 4.2 / 9.1 / 11.0 / 9.5. An ADD's math did not count there (exp's sum over 2048x512: 16 x 4 lanes 0.13 ms, 16 0.16;
  4096x4096 sum(0) at 16 x 16 1.9 ms)"""
  if red.arg is not Ops.MAX: return red.dtype.itemsize
  math = [u for u in red.src[0].toposort(lambda u: u.op not in (Ops.LOAD, Ops.INDEX)) if u.op in GroupOp.ALU or u.op is Ops.CAST]
  return red.dtype.itemsize * (len(math) + (FLOAT_MAX_OPS if dtypes.is_float(red.dtype) else 1))

SCAN_CHAINS = 4  # independent accumulator chains of a prefix reduce's loop: they hide the latency of its dependent adds

def _scan_opts(ast:UOp, renderer, out:list[int], attempt, chosen:list[Opt]) -> list[Opt]:
  """a prefix reduce's loop (codegen/prefix_scan.py) carries one chain of dependent ops per lane, and its axis is not split. Lanes along
  an output axis that every access walks with stride 1 (cumsum along axis 0) are whole vectors, SCAN_CHAINS of them; otherwise (along the
  last axis) SCAN_CHAINS scalar chains of rows. 1024x1024 at 2 threads: along axis 0, 16x4 lanes 0.22 ms, 16 lanes 0.87, a scalar 35;
  along axis 1, 4 rows 0.21-0.30 ms, 8 rows 0.52, 1 row 0.52. Not for a MAX: LLVM's SLP vectorizer packs the rows' selects into vectors
  fed by gathers (cummax's values along axis 1: 1 row 1.4 ms, 4 rows 3.3; its index pass 0.9 and 3.0)"""
  vector = simd_tiles(renderer).vector
  ax, (accs, _) = axes(ast), _accesses(ast)
  walked = [i for i in out if any(ax[i] in a.deps for a in accs) and all(ax[i] in a.unit for a in accs if ax[i] in a.deps)]
  if walked and attempt(OptOps.UPCAST, walked[-1], (vector, 8, 4, 2)):
    if chosen[-1].amt < size(ax[walked[-1]]): attempt(OptOps.UPCAST, walked[-1], (SCAN_CHAINS, 2))  # the rest of the axis stays its number
  elif out and not any(u.op is Ops.REDUCE and u.tag == SCAN_TAG and u.arg is Ops.MAX for u in ast.toposort()):
    attempt(OptOps.UPCAST, out[-1], (SCAN_CHAINS, 2))
  threads = THREADS.value if getattr(renderer, "has_threads", False) else 1
  work = prod(size(r) for r in axes(ast)) * prod(size(o) for o, _ in scans(ast))  # the scan's loop runs inside every output
  if threads > 1 and work >= 2 * WORK_PER_THREAD:
    want = min(threads * SHARES_PER_THREAD, work // WORK_PER_THREAD)
    any(attempt(OptOps.THREAD, i, tuple(range(want, 1, -1))) for i, r in enumerate(axes(ast)) if r.arg[1] is AxisType.LOOP)
  return chosen

def hand_coded_opts(ast:UOp, renderer) -> list[Opt]:
  ax = axes(ast)
  if not ax or any(size(r) is None for r in ranges(ast)): return []  # symbolic or bound-less loops: left as written
  # LOOP axes only: a GLOBAL axis is a grid someone laid out by hand
  out = [i for i, r in enumerate(ax) if r.arg[1] is AxisType.LOOP]
  red = [i for i, r in enumerate(ax) if r.arg[1] in REDUCE]
  reduces = bool(red)
  # loop trips: reduces that run one after another add theirs (a GRU's bias gradient sums 16 steps' columns, each its own reduce of 16:
  # as a product of every axis, 384 x 16^16, it took the widest tiles and 6 threads for a 10 us kernel, 13.5k ops, 1.8 s to compile)
  work, chosen, nodes = min(prod(size(r) for r in ax), _chain_trips(ast)), [], len(ast.toposort())
  if getattr(renderer, "has_local", False):
    # a matmul the renderer's tensor cores can run: on them first, the tiles' loops then a grid
    for o in tc_actions(ast, renderer):
      try: return [o] + _gpu_opts(apply_opt(ast, o, renderer), [])
      except OptError: continue
    return _gpu_opts(ast, red)
  def attempt(op:OptOps, axis:int, amts:tuple[int, ...]) -> bool:
    nonlocal ast
    for amt in amts:
      if op not in (OptOps.THREAD, OptOps.SWAP, OptOps.PADTO, OptOps.OVERLAP) and nodes * lanes(ast, axes(ast)[axis]) * amt > CODE_BUDGET: continue
      try: ast = apply_opt(ast, o := Opt(op, axis, amt))
      except OptError: continue
      chosen.append(o)
      return True
    return False
  if scans(ast): return _scan_opts(ast, renderer, out, attempt, chosen)
  # the tile's innermost (stride-1) axis first, so its lanes stay neighbours in the code LLVM's SLP vectorizer packs
  upcast = False
  # the tile within the code budget that attempt() holds every upcast to: a tile past it lost the upcasts tried last (conv1d b8 256->256
  # 1024 k3, nodes 48: 16 channels x 2 panels x 16 pixels chosen, the pixels refused, 2 pixel loads a step per 32 FMAs: 67 -> 27 ms)
  simd = simd_tiles(renderer, work)
  budget = CODE_BUDGET // nodes
  simd = simd._replace(tile=min(simd.tile, budget), wide=min(simd.wide, budget), streaming=min(simd.streaming, budget))
  # a row chain (reduces run one after another per row, then a store across the row) shares no loads across output lanes: its loops
  # stream the row with stride 1, which LLVM's loop vectorizer packs on its own. Upcast, the lanes of softmax's store loop were vectorized
  # across loop trips instead (a transpose of every load, spills): the fused 4096x4096 kernel took 42 ms at one thread, 30 ms without
  # (a REDUCE minor beside the kernel does not make it one: it is redone per tile. An LSTM's recurrent weight gradient, the sum over 16
  # steps of h.T @ dgates, whose first step's h is zeros: that step's sum depends on the gates' axis alone; as a row chain the kernel was
  # left untiled, 104 ms a step, tiled 3.3 ms)
  f = free_ranges(ast)
  if chain := broadcast_reduce(ast, lambda u: _minor_reduce(u, f, work)): work = _chain_trips(ast)
  # an elementwise kernel evaluating a polynomial per element (exp, tanh, gelu) is left to LLVM's loop vectorizer too: upcast, its lanes
  # were packed across trips with a shuffle per lane and op (exp of 16M floats at 2 threads: 8.5 -> 3.9 ms, gelu 10.7 -> 5.4, log 12.2 -> 7.3)
  untiled = chain or (not red and getattr(renderer, "loop_vectorizes", False) and _evaluates_polynomial(ast))
  tile_axes = [] if untiled else [i for i in out if i not in _scalar_polynomial_axes(ast, out)] if red else _elementwise_tile_axes(ast, out)
  if packs := bool(red) and not chain and _packs_reduce(ast, renderer, simd.vector):
    tile_axes = [i for i in tile_axes if i not in _window_axes(ast, out)]  # see SCALAR_SHARE
  threads = THREADS.value if getattr(renderer, "has_threads", False) else 1
  # a small product (the loss's sum over 10 classes) stays in cache: the register tile's shared loads are what count there
  gemv = gemv_upcasts(ast, out, simd, threads) if red and not chain and work >= 2 * WORK_PER_THREAD else None
  tile = transposed = {} if chain or red else transpose_tile(ast, out)
  tile = tile or ({} if gemv is not None else register_tile(ast, tile_axes, simd, panel_streams(ast), packs))
  if red and tile and not chain and (cap := _scalar_lanes_cap(ast, tile, renderer, simd.vector, packs)) is not None:
    tile = register_tile(ast, tile_axes, simd._replace(tile=min(simd.tile, cap)), panel_streams(ast), packs)
  if red and tile and not _scalar_tile_pays(ast, tile, simd, packs): tile = {}
  # a loop left over an upcast axis without a reduce is what LLVM's loop vectorizer packs across trips, at most LOOP_GROUP lanes a trip;
  # an upcast of a whole axis leaves no such loop (a panel copy's 16 lanes: 2048x2048 at 2 threads, 8 lanes 1.8-2.9 ms, 16 1.3-2.0). A
  # transposing copy keeps its whole cache lines (x.T of 1024x1024 at 2 threads: 8x4 lanes 2.1 ms, transpose_tile's 16x2 0.65 ms)
  if not red and not transposed and simd.vector > LOOP_GROUP and any(amt < size(ax[i]) for i, amt in tile.items()):
    tile = register_tile(ast, tile_axes, simd._replace(vector=LOOP_GROUP), panel_streams(ast))
  if not red and not tile and not untiled: tile = aligned_vector_tile(ast, tile_axes, min(simd.vector, LOOP_GROUP))
  if not red: tile = tile | _divided_lanes(ast, tile)
  # a panel tile was checked against the code budget by its value's nodes: its upcasts are too
  if red and gemv is None and (panel := wide_panel_tile(ast, tile, simd, getattr(renderer, "tile_lanes", 256))) != tile:
    tile, nodes = panel, value_nodes(ast)
  block_copy = not red and bool(tile) and all(amt == size(ax[i]) for i, amt in tile.items())
  # the run's lanes in bytes against half the register file (simd.wide caps a small kernel's lanes for its code, not its registers)
  # (of one reduce: several copy the run's lanes into each one's loop, the GRU bias gradient's 16 reduces 13.5k ops with it, 3.4k without)
  run = row_run(ast, tile, simd, threads if work >= 2 * WORK_PER_THREAD else 1, simd_tiles(renderer).wide * 4) \
    if red and not chain and sum(u.op is Ops.REDUCE for u in ast.toposort()) == 1 else None
  scalar_lanes = bool(red) and _scalar_tile(ast, tile)  # read before the upcasts split the ranges its accesses walk
  for i, amt in sorted(tile.items(), reverse=True):
    # the store's vector axis: its last block shifted back over the one before it, where writing twice is safe (whole vectors, no gates);
    # else padded with gates (another axis shifted made a matmul's row index non-affine: 1001 ran 20x slower)
    # (a kernel without a reduce pads: an elementwise add over 2^24-1 shifted back 9.5 ms, gated 5.3 at 2 threads; x.T of 4095x4097's
    # store axis 2 lanes 48 against 33 ms)
    if size(r := axes(ast)[i]) % amt and not (reduces and r in stored_unit(ast) and attempt(OptOps.OVERLAP, i, (amt,))):
      attempt(OptOps.PADTO, i, (amt,))
    upcast = attempt(OptOps.UPCAST, i, (amt,)) or upcast
  for i, amt in gemv or []: upcast = attempt(OptOps.UPCAST, i, (amt,)) or upcast
  if run is not None and run[1] > 1: attempt(OptOps.UPCAST, run[0], (run[1],))
  # no shared loads across outputs: several partial accumulators instead of one serial chain. Where every load walks the reduce with
  # stride 1, LLVM packs simd.vector neighbouring accumulators into one register, so 8 would again be one chain of dependent adds;
  # 4 vectors hide the add's latency (sum of 16M floats, 1 thread: ~3.3 -> ~3.0 ms)
  # A row chain's reduces each get their own (last axis first: a whole axis unrolled leaves the axes list). Where the reduce evaluates a
  # polynomial, 2 vectors: 4 accumulators beside its constants spilled out of the 16 ymm registers (fused softmax 4096x4096, 1 thread,
  # two runs each at load 9: 22.1 / 25.0 -> 19.6 / 20.8 ms of CPU; 1 vector: 21.9 / 24.3)
  # A tile of scalar lanes (no power-of-two run along an axis some access walks with stride 1: a depthwise conv's weight gradient, 3x3
  # taps) gets the same unroll where its loads stream the reduce as vectors (b8 256x28x28 3x3, the kernel at 2 threads: 1.8 -> 1.3 ms),
  # with LLVM only as far as lanes x unroll fit SCALAR_SHARE of the registers (_scalar_budget)
  # (the reduce axes' indices as they are after the upcasts: a whole axis upcast leaves the list)
  scalar_tile = red and upcast and not chain and scalar_lanes and _streams_vectors(ast, (inner := _main_inner(ast)))
  if scalar_tile: red = [axes(ast).index(inner)]
  # Reduces whose loops run one after another (logsumexp's max, then its sum of exps: a serial max chain took 28 ms of 4096x4096) each
  # get their own partial accumulators, on the innermost axis of each
  for i in reversed(red) if chain else reversed(_innermost_reduce_axes(ast, red)) if red and (not upcast or scalar_tile) else []:
    if _only_minor(ast, axes(ast)[i], work) or _counts_in_ints(ast, axes(ast)[i], renderer) or _encloses_loops(ast, axes(ast)[i]): continue
    r, streams = axes(ast)[i], _streams_vectors(ast, axes(ast)[i])
    amts = ((2 * simd.vector, 8, 4, 2) if _long_body(ast, r) else (4 * simd.vector, 2 * simd.vector, 8, 4, 2)) if streams else (8, 4, 2)
    # a few rows upcast (gemv_upcasts): a vector accumulator per row, two per row where they are fewer than four (x @ w.T of 4 rows at
    # 4096x4096, 2 threads: 32 lanes a row 3.8-4.4 ms, mul and add apart with every load shuffled; 16 lanes 2.8-3.4, fused)
    if scalar_tile and getattr(renderer, "loop_vectorizes", False):
      amts = tuple(a for a in amts if a * prod(tile.values()) <= _scalar_budget(renderer, simd.vector, packs))
    if gemv and streams:
      amts = (next(a for a in (4 * simd.vector, 2 * simd.vector, simd.vector) if a * prod(n for _, n in gemv) <= 4 * simd.vector or a == simd.vector),)
    if not upcast and streams and getattr(renderer, "loop_vectorizes", False) and _only_adds(ast, r):
      # a sum over a row that no whole vector's lanes divide (4095, 1001, 4100) is left to LLVM's loop vectorizer, a lone accumulator it
      # packs into vector partial sums with a remainder loop (renderer/llvmir.py lone_accumulator_adds): sum of 4096x1001 0.35 ms, where
      # padded to 32 lanes (clamped loads) 1.5 and 4 scalar partial sums of a row of 4100 ran at a third of the speed
      amts = tuple(a for a in amts if a >= simd.vector)
    elif not (chain and _long_body(ast, r)) and (pad := _unroll_padding(size(r), amts)) and attempt(OptOps.PADTO, i, (pad,)):
      # a max (or a sum on a target without a loop vectorizer) over a row that no amount of 4 or more divides is padded up to the widest
      # amount that costs at most PAD_ROW more trips, its padding the reduce's identity: unpadded it was one serial chain (max of
      # 4096x4095: 18.9 -> 2.0 ms, logsumexp 80 -> 15). Not where 4 divides, whose clamped loads cost more than the wider unroll gains;
      # nor a row chain's staged polynomial loop, whose padding's gated stores made its lanes scalar (softmax 4096x4100: 27 -> 74 ms)
      amts = (pad,)
    attempt(OptOps.UNROLL, i, amts)
  if chain and (stream := getattr(renderer, "nontemporal_bytes", None)) and _stored_bytes(ast) > stream:
    # a row chain's output past the cache is stored past it only in whole aligned vectors (renderer/llvm_streaming.py): its store loop
    # upcast by one vector, each trip writes one, instead of the loop vectorizer's scalar stores, which it keeps cached (softmax 4096x4096
    # at 2 threads: 5.8-7.6 -> 4.6-5.8 ms; no line of the output is read before it is written)
    cur, unit = axes(ast), stored_unit(ast)
    if (j := next((k for k, r in enumerate(cur) if r.arg[1] is AxisType.LOOP and r in unit and size(r) % simd.vector == 0), None)) is not None:
      attempt(OptOps.UPCAST, j, (simd.vector,))
  if threads > 1 and work >= 2 * WORK_PER_THREAD:
    # more shares than cores where no register tile reuses loads across outputs (streaming kernels): the runtime hands the next share
    # to whichever core is free, so one slowed by another process does less; a tiled kernel keeps one share per core (its panel reuse).
    # A column reduce's run (row_run) streams its rows and reuses nothing
    want = min(threads * (SHARES_PER_THREAD if not (red and upcast) or run is not None else 1), work // WORK_PER_THREAD)
    # a row chain's reduces run once per value of the axes they depend on: split another axis, and every share would redo them (a minor
    # one may be redone)
    f = free_ranges(ast) if chain else {}
    costly = [u for u in ast.toposort() if u.op is Ops.REDUCE and not _minor_reduce(u, f, work)] if chain else []
    shared = set.intersection(*(set(f[u]) for u in costly)) if costly else None
    # the output axes as they are now (an upcast of a whole axis took it out of the list, and the indices after it moved down); an axis
    # of a gate that splits vectors last: split across cores it joins the loop the gate's peel splits (opt/peel.py), whose first part
    # then holds only for the last core's share (the panel copy of matmul 1000's B, 63 panels in 7 shares: 209 us; its 1000 rows in 8
    # shares: 118 us)
    cur, gated = axes(ast), vector_gate_ranges(ast)
    out = [i for i, r in enumerate(cur) if r.arg[1] is AxisType.LOOP]
    splittable = sorted((i for i in out if shared is None or cur[i] in shared), key=lambda i: cur[i] in gated)
    def padded_shares(i:int, op:OptOps) -> bool:
      return size(axes(ast)[i]) >= 16 * want and attempt(op, i, (want,)) and attempt(OptOps.THREAD, i, (want,))
    # where no axis divides into shares (odd or prime sizes: matmul 1000's 125 row tiles), the first one of at least 16 shares' worth is
    # padded up to a multiple of them (PADTO, under 1/16 more work), or the kernel would run on one core (matmul 1000 at 2 threads: 70 ->
    # 143 GFLOP/s, 999 185). A kernel without a reduce shifts that axis's last block back over the one before instead (OVERLAP, where it
    # reads no buffer it stores to): PADTO's gate sat on the store inside the stride-1 loop, which LLVM left scalar (a pad copy to
    # 4097x4097 at 2 threads: 20 -> 7.6 ms). Fewer shares of any axis come first: an untiled x.T of 4095x4097 split its inner axis in 7
    # (each share's reads stay in L1 across the outer loop), which shifted rows in 8 shares ran 2x slower
    if not any(attempt(OptOps.THREAD, i, tuple(range(want, 1, -1))) for i in splittable) and \
       not any(padded_shares(i, OptOps.PADTO if reduces else OptOps.OVERLAP) for i in splittable) and not reduces:
      for i in splittable:
        if padded_shares(i, OptOps.PADTO): break
  # after the thread split: each core keeps its own rows (its share of A) and reuses B's panel across them; split the other way round,
  # both cores stream all of A once per panel (matmul 1024 at THREADS=2: 154 ms against 600)
  if (swap := panel_swap(ast) or (copy_swap(ast) if block_copy else None)) is not None: attempt(OptOps.SWAP, swap.axis, (swap.amt,))
  return chosen

GROUP_SIZES = (256, 128, 64, 32, 16, 8, 4, 2)  # items per work group, largest first: a multiple of the 32-wide warp where the axis allows
FILL_ITEMS = 1 << 14  # work items that keep a GPU busy: fewer outputs than this share their reductions across a work group
MIN_GROUP = 8         # a smaller group reduce costs its barrier and LOCAL round trip for too little parallelism

def _gpu_opts(ast:UOp, red:list[int]) -> list[Opt]:
  """each LOOP output axis that encloses every store -> a grid axis; a reduction with too few outputs to fill the grid -> split across the
  items of a work group (GROUP); the fastest grid axis's inner part -> the other items of a work group. Both take the largest size that
  divides the axis or pads it up (PADTO) by at most 1/16"""
  chosen: list[Opt] = []
  if any(r.arg[1] in (AxisType.GLOBAL, AxisType.LOCAL) for r in ranges(ast)): return chosen  # a grid someone laid out by hand
  def attempt(*opts:Opt) -> bool:
    """all of opts, or none"""
    nonlocal ast
    try: new = apply_opts(ast, opts)
    except OptError: return False
    ast = new.replace(arg=ast.arg)
    chosen.extend(opts)
    return True
  def split(op:OptOps, i:int, amts) -> bool:
    n = size(axes(ast)[i])
    for amt in (a for a in amts if a <= n):
      padded = -(-n // amt) * amt
      if padded - n <= padded // 16 and attempt(*([Opt(OptOps.PADTO, i, amt)] if padded != n else []), Opt(op, i, amt)): return True
    return False
  outputs = prod(size(r) for r in axes(ast) if r.arg[1] is AxisType.LOOP)
  # the outermost LOOP axis each time: a retyped axis moves behind the LOOP axes, so the grid axes keep their loop order
  skipped = 0
  while len(loops := [i for i, r in enumerate(axes(ast)) if r.arg[1] is AxisType.LOOP]) > skipped:
    if not attempt(Opt(OptOps.GLOBAL, loops[skipped], size(axes(ast)[loops[skipped]]))): skipped += 1
  # the innermost reduce axis: stride 1 in a row reduction, so neighbouring items read neighbouring elements
  if red and (want := FILL_ITEMS // max(outputs, 1)) >= MIN_GROUP:
    split(OptOps.GROUP, len(axes(ast)) - 1, [a for a in GROUP_SIZES if MIN_GROUP <= a <= want])
  if grid := [i for i, r in enumerate(axes(ast)) if r.arg[1] is AxisType.GLOBAL]: split(OptOps.LOCAL, grid[-1], GROUP_SIZES)
  if red: any(attempt(Opt(OptOps.UNROLL, len(axes(ast)) - 1, amt)) for amt in (4, 2))
  return chosen
