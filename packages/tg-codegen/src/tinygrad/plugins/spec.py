"""What plugins hand to core: plain data naming devices and renderers, plus the plugin API version. Stdlib only."""
from dataclasses import dataclass
from typing import Callable

# (major, minor) of the hook API in tinygrad.plugins.hookspecs; a plugin states the version it was written for.
# 1.1: RendererSpec.compiler/probe, DeviceSpec.emulator; 1.2: DeviceSpec.path
PLUGIN_API_VERSION = (1, 2)

# well-known device names -> the distribution providing them, so `DEV=AMD` without tg-hcq-amd can say what to install
KNOWN_DEVICES = {"AMD": "tg-hcq-amd", "NV": "tg-hcq-nv", "CPU": "tg-renderers", "PYTHON": "tg-renderers", "NULL": "tg-renderers",
                 "CL": "tg-renderers", "QCOM": "tg-renderers", "CUDA": "tg-renderers", "DISK": "tg-renderers"}
# tg's own distributions: a device name offered by one of them and by a third party at the same priority stays tg's
FIRST_PARTY = frozenset({"tg-uop", "tg-codegen", "tg-renderers", "tg-hcq-amd", "tg-hcq-nv", "tg-tensor", "tg-onnx"})

Probe = Callable[[], tuple[bool, str]]

@dataclass(frozen=True)
class DeviceSpec:
  """A device a plugin provides. `module`/`cls` are imported on first use and constructed as `cls(device_name)`
  (device_name is canonical, e.g. "CPU", "CPU:1" or "CPU:C"). `probe()` -> (available, reason) must be cheap: no heavy imports.
  The default device is the available one with the highest `priority` that opens; a negative priority is never chosen unless
  asked. An `emulator` (slow, exact) warns when it becomes the default, naming why each faster device was passed over. A `path` device
  takes everything after its name as a file path (DISK:/tmp/weights.bin): no index, no renderer."""
  name: str
  module: str
  cls: str
  probe: Probe | None = None
  priority: int = 0
  distribution: str | None = None  # filled in from the entry point's distribution when left None
  emulator: bool = False
  path: bool = False

@dataclass(frozen=True)
class RendererSpec:
  """A renderer usable by `device`, chosen with DEV=<device>:<name>[:<arch>] (or device="<device>:<name>"); `default` marks the
  one used otherwise (the first available default, else the first available). `module`/`cls` are imported when a device is opened
  with it and constructed as `cls(arch)`; `compiler` ("module:Class", constructed as `Class(arch)`) turns its source into what the
  device runs, None for a device that brings its own. `probe()` -> (available, reason) is cheap, like a device's."""
  device: str
  name: str
  module: str
  cls: str
  default: bool = False
  compiler: str | None = None
  probe: Probe | None = None

class PluginError(RuntimeError):
  """A plugin failed to load or was refused (e.g. written for another plugin API version)."""

class DeviceError(RuntimeError):
  """A device was asked for that is unknown, unavailable, or provided by a plugin that failed."""
