"""tg-hcq-amd plugin: the AMD device, available when the amdgpu kernel driver exposes a GPU through KFD, or on the mock driver
(MOCKGPU=1, then only when asked for: DEV=AMD or device="AMD")."""
import os
from tinygrad.plugins import hookimpl, DeviceSpec, RendererSpec
from tinygrad.runtime.host_toolchain import probe_llvmlite

KFD, NODES = "/dev/kfd", "/sys/devices/virtual/kfd/kfd/topology/nodes"

def _mock() -> bool: return os.environ.get("MOCKGPU", "0") not in ("", "0")

def _is_gpu_node(node:str) -> bool:
  # CPU nodes of the KFD topology report gpu_id 0
  try:
    with open(os.path.join(NODES, node, "gpu_id")) as f: return int(f.read().strip() or 0) != 0
  except (OSError, ValueError): return False

def probe() -> tuple[bool, str]:
  if not os.path.exists(KFD): return False, f"{KFD} not found: the amdgpu kernel driver (KFD) is not loaded"
  try: os.close(os.open(KFD, os.O_RDWR))
  except OSError as e: return False, f"{KFD} cannot be opened ({e.strerror}): add your user to the 'render' and 'video' groups"
  try: nodes = os.listdir(NODES)
  except OSError as e: return False, f"{NODES} cannot be read ({e.strerror}): KFD topology missing"
  return (True, "") if any(_is_gpu_node(n) for n in nodes) else (False, f"no GPU node in {NODES}: KFD sees no AMD GPU")

def device_probe() -> tuple[bool, str]: return (True, "") if _mock() else probe()

def emulated_probe() -> tuple[bool, str]:
  return (True, "") if _mock() else (False, "kernels as emulator UOps run only on the mock driver (MOCKGPU=1); hardware needs the AMDGPU "
                                            "renderer, which is not installed")

@hookimpl
def tg_plugin_api_version(): return (1, 1)

@hookimpl
def tg_devices(): return [DeviceSpec("AMD", "tinygrad.runtime.ops_amd", "AMDDevice", device_probe, priority=-1 if _mock() else 200)]

@hookimpl
def tg_renderers():
  # EMU (kernels as emulator UOps) is the mock's default; LLVM (llvmlite's AMDGPU target, the UOps carried beside) is the hardware's
  return [RendererSpec("AMD", "EMU", "tinygrad.runtime.ops_amd", "AMDEmulatedRenderer", True,
                       "tinygrad.runtime.support.code_object:EmulatedCodeCompiler", emulated_probe),
          RendererSpec("AMD", "LLVM", "tinygrad.runtime.ops_amd", "AMDHCQRenderer", True, "tinygrad.runtime.ops_amd:AMDHCQCompiler", probe_llvmlite)]
