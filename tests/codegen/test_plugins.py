import sys, textwrap
import pytest
from tinygrad.plugins import hookimpl, DeviceSpec, RendererSpec, DeviceError, PluginError
from tinygrad.device import Device

def make_plugin(api=(1, 0), devices=(), renderers=()):
  class Plugin:
    @hookimpl
    def tg_plugin_api_version(self): return api
    @hookimpl
    def tg_devices(self): return list(devices)
    @hookimpl
    def tg_renderers(self): return list(renderers)
  return Plugin()

def dev(name, priority=0, probe=None, module="nowhere", cls="Nope"): return DeviceSpec(name, module, cls, probe, priority)

@pytest.fixture
def fake_module(tmp_path, monkeypatch):
  """A device module on disk, so the test can see when it gets imported."""
  name = f"fake_device_{tmp_path.name.replace('-', '_')}"
  (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
    class FakeDevice:
      def __init__(self, device): self.device = device
  """))
  monkeypatch.syspath_prepend(str(tmp_path))
  yield name
  sys.modules.pop(name, None)

# *** plugin API versions ***

@pytest.mark.parametrize("api, fix", [((2, 0), "pip install -U tg-codegen"), ((1, 1), "pip install -U tg-codegen"),
                                      ((0, 9), "pip install -U tg-other")])
def test_version_refused(plugins, api, fix):
  assert plugins.register(make_plugin(api, [dev("OTHER")]), name="other", distribution="tg-other") is None
  (f,) = plugins.registry().failures
  assert f.name == "other" and f"{api[0]}.{api[1]}" in str(f.error) and "1.0" in str(f.error) and fix in str(f.error)
  assert "OTHER" not in plugins.registry().devices and not plugins.registry().pm.get_plugins()

def test_older_minor_accepted(plugins, monkeypatch):
  monkeypatch.setattr("tinygrad.plugins.discovery.PLUGIN_API_VERSION", (1, 2))
  assert plugins.register(make_plugin((1, 1), [dev("OTHER")]), name="other").api == (1, 1)
  assert "OTHER" in plugins.registry().devices

def test_version_missing_refused(plugins):
  class NoVersion:
    @hookimpl
    def tg_devices(self): return [dev("OTHER")]
  plugins.register(NoVersion(), name="noversion")
  assert "does not state its plugin API version" in str(plugins.registry().failures[0].error)

def test_misspelt_hook_refused(plugins):
  class Typo:
    @hookimpl
    def tg_plugin_api_version(self): return (1, 0)
    @hookimpl
    def tg_device(self): return []
  plugins.register(Typo(), name="typo")
  assert plugins.registry().failures[0].name == "typo" and "tg_device" in str(plugins.registry().failures[0].error)

# *** failures: recorded by name, re-raised on use, strict mode ***

def test_broken_plugin_reported_and_reraised(plugins):
  plugins.register(make_plugin(devices=[dev("CPU", 100)]), name="host", distribution="tg-renderers")
  plugins.register("tests_no_such_plugin_module", name="amd", distribution="tg-hcq-amd")
  (f,) = plugins.registry().failures
  assert f.name == "amd" and isinstance(f.error, ModuleNotFoundError)
  with pytest.raises(DeviceError, match="amd") as e: Device["AMD"]
  assert e.value.__cause__ is f.error
  assert Device.DEFAULT == "CPU"  # one broken plugin does not break the others

def test_plugin_raising_in_hook(plugins):
  class Raises:
    @hookimpl
    def tg_plugin_api_version(self): return (1, 0)
    @hookimpl
    def tg_devices(self): raise OSError("cannot list devices")
  plugins.register(Raises(), name="thirdparty")
  with pytest.raises(DeviceError, match="cannot list devices") as e: Device["THIRDPARTY"]
  assert isinstance(e.value.__cause__, OSError)

def test_strict_plugins(plugins, monkeypatch):
  monkeypatch.setenv("TG_STRICT_PLUGINS", "1")
  with pytest.raises(PluginError, match="TG_STRICT_PLUGINS") as e: plugins.register("tests_no_such_plugin_module", name="broken")
  assert isinstance(e.value.__cause__, ModuleNotFoundError)
  with pytest.raises(PluginError, match="2.0"): plugins.register(make_plugin((2, 0)), name="future")

def test_wrong_spec_type_refused(plugins):
  plugins.register(make_plugin(devices=[("CPU", "tinygrad.runtime.ops_cpu", "CPUDevice")]), name="tuples")
  plugins.register(make_plugin(renderers=[dev("CPU")]), name="swapped")
  for f in plugins.registry().failures: assert "where a DeviceSpec/RendererSpec was expected" in str(f.error), f
  assert len(plugins.registry().failures) == 2

def test_device_clash_refused(plugins):
  plugins.register(make_plugin(devices=[dev("CPU")]), name="a", distribution="tg-a")
  plugins.register(make_plugin(devices=[dev("CPU")]), name="b", distribution="tg-b")
  assert "already provided by tg-a" in str(plugins.registry().failures[0].error)

# *** DEV= and defaults ***

def test_unknown_dev_names_installed_and_distribution(plugins, monkeypatch):
  plugins.register(make_plugin(devices=[dev("CPU", 100), dev("PYTHON", 10)]), name="host")
  monkeypatch.setenv("DEV", "AMD")
  with pytest.raises(DeviceError, match="pip install tg-hcq-amd") as e: Device.DEFAULT
  assert "CPU, PYTHON" in str(e.value)
  monkeypatch.setenv("DEV", "FOO")
  with pytest.raises(DeviceError, match="unknown device 'FOO'.*CPU, PYTHON"): Device.DEFAULT

def test_priorities_not_registration_order(plugins):
  plugins.register(make_plugin(devices=[dev("LOW", 1), dev("NEVER", -5)]), name="first")
  plugins.register(make_plugin(devices=[dev("HIGH", 50), dev("GONE", 99, lambda: (False, "no hardware"))]), name="second")
  assert Device.DEFAULT == "HIGH"
  assert Device.get_available_devices() == ["HIGH", "LOW", "NEVER"]
  Device.DEFAULT = "never"
  assert Device.DEFAULT == "NEVER"

def test_negative_priority_only_when_asked(plugins, monkeypatch):
  plugins.register(make_plugin(devices=[dev("NULL", -1)]), name="null")
  with pytest.raises(DeviceError, match="no device is available"): Device.DEFAULT
  monkeypatch.setenv("DEV", "null")
  plugins.reset()
  plugins.register(make_plugin(devices=[dev("NULL", -1)]), name="null")
  assert Device.DEFAULT == "NULL"

def test_unavailable_device_says_why(plugins, monkeypatch):
  plugins.register(make_plugin(devices=[dev("GPU", 5, lambda: (False, "/dev/gpu not found: driver not loaded"))]), name="gpu")
  with pytest.raises(DeviceError, match="not available: /dev/gpu not found"): Device["GPU"]
  monkeypatch.setenv("DEV", "GPU")
  with pytest.raises(DeviceError, match="DEV=GPU.*driver not loaded"): Device.DEFAULT

def test_probe_exception_is_unavailable(plugins):
  def probe(): raise PermissionError("nope")
  plugins.register(make_plugin(devices=[dev("GPU", 5, probe)]), name="gpu")
  assert plugins.registry().probe("GPU") == (False, "availability probe raised PermissionError('nope')")

def test_dev_renderer_and_arch(plugins, monkeypatch):
  rens = [RendererSpec("CPU", "LLVM", "m", "L", default=True), RendererSpec("CPU", "C", "m", "C")]
  plugins.register(make_plugin(devices=[dev("CPU", 100)], renderers=rens), name="host")
  assert Device.renderer("CPU").name == "LLVM" and Device.requested_renderer("CPU") == (None, None)
  monkeypatch.setenv("DEV", "cpu:1:c:x86-64")
  plugins.reset()
  plugins.register(make_plugin(devices=[dev("CPU", 100)], renderers=rens), name="host")
  assert Device.DEFAULT == "CPU:1" and Device.requested_renderer("cpu") == ("C", "x86-64") and Device.renderer("CPU").name == "C"
  monkeypatch.setenv("DEV", "CPU:PTX")
  plugins.reset()
  plugins.register(make_plugin(devices=[dev("CPU", 100)], renderers=rens), name="host")
  with pytest.raises(DeviceError, match="no renderer 'PTX'; available: LLVM, C"): Device.DEFAULT

# *** lazy import and instance cache ***

def test_device_module_imported_on_first_use(plugins, fake_module):
  plugins.register(make_plugin(devices=[dev("FAKE", 1, None, fake_module, "FakeDevice")]), name="fake")
  assert Device.DEFAULT == "FAKE" and Device.get_available_devices() == ["FAKE"]
  assert fake_module not in sys.modules
  d = Device["fake"]
  assert fake_module in sys.modules and d.device == "FAKE" and Device["FAKE:0"] is d
  assert Device["fake:1"].device == "FAKE:1" and Device["FAKE:1"] is not d

def test_missing_device_module(plugins):
  plugins.register(make_plugin(devices=[dev("GHOST", 1, None, "no_such_device_module", "Ghost")]), name="ghost", distribution="tg-ghost")
  with pytest.raises(DeviceError, match="cannot load no_such_device_module.Ghost named by tg-ghost") as e: Device["GHOST"]
  assert isinstance(e.value.__cause__, ModuleNotFoundError)

def test_canonicalize():
  assert [Device.canonicalize(x) for x in ["cpu", "CPU:0", "amd:1"]] == ["CPU", "CPU", "AMD:1"]
  assert Device.parse("nv:1:ptx:sm_89") == ("NV:1", "PTX", "sm_89") and Device.parse("cpu:llvm") == ("CPU", "LLVM", None)

# *** the real plugin modules, registered explicitly ***

def test_host_plugin(plugins):
  plugins.register("tinygrad.runtime.hooks_host", distribution="tg-renderers")
  assert [d.name for d in Device.installed()] == ["CPU", "PYTHON", "NULL"]
  assert Device.DEFAULT == "CPU" and Device.renderer("CPU").name == "LLVM"

@pytest.mark.parametrize("mod, name, path", [("tinygrad.runtime.hooks_amd", "AMD", "/dev/kfd"),
                                              ("tinygrad.runtime.hooks_nv", "NV", "/proc/driver/nvidia/version")])
def test_gpu_plugin_probe(plugins, mod, name, path):
  import os
  plugins.register(mod)
  ok, reason = plugins.registry().probe(name)
  if os.path.exists(path): pytest.skip(f"{path} exists here")
  assert not ok and f"{path} not found" in reason

# *** doctor ***

def test_doctor_report(plugins):
  from tinygrad.plugins.doctor import report, main
  plugins.register(make_plugin(devices=[dev("CPU", 100), dev("GPU", 200, lambda: (False, "no gpu here"))],
                               renderers=[RendererSpec("CPU", "LLVM", "m", "c", True)]), name="host", distribution="tg-renderers", version="0.1.0")
  plugins.register(make_plugin((2, 0)), name="future", distribution="tg-future")
  out = report()
  assert "host       tg-renderers 0.1.0" in out and "API 1.0  provides CPU, GPU, CPU:LLVM" in out
  assert "devices (default: CPU)" in out and "no gpu here" in out and "renderers LLVM*" in out
  assert "future (tg-future): plugin 'future' from tg-future needs plugin API 2.0" in out
  assert main() == 0
