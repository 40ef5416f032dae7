"""The hooks a tinygrad plugin implements. A plugin is a module (or object) registered under the entry-point group
"tinygrad"; it must import nothing heavy: it only names things and says where core imports them from on first use."""
import pluggy
from tinygrad.plugins.spec import DeviceSpec, RendererSpec

hookspec = pluggy.HookspecMarker("tinygrad")
hookimpl = pluggy.HookimplMarker("tinygrad")

@hookspec
def tg_plugin_api_version() -> tuple[int, int]:
  """Required. The (major, minor) plugin API version this plugin was written for, as a literal (not core's constant).
  Core refuses a different major or a newer minor than tinygrad.plugins.PLUGIN_API_VERSION."""

@hookspec
def tg_devices() -> list[DeviceSpec]:
  """The devices this plugin provides, e.g. [DeviceSpec("CPU", "tinygrad.runtime.ops_cpu", "CPUDevice", probe, 100)]."""

@hookspec
def tg_renderers() -> list[RendererSpec]:
  """Renderers and the device using them, e.g. RendererSpec("CPU", "LLVM", ..., default=True) selected by DEV=CPU:LLVM."""

@hookspec
def tg_onnx_ops() -> dict:
  """Extra ONNX operators: {"domain.OpName" (e.g. "com.example.Twice") or "OpName" (the standard domain): fn}, where
  fn(*inputs, **attributes) returns a Tensor or a tuple of them (a missing optional input is None). tinygrad.onnx's op registry looks
  here first, so a plugin may also replace a built-in op; its functions serve every opset of their domain."""
