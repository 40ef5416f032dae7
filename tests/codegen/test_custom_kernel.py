"""Hand-written UOp kernels: through Tensor.custom_kernel on every executing backend, including bound-less do-while loops
(UOp.loop + END(body, loop, cond)), and straight through lowering and the linearizer."""
import pytest
from tinygrad import Tensor
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, KernelInfo
from tinygrad.dtype import dtypes, AddrSpace
from tinygrad.helpers import Context
from tinygrad.codegen.lowering import rewrite_to_program
from tinygrad.codegen.linearize import linearize

pytestmark = pytest.mark.hcq_matrix  # also on the mock AMD and NV devices (tests/conftest.py)

def counter():
  i = UOp.placeholder((1,), dtypes.int, 0, addrspace=AddrSpace.REG)
  return i.after(i[0].store(0))  # i = 0

def wait_loop_kernel(C:UOp) -> UOp:
  # i = 0; do { inc = i + 1; i = inc } while (inc < 10). The condition uses the computed value, not a reload.
  l, i = UOp.loop(0), counter()
  inc = i.after(l)[0].load() + 1
  i = i.after(i[0].store(inc).end(l, inc < 10))
  return C[0].store(i[0].load()).sink(arg=KernelInfo(name="wait_loop"))

def nested_loop_kernel(C:UOp) -> UOp:
  r, l, i = UOp.range(4, 0), UOp.loop(1), counter()
  inc = i.after(l, r)[0].load() + 1
  lend = i[0].store(inc).end(l, inc < (r.cast(dtypes.int)+1)*3)
  i = i.after(lend.end(r))
  return C[0].store(i[0].load()).sink(arg=KernelInfo(name="nested_loop", opts_to_apply=()))

def two_loops_kernel(C:UOp) -> UOp:
  l1, l2, i = UOp.loop(0), UOp.loop(1), counter()
  inc1 = i.after(l1)[0].load() + 1
  i = i.after(i[0].store(inc1).end(l1, inc1 < 10))
  inc2 = i.after(l2)[0].load() + 1
  i = i.after(i[0].store(inc2).end(l2, inc2 < 25))
  return C[0].store(i[0].load()).sink(arg=KernelInfo(name="two_loops", opts_to_apply=()))

def loop_in_loop_kernel(C:UOp) -> UOp:
  # outer loop while i < 12; the inner loop increments until i % 4 == 0; the outer condition reloads i after the inner loop
  l1, l2, i = UOp.loop(0), UOp.loop(1), counter()
  inc = i.after(l1, l2)[0].load() + 1
  e2 = i[0].store(inc).end(l2, inc % 4 != 0)
  oc = i.after(e2)[0].load()
  i = i.after(e2.end(l1, oc < 12))
  return C[0].store(i[0].load()).sink(arg=KernelInfo(name="loop_in_loop", opts_to_apply=()))

@pytest.mark.parametrize("fxn, expected", [(wait_loop_kernel, 10), (nested_loop_kernel, 12), (two_loops_kernel, 25), (loop_in_loop_kernel, 12)])
def test_do_while_loops(device, fxn, expected):
  c = Tensor.empty(1, dtype=dtypes.int, device=device)
  c = Tensor.custom_kernel(c, fxn=fxn)[0]
  assert c.realize().item() == expected

def test_custom_elementwise_kernel(device):
  import numpy as np
  def add_kernel(out:UOp, a:UOp, b:UOp) -> UOp:
    r = UOp.range(a.shape[0], 0)
    return out[r].store(a[r].load() + b[r].load()).end(r).sink(arg=KernelInfo(name="custom_add"))
  a, b = Tensor([1., 2., 3., 4.], device=device), Tensor([10., 20., 30., 40.], device=device)
  out = Tensor.custom_kernel(Tensor.empty(4, device=device), a, b, fxn=add_kernel)[0]
  np.testing.assert_allclose(out.numpy(), [11., 22., 33., 44.])

def four_axis_sum(n:int) -> UOp:
  # one reduce over 4 axes, its index terms each on another subset of them: {0,2}, {1,3}, {0,1,3}, {0,2,3}
  out, a = UOp.param(0, dtypes.float, (1,)), UOp.param(1, dtypes.float, (n**3,))
  r0, r1, r2, r3 = rs = [UOp.range(n, i, AxisType.REDUCE) for i in range(4)]
  i02, i13 = r0*n + r2, r1*n + r3
  val = a[i02].load() + a[i13].load() + a[i13 + r0*n*n].load() + a[i02*n + r3].load()
  return out[0].store(val.reduce(*rs, op=Ops.ADD)).sink(arg=KernelInfo(name="four_axis_sum"))

def test_loop_nesting_ignores_visit_order():
  # the linearizer visits groups of ranges in set order (object ids): fresh graphs give other orders, and the nesting must not change
  # (it once ranked ranges by state built up along the way, and every few graphs nested two loops both ways)
  with Context(NOOPT=1): keep = [rewrite_to_program(four_axis_sum(n)) for n in range(2, 52)]  # the loops as written, no unrolled axis
  for sink in keep: assert [u.arg[0] for u in linearize(sink) if u.op is Ops.RANGE] == [0, 1, 2, 3]

@pytest.mark.parametrize("fxn", [wait_loop_kernel, nested_loop_kernel, two_loops_kernel, loop_in_loop_kernel])
def test_do_while_loops_compile_on_null(fxn):
  from tinygrad.helpers import GlobalCounters
  GlobalCounters.reset()
  Tensor.custom_kernel(Tensor.empty(1, dtype=dtypes.int, device="NULL"), fxn=fxn)[0].realize()
  assert GlobalCounters.kernel_count == 1
