import importlib, os
from typing import Any
from tinygrad.plugins.spec import DeviceError, DeviceSpec, RendererSpec
from tinygrad.engine.device_base import Buffer, BufferSpec, Allocator, Compiler, Compiled, CompileError  # noqa: F401  (re-exported)

# *** Device registry: device names -> instances of classes that plugins name, imported and opened on first use ***

class _Device:
  def __init__(self): self._reg, self._opened, self._default, self._requested = None, {}, None, {}
  def _registry(self):
    from tinygrad.plugins.discovery import registry
    # a plugins.reset() (tests) replaces the registry: forget everything chosen or opened under the old one
    if (r := registry()) is not self._reg: self._reg, self._opened, self._default, self._requested = r, {}, None, {}
    return r

  def canonicalize(self, name:str|None) -> str:
    """"cpu" -> "CPU", "cpu:1" -> "CPU:1", "CPU:0" -> "CPU", None -> DEFAULT: the name devices are cached and constructed under."""
    if name is None: return self.DEFAULT
    base, sep, idx = name.partition(":")
    return base.upper() + ("" if idx in ("", "0") else sep + idx)

  def parse(self, spec:str) -> tuple[str, str|None, str|None]:
    """DEV syntax NAME[:INDEX][:RENDERER[:ARCH]] -> (canonical device, renderer or None, arch or None)."""
    parts = spec.split(":")
    dev, rest = (parts[0] + ":" + parts[1], parts[2:]) if len(parts) > 1 and parts[1].isdigit() else (parts[0], parts[1:])
    return self.canonicalize(dev), rest[0].upper() if rest else None, rest[1] if len(rest) > 1 else None

  def __getitem__(self, name:str) -> Any:
    full = self.canonicalize(name)
    reg = self._registry()
    if (dev := self._opened.get(full)) is not None: return dev
    base = full.split(":")[0]
    spec = reg.device(base)
    ok, reason = reg.probe(base)
    if not ok: raise DeviceError(f"device {base} (from {spec.distribution or 'a plugin'}) is installed but not available: {reason}")
    try: cls = getattr(importlib.import_module(spec.module), spec.cls)
    except (ImportError, AttributeError) as e:
      raise DeviceError(f"device {base}: cannot load {spec.module}.{spec.cls} named by {spec.distribution or 'its plugin'}: {e}") from e
    self._opened[full] = dev = cls(full)
    return dev

  @property
  def DEFAULT(self) -> str:
    reg = self._registry()
    if self._default is None: self._default = self._from_dev_env(reg, os.environ["DEV"]) if os.environ.get("DEV") else self._best(reg)
    return self._default
  @DEFAULT.setter
  def DEFAULT(self, spec:str):
    self._default = self._from_dev_env(self._registry(), spec, "Device.DEFAULT")

  def _from_dev_env(self, reg, spec:str, where:str="DEV") -> str:
    dev, ren, arch = self.parse(spec)
    base = dev.split(":")[0]
    reg.device(base)  # unknown: lists installed devices and the distribution to install
    ok, reason = reg.probe(base)
    if not ok: raise DeviceError(f"{where}={spec}: device {base} is not available: {reason}")
    if ren is not None: reg.renderer(base, ren)  # unknown renderer: lists the device's renderers
    self._requested[base] = (ren, arch)
    return dev

  def _best(self, reg) -> str:
    for spec in sorted(reg.devices.values(), key=lambda s: (-s.priority, s.name)):
      if spec.priority >= 0 and reg.probe(spec.name)[0]: return spec.name
    raise DeviceError(f"no device is available; installed: {', '.join(sorted(reg.devices)) or 'none'} "
                      f"(run `python -m tinygrad` to see why; `pip install tg-renderers` provides CPU)")

  def requested_renderer(self, name:str) -> tuple[str|None, str|None]:
    """(renderer, arch) asked for by DEV=NAME:RENDERER:ARCH (or Device.DEFAULT = ...), else (None, None)."""
    if os.environ.get("DEV") and self._default is None: self.DEFAULT
    return self._requested.get(self.canonicalize(name).split(":")[0], (None, None))

  def renderer(self, name:str) -> RendererSpec|None:
    """The RendererSpec a device should use: the requested one, else the device's default."""
    base = self.canonicalize(name).split(":")[0]
    return self._registry().renderer(base, self.requested_renderer(base)[0])

  def installed(self) -> list[DeviceSpec]:
    return sorted(self._registry().devices.values(), key=lambda s: (-s.priority, s.name))

  def get_available_devices(self) -> list[str]:
    reg = self._registry()
    return [s.name for s in self.installed() if reg.probe(s.name)[0]]

Device = _Device()
