"""tar_extract: the regular files of a tar archive (ustar, GNU or pax; not compressed: gunzip it first, e.g. Tensor.from_url(gunzip=True))
as uint8 Tensors by member name. Python's tarfile reads the headers from memory; nothing is written to disk and no member is run."""
from __future__ import annotations
import io
from tinygrad.nn.binary import FormatError, source_bytes

def looks_like_tar(data:bytes) -> bool:
  """the first 512-byte block is a tar header with a valid checksum"""
  import tarfile
  try: tarfile.TarInfo.frombuf(data[:512], tarfile.ENCODING, "surrogateescape")
  except tarfile.TarError: return False
  return True

def _member_data(data:memoryview, m, name:str) -> bytes:
  # a sparse member's bytes in the archive are its data regions packed together, not its contents, and its holes can make it far
  # larger than the archive
  if m.issparse(): raise FormatError(f"{name}: member {m.name!r} is a sparse file, which is not read; extract the archive with tar")
  if m.offset_data + m.size > len(data):
    raise FormatError(f"{name}: member {m.name!r} declares {m.size} bytes at byte offset {m.offset_data}, past the archive's end at {len(data)}")
  return bytes(data[m.offset_data:m.offset_data + m.size])

def tar_members(data:bytes, name:str) -> dict[str, bytes]:
  """{member name: its bytes} of the regular files of a tar archive"""
  import tarfile  # on first use: nn.state is imported by every program, tar archives are rare
  try:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf: members = [m for m in tf.getmembers() if m.isfile()]
  except tarfile.TarError as e: raise FormatError(f"{name}: not a valid tar archive ({e})") from None  # a truncated one included
  view = memoryview(data)
  return {m.name: _member_data(view, m, name) for m in members}

def tar_extract(t) -> dict:
  """{member name: uint8 Tensor of its bytes} of a tar archive: a path, or a 1-d uint8 Tensor holding one"""
  from tinygrad.tensor import Tensor
  data, name = source_bytes(t)
  return {k: Tensor(v) for k, v in tar_members(data, name).items()}
