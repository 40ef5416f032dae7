"""tg-renderers plugin: OpenCL. The CL device (any OpenCL driver), QCOM (a Qualcomm Adreno GPU through its OpenCL driver), and the
OpenCL C renderers, also on NULL for compile-only use (DEV=NULL:CL, DEV=NULL:QCOM). The probes load libOpenCL when they run (never at
discovery) and say what is missing."""
import os
from tinygrad.plugins import hookimpl, DeviceSpec, RendererSpec

INSTALL = "install the ICD loader and a driver, e.g. `apt install ocl-icd-libopencl1 pocl-opencl-icd` (PoCL runs OpenCL on the CPU)"

def probe_cl(adreno_only:bool=False) -> tuple[bool, str]:
  from tinygrad.runtime import opencl_api as cl
  try: cl.lib()
  except OSError as e: return False, f"{e}: {INSTALL}"
  try: platforms = cl.platforms()
  except cl.CLError as e:
    vendors = os.environ.get("OCL_ICD_VENDORS", "/etc/OpenCL/vendors")
    return False, f"libOpenCL finds no OpenCL platform ({e}): no driver is registered in {vendors}; {INSTALL}"
  try: cl.find_devices(adreno_only)
  except Exception as e: return False, f"{e} (platforms: {', '.join(cl.platform_str(p, cl.PLATFORM_NAME) for p in platforms)})"
  return True, ""

def probe_qcom() -> tuple[bool, str]:
  # Qualcomm's OpenCL driver talks to the kgsl kernel driver: without its node there is no Adreno to find, and no library to load
  if not os.path.exists(node := os.environ.get("TG_KGSL_NODE", "/dev/kgsl-3d0")):
    return False, f"no Qualcomm Adreno GPU ({node} is missing); DEV=CL:QCOM runs the QCOM dialect on another OpenCL device"
  return probe_cl(adreno_only=True)

@hookimpl
def tg_plugin_api_version(): return (1, 1)

@hookimpl
def tg_devices():
  # CL below CPU: an OpenCL driver may be a CPU one (PoCL), so CL is the default only where CPU cannot run; QCOM above: on an Adreno
  # board the GPU is what tg is for
  return [DeviceSpec("CL", "tinygrad.runtime.ops_cl", "CLDevice", probe_cl, priority=50),
          DeviceSpec("QCOM", "tinygrad.runtime.ops_cl", "CLDevice", probe_qcom, priority=150)]

@hookimpl
def tg_renderers():
  cl, qcom = ("tinygrad.renderer.opencl", "OpenCLRenderer"), ("tinygrad.renderer.opencl", "QCOMRenderer")
  return [RendererSpec("CL", "CL", *cl, True), RendererSpec("CL", "QCOM", *qcom), RendererSpec("QCOM", "QCOM", *qcom, True),
          RendererSpec("NULL", "CL", *cl), RendererSpec("NULL", "QCOM", *qcom)]
