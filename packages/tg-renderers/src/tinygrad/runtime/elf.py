"""A small reader of 64-bit little-endian ELF files (the GPU code objects LLVM emits): sections, symbols and RELA relocations, every
offset and size checked against the file so a malformed file raises ElfError naming what is wrong, never reads past the end or
allocates more than the file holds. Layout and field order follow the System V gABI (Elf64_Ehdr, Elf64_Shdr, Elf64_Sym, Elf64_Rela)."""
from __future__ import annotations
import struct
from dataclasses import dataclass

class ElfError(ValueError):
  """the bytes are not a well-formed 64-bit little-endian ELF file: the message names the field and offset"""

SHT_SYMTAB, SHT_RELA, SHT_NOBITS = 2, 4, 8
SHF_ALLOC = 2
ET_REL, ET_DYN, EM_AMDGPU = 1, 3, 224

@dataclass(frozen=True)
class Section:
  name: str
  type: int
  flags: int
  addr: int
  offset: int
  size: int
  link: int
  info: int
  addralign: int
  entsize: int

@dataclass(frozen=True)
class Symbol:
  name: str
  value: int
  size: int
  shndx: int  # the section it is defined in (0: undefined)
  info: int
  @property
  def bind(self) -> int: return self.info >> 4
  @property
  def type(self) -> int: return self.info & 0xf

@dataclass(frozen=True)
class Reloc:
  section: str  # the section the relocation patches
  offset: int   # where in that section
  type: int
  symbol: Symbol
  addend: int

class Elf:
  def __init__(self, data:bytes):
    self.data = bytes(data)
    if len(self.data) < 64 or self.data[:4] != b"\x7fELF": raise ElfError("not an ELF file: missing the \\x7fELF magic or shorter than 64 bytes")
    if self.data[4] != 2 or self.data[5] != 1: raise ElfError(f"only 64-bit little-endian ELF is read (class {self.data[4]}, data {self.data[5]})")
    (self.type, self.machine, _, self.entry, _, shoff, self.flags, _, _, _, shentsize, shnum, shstrndx) = \
      struct.unpack_from("<HHIQQQIHHHHHH", self.data, 16)
    if shnum and shentsize != 64: raise ElfError(f"section header entry size is {shentsize}, Elf64_Shdr is 64 bytes")
    self._check(shoff, shnum * 64, "section header table")
    raw = [struct.unpack_from("<IIQQQQIIQQ", self.data, shoff + i * 64) for i in range(shnum)]
    for i, h in enumerate(raw):
      if h[1] != SHT_NOBITS: self._check(h[4], h[5], f"section {i}")
    if shnum and not 0 <= shstrndx < shnum: raise ElfError(f"section name table index {shstrndx} is not one of the {shnum} sections")
    names = (raw[shstrndx][4], raw[shstrndx][5]) if shnum else (0, 0)
    self.sections = [Section(self._str(names, h[0]), *h[1:]) for h in raw]

  def _check(self, off:int, size:int, what:str):
    if off < 0 or size < 0 or off + size > len(self.data):
      raise ElfError(f"{what} at file offset {off} ({size} bytes) runs past the end of the {len(self.data)}-byte file")

  def _str(self, strtab:tuple[int, int], off:int) -> str:
    """the NUL-terminated string at `off` in the string table at (file offset, size)"""
    if not 0 <= off < strtab[1]: raise ElfError(f"string offset {off} is outside its string table ({strtab[1]} bytes)")
    start = strtab[0] + off
    end = self.data.find(b"\0", start, strtab[0] + strtab[1])
    if end < 0: raise ElfError(f"string at file offset {start} is not NUL-terminated within its table")
    return self.data[start:end].decode("utf-8", "replace")

  def section(self, name:str) -> Section:
    if (s := next((s for s in self.sections if s.name == name), None)) is None:
      raise ElfError(f"no section {name!r}; sections: {[s.name for s in self.sections if s.name]}")
    return s

  def content(self, sec:Section) -> bytes: return b"" if sec.type == SHT_NOBITS else self.data[sec.offset:sec.offset + sec.size]

  def _entries(self, sec:Section, size:int) -> int:
    if sec.entsize != size or sec.size % size:
      raise ElfError(f"section {sec.name!r}: entry size {sec.entsize}, size {sec.size}; expected {size}-byte entries")
    return sec.size // size

  def _table_strings(self, sec:Section) -> tuple[int, int]:
    if not 0 <= sec.link < len(self.sections): raise ElfError(f"section {sec.name!r} links to section {sec.link}, which does not exist")
    return self.sections[sec.link].offset, self.sections[sec.link].size

  def symbols(self) -> list[Symbol]:
    if (tab := next((s for s in self.sections if s.type == SHT_SYMTAB), None)) is None: return []
    strs = self._table_strings(tab)
    out = []
    for i in range(self._entries(tab, 24)):
      name, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", self.data, tab.offset + i * 24)
      out.append(Symbol(self._str(strs, name), value, size, shndx, info))
    return out

  def symbol(self, name:str) -> Symbol:
    if (s := next((s for s in self.symbols() if s.name == name), None)) is None: raise ElfError(f"no symbol {name!r} in the symbol table")
    return s

  def relocations(self) -> list[Reloc]:
    syms, out = self.symbols(), []
    for sec in (s for s in self.sections if s.type == SHT_RELA):
      if not 0 <= sec.info < len(self.sections): raise ElfError(f"relocation section {sec.name!r} patches section {sec.info}, which does not exist")
      for i in range(self._entries(sec, 24)):
        off, info, addend = struct.unpack_from("<QQq", self.data, sec.offset + i * 24)
        if not 0 <= (si := info >> 32) < len(syms): raise ElfError(f"relocation {i} of {sec.name!r} names symbol {si} of {len(syms)}")
        out.append(Reloc(self.sections[sec.info].name, off, info & 0xffffffff, syms[si], addend))
    return out
