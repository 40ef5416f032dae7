"""tg-renderers plugin: the host devices and their renderers. Names and cheap probes only; nothing here imports llvmlite."""
import importlib.util
from tinygrad.plugins import hookimpl, DeviceSpec, RendererSpec

def _llvmlite() -> tuple[bool, str]:
  # find_spec locates the package without importing it
  return (True, "") if importlib.util.find_spec("llvmlite") is not None else (False, "llvmlite is not installed: pip install llvmlite")

@hookimpl
def tg_plugin_api_version(): return (1, 0)

@hookimpl
def tg_devices():
  return [DeviceSpec("CPU", "tinygrad.runtime.ops_cpu", "CPUDevice", _llvmlite, priority=100),
          DeviceSpec("PYTHON", "tinygrad.runtime.ops_python", "PythonDevice", None, priority=10),
          DeviceSpec("NULL", "tinygrad.runtime.ops_null", "NullDevice", None, priority=-1)]  # negative: only when asked for

@hookimpl
def tg_renderers():
  return [RendererSpec("CPU", "LLVM", "tinygrad.renderer.llvmir", "LLVMRenderer", default=True),
          RendererSpec("CPU", "C", "tinygrad.renderer.cstyle", "ClangRenderer")]
