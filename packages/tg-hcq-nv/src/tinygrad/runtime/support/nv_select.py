"""hcq2 selection for NV: queue commands -> GPFIFO methods (host semaphores, inline-QMD launches, copy engine)."""
from tinygrad.uop import Ops
from tinygrad.uop.ops import UPat, PatternMatcher
from tinygrad.runtime.support.hcq_select import packets
from tinygrad.runtime.support import nv_methods as nv

# a launch's kernargs block: the QMD at its start, constant buffer 0 after it, the kernel's parameters at CBUF0_PARAMS in it
QMD_BYTES, CBUF0_SIZE, CBUF0_PARAMS = 0x100, 0x1000, 0x160
WFI = 0x78  # host class NVC56F_WFI, SCOPE_ALL (bit 0)

def _cmd(name:str, n:int) -> UPat: return UPat(Ops.INS, arg=name, src=tuple(UPat.var(f"s{i}") for i in range(n)))

def launch_qmd(program, kernargs, global_size, local_size) -> list:
  cbuf = kernargs + QMD_BYTES
  return nv.qmd(qmd_major_version=3, cta_raster_width=global_size[0], cta_raster_height=global_size[1], cta_raster_depth=global_size[2],
                cta_thread_dimension0=local_size[0], cta_thread_dimension1=local_size[1], cta_thread_dimension2=local_size[2],
                constant_buffer_valid0=1, constant_buffer_addr_lower0=cbuf & 0xffffffff, constant_buffer_addr_upper0=cbuf >> 32,
                constant_buffer_size_shifted4_0=CBUF0_SIZE >> 4,
                program_address_lower=program & 0xffffffff, program_address_upper=program >> 32)

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
  (_cmd("exec", 8), lambda s0, s1, s2, s3, s4, s5, s6, s7: packets("NV", ("LAUNCH", nv.launch(s1, launch_qmd(s0, s1, (s2, s3, s4), (s5, s6, s7)))))),
  (_cmd("copy", 3), _copy),
])
