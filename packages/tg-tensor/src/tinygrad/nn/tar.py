"""tar_extract: the regular files of a tar archive (ustar, GNU or pax; not compressed: gunzip it first, e.g. Tensor.from_url(gunzip=True))
as uint8 Tensors by member name. Python's tarfile reads the headers from memory; nothing is written to disk and no member is run."""
from __future__ import annotations
import io
from tinygrad.nn.binary import FormatError, source_bytes

def tar_extract(src) -> dict:
  """{member name: uint8 Tensor of its bytes} of a tar archive: a path, or a 1-d uint8 Tensor holding one"""
  import tarfile  # on first use: nn.state is imported by every program, tar archives are rare
  from tinygrad.tensor import Tensor
  data, name = source_bytes(src)
  try:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf: members = [m for m in tf.getmembers() if m.isfile()]
  except tarfile.TarError as e: raise FormatError(f"{name}: not a valid tar archive ({e})") from None  # a truncated one included
  return {m.name: Tensor(data[m.offset_data:m.offset_data + m.size]) for m in members}
