"""What plugins hand to core: plain data naming devices and renderers, plus the plugin API version. Stdlib only."""
from dataclasses import dataclass
from typing import Callable

# (major, minor) of the hook API in tinygrad.plugins.hookspecs; a plugin states the version it was written for
PLUGIN_API_VERSION = (1, 0)

# well-known device names -> the distribution providing them, so `DEV=AMD` without tg-hcq-amd can say what to install
KNOWN_DEVICES = {"AMD": "tg-hcq-amd", "NV": "tg-hcq-nv", "CPU": "tg-renderers", "PYTHON": "tg-renderers", "NULL": "tg-renderers",
                 "CL": "tg-renderers", "CUDA": "tg-renderers"}

@dataclass(frozen=True)
class DeviceSpec:
  """A device a plugin provides. `module`/`cls` are imported on first use and constructed as `cls(device_name)`
  (device_name is canonical, e.g. "CPU" or "CPU:1"). `probe()` -> (available, reason) must be cheap: no heavy imports.
  The available device with the highest `priority` is the default; a negative priority is never chosen unless asked."""
  name: str
  module: str
  cls: str
  probe: Callable[[], tuple[bool, str]] | None = None
  priority: int = 0
  distribution: str | None = None  # filled in from the entry point's distribution when left None

@dataclass(frozen=True)
class RendererSpec:
  """A renderer usable by `device`, chosen with DEV=<device>:<name>; `default` marks the one used otherwise."""
  device: str
  name: str
  module: str
  cls: str
  default: bool = False

class PluginError(RuntimeError):
  """A plugin failed to load or was refused (e.g. written for another plugin API version)."""

class DeviceError(RuntimeError):
  """A device was asked for that is unknown, unavailable, or provided by a plugin that failed."""
