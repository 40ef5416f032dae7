"""tg-renderers plugin: NVIDIA and AMD GPU targets. The CUDA device (driver through ctypes) with its CUDA C and PTX renderers, and
NULL with the CUDA C, PTX and AMDGPU renderers, so kernels for each target render and compile on machines without the GPU
(DEV=NULL:CUDA, NULL:PTX, NULL:AMD). Names and cheap probes only: nothing here loads a library."""
from tinygrad.plugins import hookimpl, DeviceSpec, RendererSpec
from tinygrad.runtime.cuda_toolchain import probe_libcuda, probe_cuda_c
from tinygrad.runtime.host_toolchain import probe_llvmlite

@hookimpl
def tg_plugin_api_version(): return (1, 1)

@hookimpl
def tg_devices(): return [DeviceSpec("CUDA", "tinygrad.runtime.ops_cuda", "CUDADevice", probe_libcuda, priority=150)]

@hookimpl
def tg_renderers():
  cuda_c, ptx = ("tinygrad.renderer.cuda", "CUDARenderer"), ("tinygrad.renderer.ptx", "PTXRenderer")
  amd = ("tinygrad.renderer.amdgpu", "AMDGPURenderer")
  nvcc, ptxc = "tinygrad.runtime.compiler_cuda:CUDACompiler", "tinygrad.runtime.compiler_cuda:PTXCompiler"
  return [RendererSpec("CUDA", "CUDA", *cuda_c, True, nvcc, probe_cuda_c), RendererSpec("CUDA", "PTX", *ptx, False, ptxc),
          RendererSpec("NULL", "CUDA", *cuda_c, False, nvcc, probe_cuda_c), RendererSpec("NULL", "PTX", *ptx, False, ptxc),
          RendererSpec("NULL", "AMD", *amd, False, "tinygrad.runtime.compiler_amdgpu:AMDGPUCompiler", probe_llvmlite)]
