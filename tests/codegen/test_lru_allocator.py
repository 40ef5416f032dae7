"""LRUAllocator (engine/device_base.py): freed memory is kept per (size, options) and handed to the next allocation of that size; the
caches of all allocators share one byte limit, an allocator empties its own when an allocation fails, and none holds external or nolru
memory."""
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.device import Buffer, BufferSpec, LRUAllocator
from tinygrad.dtype import dtypes
from tinygrad.schedule.rangeify import create_schedule

class CountingAllocator(LRUAllocator):
  """host bytearrays; counts device allocations and frees, and fails the next `fail` allocations"""
  def __init__(self):
    super().__init__()
    self.allocs, self.frees, self.fail = 0, 0, 0
  def _alloc(self, size:int, options:BufferSpec):
    if self.fail:
      self.fail -= 1
      raise MemoryError("out of device memory")
    self.allocs += 1
    return bytearray(size)
  def _free(self, opaque, options:BufferSpec): self.frees += 1

def _free_all_caches():
  for owner in {id(o): o for o, _, _ in list(LRUAllocator.order.values())}.values(): owner.free_cache()

@pytest.fixture
def own_cache(monkeypatch):
  """the test starts with every cache empty and a limit of its own, and leaves every cache empty"""
  _free_all_caches()
  monkeypatch.setattr(LRUAllocator, "limit", 1 << 20)
  yield
  _free_all_caches()
  assert LRUAllocator.total == 0 and not LRUAllocator.order

pytestmark = pytest.mark.usefixtures("own_cache")

def test_freed_memory_is_reused_for_the_same_size_and_options():
  a = CountingAllocator()
  m = a.alloc(64)
  a.free(m, 64)
  assert a.alloc(64) is m and a.allocs == 1 and a.cached_bytes == 0
  a.free(m, 64)
  assert a.alloc(32) is not m and a.alloc(64, BufferSpec(host=True)) is not m and a.allocs == 3
  assert a.cached_bytes == 64 and a.frees == 0

def test_external_and_nolru_memory_is_never_cached():
  a = CountingAllocator()
  a.free(a.alloc(16, BufferSpec(nolru=True)), 16, BufferSpec(nolru=True))
  a.free(bytearray(16), 16, BufferSpec(external_ptr=1234))
  assert a.frees == 2 and a.cached_bytes == 0 and not any(a.cache.values())

def test_limit_is_shared_and_drops_what_was_freed_longest_ago(monkeypatch):
  monkeypatch.setattr(LRUAllocator, "limit", 100)
  a, b = CountingAllocator(), CountingAllocator()
  old, mid, new = a.alloc(40), b.alloc(30), a.alloc(40)
  a.free(old, 40); b.free(mid, 30)
  assert (a.cached_bytes, b.cached_bytes, LRUAllocator.total) == (40, 30, 70) and a.frees == b.frees == 0
  a.free(new, 40)  # 110 > 100 over both allocators: the oldest (a's first 40) goes back to the device
  assert LRUAllocator.total == 70 and a.frees == 1 and a.alloc(40) is new and b.alloc(30) is mid and LRUAllocator.total == 0
  b.free(mid, 30); a.free(a.alloc(200), 200)  # bigger than the limit: freed at once, the rest stays
  assert a.frees == 2 and b.frees == 0 and LRUAllocator.total == 30

def test_failed_allocation_empties_the_cache_and_retries():
  a = CountingAllocator()
  for m in [a.alloc(8), a.alloc(16)]: a.free(m, len(m))
  a.fail = 1
  assert len(a.alloc(24)) == 24 and a.frees == 2 and a.cached_bytes == 0
  a.fail = 1  # nothing cached: the error is the caller's
  with pytest.raises(MemoryError): a.alloc(24)
  with pytest.raises(ValueError, match="cannot allocate 0 bytes"): a.alloc(0)

def test_free_cache_returns_everything():
  a = CountingAllocator()
  for m in [a.alloc(n) for n in (8, 8, 16)]: a.free(m, len(m))
  assert a.cached_bytes == 32
  b = CountingAllocator()
  b.free(b.alloc(8), 8)
  a.free_cache()
  assert a.frees == 3 and a.cached_bytes == 0 and a.cache == {} and LRUAllocator.total == 8 and b.alloc(8) is not None and b.allocs == 1

def test_cpu_reruns_allocate_nothing_new():
  x = Tensor(np.arange(1 << 16, dtype=np.float32)).realize()
  alloc = Device["CPU"].allocator
  assert isinstance(alloc, LRUAllocator)
  (x * 2).realize()
  calls, orig = [], alloc._alloc
  alloc._alloc = lambda size, options: calls.append(size) or orig(size, options)
  try:
    for k in range(3): np.testing.assert_equal((x * k).numpy(), np.arange(1 << 16, dtype=np.float32) * k)
  finally: del alloc._alloc
  assert calls == []

def test_cpu_reused_buffer_is_not_handed_out_while_alive():
  a = Tensor(np.full(4096, 3, np.float32)).realize()
  b = (a + 1).realize()
  c = (a + 2).realize()  # b is alive: c must get other memory
  np.testing.assert_equal(b.numpy(), 4)
  np.testing.assert_equal(c.numpy(), 5)
  del b  # its memory goes to the cache and comes back for d, stale 4s and all: d's kernel overwrites them
  d = (a + 3).realize()
  np.testing.assert_equal(d.numpy(), 6)
  np.testing.assert_equal(c.numpy(), 5)

def test_beam_scratch_buffers_are_zero_even_from_the_cache():
  from tinygrad.codegen.opt.search import _scratch  # imported here: search pulls in multiprocessing
  t = Tensor(np.arange(16, dtype=np.int32)).realize()
  ast = next(it.ast for it in create_schedule([(t + 1).uop])[0])
  dirty = Buffer("CPU", 16, dtypes.int32).ensure_allocated().copyin(memoryview(np.full(16, 7, np.int32)))
  dirty.deallocate()  # into the cache, holding 7s
  for b in _scratch(ast, "CPU"): assert not b.numpy().any()

def test_equal_buffer_specs_are_one_object_and_share_the_cache():
  import copy, pickle
  spec = BufferSpec(host=True)
  assert spec is BufferSpec(False, False, True) and pickle.loads(pickle.dumps(spec)) is spec and copy.deepcopy(spec) is spec
  assert spec is not BufferSpec() and BufferSpec() is BufferSpec()
  a = CountingAllocator()
  m = a.alloc(64, BufferSpec(host=True))
  a.free(m, 64, BufferSpec(host=True))
  assert a.alloc(64, spec) is m and a.allocs == 1
