"""A small GGUF v3 writer for tests: metadata of every value type, tensors as (ggml type, dims, raw bytes), quantizers for Q8_0/Q4_0,
and the parts of a split model."""
import struct

def _str(s:str) -> bytes: return struct.pack("<Q", len(s.encode())) + s.encode()

def _value(v) -> tuple[int, bytes]:
  if isinstance(v, bool): return 7, struct.pack("<?", v)
  if isinstance(v, int): return (11, struct.pack("<q", v)) if v < 0 else (4, struct.pack("<I", v)) if v < 1 << 32 else (10, struct.pack("<Q", v))
  if isinstance(v, float): return 6, struct.pack("<f", v)
  if isinstance(v, str): return 8, _str(v)
  items = [_value(x) for x in v]
  return 9, struct.pack("<IQ", items[0][0] if items else 4, len(items)) + b"".join(b for _, b in items)

def gguf_file(kv:dict, tensors:dict, align:int=32, version:int=3) -> bytes:
  head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kv))
  for k, v in kv.items(): head += _str(k) + struct.pack("<I", (tv := _value(v))[0]) + tv[1]
  data, infos = b"", b""
  for name, (ttype, dims, raw) in tensors.items():
    data += b"\0" * (-len(data) % align)
    infos += _str(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, ttype, len(data))
    data += raw
  out = head + infos
  return out + b"\0" * (-len(out) % align) + data

def q8_0(scales:list[float], quants:list[list[int]]) -> bytes: return b"".join(struct.pack("<e32b", d, *q) for d, q in zip(scales, quants))
def q4_0(scales:list[float], quants:list[list[int]]) -> bytes:
  """quants: 32 values in 0..15 per block; element j < 16 is the low nibble of byte j, element j+16 its high nibble"""
  return b"".join(struct.pack("<e", d) + bytes(q[j] | (q[j+16] << 4) for j in range(16)) for d, q in zip(scales, quants))

def split_parts(kv:dict, parts:list[dict]) -> list[bytes]:
  """the files of a model split as gguf-split does it: every part says which it is (split.no from 0), how many there are and how many
  tensors they hold together; the model's own metadata is in the first part only"""
  total = sum(len(tensors) for tensors in parts)
  return [gguf_file({**(kv if i == 0 else {}), "split.no": i, "split.count": len(parts), "split.tensors.count": total}, tensors)
          for i, tensors in enumerate(parts)]
