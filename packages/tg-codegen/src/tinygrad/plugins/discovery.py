"""Plugin discovery: entry points of group "tinygrad", each loaded in its own try/except, into one Registry of
devices and renderers. Nothing a plugin names is imported here; tinygrad.device imports a device on first use."""
import importlib, os, re, traceback, warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable
import pluggy
from tinygrad.plugins import hookspecs
from tinygrad.plugins.spec import PLUGIN_API_VERSION, KNOWN_DEVICES, FIRST_PARTY, DeviceSpec, RendererSpec, PluginError, DeviceError

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
  @property
  def where(self) -> str:
    """file:line that raised: the innermost frame of the error's traceback outside the import machinery's frozen modules"""
    tb = [f for f in traceback.extract_tb(self.error.__traceback__) if not f.filename.startswith("<frozen")]
    return f"{tb[-1].filename}:{tb[-1].lineno}" if tb else "unknown location"
  def __str__(self):
    return f"{self.name}" + (f" ({self.distribution})" if self.distribution else "") + f": {type(self.error).__name__}: {self.error}" + \
           f" (raised at {self.where})"

def _first_party(spec:DeviceSpec) -> bool: return _norm(spec.distribution) in FIRST_PARTY

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
    self.clashes: list[str] = []  # a device or renderer name offered twice: which one lost, and why
    self._probed: dict[tuple[str, str|None], tuple[bool, str]] = {}
    if autoload: self.load_entry_points()

  def load_entry_points(self):
    from tinygrad.plugins.entry_points import entry_points
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
    except Exception as e:
      if obj is not None and self.pm.is_registered(obj): self.pm.unregister(obj)
      self.failures.append(Failure(name, dist, e))
      if _env_on("TG_STRICT_PLUGINS", "0"): raise PluginError(f"{who} failed (TG_STRICT_PLUGINS=1): {e}") from e
      return None
    self.plugins[name] = p = Plugin(name, dist, version, api, devs, rens)
    for d in devs: self._add_device(d, name)
    for r in rens:
      if (old := next((o for o in self.renderers.get(r.device, []) if o.name == r.name), None)) is None:
        self.renderers.setdefault(r.device, []).append(r)
      else: self._clash(f"renderer {r.device}:{r.name} from {who} is refused: {old.module}.{old.cls} already provides it (registered first)")
    return p

  def _add_device(self, new:DeviceSpec, plugin:str):
    # a name clash refuses only the clashing device: the higher priority wins, a tie goes to tg's own distribution, then to the first
    if (old := self.devices.get(new.name)) is None:
      self.devices[new.name] = new
      return
    wins = (new.priority, _first_party(new)) > (old.priority, _first_party(old))
    win, lose = (new, old) if wins else (old, new)
    if wins: self.devices[new.name] = new
    why = "a higher priority" if win.priority != lose.priority else "tg's own distribution" if _first_party(win) != _first_party(lose) \
          else "registered first"
    self._clash(f"device {new.name} is offered by {win.distribution or plugin} (priority {win.priority}) and by "
                f"{lose.distribution or plugin} (priority {lose.priority}); {win.distribution or plugin} provides it ({why}). "
                f"Uninstall {lose.distribution or 'the other plugin'} if it should not be offered")

  def _clash(self, msg:str):
    self.clashes.append(msg)
    warnings.warn(msg, RuntimeWarning, stacklevel=2)

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

  @staticmethod
  def _run_probe(probe) -> tuple[bool, str]:
    try: return (True, "") if probe is None else tuple(probe())
    except Exception as e: return (False, f"availability probe raised {e!r}")

  def probe(self, name:str, renderer:str|None=None) -> tuple[bool, str]:
    """(available, reason) of a device, or of one of its renderers. A device whose renderers are all unavailable is unavailable."""
    if (name, renderer) not in self._probed:
      if renderer is not None: self._probed[(name, renderer)] = self._run_probe(self.renderer(name, renderer).probe)
      elif not (ok := self._run_probe(self.device(name).probe))[0] or not (rens := self.renderers.get(name)): self._probed[(name, None)] = ok
      else:
        res = {r.name: self.probe(name, r.name) for r in rens}
        why = "; ".join(f"renderer {r}: {reason}" for r, (_, reason) in res.items())
        self._probed[(name, None)] = (True, "") if any(ok for ok, _ in res.values()) else (False, f"no renderer is usable ({why})")
    return self._probed[(name, renderer)]

  def renderer(self, device:str, name:str|None=None) -> RendererSpec|None:
    """The renderer `name` for `device`, or its default: the first available one marked default, else the first available."""
    opts = self.renderers.get(device, [])
    if name is None:
      usable = [r for r in opts if self.probe(device, r.name)[0]]
      return next((r for r in usable if r.default), usable[0] if usable else None)
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
