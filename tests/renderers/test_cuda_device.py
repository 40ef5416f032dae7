"""The CUDA device and the GPU plugin without a GPU: what is offered, and the reasons given when libcuda or libnvrtc is missing. The
machine is simulated (the library search finds nothing, or finds a fake library) so these run the same everywhere."""
import pytest
from tinygrad.runtime import cuda_toolchain
from tinygrad.plugins.spec import DeviceError

@pytest.fixture
def gpu(plugins):
  plugins.register("tinygrad.runtime.hooks_host", name="host", distribution="tg-renderers")
  plugins.register("tinygrad.runtime.hooks_gpu", name="gpu", distribution="tg-renderers")
  from tinygrad.device import Device
  return Device

@pytest.fixture
def no_nvidia(monkeypatch):
  monkeypatch.setattr(cuda_toolchain, "find_library", lambda stem: None)
  monkeypatch.setattr(cuda_toolchain, "find_tool", lambda name: None)

def test_cuda_is_unavailable_without_libcuda(gpu, no_nvidia):
  assert "CUDA" not in gpu.get_available_devices()
  with pytest.raises(DeviceError, match="unavailable: libcuda not found"): gpu["CUDA"]
  assert gpu.DEFAULT == "CPU"  # the default passes over it

def test_driver_without_libcuda_says_so(no_nvidia):
  from tinygrad.runtime.ops_cuda import Driver
  with pytest.raises(DeviceError, match="unavailable: libcuda not found"): Driver()

def test_cuda_c_renderer_is_unavailable_without_nvrtc_or_nvcc(gpu, no_nvidia, monkeypatch):
  monkeypatch.setattr(cuda_toolchain, "find_library", lambda stem: "/fake/libcuda.so.1" if stem == "cuda" else None)
  reg = gpu._registry()
  assert reg.probe("CUDA")[0]  # libcuda is there: PTX needs nothing more
  ok, reason = reg.probe("CUDA", "CUDA")
  assert not ok and "unavailable: libnvrtc not found" in reason
  assert reg.renderer("CUDA").name == "PTX"  # the default falls to the renderer that works
  with pytest.raises(DeviceError, match="renderer CUDA of device CUDA is not available: unavailable: libnvrtc not found.*DEV=CUDA:PTX"):
    gpu.renderer_for("CUDA:CUDA")

def test_null_offers_every_gpu_renderer(gpu):
  assert {r.name for r in gpu._registry().renderers["NULL"]} >= {"C", "CUDA", "PTX", "AMD"}
  for target, renderer, compiler in [("PTX", "PTXRenderer", "PTXCompiler"), ("AMD", "AMDGPURenderer", "AMDGPUCompiler")]:
    dev = gpu[f"NULL:{target}"]
    assert (type(dev.renderer).__name__, type(dev.compiler).__name__) == (renderer, compiler)
  assert type(gpu["NULL"].compiler).__name__ == "NullCompiler"  # plain NULL renders C and compiles nothing, as before

def test_arch_reaches_renderer_and_compiler(gpu):
  dev = gpu["NULL:PTX:sm_89"]
  assert dev.renderer.arch == dev.compiler.arch == "sm_89"
  assert ".target sm_89" in dev.renderer.render("k", __import__("gpu_kernels").do_while())
  with pytest.raises(ValueError, match="'gfx90a' is no CUDA architecture"): gpu["NULL:PTX:gfx90a"]

def test_library_search_finds_the_newest_versioned_library(tmp_path, monkeypatch):
  for name in ("libnvrtc.so.11.2", "libnvrtc.so.12", "libnvrtc.so.9"): (tmp_path / name).write_bytes(b"")
  monkeypatch.setattr(cuda_toolchain, "_dirs", lambda: [str(tmp_path)])
  assert cuda_toolchain.find_library("nvrtc") == str(tmp_path / "libnvrtc.so.12")
  (tmp_path / "libnvrtc.so").write_bytes(b"")
  assert cuda_toolchain.find_library("nvrtc") == str(tmp_path / "libnvrtc.so")
  assert cuda_toolchain.find_library("cuda") is None
