"""The three kernels every GPU renderer has golden text for: elementwise, a reduction through LOCAL memory, and a do-while loop."""
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, KernelInfo
from tinygrad.dtype import dtypes, AddrSpace
from linprog import Prog

def elementwise_ast() -> UOp:
  """out[i] = a[i] * 2 + b[i] over 64 items: 4 work groups of 16 (GLOBAL and LOCAL axes)"""
  out, a, b = UOp.param(0, dtypes.float, (64,)), UOp.param(1, dtypes.float, (64,)), UOp.param(2, dtypes.float, (64,))
  g, lc = UOp.range(4, 0, AxisType.GLOBAL), UOp.range(16, 1, AxisType.LOCAL)
  i = g * 16 + lc
  return out[i].store(a[i].load() * 2.0 + b[i].load()).end(g, lc).sink(arg=KernelInfo(name="fma64"))

def local_sum_ast() -> UOp:
  """out[g] = sum of x[g*4 .. g*4+3]: each of the 4 items of group g stores its element in LOCAL memory, a barrier, then item 0 adds"""
  out, x = UOp.param(0, dtypes.float, (8,)), UOp.param(1, dtypes.float, (32,))
  g, lc = UOp.range(8, 0, AxisType.GLOBAL), UOp.range(4, 1, AxisType.LOCAL)
  smem = UOp.placeholder((4,), dtypes.float, 0, addrspace=AddrSpace.LOCAL)
  shared = smem.after(smem[lc].store(x[g*4 + lc].load()).barrier())
  total = shared[0].load() + shared[1].load() + shared[2].load() + shared[3].load()
  return out[g].store(total).end(g, lc).sink(arg=KernelInfo(name="local_sum", opts_to_apply=()))

def do_while() -> list[UOp]:
  """acc = 0; do { acc += 1 } while (acc < 10); out[0] = acc -- a linear program"""
  p = Prog()
  out, acc = p.param(0, dtypes.int32, 1), p.reg(dtypes.int32, 1)
  p.store(acc, 0, 0)
  loop = p.loop(0)
  inc = p.alu(Ops.ADD, p.load(acc, 0), 1)
  p.store(acc, 0, inc)
  p.end(loop, p.alu(Ops.CMPLT, inc, 10))
  p.store(out, 0, p.add(UOp(Ops.LOAD, dtypes.int32, (p.index(acc, 0),), tag="result")))
  return p.uops
