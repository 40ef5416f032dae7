"""The host devices through their public faces: Buffer on each device, renderer choice by DEV, the compile cache, error messages."""
import pathlib
import numpy as np
import pytest
from tinygrad.uop import Ops
from tinygrad.dtype import DType, dtypes
from tinygrad.helpers import Context, GlobalCounters, getenv
from tinygrad.device import Buffer, Compiler, CompileError
from linprog import Prog, device, elementwise, run

@pytest.fixture
def host(plugins):
  plugins.register("tinygrad.runtime.hooks_host", name="host", distribution="tg-renderers")
  from tinygrad.device import Device
  return Device

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
def test_buffer_roundtrip_view_and_zero_copy(host, dev):
  used, used_here = GlobalCounters.mem_used, GlobalCounters.mem_used_per_device[dev]
  b = Buffer(dev, 8, dtypes.float32).allocate()
  assert b.is_allocated() and b.nbytes == 32 and GlobalCounters.mem_used == used + 32
  assert GlobalCounters.mem_used_per_device[dev] == used_here + 32  # tinygrad's per-device split of mem_used
  b.copyin(memoryview(np.arange(8, dtype=np.float32)).cast("B"))
  np.testing.assert_array_equal(b.numpy(), np.arange(8))
  b.as_buffer(allow_zero_copy=True).cast("f")[0] = 42  # a zero-copy view writes the device memory itself
  v = b.view(2, dtypes.int32, 8)  # bytes 8..15: elements 2 and 3, read as int32
  np.testing.assert_array_equal(np.frombuffer(v.ensure_allocated().as_buffer(), np.float32), [2, 3])
  assert b.numpy()[0] == 42
  with pytest.raises(ValueError, match="12 bytes given"): b.copyin(memoryview(bytes(12)))
  b.deallocate()
  assert not b.is_allocated() and GlobalCounters.mem_used == used and GlobalCounters.mem_used_per_device[dev] == used_here

def test_null_device(host):
  b = Buffer("NULL", 4, dtypes.int32).allocate().copyin(memoryview(np.arange(4, dtype=np.int32)).cast("B"))
  np.testing.assert_array_equal(b.numpy(), [0, 0, 0, 0])  # nothing is kept: copies out read zeros
  dev = host["NULL"]
  src = dev.renderer.render("k", elementwise(Ops.ADD, dtypes.int32, 4).uops)
  assert "void k(" in src and dev.compiler.compile(src) == b""
  assert dev.runtime("k", b"")(b._buf, wait=True) > 0

@pytest.mark.parametrize("dev_env, renderer, compiler", [(None, "LLVMRenderer", "LLVMCompiler"), ("CPU:C", "ClangRenderer", "ClangCompiler"),
                                                         ("CPU:LLVM", "LLVMRenderer", "LLVMCompiler")])
def test_dev_env_picks_cpu_renderer(host, monkeypatch, dev_env, renderer, compiler):
  if dev_env == "CPU:C" and device("C") is None: pytest.skip("no C compiler")
  if dev_env: monkeypatch.setenv("DEV", dev_env)
  cpu = host["CPU"]
  assert (type(cpu.renderer).__name__, type(cpu.compiler).__name__) == (renderer, compiler)

def test_cpu_unknown_renderer(host):
  from tinygrad.device import DeviceError
  with pytest.raises(DeviceError, match="'CPU:PTX': device CPU has no renderer 'PTX'; available: LLVM, C"): host["CPU:PTX"]

def test_no_c_compiler(monkeypatch, tmp_path):
  from tinygrad.runtime.ops_cpu import ClangCompiler
  monkeypatch.setenv("PATH", str(tmp_path))
  monkeypatch.delenv("CC", raising=False)
  with pytest.raises(CompileError, match=r"searched clang, gcc, cc .*DEV=CPU:LLVM"): ClangCompiler()
  monkeypatch.setenv("CC", "my-cc")
  with pytest.raises(CompileError, match=r"searched \$CC=my-cc, clang, gcc, cc"): ClangCompiler()

def test_compile_errors_show_the_source():
  for target, bad in [("LLVM", "define void @k( {"), ("C", "void k( {")]:
    if (dev := device(target)) is None: continue
    with pytest.raises(CompileError, match=r"(?s)k\(.*\{"): dev.compiler.compile(bad)

# *** the disk cache ***

class Counting(Compiler):
  def __init__(self, key): super().__init__(key); self.calls = 0
  def compile(self, src:str) -> bytes:
    self.calls += 1
    return src.encode()[::-1]

def test_compile_cached_hits_disk(monkeypatch, tmp_path):
  monkeypatch.setenv("CACHEDB", str(tmp_path / "cache.db"))
  c = Counting("compile_test_counting")
  assert c.compile_cached("abc") == b"cba" and c.calls == 1
  assert Counting("compile_test_counting").compile_cached("abc") == b"cba"  # a new compiler (or process) finds it on disk
  assert c.compile_cached("abc") == b"cba" and c.calls == 1
  assert c.compile_cached("abd") == b"dba" and c.calls == 2  # keyed by source
  assert Counting("compile_test_other").compile_cached("abc") == b"cba"
  with Context(CACHELEVEL=0): c.compile_cached("abc")
  assert c.calls == 3

def test_ccache_0_disables(monkeypatch):
  monkeypatch.setenv("CCACHE", "0")
  getenv.cache_clear()
  try: assert Compiler("compile_test_x").cachekey is None
  finally: getenv.cache_clear()

def test_llvm_object_cached(monkeypatch, tmp_path):
  monkeypatch.setenv("CACHEDB", str(tmp_path / "cache.db"))
  dev = device("LLVM")
  src = dev.renderer.render("k", elementwise(Ops.ADD, dtypes.float32, 4).uops)
  lib = dev.compiler.compile_cached(src)
  monkeypatch.setattr(type(dev.compiler), "compile", lambda self, src: pytest.fail("compiled again"))
  assert dev.compiler.compile_cached(src) == lib
  out = np.zeros(4, np.float32)
  bufs = [dev.allocator.alloc(16) for _ in range(3)]
  dev.allocator._copyin(bufs[1], memoryview(np.ones(4, np.float32)).cast("B"))
  assert dev.runtime("k", lib)(*bufs, wait=True) > 0
  dev.allocator._copyout(memoryview(out).cast("B"), bufs[0])
  np.testing.assert_array_equal(out, [1, 1, 1, 1])

# *** the emulator's own duties ***

def test_python_out_of_bounds_raises():
  p = Prog()
  out = p.param(0, dtypes.int32, 4)
  r = p.range(5, 0)
  p.store(out, r, r)
  p.end(r)
  with pytest.raises(IndexError, match="index 4 out of bounds of a buffer of 4"): run("PYTHON", p, np.zeros(4, np.int32))

def test_python_work_items():
  from tinygrad.uop.ops import UOp
  p = Prog()
  out = p.param(0, dtypes.int32, 8)
  g = p.add(UOp(Ops.SPECIAL, dtypes.int32, (p.const(4),), "gidx0"))
  lc = p.add(UOp(Ops.SPECIAL, dtypes.int32, (p.const(2),), "lidx0"))
  i = p.add(UOp(Ops.SPECIAL, dtypes.int32, (p.const(8),), "idx0"))
  p.store(out, p.alu(Ops.ADD, p.alu(Ops.MUL, g, 2), lc), p.alu(Ops.MUL, i, 10))
  dev = device("PYTHON")
  prg = dev.runtime("k", dev.compiler.compile(dev.renderer.render("k", p.uops)))
  buf = dev.allocator.alloc(32)
  prg(buf, global_size=(4, 1, 1), local_size=(2, 1, 1))
  assert list(buf.cast("i")) == [0, 10, 20, 30, 40, 50, 60, 70]

def test_runtime_is_a_shared_namespace():
  root = pathlib.Path(__file__).resolve().parents[2] / "packages"
  assert not list(root.glob("*/src/tinygrad/runtime/__init__.py"))

@pytest.mark.parametrize("target", ["LLVM", "C", "PYTHON"])
def test_unsupported_dtype_is_named(target):  # rendering only: no compiler needed
  from tinygrad.renderer.cstyle import ClangRenderer
  from tinygrad.renderer.llvmir import LLVMRenderer
  from tinygrad.renderer.python import PythonRenderer
  ren = {"LLVM": LLVMRenderer, "C": ClangRenderer, "PYTHON": PythonRenderer}[target]()
  int24 = DType(3, 3, "int24", None)  # no renderer has one (fp8, the last real one missing, is emulated now)
  with pytest.raises(RuntimeError, match="int24"): ren.render("k", elementwise(Ops.ADD, int24, 4).uops)

def test_device_name_selects_renderer():
  # the test matrix opens CPU (LLVM) and CPU:C side by side in one process
  from tinygrad.device import Device
  assert type(Device["CPU:C"].renderer).__name__ == "ClangRenderer"
  assert type(Device["CPU:LLVM"].renderer).__name__ == "LLVMRenderer"
