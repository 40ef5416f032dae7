"""hcq2 selection for NV: queue commands -> GPFIFO methods (host semaphores, inline-QMD launches, copy engine). Golden tests in
tests/hcq/test_select.py show each command's methods word by word."""
import struct
from dataclasses import dataclass, field
from tinygrad.uop import Ops
from tinygrad.uop.ops import UPat, PatternMatcher
from tinygrad.runtime.support.hcq_select import packets
from tinygrad.runtime.support import nv_methods as nv

# a launch's kernargs block: the QMD at its start, constant buffer 0 after it, the kernel's parameters at CBUF0_PARAMS in it
QMD_BYTES, CBUF0_SIZE, CBUF0_PARAMS = 0x100, 0x1000, 0x160
# constant buffer 0 below the parameters holds what the CUDA driver writes there, read by ptxas-made code (nvdisasm of ptxas 13.0's
# code for %ntid, %nctaid, cvta.shared, cvta.local on sm_86 and sm_90; tests/hcq/test_nv_kernels.py): %ntid.xyz (the block) at 0x0,
# %nctaid.xyz (the grid) at 0xc, the shared memory window at 0x18 (sm_8x; sm_90 reads SR_SWINHI), the local memory window at 0x20, the
# initial stack pointer at 0x28. The rest stays zero: the stack pointer (kernels with a stack are refused on hardware, no local memory
# is set up), and the 64-bit memory descriptor of global loads and stores at 0x118 (sm_8x) / 0x208 (sm_90), whose driver value no
# public source gives (upstream tinygrad's NV backend leaves it zero too)
CB0_NTID, CB0_NCTAID, CB0_SHARED_WINDOW, CB0_LOCAL_WINDOW = 0x0, 0xc, 0x18, 0x20

def driver_words(size:int, global_size:tuple, local_size:tuple) -> bytes:
  """the first `size` bytes of constant buffer 0 (up to the parameters) for a launch of this grid"""
  words = bytearray(size)
  struct.pack_into("<3I3IQQ", words, CB0_NTID, *local_size, *global_size, nv.SHARED_WINDOW, nv.LOCAL_WINDOW)
  return bytes(words)
WFI = 0x78  # host class NVC56F_WFI, SCOPE_ALL (bit 0)

# the QMD fields every launch sets the same way: QMD V03_00, caches invalidated at launch (our host writes kernargs and data between
# launches), no limit on API-visible calls (NO_CHECK), samplers indexed via the header index, L1 SYSMEMBAR after the grid
QMD_COMMON = {"qmd_major_version": 3, "qmd_version": 0, "sm_global_caching_enable": 1, "invalidate_texture_header_cache": 1,
              "invalidate_texture_sampler_cache": 1, "invalidate_texture_data_cache": 1, "invalidate_shader_data_cache": 1,
              "invalidate_instruction_cache": 1, "invalidate_shader_constant_cache": 1, "cwd_membar_type": 1,
              "api_visible_call_limit": 1, "sampler_index": 1, "constant_buffer_valid0": 1,
              "constant_buffer_size_shifted4_0": CBUF0_SIZE >> 4}
# shared-memory carve-outs an SM can be configured with (KiB); the QMD's SM_CONFIG fields hold the size in 4 KiB units plus one
SMEM_CONFIGS_KB = (8, 16, 32, 64, 100, 132, 164, 196, 228)

def program_qmd_fields(registers:int=0, shared:int=0, local:int=0, barriers:int=1, sass_version:int=0) -> dict[str, int]:
  """the QMD fields of one program: its register count, shared and local memory, barriers and SASS version (from its cubin; a program
  for the mock alone has none, and takes one barrier)"""
  if not 0 <= shared <= SMEM_CONFIGS_KB[-1] * 1024: raise ValueError(f"kernel needs {shared} bytes of shared memory, more than an SM has")
  config = next(kb for kb in SMEM_CONFIGS_KB if kb * 1024 >= shared) * 1024 // 4096 + 1
  return {"register_count_v": registers, "shared_memory_size": (shared + 127) // 128 * 128, "shader_local_memory_low_size": local,
          "min_sm_config_shared_mem_size": SMEM_CONFIGS_KB[0] * 1024 // 4096 + 1, "max_sm_config_shared_mem_size": SMEM_CONFIGS_KB[-1] * 1024 // 4096 + 1,
          "target_sm_config_shared_mem_size": config, "barrier_count": barriers, "sass_version": sass_version}

@dataclass
class NVSelectCtx:
  """what selection needs from the device: each loaded program's QMD fields by code address"""
  programs: dict[int, dict[str, int]] = field(default_factory=dict)

def _cmd(name:str, n:int) -> UPat: return UPat(Ops.INS, arg=name, src=tuple(UPat.var(f"s{i}") for i in range(n)))

def launch_qmd(program_fields:dict, program, kernargs, global_size, local_size) -> list:
  cbuf = kernargs + QMD_BYTES
  return nv.qmd(**QMD_COMMON, **program_fields, cta_raster_width=global_size[0], cta_raster_height=global_size[1],
                cta_raster_depth=global_size[2], cta_thread_dimension0=local_size[0], cta_thread_dimension1=local_size[1],
                cta_thread_dimension2=local_size[2], constant_buffer_addr_lower0=cbuf & 0xffffffff, constant_buffer_addr_upper0=cbuf >> 32,
                program_address_lower=program & 0xffffffff, program_address_upper=program >> 32)

def _launch(ctx:NVSelectCtx, s0, s1, s2, s3, s4, s5, s6, s7):
  if ctx is None or s0.op is not Ops.CONST or (fields := ctx.programs.get(s0.arg)) is None:
    raise RuntimeError(f"exec of a program at {s0.render()} that this device did not load "
                       f"(loaded: {[hex(a) for a in ctx.programs] if ctx else []})")
  return packets("NV", ("LAUNCH", nv.launch(s1, launch_qmd(fields, s0, s1, (s2, s3, s4), (s5, s6, s7)))))

def _copy(s0, s1, s2):
  if s2.op is not Ops.CONST: raise RuntimeError(f"an NV copy needs a constant size, got {s2.render()}")
  return packets("NV", *[("COPY", nv.copy(s0 + off, s1 + off, min(nv.COPY_MAX, s2.arg - off))) for off in range(0, s2.arg, nv.COPY_MAX)])

pm_nv = PatternMatcher([
  (_cmd("wait", 2), lambda s0, s1: packets("NV", ("SEM_ACQUIRE", nv.sem_acquire(s0, s1)))),
  (_cmd("store", 2), lambda s0, s1: packets("NV", ("SEM_RELEASE", nv.sem_release(s0, s1)))),
  # timestamp: a release with RELEASE_TIMESTAMP writes a zero payload at the slot and the clock at slot+8
  (_cmd("timestamp", 1), lambda s0: packets("NV", ("SEM_RELEASE", nv.sem_release(s0, 0, timestamp=True)))),
  # barrier: wait for idle (every earlier launch done, its writes visible)
  (_cmd("barrier", 0), lambda: packets("NV", ("WFI", nv.method(0, WFI, 1)))),
  (_cmd("exec", 8), _launch),
  (_cmd("copy", 3), _copy),
])
