"""tg-hcq-nv plugin: the NV device over NVIDIA's kernel driver, available when the driver exposes a GPU, or over the mock kernel driver
(MOCKGPU=1). Offered only when asked for (DEV=NV or device="NV"): it is new and untried on hardware, so NV is never the default device.
Its renderers: EMU (kernels as emulator UOps, the mock's default) and PTX (PTX -> cubin by ptxas, the hardware's; on the mock it runs
the UOps carried beside the machine code and checks the launch against the cubin)."""
import os
from tinygrad.plugins import hookimpl, DeviceSpec, RendererSpec
from tinygrad.runtime.cuda_toolchain import probe_ptxas

CTL, GPU0, VERSION = "/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version"

def _mock() -> bool: return os.environ.get("MOCKGPU", "0") not in ("", "0")

def probe() -> tuple[bool, str]:
  if not os.path.exists(VERSION): return False, f"{VERSION} not found: the NVIDIA kernel driver is not loaded"
  for dev in (CTL, GPU0):
    if not os.path.exists(dev): return False, f"{dev} not found: the NVIDIA driver exposes no GPU device node"
    try: os.close(os.open(dev, os.O_RDWR))
    except OSError as e: return False, f"{dev} cannot be opened ({e.strerror}): check its permissions (usually the 'video' group)"
  return True, ""

def device_probe() -> tuple[bool, str]: return (True, "") if _mock() else probe()

def emulated_probe() -> tuple[bool, str]: return (True, "") if _mock() else (False, "kernels as emulator UOps run only on the mock driver (MOCKGPU=1)")

def ptx_probe() -> tuple[bool, str]:
  ok, reason = probe_ptxas()
  return (True, "") if ok else (False, f"NV kernels unavailable (memory, copies and signals still work): {reason.removeprefix('unavailable: ')}")

@hookimpl
def tg_plugin_api_version(): return (1, 1)

@hookimpl
def tg_devices(): return [DeviceSpec("NV", "tinygrad.runtime.ops_nv", "NVDevice", device_probe, priority=-1)]

@hookimpl
def tg_renderers():
  return [RendererSpec("NV", "EMU", "tinygrad.runtime.ops_nv", "NVEmulatedRenderer", True,
                       "tinygrad.runtime.support.code_object:EmulatedCodeCompiler", emulated_probe),
          RendererSpec("NV", "PTX", "tinygrad.runtime.ops_nv", "NVPTXRenderer", True, "tinygrad.runtime.ops_nv:NVPTXCompiler", ptx_probe)]
