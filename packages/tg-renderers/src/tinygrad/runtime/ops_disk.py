"""DISK:PATH: a file's bytes as a device. Every buffer on it maps the file from its first byte (mmap, shared: what is written lands in the
file, and nothing is read until a copy touches it); a slice, reshape or bitcast of one is a view of those bytes (schedule/byte_views.py).
It runs no kernels: a tensor on it is moved (`.to("CPU")`) to compute with, and written with assign or `.to("disk:PATH")`."""
from __future__ import annotations
import mmap, os
from tinygrad.device import Allocator, BufferSpec, Compiled

class DiskAllocator(Allocator):
  """a buffer is a memoryview over a map of the file's first `size` bytes; a file shorter than that is extended with zeros (a new
  file is made), a read-only one is mapped read-only"""
  def __init__(self, dev:DiskDevice): super().__init__(dev)
  def _alloc(self, size:int, options:BufferSpec) -> memoryview:
    path = self.dev.path
    try: fd, writable = os.open(path, os.O_RDWR | os.O_CREAT, 0o644), True
    except PermissionError: fd, writable = os.open(path, os.O_RDONLY), False
    try:
      if (have := os.fstat(fd).st_size) < size:
        if not writable: raise PermissionError(f"{self.dev.device}: the file holds {have} bytes, {size} are asked for, and it is read-only")
        os.ftruncate(fd, size)
      return memoryview(mmap.mmap(fd, size, access=mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ))
    finally: os.close(fd)
  def _offset(self, buf:memoryview, size:int, offset:int) -> memoryview: return buf[offset:offset + size]
  def _as_buffer(self, src:memoryview) -> memoryview: return src
  def _copyout(self, dest:memoryview, src:memoryview): dest[:] = src
  def _copyin(self, dest:memoryview, src:memoryview):
    if dest.readonly: raise PermissionError(f"{self.dev.device}: the file is read-only, it cannot be written")
    dest[:] = src

class DiskDevice(Compiled):
  def __init__(self, device:str):
    self.path = device.split(":", 1)[1]
    super().__init__(device, DiskAllocator(self), None, None, self._no_program)
  def _no_program(self, name:str, lib:bytes):
    raise RuntimeError(f"{self.device} runs no kernels ({name}): move the tensor to a device that computes first, e.g. .to('CPU')")
