"""Packet encoders, byte-exact. Every expected word is computed by hand here from the named header fields, not by the encoder."""
import struct
import pytest
from tinygrad.runtime.support import amd_pm4 as pm4, amd_sdma as sdma, nv_methods as nv

def le(words): return struct.pack(f"<{len(words)}I", *words)

# *** AMD PM4 (Linux nvd.h: PACKET3(op, n) = 3<<30 | (n & 0x3FFF)<<16 | (op & 0xFF)<<8, n = body words - 1) ***

def test_pm4_header():
  # PACKET3(PACKET3_WAIT_REG_MEM=0x3C, 5): 0xC0000000 | 5<<16 | 0x3C<<8
  assert pm4.header(0x3C, 6) == 0xC0053C00
  assert pm4.header(0x15, 4) == 0xC0031500  # PACKET3(PACKET3_DISPATCH_DIRECT=0x15, 3)

def test_pm4_wait_reg_mem_geq():
  # WAIT_REG_MEM_FUNCTION(5: >=) | WAIT_REG_MEM_MEM_SPACE(1)<<4 = 0x15; addr lo/hi; reference; mask; poll interval
  got = pm4.wait_reg_mem(0x12_3456_7890, 0xAABBCCDD)
  assert le(got) == le([0xC0053C00, 0x15, 0x34567890, 0x12, 0xAABBCCDD, 0xFFFFFFFF, 0x4])

def test_pm4_hdp_flush():
  # WAIT_REG_MEM, FUNCTION(3: ==), MEM_SPACE(0: register), OPERATION(1: write, wait, write)<<6 = 0x43; req reg, done reg, ref, mask, 0x20
  assert pm4.hdp_flush(0x50, 0x51, 1 << 2) == [0xC0053C00, 0x43, 0x50, 0x51, 4, 4, 0x20]

def test_pm4_release_mem():
  # PACKET3(RELEASE_MEM=0x49, 6); dw1: GCR_GLM_WB(1<<12) | GCR_GLM_INV(1<<13) | GCR_GL2_WB(1<<21) | GCR_SEQ(1<<22) | CACHE_POLICY(3)<<25
  #   | EVENT_TYPE(CACHE_FLUSH_AND_INV_TS_EVENT 0x14) | EVENT_INDEX(5)<<8; dw2: DATA_SEL(2: 64 bit)<<29 | INT_SEL(2)<<24
  dw1 = (1 << 12) | (1 << 13) | (1 << 21) | (1 << 22) | (3 << 25) | 0x14 | (5 << 8)
  assert dw1 == 0x06603514
  got = pm4.release_mem(0x7F00_0000_1000, 0x1_0000_0002, interrupt=True)
  assert le(got) == le([0xC0064900, dw1, (2 << 29) | (2 << 24), 0x1000, 0x7F00, 0x2, 0x1, 0])
  # DATA_SEL(3): send 64 bit GPU counter value, no interrupt
  assert pm4.release_mem(0x2000, 0, data_sel=3)[2] == 3 << 29

def test_pm4_acquire_mem():
  # PACKET3(ACQUIRE_MEM=0x58, 6): CP_COHER_CNTL 0, CP_COHER_SIZE 0xffffffff, SIZE_HI 0xffffff, BASE 0, BASE_HI 0, POLL_INTERVAL 10, GCR_CNTL
  gcr = 1 | 1 << 4 | 1 << 5 | 1 << 6 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 14 | 1 << 15  # GLI_INV, GLM_WB/INV, GLK_WB/INV, GLV_INV, GL1_INV, GL2_INV/WB
  assert pm4.acquire_mem() == [0xC0065800, 0, 0xFFFFFFFF, 0xFFFFFF, 0, 0, 0xA, gcr]

def test_pm4_write_data():
  # PACKET3(WRITE_DATA=0x37, 2+n) for n data words: WRITE_DATA_DST_SEL(5)<<8 | WR_CONFIRM(1<<20); addr lo/hi; data
  assert pm4.write_data(0x1_0000_0040, 7, 8) == [0xC0043700, 0x100500, 0x40, 0x1, 7, 8]

def test_pm4_set_sh_reg_and_dispatch():
  # PACKET3(SET_SH_REG=0x76, n values): register offset from PACKET3_SET_SH_REG_START 0x2c00 (COMPUTE_PGM_LO 0x2e0c -> 0x20c), values
  assert pm4.set_sh_reg(0x2E0C, 0x11, 0x22) == [0xC0027600, 0x20C, 0x11, 0x22]
  # DISPATCH_DIRECT x, y, z, DISPATCH_INITIATOR COMPUTE_SHADER_EN(bit 0) | FORCE_START_AT_000(bit 2) | CS_W32_EN(bit 15)
  assert pm4.dispatch_direct(4, 2, 1) == [0xC0031500, 4, 2, 1, 0x8005]

def test_pm4_dispatch_sequence():
  words = pm4.dispatch(0x7F00_0000_1200, 0x7F00_0000_3000, (4, 2, 1), (64, 1, 1), rsrc1=0xAB, rsrc2=0xCD, rsrc3=0x50)
  code = 0x7F00_0000_1200 >> 8
  assert words == [0xC0027600, 0x20C, code & 0xFFFFFFFF, code >> 32,           # COMPUTE_PGM_LO/HI = address >> 8
                   0xC0027600, 0x212, 0xAB, 0xCD,                              # COMPUTE_PGM_RSRC1/2 (0x2e12)
                   0xC0017600, 0x228, 0x50,                                    # COMPUTE_PGM_RSRC3 (mesa R_00B8A0: 0xB8A0 / 4 = 0x2e28)
                   0xC0067600, 0x204, 0, 0, 0, 64, 1, 1,                       # COMPUTE_START_X..Z, NUM_THREAD_X..Z (0x2e04..0x2e09)
                   0xC0027600, 0x240, 0x3000, 0x7F00,                          # COMPUTE_USER_DATA_0/1 = kernarg pointer (0x2e40)
                   0xC0031500, 4, 2, 1, 0x8005,                                # DISPATCH_DIRECT
                   0xC0004600, 7 | 4 << 8]                                     # EVENT_WRITE CS_PARTIAL_FLUSH(7), EVENT_INDEX(4)

def test_pm4_dispatch_of_a_wave64_kernel_with_a_private_segment_buffer():
  # a kernel taking 6 user SGPRs, the kernarg pointer in s4-s5 after the 4-SGPR private segment buffer (zero: no scratch), as LLVM
  # compiles for gfx1030; wave64: DISPATCH_INITIATOR without CS_W32_EN (bit 15)
  words = pm4.dispatch(0x1000, 0x7F00_0000_3000, (1, 1, 1), (64, 1, 1), 1, 2 << 1, 0, user_sgprs=6, kernarg_at=4, wave32=False)
  assert words[19:27] == [0xC0067600, 0x240, 0, 0, 0, 0, 0x3000, 0x7F00]      # COMPUTE_USER_DATA_0..5
  assert words[27:32] == [0xC0031500, 1, 1, 1, 0x5]

def test_pm4_indirect_buffer():
  # PACKET3(INDIRECT_BUFFER=0x3F, 2): base lo, base hi (15:0), size | INDIRECT_BUFFER_VALID (1<<23)
  assert pm4.indirect_buffer(0x7F12_3456_7000, 100) == [0xC0023F00, 0x34567000, 0x7F12, 100 | 1 << 23]

# *** AMD SDMA (navi10_sdma_pkt_open.h: header op bits 7:0, sub_op 15:8) ***

def test_sdma_copy_linear():
  # SDMA_OP_COPY=1, SDMA_SUBOP_COPY_LINEAR=0; COUNT = bytes-1 (mask 0x003FFFFF); PARAMETER 0; SRC lo/hi; DST lo/hi
  assert le(sdma.copy_linear(0x2_0000_0000, 0x1_0000_1000, 4096)) == le([1, 4095, 0, 0x1000, 1, 0, 2])
  assert sdma.copy_linear(0, 0, 1 << 22)[1] == 0x3FFFFF
  with pytest.raises(ValueError, match="COPY_LINEAR"): sdma.copy_linear(0, 0, (1 << 22) + 1)

def test_sdma_fence_trap_timestamp_nop():
  assert sdma.fence(0x1_0000_0010, 9) == [5, 0x10, 1, 9]          # SDMA_OP_FENCE=5: ADDR_LO, ADDR_HI, DATA
  assert sdma.trap() == [6, 0]                                     # SDMA_OP_TRAP=6: INT_CONTEXT
  assert sdma.timestamp(0x1_0000_0008) == [13 | 2 << 8, 8, 1]      # SDMA_OP_TIMESTAMP=13, SUBOP_TIMESTAMP_GET_GLOBAL=2
  assert sdma.nop() == [0]                                         # SDMA_OP_NOP=0

def test_sdma_poll_regmem():
  # SDMA_OP_POLL_REGMEM=8, FUNC(5: >=) bits 30:28, MEM_POLL bit 31; ADDR lo/hi, VALUE, MASK, INTERVAL | RETRY_COUNT<<16
  assert sdma.poll_regmem(0x3_0000_0100, 77) == [8 | 5 << 28 | 1 << 31, 0x100, 3, 77, 0xFFFFFFFF, 0x10 | 0xFFF << 16]
  assert sdma.poll_regmem(0, 0)[0] == 0xD0000008

# *** NV (clc56f.h, clc6c0.h, clc6b5.h) ***

def test_nv_method_header():
  # DMA_INCR: OPCODE 1 (31:29), COUNT (28:16), SUBCHANNEL (15:13), ADDRESS = method >> 2 (11:0)
  assert nv.method(1, 0x2B4, 0xAB) == [1 << 29 | 1 << 16 | 1 << 13 | 0x2B4 >> 2, 0xAB] == [0x200120AD, 0xAB]
  assert nv.decode_header(0x200120AD) == (1, 1, 1, 0x2B4)

def test_nv_semaphores():
  # SEM_ADDR_LO 0x5c .. SEM_EXECUTE 0x6c, five words from method 0x5c>>2 = 0x17 on subchannel 0
  acq = nv.sem_acquire(0x12_3456_7890, 0x5_0000_0001)
  # SEM_EXECUTE: OPERATION ACQ_CIRC_GEQ (3), ACQUIRE_SWITCH_TSG_EN (bit 12), PAYLOAD_SIZE_64BIT (bit 24)
  assert acq == [0x20050017, 0x34567890, 0x12, 1, 5, 3 | 1 << 12 | 1 << 24]
  # RELEASE (1), RELEASE_WFI_EN (bit 20), PAYLOAD_SIZE_64BIT (bit 24), RELEASE_TIMESTAMP_EN (bit 25)
  assert nv.sem_release(0x1000, 7)[-1] == 1 | 1 << 20 | 1 << 24
  assert nv.sem_release(0x1000, 0, timestamp=True)[-1] == 1 | 1 << 20 | 1 << 24 | 1 << 25

def test_nv_copy():
  # OFFSET_IN_UPPER 0x400 (+ IN_LOWER, OUT_UPPER, OUT_LOWER), LINE_LENGTH_IN 0x418, LAUNCH_DMA 0x300 on the copy subchannel 4;
  # LAUNCH_DMA: DATA_TRANSFER_TYPE NON_PIPELINED(2) | FLUSH_ENABLE(bit 2) | SRC_MEMORY_LAYOUT PITCH(bit 7) | DST_MEMORY_LAYOUT PITCH(bit 8)
  got = nv.copy(0x2_0000_0000, 0x1_0000_0040, 256)
  assert got == [1 << 29 | 4 << 16 | 4 << 13 | 0x100, 1, 0x40, 2, 0,
                 1 << 29 | 1 << 16 | 4 << 13 | 0x106, 256,
                 1 << 29 | 1 << 16 | 4 << 13 | 0xC0, 2 | 4 | 128 | 256]

def test_nv_launch_and_gpfifo():
  q = [0] * 64
  got = nv.launch(0x1_2345_6700, q)
  # SET_INLINE_QMD_ADDRESS_A/B (0x318: address >> 8 high, low), LOAD_INLINE_QMD_DATA (0x320, 64 words), SEND_PCAS_A (0x2b4),
  # SEND_SIGNALING_PCAS2_B (0x2c0) PCAS_ACTION_INVALIDATE_COPY_SCHEDULE (3)
  assert got[:3] == [0x200220C6, 0, 0x01234567]
  assert got[3] == 1 << 29 | 64 << 16 | 1 << 13 | 0xC8 and got[4:68] == q
  assert got[68:] == [0x200120AD, 0x01234567, 0x200120B0, 3]
  # GP_ENTRY0 GET = address 31:2; GP_ENTRY1 GET_HI 7:0 | LEVEL (bit 9) | LENGTH 30:10
  assert nv.gpfifo_entry(0x7F_1234_5678, 10) == (0x12345678, 0x7F | 1 << 9 | 10 << 10)

def test_nv_qmd_fields():
  # bit positions of QMD V03_00 (open-gpu-doc classes/compute/clc9c0qmd.h, clcbc0qmd.h): a field (h:l) sits in word l//32 at bit l%32
  words = nv.qmd(cta_raster_width=5, cta_raster_height=6, cta_thread_dimension0=32, program_address_lower=0xDEAD0000, qmd_major_version=3)
  assert words[12] == 5 and words[13] == 6      # CTA_RASTER_WIDTH MW(415:384) (word 12), HEIGHT MW(431:416) (word 13, low half)
  assert words[18] == 32 << 16 | 3 << 4         # CTA_THREAD_DIMENSION0 MW(607:592), QMD_MAJOR_VERSION MW(583:580) (word 18)
  assert words[48] == 0xDEAD0000                # PROGRAM_ADDRESS_LOWER MW(1567:1536) (word 48)
  assert nv.qmd_field(words, "cta_thread_dimension0") == 32
  with pytest.raises(ValueError, match="cta_raster_height"): nv.qmd(cta_raster_height=1 << 16)

def test_nv_qmd_constant_buffer_and_launch_resources():
  # CONSTANT_BUFFER_ADDR_LOWER(0) MW(1055:1024) -> word 32; ADDR_UPPER(0) MW(1072:1056) and SIZE_SHIFTED4(0) MW(1087:1075) -> word 33
  # (upper in bits 16:0, size/16 in bits 31:19); CONSTANT_BUFFER_VALID(0) MW(640:640) -> word 20 bit 0
  w = nv.qmd(constant_buffer_addr_lower0=0x1234_5600, constant_buffer_addr_upper0=0x7F, constant_buffer_size_shifted4_0=0x1000 >> 4,
             constant_buffer_valid0=1)
  assert (w[32], w[33], w[20]) == (0x1234_5600, 0x7F | 0x100 << 19, 1)
  # REGISTER_COUNT_V MW(656:648) and TARGET_SM_CONFIG_SHARED_MEM_SIZE MW(662:657): word 20 bits 16:8 and 22:17;
  # BARRIER_COUNT MW(767:763): word 23 bits 31:27; SHARED_MEMORY_SIZE MW(561:544): word 17 bits 17:0, MIN/MAX_SM_CONFIG MW(567:562)
  # MW(574:569): word 17 bits 23:18 and 30:25; SHADER_LOCAL_MEMORY_HIGH_SIZE MW(1623:1600): word 50; SASS_VERSION MW(1663:1656): word 51
  # bits 31:24; SHADER_LOCAL_MEMORY_LOW_SIZE MW(759:736): word 23 bits 23:0
  w = nv.qmd(register_count_v=40, target_sm_config_shared_mem_size=9, barrier_count=1, shared_memory_size=0x1800,
             min_sm_config_shared_mem_size=3, max_sm_config_shared_mem_size=58, shader_local_memory_high_size=0x640, sass_version=0x86,
             shader_local_memory_low_size=0x20)
  assert w[20] == 40 << 8 | 9 << 17 and w[23] == 1 << 27 | 0x20 and w[17] == 0x1800 | 3 << 18 | 58 << 25
  assert w[50] == 0x640 and w[51] == 0x86 << 24
  # the cache invalidates MW(186..191) are word 5 bits 26..31; QMD_GROUP_ID MW(133:128), SM_GLOBAL_CACHING_ENABLE MW(134:134): word 4;
  # CWD_MEMBAR_TYPE MW(369:368), API_VISIBLE_CALL_LIMIT MW(378:378), SAMPLER_INDEX MW(382:382): word 11 bits 17:16, 26, 30
  w = nv.qmd(invalidate_texture_header_cache=1, invalidate_shader_constant_cache=1, qmd_group_id=0x3F, sm_global_caching_enable=1,
             cwd_membar_type=1, api_visible_call_limit=1, sampler_index=1)
  assert (w[5], w[4], w[11]) == (1 << 26 | 1 << 31, 0x3F | 1 << 6, 1 << 16 | 1 << 26 | 1 << 30)

def test_nv_program_qmd_fields():
  from tinygrad.runtime.support.nv_select import program_qmd_fields
  # 20 KiB of shared memory takes the 32 KiB carve-out: 32768 / 4096 + 1 = 9; the range is 8 KiB (3) .. 228 KiB (58)
  f = program_qmd_fields(registers=32, shared=20 << 10, local=0x100, sass_version=0x86)
  assert (f["target_sm_config_shared_mem_size"], f["min_sm_config_shared_mem_size"], f["max_sm_config_shared_mem_size"]) == (9, 3, 58)
  assert (f["register_count_v"], f["shared_memory_size"], f["shader_local_memory_low_size"], f["sass_version"]) == (32, 20 << 10, 0x100, 0x86)
  with pytest.raises(ValueError, match="shared memory"): program_qmd_fields(shared=229 << 10)
