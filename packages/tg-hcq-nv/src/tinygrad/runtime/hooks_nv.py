"""tg-hcq-nv plugin: the NV device, available when the NVIDIA kernel driver is loaded and exposes a GPU."""
import os
from tinygrad.plugins import hookimpl, DeviceSpec

CTL, GPU0, VERSION = "/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version"

def probe() -> tuple[bool, str]:
  if not os.path.exists(VERSION): return False, f"{VERSION} not found: the NVIDIA kernel driver is not loaded"
  for dev in (CTL, GPU0):
    if not os.path.exists(dev): return False, f"{dev} not found: the NVIDIA driver exposes no GPU device node"
    try: os.close(os.open(dev, os.O_RDWR))
    except OSError as e: return False, f"{dev} cannot be opened ({e.strerror}): check its permissions (usually the 'video' group)"
  return True, ""

def unavailable_until_implemented() -> tuple[bool, str]:
  # this version has discovery and the driver probe but no runtime: never offer NV as a device that would only raise
  ok, reason = probe()
  return False, "not implemented yet: tg-hcq-nv has no NV runtime in this version (use DEV=CPU); " + ("the driver and a GPU were found" if ok else reason)

@hookimpl
def tg_plugin_api_version(): return (1, 0)

@hookimpl
def tg_devices(): return [DeviceSpec("NV", "tinygrad.runtime.ops_nv", "NVDevice", unavailable_until_implemented, priority=200)]
