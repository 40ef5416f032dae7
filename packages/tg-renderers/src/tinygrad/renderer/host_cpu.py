"""What the host CPU offers that changes what a CPU renderer emits."""
import functools, platform

def _x86_flags(cpuinfo:str) -> set[str]:
  return set(next((line for line in cpuinfo.splitlines() if line.startswith("flags")), "").partition(":")[2].split())

def has_fma(machine:str, cpuinfo:str) -> bool:
  """whether a CPU has a fused multiply-add instruction, from its machine name and /proc/cpuinfo text: x86 says so in the flags
  (Haswell, Piledriver and later); 64-bit ARM always has one. Elsewhere, or unknown: no, so no kernel turns each multiply-add into a
  library call"""
  machine = machine.lower()
  if machine in ("aarch64", "arm64"): return True
  if machine not in ("x86_64", "amd64"): return False
  return "fma" in _x86_flags(cpuinfo)

def has_f16c(machine:str, cpuinfo:str) -> bool:
  """whether a CPU converts float16 <-> float32 in hardware, whole vectors at a time: x86 with F16C (Ivy Bridge, Piledriver and
  later; vcvtph2ps/vcvtps2ph), 64-bit ARM always (fcvt). Elsewhere LLVM would call a runtime library function per value"""
  machine = machine.lower()
  if machine in ("aarch64", "arm64"): return True
  return machine in ("x86_64", "amd64") and "f16c" in _x86_flags(cpuinfo)

def simd_registers(machine:str, cpuinfo:str) -> tuple[int, int]|None:
  """(bytes in one SIMD register, how many there are) of a CPU, from its machine name and /proc/cpuinfo text: AVX-512 has 32 registers
  of 64 bytes, AVX/AVX2 16 of 32, SSE 16 of 16, 64-bit ARM's NEON 32 of 16 (LLVM does not use SVE's wider registers unless told their size). None
  when unknown"""
  machine = machine.lower()
  if machine in ("aarch64", "arm64"): return (16, 32)
  if machine not in ("x86_64", "amd64"): return None
  flags = _x86_flags(cpuinfo)
  if not flags: return None
  return (64, 32) if "avx512f" in flags else (32, 16) if "avx" in flags else (16, 16)

def streams_loads(machine:str, cpuinfo:str) -> bool:
  """whether non-temporal loads (vmovntdqa) pay on a CPU for an input streamed past the cache: not on AMD's Zen 1-3 (family 17h, and 19h
  without AVX-512), where a 64 MB sum on 2 threads ran 25-35% slower (median) with them than with ordinary loads and the python after it
  was no faster (bench/RESULTS.md, stop 51); on Zen 4/5 they kept the interpreter's cache under load, elsewhere they are ordinary loads"""
  if machine.lower() not in ("x86_64", "amd64"): return True
  fields = dict(line.partition(":")[::2] for line in cpuinfo.splitlines()[:40] if ":" in line)
  fields = {k.strip(): v.strip() for k, v in fields.items()}
  if fields.get("vendor_id") != "AuthenticAMD": return True
  family = fields.get("cpu family", "")
  return not (family == "23" or (family == "25" and "avx512f" not in _x86_flags(cpuinfo)))

def _cpuinfo() -> str:
  try:
    with open("/proc/cpuinfo") as f: return f.read()
  except OSError: return ""

@functools.cache
def host_has_fma() -> bool: return has_fma(platform.machine(), _cpuinfo())

@functools.cache
def host_has_f16c() -> bool: return has_f16c(platform.machine(), _cpuinfo())

@functools.cache
def host_streams_loads() -> bool: return streams_loads(platform.machine(), _cpuinfo())

@functools.cache
def host_simd_registers() -> tuple[int, int]|None: return simd_registers(platform.machine(), _cpuinfo())

# the CPU runtime runs an LLVM kernel only on buffers whose address is a multiple of this (its allocator starts each buffer a multiple of
# it into a page, runtime/ops_cpu.py COLOUR_STEP; a view at another offset or a foreign pointer runs on an aligned copy), so the renderer
# may claim it for the base of every buffer
BUFFER_ALIGN = 64
DEFAULT_LLC_BYTES = 8 << 20

def parse_cache_size(text:str) -> int|None:
  """bytes from a sysfs cache size such as '32768K' or '8M'; None if it is not one"""
  text = text.strip().upper()
  scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
  digits = text[:-1] if text[-1:] in "KMG" else text
  return int(digits) * scale if digits.isdigit() else None

@functools.cache
def host_llc_bytes(root:str="/sys/devices/system/cpu/cpu0/cache") -> int:
  """the size of the host's last-level data cache (the highest level that holds data), from sysfs; DEFAULT_LLC_BYTES where the OS does not
  say (another OS, a container without sysfs)"""
  import pathlib
  best: tuple[int, int]|None = None  # (level, bytes)
  try:
    for d in pathlib.Path(root).glob("index*"):
      if (d / "type").read_text().strip() not in ("Data", "Unified"): continue
      level, size = int((d / "level").read_text()), parse_cache_size((d / "size").read_text())
      if size and (best is None or level > best[0]): best = (level, size)
  except (OSError, ValueError): best = None
  return best[1] if best else DEFAULT_LLC_BYTES

# the cache a kernel's output may stay in for the next kernel, per CPU this process may run on: a shared L3 also holds other cores' data,
# and a VM reports its host's whole L3 (480 MB for 2 vCPUs here). A chain of elementwise kernels at 2 CPUs ran level with streaming
# stores at 24 MB per output, 5-9% faster with them at 32 MB, and (a*b+c).relu()*0.5 on 16M floats (64 MB out) 32 -> 42 GB/s
STREAM_BYTES_PER_CPU = 16 << 20

def stream_bytes(llc:int, cpus:int) -> int:
  """outputs bigger than this are stored past the cache (non-temporal stores): the last-level cache, at most STREAM_BYTES_PER_CPU per CPU"""
  return min(llc, STREAM_BYTES_PER_CPU * max(1, cpus))

@functools.cache
def host_stream_bytes() -> int:
  import os
  cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
  return stream_bytes(host_llc_bytes(), cpus)
