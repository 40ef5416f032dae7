"""What every device is made of: Buffer (typed memory on a device), Allocator, Compiler (with the disk cache) and Compiled."""
from __future__ import annotations
import collections, dataclasses, pickle, weakref
from dataclasses import dataclass
from typing import Any, Callable
from tinygrad.dtype import DType
from tinygrad.helpers import GlobalCounters, diskcache_get, diskcache_put, getenv

class CompileError(RuntimeError):
  """a renderer's source did not compile: the message holds the compiler's output"""

class _Interned(type):
  """equal specs are one object: the allocator caches key on them by identity (hashed in C; a frozen dataclass hashes in python, three
  times per buffer allocated and freed). Held weakly: a spec per external pointer does not pile up"""
  made: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
  def __call__(cls, *args, **kwargs):
    spec = super().__call__(*args, **kwargs)
    return _Interned.made.setdefault((cls, dataclasses.astuple(spec)), spec)

@dataclass(frozen=True, eq=False)
class BufferSpec(metaclass=_Interned):
  """allocation options a device may honor; the default is plain device memory"""
  uncached: bool = False
  cpu_access: bool = False
  host: bool = False
  nolru: bool = False
  external_ptr: int|None = None
  def __reduce__(self): return BufferSpec, dataclasses.astuple(self)  # unpickled through the intern table

class Allocator:
  """device memory by bytes. Subclasses implement _alloc/_copyin/_copyout, optionally _free, _as_buffer (zero-copy host view), _offset (views)
  and _transfer(dest, src, nbytes, src_dev) (a copy from another device of the same kind without a stop on the host)"""
  def __init__(self, dev:Any=None): self.dev, self.default_buffer_spec = dev, BufferSpec()
  def alloc(self, size:int, options:BufferSpec|None=None):
    if size <= 0: raise ValueError(f"{type(self).__name__}: cannot allocate {size} bytes (sizes must be positive)")
    return self._alloc(size, options or self.default_buffer_spec)
  def free(self, opaque, size:int, options:BufferSpec|None=None): self._free(opaque, options or self.default_buffer_spec)
  def _alloc(self, size:int, options:BufferSpec): raise NotImplementedError(f"{type(self).__name__} does not implement _alloc")
  def _free(self, opaque, options:BufferSpec): pass  # most host memory is freed by the garbage collector
  def _copyin(self, dest, src:memoryview): raise NotImplementedError(f"{type(self).__name__} does not implement _copyin")
  def _copyout(self, dest:memoryview, src): raise NotImplementedError(f"{type(self).__name__} does not implement _copyout")
  def free_cache(self): pass
  view_align = 1  # a view (_offset) starts at a multiple of this many bytes (an OpenCL sub-buffer at the device's base address alignment)
  def views_at(self, offset:int) -> bool:
    """whether a view of a buffer can start at byte `offset`"""
    return hasattr(self, "_offset") and offset % self.view_align == 0

class LRUAllocator(Allocator):
  """keeps freed memory for the next allocation of the same size and options: fresh memory pays a page fault per page on first touch (and
  a device allocation per call), so a program that runs again reuses its buffers instead. Reused memory holds stale data, never zeros.
  All LRU allocators of the process together keep at most LRU_BYTES (default 1 GiB), dropping what was freed longest ago; an allocation
  that fails empties its allocator's cache and tries once more. LRU=0 turns it off; BufferSpec(nolru=True) and external memory are
  never cached."""
  # every cached buffer of every LRU allocator, freed longest ago first: id(opaque) -> (allocator, (size, options), opaque)
  order: collections.OrderedDict[int, tuple[LRUAllocator, tuple[int, BufferSpec], Any]] = collections.OrderedDict()
  total = 0
  limit = getenv("LRU_BYTES", 1 << 30) if getenv("LRU", 1) else 0
  def __init__(self, dev:Any=None):
    super().__init__(dev)
    self.cache: dict[tuple[int, BufferSpec], list] = {}
    self.cached_bytes = 0
  def alloc(self, size:int, options:BufferSpec|None=None):
    if (kept := self.cache.get(key := (size, options or self.default_buffer_spec))):
      self._forget(key, opaque := kept[-1], kept)
      return opaque
    if size <= 0: return super().alloc(size, key[1])  # its error
    try: return self._alloc(size, key[1])
    except (MemoryError, OSError):
      if not self.cached_bytes: raise
      self.free_cache()
      return self._alloc(size, key[1])
  def free(self, opaque, size:int, options:BufferSpec|None=None):
    options = options or self.default_buffer_spec
    if options.nolru or options.external_ptr is not None or size > self.limit: return self._free(opaque, options)
    self.cache.setdefault(key := (size, options), []).append(opaque)
    LRUAllocator.order[id(opaque)] = (self, key, opaque)
    self.cached_bytes += size
    LRUAllocator.total += size
    while LRUAllocator.total > self.limit:
      owner, old_key, old = next(iter(LRUAllocator.order.values()))
      owner._forget(old_key, old)
      owner._free(old, old_key[1])
  def _forget(self, key:tuple[int, BufferSpec], opaque, kept:list|None=None):
    """take opaque out of the cache (it is handed out or freed); kept: the cache's list for key, where the caller has it"""
    if kept is None: kept = self.cache[key]
    kept.pop(-1 if kept[-1] is opaque else next(i for i in range(len(kept) - 1, -1, -1) if kept[i] is opaque))  # alloc takes the last
    if not kept: del self.cache[key]
    del LRUAllocator.order[id(opaque)]
    self.cached_bytes -= key[0]
    LRUAllocator.total -= key[0]
  def free_cache(self):
    """returns every buffer this allocator keeps to the device"""
    for key, kept in list(self.cache.items()):
      for opaque in list(kept):
        self._forget(key, opaque)
        self._free(opaque, key[1])

class Buffer:
  """`size` elements of `dtype` on `device`; memory comes on allocate(). A view (base=, offset= in bytes) shares its base's memory."""
  def __init__(self, device:str, size:int, dtype:DType, opaque:Any=None, options:BufferSpec|None=None, base:Buffer|None=None, offset:int=0):
    if base is not None:
      if base._base is not None: raise ValueError("a view's base must not be a view itself (use base.base)")
      if offset + size*dtype.itemsize > base.nbytes:
        raise ValueError(f"view of {size} {dtype} at byte {offset} does not fit in a buffer of {base.nbytes} bytes")
    self.device, self.size, self.dtype, self.options, self.offset, self._base = device, size, dtype, options, offset, base
    self.nbytes = size * dtype.itemsize  # a plain attribute: allocate, free and every copy read it
    if opaque is not None: self.allocate(opaque)
  @property
  def base(self) -> Buffer: return self._base if self._base is not None else self
  @property
  def allocator(self) -> Allocator:
    # looked up once: freeing must not reopen a device (e.g. after the registry was reset). Not functools.cached_property: python 3.11's
    # takes a lock on the first read, which every new Buffer pays
    if (a := self.__dict__.get("_allocator")) is None: a = self._allocator = _device_registry()[self.device].allocator
    return a
  def is_allocated(self) -> bool: return "_buf" in self.__dict__
  def ensure_allocated(self) -> Buffer: return self if "_buf" in self.__dict__ else self.allocate()
  # allocate and deallocate run for every buffer a realize makes and drops: attributes read once, the size's counters updated in place
  def allocate(self, opaque:Any=None) -> Buffer:
    if "_buf" in (d := self.__dict__): raise RuntimeError(f"{self} is already allocated")
    if self._base is not None:
      self._base.ensure_allocated()
      if not hasattr(self.allocator, "_offset"): raise RuntimeError(f"device {self.device} does not support buffer views")
      self._buf = self.allocator._offset(self._base._buf, self.nbytes, self.offset)
    elif opaque is not None: d["_buf"], d["_owned"] = opaque, False
    else:
      d["_buf"], d["_owned"] = self.allocator.alloc(n := self.nbytes, self.options), True
      GlobalCounters.mem_used += n
      GlobalCounters.mem_used_per_device[self.device] += n
    return self
  def deallocate(self):
    if "_buf" not in (d := self.__dict__): return
    if self._base is None and d["_owned"]:
      GlobalCounters.mem_used -= (n := self.nbytes)
      GlobalCounters.mem_used_per_device[self.device] -= n
      self.allocator.free(d["_buf"], n, self.options)
    del d["_buf"]
  def __del__(self):
    try: self.deallocate()
    except Exception: pass  # at interpreter exit the device may already be gone
  def view(self, size:int, dtype:DType, offset:int) -> Buffer:
    """`size` elements of `dtype` starting `offset` bytes into this buffer"""
    return Buffer(self.device, size, dtype, base=self.base, offset=self.offset + offset)
  def _check(self, mv:memoryview, what:str) -> memoryview:
    if not self.is_allocated(): raise RuntimeError(f"{what} on an unallocated {self}: call allocate() first")
    if (mv := mv.cast("B")).nbytes != self.nbytes: raise ValueError(f"{what}: {mv.nbytes} bytes given for {self} which holds {self.nbytes}")
    return mv
  def copyin(self, mv:memoryview) -> Buffer:
    self.allocator._copyin(self._buf, self._check(memoryview(mv), "copyin"))
    return self
  def copyout(self, mv:memoryview) -> memoryview:
    self.allocator._copyout(mv := self._check(memoryview(mv), "copyout"), self._buf)
    return mv
  def as_buffer(self, allow_zero_copy=False, force_zero_copy=False) -> memoryview:
    """the contents as host bytes: zero-copy when allowed and the device has host-visible memory, else a copy"""
    if (allow_zero_copy or force_zero_copy) and hasattr(self.allocator, "_as_buffer"): return self.allocator._as_buffer(self._buf)
    if force_zero_copy: raise RuntimeError(f"device {self.device} has no zero-copy host view of its buffers")
    return self.copyout(memoryview(bytearray(self.nbytes)))
  def numpy(self):
    import numpy as np
    if self.dtype.fmt is None: raise TypeError(f"numpy has no {self.dtype} dtype")
    return np.frombuffer(self.as_buffer(), dtype=np.dtype(self.dtype.fmt))
  def __reduce_ex__(self, protocol:int):
    """with its contents (a view pickles as a buffer of its own): protocol 5 hands them out of band as a PickleBuffer over the memory
    itself where the device has a host view, no copy; lower protocols carry bytes"""
    data = None
    if self.is_allocated():
      mv = self.as_buffer(allow_zero_copy=True)
      data = pickle.PickleBuffer(mv) if protocol >= 5 else bytes(mv)
    return _unpickle_buffer, (self.device, self.size, self.dtype, self.options, data)
  def __repr__(self): return f"<buf device:{self.device} size:{self.size} dtype:{self.dtype}" + (f" offset:{self.offset}>" if self._base else ">")

_Device = None
def _device_registry():
  """tinygrad.device's Device: imported on first use (that module imports this one), then a global read (an import statement costs ~1 us)"""
  global _Device
  if _Device is None: from tinygrad.device import Device as _Device
  return _Device

def _unpickle_buffer(device:str, size:int, dtype:DType, options:BufferSpec|None, data) -> Buffer:
  buf = Buffer(device, size, dtype, options=options)
  if data is not None:
    with memoryview(data) as mv: buf.allocate().copyin(mv)
    if isinstance(data, pickle.PickleBuffer): data.release()  # the sender's memory (or the receiver's buffers=) is not held on to
  return buf

class Compiler:
  """source -> binary. compile_cached keeps results in the sqlite disk cache under `cachekey` (which must name the compiler and its version);
  no cachekey, CACHELEVEL=0 or CCACHE=0 skip the cache"""
  # compile() needs the host alone (no device, no driver state) and spends its time outside the interpreter's lock (LLVM through llvmlite,
  # a C compiler's process): it may run in a helper thread, or in a forked worker that also lowers (engine/realize.py)
  host_only = False
  def __init__(self, cachekey:str|None=None): self.cachekey = cachekey if getenv("CCACHE", 1) else None
  def compile(self, src:str) -> bytes: return src.encode()  # a target that runs its source as is
  def cached(self, src:str) -> bytes|None: return diskcache_get(self.cachekey, src) if self.cachekey is not None else None
  def store(self, src:str, lib:bytes) -> bytes: return diskcache_put(self.cachekey, src, lib) if self.cachekey is not None else lib
  def compile_cached(self, src:str) -> bytes:
    if (lib := self.cached(src)) is None: lib = self.store(src, self.compile(src))
    return lib

class Compiled:
  """a device that runs compiled kernels: `runtime(name, lib)` gives a program, called as
  `program(*bufs, vals=(), global_size=(1, 1, 1), local_size=(1, 1, 1), wait=False)` (the launch grid: groups, items per group)
  returning seconds when `wait`"""
  def __init__(self, device:str, allocator:Allocator, renderer:Any, compiler:Compiler|None, runtime:Callable[[str, bytes], Callable]):
    self.device, self.allocator, self.renderer, self.compiler, self.runtime = device, allocator, renderer, compiler or Compiler(), runtime
  # a device that replays a TinyJit step's kernels as one unit: graph(device, kernels) -> callable(input Buffers, var_vals), kernels being
  # (ProgramSpec, program, buffers (an int: the replay's input of that index), var_vals) each; None: kernel by kernel
  graph: Any = None
  # its programs run on this process's own threads (host code, an emulator): a forked child can run one, and be stopped (BEAM's cutoff)
  runs_in_process: bool = False
  def synchronize(self):
    """wait until all queued work is done; host devices run synchronously"""
