"""A pickle reader for torch checkpoints that runs no code: only the globals a tensor archive names are found, each mapped to a
stand-in that records what to build; any other global is a FormatError naming it."""
from __future__ import annotations
import collections, io, pickle, pickletools
from dataclasses import dataclass
from typing import Callable
from tinygrad.dtype import DType, dtypes
from tinygrad.nn.binary import FormatError, shape_problem

STORAGE_DTYPES: dict[str, DType] = {"DoubleStorage": dtypes.float64, "FloatStorage": dtypes.float32, "HalfStorage": dtypes.float16,
  "BFloat16Storage": dtypes.bfloat16, "LongStorage": dtypes.int64, "IntStorage": dtypes.int32, "ShortStorage": dtypes.int16,
  "CharStorage": dtypes.int8, "ByteStorage": dtypes.uint8, "BoolStorage": dtypes.bool}

def _sealed(cls):
  """frozen with slots, and pickle's BUILD opcode (which calls __setstate__) refused: dataclasses gives a frozen slots class a
  __setstate__ that rewrites every field, which would undo the checks made when the object was built"""
  cls = dataclass(frozen=True, slots=True)(cls)
  def __setstate__(self, state): raise FormatError(f"the pickle sets the state of a {cls.__name__} (BUILD), which torch never writes")
  cls.__setstate__ = __setstate__
  return cls

@_sealed
class StorageType:
  dtype: DType

@_sealed
class Storage:
  """elements [offset, offset+numel) of the storage stored under `key` (a legacy view's offset is > 0); its bytes are read after the
  pickle (a zip entry, or what follows it)"""
  key: str
  dtype: DType
  numel: int
  offset: int = 0

@_sealed
class TensorRef:
  """a tensor to build once every storage's bytes are known: storage[offset + sum(i_k * stride_k)] for each index i of size"""
  storage: Storage
  offset: int
  size: tuple
  stride: tuple

@_sealed
class Global:
  """a global the pickle may call: an instance, so BUILD can't reach the loader's own function and rewrite its attributes"""
  fn: Callable
  def __call__(self, *args): return self.fn(*args)

def check_view(storage:Storage, offset:int, size:tuple, stride:tuple):
  """every element the view reads lies inside its storage"""
  if 0 not in size and (last := offset + sum((s - 1) * st for s, st in zip(size, stride))) >= storage.numel:
    raise FormatError(f"tensor of size {size}, stride {stride}, offset {offset} reads element {last} of storage {storage.key!r}, "
                      f"which has {storage.numel}")

def _rebuild_tensor(storage, offset, size, stride, *_) -> TensorRef:
  if not isinstance(storage, Storage): raise FormatError(f"_rebuild_tensor_v2 got {type(storage).__name__} where a storage belongs")
  if not (type(offset) is int and type(size) is tuple and type(stride) is tuple and len(size) == len(stride)
          and all(type(x) is int and x >= 0 for x in (offset,) + size + stride)):
    raise FormatError(f"_rebuild_tensor_v2 needs an int offset and equally long size and stride tuples of ints >= 0, "
                      f"got {offset!r}, {size!r:.100}, {stride!r:.100}")
  if problem := shape_problem(size): raise FormatError(f"_rebuild_tensor_v2: the size {problem}")
  check_view(storage, offset, size, stride)
  return TensorRef(storage, offset, size, stride)

def _rebuild_parameter(data, *_):
  if not isinstance(data, TensorRef): raise FormatError(f"_rebuild_parameter got {type(data).__name__} where a tensor belongs")
  return data

# OrderedDict is the class itself: BUILD on it fails (a builtin type is immutable); on an instance it sets attributes such as a
# state dict's _metadata, which is what torch writes
ALLOWED = {("torch._utils", "_rebuild_tensor_v2"): Global(_rebuild_tensor), ("torch._utils", "_rebuild_parameter"): Global(_rebuild_parameter),
           ("collections", "OrderedDict"): collections.OrderedDict, **{("torch", k): StorageType(v) for k, v in STORAGE_DTYPES.items()}}

class _Unpickler(pickle.Unpickler):
  def __init__(self, f, storages:dict[str, Storage]):
    super().__init__(f)
    self.storages, self.views = storages, {}
  def find_class(self, module:str, name:str):
    if (hit := ALLOWED.get((module, name))) is None:
      raise FormatError(f"the pickle names the global {module}.{name}, which a tensor archive never needs; refusing to load it")
    return hit
  def persistent_load(self, pid):
    # ('storage', storage type, key, location, numel[, legacy view metadata (view key, element offset, numel) or None])
    if not (type(pid) is tuple and len(pid) in (5, 6) and pid[0] == "storage" and isinstance(pid[1], StorageType) and type(pid[2]) is str
            and type(pid[4]) is int and pid[4] >= 0):
      raise FormatError(f"persistent id {pid!r:.200} is not ('storage', <torch.*Storage>, key, location, numel[, view])")
    st = self.storages.setdefault(pid[2], Storage(pid[2], pid[1].dtype, pid[4]))
    if (st.dtype, st.numel) != (pid[1].dtype, pid[4]):
      raise FormatError(f"storage {pid[2]!r} is named as {st.numel} {st.dtype} and as {pid[4]} {pid[1].dtype}")
    return st if len(pid) == 5 or pid[5] is None else self._view(st, pid[5])
  def _view(self, st:Storage, meta) -> Storage:
    """torch's legacy loader: a view is elements [offset, offset+numel) of its root storage, the same every time its key is named"""
    if not (type(meta) is tuple and len(meta) == 3 and type(meta[0]) is str and all(type(x) is int and x >= 0 for x in meta[1:])):
      raise FormatError(f"storage {st.key!r} has view metadata {meta!r:.100}, not (view key, element offset, element count)")
    key, offset, numel = meta
    if offset + numel > st.numel:
      raise FormatError(f"storage view {key!r} spans elements [{offset}, {offset+numel}) of storage {st.key!r}, which has {st.numel}")
    view = self.views.setdefault(key, Storage(st.key, st.dtype, numel, offset))
    if view != Storage(st.key, st.dtype, numel, offset): raise FormatError(f"storage view {key!r} is named as two different views")
    return view

MEMO_OPS = ("PUT", "BINPUT", "LONG_BINPUT")

def _prescan(f:io.BytesIO):
  """walk the opcodes without building anything: a length that runs past the end, or a memo index past the number of opcodes so far
  (the C unpickler sizes its memo to twice the index), fails here before it is allocated"""
  size = len(f.getbuffer())
  try:
    for count, (op, arg, pos) in enumerate(pickletools.genops(f)):
      if op.name == "FRAME" and arg > size - f.tell(): raise ValueError(f"FRAME of {arg} bytes at offset {pos} runs past the end")
      if op.name in MEMO_OPS and arg > count: raise ValueError(f"{op.name} at offset {pos} stores memo index {arg} after only {count} opcodes")
  except ValueError as e: raise FormatError(f"bad pickle: {e}") from None

def unpickle(f:io.BytesIO, name:str, storages:dict[str, Storage]):
  """one pickle from f (which is left just after it); any malformation is a FormatError with the offset it was found at"""
  start = f.tell()
  try:
    _prescan(f)
    f.seek(start)
    return _Unpickler(f, storages).load()
  except FormatError as e: raise FormatError(f"{name}: {e} (pickle starting at byte offset {start}, stream position {f.tell()})") from None
  except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as e:
    raise FormatError(f"{name}: bad pickle starting at byte offset {start}, failed near offset {f.tell()}: {type(e).__name__}: {e}") from None
