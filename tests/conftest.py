"""Shared test setup: a per-test time limit (our own watchdog, no pytest-timeout) and explicit plugin registration."""
import faulthandler, os, pathlib, shutil, sys, tempfile, threading
import pytest

TIMEOUT = float(os.environ.get("TEST_TIMEOUT", "300"))
# every node built and every graph rewritten in the suite is checked against the IR spec (set before tinygrad is imported)
os.environ.setdefault("SPEC", "2")
# AMD and NV run on their mock drivers (packet streams executed in python, kernels on the emulator); set before the plugins load, which
# read it once: under the mock these devices are offered only when asked for, so the default device stays CPU
os.environ.setdefault("MOCKGPU", "1")
_config, _backstop = None, None

def pytest_configure(config):
  global _config, _backstop
  config.addinivalue_line("markers", "slow: builds wheels or venvs; runs in CI (deselect with -m 'not slow')")
  config.addinivalue_line("markers", "hcq_matrix: also runs on the mock AMD and NV devices (the device fixture's AMD-MOCK, NV-MOCK)")
  _config = config
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

# the executing backends every op and kernel test runs on; a device string may carry its renderer (CPU:C)
EXEC_DEVICES = [pytest.param("CPU", id="CPU-LLVM"),
                pytest.param("CPU:C", id="CPU-C", marks=pytest.mark.skipif(not _has_cc(), reason="no C compiler (clang/gcc/cc) on PATH")),
                pytest.param("PYTHON", id="PYTHON"),
                pytest.param("AMD", id="AMD-MOCK"), pytest.param("NV", id="NV-MOCK")]
# devices only some machines have join by name (bench/gpu_check.sh: TG_TEST_DEVICES=CUDA,CUDA:PTX); the id spells ':' as '-'
EXEC_DEVICES += [pytest.param(d, id=d.replace(":", "-")) for d in os.environ.get("TG_TEST_DEVICES", "").split(",") if d]

# the mock GPUs run the emulator under a python command processor: they take the tests marked hcq_matrix (a representative subset
# of every op family, kept under ~60 s of CPU per device), the rest of the matrix runs on the host devices
MOCK_DEVICES = {"AMD", "NV"}

def pytest_collection_modifyitems(config, items):
  keep = [it for it in items if getattr(getattr(it, "callspec", None), "params", {}).get("device") not in MOCK_DEVICES
          or it.get_closest_marker("hcq_matrix") is not None]
  if len(keep) != len(items):
    config.hook.pytest_deselected(items=[it for it in items if it not in keep])
    items[:] = keep

@pytest.fixture(params=EXEC_DEVICES)
def device(request) -> str: return request.param
