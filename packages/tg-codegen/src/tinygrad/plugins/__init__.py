"""tinygrad's plugin API. Plugin modules import only this package: hookimpl, DeviceSpec, RendererSpec.
Tests use reset() with TG_PLUGINS_AUTOLOAD=0 and register() to choose exactly which plugins exist."""
from tinygrad.plugins.spec import PLUGIN_API_VERSION, KNOWN_DEVICES, FIRST_PARTY, DeviceSpec, RendererSpec, PluginError, DeviceError
from tinygrad.plugins.hookspecs import hookimpl
from tinygrad.plugins.discovery import registry, register, reset

__all__ = ["PLUGIN_API_VERSION", "KNOWN_DEVICES", "FIRST_PARTY", "DeviceSpec", "RendererSpec", "PluginError", "DeviceError", "hookimpl",
           "registry", "register", "reset"]
