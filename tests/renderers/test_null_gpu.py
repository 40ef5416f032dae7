"""NULL with the GPU renderers (DEV=NULL:CUDA, NULL:PTX, NULL:AMD): kernels render and compile for NVIDIA and AMD GPUs on a machine
without either. The kernels are the op matrix's own: its tests run on CPU-LLVM in a subprocess that records every kernel AST it
compiles (kernel_collector.py); each is then rendered for every GPU target, checked structurally, and compiled -- AMDGPU by llvmlite
(the kernel descriptor read back), PTX by ptxas and CUDA C by NVRTC or nvcc where installed, in one module per target."""
import os, pathlib, pickle, re, subprocess, sys, tempfile
import pytest
from tinygrad.uop import Ops
from tinygrad.dtype import AddrSpace
from tinygrad.codegen import get_program
from tinygrad.runtime import cuda_toolchain
from tinygrad.runtime.ptx_check import check_ptx
from tinygrad.runtime.compiler_amdgpu import read_code_object

ROOT = pathlib.Path(__file__).parents[2]
OPS = ["tests/tensor/test_math_unary.py", "tests/tensor/test_math_binary.py"]
MORE_OPS = ["tests/tensor/test_tensor_ops.py", "tests/tensor/test_movement_select.py", "tests/tensor/test_compare_misc.py",
            "tests/tensor/test_scan_sort.py", "tests/tensor/test_tensor_edge_cases.py"]
# tests on the default device (CPU): symbolic shapes (variables as kernel arguments), convolutions, layers
DEFAULT_DEVICE = ["tests/codegen/test_symbolic_shapes.py", "tests/tensor/test_conv_pool.py", "tests/tensor/test_nn_layers.py"]

def op_matrix_kernels(files:list[str], select:str|None="CPU-LLVM") -> list:
  """the kernel ASTs the tests compile (of the op matrix: its CPU-LLVM run)"""
  with tempfile.TemporaryDirectory() as d:
    env = {**os.environ, "TG_KERNELS_OUT": os.path.join(d, "kernels.pkl"), "PYTHONPATH": str(ROOT / "tests" / "renderers")}
    for var in ("DEV", "TG_PLUGINS_AUTOLOAD"): env.pop(var, None)
    args = ["-q", "-p", "no:xdist", "-p", "kernel_collector", *(["-k", select] if select else []), *files]
    p = subprocess.run([sys.executable, "-m", "pytest", *args],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    if p.returncode != 0: raise AssertionError(f"the tests that give the kernels failed:\n{p.stdout[-3000:]}")
    with open(env["TG_KERNELS_OUT"], "rb") as f: return pickle.load(f)

@pytest.fixture(scope="module")
def kernels() -> list: return op_matrix_kernels(OPS)

@pytest.fixture(scope="module")
def more_kernels() -> list: return op_matrix_kernels(MORE_OPS) + op_matrix_kernels(DEFAULT_DEVICE, select=None)

@pytest.fixture
def null(plugins):
  plugins.register("tinygrad.runtime.hooks_host", name="host", distribution="tg-renderers")
  plugins.register("tinygrad.runtime.hooks_gpu", name="gpu", distribution="tg-renderers")
  from tinygrad.device import Device
  return lambda target: Device[f"NULL:{target}"]

# *** one module per target, so one compiler run checks every kernel: names made unique, shared prelude lines once ***

def ptx_module(progs:list) -> str:
  header, bodies = None, []
  for i, p in enumerate(progs):
    head, _, body = p.src.partition(".visible .entry ")
    header = header if header is not None else head
    bodies.append(f".visible .entry {p.name}_{i}" + body[len(p.name):])
  return header + "\n".join(bodies)

def cuda_module(progs:list) -> str:
  prelude, kernels = {}, []
  for i, p in enumerate(progs):
    head, sep, body = p.src.partition('extern "C" __global__ ')
    prelude.update(dict.fromkeys(head.splitlines()))
    kernels.append(sep + body.replace(f"void {p.name}(", f"void {p.name}_{i}(", 1))
  return "\n".join(prelude) + "\n" + "\n".join(kernels)

def check_every_kernel(target:str, kernels:list, null, least:int=50):
  dev = null(target)
  progs = [get_program(k, dev.renderer) for k in kernels]
  assert len(progs) == len(kernels) > least
  if target == "AMD":
    for p in progs:
      co = read_code_object(dev.compiler.compile(p.src), p.name)
      assert co.kd.kernarg_size == 8 * p.nbufs + 4 * len(p.vars)  # a pointer per buffer, an int32 per variable
      lds = [u for u in p.uops if u.op is Ops.BUFFER and u.arg.addrspace is AddrSpace.LOCAL]
      # at least the declared LOCAL buffers: the AMDGPU backend may also move a private accumulator array into LDS (PromoteAlloca: a
      # [1 x i1] running max of a scan took 1 KB per work group); the launch reads the size from the code object, so either is correct
      assert co.kd.group_segment_size >= sum(u.dtype.itemsize * u.arg.shape[0] for u in lds)
  elif target == "PTX":
    for p in progs: assert check_ptx(p.src) == {p.name: [("u64", f"data{i}") for i in range(p.nbufs)] + [("s32", f"var_{v}") for v in p.vars]}
    if dev.compiler.ptxas is not None: dev.compiler.compile(ptx_module(progs))
  else:
    for p in progs: assert re.search(rf'^extern "C" __global__ void {p.name}\(', p.src, re.M) and p.src.count("{") == p.src.count("}")
    dev.compiler.compile(cuda_module(progs))

@pytest.mark.parametrize("target", ["PTX", "AMD"])
def test_null_compiles_op_matrix_kernels(target, kernels, null): check_every_kernel(target, kernels, null)

@pytest.mark.skipif(not cuda_toolchain.probe_cuda_c()[0], reason="no CUDA C compiler (libnvrtc or nvcc): NULL:CUDA is unavailable")
def test_null_cuda_compiles_op_matrix_kernels(kernels, null): check_every_kernel("CUDA", kernels, null)

def test_cuda_c_renders_every_op_matrix_kernel(kernels):
  # without a CUDA C compiler the rendering is still checked: every kernel renders, with balanced braces
  from tinygrad.renderer.cuda import CUDARenderer
  for k in kernels:
    p = get_program(k, CUDARenderer())
    assert p.src.count("{") == p.src.count("}") and p.src.count("(") == p.src.count(")") and f"void {p.name}(" in p.src

@pytest.mark.slow
@pytest.mark.parametrize("target", ["PTX", "AMD", "CUDA"])
def test_null_compiles_more_op_matrix_kernels(target, more_kernels, null):
  if target == "CUDA" and not cuda_toolchain.probe_cuda_c()[0]: pytest.skip("no CUDA C compiler (libnvrtc or nvcc)")
  check_every_kernel(target, more_kernels, null)

@pytest.mark.parametrize("target", ["PTX", "AMD"])
def test_tensor_programs_compile_on_null(target, null, monkeypatch):
  # DEV=NULL:<target> realizes through the NULL device: every kernel goes through the target's compiler
  from tinygrad import Tensor
  dev = null(target)
  compiled = []
  real = dev.compiler.compile
  monkeypatch.setattr(dev.compiler, "compile", lambda src: compiled.append(src) or real(src))
  monkeypatch.setattr(dev.compiler, "cachekey", None)  # past the disk cache: compile for real
  x = Tensor.ones(8, 16, device=f"NULL:{target}").contiguous()
  ((x @ x.T).relu().sum(axis=1).exp2() + x.max(axis=1).sqrt()).realize()
  marker = ".visible .entry" if target == "PTX" else "amdgpu_kernel"
  assert len(compiled) >= 2 and all(marker in s for s in compiled)

@pytest.mark.parametrize("target", ["PTX", "AMD", "CUDA"])
def test_variables_are_int32_arguments(target, null):
  # every runtime passes a Variable's value as int32: a kernel whose index math is 64-bit still takes 32 bits and widens them
  from tinygrad import Variable
  from tinygrad.codegen import get_program
  from tinygrad.uop.ops import UOp, KernelInfo
  from tinygrad.dtype import dtypes
  n = Variable("n", 1, 2**20)
  out, x = UOp.param(0, dtypes.float, (2**40,)), UOp.param(1, dtypes.float, (2**40,))
  i = UOp.range(n, 0)
  ast = out[i * 2**20].store(x[i * 2**20].load()).end(i).sink(arg=KernelInfo(name="strided", opts_to_apply=()))
  renderer = null(target).renderer if target != "CUDA" else __import__("tinygrad.renderer.cuda", fromlist=["x"]).CUDARenderer()
  src = get_program(ast, renderer).src
  want = {"PTX": [".param .s32 var_n", "cvt.s64.s32"], "AMD": ["i32 %var.n", "sext i32 %var.n to i64"], "CUDA": ["const int n"]}[target]
  assert all(w in src for w in want), src
  if target == "AMD": assert read_code_object(null("AMD").compiler.compile(src), "strided").kd.kernarg_size == 8 * 2 + 4

@pytest.mark.parametrize("target", ["PTX", "AMD", "CUDA"])
def test_grouped_and_padded_kernels_compile(target, null):
  # GROUP/GROUPTOP (LOCAL buffers, barriers) and PADTO (gated loads, stores as branches), the opt lists the PYTHON and CL tests run
  if target == "CUDA" and not cuda_toolchain.probe_cuda_c()[0]: pytest.skip("no CUDA C compiler (libnvrtc or nvcc)")
  sys.path.insert(0, str(ROOT / "tests" / "codegen"))
  from test_gpu_opts import GROUP_CASES
  from tinygrad.codegen.opt import apply_opts
  kernels = [apply_opts(k[0][0], opts) for k, opts in GROUP_CASES]
  assert all(any(u.op is Ops.BARRIER for u in get_program(k, null(target).renderer).uops) for k in kernels)
  check_every_kernel(target, kernels, null, least=len(kernels) - 1)
