"""AMDGPU LLVM IR -> an HSA code object, compiled in process by llvmlite's AMDGPU target (no ROCm needed), and the kernel descriptor
read back from it. The code object is LLVM's relocatable ELF (ET_REL, EM_AMDGPU) as emitted: `.text` holds the kernel's machine code
under its name, `.rodata` its 64-byte kernel descriptor under `<name>.kd`, whose KERNEL_CODE_ENTRY_BYTE_OFFSET is filled at load time
by an R_AMDGPU_REL64 relocation (the kernel's address minus the descriptor's). A loader (the AMD HCQ runtime) places the sections,
applies the relocations and hands the descriptor's address to the dispatch packet."""
from __future__ import annotations
import struct
from dataclasses import dataclass
from tinygrad.device import Compiler, CompileError
from tinygrad.renderer.amdgpu import TRIPLE
from tinygrad.runtime.elf import Elf, ElfError, EM_AMDGPU, SHF_ALLOC, SHT_NOBITS

R_AMDGPU_REL64 = 5  # S + A - P, 64 bits: how LLVM fills the descriptor's code entry offset

class AMDGPUCompiler(Compiler):
  """LLVM IR (renderer/amdgpu.py) -> relocatable ELF code object bytes for the GPU `arch` (gfx1100 unless DEV=...:AMD:gfxNNNN)"""
  def __init__(self, arch:str|None=None):
    import llvmlite.binding as llvm
    try: target = llvm.Target.from_triple(TRIPLE)
    except RuntimeError:
      llvm.initialize_all_targets()
      llvm.initialize_all_asmprinters()
      try: target = llvm.Target.from_triple(TRIPLE)
      except RuntimeError as e:
        raise CompileError(f"unavailable: llvmlite {'.'.join(map(str, llvm.llvm_version_info))} has no AMDGPU target ({e})") from e
    self.llvm, self.arch = llvm, arch or "gfx1100"
    self.tm = target.create_target_machine(cpu=self.arch, features="", opt=2, reloc="pic", codemodel="default")
    if self.tm.target_data is None or not str(self.tm.target_data): raise CompileError(f"llvmlite made no target machine for {TRIPLE} {self.arch}")
    super().__init__(f"compile_amdgpu_{'.'.join(map(str, llvm.llvm_version_info))}_{self.arch}")

  def compile(self, src:str) -> bytes:
    try:
      mod = self.llvm.parse_assembly(src)
      mod.verify()
    except RuntimeError as e: raise CompileError(f"LLVM rejected the AMDGPU IR: {e}\n{src}") from e
    mod.triple, mod.data_layout = TRIPLE, str(self.tm.target_data)
    pb = self.llvm.create_pass_builder(self.tm, self.llvm.create_pipeline_tuning_options(speed_level=2))
    pb.getModulePassManager().run(mod, pb)
    try: return self.tm.emit_object(mod)
    except RuntimeError as e: raise CompileError(f"LLVM could not compile the kernel for {self.arch}: {e}\n{src}") from e

@dataclass(frozen=True)
class KernelDescriptor:
  """the 64-byte amdhsa kernel descriptor (LLVM AMDGPUUsage, "Kernel Descriptor"); entry_offset as stored (0 until relocated)"""
  group_segment_size: int    # LDS bytes per work group
  private_segment_size: int  # scratch bytes per work item
  kernarg_size: int          # bytes of kernel arguments
  entry_offset: int
  rsrc3: int
  rsrc1: int
  rsrc2: int
  code_properties: int
  kernarg_preload: int = 0   # gfx90a/gfx94x: kernel arguments the CP preloads into user SGPRs (LENGTH bits 6:0, OFFSET bits 15:7)
  @staticmethod
  def parse(raw:bytes) -> KernelDescriptor:
    if len(raw) != 64: raise ElfError(f"a kernel descriptor is 64 bytes, got {len(raw)}")
    g, p, k, _, entry = struct.unpack_from("<IIIIq", raw, 0)
    rsrc3, rsrc1, rsrc2, props, preload = struct.unpack_from("<IIIHH", raw, 44)
    return KernelDescriptor(g, p, k, entry, rsrc3, rsrc1, rsrc2, props, preload)
  # COMPUTE_PGM_RSRC2: which work-group ids the hardware puts in SGPRs, how many work-item ids in VGPRs (0: x, 1: x y, 2: x y z)
  def workgroup_id_enabled(self, dim:int) -> bool: return bool(self.rsrc2 >> (7 + dim) & 1)
  @property
  def workitem_id_dims(self) -> int: return (self.rsrc2 >> 11 & 3) + 1

@dataclass(frozen=True)
class CodeObject:
  elf: Elf
  text_offset: int                # the kernel's machine code: offset in .text
  kd: KernelDescriptor
  kd_offset: int                  # the descriptor: offset in .rodata
  entry_reloc: tuple[int, int]    # (relocation type, addend) that fills the descriptor's entry offset

  def entry_offset(self, code_addr:int, kd_addr:int) -> int:
    """KERNEL_CODE_ENTRY_BYTE_OFFSET once the kernel's code is at code_addr and its descriptor at kd_addr: R_AMDGPU_REL64 is S + A - P,
    P the field itself (16 bytes into the descriptor)"""
    if self.entry_reloc[0] != R_AMDGPU_REL64:
      raise ElfError(f"the descriptor's entry offset has relocation type {self.entry_reloc[0]}, not R_AMDGPU_REL64")
    return code_addr + self.entry_reloc[1] - (kd_addr + 16)

# the relative relocation types: type -> (bytes patched, value from S + A and P), AMDGPUUsage "Relocation Records". They do not depend on
# where the image is loaded; absolute ones (ABS32/ABS64) would, and none of our kernels has them
_RELOCS = {4: (4, lambda sa, p: sa - p), R_AMDGPU_REL64: (8, lambda sa, p: sa - p), 10: (4, lambda sa, p: (sa - p) & 0xffffffff),
           11: (4, lambda sa, p: (sa - p) >> 32)}
MAX_IMAGE = 1 << 28  # a kernel's code and data are kilobytes; a larger image is a malformed file, not something to allocate

def link(lib:bytes) -> tuple[bytes, dict[str, int]]:
  """the code object as one image for the GPU: its allocated sections laid out in file order at their alignment (uninitialized ones
  zero) and its relocations applied. Returns (image, {symbol name: offset in the image}); a loader copies the image to GPU memory at
  base B and dispatches with B + offset of `<name>.kd` as the kernel descriptor address."""
  elf, base, size = Elf(lib), {}, 0
  for i, sec in enumerate(elf.sections):
    if not sec.flags & SHF_ALLOC: continue
    align = max(sec.addralign, 1)
    base[i] = size = (size + align - 1) // align * align
    if (size := size + sec.size) > MAX_IMAGE: raise ElfError(f"allocated sections reach {size} bytes at section {sec.name!r}, more than {MAX_IMAGE}")
  image = bytearray(size)
  for i, off in base.items():
    if elf.sections[i].type != SHT_NOBITS: image[off:off + elf.sections[i].size] = elf.content(elf.sections[i])
  by_name = {s.name: i for i, s in enumerate(elf.sections)}
  for r in elf.relocations():
    if (where := base.get(by_name[r.section])) is None: continue  # debug info and the like: not loaded
    if r.type not in _RELOCS: raise ElfError(f"relocation type {r.type} in {r.section!r} at {r.offset}: only relative relocations are applied")
    if r.symbol.shndx not in base: raise ElfError(f"relocation in {r.section!r} at {r.offset} refers to {r.symbol.name!r}, which is not in the image")
    width, calc = _RELOCS[r.type]
    if not 0 <= r.offset <= elf.sections[by_name[r.section]].size - width: raise ElfError(f"relocation at {r.offset} lies outside {r.section!r}")
    p, sa = where + r.offset, base[r.symbol.shndx] + r.symbol.value + r.addend
    image[p:p + width] = (calc(sa, p) & (1 << 8 * width) - 1).to_bytes(width, "little")
  return bytes(image), {s.name: base[s.shndx] + s.value for s in elf.symbols() if s.name and s.shndx in base}

def read_code_object(lib:bytes, name:str) -> CodeObject:
  """the kernel `name` of a code object: its code, its descriptor, and the relocation that links the two. Raises ElfError naming what
  is missing or malformed."""
  elf = Elf(lib)
  if elf.machine != EM_AMDGPU: raise ElfError(f"not an AMDGPU code object: e_machine is {elf.machine}, AMDGPU is {EM_AMDGPU}")
  fn, kd = elf.symbol(name), elf.symbol(f"{name}.kd")
  if kd.size != 64: raise ElfError(f"kernel descriptor {name}.kd is {kd.size} bytes, it must be 64")
  if not (0 <= kd.shndx < len(elf.sections) and kd.value + 64 <= elf.sections[kd.shndx].size):
    raise ElfError(f"{name}.kd at {kd.value} lies outside its section {kd.shndx}")
  ro = elf.sections[kd.shndx]
  entry = [r for r in elf.relocations() if r.section == ro.name and r.offset == kd.value + 16]
  if len(entry) != 1 or entry[0].symbol.name != name:
    raise ElfError(f"the entry offset of {name}.kd is not relocated against {name}: {[(r.type, r.symbol.name) for r in entry]}")
  return CodeObject(elf, fn.value, KernelDescriptor.parse(elf.content(ro)[kd.value:kd.value+64]), kd.value, (entry[0].type, entry[0].addend))
