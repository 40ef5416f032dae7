"""Plugin discovery: entry points of group "tinygrad", each loaded in its own try/except, into one Registry of
devices and renderers. Nothing a plugin names is imported here; tinygrad.device imports a device on first use."""
import importlib, os, re
from dataclasses import dataclass, field, replace
from typing import Any, Callable
import pluggy
from tinygrad.plugins import hookspecs
from tinygrad.plugins.spec import PLUGIN_API_VERSION, KNOWN_DEVICES, DeviceSpec, RendererSpec, PluginError, DeviceError

def _env_on(name:str, default:str) -> bool: return os.environ.get(name, default) not in ("", "0")
def _norm(dist:str|None) -> str|None: return re.sub(r"[-_.]+", "-", dist).lower() if dist else None

@dataclass
class Plugin:
  name: str
  distribution: str|None
  version: str|None
  api: tuple[int, int]
  devices: list[DeviceSpec] = field(default_factory=list)
  renderers: list[RendererSpec] = field(default_factory=list)

@dataclass
class Failure:
  name: str
  distribution: str|None
  error: BaseException
  def __str__(self): return f"{self.name}" + (f" ({self.distribution})" if self.distribution else "") + f": {self.error}"

def check_api_version(api:Any, who:str, dist:str|None) -> tuple[int, int]:
  if not (isinstance(api, tuple) and len(api) == 2 and all(isinstance(x, int) for x in api)):
    raise PluginError(f"{who} does not state its plugin API version: tg_plugin_api_version() must return (major, minor), got {api!r}")
  core = PLUGIN_API_VERSION
  if api[0] > core[0] or (api[0] == core[0] and api[1] > core[1]):
    raise PluginError(f"{who} needs plugin API {api[0]}.{api[1]}, but the installed tg-codegen provides {core[0]}.{core[1]}: "
                      f"run `pip install -U tg-codegen`")
  if api[0] < core[0]:
    fix = f"`pip install -U {dist}` for a version written for API {core[0]}.x, or `pip install \"tg-codegen<{core[0]}\"`" if dist else \
          f"update the plugin for API {core[0]}.x, or `pip install \"tg-codegen<{core[0]}\"`"
    raise PluginError(f"{who} was written for plugin API {api[0]}.{api[1]}, but the installed tg-codegen provides {core[0]}.{core[1]} "
                      f"(a different major is incompatible): {fix}")
  return api

class Registry:
  def __init__(self, autoload:bool):
    self.pm = pluggy.PluginManager("tinygrad")
    self.pm.add_hookspecs(hookspecs)
    self.plugins: dict[str, Plugin] = {}
    self.failures: list[Failure] = []
    self.devices: dict[str, DeviceSpec] = {}
    self.renderers: dict[str, list[RendererSpec]] = {}
    self._probed: dict[str, tuple[bool, str]] = {}
    if autoload: self.load_entry_points()

  def load_entry_points(self):
    from importlib.metadata import entry_points
    seen = set()
    # sorted so a device offered twice resolves the same way on every machine
    for ep in sorted(entry_points(group="tinygrad"), key=lambda e: (_norm(e.dist.name) if e.dist else "", e.name)):
      if (ep.name, ep.value) in seen: continue
      seen.add((ep.name, ep.value))
      self.add(ep.load, ep.name, ep.dist.name if ep.dist else None, ep.dist.version if ep.dist else None)

  def _call(self, plugin:Any, hook:str) -> Any:
    # this plugin's own implementation, so every result is attributed to the plugin that gave it
    for impl in getattr(self.pm.hook, hook).get_hookimpls():
      if impl.plugin is plugin: return impl.function()
    return None

  def add(self, load:Callable[[], Any], name:str, dist:str|None=None, version:str|None=None) -> Plugin|None:
    """Load one plugin; any failure is recorded by name (raised at once under TG_STRICT_PLUGINS=1)."""
    who, obj = f"plugin {name!r}" + (f" from {dist} {version or ''}".rstrip() if dist else ""), None
    try:
      obj = load()
      self.pm.register(obj, name=name)
      self.pm.check_pending()  # a misspelt hook name is an error, not a silently ignored function
      api = check_api_version(self._call(obj, "tg_plugin_api_version"), who, dist)
      devs, rens = self._call(obj, "tg_devices") or [], self._call(obj, "tg_renderers") or []
      if bad := [x for x in devs if not isinstance(x, DeviceSpec)] + [x for x in rens if not isinstance(x, RendererSpec)]:
        raise PluginError(f"{who} returned {bad[0]!r} where a DeviceSpec/RendererSpec was expected")
      devs = [replace(d, name=d.name.upper(), distribution=d.distribution or dist) for d in devs]
      rens = [replace(r, device=r.device.upper(), name=r.name.upper()) for r in rens]
      if clash := [d.name for d in devs if d.name in self.devices]:
        raise PluginError(f"{who} provides {clash[0]}, already provided by {self.devices[clash[0]].distribution or 'another plugin'}")
    except Exception as e:
      if obj is not None and self.pm.is_registered(obj): self.pm.unregister(obj)
      self.failures.append(Failure(name, dist, e))
      if _env_on("TG_STRICT_PLUGINS", "0"): raise PluginError(f"{who} failed (TG_STRICT_PLUGINS=1): {e}") from e
      return None
    self.plugins[name] = p = Plugin(name, dist, version, api, devs, rens)
    for d in devs: self.devices[d.name] = d
    for r in rens: self.renderers.setdefault(r.device, []).append(r)
    return p

  # *** queries used by tinygrad.device.Device and the doctor ***

  def device(self, name:str) -> DeviceSpec:
    if (spec := self.devices.get(name)) is not None: return spec
    provider = KNOWN_DEVICES.get(name)
    for f in self.failures:  # the plugin that would have provided it broke: re-raise that error
      if (provider and _norm(f.distribution) == provider) or f.name.upper() == name:
        raise DeviceError(f"device {name} is provided by plugin {f}, which failed to load") from f.error
    msg = f"unknown device {name!r}; installed devices: {', '.join(sorted(self.devices)) or 'none'}"
    if provider: msg += f". {name} is provided by {provider}: pip install {provider}"
    if self.failures: msg += f". Plugins that failed to load: {'; '.join(map(str, self.failures))}"
    raise DeviceError(msg) from (self.failures[0].error if self.failures else None)

  def probe(self, name:str) -> tuple[bool, str]:
    if name not in self._probed:
      spec = self.device(name)
      try: self._probed[name] = (True, "") if spec.probe is None else tuple(spec.probe())
      except Exception as e: self._probed[name] = (False, f"availability probe raised {e!r}")
    return self._probed[name]

  def renderer(self, device:str, name:str|None=None) -> RendererSpec|None:
    """The renderer `name` for `device`, or its default (the first marked default, else the first offered)."""
    opts = self.renderers.get(device, [])
    if name is None: return next((r for r in opts if r.default), opts[0] if opts else None)
    if (r := next((r for r in opts if r.name == name.upper()), None)) is None:
      raise DeviceError(f"device {device} has no renderer {name!r}; available: {', '.join(r.name for r in opts) or 'none'}")
    return r

_registry: Registry|None = None

def registry() -> Registry:
  """The process-wide registry, discovered on first use (entry points unless TG_PLUGINS_AUTOLOAD=0)."""
  global _registry
  if _registry is None: _registry = Registry(autoload=_env_on("TG_PLUGINS_AUTOLOAD", "1"))
  return _registry

def reset():
  """Forget every plugin and opened device; the next use discovers again (tests: set TG_PLUGINS_AUTOLOAD=0 first)."""
  global _registry
  _registry = None

def register(plugin:Any, name:str|None=None, distribution:str|None=None, version:str|None=None) -> Plugin|None:
  """Register a plugin explicitly: a module, an object with hook methods, or a module name imported here."""
  name = name or (plugin if isinstance(plugin, str) else getattr(plugin, "__name__", type(plugin).__name__))
  return registry().add((lambda: importlib.import_module(plugin)) if isinstance(plugin, str) else (lambda: plugin), name, distribution, version)
