"""Hand-built linear programs (the renderers' input) and running them on one target: "LLVM" and "C" (CPU), "PYTHON" (emulator)."""
import functools, shutil, os
import numpy as np
import pytest
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, ParamArg, VarArg
from tinygrad.dtype import DType, dtypes, AddrSpace

TARGETS = ["LLVM", "C", "PYTHON"]

class Prog:
  """appends nodes in the order they are made: the list is the program"""
  def __init__(self): self.uops: list[UOp] = []
  def add(self, u:UOp) -> UOp:
    if u not in self.uops: self.uops.append(u)
    return u
  def param(self, slot:int, dt:DType, n:int) -> UOp: return self.add(UOp(Ops.PARAM, dt, arg=ParamArg(slot, (n,))))
  def var(self, name:str, lo:int, hi:int) -> UOp: return self.add(UOp(Ops.DEFINE_VAR, dtypes.int32, arg=VarArg(name, lo, hi)))
  def reg(self, dt:DType, n:int, slot:int=0) -> UOp: return self.add(UOp(Ops.BUFFER, dt, arg=ParamArg(slot, (n,), AddrSpace.REG)))
  def const(self, v, dt:DType=dtypes.int32) -> UOp: return self.add(UOp(Ops.CONST, dt, arg=dtypes.as_const(v, dt)))
  def c(self, x, dt:DType) -> UOp: return x if isinstance(x, UOp) else self.const(x, dt)
  def alu(self, op:Ops, *src, dtype:DType|None=None) -> UOp:
    dt = dtype or next(s.dtype for s in src[op is Ops.WHERE:] if isinstance(s, UOp))  # the operands' dtype (WHERE: the values')
    srcs = tuple(self.c(s, dtypes.bool if op is Ops.WHERE and i == 0 else dt) for i, s in enumerate(src))
    out = dtypes.bool if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) else dt
    return self.add(UOp(op, out, srcs))
  def cast(self, x:UOp, dt:DType) -> UOp: return self.add(UOp(Ops.CAST, dt, (x,)))
  def bitcast(self, x:UOp, dt:DType) -> UOp: return self.add(UOp(Ops.BITCAST, dt, (x,)))
  def range(self, end, axis:int, dt:DType=dtypes.int32) -> UOp: return self.add(UOp(Ops.RANGE, dt, (self.c(end, dt),), (axis,)))
  def loop(self, axis:int) -> UOp: return self.add(UOp(Ops.RANGE, dtypes.void, (), (axis,)))
  def end(self, rng:UOp, cond:UOp|None=None) -> UOp: return self.add(UOp(Ops.END, dtypes.void, (rng,) if cond is None else (rng, cond)))
  def index(self, buf:UOp, i) -> UOp: return self.add(UOp(Ops.INDEX, buf.dtype, (buf, self.c(i, dtypes.int32))))
  def load(self, buf:UOp, i, alt=None, gate:UOp|None=None) -> UOp:
    idx = self.index(buf, i)
    return self.add(UOp(Ops.LOAD, buf.dtype, (idx,) if gate is None else (idx, self.c(alt, buf.dtype), gate)))
  def store(self, buf:UOp, i, val) -> UOp:
    idx = self.index(buf, i)
    return self.add(UOp(Ops.STORE, dtypes.void, (idx, self.c(val, buf.dtype))))
  def if_(self, cond:UOp) -> UOp: return self.add(UOp(Ops.IF, dtypes.void, (cond,)))
  def endif(self, i:UOp) -> UOp: return self.add(UOp(Ops.ENDIF, dtypes.void, (i,)))

@functools.cache
def device(target:str):
  from tinygrad.device import Device
  if target == "PYTHON": return Device["PYTHON"]
  if target == "C" and not (os.environ.get("CC") or any(shutil.which(c) for c in ("clang", "gcc", "cc"))):
    return None
  return Device[f"CPU:{target}"]

NP = {dtypes.bool: np.bool_, dtypes.int8: np.int8, dtypes.uint8: np.uint8, dtypes.int16: np.int16, dtypes.uint16: np.uint16,
      dtypes.int32: np.int32, dtypes.uint32: np.uint32, dtypes.int64: np.int64, dtypes.uint64: np.uint64, dtypes.float16: np.float16,
      dtypes.bfloat16: np.uint16, dtypes.float32: np.float32, dtypes.float64: np.float64}  # bfloat16 travels as its bit pattern

def run(target:str, prog:Prog, *arrays:np.ndarray, vals:tuple[int, ...]=(), name:str="test") -> list[np.ndarray]:
  """render, compile and run prog on target with copies of arrays as its buffers (in slot order); returns the buffers after"""
  if (dev := device(target)) is None: pytest.skip(f"no C compiler for target {target} (searched $CC, clang, gcc, cc)")
  prg = dev.runtime(name, dev.compiler.compile(dev.renderer.render(name, prog.uops)))
  bufs = []
  for a in arrays:
    bufs.append(b := dev.allocator.alloc(max(a.nbytes, 1)))
    dev.allocator._copyin(b, memoryview(np.ascontiguousarray(a).view(np.uint8).reshape(-1)))
  prg(*bufs, vals=vals)
  outs = []
  for a, b in zip(arrays, bufs):
    dev.allocator._copyout(memoryview(out := np.empty_like(a)).cast("B"), b)
    outs.append(out)
  return outs

def elementwise(op:Ops, dt:DType, n:int, nin:int=2, out_dt:DType|None=None, in_dts:tuple|None=None) -> Prog:
  """out[i] = op(in0[i], in1[i], ...) over a range of n"""
  p = Prog()
  in_dts = in_dts or (dt,)*nin
  out = p.param(0, out_dt or (dtypes.bool if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) else dt), n)
  ins = [p.param(i+1, d, n) for i, d in enumerate(in_dts)]
  r = p.range(n, 0)
  vals = [p.load(b, r) for b in ins]
  p.store(out, r, p.alu(op, *vals, dtype=dt))
  p.end(r)
  return p

def unary(fn, src_dt:DType, dst_dt:DType, n:int) -> Prog:
  """out[i] = fn(p, in[i]) for a node-building fn (a cast, a bitcast)"""
  p = Prog()
  out, inp = p.param(0, dst_dt, n), p.param(1, src_dt, n)
  r = p.range(n, 0)
  p.store(out, r, fn(p, p.load(inp, r)))
  p.end(r)
  return p
