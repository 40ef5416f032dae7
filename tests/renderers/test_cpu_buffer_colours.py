"""The CPU allocator starts each new buffer at its own offset into its first page (ops_cpu.py, COLOUR_STEP): page-aligned buffers put
the same row of every buffer in the same L1 sets, and a kernel reading many of them with rows a multiple of 4 KB apart evicted its own
lines (an LSTM's weight gradient over 16 steps of 1024-wide gate gradients ran at a third of its speed). The offsets keep BUFFER_ALIGN,
which LLVM kernels assume, a cached buffer comes back with its offset, and views, copies and kernels see the same bytes. Values
against numpy."""
import ctypes
import numpy as np
from tinygrad import Tensor, Device
from tinygrad.device import Buffer, BufferSpec
from tinygrad.dtype import dtypes
from tinygrad.engine.realize import buffer_of
from tinygrad.renderer.host_cpu import BUFFER_ALIGN
from tinygrad.runtime.ops_cpu import PAGE

def _offset(b:Buffer) -> int: return ctypes.addressof(b._buf) % PAGE

def test_successive_buffers_start_at_different_lines_of_a_page():
  # nolru: never cached, so none of them is a buffer another test freed (which keeps the colour it was made with)
  bufs = [Buffer("CPU", 4096, dtypes.uint8, options=BufferSpec(nolru=True)).ensure_allocated() for _ in range(PAGE // BUFFER_ALIGN)]
  offsets = [_offset(b) for b in bufs]
  assert all(o % BUFFER_ALIGN == 0 for o in offsets), offsets
  assert len(set(offsets)) == PAGE // BUFFER_ALIGN, sorted(offsets)  # every line of the page before a colour repeats

def test_a_cached_buffer_comes_back_at_its_offset():
  b = Buffer("CPU", 12345, dtypes.uint8).ensure_allocated()
  addr = ctypes.addressof(b._buf)
  b.deallocate()
  assert ctypes.addressof(Buffer("CPU", 12345, dtypes.uint8).ensure_allocated()._buf) == addr

def test_values_through_views_copies_and_a_many_buffer_kernel():
  rng = np.random.default_rng(0)
  xs = [rng.standard_normal((16, 256), dtype=np.float32) for _ in range(16)]
  gs = [rng.standard_normal((16, 1024), dtype=np.float32) for _ in range(16)]
  tx, tg = [Tensor(x, device="CPU").realize() for x in xs], [Tensor(g, device="CPU").realize() for g in gs]
  assert len({_offset(buffer_of(t.uop.base)) for t in tx + tg}) > 1
  w = tx[0].T @ tg[0]
  for x, g in zip(tx[1:], tg[1:]): w = w + x.T @ g
  np.testing.assert_allclose(w.numpy(), sum(x.T.astype(np.float64) @ g for x, g in zip(xs, gs)), rtol=1e-4, atol=1e-3)
  np.testing.assert_array_equal(tg[3][5:9, 100:700].numpy(), gs[3][5:9, 100:700])  # a view at an offset of a coloured buffer
  np.testing.assert_array_equal(tg[7].to("CPU:1").numpy(), gs[7])  # a copy between CPU devices (one memmove)
  assert Device["CPU"].allocator is not Device["CPU:1"].allocator
