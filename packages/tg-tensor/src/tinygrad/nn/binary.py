"""What every model-file loader shares: the error it raises, where its bytes come from, and a cursor that never reads past the end."""
from __future__ import annotations
import struct
from tinygrad.dtype import dtypes

class FormatError(ValueError):
  """a model file that breaks its format; the message names the file, the field and the byte offset"""

# limits on a declared shape, shared by every loader (safetensors, torch, gguf, ONNX): a shape with a 0 dim holds no bytes, so the
# file's size bounds nothing and its other dims must be bounded here. No machine holds 2**48 elements; numpy allows 64 dims
MAX_RANK, MAX_ELEMENTS = 64, 1 << 48

def shape_problem(shape) -> str|None:
  """what makes `shape` (ints >= 0) no tensor's shape, or None: more than MAX_RANK dims, or dims (0 counted as 1) past MAX_ELEMENTS"""
  if len(shape) > MAX_RANK: return f"has {len(shape)} dims (at most {MAX_RANK})"
  n = 1
  for d in shape:
    if (n := n * max(d, 1)) > MAX_ELEMENTS:
      # a dim may be an int too long for str(): name its size in bits instead
      dims = ", ".join(str(x) if x < 1 << 64 else f"<{x.bit_length()}-bit int>" for x in shape[:8]) + (", ..." if len(shape) > 8 else "")
      return f"has dims [{dims}] whose non-zero sizes multiply past {MAX_ELEMENTS} elements"
  return None

def source_bytes(src) -> tuple[bytes, str]:
  """(the bytes, a name for messages) of a path or of a uint8 Tensor holding a file"""
  from tinygrad.tensor import Tensor
  if isinstance(src, Tensor):
    if src.dtype is not dtypes.uint8 or src.ndim != 1: raise TypeError(f"a model file as a Tensor must be 1-d uint8, got {src.shape} {src.dtype}")
    return bytes(src._data()), f"<Tensor of {src.numel()} bytes>"
  with open(src, "rb") as f: return f.read(), str(src)

def mapped_file(src):
  """(the file as a uint8 Tensor on its DISK device, its bytes mapped, a name for messages) for a path or such a Tensor, else None: a loader reads its header
  from the map (only those pages are touched) and makes each tensor a view of the file, read when something copies it"""
  import os, pathlib
  from tinygrad.tensor import Tensor
  from tinygrad.engine.realize import buffer_of
  if isinstance(src, (str, os.PathLike)) and pathlib.Path(src).is_file(): src = Tensor(pathlib.Path(src))
  if not isinstance(src, Tensor) or not isinstance(src.device, str) or not src.device.startswith("DISK:") or not src._is_buffer(): return None
  if src.dtype is not dtypes.uint8 or src.ndim != 1: raise TypeError(f"a model file as a Tensor must be 1-d uint8, got {src.shape} {src.dtype}")
  return src, buffer_of(src.uop.base).as_buffer(allow_zero_copy=True), src.device

class Cursor:
  """reads little-endian fields from a byte buffer; a field that runs past the end is a FormatError naming it and its offset"""
  def __init__(self, data:bytes|memoryview, name:str, pos:int=0): self.data, self.name, self.pos = memoryview(data), name, pos
  def left(self) -> int: return len(self.data) - self.pos
  def fail(self, msg:str, at:int|None=None):
    raise FormatError(f"{self.name}: {msg} (at byte offset {self.pos if at is None else at})")
  def take(self, n:int, field:str) -> memoryview:
    if not 0 <= n <= self.left(): self.fail(f"{field} needs {n} bytes but the file has {self.left()} left")
    self.pos += n
    return self.data[self.pos-n:self.pos]
  def unpack(self, fmt:str, field:str) -> tuple: return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), field))
  def need(self, count:int, each:int, field:str):
    """count items of at least `each` bytes must fit in what is left: a lying count fails here, before anything is allocated"""
    if count * each > self.left(): self.fail(f"{field} = {count} needs at least {count*each} bytes but the file has {self.left()} left")
