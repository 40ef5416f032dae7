import importlib.util, pathlib, sys
import pytest
from tinygrad.device import Device

SRC = pathlib.Path(__file__).resolve().parents[2] / "examples" / "tg-backend-example" / "src"

@pytest.fixture
def example(plugins, monkeypatch):
  monkeypatch.syspath_prepend(str(SRC))
  plugins.register("tinygrad.runtime.hooks_host", distribution="tg-renderers")
  plugins.register("tg_backend_example.hooks", name="example", distribution="tg-backend-example")
  yield plugins
  for m in [m for m in sys.modules if m.startswith("tg_backend_example")]: del sys.modules[m]

def test_discovered_not_imported(example):
  assert not example.registry().failures
  assert "EXAMPLE" in [d.name for d in Device.installed()] and Device.DEFAULT == "CPU"  # priority 1 < CPU's
  assert "tg_backend_example.device" not in sys.modules

def test_doctor_lists_example(example):
  from tinygrad.plugins.doctor import report
  out = report()
  assert "example    tg-backend-example" in out and "EXAMPLE" in out

@pytest.mark.skipif(importlib.util.find_spec("tinygrad.runtime.ops_cpu") is None, reason="tinygrad.runtime.ops_cpu (CPU device) not written yet")
def test_example_device_is_a_cpu_device(example):
  from tinygrad.runtime.ops_cpu import CPUDevice
  assert isinstance(Device["example"], CPUDevice)
