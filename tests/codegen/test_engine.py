"""The engine end to end: DEBUG output, the NULL device (schedules and compiles, runs nothing), and the first-light command."""
import os, shutil, subprocess, sys
from tinygrad import Tensor
from tinygrad.helpers import Context, GlobalCounters
import pytest

pytestmark = pytest.mark.hcq_matrix  # also on the mock AMD and NV devices (tests/conftest.py)

def test_debug2_prints_kernels_with_time_and_gflops(capsys, device):
  with Context(DEBUG=2): ((Tensor.ones(64, 64, device=device) + 1).sum(1)).realize()
  out = capsys.readouterr().out
  assert "r_64" in out and " us" in out and "GFLOPS" in out

def test_debug4_prints_source(capsys):
  with Context(DEBUG=4): (Tensor([1., 2.], device="CPU:C" if shutil.which("cc") else "CPU") * 3).realize()
  out = capsys.readouterr().out
  assert "E_2" in out

def test_null_device_schedules_and_compiles():
  GlobalCounters.reset()
  a = Tensor.empty(16, 16, device="NULL")
  (a @ a).relu().sum().realize()
  assert GlobalCounters.kernel_count >= 1

def test_first_light_without_c_compiler(tmp_path):
  # the README's first job on a machine with no compiler binary: CPU through llvmlite needs nothing else
  env = {**os.environ, "PATH": str(tmp_path), "CC": ""}  # nothing on PATH: the interpreter is run by its absolute path
  env.pop("DEV", None)
  code = "import shutil; assert not any(shutil.which(c) for c in ('cc', 'gcc', 'clang')); " \
         "from tinygrad import Tensor; print((Tensor([1,2,3])*2).sum().item())"
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=str(tmp_path))
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "12"

def test_cpu_c_without_compiler_names_what_it_searched(tmp_path):
  env = {**os.environ, "PATH": str(tmp_path), "CC": "", "DEV": "CPU:C", "CACHELEVEL": "0"}
  out = subprocess.run([sys.executable, "-c", "from tinygrad import Tensor; (Tensor([1,2])+1).realize()"],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path))
  assert out.returncode != 0
  assert "gcc" in out.stderr and "CPU:LLVM" in out.stderr

def test_estimates_mark_unknown_trip_counts():
  from tinygrad.codegen import get_program
  from tinygrad.renderer.cstyle import ClangRenderer
  from tinygrad.uop.ops import UOp, KernelInfo
  from tinygrad.dtype import dtypes, AddrSpace
  from tinygrad.helpers import Context
  out = UOp.param(0, dtypes.int, (8,))
  r = UOp.range(8, 0)
  with Context(NOOPT=1): bounded = get_program(out[r].store(r.cast(dtypes.int) * 2).end(r).sink(arg=KernelInfo(name="k")), ClangRenderer())  # a loop, not unrolled
  assert bounded.exact and bounded.ops >= 8 and bounded.mem == 8 * 4
  l, i = UOp.loop(0), UOp.placeholder((1,), dtypes.int, 0, addrspace=AddrSpace.REG)
  i = i.after(i[0].store(0))
  inc = i.after(l)[0].load() + 1
  i = i.after(i[0].store(inc).end(l, inc < 10))
  looped = get_program(out[0].store(i[0].load()).sink(arg=KernelInfo(name="l")), ClangRenderer())
  assert not looped.exact
