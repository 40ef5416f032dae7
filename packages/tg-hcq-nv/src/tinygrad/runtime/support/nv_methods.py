"""NVIDIA push-buffer methods: the GPFIFO method headers, host semaphores, the compute class's launch of a QMD, and the copy engine.
Facts from NVIDIA's open-gpu-kernel-modules class headers: clc56f.h (AMPERE_CHANNEL_GPFIFO_A: DMA_INCR header, SEM_* methods,
GP_ENTRY words), clc6c0.h (AMPERE_COMPUTE_A: SEND_PCAS_A, SEND_SIGNALING_PCAS2_B, inline QMD), clc6b5.h (AMPERE_DMA_COPY_A)."""

from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp

SUBC_COMPUTE, SUBC_COPY = 1, 4  # subchannels the channel binds the compute and copy classes to (the host class answers on any)

# host class C56F
SEM_ADDR_LO, SEM_ADDR_HI, SEM_PAYLOAD_LO, SEM_PAYLOAD_HI, SEM_EXECUTE = 0x5c, 0x60, 0x64, 0x68, 0x6c
SEM_RELEASE, SEM_ACQ_CIRC_GEQ = 1, 3       # SEM_EXECUTE_OPERATION (2:0)
SEM_ACQUIRE_SWITCH_TSG = 1 << 12           # yield the channel while waiting
SEM_RELEASE_WFI = 1 << 20                  # release after the work before it finished
SEM_PAYLOAD_64 = 1 << 24                   # PAYLOAD_SIZE_64BIT
SEM_RELEASE_TIMESTAMP = 1 << 25            # also write the 64-bit clock 8 bytes after the payload
# compute class C6C0
SET_INLINE_QMD_ADDRESS_A, SET_INLINE_QMD_ADDRESS_B, LOAD_INLINE_QMD_DATA = 0x318, 0x31c, 0x320
SEND_PCAS_A, SEND_SIGNALING_PCAS2_B, PCAS_ACTION_INVALIDATE_COPY_SCHEDULE = 0x2b4, 0x2c0, 3
# where generic addresses reach a CTA's shared memory and a thread's local memory: 64-bit window bases (A: bits 48:32, B: 31:0) the
# compute class takes as SET_SHADER_SHARED_MEMORY_WINDOW_A/B and SET_SHADER_LOCAL_MEMORY_WINDOW_A/B (clc7c0.h and later), set once per
# channel. The bases are mesa NVK's (nvk_queue.c, Volta and later: shared at 0xfe << 24, local at 0xff << 24, set "unconditionally.
# Otherwise, the memory window might be in a random place"): the top 32 MiB of the low 4 GiB, far below our allocations
SET_SHADER_SHARED_MEMORY_WINDOW_A, SET_SHADER_LOCAL_MEMORY_WINDOW_A = 0x2a0, 0x7b0
SHARED_WINDOW, LOCAL_WINDOW = 0xfe << 24, 0xff << 24
# copy class C6B5
LAUNCH_DMA, OFFSET_IN_UPPER, LINE_LENGTH_IN = 0x300, 0x400, 0x418
# LAUNCH_DMA: DATA_TRANSFER_TYPE NON_PIPELINED (2, bits 1:0), FLUSH_ENABLE (bit 2), SRC/DST_MEMORY_LAYOUT PITCH (bits 7, 8)
LAUNCH_DMA_COPY = 2 | (1 << 2) | (1 << 7) | (1 << 8)
COPY_MAX = 1 << 31  # LINE_LENGTH_IN is a 32-bit byte count: split copies well below it

# an int is split here; an int UOp is masked to its low word when it becomes a packet word (tinygrad.uop.queue.packet)
def lo(x): return x & 0xffffffff if isinstance(x, int) else x
def hi(x): return x >> 32

def method(subc:int, mthd:int, *data) -> list:
  """an incrementing method header (SEC_OP 1 in bits 31:29, count 28:16, subchannel 15:13, method address >> 2 in 11:0) and its data"""
  if not data or len(data) >= 1 << 13: raise ValueError(f"a method carries 1..8191 words, got {len(data)}")
  return [(1 << 29) | (len(data) << 16) | (subc << 13) | (mthd >> 2), *data]

def decode_header(word:int) -> tuple[int, int, int, int]:
  """(sec_op, count, subchannel, method byte address) of a method header"""
  return word >> 29, (word >> 16) & 0x1fff, (word >> 13) & 0x7, (word & 0xfff) << 2

def _addr40(addr, what:str):
  # SEM_ADDR_HI holds bits 39:32 and SEND_PCAS_A a 32-bit address >> 8: semaphores and QMDs live in the low 1 TiB of the address space
  a = addr.arg if isinstance(addr, UOp) and addr.op is Ops.CONST else addr
  if isinstance(a, int) and not 0 <= a < 1 << 40: raise ValueError(f"NV {what} address {a:#x} is not below 2**40")
  return addr

def sem_acquire(addr, value) -> list:
  """wait until the 64-bit semaphore at addr >= value (circular compare)"""
  addr = _addr40(addr, 'semaphore')
  return method(0, SEM_ADDR_LO, lo(addr), hi(addr) & 0xff, lo(value), hi(value), SEM_ACQ_CIRC_GEQ | SEM_ACQUIRE_SWITCH_TSG | SEM_PAYLOAD_64)

def sem_release(addr, value, timestamp=False) -> list:
  """write value to the 64-bit semaphore at addr after the work before it (and the clock at addr+8 with timestamp)"""
  addr = _addr40(addr, 'semaphore')
  return method(0, SEM_ADDR_LO, lo(addr), hi(addr) & 0xff, lo(value), hi(value),
                SEM_RELEASE | SEM_RELEASE_WFI | SEM_PAYLOAD_64 | (SEM_RELEASE_TIMESTAMP if timestamp else 0))

def launch(qmd_addr, qmd_words:list) -> list:
  """load the QMD inline at qmd_addr (256-byte aligned), then schedule it"""
  qmd_addr = _addr40(qmd_addr, "QMD")
  return (method(SUBC_COMPUTE, SET_INLINE_QMD_ADDRESS_A, hi(qmd_addr >> 8), lo(qmd_addr >> 8)) +
          method(SUBC_COMPUTE, LOAD_INLINE_QMD_DATA, *qmd_words) +
          method(SUBC_COMPUTE, SEND_PCAS_A, lo(qmd_addr >> 8)) +
          method(SUBC_COMPUTE, SEND_SIGNALING_PCAS2_B, PCAS_ACTION_INVALIDATE_COPY_SCHEDULE))

def memory_windows(shared:int=SHARED_WINDOW, local:int=LOCAL_WINDOW) -> list:
  return (method(SUBC_COMPUTE, SET_SHADER_SHARED_MEMORY_WINDOW_A, hi(shared) & 0x1ffff, lo(shared)) +
          method(SUBC_COMPUTE, SET_SHADER_LOCAL_MEMORY_WINDOW_A, hi(local) & 0x1ffff, lo(local)))

def copy(dest, src, size) -> list:
  """one pitch-linear line of size bytes: OFFSET_IN_UPPER/LOWER, OFFSET_OUT_UPPER/LOWER, LINE_LENGTH_IN, LAUNCH_DMA"""
  return (method(SUBC_COPY, OFFSET_IN_UPPER, hi(src) & 0x1ffff, lo(src), hi(dest) & 0x1ffff, lo(dest)) +
          method(SUBC_COPY, LINE_LENGTH_IN, size) + method(SUBC_COPY, LAUNCH_DMA, LAUNCH_DMA_COPY))

def gpfifo_entry(addr:int, n_words:int) -> tuple[int, int]:
  """a GP_ENTRY: ENTRY0 GET (address bits 31:2), ENTRY1 GET_HI (7:0) | LEVEL SUBROUTINE (bit 9) | LENGTH in words (30:10)"""
  return addr & 0xfffffffc, (addr >> 32) & 0xff | (1 << 9) | (n_words << 10)

# *** the QMD (queue meta-data) of a launch: 64 words. Fields as (high bit, low bit) of QMD V03_00, the layout AMPERE_COMPUTE_A..
# HOPPER_COMPUTE_A share (NVIDIA open-gpu-doc classes/compute/clc9c0qmd.h and clcbc0qmd.h, NVC9C0_/NVCBC0_QMDV03_00_*; "(i)" fields
# taken at i = 0). Only the fields tg sets or the mock reads are named ***
QMD_WORDS = 64
QMD_FIELDS = {"qmd_group_id": (133, 128), "sm_global_caching_enable": (134, 134),
              "invalidate_texture_header_cache": (186, 186), "invalidate_texture_sampler_cache": (187, 187),
              "invalidate_texture_data_cache": (188, 188), "invalidate_shader_data_cache": (189, 189),
              "invalidate_instruction_cache": (190, 190), "invalidate_shader_constant_cache": (191, 191),
              "cwd_membar_type": (369, 368), "api_visible_call_limit": (378, 378), "sampler_index": (382, 382),
              "cta_raster_width": (415, 384), "cta_raster_height": (431, 416), "cta_raster_depth": (463, 448),
              "shared_memory_size": (561, 544), "min_sm_config_shared_mem_size": (567, 562), "max_sm_config_shared_mem_size": (574, 569),
              "qmd_version": (579, 576), "qmd_major_version": (583, 580),
              "cta_thread_dimension0": (607, 592), "cta_thread_dimension1": (623, 608), "cta_thread_dimension2": (639, 624),
              "constant_buffer_valid0": (640, 640), "register_count_v": (656, 648), "target_sm_config_shared_mem_size": (662, 657),
              "shader_local_memory_low_size": (759, 736), "barrier_count": (767, 763),
              "constant_buffer_addr_lower0": (1055, 1024), "constant_buffer_addr_upper0": (1072, 1056),
              "constant_buffer_size_shifted4_0": (1087, 1075),
              "program_address_lower": (1567, 1536), "program_address_upper": (1584, 1568),
              "shader_local_memory_high_size": (1623, 1600), "program_prefetch_size": (1649, 1641), "sass_version": (1663, 1656)}

def qmd(**fields) -> list:
  """the QMD's 64 words with the given fields set (ints or int UOps; a field never straddles a word here)"""
  words: list = [0] * QMD_WORDS
  for name, v in fields.items():
    if name not in QMD_FIELDS: raise KeyError(f"unknown QMD field {name!r}; known: {sorted(QMD_FIELDS)}")
    h, l = QMD_FIELDS[name]
    w, sh, mask = l // 32, l % 32, (1 << (h - l + 1)) - 1
    if isinstance(v, int) and not 0 <= v <= mask: raise ValueError(f"QMD field {name} holds {h-l+1} bits, got {v:#x}")
    part = (v & mask) << sh
    words[w] = part if isinstance(words[w], int) and words[w] == 0 else words[w] | part
  return words

def qmd_field(words:list[int], name:str) -> int:
  h, l = QMD_FIELDS[name]
  return (words[l // 32] >> (l % 32)) & ((1 << (h - l + 1)) - 1)
