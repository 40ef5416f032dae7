"""Hook implementations: imported at discovery, so only names and a cheap probe here."""
import importlib.util
from tinygrad.plugins import hookimpl, DeviceSpec, RendererSpec
from tinygrad.runtime.host_toolchain import probe_cc

def probe() -> tuple[bool, str]:
  if importlib.util.find_spec("tinygrad.runtime.ops_cpu") is None: return False, "needs the CPU runtime from tg-renderers (tinygrad.runtime.ops_cpu)"
  return True, ""

@hookimpl
def tg_plugin_api_version(): return (1, 1)

@hookimpl
def tg_devices(): return [DeviceSpec("EXAMPLE", "tg_backend_example.device", "ExampleDevice", probe, priority=1)]

@hookimpl
def tg_renderers():
  # tg-renderers' C renderer and host C compiler, on a device of our own (DEV=EXAMPLE or DEV=EXAMPLE:C)
  return [RendererSpec("EXAMPLE", "C", "tinygrad.renderer.cstyle", "ClangRenderer", True, "tinygrad.runtime.ops_cpu:ClangCompiler", probe_cc)]
