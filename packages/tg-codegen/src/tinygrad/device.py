import importlib, os, warnings
from dataclasses import dataclass
from typing import Any
from tinygrad.dtype import DType, dtypes
from tinygrad.mixin.elementwise import _type_name
from tinygrad.plugins import discovery
from tinygrad.plugins.spec import DeviceError, DeviceSpec, RendererSpec
from tinygrad.engine.device_base import Buffer, BufferSpec, Allocator, LRUAllocator, Compiler, Compiled, CompileError  # noqa: F401  (re-exported)

# *** Device registry: device names -> instances of classes that plugins name, imported and opened on first use ***

@dataclass(frozen=True)
class DeviceName:
  """A parsed device string NAME[:INDEX][:RENDERER[:ARCH]], or NAME:PATH for a device of files (DISK:/tmp/x.bin); str() is the canonical
  form ("cpu:0:c" -> "CPU:C", "disk:w.bin" -> "DISK:w.bin")."""
  base: str
  index: int = 0
  renderer: str|None = None
  arch: str|None = None
  path: str|None = None
  def __str__(self):
    if self.path is not None: return f"{self.base}:{self.path}"
    return ":".join([self.base] + [str(self.index)]*(self.index != 0) + [x for x in (self.renderer, self.arch) if x])

def _load(module:str, name:str, what:str) -> Any:
  try: return getattr(importlib.import_module(module), name)
  except (ImportError, AttributeError) as e: raise DeviceError(f"{what}: cannot load {module}.{name}: {e}") from e

class _Device:
  def __init__(self): self._reg, self._opened, self._default, self._requested, self._parsed = None, {}, None, {}, {}
  def _registry(self):
    # a plugins.reset() (tests) replaces the registry: forget everything chosen or opened under the old one
    if (r := discovery.registry()) is not self._reg: self._reg, self._opened, self._default, self._requested, self._parsed = r, {}, None, {}, {}
    return r

  def parse(self, spec:str) -> DeviceName:
    """The one parser of device strings, for DEV=, device= and Device[...]: NAME[:INDEX][:RENDERER[:ARCH]], checked against the
    installed devices and their renderers (no availability probe)."""
    if not isinstance(spec, str):  # torch's habit x.to(dtypes.int) lands here: a dtype is changed with cast
      hint = f": to change the dtype use .cast({spec})" if isinstance(spec, DType) else ""
      raise TypeError(f"device must be a string such as 'CPU' or 'CPU:1', got {_type_name(spec)} {spec!r}{hint}")
    reg = self._registry()
    if (ret := self._parsed.get(spec)) is not None: return ret
    parts = spec.split(":")
    if (base := parts[0].upper()) in reg.devices and reg.devices[base].path:
      if len(parts) < 2 or not (path := spec.split(":", 1)[1]): raise DeviceError(f"{spec!r}: device {base} needs a file path, e.g. {base}:/tmp/data.bin")
      self._parsed[spec] = ret = DeviceName(base, path=path)
      return ret
    index = int(parts.pop(1)) if len(parts) > 1 and parts[1].isdigit() else 0
    if not parts[0] or len(parts) > 3 or "" in parts:
      raise DeviceError(f"{spec!r} is not a device string: write NAME[:INDEX][:RENDERER[:ARCH]], e.g. CPU, CPU:1, CPU:C or NV:PTX:sm_89")
    try: reg.device(base := parts[0].upper())  # unknown: lists installed devices and the distribution to install
    except DeviceError as e:
      if isinstance(getattr(dtypes, name := parts[0].lower(), None), DType):
        raise DeviceError(f"{e}. {name!r} is a dtype: to change the dtype use .cast(dtypes.{name})") from e.__cause__
      raise
    if (ren := parts[1].upper() if len(parts) > 1 else None) is not None:
      try: reg.renderer(base, ren)
      except DeviceError as e: raise DeviceError(f"{spec!r}: {e}") from None
    self._parsed[spec] = ret = DeviceName(base, index, ren, parts[2] if len(parts) > 2 else None)
    return ret

  def canonicalize(self, name:str|tuple|list|None) -> str|tuple[str, ...]:
    """"cpu" -> "CPU", "cpu:1" -> "CPU:1", "CPU:0:c" -> "CPU:C", None -> DEFAULT: the name devices are cached and constructed under.
    A tuple of names (several devices, for a multi-device tensor) canonicalizes each; a tuple of one is that device."""
    if isinstance(name, (tuple, list)):
      devs = tuple(str(self.parse(n)) for n in name)
      if not devs or len(set(devs)) != len(devs): raise DeviceError(f"a device tuple needs distinct devices, got {tuple(name)} (as {devs})")
      return devs[0] if len(devs) == 1 else devs
    return self.DEFAULT if name is None else str(self.parse(name))

  def __getitem__(self, name:str) -> Any:
    # a canonical name of an opened device (every launch asks for one) skips the parse, while the registry it was opened under is current
    if (dev := self._opened.get(name)) is not None and discovery._registry is self._reg: return dev
    n = self.parse(name)
    if (dev := self._opened.get(full := str(n))) is not None: return dev
    reg = self._registry()
    spec = reg.device(n.base)
    ok, reason = reg.probe(n.base)
    if not ok: raise DeviceError(f"device {n.base} (from {spec.distribution or 'a plugin'}) is installed but not available: {reason}")
    cls = _load(spec.module, spec.cls, f"device {n.base} named by {spec.distribution or 'its plugin'}")
    self._opened[full] = dev = cls(full)
    return dev

  def runs_kernels(self, device:str|tuple) -> bool:
    """False for a device that only holds bytes (DISK: it has no renderer): what lives there is a buffer or a view of one, never a
    kernel's output, and values for it are computed on the default device. Several devices (a sharded tensor) run kernels"""
    return not isinstance(device, str) or self[device].renderer is not None

  def renderer_for(self, name:str) -> tuple[Any, Compiler|None]:
    """The (renderer, compiler) a device opened under `name` uses, built from the RendererSpecs plugins registered: the renderer
    in the name, else the one DEV= asked for, else the device's default. ARCH goes to both constructors. Called by device classes."""
    n, reg = self.parse(name), self._registry()
    ren, arch = (n.renderer, n.arch) if n.renderer else self.requested_renderer(n.base)
    if (spec := reg.renderer(n.base, ren)) is None:
      raise DeviceError(f"device {n.base} has no usable renderer: {reg.probe(n.base)[1] or 'no plugin registered one'}")
    if not (ok := reg.probe(n.base, spec.name))[0]:
      usable = [f"DEV={n.base}:{r.name}" for r in reg.renderers[n.base] if reg.probe(n.base, r.name)[0]]
      raise DeviceError(f"renderer {spec.name} of device {n.base} is not available: {ok[1]}; " +
                        (f"use another: {', '.join(usable)}" if usable else "the device has no other usable renderer"))
    renderer = _load(spec.module, spec.cls, f"renderer {n.base}:{spec.name}")(arch)
    if spec.compiler is None: return renderer, None
    mod, _, cls = spec.compiler.partition(":")
    return renderer, _load(mod, cls, f"compiler of renderer {n.base}:{spec.name}")(arch)

  @property
  def DEFAULT(self) -> str:
    reg = self._registry()
    if self._default is None: self._default = self._choose(os.environ["DEV"], "DEV") if os.environ.get("DEV") else self._best(reg)
    return self._default
  @DEFAULT.setter
  def DEFAULT(self, spec:str):
    self._registry()
    self._default = self._choose(spec, "Device.DEFAULT")

  def _choose(self, spec:str, where:str) -> str:
    # an asked-for device is opened at once, so a device that cannot work raises its own error here
    n = self.parse(spec)
    ok, reason = self._registry().probe(n.base)
    if not ok: raise DeviceError(f"{where}={spec}: device {n.base} is not available: {reason}")
    self._requested[n.base] = (n.renderer, n.arch)
    self[name := str(DeviceName(n.base, n.index))]
    return name

  def _best(self, reg) -> str:
    passed: list[str] = []  # why each device of a higher priority was not chosen
    for spec in sorted(reg.devices.values(), key=lambda s: (-s.priority, s.name)):
      if spec.priority < 0: continue
      if not (ok := reg.probe(spec.name))[0]:
        passed.append(f"{spec.name}: {ok[1]}")
        continue
      try: self[spec.name]
      except Exception as e:
        warnings.warn(f"device {spec.name} (from {spec.distribution or 'a plugin'}) is available but failed to open: {type(e).__name__}: {e}. "
                      f"Skipping it for the default device; choose one with DEV=<device> (installed: {', '.join(sorted(reg.devices))})",
                      RuntimeWarning, stacklevel=3)
        passed.append(f"{spec.name}: failed to open ({type(e).__name__}: {e})")
        continue
      if spec.emulator:
        warnings.warn(f"the default device is {spec.name}, an emulator (slow): " + "; ".join(passed) +
                      ". Fix the device above, or choose one with DEV=<device>", RuntimeWarning, stacklevel=3)
      return spec.name
    raise DeviceError(f"no device is available; installed: {', '.join(sorted(reg.devices)) or 'none'} "
                      f"(run `python -m tinygrad` to see why; `pip install tg-renderers` provides CPU)")

  def requested_renderer(self, name:str) -> tuple[str|None, str|None]:
    """(renderer, arch) asked for by DEV=NAME:RENDERER:ARCH (or Device.DEFAULT = ...), else (None, None)."""
    base = self.parse(name).base
    # DEV= is read here too, not through DEFAULT: opening the default device asks this while DEFAULT is being chosen
    if self._default is None and (env := os.environ.get("DEV")) and (n := self.parse(env)).base == base: return n.renderer, n.arch
    return self._requested.get(base, (None, None))

  def renderer(self, name:str) -> RendererSpec|None:
    """The RendererSpec a device would use: the one in its name, else the requested one, else the device's default."""
    n = self.parse(name)
    return self._registry().renderer(n.base, n.renderer or self.requested_renderer(n.base)[0])

  def installed(self) -> list[DeviceSpec]:
    return sorted(self._registry().devices.values(), key=lambda s: (-s.priority, s.name))

  def get_available_devices(self) -> list[str]:
    reg = self._registry()
    return [s.name for s in self.installed() if reg.probe(s.name)[0]]

Device = _Device()

def is_dtype_supported(dtype:DType, device:str|None=None) -> bool:
  """Whether kernels on `device` (default: Device.DEFAULT) can hold `dtype`: asked of the renderer that device uses. A device without
  one (DISK) runs no kernels and holds any dtype's bytes"""
  return (r := Device[device or Device.DEFAULT].renderer) is None or dtype in r.supported_dtypes()
