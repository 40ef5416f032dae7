"""Ops.THREEFRY: one node per counter in the graph, its rounds made in the kernel (codegen/threefry.py). Oracles: the op's python
definition (uop/threefry.py, itself checked against Random123's known answers in tests/tensor) and numpy."""
import numpy as np
from tinygrad import Tensor, Device, dtypes
from tinygrad.uop import Ops
from tinygrad.codegen import get_program
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.uop.threefry import threefry_int

def _words(n:int, key:int) -> Tensor:
  k = Tensor([key], dtype=dtypes.uint64).realize()
  return Tensor(Tensor.arange(n, dtype=dtypes.uint64).uop.alu(Ops.THREEFRY, k[0].uop.reshape((1,)).expand((n,))))

def test_words_of_counters():
  key = 0x0123456789ABCDEF
  w = _words(1000, key)
  want = np.array([threefry_int(i, key) for i in range(1000)], np.uint64)
  np.testing.assert_array_equal(w.numpy(), want)
  np.testing.assert_array_equal((w >> 32).cast(dtypes.uint32).numpy(), (want >> np.uint64(32)).astype(np.uint32))
  np.testing.assert_array_equal(w.cast(dtypes.uint32).numpy(), want.astype(np.uint32))

def test_rand_kernel_has_no_64_bit_math():
  # the words are read as a cast and a shifted cast of the op: they are the rounds' own words, and the counter's and key's halves are
  # the words they were joined from
  t = Tensor._random_bits(4096, None, fused=True)
  its = [it for it in create_schedule([t.uop])[0] if it.kind == "kernel"]
  uops = get_program(its[-1].ast, Device["CPU"].renderer).uops
  assert not any(u.op is Ops.THREEFRY for u in uops)
  assert not [u for u in uops if u.dtype.scalar() is dtypes.uint64]

def test_words_read_by_two_kernels_are_computed_once():
  # the scheduler counts the op as its rounds (~120 ops): a buffer, not the rounds again in each reader's kernel
  w = _words(1000, 7)
  a, b = (w & 7).sum(), (w | 1).max()
  items, _ = create_schedule([a.uop, b.uop])
  assert len([it for it in items if it.kind == "kernel"]) == 3
  want = np.array([threefry_int(i, 7) for i in range(1000)], np.uint64)
  assert a.item() == int((want & np.uint64(7)).sum()) and b.item() == int((want | np.uint64(1)).max())
