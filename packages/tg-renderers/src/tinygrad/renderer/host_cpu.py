"""What the host CPU offers that changes what a CPU renderer emits."""
import functools, platform

def has_fma(machine:str, cpuinfo:str) -> bool:
  """whether a CPU has a fused multiply-add instruction, from its machine name and /proc/cpuinfo text: x86 says so in the flags
  (Haswell, Piledriver and later); 64-bit ARM always has one. Elsewhere, or unknown: no, so no kernel turns each multiply-add into a
  library call"""
  machine = machine.lower()
  if machine in ("aarch64", "arm64"): return True
  if machine not in ("x86_64", "amd64"): return False
  flags = next((line for line in cpuinfo.splitlines() if line.startswith("flags")), "")
  return "fma" in flags.partition(":")[2].split()

@functools.cache
def host_has_fma() -> bool:
  try:
    with open("/proc/cpuinfo") as f: cpuinfo = f.read()
  except OSError: cpuinfo = ""
  return has_fma(platform.machine(), cpuinfo)
