"""What the LLVM renderer knows of a kernel's addresses (the multiple an index is known to be, how far a loop moves it), and which
accesses of a linear program go past the cache: non-temporal stores to an output, non-temporal loads of an input, each only where the
kernel streams whole aligned vectors that it touches once."""
from __future__ import annotations
import math
from collections import defaultdict
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes
from tinygrad.helpers import prod
from tinygrad.renderer.linear import loop_of

def loop_nest(uops:list[UOp]):
  """(node, the loops open after it, innermost last) for each node of a linear program: a RANGE is among its own, an END's is not"""
  loops: list[UOp] = []
  for u in uops:
    if u.op is Ops.RANGE: loops.append(u)
    elif u.op is Ops.END and (r := loop_of(u)[0]) in loops: loops.remove(r)
    yield u, loops

STREAM_BLOCK = 32  # bytes: one AVX vector. A non-temporal store of less than a whole aligned vector is split into scalar ones
# ALU ops per stored element above which a kernel computes more than it moves: its stores stay cached. LLVM's loop vectorizer refuses a
# loop with a non-temporal store whose lanes are not each aligned to a vector (every upcast lane past the first), leaving the SLP vectorizer
# to pack one trip's lanes, at half width or worse. At THREADS=1, 4096x4096, AVX-512, CPU time: (a*b+c).relu()*0.5 (6 ops a lane) 5.7 ms
# streamed against 10.8 cached, but exp (33) 31.2 against 14.1, sigmoid (35) 32.4 / 14.4, tanh (38) 34.2 / 14.9, gelu (46) 36.2 / 16.7,
# Tensor._random_bits (threefry, 95) 64 / 18 ms
STREAM_MAX_ALU = 16

def known_multiple(u:UOp, memo:dict) -> int:
  """the largest integer known to divide u's value (0 when u is 0), read off its adds, multiplies and shifts by constants; 1 for a
  loop counter, thread id or variable"""
  if (m := memo.get(u)) is not None: return m
  if u.op is Ops.CONST: m = abs(int(u.arg)) if isinstance(u.arg, int) else 1
  elif u.op is Ops.ADD: m = math.gcd(known_multiple(u.src[0], memo), known_multiple(u.src[1], memo))
  elif u.op is Ops.MUL: m = known_multiple(u.src[0], memo) * known_multiple(u.src[1], memo)
  elif u.op is Ops.SHL and u.src[1].op is Ops.CONST: m = known_multiple(u.src[0], memo) << u.src[1].arg
  elif u.op is Ops.CAST and dtypes.is_int(u.dtype) and dtypes.is_int(u.src[0].dtype) and u.dtype.itemsize >= u.src[0].dtype.itemsize:
    m = known_multiple(u.src[0], memo)
  else: m = 1
  memo[u] = m
  return m

def address_align(idx:UOp, base_align:int, memo:dict) -> int:
  """the power of two the byte address of INDEX idx is known to be a multiple of, given its buffer's base alignment"""
  m = known_multiple(idx.src[1], memo) * idx.src[0].dtype.itemsize
  return base_align if m == 0 else math.gcd(m, base_align)

def loop_step(u:UOp, rng:UOp) -> int|None:
  """how much u grows per trip of loop rng: the coefficient of rng in u, 0 when u does not depend on it, None when it is not linear in it"""
  if u is rng: return 1
  if u.op in (Ops.CONST, Ops.DEFINE_VAR, Ops.SPECIAL, Ops.RANGE): return 0
  if u.op is Ops.ADD and None not in (a := loop_step(u.src[0], rng), b := loop_step(u.src[1], rng)): return a + b
  if u.op is Ops.MUL:
    for x, c in (u.src, u.src[::-1]):
      if c.op is Ops.CONST and isinstance(c.arg, int) and (a := loop_step(x, rng)) is not None: return a * c.arg
  if u.op is Ops.SHL and u.src[1].op is Ops.CONST and (a := loop_step(u.src[0], rng)) is not None: return a << u.src[1].arg
  if u.op is Ops.CAST and dtypes.is_int(u.dtype) and u.dtype.itemsize >= u.src[0].dtype.itemsize: return loop_step(u.src[0], rng)
  return 0 if rng not in u.toposort() else None

def streamed_stores(uops:list[UOp], base_align:int, above_bytes:int|None) -> set[UOp]:
  """the stores that bypass the cache: those to an output bigger than `above_bytes` (the last-level cache: a stream that does not fit
  gains nothing from being cached, and a non-temporal store skips reading each line before it is overwritten), and only where each trip
  of the innermost loop writes every lane of the aligned STREAM_BLOCKs it moves on by (the vectorizer merges the lanes into aligned vector
  stores, and consecutive trips fill whole cache lines: a scattered non-temporal store writes part of a line to memory on its own), and
  only in a loop that does at most STREAM_MAX_ALU ALU ops per element it stores"""
  if not above_bytes or base_align < STREAM_BLOCK: return set()
  memo: dict = {}
  loops: list[UOp] = []
  alu: dict[UOp, int] = defaultdict(int)  # innermost loop -> ALU ops in its body
  stores: dict[UOp, int] = defaultdict(int)  # innermost loop -> stores in its body
  inner: dict[UOp, UOp] = {}  # store -> its innermost loop
  blocks: dict[tuple, dict[int, UOp]] = defaultdict(dict)  # (buf, base, lanes, block) -> lane -> store
  steps: dict[tuple, int] = {}  # (buf, base, lanes) -> elements a trip of the innermost loop moves on by
  for u in uops:
    if u.op is Ops.RANGE: loops.append(u)
    elif u.op is Ops.END and (r := loop_of(u)[0]) in loops: loops.remove(r)
    if loops and u.op in GroupOp.ALU: alu[loops[-1]] += 1
    if loops and u.op is Ops.STORE: stores[loops[-1]] += 1
    if u.op is not Ops.STORE or not loops or (buf := u.src[0].src[0]).op is not Ops.PARAM or not isinstance(buf.arg.shape, tuple): continue
    size = buf.dtype.itemsize
    if prod(buf.arg.shape) * size <= above_bytes or STREAM_BLOCK % size: continue
    i, lanes = u.src[0].src[1], STREAM_BLOCK // size
    # an address computed from loaded values (a scatter-add, codegen/onehot_scatter.py) revisits rows it has just read: cached
    if any(x.op is Ops.LOAD for x in i.toposort()): continue
    base, off = (i.src[0], i.src[1].arg) if i.op is Ops.ADD and i.src[1].op is Ops.CONST else (i, 0)
    if math.gcd(known_multiple(base, memo) * size, base_align) % STREAM_BLOCK: continue
    if not (step := loop_step(base, loops[-1])) or step % lanes: continue
    steps[(buf, base, lanes)] = step
    blocks[(buf, base, lanes, off // lanes)][off % lanes] = u
    inner[u] = loops[-1]
  whole = {k for k, lanes_stored in blocks.items() if len(lanes_stored) == k[2]}
  return {u for k, lanes_stored in blocks.items() if all((*k[:3], j) in whole for j in range(steps[k[:3]] // k[2])) for u in lanes_stored.values()
          if alu[inner[u]] <= STREAM_MAX_ALU * stores[inner[u]]}

def _extent(u:UOp) -> int|None:
  """how many values a loop counter or thread id takes, when the program says it as a constant"""
  return u.src[0].arg if u.op in (Ops.RANGE, Ops.SPECIAL) and u.src and u.src[0].op is Ops.CONST else None

def _walks_once(base:UOp, lanes:int, counters:list[UOp]) -> bool:
  """the index base + 0..lanes-1, over every value of the counters, meets no element twice: each counter moves it by a step past the
  span of the smaller steps (a sufficient test: steps sorted, each beyond what the ones below it reach)"""
  moves = []
  for c in counters:
    if not (step := loop_step(base, c)) or (n := _extent(c)) is None: return False
    moves.append((abs(step), n))
  reach = lanes - 1
  for step, n in sorted(moves):
    if step <= reach: return False
    reach += step * (n - 1)
  return True

def streamed_loads(uops:list[UOp], base_align:int, above_bytes:int|None) -> set[UOp]:
  """the loads that bypass the cache: of an input bigger than `above_bytes` that the kernel reads once, all of it at one place in the
  program (one index plus the constant offsets of whole aligned STREAM_BLOCKs, each element once over every loop and thread around it),
  and does not write, in a loop that does at most STREAM_MAX_ALU ALU ops per element it loads (LLVM's loop vectorizer refuses such a
  load as it refuses such a store). A stream that does not fit the last-level cache evicts all of it as it goes, the interpreter's
  working set with it: the python after a 64 MB sum took 2-3x its time (bench/RESULTS.md, stop 35). A non-temporal load from ordinary
  memory skips that on CPUs that honour the hint (AMD's: vmovntdqa keeps the line out of L2 and L3) and is an ordinary load elsewhere"""
  if not above_bytes or base_align < STREAM_BLOCK: return set()
  memo: dict = {}
  threads = [u for u in uops if u.op is Ops.SPECIAL]
  sites: dict[UOp, dict[tuple, list[tuple[int, UOp]]]] = defaultdict(lambda: defaultdict(list))  # buf -> (base, loops) -> (offset, load)
  written, refused = set(), set()
  alu: dict[UOp, int] = defaultdict(int)  # innermost loop -> ALU ops in its body
  loads: dict[UOp, int] = defaultdict(int)  # innermost loop -> loads of global buffers in its body
  for u, loops in loop_nest(uops):
    if loops and u.op in GroupOp.ALU: alu[loops[-1]] += 1
    if u.op is Ops.STORE: written.add(u.src[0].src[0])
    if u.op is not Ops.LOAD or (buf := u.src[0].src[0]).op is not Ops.PARAM or not isinstance(buf.arg.shape, tuple): continue
    if loops: loads[loops[-1]] += 1
    size, i = buf.dtype.itemsize, u.src[0].src[1]
    if len(u.src) != 1 or not loops or prod(buf.arg.shape) * size <= above_bytes or STREAM_BLOCK % size or \
       any(x.op is Ops.LOAD for x in i.toposort()):
      refused.add(buf)
      continue
    base, off = (i.src[0], i.src[1].arg) if i.op is Ops.ADD and i.src[1].op is Ops.CONST else (i, 0)
    sites[buf][(base, tuple(loops))].append((off, u))
  out: set[UOp] = set()
  for buf, at in sites.items():
    if buf in written or buf in refused or len(at) != 1: continue
    (base, loops), lanes = next(iter(at.items()))
    offs, block = sorted(off for off, _ in lanes), STREAM_BLOCK // buf.dtype.itemsize
    if offs != list(range(offs[0], offs[0] + len(offs))) or offs[0] % block or len(offs) % block: continue
    if math.gcd(known_multiple(base, memo) * buf.dtype.itemsize, base_align) % STREAM_BLOCK: continue
    if alu[loops[-1]] > STREAM_MAX_ALU * loads[loops[-1]]: continue
    if _walks_once(base, len(offs), list(loops) + threads): out |= {u for _, u in lanes}
  return out
