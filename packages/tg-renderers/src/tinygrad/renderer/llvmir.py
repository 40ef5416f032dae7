"""Textual LLVM IR from a linear program: one function, loops as basic blocks with a phi induction variable, math through llvm.*
intrinsics. No fast-math flags: results follow IEEE (NaN, inf, rounding) like the C and python targets. `base_rewrite` is a rule
table keyed by op whose rules return a node's instructions (or, for one that needs none, its operand); a target dialect (AMDGPU)
adds rules in front."""
from __future__ import annotations
import itertools, math, re, struct
from collections import defaultdict
from typing import Callable
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite
from tinygrad.dtype import DType, dtypes, AddrSpace
from tinygrad.helpers import prod, NOOPT
from tinygrad.renderer import Renderer
from tinygrad.renderer.linear import SKIP, loop_of, param_order
from tinygrad.codegen.gpudims import workitem
from tinygrad.renderer.llvm_emulation import HELPERS
from tinygrad.renderer.fp8_formats import FP8
from tinygrad.renderer.llvm_masked_loads import buffer_elements, gated_runs
from tinygrad.renderer.llvm_streaming import address_align, loop_nest, loop_step, streamed_loads, streamed_stores
from tinygrad.renderer.host_cpu import host_has_f16c, host_has_fma, host_stream_bytes, host_streams_loads, host_simd_registers, BUFFER_ALIGN

# value types; float16/bfloat16/fp8 are held as float (rounded after every op) and stored as i16/i8, bool is stored as i8
_LTYPE = {dtypes.bool: "i1", dtypes.int8: "i8", dtypes.uint8: "i8", dtypes.int16: "i16", dtypes.uint16: "i16", dtypes.int32: "i32",
          dtypes.uint32: "i32", dtypes.int64: "i64", dtypes.uint64: "i64", dtypes.float16: "float", dtypes.bfloat16: "float",
          dtypes.float32: "float", dtypes.float64: "double", dtypes.fp8e4m3: "float", dtypes.fp8e5m2: "float"}
_EMULATED = {dtypes.float16: ("@__tg_h2f", "@__tg_f2h", "@__tg_rh"), dtypes.bfloat16: ("@__tg_bf2f", "@__tg_f2bf", "@__tg_rbf"),
             **{dt: (f"@__tg_{f.name}2f", f"@__tg_f2{f.name}", f"@__tg_r{f.name}") for dt, f in FP8.items()}}

class Narrow:
  """the instructions moving a float16/bfloat16 value between its register form (float) and its memory form (i16), and rounding a float
  to it: calls of the integer helpers of llvm_emulation.py, or, for float16 on a CPU that converts in hardware (host_cpu.has_f16c),
  LLVM's own half type, whose fpext/fptrunc the vectorizers pack into whole-vector conversions (vcvtph2ps/vcvtps2ph): the integer helpers
  stayed scalar code of ~20 ops per value (a float16 matmul 1024 at 2 threads ran at 2-10 GFLOP/s)"""
  def __init__(self, dt:DType, native:bool): self.helpers, self.native, self.mem = _EMULATED[dt], native, f"i{8 * dt.itemsize}"
  def to_float(self, d:str, v:str) -> list[str]:
    if self.native: return [f"{d}.h = bitcast i16 {v} to half", f"{d} = fpext half {d}.h to float"]
    return [f"{d} = call float {self.helpers[0]}({self.mem} {v})"]
  def to_mem(self, d:str, v:str) -> list[str]:
    if self.native: return [f"{d}.h = fptrunc float {v} to half", f"{d} = bitcast half {d}.h to i16"]
    return [f"{d} = call {self.mem} {self.helpers[1]}(float {v})"]
  def round(self, d:str, v:str) -> list[str]:
    if self.native: return [f"{d}.h = fptrunc float {v} to half", f"{d} = fpext half {d}.h to float"]
    return [f"{d} = call float {self.helpers[2]}(float {v})"]
def ltype(dt:DType) -> str:
  if (t := _LTYPE.get(dt)) is None: raise RuntimeError(f"LLVMRenderer has no type for {dt}")
  return t
def mtype(dt:DType) -> str: return "i8" if dt is dtypes.bool else f"i{8 * dt.itemsize}" if dt in _EMULATED else ltype(dt)

def render_const(x, dt:DType) -> str:
  if dt is dtypes.bool: return "true" if x else "false"
  # LLVM spells a float constant as the hex bits of the same value as a double
  if dtypes.is_float(dt): return "0x7FF8000000000000" if math.isnan(x) else f"0x{struct.unpack('<Q', struct.pack('<d', x))[0]:016X}"
  bits = 8 * dt.itemsize
  return str(x - (1 << bits) if x >= 1 << (bits - 1) else x)  # two's complement: unsigned constants as their signed bit pattern

def _by_kind(f:str|None, s:str|None, u:str|None=None, b:str|None=None) -> Callable:
  """one instruction chosen by the operands' kind: float, signed int, unsigned int (default: signed) or bool (default: unsigned);
  None where that kind has none"""
  def fn(d, *a, dt):
    ins = f if dtypes.is_float(dt) else (b or u or s) if dt is dtypes.bool else (u or s) if dtypes.is_unsigned(dt) else s
    return None if ins is None else [f"{d} = {ins} {ltype(dt)} {', '.join(a)}"]
  return fn
def _intrinsic(name:str) -> Callable:
  def fn(d, *a, dt):
    t = ltype(dt)
    return [f"{d} = call {t} @llvm.{name}.{'f64' if t == 'double' else 'f32'}({', '.join(f'{t} {x}' for x in a)})"]
  return fn
def _fma(d, a, b, c, dt):  # one rounding (Ops.MULACC); floats only
  return _intrinsic("fma")(d, a, b, c, dt=dt) if dtypes.is_float(dt) else None
def _max(d, a, b, dt):
  t = ltype(dt)
  if not dtypes.is_float(dt): return [f"{d}.c = icmp {'ugt' if dtypes.is_unsigned(dt) or dt is dtypes.bool else 'sgt'} {t} {a}, {b}",
                                      f"{d} = select i1 {d}.c, {t} {a}, {t} {b}"]
  # a NaN operand wins (numpy's maximum): pick a when a is NaN or a > b, the same choice as the C and python targets
  return [f"{d}.n = fcmp uno {t} {a}, {a}", f"{d}.g = fcmp ogt {t} {a}, {b}", f"{d}.c = or i1 {d}.n, {d}.g",
          f"{d} = select i1 {d}.c, {t} {a}, {t} {b}"]
def _neg(d, a, dt):
  t = ltype(dt)
  return [f"{d} = fneg {t} {a}" if dtypes.is_float(dt) else f"{d} = xor i1 {a}, true" if dt is dtypes.bool else f"{d} = sub {t} 0, {a}"]

# *** the rules: ctx is the renderer, ctx[x] x's operand (an instruction's destination is given before its rule runs: %v<position>),
# ctx.label the block being filled (a phi's predecessor), ctx.pos[x] x's position (names its blocks) ***

def _indent(lines:list[str]|str) -> list[str]|str: return lines if isinstance(lines, str) else [f"  {x}" for x in lines]

def _special(ctx:LLVMRenderer, x:UOp) -> list[str]|str:
  kind, dim = workitem(x.arg)
  # the CPU's thread id is the kernel's last argument (runtime/ops_cpu.py calls it once per thread)
  if ctx.has_threads and not ctx.has_local and (kind, dim) == ("gidx", 0): return "%core_id" if ltype(x.dtype) == "i32" else [f"  {ctx[x]} = sext i32 %core_id to i64"]
  if (fn := ctx.code_for_workitem.get(kind)) is None:
    raise RuntimeError(f"{type(ctx).__name__} has no work items (SPECIAL {x.arg}): it renders single threaded kernels")
  return [f"  {ctx[x]} = {fn(dim)}"]

def _buffer(ctx:LLVMRenderer, x:UOp) -> list[str]:
  if x.arg.addrspace not in (AddrSpace.REG, AddrSpace.LOCAL): raise RuntimeError(f"a linear program has no {x.arg.addrspace} BUFFER")
  space = ctx.addrspace.get(x.arg.addrspace, 0)
  return [f"  {ctx[x]} = alloca [{prod(x.arg.shape)} x {ltype(x.dtype)}]" + (f", addrspace({space})" if space else "")]

def _range(ctx:LLVMRenderer, x:UOp) -> list[str]:
  d, i = ctx[x], ctx.pos[x]
  head = [f"  br label %L{i}", f"L{i}:"]
  if x.dtype is dtypes.void: return head
  t = ltype(x.dtype)
  return head + [f"  {d} = phi {t} [0, %{ctx.label}], [{d}.next, %L{i}.latch]", f"  {d}.c = icmp slt {t} {d}, {ctx[x.src[0]]}",
                 f"  br i1 {d}.c, label %L{i}.body, label %L{i}.exit", f"L{i}.body:"]

def _end(ctx:LLVMRenderer, x:UOp) -> list[str]:
  rng, cond = loop_of(x)
  j = ctx.pos[rng]
  if cond is not None: return [f"  br i1 {ctx[cond]}, label %L{j}, label %L{j}.exit", f"L{j}.exit:"]  # do-while: back while it holds
  md = f", !llvm.loop !{ctx.slp_only[rng]}" if rng in ctx.slp_only else ""
  return [f"  br label %L{j}.latch", f"L{j}.latch:", f"  %v{j}.next = add {ltype(rng.dtype)} %v{j}, 1", f"  br label %L{j}{md}", f"L{j}.exit:"]

def _store(ctx:LLVMRenderer, x:UOp, idx:UOp, val:UOp) -> list[str]:
  v, t, lines = ctx[val], ctx.elem(idx), []
  if t != ltype(val.dtype):  # to the in-memory form: bool as a byte, float16/bfloat16 as 16 bits
    lines += [f"  {ctx[x]}.m = zext i1 {v} to i8"] if val.dtype is dtypes.bool else _indent(ctx.narrow[val.dtype].to_mem(f"{ctx[x]}.m", v))
    v = f"{ctx[x]}.m"
  return lines + [f"  store {t} {v}, {ctx.ptr(idx)} {ctx[idx]}{ctx.align_of(idx)}" + (", !nontemporal !{i32 1}" if x in ctx.streamed else "")]

def _load(ctx:LLVMRenderer, x:UOp) -> list[str]:
  d, i, idx = ctx[x], ctx.pos[x], x.src[0]
  t, vt, gated = ctx.elem(idx), ltype(x.dtype), len(x.src) == 3
  # gated: a gate that is false must not touch memory. With a buffer known to hold an element, the load reads the buffer's first element
  # instead and a select picks the alternative: straight-line code, which LLVM can vectorize (a branch per lane splits the loop body
  # into blocks the SLP vectorizer cannot pack across). Otherwise a branch around the load.
  select = gated and buffer_elements(idx.src[0]) > 0
  # a later lane of a run (llvm_masked_loads.py): its address and fallback are the first lane's selected pointer plus its offset
  run = ctx.runs.get(x)
  # (next_trip_prefetches, ungated loads only) a hint: an address past the buffer is no fault, so a plain (not inbounds) pointer; before
  # the load, not between it and its neighbour lanes' loads, which the SLP vectorizer then cannot merge into one vector load
  pf: list[str] = []
  if (found := ctx.prefetch.get(x)) is not None:
    it = ltype(idx.src[1].dtype)
    pf.append(f"  {d}.pi = add {it} {ctx[idx.src[1]]}, {found[0]}")
    for k, (buf, rw) in enumerate([(idx.src[0], 0), *((b, 1) for b in found[1])]):
      pf += [f"  {d}.pp{k} = getelementptr {mtype(buf.dtype)}, ptr {ctx[buf]}, {it} {d}.pi",
             f"  call void @llvm.prefetch.p0(ptr {d}.pp{k}, i32 {rw}, i32 3, i32 1)"]
  lines = [f"  {d}.p = getelementptr inbounds {t}, {ctx.ptr(idx)} {ctx[run[0]]}.p, {ltype(idx.src[1].dtype)} {run[1]}"] if run else \
          [f"  {d}.p = select i1 {ctx[x.src[2]]}, {ctx.ptr(idx)} {ctx[idx]}, {ctx.ptr(idx)} {ctx[idx.src[0]]}"] if select else \
          [f"  br i1 {ctx[x.src[2]]}, label %L{i}.load, label %L{i}.join", f"L{i}.load:"] if gated else pf
  val = f"{d}.m" if t != vt or gated else d
  # the alignment holds for the select's other pointer too: a buffer's base is aligned at least as much as any of its elements, and a run's
  # lane claims no more than its offset from the base allows
  lines.append(f"  {val} = load {t}, {ctx.ptr(idx)} {f'{d}.p' if select else ctx[idx]}{ctx.align_of(idx, run[1] if run else 0)}"
               + (", !nontemporal !{i32 1}" if x in ctx.streamed_loads else ""))
  if t != vt:  # from the in-memory form
    conv = f"{d}.x" if gated else d
    lines += [f"  {conv} = icmp ne i8 {val}, 0"] if x.dtype is dtypes.bool else _indent(ctx.narrow[x.dtype].to_float(conv, val))
    val = conv
  if not gated: return lines
  if select: return lines + [f"  {d} = select i1 {ctx[x.src[2]]}, {vt} {val}, {vt} {ctx[x.src[1]]}"]
  return lines + [f"  br label %L{i}.join", f"L{i}.join:", f"  {d} = phi {vt} [{val}, %L{i}.load], [{ctx[x.src[1]]}, %{ctx.label}]"]

def _alu(ctx:LLVMRenderer, x:UOp) -> list[str]:
  d, rounds = ctx[x], x.dtype in _EMULATED and x.op not in ctx.exact_ops  # computed in float, then rounded to 16 bits
  if (fn := ctx.code_for_op.get(x.op)) is None or (lines := fn(f"{d}.u" if rounds else d, *[ctx[s] for s in x.src], dt=x.src[-1].dtype)) is None:
    raise RuntimeError(f"{type(ctx).__name__} cannot render {x.op} on {x.src[-1].dtype} operands: lower it first")
  if x in ctx.reassoc: lines = [l.replace(" = fadd ", " = fadd reassoc ", 1) for l in lines]
  return _indent(lines + (ctx.narrow[x.dtype].round(d, f"{d}.u") if rounds else []))

def lone_accumulator_adds(uops:list[UOp]) -> set[UOp]:
  """the float ADD of a register accumulator (acc = acc + x: stored back where an operand was loaded from) that is the only one in its
  innermost loop: a reduce loop the optimizer left unrolled (no amount divides an odd row). Marked `reassoc`, LLVM's loop vectorizer
  makes it a vector of partial sums with a scalar remainder; without, the sum stays one serial chain of adds (an unrolled loop's partial
  sums are left alone: vectorized across trips they became shuffles)"""
  found: dict[UOp, list[UOp]] = defaultdict(list)
  for u, loops in loop_nest(uops):
    if u.op is not Ops.STORE or not loops or (idx := u.src[0]).op is not Ops.INDEX or idx.src[0].op is not Ops.BUFFER: continue
    if (v := u.src[1]).op is Ops.ADD and dtypes.is_float(v.dtype) and any(s.op is Ops.LOAD and s.src[0] is idx for s in v.src):
      found[loops[-1]].append(v)
  return {adds[0] for adds in found.values() if len(adds) == 1}

def _runs(accesses:list[UOp], rng:UOp) -> list[tuple[int, list[int]]]:
  """(step per trip of rng, constant offsets) of each group of accesses to one buffer at one base index plus constants"""
  groups: dict[tuple, list[int]] = defaultdict(list)
  for v in accesses:
    i = v.src[0].src[1]
    base, off = (i.src[0], i.src[1].arg) if i.op is Ops.ADD and i.src[1].op is Ops.CONST else (i, 0)
    groups[(v.src[0].src[0], base)].append(off)
  return [(loop_step(base, rng), sorted(set(offs))) for (_, base), offs in groups.items()]

SHORT_LOOP = 8  # trips: a constant loop this short LLVM unrolls whole, and the loop around it becomes the innermost

def _packed_bytes(body:list[UOp]) -> bool:
  """a loop's trip stores several 1-byte lanes (upcast, or short constant loops inside, which LLVM unrolls whole): its loop vectorizer
  packs the trips 64 lanes wide (bytes, AVX-512) in interleave groups of those lanes, and its SLP vectorizer then took seconds over the
  6000-12000 lines that made (a uint8 (67, 4, 4) product: 7-9 s to compile, 0.04 s kept off; a bool compare's 32 lanes: 11 s). Kept
  off, SLP packs the lanes of a trip instead"""
  if not all(v.src and v.src[0].op is Ops.CONST and v.src[0].arg <= SHORT_LOOP for v in body if v.op is Ops.RANGE): return False
  stores = [v for v in body if v.op is Ops.STORE and v.src[1].dtype.scalar().itemsize == 1]
  return len(stores) > 1 or (bool(stores) and any(v.op is Ops.RANGE for v in body))

def slp_only_loops(uops:list[UOp]) -> list[UOp]:
  """the innermost loops LLVM's loop vectorizer is kept off, so that its SLP vectorizer packs the upcast lanes of a trip instead. It
  vectorizes across trips, and where a trip's lanes are not one run of consecutive elements per access it does so with gathers and
  scatters, or with shuffles through a loop-invariant select. Two such loops, each writing a run of elements per trip: one whose reads
  move on slower than its writes and whose trip reads a run longer than that step (an upsample: its lanes read each element twice and
  the next trip reads its last; a x2 bilinear interpolate took 1.7x the CPU time), and a copy through a select on a condition fixed for
  the loop between a loaded value and another (an out-of-bounds gather's zero: 8 shuffles per vector). And two it vectorizes with AVX-512
  gathers, slower than scalar loads (Zen 5): a read whose index is not linear in the loop (a conv's window copy reading through the
  window's //, % of the pixel: 3.9 -> 1.1 ms), and a trip that writes one element from reads more than 2 further on each trip (a 2x2 max
  pool over its window buffer, 4 floats a window: 2.0 -> 0.3 ms; a stride-2 read it packs with shuffles, avg_pool2d 2x2 stays). Sort's compare-and-swap stages read runs as long as the step, or as fast as the writes: they vectorize better
  across trips (1.2x the time with the SLP vectorizer); so does a trip that writes a run of lanes from strided reads (a conv's col2im)"""
  out: list[UOp] = []
  for n, (u, loops) in enumerate(loop_nest(uops)):
    if u.op is not Ops.RANGE or u.dtype is dtypes.void: continue
    body = list(itertools.takewhile(lambda v: not (v.op is Ops.END and loop_of(v)[0] is u), uops[n+1:]))
    if packed := _packed_bytes(body): out.append(u)
    if packed or any(v.op is Ops.RANGE for v in body): continue
    global_access = lambda op: [v for v in body if v.op is op and v.src[0].op is Ops.INDEX and v.src[0].src[0].op is Ops.PARAM]
    writes = [step for step, offs in _runs(global_access(Ops.STORE), u) if step and step > 0 and offs == list(range(offs[0], offs[0] + step))]
    if not writes: continue
    reads = _runs(global_access(Ops.LOAD), u)
    # reads moving slower than the writes in a run longer than their step: consecutive trips read shared elements, which no interleaved
    # group of the loop vectorizer holds
    overlapping = any(step and 0 < step < max(writes) and step < offs[-1] - offs[0] + 1 == len(offs) for step, offs in reads)
    # only where every read is a run like the writes (a copy through the select): strided reads vectorized better across trips
    copies = all(step and offs == list(range(offs[0], offs[0] + step)) for step, offs in reads)
    fixed = copies and any(v.op is Ops.WHERE and loop_step(v.src[0], u) == 0 and any(s.op is Ops.LOAD and s in body for s in v.src[1:]) for v in body)
    gathered = any(step is None for step, _ in reads)
    window = max(writes) == 1 and any(step and step > 2 for step, _ in reads)
    if overlapping or fixed or gathered or window: out.append(u)
  return out

PREFETCH_LINE = 64  # bytes: one cache line, what one prefetch brings in
PREFETCH_MAX_AHEAD = 256 << 10  # bytes: further ahead, the next row would push the current one out of L2 before its later loops


def _same_element(store_i:UOp, store_loop:UOp, load_i:UOp, load_loop:UOp) -> bool:
  """a store's index, its loop counter moved to where the load's loop is (the counters differ by the ratio of their steps), is the
  load's index: the store writes the element the load reads, in another buffer"""
  from tinygrad.uop.symbolic import symbolic
  a, b = loop_step(store_i, store_loop), loop_step(load_i, load_loop)
  if not a or not b or b % a: return False
  return graph_rewrite(store_i.substitute({store_loop: load_loop * (b // a)}), symbolic) is graph_rewrite(load_i, symbolic)

def next_trip_prefetches(uops:list[UOp], streamed:set[UOp]|frozenset=frozenset()) -> dict[UOp, tuple[int, tuple[UOp, ...]]]:
  """{LOAD: (elements ahead, the buffers to prefetch for writing there)} for the loads that also prefetch what the next trip of their
  enclosing loop reads and writes. Where a loop re-reads a global buffer that an earlier loop of the same trip of the enclosing loop
  read from memory (a row chain's later loops over the row, schedule/row_fusion.py), the row comes from cache and the memory sits idle
  while the loop computes; then the next row is read, and the output row's lines are read before they are overwritten, while nothing
  is computed. The first such loop asks for the next trip's row as it goes, one prefetch per cache line (a load whose constant lane
  offset starts a line), and for writing, the same element of each buffer a later loop of the trip stores at the load's own index, so
  both arrive while this row is computed (softmax 4096x4096 on one core: 20.6 -> 17.2 ms for the reads, a further 13.0 -> 9.8 ms of CPU
  time for the writes; bench/RESULTS.md). Not for writing where the store is one of `streamed` (streamed_stores): those lines go to
  memory around the cache, and a prefetch would read each only to have it written around (softmax 4096x4096 at 2 threads, streamed:
  ~5.8 ms with the prefetches, ~4.6 without)"""
  reads: dict[UOp, set] = defaultdict(set)  # loop -> (buffer, step per trip of the loop around it) of its loads
  done: dict[UOp, set] = defaultdict(set)  # enclosing loop -> what the loops ended inside its current trip read
  stores: dict[UOp, list] = defaultdict(list)  # enclosing loop -> (position, its own loop, store) of the stores in its inner loops
  chosen: dict[UOp, UOp] = {}  # enclosing loop -> the loop that prefetches for it
  out: dict[UOp, tuple[int, tuple[UOp, ...]]] = {}
  for n, (u, loops) in enumerate(loop_nest(uops)):
    if u.op is Ops.STORE and len(loops) >= 2 and u.src[0].src[0].op is Ops.PARAM: stores[loops[-2]].append((n, loops[-1], u))
  for n, (u, loops) in enumerate(loop_nest(uops)):
    if u.op is Ops.END and loops: done[loops[-1]] |= reads.pop(loop_of(u)[0], set())  # the loop around the ended one saw its reads
    if u.op is not Ops.LOAD or len(u.src) != 1 or len(loops) < 2 or (buf := u.src[0].src[0]).op is not Ops.PARAM: continue
    inner, outer, i = loops[-1], loops[-2], u.src[0].src[1]
    if not (step := loop_step(i, outer)) or not (trip := loop_step(i, inner)): continue
    reads[inner].add((buf, step))
    if abs(step) * buf.dtype.itemsize > PREFETCH_MAX_AHEAD: continue
    # a trip reading less than a line would prefetch every trip, and the call keeps LLVM's loop vectorizer off the loop: argmax's
    # index loop, not unrolled so that the vectorizer packs it, ran scalar (4096x4096: 6.2 -> 1.6 ms). Such a loop is passed over
    if abs(trip) * buf.dtype.itemsize < PREFETCH_LINE: continue
    if (buf, step) not in done[outer] or chosen.setdefault(outer, inner) is not inner: continue
    base, lane = (i.src[0], i.src[1].arg) if i.op is Ops.ADD and i.src[1].op is Ops.CONST else (i, 0)
    if lane * buf.dtype.itemsize % PREFETCH_LINE: continue
    written = {s.src[0].src[0]: None for at, lp, s in stores[outer] if at > n and lp is not inner and s not in streamed and
               _same_element(s.src[0].src[1], lp, base, inner)}
    out[u] = (step, tuple(written))
  return out

base_rewrite = PatternMatcher([
  # operands: no instruction
  (UPat(Ops.PARAM, name="x"), lambda x: f"%data{x.arg.slot}"),
  # a variable arrives as an i32 argument (every runtime passes int32); 64-bit index math gets it sign-extended
  (UPat(Ops.DEFINE_VAR, name="x"), lambda ctx, x: f"%var.{x.arg.name}" if ltype(x.dtype) == "i32" else
   [f"  {ctx[x]} = sext i32 %var.{x.arg.name} to {ltype(x.dtype)}"]),
  (UPat(Ops.CONST, name="x"), lambda x: render_const(x.arg, x.dtype)),
  (UPat(Ops.SPECIAL, name="x"), _special),
  # memory: a REG/LOCAL buffer is an alloca in the entry block, so a loop does not grow the stack
  (UPat(Ops.BUFFER, name="x"), _buffer),
  (UPat(Ops.INDEX, src=(UPat.var("buf"), UPat.var("i")), name="x"),
   lambda ctx, x, buf, i: [f"  {ctx[x]} = getelementptr inbounds {ctx.elem(x)}, {ctx.ptr(x)} {ctx[buf]}, {ltype(i.dtype)} {ctx[i]}"]),
  (UPat(Ops.LOAD, name="x"), _load),
  (UPat(Ops.STORE, src=(UPat.var("idx"), UPat.var("val")), name="x"), _store),
  # control flow: blocks named after the position of the RANGE/IF that opens them
  (UPat(Ops.RANGE, name="x"), _range),
  (UPat(Ops.END, name="x"), _end),
  (UPat(Ops.IF, name="x"), lambda ctx, x: [f"  br i1 {ctx[x.src[0]]}, label %L{ctx.pos[x]}.then, label %L{ctx.pos[x]}.end", f"L{ctx.pos[x]}.then:"]),
  (UPat(Ops.ENDIF, src=(UPat.var("i"),)), lambda ctx, i: [f"  br label %L{ctx.pos[i]}.end", f"L{ctx.pos[i]}.end:"]),
  # one work item runs the whole group: nothing to wait for (a GPU dialect puts its own rule in front)
  (UPat(Ops.BARRIER), lambda: []),
  # values
  (UPat(Ops.CAST, src=(UPat.var("a"),), name="x"), lambda ctx, x, a: _indent(ctx.render_cast(ctx[x], ctx[a], a.dtype, x.dtype))),
  (UPat(Ops.BITCAST, src=(UPat.var("a"),), name="x"), lambda ctx, x, a: _indent(ctx.render_bitcast(ctx[x], ctx[a], a.dtype, x.dtype))),
  (UPat(GroupOp.ALU, name="x"), _alu),
])

def _u64_to_float(d:str, x:str) -> list[str]:
  """uint64 -> float32 from the signed conversion: past 2**63, half the value with its lost bit kept as a sticky bit (one correct
  rounding), doubled. LLVM 22 vectorizes `uitofp (sext i8/i16 to i64) to float` on AVX2 into lanes that give 2**32 for negative values"""
  return [f"{d}.neg = icmp slt i64 {x}, 0", f"{d}.half = lshr i64 {x}, 1", f"{d}.bit = and i64 {x}, 1", f"{d}.odd = or i64 {d}.half, {d}.bit",
          f"{d}.src = select i1 {d}.neg, i64 {d}.odd, i64 {x}", f"{d}.f = sitofp i64 {d}.src to float", f"{d}.f2 = fadd float {d}.f, {d}.f",
          f"{d} = select i1 {d}.neg, float {d}.f2, float {d}.f"]

class LLVMRenderer(Renderer):
  device = "CPU"
  has_threads = True
  loop_vectorizes = True
  tile_lanes = 384  # heuristic.wide_panel_tile's 24 accumulators of 16 lanes vectorize
  # (destination, operands..., dt= the operands' dtype) -> instruction lines
  code_for_op: dict[Ops, Callable[..., list[str]]] = {
    Ops.ADD: _by_kind("fadd", "add", b="or"), Ops.SUB: _by_kind("fsub", "sub"), Ops.MUL: _by_kind("fmul", "mul", b="and"),
    Ops.FDIV: _by_kind("fdiv", None), Ops.CDIV: _by_kind(None, "sdiv", "udiv"), Ops.CMOD: _by_kind(None, "srem", "urem"),
    Ops.CMPLT: _by_kind("fcmp olt", "icmp slt", "icmp ult"), Ops.CMPNE: _by_kind("fcmp une", "icmp ne"), Ops.CMPEQ: _by_kind("fcmp oeq", "icmp eq"),
    Ops.AND: _by_kind(None, "and"), Ops.OR: _by_kind(None, "or"), Ops.XOR: _by_kind(None, "xor"),
    Ops.SHL: _by_kind(None, "shl"), Ops.SHR: _by_kind(None, "ashr", "lshr"), Ops.NEG: _neg, Ops.MAX: _max,
    Ops.WHERE: lambda d, c, a, b, dt: [f"{d} = select i1 {c}, {ltype(dt)} {a}, {ltype(dt)} {b}"],
    Ops.RECIPROCAL: lambda d, a, dt: [f"{d} = fdiv {ltype(dt)} {render_const(1.0, dt)}, {a}"],
    Ops.SQRT: _intrinsic("sqrt"), Ops.LOG2: _intrinsic("log2"), Ops.SIN: _intrinsic("sin"), Ops.TRUNC: _intrinsic("trunc"),
    Ops.MULACC: _fma}
  # no EXP2: on the host its intrinsic is a libm call per lane that no vectorizer packs; the polynomial of codegen/transcendental.py
  # vectorizes (1.6x faster per element, 1.23 ulp; softmax, sigmoid). LOG2 and SIN stay libm calls in a long chain: their polynomials are
  # longer and a deep chain of them compiles 10x (log2) to over 100x (sin) slower (bench/RESULTS.md). A kernel with a few gets the
  # polynomials (4096x4096 at THREADS=1, AVX-512, CPU time: sin 72 -> 28 ms, log 41 -> 17; randn 246 -> 73, its Box-Muller kernel has 8
  # lanes of one log and one cos). Compile time: a kernel of 8 lanes of one sin 0.12 s, of 4 sins (32) 0.44 s, of 16 sins (128) 3.2 s
  polynomial_budget = 32
  exact_ops = {Ops.NEG, Ops.MAX, Ops.WHERE, Ops.TRUNC}  # need no rounding back to an emulated dtype
  code_for_workitem: dict[str, Callable[[int], str]] = {}  # work-item kind (gidx, lidx, idx) -> the instruction reading dim d
  kernel_cc: str = ""  # the kernel's calling convention, e.g. "amdgpu_kernel "
  addrspace: dict[AddrSpace, int] = {}  # LLVM address space of each kind of memory, 0 when absent (the CPU's flat memory)
  string_rewrite: PatternMatcher = base_rewrite
  param_align = BUFFER_ALIGN  # what the runtime guarantees of each buffer's address (0: nothing is claimed)

  def __init__(self, arch:str|None=None):
    super().__init__(arch)
    # llvm.fma where the CPU has no such instruction is a library call per lane: fused only on a host that has one (a named CPU model
    # compiles the unfused multiply and add)
    if Ops.MULACC in self.code_for_op and not (arch is None and host_has_fma()):
      self.code_for_op = {k: v for k, v in self.code_for_op.items() if k is not Ops.MULACC}
    if arch is None and (simd := host_simd_registers()) is not None: self.vector_bytes, self.vector_registers = simd
    # a named CPU model (or a GPU dialect) keeps the integer helpers: its hardware conversions are not known here
    self.narrow = {dt: Narrow(dt, dt is dtypes.float16 and arch is None and not self.has_local and host_has_f16c()) for dt in _EMULATED}
    self.nontemporal_bytes: int|None = host_stream_bytes()  # an output bigger than this is stored past the cache (None: never)
    self.stream_loads = host_streams_loads()  # whether an input bigger than that is also read past it

  def render_cast(self, d:str, x:str, src:DType, dst:DType) -> list[str]|str:
    """instructions computing d, or the operand itself when the value types agree"""
    st, dt = ltype(src), ltype(dst)
    if dst is dtypes.bool: return [f"{d} = fcmp une {st} {x}, 0.0" if dtypes.is_float(src) else f"{d} = icmp ne {st} {x}, 0"]
    if dst in _EMULATED:  # ints and doubles reach 16 bits through double and a float rounded to odd: one correct rounding
      lines = []
      if st != "float":
        if src is not dtypes.float64: lines.append(f"{d}.d = {'sitofp' if src in dtypes.sints else 'uitofp'} {st} {x} to double"); x = f"{d}.d"
        lines.append(f"{d}.o = call float @__tg_d2fo(double {x})"); x = f"{d}.o"
      return lines + self.narrow[dst].round(d, x)
    if st == dt: return x
    if src is dtypes.uint64 and dst is dtypes.float32: return _u64_to_float(d, x)
    signed = src in dtypes.sints
    if dtypes.is_float(src) and dtypes.is_float(dst): ins = "fpext" if dt == "double" else "fptrunc"
    elif dtypes.is_float(src): ins = "fptoui" if dtypes.is_unsigned(dst) else "fptosi"
    elif dtypes.is_float(dst): ins = "sitofp" if signed else "uitofp"
    else: ins = "trunc" if src.itemsize > dst.itemsize else "sext" if signed else "zext"
    return [f"{d} = {ins} {st} {x} to {dt}"]

  def render_bitcast(self, d:str, x:str, src:DType, dst:DType) -> list[str]|str:
    if src in _EMULATED and dst in _EMULATED: return self.narrow[src].to_mem(f"{d}.b", x) + self.narrow[dst].to_float(d, f"{d}.b")
    if src in _EMULATED: return self.narrow[src].to_mem(d, x)  # to int16/uint16, also i16
    if dst in _EMULATED: return self.narrow[dst].to_float(d, x)
    if src is dtypes.bool or dst is dtypes.bool: return self.render_cast(d, x, src, dst)  # bool is one bit in registers, a byte in memory
    return x if ltype(src) == ltype(dst) else [f"{d} = bitcast {ltype(src)} {x} to {ltype(dst)}"]

  def __getitem__(self, u:UOp) -> str: return self.r[u]

  def render(self, name:str, uops:list[UOp]) -> str:
    self.pos = {u: i for i, u in enumerate(uops)}
    self.r: dict[UOp, str] = {}
    self.label = "entry"
    self.multiples: dict = {}  # known_multiple's memo for this kernel
    self.streamed = streamed_stores(uops, self.param_align, self.nontemporal_bytes)
    self.streamed_loads = streamed_loads(uops, self.param_align, self.nontemporal_bytes if self.stream_loads else None)
    self.prefetch = {} if self.has_local else next_trip_prefetches(uops, self.streamed)  # a GPU's work items read each their own part
    self.reassoc = set() if self.has_local or NOOPT else lone_accumulator_adds(uops)  # NOOPT: the adds in the order written
    self.runs = {} if self.has_local else gated_runs(uops)  # the CPU's SLP vectorizer packs them; a GPU dialect keeps a select per lane
    self.slp_only = {} if self.has_local else {r: 2*k + 1 for k, r in enumerate(slp_only_loops(uops))}  # loop -> its metadata node
    allocas: list[str] = []
    body: list[str] = []
    for u in uops:
      if u.op in SKIP: continue
      self.r[u] = f"%v{self.pos[u]}"
      if (out := self.string_rewrite.rewrite(u, ctx=self)) is None:
        raise RuntimeError(f"{type(self).__name__} cannot render {u.op} in a linear program")
      if isinstance(out, str): self.r[u] = out  # an operand, no instruction
      elif u.op is Ops.BUFFER: allocas += out
      else:
        body += out
        self.label = next((x[:-1] for x in reversed(out) if not x.startswith(" ")), self.label)  # the last block label the lines open
    params, variables = param_order(uops)
    args = [f"{self.ptr(p)} noalias %data{p.arg.slot}" for p in params] + [f"i32 %var.{v.arg.name}" for v in variables]
    if self.has_threads and not self.has_local and (thread := next((u for u in uops if u.op is Ops.SPECIAL), None)) is not None:
      # the thread id's range: without it LLVM cannot prove the i32 index math free of overflow, so it cannot merge neighbouring lanes'
      # loads into vector loads, and a threaded kernel stays scalar (conv2d at THREADS=2 ran 4x slower than at THREADS=1)
      n = thread.src[0].arg if thread.src and thread.src[0].op is Ops.CONST else None
      args.append(f"i32 noundef range(i32 0, {n}) %core_id" if isinstance(n, int) and n > 1 else "i32 %core_id")
    # non-temporal stores are weakly ordered: a full fence makes them visible before the thread reports the kernel done
    fence = "\n  fence seq_cst" if self.streamed else ""
    fn = f'define {self.kernel_cc}void @"{name}"({", ".join(args)}) nounwind {{\nentry:\n' + "\n".join(allocas + body) + f"{fence}\n  ret void\n}}\n"
    # declare each llvm intrinsic the kernel calls, with the argument types of the call
    decls = {f"declare {m[1]} {m[2]}({', '.join(a.split()[0] for a in m[3].split(', ') if a)})"
             for m in re.finditer(r"call (\w+) (@llvm\.[\w.]+)\(([^)]*)\)", fn)}
    loop_md = "".join(f"!{k} = distinct !{{!{k}, !0}}\n" for k in self.slp_only.values())
    if loop_md: loop_md = '!0 = !{!"llvm.loop.vectorize.enable", i1 false}\n' + loop_md
    return fn + "".join(f"{x}\n" for x in sorted(decls)) + (HELPERS if any(u.dtype in _EMULATED for u in uops) else "") + loop_md

  def ptr(self, x:UOp) -> str:
    """the pointer type of a PARAM, BUFFER or an INDEX into one: `ptr` in the address space of its memory"""
    buf = x.src[0] if x.op is Ops.INDEX else x
    space = self.addrspace.get(AddrSpace.GLOBAL if buf.op is Ops.PARAM else buf.arg.addrspace, 0)
    return f"ptr addrspace({space})" if space else "ptr"

  def align_of(self, idx:UOp, fallback:int=0) -> str:
    """`, align N` for an access through INDEX idx into a global buffer whose address is known to be a multiple of N, when N is more
    than the element's own alignment (what LLVM assumes without it); lets the vectorizer emit aligned vector accesses. With a fallback,
    the access may instead read that many elements past the buffer's start: N holds for both"""
    if idx.src[0].op is not Ops.PARAM or not self.param_align: return ""
    n = address_align(idx, self.param_align, self.multiples)
    if fallback: n = min(n, math.gcd(fallback * idx.src[0].dtype.itemsize, self.param_align))
    return f", align {n}" if n > idx.src[0].dtype.itemsize else ""

  @staticmethod
  def elem(idx:UOp) -> str:
    """the element type an INDEX points at: REG/LOCAL arrays hold values, global buffers their in-memory form"""
    return ltype(idx.dtype) if idx.src[0].op is Ops.BUFFER else mtype(idx.src[0].dtype)
