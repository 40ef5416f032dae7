"""What an NV code object records about its kernel's cubin (its `meta`), for the QMD and for the mock's checks: short keys, as the
code object's header is 256 bytes. regs: registers per thread; smem: shared memory per CTA; stack: local memory per thread; bars:
barriers; cb0: where the parameters start in constant buffer 0; sm: the SM the code is for; crc: CRC-32 of the machine code."""
from __future__ import annotations
import zlib
from tinygrad.device import CompileError
from tinygrad.runtime.cubin import CubinKernel

def kernarg_layout(ptx_params:list[tuple[str, str]]) -> tuple[tuple[int, int, int], ...]:
  """(ordinal, offset, size) of each parameter as HCQProgram.fill_kernargs writes them: buffers' 64-bit addresses, then 32-bit ints,
  each at the next multiple of its size"""
  out, at = [], 0
  for i, (ty, _) in enumerate(ptx_params):
    size = 8 if ty.endswith("64") else 4
    at = (at + size - 1) // size * size
    out.append((i, at, size))
    at += size
  return tuple(out)

def program_meta(k:CubinKernel, ptx_params:list[tuple[str, str]]) -> dict[str, int]:
  if k.params != (want := kernarg_layout(ptx_params)):
    raise CompileError(f"kernel {k.name}: the cubin places its parameters at {k.params} (ordinal, offset, size), the launch writes them at {want}")
  return {"regs": k.registers, "smem": k.shared, "stack": max(k.frame, k.max_stack), "bars": k.barriers, "cb0": k.param_offset,
          "sm": k.sm, "crc": zlib.crc32(k.text)}
