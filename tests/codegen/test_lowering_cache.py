"""Lowered programs on disk (codegen/lowering_cache.py): a later process takes a kernel's program from the disk cache instead of lowering
it, gets the same program, and never one lowered under other switches, another renderer or other code."""
import json, os, pathlib, subprocess, sys
import numpy as np
import pytest
from tinygrad import Tensor, Device, Variable
from tinygrad.helpers import Context
from tinygrad.schedule.rangeify import create_schedule
import tinygrad.codegen as codegen
from tinygrad.codegen import lowering_cache

PACKAGES = pathlib.Path(__file__).resolve().parents[2] / "packages"

# a program whose kernels no other test builds (the constants), with a symbolic shape: its launch grid holds a UOp
PROGRAM = """
import json, sys
import numpy as np
import tinygrad.codegen as codegen
from tinygrad import Tensor, Variable
calls = []
lower = codegen.get_program
codegen.get_program = lambda ast, ren: calls.append(1) or lower(ast, ren)
a = np.arange(48, dtype=np.float32).reshape(6, 8) / 7
x = Tensor(a)
v = Variable("n", 1, 8).bind(5)
out = {"softmax": (x * 1.375).softmax(1).numpy().tolist(), "cumsum": (x + 2.625).cumsum(1).numpy().tolist(),
       "matmul": (x @ x.T * 0.8125).relu().numpy().tolist(), "sym": (x[:, :v] * 3.1875).sum(1).numpy().tolist()}
print(json.dumps({"lowered": len(calls), "out": out}))
"""

def _run(tmp_path, **env) -> dict:
  env = {**os.environ, "CACHEDB": str(tmp_path / "cache.db"), "LCACHE": "1", "SPEC": "0", "COMPILE_WORKERS": "1", **env}
  r = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=240, env=env)
  assert r.returncode == 0, r.stderr
  return json.loads(r.stdout.splitlines()[-1])

def _numpy_out() -> dict:
  a = np.arange(48, dtype=np.float32).reshape(6, 8) / 7
  e = np.exp(a * 1.375 - (a * 1.375).max(1, keepdims=True))
  return {"softmax": e / e.sum(1, keepdims=True), "cumsum": (a + 2.625).cumsum(1), "matmul": np.maximum(a @ a.T * 0.8125, 0),
          "sym": (a[:, :5] * 3.1875).sum(1)}

def _check(out:dict):
  for k, want in _numpy_out().items(): np.testing.assert_allclose(np.array(out[k]), want, rtol=1e-5, atol=1e-5, err_msg=k)

def test_a_later_process_lowers_nothing(tmp_path):
  first, second = _run(tmp_path), _run(tmp_path)
  assert first["lowered"] >= 4 and second["lowered"] == 0
  _check(first["out"])
  assert second["out"] == first["out"]

def test_programs_lowered_in_workers_are_stored(tmp_path):
  # the first process lowers in forked workers (their programs come back as seeds); the second, in process, finds every one on disk
  first = _run(tmp_path, COMPILE_WORKERS="2")
  second = _run(tmp_path)
  assert second["lowered"] == 0 and second["out"] == first["out"]
  _check(second["out"])
  # and one whose workers would lower finds them on disk before forking any
  assert _run(tmp_path, COMPILE_WORKERS="2")["out"] == first["out"]

def test_off_switches_lower_again(tmp_path):
  _run(tmp_path)
  for env in ({"LCACHE": "0"}, {"CACHELEVEL": "0"}, {"SPEC": "1"}, {"NOOPT": "1"}):
    assert _run(tmp_path, **env)["lowered"] >= 4, env

@pytest.fixture
def disk(monkeypatch, tmp_path):
  monkeypatch.setenv("CACHEDB", str(tmp_path / "cache.db"))
  with Context(LCACHE=1, SPEC=0): yield

def _asts(t:Tensor) -> list:
  items, _ = create_schedule([t.uop])
  return [it.ast for it in items if it.kind == "kernel"]

def test_stored_program_equals_a_fresh_one(disk):
  x = Tensor.rand(12, 10).realize()
  v = Variable("m", 1, 10).bind(7)
  renderer = Device["CPU"].renderer
  for ast in _asts((x[:, :v].exp() * 0.5).sum(1)) + _asts((x @ x.T).max(0)):
    fresh = codegen.get_program(ast, renderer)
    lowering_cache.store(key := lowering_cache.lowering_key(ast, renderer, codegen._switches()), fresh)
    got = lowering_cache.load(key)
    assert got is not fresh and got.uops == ()
    for f in ("name", "src", "nbufs", "vars", "ops", "mem", "exact", "global_size", "local_size"):
      assert getattr(got, f) == getattr(fresh, f), f

def test_key_names_switches_renderer_and_ast(disk):
  ast = _asts(Tensor.rand(8, 8).realize().sum(0))[0]
  other_ast = _asts(Tensor.rand(8, 8).realize().sum(1))[0]
  llvm, c = Device["CPU"].renderer, Device["CPU:C"].renderer
  key = lowering_cache.lowering_key(ast, llvm, codegen._switches())
  assert key == lowering_cache.lowering_key(ast, llvm, codegen._switches())
  assert key != lowering_cache.lowering_key(other_ast, llvm, codegen._switches())
  assert key != lowering_cache.lowering_key(ast, c, codegen._switches())
  for switch in codegen.LOWERING_SWITCHES:
    with Context(**{switch.key: switch.value + 1}): assert lowering_cache.lowering_key(ast, llvm, codegen._switches()) != key, switch.key

def test_renderer_described_by_value():
  from tinygrad.renderer.llvmir import LLVMRenderer
  a = lowering_cache.describe_renderer(LLVMRenderer, None)
  assert " at 0x" not in a and "'vector_bytes'" in a and "Ops.ADD" in a
  # a class attribute of another value is another renderer (the memo is per process: cleared as a new process starts empty)
  class Narrower(LLVMRenderer): vector_bytes = 16
  assert lowering_cache.describe_renderer(Narrower, None) != a

def test_code_stamp_sees_a_changed_file(tmp_path):
  f = tmp_path / "renderer_of_a_third_party.py"
  f.write_text("x = 1\n")
  before = lowering_cache.code_stamp((str(f),))
  f.write_text("x = 22\n")
  lowering_cache.code_stamp.cache_clear()
  assert lowering_cache.code_stamp((str(f),)) != before

def test_memo_keys_on_every_lowering_switch():
  # SCAN changes what lowering makes of a cumsum; the in-process memo returned the SCAN=1 program under SCAN=0
  x = Tensor.rand(64, 64).realize()
  ast, renderer = _asts(x.cumsum(1))[-1], Device["CPU"].renderer
  with_scan = codegen.get_program_cached(ast, renderer).src
  with Context(SCAN=0):
    assert codegen.get_program_cached(ast, renderer).src == codegen.get_program(ast, renderer).src != with_scan

# every switch that exists is either one lowering reads (in its memos' keys) or named here with why it is not
NOT_LOWERING = {
  "DEBUG": "prints (DEBUG>=4 lowers without the disk cache)", "SPEC": "checks (and turns the disk cache off)", "JIT": "TinyJit",
  "CACHELEVEL": "the disk cache itself", "VIZ": "a viewer (turns the disk cache off)", "JIT_CAPTURE": "TinyJit", "TRAINING": "Tensor",
  "COMPILE_WORKERS": "where lowering runs", "LCACHE": "the disk cache itself", "SCACHE": "the schedule cache",
  "RING": "scheduling (in the AST)", "RING_ALLREDUCE_THRESHOLD": "scheduling", "FUSE_ROWS": "scheduling", "FUSE_ROWS_MAX": "scheduling",
  "PACK": "scheduling", "WHOLE_PANELS": "scheduling", "SPLIT_REDUCE": "scheduling",
  "BEAM_MIN_GAIN": "BEAM's search (BEAM is a lowering switch; its results have their own cache)", "BEAM_CUTOFF": "BEAM's search"}

_SWITCHES_OF_THE_PACKAGES = """
import importlib, json, pathlib, sys
from tinygrad.helpers import ContextVar
for pkg in ("tg-codegen", "tg-renderers"):
  src = pathlib.Path(sys.argv[1]) / pkg / "src"
  for p in sorted(src.rglob("*.py")):
    mod = ".".join(p.relative_to(src).with_suffix("").parts).removesuffix(".__init__")
    if mod.startswith("tinygrad.runtime.") or mod.endswith("__main__"): continue  # devices: open hardware and drivers at import
    importlib.import_module(mod)
print(json.dumps(sorted(ContextVar._cache)))
"""

def test_every_switch_is_classified():
  # in a fresh interpreter: this one holds the switches other tests made (a ContextVar of a test is no switch of the packages)
  out = subprocess.run([sys.executable, "-c", _SWITCHES_OF_THE_PACKAGES, str(PACKAGES)], capture_output=True, text=True, timeout=120)
  assert out.returncode == 0, out.stderr[-2000:]
  lowering = {v.key for v in codegen.LOWERING_SWITCHES}
  unknown = [k for k in json.loads(out.stdout) if k not in lowering and k not in NOT_LOWERING]
  assert not unknown, f"switches neither in codegen.LOWERING_SWITCHES nor in NOT_LOWERING: {unknown}"

def test_a_renderer_that_cannot_be_described_is_not_cached(disk):
  from tinygrad.renderer.llvmir import LLVMRenderer
  class NeedsMore(LLVMRenderer):
    def __init__(self, arch, extra): super().__init__(arch)  # not the plugin contract's cls(arch)
  ast = _asts(Tensor.rand(4, 4).realize().sum(0))[0]
  assert lowering_cache.lowering_key(ast, NeedsMore(None, 1), codegen._switches()) is None
  assert not codegen.load_lowered(ast, NeedsMore(None, 1))
