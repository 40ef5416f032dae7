"""AMD SDMA (system DMA engine) packets for a copy queue. Facts from the Linux kernel's drivers/gpu/drm/amd/amdgpu/
navi10_sdma_pkt_open.h: SDMA_OP_* / SDMA_SUBOP_* codes, the header's op (bits 7:0) and sub_op (bits 15:8), and each packet's words."""
OP_NOP, OP_COPY, OP_FENCE, OP_TRAP, OP_POLL_REGMEM, OP_TIMESTAMP = 0, 1, 5, 6, 8, 13
SUBOP_COPY_LINEAR, SUBOP_TIMESTAMP_GET_GLOBAL = 0, 2
OP_NAMES = {OP_NOP: "NOP", OP_COPY: "COPY_LINEAR", OP_FENCE: "FENCE", OP_TRAP: "TRAP", OP_POLL_REGMEM: "POLL_REGMEM",
            OP_TIMESTAMP: "TIMESTAMP"}
COPY_MAX = 1 << 22  # COPY_LINEAR COUNT is 22 bits (mask 0x003FFFFF) of bytes - 1: one packet copies at most 4 MiB
FUNC_GEQ = 5

# an int is split here; an int UOp is masked to its low word when it becomes a packet word (tinygrad.uop.queue.packet)
def lo(x): return x & 0xffffffff if isinstance(x, int) else x
def hi(x): return x >> 32
def header(op:int, sub_op:int=0, extra:int=0) -> int: return op | (sub_op << 8) | extra

def copy_linear(dest, src, size) -> list:
  """COPY_LINEAR: COUNT (bytes - 1), PARAMETER 0, SRC_ADDR_LO/HI, DST_ADDR_LO/HI"""
  if not isinstance(size, int) or not 0 < size <= COPY_MAX: raise ValueError(f"one COPY_LINEAR moves 1..{COPY_MAX} bytes, got {size}")
  return [header(OP_COPY, SUBOP_COPY_LINEAR), size - 1, 0, lo(src), hi(src), lo(dest), hi(dest)]

def fence(addr, value) -> list:
  """FENCE: write the 32-bit value to addr once earlier packets are done (ADDR_LO, ADDR_HI, DATA)"""
  return [header(OP_FENCE), lo(addr), hi(addr), value]

def trap(context:int=0) -> list: return [header(OP_TRAP), context & 0x0fffffff]

def poll_regmem(addr, ref, mask=0xffffffff, func=FUNC_GEQ, interval=0x10, retry=0xfff) -> list:
  """POLL_REGMEM on memory: header FUNC bits 30:28, MEM_POLL bit 31; ADDR_LO/HI, VALUE, MASK, INTERVAL 15:0 | RETRY_COUNT 27:16"""
  return [header(OP_POLL_REGMEM, 0, (func << 28) | (1 << 31)), lo(addr), hi(addr), ref, mask, interval | (retry << 16)]

def timestamp(addr) -> list:
  """TIMESTAMP_GET_GLOBAL: the 64-bit global clock to addr"""
  return [header(OP_TIMESTAMP, SUBOP_TIMESTAMP_GET_GLOBAL), lo(addr), hi(addr)]

def nop() -> list: return [header(OP_NOP)]
