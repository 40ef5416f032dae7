"""The CL device over ctypes libOpenCL: buffers, the build log in compile errors, kernel times from events (DEBUG=2), and the reasons
it gives when it cannot run (no library, no platform, no Adreno for QCOM), simulated in subprocesses so every machine checks them."""
import os, pathlib, subprocess, sys, textwrap
import numpy as np
import pytest
from tinygrad.dtype import dtypes
from tinygrad.device import Buffer, CompileError, DeviceError

ROOT = pathlib.Path(__file__).resolve().parents[2]

def python(code:str, **env) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                        env={**os.environ, **env}, cwd=ROOT)

def test_buffer_roundtrip_and_views(cl):
  b = Buffer("CL", 8, dtypes.float32).allocate().copyin(memoryview(np.arange(8, dtype=np.float32)).cast("B"))
  np.testing.assert_array_equal(b.numpy(), np.arange(8))
  b.copyin(memoryview(bytes(np.full(8, 2, np.float32).data)))  # read-only host memory copies in too
  assert (b.numpy() == 2).all()
  v = b.view(8, dtypes.int32, 0).ensure_allocated()  # memory planning's views: another dtype at offset 0, an OpenCL sub-buffer
  np.testing.assert_array_equal(v.numpy(), np.full(8, 2, np.float32).view(np.int32))
  with pytest.raises(DeviceError, match="byte 4 is not aligned .*CL_DEVICE_MEM_BASE_ADDR_ALIGN"): b.view(1, dtypes.float32, 4).ensure_allocated()
  b.deallocate()

def test_device_index_out_of_range(cl):
  from tinygrad.device import Device
  with pytest.raises(DeviceError, match="CL:9: there are only"): Device["CL:9"]

def test_compile_error_has_build_log(cl):
  from tinygrad.device import Device
  with pytest.raises(CompileError, match=r"(?s)OpenCL build failed .*build log:\n.*error.*__kernel void k\(__global float\* a\) \{ a\[0\] = b; \}"):
    Device["CL"].compiler.compile("__kernel void k(__global float* a) { a[0] = b; }")

def test_renderer_follows_the_device_extensions(cl):
  from tinygrad.device import Device
  dev = Device["CL"]
  assert dev.renderer.features == {f for f, ext in (("fp16", "cl_khr_fp16"), ("fp64", "cl_khr_fp64")) if ext in dev.extensions}
  assert (dtypes.float64 in dev.renderer.supported_dtypes()) == ("cl_khr_fp64" in dev.extensions)
  assert dtypes.float64 not in Device["CL:QCOM"].renderer.supported_dtypes()

def test_kernel_time_from_event(cl):
  from tinygrad.device import Device
  dev = Device["CL"]
  src = "__kernel void k(__global float* a, const int n) { for (int i = 0; i < n; i++) a[get_global_id(0)] += 1.0f; }"
  prg = dev.runtime("k", dev.compiler.compile(src))
  buf = dev.allocator.alloc(4 * 64)
  dev.allocator._copyin(buf, memoryview(np.zeros(64, np.float32)).cast("B"))
  assert prg(buf, vals=(3,), global_size=(8, 1, 1), local_size=(8, 1, 1)) is None  # queued, not waited for
  t = prg(buf, vals=(4,), global_size=(8, 1, 1), local_size=(8, 1, 1), wait=True)
  assert 0 < t < 10
  out = np.zeros(64, np.float32)
  dev.allocator._copyout(memoryview(out).cast("B"), buf)
  assert (out == 7).all()

def test_debug2_prints_kernel_times(cl):
  r = python("""
    from tinygrad import Tensor
    print((Tensor([1.0, 2.0, 3.0], device="CL") * 2).tolist())
  """, DEBUG="2")
  assert r.returncode == 0, r.stderr
  lines = [ln for ln in r.stdout.splitlines() if "*** CL" in ln and " us " in ln]
  assert lines and all(float(ln.split(" us ")[0].split()[-1]) > 0 for ln in lines), r.stdout
  assert "[2.0, 4.0, 6.0]" in r.stdout

# *** unavailable, with the reason ***

PROBE = """
  from tinygrad.plugins.discovery import registry
  from tinygrad.device import Device
  print("probe:", registry().probe("CL"))
  try: Device["CL"]
  except Exception as e: print("open:", type(e).__name__, e)
"""

def test_no_platform_is_unavailable(tmp_path):
  # an ICD loader with no driver registered: OCL_ICD_VENDORS names an empty folder
  r = python(PROBE, OCL_ICD_VENDORS=str(tmp_path))
  if "no libOpenCL could be loaded" in r.stdout: pytest.skip("no libOpenCL here: test_no_library_is_unavailable covers this machine")
  assert "probe: (False, 'libOpenCL finds no OpenCL platform (clGetPlatformIDs failed: CL_PLATFORM_NOT_FOUND_KHR" in r.stdout, r.stdout + r.stderr
  assert f"no driver is registered in {tmp_path}" in r.stdout and "pocl-opencl-icd" in r.stdout
  assert "open: DeviceError device CL (from tg-renderers) is installed but not available: libOpenCL finds no OpenCL platform" in r.stdout

def test_no_library_is_unavailable():
  # every load of an OpenCL library fails, as on a machine without it
  r = python(textwrap.dedent("""
    import ctypes, ctypes.util
    real = ctypes.CDLL
    def blocked(name, *a, **k):
      if "OpenCL" in str(name): raise OSError(f"{name}: cannot open shared object file (blocked by the test)")
      return real(name, *a, **k)
    ctypes.CDLL, ctypes.util.find_library = blocked, lambda name: None
  """) + textwrap.dedent(PROBE))
  assert "probe: (False, 'no libOpenCL could be loaded (libOpenCL.so.1: libOpenCL.so.1: cannot open shared object file (blocked" in r.stdout, \
    r.stdout + r.stderr
  assert "apt install ocl-icd-libopencl1 pocl-opencl-icd" in r.stdout and "open: DeviceError" in r.stdout

def test_qcom_needs_an_adreno(monkeypatch, tmp_path):
  from tinygrad.runtime.hooks_cl import probe_qcom
  monkeypatch.setenv("TG_KGSL_NODE", str(tmp_path / "kgsl-3d0"))
  ok, why = probe_qcom()
  assert not ok and f"no Qualcomm Adreno GPU ({tmp_path / 'kgsl-3d0'} is missing); DEV=CL:QCOM runs the QCOM dialect" in why

def test_qcom_on_a_machine_without_adreno(cl, monkeypatch, tmp_path):
  # the kgsl node exists (simulated), but the OpenCL devices here are no Adreno: the probe names the devices it saw
  from tinygrad.runtime.hooks_cl import probe_qcom
  (tmp_path / "kgsl-3d0").touch()
  monkeypatch.setenv("TG_KGSL_NODE", str(tmp_path / "kgsl-3d0"))
  ok, why = probe_qcom()
  assert not ok and "OpenCL found no Qualcomm Adreno device (devices: " in why

@pytest.mark.parametrize("require, outcome", [("0", "1 skipped"), ("1", "1 error")])
def test_require_cl_turns_the_skip_into_a_failure(tmp_path, require, outcome):
  # what CI relies on: after installing PoCL it sets TG_REQUIRE_CL=1, so a broken CL fails the run instead of skipping
  r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:xdist", "-rsf",
                      "tests/renderers/test_opencl.py::test_do_while_runs"], capture_output=True, text=True, timeout=120, cwd=ROOT,
                     env={**os.environ, "OCL_ICD_VENDORS": str(tmp_path), "TG_REQUIRE_CL": require})
  assert outcome in r.stdout, r.stdout[-2000:]
  assert ("TG_REQUIRE_CL is set but CL is unavailable" if require == "1" else "CL unavailable:") in r.stdout
