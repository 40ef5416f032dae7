"""The program an HCQ device loads: a 256-byte header (magic and sizes), the machine code (at a 256-byte aligned address: the program
address the queue launches), the kernel's linearized UOps as the PYTHON emulator's JSON, then its name and launch facts (JSON, after
the code so that no kernel name or list of hidden arguments can outgrow the header). The mock drivers run a launch by reading the UOps
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
    return (MAGIC + struct.pack("<III", len(self.machine_code), len(self.uops_json), len(head))).ljust(HEADER, b"\0") + \
           self.machine_code + self.uops_json + head
  @staticmethod
  def unpack(blob:bytes|memoryview) -> CodeObject:
    blob = bytes(blob)
    if blob[:4] != MAGIC: raise ValueError(f"not a tg code object: starts with {blob[:4]!r}, not {MAGIC!r}")
    ncode, nuops, nhead = struct.unpack_from("<III", blob, 4)
    if len(blob) < (end := HEADER + ncode + nuops) + nhead:
      raise ValueError(f"tg code object is truncated or corrupt: {len(blob)} bytes for {ncode} code, {nuops} UOp and {nhead} head bytes")
    head = json.loads(blob[end:end+nhead])
    return CodeObject(head["name"], blob[HEADER:HEADER+ncode], blob[HEADER+ncode:end], head["meta"])
  @staticmethod
  def size_at(header:bytes|memoryview) -> int:
    """the whole object's size from its first 256 bytes"""
    if bytes(header[:4]) != MAGIC: raise ValueError(f"no tg code object here: {bytes(header[:4])!r}")
    return HEADER + sum(struct.unpack_from("<III", header, 4))

class EmulatedCodeCompiler(Compiler):
  """the emulated renderer's JSON -> a code object with no machine code (it runs only on a mock driver)"""
  def __init__(self, arch:str|None=None): super().__init__(None)  # packing is cheap: no disk cache
  def compile(self, src:str) -> bytes: return CodeObject(json.loads(src)["name"], b"", src.encode()).pack()
