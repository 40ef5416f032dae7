"""How a PM4 dispatch starts an AMDGPU kernel as the HSA ABI expects (LLVM AMDGPUUsage: "Kernel Descriptor", "Initial Kernel
Execution State", "Code Object V5 Metadata"): the user SGPRs its descriptor enables, its wave size, its explicit arguments where
HCQProgram puts them, and the hidden arguments code object v5 appends after them. No AQL packet or HSA queue exists here, so a kernel
that needs one (dispatch or queue pointer, hostcall, printf, heap) is refused when it is compiled or loaded, naming what it needs."""
from __future__ import annotations
import struct
from tinygrad.runtime.support.amd_select import ProgramRegs

# kernel_code_properties: the user SGPRs a kernel takes, in this order from s0, and how many each is; then its wave size
USER_SGPRS = ((1 << 0, "private segment buffer", 4), (1 << 1, "dispatch pointer", 2), (1 << 2, "queue pointer", 2),
              (1 << 3, "kernarg segment pointer", 2), (1 << 4, "dispatch id", 2), (1 << 5, "flat scratch init", 2),
              (1 << 6, "private segment size", 1))
KERNARG_SEGMENT_PTR, WAVEFRONT_SIZE32, USES_DYNAMIC_STACK = 1 << 3, 1 << 10, 1 << 11
# user SGPRs that only describe scratch: zero is right for a kernel without scratch (LLVM enables the private segment buffer on targets
# without architected flat scratch, gfx10.3 among them, whether or not the kernel uses it). The others have no value here
ZERO_WITHOUT_SCRATCH = ("private segment buffer", "flat scratch init", "private segment size")

# COMPUTE_PGM_RSRC2.LDS_SIZE (bits 23:15): the LDS a work group gets, in granules of 128 dwords on gfx7-gfx12.0 (AMDGPUUsage,
# GRANULATED_LDS_SIZE). An HSA descriptor leaves it 0 since the CP fills it from the AQL packet's group segment size; a PM4 dispatch
# has no AQL packet, so it is ours to set, or the kernel's LDS accesses fall outside an empty allocation
LDS_SIZE_SHIFT, LDS_SIZE_MASK, LDS_GRANULE, LDS_MAX = 15, 0x1ff, 512, 64 << 10

def rsrc2_with_lds(rsrc2:int, group_segment_size:int) -> int:
  if rsrc2 >> LDS_SIZE_SHIFT & LDS_SIZE_MASK: raise RuntimeError(f"has COMPUTE_PGM_RSRC2 {rsrc2:#x} with LDS_SIZE set, which HSA leaves 0")
  if group_segment_size > LDS_MAX: raise RuntimeError(f"needs {group_segment_size} bytes of LDS, more than a work group has ({LDS_MAX})")
  return rsrc2 | (group_segment_size + LDS_GRANULE - 1) // LDS_GRANULE << LDS_SIZE_SHIFT

def program_regs(meta:dict) -> ProgramRegs:
  """the registers a dispatch of this kernel programs, from its code object's descriptor facts; RuntimeError naming what the dispatch
  cannot give it. A code object without descriptor facts (the emulated renderer's) takes the kernarg pointer in s0-s1, wave32"""
  rsrc2 = rsrc2_with_lds(meta.get("rsrc2", 0), meta.get("group_segment_size", 0))
  if "props" not in meta: return ProgramRegs(meta.get("rsrc1", 0), rsrc2, meta.get("rsrc3", 0))
  props, user, kernarg_at = meta["props"], 0, None
  for bit, what, n in USER_SGPRS:
    if not props & bit: continue
    if bit == KERNARG_SEGMENT_PTR: kernarg_at = user
    elif what not in ZERO_WITHOUT_SCRATCH: raise RuntimeError(f"expects a {what} in its user SGPRs, which a PM4 dispatch does not provide")
    user += n
  if kernarg_at is None: raise RuntimeError("takes no kernarg segment pointer")
  if props & USES_DYNAMIC_STACK: raise RuntimeError("uses a dynamic stack, which needs scratch memory")
  # the CP of an AQL queue copies preloaded arguments into the user SGPRs after the enabled ones and starts 256 bytes into the code;
  # a PM4 dispatch writes USER_DATA once per recorded command buffer and starts at the entry, where LLVM puts a trap or a fallback
  if preload := meta.get("kernarg_preload", 0):
    raise RuntimeError(f"preloads {preload & 0x7f} SGPRs of kernel arguments (kernarg_preload {preload:#x}), which a PM4 dispatch does not")
  # COMPUTE_PGM_RSRC2.USER_SGPR (bits 5:1) is how many USER_DATA registers the hardware loads: at least what the properties enable,
  # more where LLVM pads them (on gfx1100 to 15 for a kernel that takes 2 on gfx1201: user and system SGPRs at least 16, for a hardware
  # bug); with no preloaded arguments (refused above) the padding is unused and written zero
  if (declared := meta["rsrc2"] >> 1 & 0x1f) < user:
    raise RuntimeError(f"has COMPUTE_PGM_RSRC2.USER_SGPR {declared}, but its kernel_code_properties enable {user} user SGPRs")
  return ProgramRegs(meta["rsrc1"], rsrc2, meta.get("rsrc3", 0), declared, kernarg_at, bool(props & WAVEFRONT_SIZE32))

def check_explicit_args(args:list[tuple[str, int, int]]) -> str|None:
  """why the kernel's explicit arguments (value kind, offset, size) are not where HCQProgram writes them (each buffer's 64-bit address,
  then each variable as a 32-bit int, packed), or None"""
  at, values = 0, False
  for kind, off, size in args:
    if kind.startswith("hidden_"): continue
    ok = (kind == "global_buffer" and size == 8 and not values) or (kind == "by_value" and size == 4)
    values |= kind == "by_value"
    if not ok or off != at: return f"argument {kind} of {size} bytes at offset {off} (the dispatch writes 8-byte buffers, then 4-byte values, packed)"
    at += size
  return None

# the hidden arguments a dispatch supplies: name (less "hidden_") -> (struct format, value from (global_size in groups, local_size)).
# The grid is whole work groups, so no group is partial (remainders 0); there is no global offset and no dynamic LDS; it is 3-dimensional
HIDDEN = {**{f"block_count_{'xyz'[d]}": ("<I", lambda g, l, d=d: g[d]) for d in range(3)},
          **{f"group_size_{'xyz'[d]}": ("<H", lambda g, l, d=d: l[d]) for d in range(3)},
          **{f"remainder_{'xyz'[d]}": ("<H", lambda g, l: 0) for d in range(3)},
          **{f"global_offset_{'xyz'[d]}": ("<q", lambda g, l: 0) for d in range(3)},
          "grid_dims": ("<H", lambda g, l: 3), "dynamic_lds_size": ("<I", lambda g, l: 0)}

def hidden_args(args:list[tuple[str, int, int]]) -> list[tuple[str, int]]:
  """(name, offset) of each hidden argument the kernel declares that the dispatch fills; RuntimeError naming the ones it cannot"""
  hidden = [(kind[7:], off, size) for kind, off, size in args if kind.startswith("hidden_") and kind != "hidden_none"]
  if bad := [f"{n} ({size} bytes)" for n, _, size in hidden if n not in HIDDEN or struct.calcsize(HIDDEN[n][0]) != size]:
    raise RuntimeError(f"declares hidden arguments {bad}, which a PM4 dispatch without an HSA runtime cannot supply")
  return [(n, off) for n, off, _ in hidden]

def fill_hidden(view:memoryview, hidden:list, global_size:tuple, local_size:tuple):
  for name, off in hidden:
    fmt, value = HIDDEN[name]
    struct.pack_into(fmt, view, off, value(global_size, local_size))
