"""Hook implementations: imported at discovery, so only names and a cheap probe here."""
from tinygrad.plugins import hookimpl, RendererSpec
from tinygrad.runtime.host_toolchain import probe_cc

@hookimpl
def tg_plugin_api_version(): return (1, 1)

@hookimpl
def tg_renderers():
  return [RendererSpec("CPU", "SIGNED", "tg_renderer_example.renderer", "SignedCRenderer", False, "tinygrad.runtime.ops_cpu:ClangCompiler", probe_cc)]
