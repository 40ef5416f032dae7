"""PYTHON: runs kernels in an emulator, op by op, with exact dtype semantics. Slow; the tests' oracle. A launch is a grid of work
groups run one after another; the items of a group run in turns, each until its next barrier, so a barrier separates phases and a
LOCAL buffer is shared by the group."""
from __future__ import annotations
import itertools, json, time
from tinygrad.uop import Ops, GroupOp
from tinygrad.dtype import DType, dtypes, truncate
from tinygrad.device import Allocator, BufferSpec, Compiler, Compiled, Device
from tinygrad.renderer.python import python_ops, cast_fn, bitcast_fn, to_bits, from_bits, wmma_warp
from tinygrad.renderer.linear import SKIP
from tinygrad.codegen.gpudims import workitem

def _alu(f, t): return lambda *a: t(f(*a))

class PythonProgram:
  """the serialised linear program; called like any program, plus the launch grid for kernels with SPECIAL work item indices"""
  def __init__(self, name:str, lib:bytes):
    self.name, rows = name, json.loads(lib)["uops"]
    self.uops: list[tuple[Ops, DType, tuple, object, object]] = []
    self.jump: dict[int, int] = {}  # RANGE/IF -> its END/ENDIF, END -> its RANGE
    for i, (op, dt, src, arg) in enumerate(rows):
      op, dt, src = Ops[op], dtypes.fields()[dt], tuple(src)
      sdt = self.uops[src[-1]][1] if src and src[-1] is not None else None
      fn = _alu(python_ops[op](sdt), truncate[dt]) if op in GroupOp.ALU else cast_fn(sdt, dt) if op is Ops.CAST else \
           bitcast_fn(sdt, dt) if op is Ops.BITCAST else None
      if op is Ops.CONST and dtypes.is_float(dt): arg = float(arg)
      if op is Ops.END:
        rng = next(s for s in src if s is not None and self.uops[s][0] is Ops.RANGE)
        self.jump[rng], self.jump[i] = i, rng
        src = (rng, src[-1]) if self.uops[rng][1] is dtypes.void else (rng,)  # (loop, do-while condition) or (range,)
      if op is Ops.ENDIF: self.jump[src[0]] = i
      if op is Ops.SPECIAL: arg = workitem(arg)
      self.uops.append((op, dt, src, arg, fn))
    self.params = sorted((arg, i) for i, (op, _, _, arg, _) in enumerate(self.uops) if op is Ops.PARAM)
    self.vars = sorted((arg, i) for i, (op, _, _, arg, _) in enumerate(self.uops) if op is Ops.DEFINE_VAR)
    self.shared = [(i, arg[0], dt) for i, (op, dt, _, arg, _) in enumerate(self.uops) if op is Ops.BUFFER and arg[1]]  # LOCAL buffers
    # the WMMA nodes of one instruction share their sources: the first runs it for the warp and sets the others, (node, element) each
    self.wmma: dict[int, list[tuple[int, int]]] = {}
    first: dict[tuple, int] = {}
    for i, (op, _, src, arg, _) in enumerate(self.uops):
      if op is Ops.WMMA: self.wmma.setdefault(first.setdefault(src, i), []).append((i, arg[2]))

  def __call__(self, *bufs:memoryview, vals:tuple[int, ...]=(), global_size=(1, 1, 1), local_size=(1, 1, 1), wait=False) -> float|None:
    if len(bufs) != len(self.params) or len(vals) != len(self.vars):
      raise TypeError(f"kernel {self.name} takes {len(self.params)} buffers and {len(self.vars)} vars, got {len(bufs)} and {len(vals)}")
    st = time.perf_counter()
    base: list = [None] * len(self.uops)
    for (_, i), b in zip(self.params, bufs): base[i] = self._view(b, self.uops[i][1])
    for (_, i), x in zip(self.vars, vals): base[i] = x
    for i, (op, _, _, arg, _) in enumerate(self.uops):
      if op is Ops.CONST: base[i] = arg
    gs, ls = (tuple(d) + (1,) * (3 - len(d)) for d in (global_size, local_size))
    for gid in itertools.product(*[range(g) for g in gs]):
      group = base.copy()
      for i, n, dt in self.shared: group[i] = self._buffer(n, dt)
      # items in the order of their flat id in the group (lidx0 fastest): a warp is 32 consecutive ones
      lids = sorted(itertools.product(*[range(lc) for lc in ls]), key=lambda lid: (lid[2], lid[1], lid[0]))
      items = [self._run(group.copy(), {"gidx": gid, "lidx": lid, "idx": tuple(g*s + lc for g, s, lc in zip(gid, ls, lid))}) for lid in lids]
      at = [next(it, None) for it in items]
      while items:  # one phase: each item runs to its next barrier or WMMA; the group goes on when all are there, or all have ended
        if len(pcs := {a and a[0] for a in at}) > 1:
          raise RuntimeError(f"kernel {self.name}: the items of group {gid} diverge at barriers (uops {sorted(pcs, key=str)})")
        if at[0] is None: break
        replies = self._warps(at[0][0], [a[1] for a in at]) if self.uops[at[0][0]][0] is Ops.WMMA else [None] * len(items)
        at = [self._resume(it, r) for it, r in zip(items, replies)]
    return time.perf_counter() - st if wait else None

  @staticmethod
  def _resume(item, reply):
    try: return item.send(reply)
    except StopIteration: return None

  def _warps(self, pc:int, srcs:list[list]) -> list[list]:
    """a WMMA: every warp of the group runs the instruction on its lanes' fragments; each item gets its own D elements back"""
    name, t, _ = self.uops[pc][3]
    if len(srcs) % t: raise RuntimeError(f"kernel {self.name}: {name} needs whole warps of {t}, the group has {len(srcs)} items")
    return [d for w in range(0, len(srcs), t) for d in wmma_warp(name, srcs[w:w+t])]

  @staticmethod
  def _buffer(n:int, dt:DType) -> tuple: return ([dtypes.as_const(0, dt)] * n, None, None)

  @staticmethod
  def _view(b:memoryview, dt:DType) -> tuple:
    """(indexable memory, value from stored, stored from value): float16/bfloat16 are stored as 16 bit patterns, fp8 as bytes"""
    if dt.fmt is None or dt is dtypes.float16: return (b.cast("B" if dt.itemsize == 1 else "H"), lambda x: from_bits(x, dt), lambda x: to_bits(x, dt))
    return (b.cast(dt.fmt), None, None)

  def _run(self, v:list, ids:dict[str, tuple[int, ...]]):
    """one work item, a generator: it stops at each barrier (yielding its position) until the whole group is there"""
    uops, jump, pc = self.uops, self.jump, 0
    while pc < len(uops):
      op, dt, src, arg, fn = uops[pc]
      if fn is not None: v[pc] = fn(*[v[s] for s in src])
      elif op is Ops.INDEX: v[pc] = (v[src[0]], v[src[1]])
      elif op is Ops.LOAD:
        if len(src) == 3 and not v[src[2]]: v[pc] = v[src[1]]  # gated off: the alternative, memory untouched
        else:
          (mem, load, _), i = self._check(v[src[0]], pc)
          v[pc] = mem[i] if load is None else load(mem[i])
      elif op is Ops.STORE:
        (mem, _, store), i = self._check(v[src[0]], pc)
        mem[i] = v[src[1]] if store is None else store(v[src[1]])
      elif op is Ops.RANGE:
        if dt is not dtypes.void:
          v[pc] = 0
          if v[src[0]] <= 0: pc = jump[pc]  # an empty range skips its body
      elif op is Ops.END:
        rng = src[0]
        if len(src) == 2:
          if v[src[1]]: pc = rng  # do-while: back to the top of the loop while the condition holds
        else:
          v[rng] += 1
          if v[rng] < v[uops[rng][2][0]]: pc = rng
      elif op is Ops.IF:
        if not v[src[0]]: pc = jump[pc]
      elif op is Ops.BUFFER:
        if v[pc] is None: v[pc] = self._buffer(arg[0], dt)  # a REG buffer per item; a LOCAL one is the group's, set before
      elif op is Ops.SPECIAL: v[pc] = ids[arg[0]][arg[1]]
      elif op is Ops.BARRIER: yield pc, None
      elif op is Ops.WMMA and pc in self.wmma:  # the warp runs it together: this lane's fragments out, its D elements back
        d = yield pc, [v[s] for s in src]
        for j, e in self.wmma[pc]: v[j] = d[e]
      elif op not in SKIP and op not in (Ops.ENDIF, Ops.PARAM, Ops.DEFINE_VAR, Ops.CONST, Ops.WMMA): raise RuntimeError(f"emulator cannot run {op}")
      pc += 1

  def _check(self, index:tuple, pc:int) -> tuple:
    buf, i = index
    if not 0 <= i < len(buf[0]): raise IndexError(f"kernel {self.name}: index {i} out of bounds of a buffer of {len(buf[0])} elements (uop {pc})")
    return buf, i

class PythonAllocator(Allocator):
  """host bytearrays; the memoryview is both the handle and the zero-copy view"""
  def _alloc(self, size:int, options:BufferSpec) -> memoryview: return memoryview(bytearray(size))
  def _as_buffer(self, src:memoryview) -> memoryview: return src
  def _copyin(self, dest:memoryview, src:memoryview): dest[:] = src
  def _copyout(self, dest:memoryview, src:memoryview): dest[:] = src
  def _offset(self, buf:memoryview, size:int, offset:int) -> memoryview: return buf[offset:offset+size]
  def _transfer(self, dest:memoryview, src:memoryview, nbytes:int, src_dev): dest[:nbytes] = src[:nbytes]  # PYTHON:n: host memory each

class PythonDevice(Compiled):
  runs_in_process = True
  def __init__(self, device:str="PYTHON"):
    super().__init__(device, PythonAllocator(self), Device.renderer_for(device)[0], Compiler(), PythonProgram)
