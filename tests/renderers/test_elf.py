"""The ELF reader on a real AMDGPU code object and on broken copies of it: every malformed file is an ElfError naming what is wrong."""
import struct
import pytest
from tinygrad.runtime.elf import Elf, ElfError, SHT_SYMTAB
from tinygrad.runtime.compiler_amdgpu import AMDGPUCompiler, read_code_object
from tinygrad.renderer.amdgpu import AMDGPURenderer
from gpu_kernels import do_while

@pytest.fixture(scope="module")
def lib() -> bytes: return AMDGPUCompiler().compile(AMDGPURenderer().render("do_while", do_while()))

def test_reads_sections_symbols_relocations(lib):
  elf = Elf(lib)
  assert {".text", ".rodata", ".symtab", ".strtab"} <= {s.name for s in elf.sections}
  kd = elf.symbol("do_while.kd")
  assert kd.size == 64 and elf.sections[kd.shndx].name == ".rodata" and elf.symbol("do_while").shndx == [s.name for s in elf.sections].index(".text")
  assert any(r.section == ".rodata" and r.symbol.name == "do_while" for r in elf.relocations())

def patched(lib:bytes, off:int, fmt:str, *vals) -> bytes:
  b = bytearray(lib)
  struct.pack_into(fmt, b, off, *vals)
  return bytes(b)

def test_malformed_files_are_errors(lib):
  shoff = struct.unpack_from("<Q", lib, 0x28)[0]
  symtab = next(i for i, s in enumerate(Elf(lib).sections) if s.type == SHT_SYMTAB)
  cases = [(b"\x7fELG" + lib[4:], "missing the \\\\x7fELF magic"), (lib[:40], "shorter than 64 bytes"),
           (lib[:4] + b"\x01" + lib[5:], "only 64-bit little-endian"),
           (patched(lib, 0x28, "<Q", len(lib)), "section header table at file offset"),
           (patched(lib, 0x3a, "<H", 40), "entry size is 40"),
           (patched(lib, 0x3e, "<H", 999), "name table index 999"),
           (patched(lib, shoff + symtab * 64 + 0x18, "<Q", 1 << 40), f"section {symtab} at file offset {1 << 40}"),
           (patched(lib, shoff + symtab * 64 + 0x38, "<Q", 7), "entry size 7")]
  for bad, msg in cases:
    with pytest.raises(ElfError, match=msg): Elf(bad).symbols()

def test_code_object_checks(lib):
  with pytest.raises(ElfError, match="no symbol 'other'"): read_code_object(lib, "other")
  not_amd = patched(lib, 0x12, "<H", 62)  # x86-64
  with pytest.raises(ElfError, match="e_machine is 62"): read_code_object(not_amd, "do_while")

def test_link_lays_out_and_relocates(lib):
  from tinygrad.runtime.compiler_amdgpu import link, KernelDescriptor
  image, syms = link(lib)
  kd = KernelDescriptor.parse(image[syms["do_while.kd"]:syms["do_while.kd"] + 64])
  assert kd.entry_offset == syms["do_while"] - syms["do_while.kd"] != 0  # the descriptor now points at the code
  assert syms["do_while.kd"] % 64 == 0  # CP reads descriptors 64-byte aligned
  co = read_code_object(lib, "do_while")
  assert co.entry_offset(syms["do_while"], syms["do_while.kd"]) == kd.entry_offset
  assert image[syms["do_while"]:syms["do_while"] + 16] == co.elf.content(co.elf.section(".text"))[co.text_offset:co.text_offset + 16]
