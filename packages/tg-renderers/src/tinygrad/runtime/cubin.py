"""A reader of the cubins ptxas writes (ELF, e_machine EM_CUDA): one kernel's machine code (`.text.<name>`) and the launch facts a QMD
needs. Register count, stack sizes and barriers come from the `.nv.info` attribute records, shared memory from `.nv.shared.<name>`,
the parameters' place in constant bank 0 from EIATTR_PARAM_CBANK / EIATTR_KPARAM_INFO and `.nv.constant0.<name>`.

`.nv.info` is a sequence of records, each 4-byte aligned: u8 format, u8 attribute, u16 field; the field is the value of an HVAL (format
3) or BVAL (2) record, zero for NVAL (1), and for SVAL (4) the size of the value bytes that follow. Attribute numbers are NVIDIA's
EIATTR_* codes as cuobjdump -elf names them. Every read is bounds-checked, so a malformed cubin raises CubinError naming the field and
its file offset. What this loader does not place (relocations, other constant banks, global data) is refused, not ignored."""
from __future__ import annotations
import struct
from dataclasses import dataclass
from tinygrad.runtime.elf import Elf, ElfError, SHT_NOBITS, SHT_RELA

EM_CUDA, ET_EXEC, SHT_REL = 190, 2, 9
SHT_CUDA_INFO = 0x70000000
EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4
# the EIATTR codes read here
EIATTR_MAX_THREADS, EIATTR_PARAM_CBANK, EIATTR_REQNTID, EIATTR_FRAME_SIZE, EIATTR_MIN_STACK_SIZE = 0x05, 0x0a, 0x10, 0x11, 0x12
EIATTR_KPARAM_INFO, EIATTR_CBANK_PARAM_SIZE, EIATTR_MAX_STACK_SIZE, EIATTR_REGCOUNT, EIATTR_NUM_BARRIERS = 0x17, 0x19, 0x23, 0x2f, 0x4c
MAX_SHARED = 228 << 10  # the most shared memory a CTA of any current SM can have: a larger .nv.shared section is a malformed file

class CubinError(ElfError):
  """the cubin is malformed or uses something this loader does not support: the message names the field and its file offset"""

@dataclass(frozen=True)
class Attribute:
  code: int
  fmt: int
  value: int|bytes  # the field of an NVAL/BVAL/HVAL record, the value bytes of an SVAL one
  offset: int       # file offset of the record

@dataclass(frozen=True)
class CubinKernel:
  name: str
  sm: int                 # the SM the code is for (e_flags), e.g. 90
  text: bytes             # machine code; the kernel starts at its first byte
  registers: int          # per thread
  shared: int             # static shared memory per CTA (on sm_90+ it includes the 1 KiB the system reserves)
  frame: int              # stack frame bytes per thread (local memory)
  max_stack: int          # the most stack a thread can use (frame plus callees)
  barriers: int           # named barriers used
  param_offset: int       # where the parameters start in constant bank 0
  param_size: int
  params: tuple[tuple[int, int, int], ...]  # (ordinal, offset from param_offset, size) in ordinal order
  cbank0_size: int        # bytes of constant bank 0 the kernel reads: driver words, then the parameters
  max_threads: tuple[int, int, int]|None    # .maxntid or .reqntid, when the PTX gave one

def attributes(elf:Elf, sec) -> list[Attribute]:
  """the records of a SHT_CUDA_INFO section"""
  out, pos, end = [], sec.offset, sec.offset + sec.size
  while pos < end:
    if pos + 4 > end: raise CubinError(f"{sec.name}: a record header at file offset {pos} runs past the section's end ({end})")
    fmt, code, field = struct.unpack_from("<BBH", elf.data, pos)
    if fmt == EIFMT_SVAL:
      if pos + 4 + field > end: raise CubinError(f"{sec.name}: attribute {code:#x} at file offset {pos} claims {field} value bytes, past the section's end")
      out.append(Attribute(code, fmt, elf.data[pos + 4:pos + 4 + field], pos))
      pos += 4 + (field + 3) // 4 * 4
    elif fmt in (EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL):
      out.append(Attribute(code, fmt, field & 0xff if fmt == EIFMT_BVAL else field, pos))
      pos += 4
    else: raise CubinError(f"{sec.name}: record at file offset {pos} has format {fmt}, not one of NVAL/BVAL/HVAL/SVAL (1-4)")
  return out

def _words(a:Attribute, n:int, fmt:str, sec:str) -> tuple:
  if a.fmt != EIFMT_SVAL or len(a.value) != n: raise CubinError(f"{sec}: attribute {a.code:#x} at file offset {a.offset} is not a {n}-byte value")
  return struct.unpack(fmt, a.value)

def _per_symbol(elf:Elf, sym_index:int, code:int) -> int|None:
  """a (symbol, value) attribute of the module-wide .nv.info for one symbol"""
  for sec in (s for s in elf.sections if s.type == SHT_CUDA_INFO and s.name == ".nv.info"):
    for a in attributes(elf, sec):
      if a.code == code and (v := _words(a, 8, "<II", sec.name))[0] == sym_index: return v[1]
  return None

def read_cubin(data:bytes, name:str) -> CubinKernel:
  """the kernel `name` of a cubin, with what a launch needs. Raises CubinError naming what is missing, malformed or unsupported."""
  try: return _read(Elf(data), name)
  except CubinError: raise
  except ElfError as e: raise CubinError(f"not a readable cubin: {e}") from e

def _read(elf:Elf, name:str) -> CubinKernel:
  if elf.machine != EM_CUDA or elf.type != ET_EXEC:
    raise CubinError(f"not a cubin: e_machine {elf.machine} (EM_CUDA is {EM_CUDA}), e_type {elf.type} (ET_EXEC is {ET_EXEC}) at file offset 16")
  sm = (elf.flags >> 8) & 0xff or elf.flags & 0xff  # the SM moved from e_flags bits 7:0 to 15:8 in ELF ABI version 8
  by_name = {s.name: i for i, s in enumerate(elf.sections)}
  if (ti := by_name.get(f".text.{name}")) is None: raise CubinError(f"no section .text.{name}: the cubin has no kernel {name!r}")
  text_sec = elf.sections[ti]
  syms = elf.symbols()
  if (si := next((i for i, s in enumerate(syms) if s.name == name and s.shndx == ti), None)) is None:
    raise CubinError(f"no symbol {name!r} in section .text.{name}")
  if syms[si].value != 0: raise CubinError(f"kernel {name} starts at {syms[si].value} in .text.{name}; this loader launches at its start")
  for i, s in enumerate(elf.sections):
    if s.type in (SHT_REL, SHT_RELA) and s.info == ti and s.size:
      raise CubinError(f"kernel {name} has relocations ({s.name}, {s.size} bytes at file offset {s.offset}); this loader applies none")
    if (s.name.startswith(".nv.constant") and s.name != f".nv.constant0.{name}") or s.name.startswith(".nv.global"):
      raise CubinError(f"section {s.name} at file offset {s.offset}: constant banks other than 0 and global data are not placed by this loader")

  info = {a.code: a for s in elf.sections if s.name == f".nv.info.{name}" and s.type == SHT_CUDA_INFO for a in attributes(elf, s)}
  kparams = [a for s in elf.sections if s.name == f".nv.info.{name}" and s.type == SHT_CUDA_INFO for a in attributes(elf, s)
             if a.code == EIATTR_KPARAM_INFO]
  regs = _per_symbol(elf, si, EIATTR_REGCOUNT)
  if regs is None: regs = text_sec.info >> 24  # older cubins keep it in the top byte of the code section's sh_info
  if not 0 < regs <= 255: raise CubinError(f"kernel {name}: register count {regs} (EIATTR_REGCOUNT / .text sh_info) is not 1..255")

  if (cb0 := by_name.get(f".nv.constant0.{name}")) is None: raise CubinError(f"no section .nv.constant0.{name} (the kernel's parameters)")
  cb0_size = elf.sections[cb0].size
  if (pc := info.get(EIATTR_PARAM_CBANK)) is not None:
    sym, param_offset, param_size = _words(pc, 8, "<IHH", f".nv.info.{name}")
    if not (0 <= sym < len(syms) and syms[sym].shndx == cb0):
      raise CubinError(f"EIATTR_PARAM_CBANK at file offset {pc.offset} names symbol {sym}, not .nv.constant0.{name}")
  else: param_offset, param_size = cb0_size, 0  # a kernel without parameters
  if param_offset + param_size > cb0_size:
    raise CubinError(f"parameters at {param_offset:#x}+{param_size} (EIATTR_PARAM_CBANK) run past .nv.constant0.{name} ({cb0_size} bytes)")
  if (ps := info.get(EIATTR_CBANK_PARAM_SIZE)) is not None and ps.value != param_size:
    raise CubinError(f"EIATTR_CBANK_PARAM_SIZE at file offset {ps.offset} is {ps.value}, EIATTR_PARAM_CBANK says {param_size}")
  params = []
  for a in kparams:  # u32 index, u16 ordinal, u16 offset, u32 flags with the size in bytes in bits 31:18
    _, ordinal, off, flags = _words(a, 12, "<IHHI", f".nv.info.{name}")
    if off + (size := flags >> 18) > param_size:
      raise CubinError(f"EIATTR_KPARAM_INFO at file offset {a.offset}: parameter {ordinal} at {off}+{size} lies outside the {param_size} parameter bytes")
    params.append((ordinal, off, size))

  shared = 0
  if (sh := by_name.get(f".nv.shared.{name}")) is not None:
    if (shared := elf.sections[sh].size) > MAX_SHARED:
      raise CubinError(f".nv.shared.{name} (section header at file offset {elf.sections[sh].offset}) claims {shared} bytes, more than {MAX_SHARED}")
  max_threads = None
  for code in (EIATTR_REQNTID, EIATTR_MAX_THREADS):
    if (mt := info.get(code)) is not None: max_threads = _words(mt, 12, "<III", f".nv.info.{name}")
  bars = info[EIATTR_NUM_BARRIERS].value if EIATTR_NUM_BARRIERS in info else 0
  if not 0 <= bars <= 16: raise CubinError(f"EIATTR_NUM_BARRIERS at file offset {info[EIATTR_NUM_BARRIERS].offset} is {bars}, more than 16")
  if text_sec.type == SHT_NOBITS or not text_sec.size: raise CubinError(f".text.{name} holds no code")
  return CubinKernel(name, sm, elf.content(text_sec), regs, shared, _per_symbol(elf, si, EIATTR_FRAME_SIZE) or 0,
                     _per_symbol(elf, si, EIATTR_MAX_STACK_SIZE) or 0, bars, param_offset, param_size, tuple(sorted(params)), cb0_size,
                     max_threads)
