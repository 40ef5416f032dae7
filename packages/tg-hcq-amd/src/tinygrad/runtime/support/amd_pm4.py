"""AMD PM4 type-3 packets for a compute queue, word by word. Facts from the Linux kernel's public headers:
drivers/gpu/drm/amd/amdgpu/nvd.h (PACKET3 header, opcodes, field shifts), gfx_v10_0.c (packet lengths: ACQUIRE_MEM, RELEASE_MEM),
and the gfx11 register offsets of the COMPUTE_* shader registers. Operands may be ints or int UOps (patched at submit); a 64-bit
address is split into its low and high words."""

# opcodes (nvd.h PACKET3_*)
NOP, DISPATCH_DIRECT, WRITE_DATA, WAIT_REG_MEM, INDIRECT_BUFFER = 0x10, 0x15, 0x37, 0x3C, 0x3F
EVENT_WRITE, RELEASE_MEM, ACQUIRE_MEM, SET_SH_REG = 0x46, 0x49, 0x58, 0x76
OPCODE_NAMES = {NOP: "NOP", DISPATCH_DIRECT: "DISPATCH_DIRECT", WRITE_DATA: "WRITE_DATA", WAIT_REG_MEM: "WAIT_REG_MEM",
                INDIRECT_BUFFER: "INDIRECT_BUFFER", EVENT_WRITE: "EVENT_WRITE", RELEASE_MEM: "RELEASE_MEM", ACQUIRE_MEM: "ACQUIRE_MEM",
                SET_SH_REG: "SET_SH_REG"}
SET_SH_REG_START = 0x2c00  # PACKET3_SET_SH_REG_START: SET_SH_REG addresses registers relative to it

# compute shader registers (dword offsets; gfx11 mmCOMPUTE_*; mesa's sid.h has the same as byte offsets: R_00B8A0_COMPUTE_PGM_RSRC3 is
# 0xB8A0 = 4 * 0x2e28). RSRC3 holds gfx10+'s SHARED_VGPR_CNT and gfx11's INST_PREF_SIZE (gfx90a/gfx94x: ACCUM_OFFSET)
COMPUTE_START_X, COMPUTE_NUM_THREAD_X, COMPUTE_PGM_LO, COMPUTE_PGM_RSRC1, COMPUTE_USER_DATA_0 = 0x2e04, 0x2e07, 0x2e0c, 0x2e12, 0x2e40
COMPUTE_PGM_RSRC3 = 0x2e28

# WAIT_REG_MEM fields: FUNCTION bits 2:0 (5 is >=, 3 is ==), MEM_SPACE bit 4 (1 memory), OPERATION bits 7:6 (1 write, wait, write)
WAIT_GEQ, WAIT_EQ = 5, 3
# RELEASE_MEM fields
CACHE_FLUSH_AND_INV_TS_EVENT = 0x14  # VGT_EVENT_TYPE of an end-of-pipe release
RELEASE_GCR = (1 << 12) | (1 << 13) | (1 << 21) | (1 << 22)  # GCR_GLM_WB | GCR_GLM_INV | GCR_GL2_WB | GCR_SEQ: write back before the write
DATA_SEL_32, DATA_SEL_64, DATA_SEL_GPU_CLOCK = 1, 2, 3
# ACQUIRE_MEM GCR_CNTL: invalidate the instruction, scalar, vector, L1 and L2 caches, write back L2 (GLI_INV bit 0, GLM_WB 4, GLM_INV 5,
# GLK_WB 6, GLK_INV 7, GLV_INV 8, GL1_INV 9, GL2_INV 14, GL2_WB 15)
ACQUIRE_GCR = 0x1 | 0x10 | 0x20 | 0x40 | 0x80 | 0x100 | 0x200 | 0x4000 | 0x8000
# DISPATCH_INITIATOR: COMPUTE_SHADER_EN bit 0, FORCE_START_AT_000 bit 2, CS_W32_EN bit 15 (wave32; clear: wave64)
CS_W32_EN = 1 << 15
DISPATCH_INITIATOR = (1 << 0) | (1 << 2) | CS_W32_EN
CS_PARTIAL_FLUSH = 7  # EVENT_WRITE event type, with EVENT_INDEX 4

# an int is split here; an int UOp is masked to its low word when it becomes a packet word (tinygrad.uop.queue.packet)
def lo(x): return x & 0xffffffff if isinstance(x, int) else x
def hi(x): return x >> 32

def header(opcode:int, body_words:int) -> int:
  """PACKET3(op, n): type 3 in bits 31:30, n = body words - 1 in bits 29:16, the opcode in bits 15:8"""
  return (3 << 30) | ((body_words - 1) & 0x3fff) << 16 | (opcode & 0xff) << 8

def _pkt(opcode:int, *body) -> list: return [header(opcode, len(body)), *body]

def wait_reg_mem(addr, ref, mask=0xffffffff, func=WAIT_GEQ, poll_interval=0x4) -> list:
  """stall until (mem32[addr] & mask) func ref"""
  return _pkt(WAIT_REG_MEM, func | (1 << 4), lo(addr), hi(addr), ref, mask, poll_interval)

def hdp_flush(req_reg:int, done_reg:int, ref_mask:int) -> list:
  """write ref_mask to the HDP flush request register, then wait until the done register shows it (WAIT_REG_MEM, register space,
  operation 1: write, wait, write), as amdgpu's emit_hdp_flush does; the register offsets are the GPU's NBIO ones"""
  return _pkt(WAIT_REG_MEM, WAIT_EQ | (1 << 6), req_reg, done_reg, ref_mask, ref_mask, 0x20)

def release_mem(addr, data, data_sel=DATA_SEL_64, interrupt=False) -> list:
  """at the end of the pipe (after earlier work finished) write back caches, then write data (or the clock) to addr"""
  return _pkt(RELEASE_MEM, RELEASE_GCR | (3 << 25) | CACHE_FLUSH_AND_INV_TS_EVENT | (5 << 8),
              (data_sel << 29) | ((2 if interrupt else 0) << 24), lo(addr), hi(addr), lo(data), hi(data), 0)

def acquire_mem(gcr_cntl=ACQUIRE_GCR) -> list:
  """invalidate (and write back) caches over the whole address range: CP_COHER_SIZE 0xffffffff, SIZE_HI 0xffffff, base 0, poll 10"""
  return _pkt(ACQUIRE_MEM, 0, 0xffffffff, 0xffffff, 0, 0, 0xa, gcr_cntl)

def write_data(addr, *values) -> list:
  """write the values to memory at addr: DST_SEL 5 (memory, async) in bits 11:8, WR_CONFIRM bit 20"""
  return _pkt(WRITE_DATA, (5 << 8) | (1 << 20), lo(addr), hi(addr), *values)

def set_sh_reg(reg:int, *values) -> list: return _pkt(SET_SH_REG, reg - SET_SH_REG_START, *values)

def dispatch_direct(gx, gy, gz, initiator=DISPATCH_INITIATOR) -> list: return _pkt(DISPATCH_DIRECT, gx, gy, gz, initiator)

def event_write(event=CS_PARTIAL_FLUSH, index=4) -> list: return _pkt(EVENT_WRITE, event | (index << 8))

def indirect_buffer(addr, n_words) -> list:
  """run n_words of commands at addr (4-byte aligned): IB_BASE_LO, IB_BASE_HI (bits 15:0), IB_SIZE | INDIRECT_BUFFER_VALID (bit 23)"""
  return _pkt(INDIRECT_BUFFER, lo(addr), hi(addr) & 0xffff, n_words | (1 << 23))

def dispatch(program, kernargs, global_size, local_size, rsrc1:int, rsrc2:int, rsrc3:int=0, user_sgprs:int=2, kernarg_at:int=0,
             wave32:bool=True) -> list:
  """the register setup and the dispatch of one kernel: code address (>> 8), resources (RSRC1-2, then RSRC3), work-group size, the
  kernel's user SGPRs (user_sgprs words of USER_DATA, the kernarg pointer at kernarg_at, the rest zero), then the grid in work groups"""
  code, user = program >> 8, [0] * user_sgprs
  user[kernarg_at:kernarg_at + 2] = [lo(kernargs), hi(kernargs)]
  return (set_sh_reg(COMPUTE_PGM_LO, lo(code), hi(code)) + set_sh_reg(COMPUTE_PGM_RSRC1, rsrc1, rsrc2) + set_sh_reg(COMPUTE_PGM_RSRC3, rsrc3) +
          set_sh_reg(COMPUTE_START_X, 0, 0, 0, *local_size) + set_sh_reg(COMPUTE_USER_DATA_0, *user) +
          dispatch_direct(*global_size, initiator=DISPATCH_INITIATOR if wave32 else DISPATCH_INITIATOR & ~CS_W32_EN) + event_write())
