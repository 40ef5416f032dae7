"""Hand-written GPU-shaped kernels (work-item ids, LOCAL memory, barriers) through Tensor.custom_kernel on the PYTHON emulator, checked
against numpy: the emulator runs a grid of work groups whose items share LOCAL buffers and meet at barriers."""
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, KernelInfo
from tinygrad.dtype import dtypes, AddrSpace

def grid_fma(out:UOp, a:UOp, b:UOp) -> UOp:
  # a 2x3 grid of 4x2 groups over a (2*4, 3*2) matrix: row = gidx1*4 + lidx1, column = gidx0*2 + lidx0
  row = UOp.special(2, "gidx1") * 4 + UOp.special(4, "lidx1")
  col = UOp.special(3, "gidx0") * 2 + UOp.special(2, "lidx0")
  i = row * 6 + col
  return out[i].store(a[i].load() * b[i].load() + row.cast(dtypes.float)).sink(arg=KernelInfo(name="grid_fma"))

def test_grid_elementwise():
  a, b = np.random.default_rng(0).standard_normal((2, 48)).astype(np.float32)
  out = Tensor.custom_kernel(Tensor.empty(48, device="PYTHON"), Tensor(a, device="PYTHON"), Tensor(b, device="PYTHON"), fxn=grid_fma)[0]
  # the emulator fuses a*b+k (Ops.MULACC): one rounding of the exact value, within half an ulp of the float64 one
  np.testing.assert_allclose(out.numpy(), a.astype(np.float64) * b + np.repeat(np.arange(8), 6), rtol=1.2e-7, atol=1e-9)

L = 16  # items per group, each group sums L elements

def _tree_step(cur:UOp, lid:UOp, s:UOp|int) -> UOp:
  """smem[l] += smem[l+s] for l < s (the others keep theirs), then a barrier: the store every item sees after it"""
  v = cur[lid].load() + cur[(lid < s).where(lid + s, lid)].load()
  return cur[lid].store((lid < s).where(v, cur[lid].load())).barrier()

def group_sum_unrolled(out:UOp, x:UOp) -> UOp:
  g, lid = UOp.special(out.shape[0], "gidx0"), UOp.special(L, "lidx0")
  smem = UOp.placeholder((L,), dtypes.float, 0, addrspace=AddrSpace.LOCAL)
  cur = smem.after(smem[lid].store(x[g*L + lid].load()).barrier())
  for s in (8, 4, 2, 1): cur = smem.after(_tree_step(cur, lid, s))
  return out[g].store(cur[0].load()).sink(arg=KernelInfo(name="group_sum_unrolled"))

def group_sum_loop(out:UOp, x:UOp) -> UOp:
  # the same tree as a loop with a barrier inside: step r halves the stride, s = 8 >> r
  g, lid = UOp.special(out.shape[0], "gidx0"), UOp.special(L, "lidx0")
  smem = UOp.placeholder((L,), dtypes.float, 0, addrspace=AddrSpace.LOCAL)
  filled = smem[lid].store(x[g*L + lid].load()).barrier()
  r = UOp.range(4, 0)
  step = _tree_step(smem.after(filled, r), lid, UOp.const(dtypes.weakint, L // 2).alu(Ops.SHR, r))
  return out[g].store(smem.after(step.end(r))[0].load()).sink(arg=KernelInfo(name="group_sum_loop"))

@pytest.mark.parametrize("fxn", [group_sum_unrolled, group_sum_loop])
def test_reduce_through_local_memory(fxn):
  x = np.random.default_rng(1).standard_normal(5 * L).astype(np.float32)
  out = Tensor.custom_kernel(Tensor.empty(5, device="PYTHON"), Tensor(x, device="PYTHON"), fxn=fxn)[0]
  np.testing.assert_allclose(out.numpy(), x.reshape(5, L).sum(1), rtol=1e-5, atol=1e-5)

def test_without_the_barrier_the_tree_reads_stale_values():
  # the barriers are what makes the sum right: without them each item runs alone to the end, and item 0 adds values not yet summed
  def no_barrier(out:UOp, x:UOp) -> UOp:
    g, lid = UOp.special(1, "gidx0"), UOp.special(L, "lidx0")
    smem = UOp.placeholder((L,), dtypes.float, 0, addrspace=AddrSpace.LOCAL)
    cur = smem.after(smem[lid].store(x[g*L + lid].load()))
    for s in (8, 4, 2, 1): cur = smem.after(_tree_step(cur, lid, s).src[0])
    return out[g].store(cur[0].load()).sink(arg=KernelInfo(name="no_barrier"))
  x = np.ones(L, np.float32)
  assert Tensor.custom_kernel(Tensor.empty(1, device="PYTHON"), Tensor(x, device="PYTHON"), fxn=no_barrier)[0].item() != L

def test_items_that_miss_a_barrier_are_an_error():
  # item l meets the barrier in its loop l+1 times: the group cannot go on together
  def divergent(out:UOp) -> UOp:
    lid = UOp.special(4, "lidx0")
    r = UOp.range(lid + 1, 0)
    return out[lid].store(r.cast(dtypes.int)).barrier().end(r).sink(arg=KernelInfo(name="divergent"))
  with pytest.raises(RuntimeError, match="diverge at barriers"):
    Tensor.custom_kernel(Tensor.empty(4, dtype=dtypes.int, device="PYTHON"), fxn=divergent)[0].realize()
