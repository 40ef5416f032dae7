"""hcq2 selection golden tests: an INS queue program -> the packet words each vendor matcher selects (PM4, SDMA, NV), with symbolic
words patched per submission."""
import pytest
from tinygrad.uop.ops import UOp
from tinygrad.uop.queue import queue, wait, store, barrier, timestamp, exec_kernel, copy, render_queue
from tinygrad.dtype import dtypes
from tinygrad.runtime.support.hcq_select import select, CommandBuffer
from tinygrad.runtime.support.amd_select import pm_pm4, pm_sdma, AMDSelectCtx, ProgramRegs
from tinygrad.runtime.support.nv_select import pm_nv, NVSelectCtx, program_qmd_fields

TL = UOp.variable("tl", 0, 2**32, dtypes.uint64)
SIG = 0x7F00_0000_1000

def words(q, pm, ctx=None, **var_vals) -> list[int]: return list(CommandBuffer(select(q, pm, ctx)).patch(var_vals))

def test_pm4_golden():
  q = queue(wait(SIG, TL), barrier(), exec_kernel(0x7F00_0000_2000, 0x7F00_0000_3000, (4, 1, 1), (32, 1, 1)), store(SIG, TL + 1),
            timestamp(SIG + 0x10))
  ctx = AMDSelectCtx(programs={0x7F00_0000_2000: ProgramRegs(0x11, 0x22, 0x33)}, hdp_flush=(0x50, 0x51, 4))
  assert words(q, pm_pm4, ctx, tl=6) == [
    0xC0053C00, 0x15, 0x1000, 0x7F00, 6, 0xFFFFFFFF, 4,                                    # wait: WAIT_REG_MEM >= 6
    0xC0053C00, 0x43, 0x50, 0x51, 4, 4, 0x20,                                              # barrier: HDP flush
    0xC0065800, 0, 0xFFFFFFFF, 0xFFFFFF, 0, 0, 0xA, 0xC3F1,                                #          ACQUIRE_MEM
    0xC0027600, 0x20C, 0x7F00000020 & 0xFFFFFFFF, 0x7F00000020 >> 32,                      # exec: COMPUTE_PGM_LO/HI
    0xC0027600, 0x212, 0x11, 0x22,                                                         #       RSRC1/2
    0xC0017600, 0x228, 0x33,                                                               #       RSRC3
    0xC0067600, 0x204, 0, 0, 0, 32, 1, 1,                                                  #       START_X.., NUM_THREAD_X..
    0xC0027600, 0x240, 0x3000, 0x7F00,                                                     #       USER_DATA_0/1 = kernargs
    0xC0031500, 4, 1, 1, 0x8005, 0xC0004600, 0x407,                                        #       DISPATCH_DIRECT, CS_PARTIAL_FLUSH
    0xC0064900, 0x06603514, 0x42000000, 0x1000, 0x7F00, 7, 0, 0,                           # store 7: RELEASE_MEM, 64 bit, interrupt
    0xC0064900, 0x06603514, 0x60000000, 0x1018, 0x7F00, 0, 0, 0]                           # timestamp: RELEASE_MEM GPU clock at +8

def test_pm4_exec_of_unknown_program_is_an_error():
  with pytest.raises(RuntimeError, match="did not load"): select(queue(exec_kernel(0x9000, 0, (1, 1, 1), (1, 1, 1))), pm_pm4, AMDSelectCtx())

def test_sdma_golden_splits_copies():
  q = queue(wait(SIG, TL), copy(0x1_0000_0000, 0x2_0000_0000, (4 << 20) + 16), store(SIG, TL + 1), timestamp(SIG + 0x10), barrier(),
            name="COPY")
  assert words(q, pm_sdma, tl=2**32 + 1) == [
    0xD0000008, 0x1000, 0x7F00, 1, 0xFFFFFFFF, 0x0FFF0010,                                 # POLL_REGMEM >= low word of tl
    1, 0x3FFFFF, 0, 0, 2, 0, 1,                                                            # COPY_LINEAR 4 MiB
    1, 15, 0, 0x400000, 2, 0x400000, 1,                                                    # COPY_LINEAR the last 16 bytes
    5, 0x1004, 0x7F00, 1, 5, 0x1000, 0x7F00, 2, 6, 0,                                      # FENCE high, FENCE low, TRAP
    0x20D, 0x1018, 0x7F00,                                                                 # TIMESTAMP_GET_GLOBAL at +8
    0]                                                                                     # barrier: NOP

NVSIG = 0x7F_0000_1000  # NV semaphores live below 2**40

def test_nv_golden():
  q = queue(wait(NVSIG, TL), barrier(), exec_kernel(0x7F_0000_2000, 0x7F_0000_3000, (4, 2, 1), (32, 1, 1)), store(NVSIG, TL + 1),
            copy(0x8000, 0x9000, 64))
  w = words(q, pm_nv, NVSelectCtx(programs={0x7F_0000_2000: program_qmd_fields(registers=24)}), tl=9)
  assert w[:6] == [0x20050017, 0x1000, 0x7F, 9, 0, 0x1001003]                           # SEM_ACQUIRE >= 9 (64 bit)
  assert w[6:8] == [0x2001001E, 1]                                                         # WFI scope all
  launch = w[8:8 + 72]
  assert launch[:3] == [0x200220C6, 0, 0x7F000030]                                     # inline QMD at kernargs (>> 8)
  # the QMD's nonzero words, from QMD V03_00's bit positions (clc9c0qmd.h; see test_encoders.py for each field's word and bits)
  assert {i: v for i, v in enumerate(launch[4:68]) if v} == {
    4: 1 << 6,                                    # SM_GLOBAL_CACHING_ENABLE
    5: 0x3F << 26,                                # INVALIDATE_{TEXTURE_HEADER,SAMPLER,DATA}, SHADER_DATA, INSTRUCTION, CONSTANT caches
    11: 1 << 16 | 1 << 26 | 1 << 30,              # CWD_MEMBAR_TYPE L1_SYSMEMBAR, API_VISIBLE_CALL_LIMIT NO_CHECK, SAMPLER_INDEX VIA_HEADER
    12: 4, 13: 2, 14: 1,                          # CTA_RASTER_WIDTH/HEIGHT/DEPTH
    17: 3 << 18 | 58 << 25,                       # SHARED_MEMORY_SIZE 0, MIN/MAX_SM_CONFIG_SHARED_MEM_SIZE 8 KiB / 228 KiB
    18: 3 << 4 | 32 << 16, 19: 1 | 1 << 16,       # QMD_MAJOR_VERSION 3, CTA_THREAD_DIMENSION0..2
    20: 1 | 24 << 8 | 3 << 17,                    # CONSTANT_BUFFER_VALID(0), REGISTER_COUNT_V 24, TARGET_SM_CONFIG 8 KiB
    23: 1 << 27,                                  # BARRIER_COUNT 1
    32: 0x3100, 33: 0x7F | (0x1000 >> 4) << 19,   # CONSTANT_BUFFER_ADDR_LOWER/UPPER(0) = kernargs + 0x100, SIZE_SHIFTED4(0)
    48: 0x2000, 49: 0x7F}                         # PROGRAM_ADDRESS_LOWER/UPPER
  assert launch[68:] == [0x200120AD, 0x7F000030, 0x200120B0, 3]
  assert w[80:86] == [0x20050017, 0x1000, 0x7F, 10, 0, 0x1100001]                      # SEM_RELEASE 10
  assert w[86:] == [0x20048100, 0, 0x9000, 0, 0x8000, 0x20018106, 64, 0x200180C0, 0x186]  # copy engine

def test_nv_exec_of_unknown_program_is_an_error():
  with pytest.raises(RuntimeError, match="did not load"): select(queue(exec_kernel(0x9000, 0, (1, 1, 1), (1, 1, 1))), pm_nv, NVSelectCtx())

def test_nv_semaphore_address_limit():
  with pytest.raises(ValueError, match="below 2"): select(queue(wait(SIG, TL)), pm_nv)

def test_recorded_buffer_patches_only_symbolic_words():
  cb = CommandBuffer(select(queue(wait(SIG, TL), store(SIG, TL + 1)), pm_pm4, AMDSelectCtx()))
  assert [i for i, _ in cb.patches] == [4, 12, 13] and cb.variables == ["tl"]
  assert cb.patch({"tl": 2**32 + 4})[4] == 4 and list(cb.patch({"tl": 5})[11:14]) == [0x7F00, 6, 0]
  with pytest.raises(RuntimeError, match="needs values"): cb.patch({})

def test_selected_program_prints():
  text = render_queue(select(queue(wait(SIG, TL), name="COPY"), pm_sdma))
  assert text.splitlines()[1].split() == ["0", "SDMA.POLL_REGMEM", "0xd0000008", "0x1000", "0x7f00", "uint((tl&4294967295))", "0xffffffff", "0xfff0010"]

def test_pm4_barrier_without_known_hdp_registers_only_invalidates():
  assert words(queue(barrier()), pm_pm4, AMDSelectCtx()) == [0xC0065800, 0, 0xFFFFFFFF, 0xFFFFFF, 0, 0, 0xA, 0xC3F1]
