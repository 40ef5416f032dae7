"""tg-hcq-nv plugin: the NV device on the mock driver (MOCKGPU=1, offered only when asked for: DEV=NV or device="NV"). The interface
to NVIDIA's kernel driver is not implemented in this version: with the driver loaded, the probe says so."""
import os
from tinygrad.plugins import hookimpl, DeviceSpec, RendererSpec

CTL, GPU0, VERSION = "/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version"

def _mock() -> bool: return os.environ.get("MOCKGPU", "0") not in ("", "0")

def probe() -> tuple[bool, str]:
  if not os.path.exists(VERSION): return False, f"{VERSION} not found: the NVIDIA kernel driver is not loaded"
  for dev in (CTL, GPU0):
    if not os.path.exists(dev): return False, f"{dev} not found: the NVIDIA driver exposes no GPU device node"
    try: os.close(os.open(dev, os.O_RDWR))
    except OSError as e: return False, f"{dev} cannot be opened ({e.strerror}): check its permissions (usually the 'video' group)"
  return True, ""

def device_probe() -> tuple[bool, str]:
  if _mock(): return True, ""
  ok, reason = probe()
  return False, "not implemented yet: tg-hcq-nv drives NVIDIA's kernel driver only through its mock (MOCKGPU=1); " + \
    ("the driver and a GPU were found" if ok else reason)

def emulated_probe() -> tuple[bool, str]: return (True, "") if _mock() else (False, "kernels as emulator UOps run only on the mock driver (MOCKGPU=1)")

@hookimpl
def tg_plugin_api_version(): return (1, 1)

@hookimpl
def tg_devices(): return [DeviceSpec("NV", "tinygrad.runtime.ops_nv", "NVDevice", device_probe, priority=-1 if _mock() else 200)]

@hookimpl
def tg_renderers():
  return [RendererSpec("NV", "EMU", "tinygrad.runtime.ops_nv", "NVEmulatedRenderer", True,
                       "tinygrad.runtime.support.code_object:EmulatedCodeCompiler", emulated_probe)]
