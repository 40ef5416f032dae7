"""The program an HCQ device loads: a 256-byte header, the machine code (at a 256-byte aligned address: the program address the
queue launches), then the kernel's linearized UOps as the PYTHON emulator's JSON. The mock drivers run a launch by reading the UOps
back from device memory at (program address - 256); hardware runs the machine code. A renderer without machine code for the target
(the emulated one) leaves the code empty: such a program loads only on a mock driver."""
from __future__ import annotations
import json, struct
from dataclasses import dataclass, field
from tinygrad.device import Compiler

MAGIC, HEADER = b"TGCO", 256

@dataclass(frozen=True)
class CodeObject:
  name: str
  machine_code: bytes
  uops_json: bytes
  meta: dict = field(default_factory=dict)  # vendor launch facts (AMD: rsrc1, rsrc2; NV: registers, shared memory)
  def pack(self) -> bytes:
    head = json.dumps({"name": self.name, "meta": self.meta}).encode()
    if len(head) > HEADER - 16: raise ValueError(f"code object header of {len(head)} bytes does not fit {HEADER - 16}")
    return (MAGIC + struct.pack("<III", len(self.machine_code), len(self.uops_json), len(head)) + head).ljust(HEADER, b"\0") + \
           self.machine_code + self.uops_json
  @staticmethod
  def unpack(blob:bytes|memoryview) -> CodeObject:
    blob = bytes(blob)
    if blob[:4] != MAGIC: raise ValueError(f"not a tg code object: starts with {blob[:4]!r}, not {MAGIC!r}")
    ncode, nuops, nhead = struct.unpack_from("<III", blob, 4)
    if 16 + nhead > HEADER or len(blob) < HEADER + ncode + nuops:
      raise ValueError(f"tg code object is truncated or corrupt: {len(blob)} bytes for {ncode} code and {nuops} UOp bytes")
    head = json.loads(blob[16:16+nhead])
    return CodeObject(head["name"], blob[HEADER:HEADER+ncode], blob[HEADER+ncode:HEADER+ncode+nuops], head["meta"])
  @staticmethod
  def size_at(header:bytes|memoryview) -> int:
    """the whole object's size from its first 256 bytes"""
    if bytes(header[:4]) != MAGIC: raise ValueError(f"no tg code object here: {bytes(header[:4])!r}")
    ncode, nuops, _ = struct.unpack_from("<III", header, 4)
    return HEADER + ncode + nuops

class EmulatedCodeCompiler(Compiler):
  """the emulated renderer's JSON -> a code object with no machine code (it runs only on a mock driver)"""
  def __init__(self, arch:str|None=None): super().__init__(None)  # packing is cheap: no disk cache
  def compile(self, src:str) -> bytes: return CodeObject(json.loads(src)["name"], b"", src.encode()).pack()
