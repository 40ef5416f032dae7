"""The kernel metadata of an AMDGPU code object (LLVM AMDGPUUsage, "Code Object V3 to V5 Metadata"): a MessagePack map in the ELF
note of type NT_AMDGPU_METADATA (32, name "AMDGPU"). Its `amdhsa.kernels` list gives each kernel's arguments (`.args`: offset, size,
value kind), the explicit ones and the hidden ones code object v5 appends (`.hidden_block_count_x`, ...), which a dispatch must fill.
A small MessagePack reader, bounded by the note's bytes: a malformed note is an ElfError, never a large allocation."""
from __future__ import annotations
import struct
from tinygrad.runtime.elf import Elf, ElfError

NT_AMDGPU_METADATA, SHT_NOTE = 32, 7
MAX_DEPTH = 32

def _unpack(data:bytes, at:int, depth:int=0) -> tuple[object, int]:
  """(value, offset after it) of the MessagePack object at data[at]"""
  if depth > MAX_DEPTH: raise ElfError(f"AMDGPU metadata nests deeper than {MAX_DEPTH} at byte {at}")
  if at >= len(data): raise ElfError(f"AMDGPU metadata ends inside an object at byte {at}")
  def take(fmt:str, p:int) -> tuple:
    if p + struct.calcsize(fmt) > len(data): raise ElfError(f"AMDGPU metadata ends inside an object at byte {at}")
    return struct.unpack_from(fmt, data, p)
  def raw(n:int, p:int) -> tuple[bytes, int]:
    if p + n > len(data): raise ElfError(f"AMDGPU metadata: {n} bytes at byte {p} run past its end ({len(data)} bytes)")
    return data[p:p+n], p + n
  def seq(n:int, p:int, pairs:bool) -> tuple[object, int]:
    if n > len(data) - p: raise ElfError(f"AMDGPU metadata: {n} entries at byte {at} cannot fit its {len(data)} bytes")
    out = []
    for _ in range(2 * n if pairs else n):
      v, p = _unpack(data, p, depth + 1)
      out.append(v)
    return (dict(zip(out[::2], out[1::2])) if pairs else out), p
  b = data[at]
  if b <= 0x7f: return b, at + 1
  if b >= 0xe0: return b - 0x100, at + 1
  if 0x80 <= b <= 0x8f: return seq(b & 0xf, at + 1, True)
  if 0x90 <= b <= 0x9f: return seq(b & 0xf, at + 1, False)
  if 0xa0 <= b <= 0xbf:
    s, p = raw(b & 0x1f, at + 1)
    return s.decode("utf-8", "replace"), p
  if b in (0xc0, 0xc2, 0xc3): return {0xc0: None, 0xc2: False, 0xc3: True}[b], at + 1
  ints = {0xcc: "<B", 0xcd: ">H", 0xce: ">I", 0xcf: ">Q", 0xd0: ">b", 0xd1: ">h", 0xd2: ">i", 0xd3: ">q", 0xca: ">f", 0xcb: ">d"}
  if b in ints: return take(ints[b], at + 1)[0], at + 1 + struct.calcsize(ints[b])
  lens = {0xc4: ">B", 0xc5: ">H", 0xc6: ">I", 0xd9: ">B", 0xda: ">H", 0xdb: ">I", 0xdc: ">H", 0xdd: ">I", 0xde: ">H", 0xdf: ">I"}
  if b in lens:
    (n,), p = take(lens[b], at + 1), at + 1 + struct.calcsize(lens[b])
    if b in (0xdc, 0xdd, 0xde, 0xdf): return seq(n, p, b >= 0xde)
    s, p = raw(n, p)
    return (s if b <= 0xc6 else s.decode("utf-8", "replace")), p
  raise ElfError(f"AMDGPU metadata: MessagePack type byte {b:#04x} at byte {at} is not one the metadata uses")

def unpack_msgpack(data:bytes) -> object:
  value, end = _unpack(data, 0)
  if end != len(data): raise ElfError(f"AMDGPU metadata: {len(data) - end} bytes after its map")
  return value

def metadata_note(elf:Elf) -> dict:
  """the code object's metadata map (from its NT_AMDGPU_METADATA note)"""
  for sec in elf.sections:
    if sec.type != SHT_NOTE: continue
    data, at = elf.content(sec), 0
    while at + 12 <= len(data):
      namesz, descsz, kind = struct.unpack_from("<III", data, at)
      name_at, desc_at = at + 12, at + 12 + (namesz + 3) // 4 * 4
      if desc_at + descsz > len(data): raise ElfError(f"note in {sec.name!r} at {at} runs past its section")
      if kind == NT_AMDGPU_METADATA and data[name_at:name_at + namesz].rstrip(b"\0") == b"AMDGPU":
        if not isinstance(md := unpack_msgpack(data[desc_at:desc_at + descsz]), dict): raise ElfError("AMDGPU metadata is not a map")
        return md
      at = desc_at + (descsz + 3) // 4 * 4
  raise ElfError("the code object has no AMDGPU metadata note (NT_AMDGPU_METADATA)")

def kernel_args(elf:Elf, name:str) -> list[tuple[str, int, int]]:
  """(value kind, offset, size) of each argument of kernel `name`, as its metadata declares them (explicit, then hidden)"""
  kernels = metadata_note(elf).get("amdhsa.kernels", [])
  if (k := next((k for k in kernels if isinstance(k, dict) and k.get(".name") == name), None)) is None:
    raise ElfError(f"the AMDGPU metadata describes no kernel {name!r} (it has {[k.get('.name') for k in kernels if isinstance(k, dict)]})")
  try: return [(str(a[".value_kind"]), int(a[".offset"]), int(a[".size"])) for a in k.get(".args", [])]
  except (KeyError, TypeError, ValueError) as e:
    raise ElfError(f"AMDGPU metadata of {name!r}: an argument lacks its value kind, offset or size ({e})") from e
