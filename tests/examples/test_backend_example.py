import pathlib, sys
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

def test_example_device_is_a_cpu_device(example):
  from tinygrad.runtime.ops_cpu import CPUDevice
  assert isinstance(Device["example"], CPUDevice)

def test_example_device_runs_a_tensor_op(example):
  from tinygrad import Tensor
  t = Tensor([1, 2, 3], device="EXAMPLE") * 2 + 1
  assert t.device == "EXAMPLE" and t.tolist() == [3, 5, 7]
