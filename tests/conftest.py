"""Shared test setup: a per-test time limit (our own watchdog, no pytest-timeout) and explicit plugin registration."""
import faulthandler, os, pathlib, shutil, sys, tempfile, threading
import pytest

TIMEOUT = float(os.environ.get("TEST_TIMEOUT", "300"))
# every node built and every graph rewritten in the suite is checked against the IR spec (set before tinygrad is imported)
os.environ.setdefault("SPEC", "2")
# programs are lowered, not taken from the disk cache of an earlier run (tests monkeypatch lowering; tests of that cache turn it on)
os.environ.setdefault("LCACHE", "0")
# AMD and NV run on their mock drivers (packet streams executed in python, kernels on the emulator); set before the plugins load, which
# read it once: under the mock these devices are offered only when asked for, so the default device stays CPU
os.environ.setdefault("MOCKGPU", "1")
_config, _backstop = None, None

def pytest_configure(config):
  global _config, _backstop
  config.addinivalue_line("markers", "slow: builds wheels or venvs; runs in CI (deselect with -m 'not slow')")
  config.addinivalue_line("markers", "hcq_matrix: also runs on the mock AMD and NV devices (the device fixture's AMD-MOCK, NV-MOCK)")
  config.addinivalue_line("markers", "cl_subset: the op matrix tests that run on CL by default (conftest.CL_SUBSET; TG_CL_MATRIX=full runs all)")
  _config = config
  # PoCL's kernel cache is not safe across processes (two workers building one kernel abort in pocl_binary.c): one per xdist worker,
  # kept between runs. Set before anything loads libOpenCL.
  if hasattr(config, "workerinput") and "POCL_CACHE_DIR" not in os.environ:
    cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache")
    os.environ["POCL_CACHE_DIR"] = str(cache / "pocl" / f"tg-tests-{config.workerinput['workerid']}")
  # stack dumps go to files in one folder: an xdist worker's stderr is not shown, so the controller prints them at the end
  if not hasattr(config, "workerinput"): os.environ["TG_TEST_TIMEOUT_DIR"] = tempfile.mkdtemp(prefix="tg-timeouts-")
  _backstop = open(pathlib.Path(os.environ["TG_TEST_TIMEOUT_DIR"]) / f"backstop-{os.getpid()}.txt", "w")

def pytest_terminal_summary(terminalreporter):
  for f in sorted(pathlib.Path(os.environ.get("TG_TEST_TIMEOUT_DIR", "/nonexistent")).glob("*.txt")):
    if text := f.read_text(): terminalreporter.write_sep("=", f"test time limit ({f.name})"); terminalreporter.write(text)

def pytest_unconfigure(config):
  _backstop.close()
  if not hasattr(config, "workerinput"): shutil.rmtree(os.environ.pop("TG_TEST_TIMEOUT_DIR"), ignore_errors=True)

def _expire(nodeid:str, done:threading.Event):
  # a hung test must not hang CI: name it, dump every thread's stack, and end this (xdist worker) process
  if done.wait(TIMEOUT): return
  path = pathlib.Path(os.environ["TG_TEST_TIMEOUT_DIR"]) / f"timeout-{os.getpid()}.txt"
  with open(path, "w") as f:
    f.write(f"*** {nodeid} exceeded TEST_TIMEOUT={TIMEOUT:g}s; stacks of all threads:\n")
    f.flush()
    faulthandler.dump_traceback(file=f, all_threads=True)
  if (capman := _config.pluginmanager.getplugin("capturemanager")) is not None: capman.suspend_global_capture(in_=False)  # back to the terminal
  sys.__stderr__.write(path.read_text())
  sys.__stderr__.flush()
  os._exit(70)

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
  done = threading.Event()
  threading.Thread(target=_expire, args=(item.nodeid, done), daemon=True, name="test-watchdog").start()
  # backstop when the watchdog thread cannot run (a C call holding the GIL): faulthandler's own thread dumps and exits
  faulthandler.dump_traceback_later(TIMEOUT + 30, exit=True, file=_backstop)
  try: yield
  finally:
    done.set()
    faulthandler.cancel_dump_traceback_later()

@pytest.fixture
def plugins(monkeypatch):
  """No entry-point autoload: the test registers exactly the plugins it wants with plugins.register(...)."""
  import tinygrad.plugins as p
  monkeypatch.setenv("TG_PLUGINS_AUTOLOAD", "0")
  for var in ("DEV", "TG_STRICT_PLUGINS", "MOCKGPU"): monkeypatch.delenv(var, raising=False)
  p.reset()
  yield p
  p.reset()

def _has_cc() -> bool: return any(shutil.which(c) for c in (os.environ.get("CC", ""), "clang", "gcc", "cc") if c)

# the executing backends every op and kernel test runs on; a device string may carry its renderer (CPU:C). CL runs on whatever OpenCL
# driver is installed (PoCL in CI); CL:QCOM runs the Adreno dialect there too
EXEC_DEVICES = [pytest.param("CPU", id="CPU-LLVM"),
                pytest.param("CPU:C", id="CPU-C", marks=pytest.mark.skipif(not _has_cc(), reason="no C compiler (clang/gcc/cc) on PATH")),
                pytest.param("PYTHON", id="PYTHON"),
                pytest.param("CL", id="CL"),
                pytest.param("CL:QCOM", id="CL-QCOM"),
                pytest.param("AMD", id="AMD-MOCK"), pytest.param("NV", id="NV-MOCK")]
# devices only some machines have join by name (bench/gpu_check.sh: TG_TEST_DEVICES=CUDA,CUDA:PTX); the id spells ':' as '-'
EXEC_DEVICES += [pytest.param(d, id=d.replace(":", "-")) for d in os.environ.get("TG_TEST_DEVICES", "").split(",") if d]

# the mock GPUs run the emulator under a python command processor: they take the tests marked hcq_matrix (a representative subset
# of every op family, kept under ~60 s of CPU per device), the rest of the matrix runs on the host devices
MOCK_DEVICES = {"AMD", "NV"}

# A CL test costs a driver compile per new kernel (PoCL: ~0.3 s of CPU each, cached on disk after), the whole op matrix on CL minutes of
# CPU on a fresh machine. So the CL column runs this representative subset (marked cl_subset), and TG_CL_MATRIX=full runs all of it;
# CL:QCOM always runs its own subset: its dialect has no double (and on PoCL no half), which many tests use. {file: test names}
CL_SUBSET = {
  "test_tensor_ops": "test_from_list test_numpy_roundtrip test_binary test_unary test_where test_casts test_bitcast test_reshape_expand_permute "
                     "test_shrink_flip_pad test_getitem test_reduce test_matmul test_softmax_family test_threefry_known_answers test_to_device "
                     "test_double_and_int_to_narrow_floats test_bitcast_bytes_to_bool test_float_to_int_out_of_range",
  "test_tensor_edge_cases": "test_nan test_int_division_never_traps", "test_math_unary": "test_unary_float",
  "test_math_binary": "test_float_pow", "test_movement_select": "test_gather test_advanced_getitem_devices", "test_scan_sort": "test_scans",
  "test_compare_misc": "test_comparisons_with_nan_are_false", "test_assign": "test_assign_through_a_view",
  "test_jit": "test_replay_matches_numpy_with_assign_state", "test_pickle": "test_realized_and_lazy_tensors_round_trip",
  "test_custom_kernel": "test_do_while_loops test_custom_elementwise_kernel", "test_engine": "test_debug2_prints_kernels_with_time_and_gflops",
  "test_transcendental": "test_same_bits_as_emulator[CL-float32-sin] test_same_bits_as_emulator[CL-float64-exp2]",
  "test_true_division": "test_quotient_is_rounded_once"}
QCOM_SUBSET = {
  "test_tensor_ops": "test_comparisons test_where test_arg_any_all", "test_movement_select": "test_masked_fill_and_select",
  "test_math_binary": "test_bitwise_and_shifts", "test_custom_kernel": "test_custom_elementwise_kernel",
  "test_transcendental": "test_same_bits_as_emulator[CL-QCOM-float32-sin]"}

def _in_subset(item, table:dict[str, str]) -> bool:
  names = table.get(item.path.stem, "").split()
  return item.originalname in names or item.name in names

def pytest_collection_modifyitems(config, items):
  full, keep, dropped = os.environ.get("TG_CL_MATRIX", "") == "full", [], []
  for item in items:
    dev = item.callspec.params.get("device") if hasattr(item, "callspec") else None
    if dev is not None and dev.split(":")[0] in MOCK_DEVICES and item.get_closest_marker("hcq_matrix") is None:
      dropped.append(item)
      continue
    if dev in ("CL", "CL:QCOM"):
      if _in_subset(item, CL_SUBSET if dev == "CL" else QCOM_SUBSET): item.add_marker("cl_subset")
      elif dev == "CL:QCOM" or not full:
        dropped.append(item)
        continue
    keep.append(item)
  if dropped:
    config.hook.pytest_deselected(items=dropped)
    items[:] = keep

_cl_probe: tuple[bool, str]|None = None
def require_cl():
  """skip when no OpenCL device can run, with the probe's reason; fail instead under TG_REQUIRE_CL=1 (CI after installing PoCL)"""
  global _cl_probe
  if _cl_probe is None:
    from tinygrad.plugins.discovery import Registry
    _cl_probe = Registry(autoload=True).probe("CL")  # a registry of its own: tests that reset the global one do not matter
  if not _cl_probe[0]:
    if os.environ.get("TG_REQUIRE_CL", "") not in ("", "0"): pytest.fail(f"TG_REQUIRE_CL is set but CL is unavailable: {_cl_probe[1]}")
    pytest.skip(f"CL unavailable: {_cl_probe[1]}")

@pytest.fixture
def cl():
  """for tests that run on the CL device: skips (or fails, under TG_REQUIRE_CL=1) when no OpenCL device can run"""
  require_cl()

@pytest.fixture(params=EXEC_DEVICES)
def device(request) -> str:
  if request.param.split(":")[0] == "CL": require_cl()
  return request.param
