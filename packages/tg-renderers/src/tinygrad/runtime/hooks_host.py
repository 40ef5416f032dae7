"""tg-renderers plugin: the host devices and their renderers. Names and cheap probes only; nothing here imports llvmlite."""
from tinygrad.plugins import hookimpl, DeviceSpec, RendererSpec
from tinygrad.runtime.host_toolchain import probe_cc, probe_llvmlite

@hookimpl
def tg_plugin_api_version(): return (1, 2)

@hookimpl
def tg_devices():
  # CPU is available when either of its renderers is: llvmlite (LLVM) or a C compiler (C)
  return [DeviceSpec("CPU", "tinygrad.runtime.ops_cpu", "CPUDevice", None, priority=100),
          DeviceSpec("PYTHON", "tinygrad.runtime.ops_python", "PythonDevice", None, priority=10, emulator=True),
          DeviceSpec("NULL", "tinygrad.runtime.ops_null", "NullDevice", None, priority=-1),  # negative: only when asked for
          DeviceSpec("DISK", "tinygrad.runtime.ops_disk", "DiskDevice", None, priority=-1, path=True)]

@hookimpl
def tg_renderers():
  return [RendererSpec("CPU", "LLVM", "tinygrad.renderer.llvmir", "LLVMRenderer", True, "tinygrad.runtime.ops_cpu:LLVMCompiler", probe_llvmlite),
          RendererSpec("CPU", "C", "tinygrad.renderer.cstyle", "ClangRenderer", False, "tinygrad.runtime.ops_cpu:ClangCompiler", probe_cc),
          RendererSpec("PYTHON", "PYTHON", "tinygrad.renderer.python", "PythonRenderer", True),
          RendererSpec("NULL", "C", "tinygrad.renderer.cstyle", "ClangRenderer", True)]
