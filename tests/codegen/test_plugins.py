import sys, textwrap, types, warnings
import pytest
from tinygrad.plugins import hookimpl, DeviceSpec, RendererSpec, DeviceError, PluginError
from tinygrad.device import Device

# device classes for fake plugins: one that opens, one that fails to open like a runtime that does not exist yet
class Opens:
  def __init__(self, device): self.device = device
class FailsToOpen:
  def __init__(self, device): raise RuntimeError(f"{device}: no runtime in this version")
FAKE = types.ModuleType("tg_test_fake_devices")
FAKE.Opens, FAKE.FailsToOpen = Opens, FailsToOpen
sys.modules[FAKE.__name__] = FAKE

def make_plugin(api=(1, 0), devices=(), renderers=()):
  class Plugin:
    @hookimpl
    def tg_plugin_api_version(self): return api
    @hookimpl
    def tg_devices(self): return list(devices)
    @hookimpl
    def tg_renderers(self): return list(renderers)
  return Plugin()

def dev(name, priority=0, probe=None, module=FAKE.__name__, cls="Opens", dist=None, **kw): return DeviceSpec(name, module, cls, probe, priority, dist, **kw)

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

@pytest.mark.parametrize("api, fix", [((2, 0), "pip install -U tg-codegen"), ((1, 3), "pip install -U tg-codegen"),
                                      ((0, 9), "pip install -U tg-other")])
def test_version_refused(plugins, api, fix):
  assert plugins.register(make_plugin(api, [dev("OTHER")]), name="other", distribution="tg-other") is None
  (f,) = plugins.registry().failures
  assert f.name == "other" and f"{api[0]}.{api[1]}" in str(f.error) and "1.2" in str(f.error) and fix in str(f.error)
  assert "OTHER" not in plugins.registry().devices and not plugins.registry().pm.get_plugins()

def test_older_minor_accepted(plugins, monkeypatch):
  monkeypatch.setattr("tinygrad.plugins.discovery.PLUGIN_API_VERSION", (1, 3))
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

def test_failure_names_type_and_place(plugins):
  plugins.register("tests_no_such_plugin_module", name="broken", distribution="tg-broken")
  (f,) = plugins.registry().failures
  assert str(f).startswith("broken (tg-broken): ModuleNotFoundError: No module named 'tests_no_such_plugin_module' (raised at ")
  assert f.where.split(":")[0].endswith(".py") and f.where.split(":")[1].isdigit()

def test_wrong_spec_type_refused(plugins):
  plugins.register(make_plugin(devices=[("CPU", "tinygrad.runtime.ops_cpu", "CPUDevice")]), name="tuples")
  plugins.register(make_plugin(renderers=[dev("CPU")]), name="swapped")
  for f in plugins.registry().failures: assert "where a DeviceSpec/RendererSpec was expected" in str(f.error), f
  assert len(plugins.registry().failures) == 2

# *** a device offered twice: only that device is decided, the rest of both plugins stays ***

def test_device_clash_first_party_wins_a_tie(plugins):
  host = make_plugin(devices=[dev("CPU", 100), dev("PYTHON", 10)])
  with pytest.warns(RuntimeWarning, match="device CPU is offered by tg-renderers .* and by tg-evil .*tg's own distribution.*Uninstall tg-evil"):
    plugins.register(make_plugin(devices=[dev("CPU", 100, cls="FailsToOpen"), dev("EVIL", 5)]), name="evil", distribution="tg-evil")
    plugins.register(host, name="host", distribution="tg-renderers")
  reg = plugins.registry()
  assert not reg.failures and set(reg.devices) == {"CPU", "PYTHON", "EVIL"} and reg.devices["CPU"].distribution == "tg-renderers"
  assert len(reg.clashes) == 1 and Device.DEFAULT == "CPU" and isinstance(Device["CPU"], Opens)

def test_device_clash_higher_priority_wins(plugins):
  plugins.register(make_plugin(devices=[dev("CPU", 100)]), name="host", distribution="tg-renderers")
  with pytest.warns(RuntimeWarning, match=r"tg-fast provides it \(a higher priority\)"):
    plugins.register(make_plugin(devices=[dev("CPU", 150)]), name="fast", distribution="tg-fast")
  assert plugins.registry().devices["CPU"].distribution == "tg-fast" and "host" in plugins.registry().plugins

def _third_party_dist(folder, priority):
  """A distribution installed beside tg (its .dist-info with an entry point of group tinygrad) that also offers the PYTHON device."""
  (folder / "tg_clasher.py").write_text(textwrap.dedent(f"""
    from tinygrad.plugins import hookimpl, DeviceSpec
    @hookimpl
    def tg_plugin_api_version(): return (1, 0)
    @hookimpl
    def tg_devices(): return [DeviceSpec("PYTHON", "tg_clasher", "Nothing", None, {priority})]
  """))
  info = folder / "tg_clasher-1.0.dist-info"
  info.mkdir()
  (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tg-clasher\nVersion: 1.0\n")
  (info / "entry_points.txt").write_text("[tinygrad]\nclasher = tg_clasher\n")

@pytest.mark.parametrize("code", ["import tinygrad", "import tinygrad; from tinygrad import Device; Device['CPU']"])
def test_device_clash_warns_once_at_import(tmp_path, code):
  import os, subprocess
  _third_party_dist(tmp_path, 5)
  env = {k: v for k, v in os.environ.items() if k not in ("DEV", "TG_PLUGINS_AUTOLOAD", "TG_STRICT_PLUGINS")}
  env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
  r = subprocess.run([sys.executable, "-W", "always::RuntimeWarning", "-c", code], env=env, capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stderr
  clashes = [line for line in r.stderr.splitlines() if "device PYTHON is offered by" in line]
  assert len(clashes) == 1, r.stderr
  assert "by tg-renderers (priority" in clashes[0] and "Uninstall tg-clasher" in clashes[0]

def test_no_third_party_plugin_no_discovery_at_import():
  import subprocess
  code = "import sys, tinygrad; print('tinygrad.plugins.discovery' in sys.modules, tinygrad._third_party_plugins())"
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
  assert r.stdout.split() == ["False", "[]"], r.stderr

def test_renderer_clash_keeps_the_first(plugins):
  r = RendererSpec("CPU", "C", FAKE.__name__, "Opens")
  plugins.register(make_plugin(devices=[dev("CPU", 100)], renderers=[r]), name="host", distribution="tg-renderers")
  with pytest.warns(RuntimeWarning, match="renderer CPU:C from plugin 'other'.* is refused"):
    plugins.register(make_plugin(renderers=[RendererSpec("CPU", "C", "elsewhere", "C"), RendererSpec("CPU", "D", "m", "D")]), name="other")
  assert [x.name for x in plugins.registry().renderers["CPU"]] == ["C", "D"]

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

# *** the default is the best device that opens ***

def test_default_skips_a_device_that_fails_to_open(plugins, monkeypatch):
  plugins.register(make_plugin(devices=[dev("GPU", 200, cls="FailsToOpen", dist="tg-gpu"), dev("CPU", 100)]), name="p")
  with pytest.warns(RuntimeWarning) as w: assert Device.DEFAULT == "CPU"
  (msg,) = [str(x.message) for x in w]
  assert "device GPU (from tg-gpu) is available but failed to open: RuntimeError: GPU: no runtime in this version" in msg and "DEV=" in msg
  monkeypatch.setenv("DEV", "GPU")
  plugins.reset()
  plugins.register(make_plugin(devices=[dev("GPU", 200, cls="FailsToOpen", dist="tg-gpu"), dev("CPU", 100)]), name="p")
  with pytest.raises(RuntimeError, match="GPU: no runtime in this version"): Device.DEFAULT  # asked for: its own error

def test_emulator_default_warns_with_the_fix(plugins):
  cpu = dev("CPU", 100, lambda: (False, "no renderer is usable (renderer LLVM: llvmlite is not installed: pip install llvmlite)"))
  plugins.register(make_plugin(devices=[cpu, dev("PYTHON", 10, emulator=True)]), name="host")
  with pytest.warns(RuntimeWarning, match=r"default device is PYTHON, an emulator \(slow\): CPU: .*pip install llvmlite"): Device.DEFAULT

@pytest.mark.parametrize("ptxas", [None, "/opt/cuda/bin/ptxas"])
def test_nv_plugin_with_driver_needs_ptxas_for_kernels(plugins, monkeypatch, ptxas):
  # a machine whose NVIDIA driver probe passes: kernels need ptxas (PTX -> cubin; the emulated renderer runs only on the mock). With
  # it NV is available with the PTX renderer, without it NV says why; either way it is never the default
  monkeypatch.setattr("tinygrad.runtime.hooks_nv.probe", lambda: (True, ""))
  monkeypatch.setattr("tinygrad.runtime.cuda_toolchain.find_tool", lambda name: ptxas)
  plugins.register("tinygrad.runtime.hooks_nv")
  plugins.register(make_plugin(devices=[dev("CPU", 100)]), name="host")
  ok, reason = plugins.registry().probe("NV")
  if ptxas: assert ok and plugins.registry().renderer("NV").name == "PTX"
  else: assert not ok and "mock driver (MOCKGPU=1)" in reason and "NV kernels unavailable (memory, copies and signals still work): ptxas not found" in reason
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert Device.DEFAULT == "CPU"

def test_amd_plugin_with_driver_uses_the_amdgpu_renderer(plugins, monkeypatch):
  # a machine with KFD and a GPU: AMD is available with the AMDGPU LLVM renderer (the emulated one is the mock's only)
  monkeypatch.setattr("tinygrad.runtime.hooks_amd.probe", lambda: (True, ""))
  plugins.register("tinygrad.runtime.hooks_amd")
  assert plugins.registry().probe("AMD") == (True, "") and Device.renderer("AMD").name == "LLVM"
  assert "MOCKGPU=1" in plugins.registry().probe("AMD", "EMU")[1]

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
  rens = [RendererSpec("CPU", "LLVM", FAKE.__name__, "Opens", default=True), RendererSpec("CPU", "C", FAKE.__name__, "Opens")]
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

class Ren:
  def __init__(self, arch): self.arch = arch
class Comp:
  def __init__(self, arch): self.arch = arch
FAKE.Ren, FAKE.Comp = Ren, Comp

def test_renderer_built_from_spec_with_arch(plugins, monkeypatch):
  rens = [RendererSpec("CPU", "A", FAKE.__name__, "Ren", True, f"{FAKE.__name__}:Comp"), RendererSpec("CPU", "B", FAKE.__name__, "Ren")]
  plugins.register(make_plugin(devices=[dev("CPU", 100)], renderers=rens), name="host")
  r, c = Device.renderer_for("CPU")
  assert isinstance(r, Ren) and r.arch is None and isinstance(c, Comp)
  r, c = Device.renderer_for("cpu:b:znver4")
  assert r.arch == "znver4" and c is None
  monkeypatch.setenv("DEV", "CPU:A:x86-64")
  assert Device.renderer_for("CPU")[0].arch == "x86-64" == Device.renderer_for("CPU")[1].arch

def test_unavailable_renderer_is_skipped_and_named(plugins):
  rens = [RendererSpec("CPU", "LLVM", FAKE.__name__, "Ren", True, None, lambda: (False, "llvmlite is not installed: pip install llvmlite")),
          RendererSpec("CPU", "C", FAKE.__name__, "Ren", False, None, lambda: (True, ""))]
  plugins.register(make_plugin(devices=[dev("CPU", 100)], renderers=rens), name="host")
  assert plugins.registry().probe("CPU") == (True, "") and Device.renderer("CPU").name == "C"
  with pytest.raises(DeviceError, match="renderer LLVM of device CPU is not available: llvmlite is not installed"): Device.renderer_for("CPU:LLVM")

def test_device_without_usable_renderer_is_unavailable(plugins):
  rens = [RendererSpec("CPU", "LLVM", "m", "L", True, None, lambda: (False, "no llvmlite")), RendererSpec("CPU", "C", "m", "C", False, None, lambda: (False, "no cc"))]
  plugins.register(make_plugin(devices=[dev("CPU", 100), dev("PYTHON", 10)], renderers=rens), name="host")
  assert plugins.registry().probe("CPU") == (False, "no renderer is usable (renderer LLVM: no llvmlite; renderer C: no cc)")
  assert Device.DEFAULT == "PYTHON"

@pytest.mark.parametrize("spec", ["PYTHON:C", "python:0:c:arch"])
def test_one_parser_one_error(plugins, monkeypatch, spec):
  plugins.register(make_plugin(devices=[dev("CPU", 100), dev("PYTHON", 10)],
                               renderers=[RendererSpec("PYTHON", "PYTHON", FAKE.__name__, "Ren", True)]), name="host")
  errors = []
  for use in (lambda: Device[spec], lambda: Device.canonicalize(spec), lambda: setattr(Device, "DEFAULT", spec)):
    with pytest.raises(DeviceError) as e: use()
    errors.append(str(e.value))
  monkeypatch.setenv("DEV", spec)
  plugins.reset()
  plugins.register(make_plugin(devices=[dev("CPU", 100), dev("PYTHON", 10)],
                               renderers=[RendererSpec("PYTHON", "PYTHON", FAKE.__name__, "Ren", True)]), name="host")
  with pytest.raises(DeviceError) as e: Device.DEFAULT
  assert set(errors) == {str(e.value)} == {f"{spec!r}: device PYTHON has no renderer 'C'; available: PYTHON"}

@pytest.mark.parametrize("bad", ["", ":C", "CPU::C", "CPU:C:x:y"])
def test_malformed_device_string(plugins, bad):
  plugins.register(make_plugin(devices=[dev("CPU", 100)]), name="host")
  with pytest.raises(DeviceError, match="is not a device string: write NAME"): Device[bad]

# *** lazy import and instance cache ***

def test_device_module_imported_on_first_use(plugins, fake_module):
  plugins.register(make_plugin(devices=[dev("FAKE", 1, None, fake_module, "FakeDevice")]), name="fake")
  assert Device.get_available_devices() == ["FAKE"] and [d.name for d in Device.installed()] == ["FAKE"]
  assert fake_module not in sys.modules
  assert Device.DEFAULT == "FAKE" and fake_module in sys.modules  # the default is opened: it must work
  d = Device["fake"]
  assert fake_module in sys.modules and d.device == "FAKE" and Device["FAKE:0"] is d
  assert Device["fake:1"].device == "FAKE:1" and Device["FAKE:1"] is not d

def test_missing_device_module(plugins):
  plugins.register(make_plugin(devices=[dev("GHOST", 1, None, "no_such_device_module", "Ghost")]), name="ghost", distribution="tg-ghost")
  with pytest.raises(DeviceError, match="device GHOST named by tg-ghost: cannot load no_such_device_module.Ghost") as e: Device["GHOST"]
  assert isinstance(e.value.__cause__, ModuleNotFoundError)

def test_canonicalize(plugins):
  from tinygrad.device import DeviceName
  plugins.register(make_plugin(devices=[dev("CPU"), dev("NV")], renderers=[RendererSpec("NV", "PTX", "m", "P"), RendererSpec("CPU", "LLVM", "m", "L")]), name="p")
  assert [Device.canonicalize(x) for x in ["cpu", "CPU:0", "nv:1", "cpu:0:llvm", "nv:1:ptx:sm_89"]] == ["CPU", "CPU", "NV:1", "CPU:LLVM", "NV:1:PTX:sm_89"]
  assert Device.parse("nv:1:ptx:sm_89") == DeviceName("NV", 1, "PTX", "sm_89") and Device.parse("cpu:llvm") == DeviceName("CPU", 0, "LLVM")

# *** the real plugin modules, registered explicitly ***

def test_host_plugin(plugins):
  plugins.register("tinygrad.runtime.hooks_host", distribution="tg-renderers")
  assert [d.name for d in Device.installed()] == ["CPU", "PYTHON", "DISK", "NULL"]
  assert Device.DEFAULT == "CPU" and Device.renderer("CPU").name == "LLVM"

@pytest.mark.parametrize("mod, name, attr", [("tinygrad.runtime.hooks_amd", "AMD", "KFD"), ("tinygrad.runtime.hooks_nv", "NV", "VERSION")])
def test_gpu_plugin_probe_without_driver(plugins, monkeypatch, tmp_path, mod, name, attr):
  monkeypatch.setattr(f"{mod}.{attr}", missing := str(tmp_path / "missing"))
  plugins.register(mod)
  ok, reason = plugins.registry().probe(name)
  assert not ok and f"{missing} not found" in reason

@pytest.mark.parametrize("mod, name", [("tinygrad.runtime.hooks_amd", "AMD"), ("tinygrad.runtime.hooks_nv", "NV")])
def test_gpu_plugin_on_the_mock_driver(plugins, monkeypatch, mod, name):
  # MOCKGPU=1: available and opens when asked for, but never the default (a mock is not a GPU)
  monkeypatch.setenv("MOCKGPU", "1")
  plugins.register(mod)
  plugins.register("tinygrad.runtime.hooks_host", distribution="tg-renderers")
  assert plugins.registry().probe(name) == (True, "") and Device.DEFAULT == "CPU"
  assert type(Device[name]).__name__ == f"{name}Device" and Device.renderer(name).name == "EMU"

# *** doctor ***

def test_doctor_report(plugins):
  from tinygrad.plugins.doctor import report, main
  plugins.register(make_plugin(devices=[dev("CPU", 100), dev("GPU", 200, lambda: (False, "no gpu here"))],
                               renderers=[RendererSpec("CPU", "LLVM", FAKE.__name__, "Ren", True)]), name="host", distribution="tg-renderers", version="0.1.0")
  plugins.register(make_plugin((2, 0)), name="future", distribution="tg-future")
  out = report()
  assert "host       tg-renderers 0.1.0" in out and "API 1.0  provides CPU, GPU, CPU:LLVM" in out
  assert "devices (default: CPU)" in out and "no gpu here" in out and "renderers LLVM*" in out
  assert "future (tg-future): PluginError: plugin 'future' from tg-future needs plugin API 2.0" in out
  assert main([]) == 1  # a plugin failed
