"""NULL: renders kernels (C, or a renderer registered for NULL) and schedules them, runs nothing and holds no memory: copies out read
zeros. A renderer registered with a compiler (NULL:CUDA, NULL:PTX, NULL:AMD) compiles each kernel too, so a target's compile is tested
without its hardware; one without (NULL:C) compiles nothing."""
from __future__ import annotations
from tinygrad.device import Allocator, BufferSpec, Compiler, Compiled, Device

class NullAllocator(Allocator):
  def _alloc(self, size:int, options:BufferSpec) -> int: return size
  def _copyin(self, dest, src:memoryview): pass
  def _copyout(self, dest:memoryview, src): dest[:] = bytes(dest.nbytes)
  def _offset(self, buf, size:int, offset:int) -> int: return size

class NullCompiler(Compiler):
  def compile(self, src:str) -> bytes: return b""

class NullProgram:
  def __init__(self, name:str, lib:bytes): self.name = name
  def __call__(self, *bufs, vals:tuple[int, ...]=(), global_size=(1, 1, 1), local_size=(1, 1, 1), wait=False) -> float|None:
    return 1e-6 if wait else None  # nonzero: callers divide by it

class NullDevice(Compiled):
  def __init__(self, device:str="NULL"):
    renderer, compiler = Device.renderer_for(device)
    super().__init__(device, NullAllocator(self), renderer, compiler or NullCompiler(), NullProgram)
