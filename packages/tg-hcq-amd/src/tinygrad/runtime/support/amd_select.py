"""hcq2 selection for AMD: queue commands -> PM4 packets (compute queue) and SDMA packets (copy queue). Golden tests in
tests/hcq/test_hcq_select.py show each command's packets word by word."""
from dataclasses import dataclass, field
from typing import NamedTuple
from tinygrad.uop import Ops
from tinygrad.uop.ops import UPat, PatternMatcher
from tinygrad.runtime.support.hcq_select import packets
from tinygrad.runtime.support import amd_pm4 as pm4, amd_sdma as sdma

class ProgramRegs(NamedTuple):
  """what a dispatch programs from a kernel's descriptor: its resource registers, how many user SGPRs it takes and where among them
  the kernarg pointer goes (the others are zero), and its wave size"""
  rsrc1: int
  rsrc2: int
  rsrc3: int = 0
  user_sgprs: int = 2
  kernarg_at: int = 0
  wave32: bool = True

@dataclass
class AMDSelectCtx:
  """what selection needs from the device: each loaded program's registers by code address, the HDP flush registers"""
  programs: dict[int, ProgramRegs] = field(default_factory=dict)
  hdp_flush: tuple[int, int, int]|None = None  # (request register, done register, this engine's bit); None: no HDP flush known

def _cmd(name:str, n:int) -> UPat: return UPat(Ops.INS, arg=name, src=tuple(UPat.var(f"s{i}") for i in range(n)))

def _dispatch(ctx:AMDSelectCtx, s0, s1, s2, s3, s4, s5, s6, s7):
  if s0.op is not Ops.CONST or (regs := ctx.programs.get(s0.arg)) is None:
    raise RuntimeError(f"exec of a program at {s0.render()} that this device did not load (loaded: {[hex(a) for a in ctx.programs]})")
  return packets("PM4", ("DISPATCH", pm4.dispatch(s0, s1, (s2, s3, s4), (s5, s6, s7), *regs)))

pm_pm4 = PatternMatcher([
  # wait: WAIT_REG_MEM on the signal's low word, >= compare
  (_cmd("wait", 2), lambda s0, s1: packets("PM4", ("WAIT_REG_MEM", pm4.wait_reg_mem(s0, s1)))),
  # store: an end-of-pipe RELEASE_MEM of the 64-bit value (caches written back first), with an interrupt for sleeping waiters
  (_cmd("store", 2), lambda s0, s1: packets("PM4", ("RELEASE_MEM", pm4.release_mem(s0, s1, interrupt=True)))),
  # timestamp: RELEASE_MEM of the GPU clock into the slot's timestamp field
  (_cmd("timestamp", 1), lambda s0: packets("PM4", ("RELEASE_MEM", pm4.release_mem(s0 + 8, 0, data_sel=pm4.DATA_SEL_GPU_CLOCK)))),
  # barrier: flush the host data path (where the device knows its registers), then invalidate the GPU caches
  (_cmd("barrier", 0), lambda ctx: packets("PM4", *([("WAIT_REG_MEM", pm4.hdp_flush(*ctx.hdp_flush))] if ctx.hdp_flush else []),
                                           ("ACQUIRE_MEM", pm4.acquire_mem()))),
  (_cmd("exec", 8), _dispatch),
])

def _copy(s0, s1, s2):
  if s2.op is not Ops.CONST: raise RuntimeError(f"an SDMA copy needs a constant size to split into packets, got {s2.render()}")
  return packets("SDMA", *[("COPY_LINEAR", sdma.copy_linear(s0 + off, s1 + off, min(sdma.COPY_MAX, s2.arg - off)))
                           for off in range(0, s2.arg, sdma.COPY_MAX)])

pm_sdma = PatternMatcher([
  (_cmd("wait", 2), lambda s0, s1: packets("SDMA", ("POLL_REGMEM", sdma.poll_regmem(s0, s1)))),
  # store: FENCE writes 32 bits, so the 64-bit value takes two (high word first: a waiter on the low word never sees a torn value
  # that is already >= its target), then a TRAP wakes sleeping waiters
  (_cmd("store", 2), lambda s0, s1: packets("SDMA", ("FENCE", sdma.fence(s0 + 4, s1 >> 32)), ("FENCE", sdma.fence(s0, s1 & 0xffffffff)),
                                            ("TRAP", sdma.trap()))),
  (_cmd("timestamp", 1), lambda s0: packets("SDMA", ("TIMESTAMP", sdma.timestamp(s0 + 8)))),
  # the copy engine runs its packets in order and each completes before the next: a barrier has nothing to do
  (_cmd("barrier", 0), lambda: packets("SDMA", ("NOP", sdma.nop()))),
  (_cmd("copy", 3), _copy),
])
