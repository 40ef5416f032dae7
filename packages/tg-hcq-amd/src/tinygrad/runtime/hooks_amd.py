"""tg-hcq-amd plugin: the AMD device, available when the amdgpu kernel driver exposes a GPU through KFD."""
import os
from tinygrad.plugins import hookimpl, DeviceSpec

KFD, NODES = "/dev/kfd", "/sys/devices/virtual/kfd/kfd/topology/nodes"

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

def unavailable_until_implemented() -> tuple[bool, str]:
  # this version has discovery and the driver probe but no runtime: never offer AMD as a device that would only raise
  ok, reason = probe()
  return False, "not implemented yet: tg-hcq-amd has no AMD runtime in this version (use DEV=CPU); " + ("the driver and a GPU were found" if ok else reason)

@hookimpl
def tg_plugin_api_version(): return (1, 0)

@hookimpl
def tg_devices(): return [DeviceSpec("AMD", "tinygrad.runtime.ops_amd", "AMDDevice", unavailable_until_implemented, priority=200)]
