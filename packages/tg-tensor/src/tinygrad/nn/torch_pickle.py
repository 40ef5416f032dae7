"""A pickle reader for torch checkpoints that runs no code: only the globals a tensor archive names are found, each mapped to a
stand-in that records what to build; any other global is a FormatError naming it."""
from __future__ import annotations
import collections, io, pickle, pickletools
from dataclasses import dataclass
from tinygrad.dtype import DType, dtypes
from tinygrad.nn.binary import FormatError

STORAGE_DTYPES: dict[str, DType] = {"DoubleStorage": dtypes.float64, "FloatStorage": dtypes.float32, "HalfStorage": dtypes.float16,
  "BFloat16Storage": dtypes.bfloat16, "LongStorage": dtypes.int64, "IntStorage": dtypes.int32, "ShortStorage": dtypes.int16,
  "CharStorage": dtypes.int8, "ByteStorage": dtypes.uint8, "BoolStorage": dtypes.bool}

# frozen with slots: a pickle's BUILD opcode can't rewrite a checked field after the fact
@dataclass(frozen=True, slots=True)
class StorageType:
  dtype: DType

@dataclass(frozen=True, slots=True)
class Storage:
  """one storage: its key in the archive, its dtype and element count; its bytes are read after the pickle (a zip entry, or what follows it)"""
  key: str
  dtype: DType
  numel: int

@dataclass(frozen=True, slots=True)
class TensorRef:
  """a tensor to build once every storage's bytes are known: storage[offset + sum(i_k * stride_k)] for each index i of size"""
  storage: Storage
  offset: int
  size: tuple
  stride: tuple

def _rebuild_tensor(storage, offset, size, stride, *_) -> TensorRef:
  if not isinstance(storage, Storage): raise FormatError(f"_rebuild_tensor_v2 got {type(storage).__name__} where a storage belongs")
  if not (type(offset) is int and isinstance(size, tuple) and isinstance(stride, tuple) and len(size) == len(stride)
          and all(type(x) is int and x >= 0 for x in (offset,) + size + stride)):
    raise FormatError(f"_rebuild_tensor_v2 needs an int offset and equally long size and stride tuples of ints >= 0, got {offset!r}, {size!r:.100}, {stride!r:.100}")
  if 0 not in size and (last := offset + sum((s - 1) * st for s, st in zip(size, stride))) >= storage.numel:
    raise FormatError(f"tensor of size {size}, stride {stride}, offset {offset} reads element {last} of storage {storage.key!r} which has {storage.numel}")
  return TensorRef(storage, offset, size, stride)

def _rebuild_parameter(data, *_):
  if not isinstance(data, TensorRef): raise FormatError(f"_rebuild_parameter got {type(data).__name__} where a tensor belongs")
  return data

ALLOWED = {("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor, ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
           ("collections", "OrderedDict"): collections.OrderedDict, **{("torch", k): StorageType(v) for k, v in STORAGE_DTYPES.items()}}

class _Unpickler(pickle.Unpickler):
  def __init__(self, f, name:str, storages:dict[str, Storage]):
    super().__init__(f)
    self.name, self.storages = name, storages
  def find_class(self, module:str, name:str):
    if (hit := ALLOWED.get((module, name))) is None:
      raise FormatError(f"{self.name}: the pickle names the global {module}.{name}, which a tensor archive never needs; refusing to load it")
    return hit
  def persistent_load(self, pid):
    # ('storage', storage type, key, location, numel[, view metadata])
    if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage" and isinstance(pid[1], StorageType) and isinstance(pid[2], str)
            and type(pid[4]) is int and pid[4] >= 0):
      raise FormatError(f"{self.name}: persistent id {pid!r:.200} is not ('storage', <torch.*Storage>, key, location, numel)")
    st = self.storages.setdefault(pid[2], Storage(pid[2], pid[1].dtype, pid[4]))
    if (st.dtype, st.numel) != (pid[1].dtype, pid[4]):
      raise FormatError(f"{self.name}: storage {pid[2]!r} is named as {st.numel} {st.dtype} and as {pid[4]} {pid[1].dtype}")
    return st

def _prescan(f:io.BytesIO, name:str):
  """walk the opcodes without building anything: a length that runs past the end fails here, before the C unpickler would allocate it"""
  size = len(f.getbuffer())
  try:
    for op, arg, pos in pickletools.genops(f):
      if op.name == "FRAME" and arg > size - f.tell(): raise ValueError(f"FRAME of {arg} bytes at offset {pos} runs past the end")
  except ValueError as e: raise FormatError(f"{name}: bad pickle: {e} (stream position {f.tell()})") from None

def unpickle(f:io.BytesIO, name:str, storages:dict[str, Storage]):
  """one pickle from f (which is left just after it); any malformation is a FormatError with the offset it was found at"""
  start = f.tell()
  _prescan(f, name)
  f.seek(start)
  try: return _Unpickler(f, name, storages).load()
  except FormatError: raise
  except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as e:
    raise FormatError(f"{name}: bad pickle starting at byte offset {start}, failed near offset {f.tell()}: {type(e).__name__}: {e}") from None
