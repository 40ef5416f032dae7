import os, sys, math, sqlite3, subprocess, pathlib
import pytest
from tinygrad import helpers
from tinygrad.helpers import (getenv, ContextVar, Context, DEBUG, BEAM, CACHELEVEL, JIT, prod, dedup, flatten, argsort, all_same, all_int, partition,
  unwrap, merge_dicts, round_up, ceildiv, cdiv, cmod, colored, ansilen, ansistrip, to_function_name, strip_parens, pluralize, temp, cache_dir,
  diskcache_get, diskcache_put, GlobalCounters, Timing)

# *** env / context ***

def test_getenv_types(monkeypatch):
  for k, v in {"TG_T_INT": "3", "TG_T_STR": "abc", "TG_T_FLOAT": "1.5", "TG_T_BOOL": "0"}.items(): monkeypatch.setenv(k, v)
  assert getenv("TG_T_INT") == 3 and getenv("TG_T_STR", "") == "abc" and getenv("TG_T_FLOAT", 0.0) == 1.5 and getenv("TG_T_BOOL", True) is False
  assert getenv("TG_T_UNSET", 7) == 7 and getenv("TG_T_UNSET", "x") == "x"
  monkeypatch.setenv("TG_T_BADINT", "abc")
  with pytest.raises(ValueError, match="TG_T_BADINT='abc': expected int"): getenv("TG_T_BADINT", 2)

def test_defaults():
  assert (DEBUG.value, JIT.value, CACHELEVEL.value) == (int(os.getenv("DEBUG", 0)), int(os.getenv("JIT", 1)), int(os.getenv("CACHELEVEL", 2)))
  assert isinstance(helpers.SPEC.value, int) and isinstance(helpers.TRANSCENDENTAL.value, int)

def test_contextvar_compare_and_duplicate():
  v = ContextVar("TG_T_CV", 2)
  assert v >= 2 and v > 1 and v < 3 and v <= 2 and v == 2 and bool(v) and "TG_T_CV" in ContextVar._cache
  with pytest.raises(RuntimeError): ContextVar("TG_T_CV", 3)

def test_context_sets_and_restores():
  old_debug, old_beam = DEBUG.value, BEAM.value
  with Context(DEBUG=5, BEAM=2):
    assert DEBUG.value == 5 and BEAM.value == 2
    with Context(DEBUG=1): assert DEBUG.value == 1
    assert DEBUG.value == 5
  assert (DEBUG.value, BEAM.value) == (old_debug, old_beam)
  with pytest.raises(ZeroDivisionError), Context(DEBUG=7): 1/0
  assert DEBUG.value == old_debug

def test_context_decorator_and_reentry():
  old, c = BEAM.value, Context(BEAM=3)
  @c
  def f(): return BEAM.value
  with c: assert f() == 3 and BEAM.value == 3  # the same Context entered twice, nested
  assert BEAM.value == old

def test_context_unknown_key():
  with pytest.raises(KeyError, match="NOT_A_VAR"): Context(DEBUG=1, NOT_A_VAR=2)

def _fresh(code:str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)

def test_context_knows_the_engines_switches_before_it_loads():
  # `from tinygrad import Tensor` does not import the engine; a Context naming its switches imports the modules that make them
  code = ("from tinygrad import Tensor\nimport sys\nfrom tinygrad.helpers import Context\nassert 'tinygrad.engine.realize' not in sys.modules\n"
          "with Context(THREADS=1, PACK=0, FUSE_ROWS=0, SCACHE=0, FMA=0, TC=0, COMPILE_WORKERS=1, BEAM_CUTOFF=3):\n"
          "  print((Tensor([1., 2.]) * 3).tolist())")
  out = _fresh(code)
  assert out.returncode == 0 and out.stdout.strip() == "[3.0, 6.0]", out.stderr[-2000:]

def test_context_without_the_engine_installed():
  # tg-uop alone (the engine's modules blocked): its own switches work, the engine's are unknown and the error names them
  code = ("import sys\nsys.modules['tinygrad.engine'] = sys.modules['tinygrad.codegen'] = None\nfrom tinygrad.helpers import Context, DEBUG\n"
          "with Context(DEBUG=3): assert DEBUG.value == 3\n"
          "try: Context(THREADS=1)\nexcept KeyError as e: print(e)")
  out = _fresh(code)
  assert out.returncode == 0 and "unknown ContextVar(s): THREADS" in out.stdout, out.stderr[-2000:]

# *** utilities ***

def test_small_utils():
  assert prod([2, 3, 4]) == 24 and prod([]) == 1
  assert dedup([3, 1, 3, 2, 1]) == [3, 1, 2] and flatten([[1, 2], (3,), []]) == [1, 2, 3]
  assert argsort([3, 1, 2]) == [1, 2, 0] and all_same([1, 1, 1]) and not all_same([1, 2]) and all_same([])
  assert all_int((1, 2)) and not all_int((1, 2.0)) and partition(range(6), lambda x: x % 2 == 0) == ([0, 2, 4], [1, 3, 5])
  assert unwrap(0) == 0
  with pytest.raises(AssertionError): unwrap(None)
  assert merge_dicts([{"a": 1}, {"b": 2}, {"a": 1}]) == {"a": 1, "b": 2}
  with pytest.raises(AssertionError): merge_dicts([{"a": 1}, {"a": 2}])
  assert round_up(5, 4) == 8 and round_up(8, 4) == 8 and ceildiv(7, 2) == 4 and ceildiv(-7, 2) == -3 and ceildiv(6, 3) == 2
  assert pluralize("kernel", 1) == "1 kernel" and pluralize("kernel", 3) == "3 kernels"
  assert temp("x.db").endswith("x.db") and os.path.isabs(temp("x.db"))

@pytest.mark.parametrize("x", range(-9, 10))
@pytest.mark.parametrize("y", [-4, -3, -1, 1, 2, 5])
def test_cdiv_cmod_match_c(x, y):
  assert cdiv(x, y) == int(x / y) and cmod(x, y) == math.fmod(x, y) and cdiv(x, y) * y + cmod(x, y) == x

def test_cdiv_zero(): assert cdiv(5, 0) == 0

class _Terminal:
  def isatty(self): return True

def test_colors_only_on_a_terminal(monkeypatch):
  monkeypatch.delenv("NO_COLOR", raising=False)
  assert colored("hi", "red") == "hi"  # pytest captures stdout: not a terminal
  monkeypatch.setattr("sys.stdout", _Terminal())
  assert colored("hi", "red") == "\x1b[31mhi\x1b[0m"
  monkeypatch.setenv("NO_COLOR", "1")
  assert colored("hi", "red") == "hi"

def test_colors(monkeypatch):
  monkeypatch.delenv("NO_COLOR", raising=False)
  monkeypatch.setattr("sys.stdout", _Terminal())
  s = colored("hi", "red")
  assert s == "\x1b[31mhi\x1b[0m" and colored("hi", "RED") == "\x1b[91mhi\x1b[0m" and colored("hi", "green", background=True) == "\x1b[42mhi\x1b[0m"
  assert colored("hi", None) == "hi" and ansistrip(s + "!") == "hi!" and ansilen(s) == 2

def test_to_function_name(monkeypatch):
  monkeypatch.setattr("sys.stdout", _Terminal())
  assert to_function_name("r_4_4") == "r_4_4" and to_function_name(colored("E_4", "green")) == "E_4"
  assert to_function_name("a-b c") == "a2Db20c"

@pytest.mark.parametrize("s,out", [("(a+b)", "a+b"), ("(a)+(b)", "(a)+(b)"), ("((a))", "(a)"), ("a", "a"), ("()", ""), ("(a", "(a")])
def test_strip_parens(s, out): assert strip_parens(s) == out

# *** profiling ***

def test_global_counters():
  GlobalCounters.global_ops, GlobalCounters.kernel_count, GlobalCounters.mem_used = 10, 2, 100
  GlobalCounters.reset()
  assert (GlobalCounters.global_ops, GlobalCounters.global_mem, GlobalCounters.time_sum_s, GlobalCounters.kernel_count) == (0, 0, 0.0, 0)
  assert GlobalCounters.mem_used == 100  # live allocations are not a per-run counter
  GlobalCounters.mem_used = 0

def test_timing(capsys):
  with Timing("took ", on_exit=lambda ns: f" ({ns >= 0})"): pass
  out = capsys.readouterr().out
  assert out.startswith("took ") and out.rstrip().endswith("ms (True)")
  with Timing(enabled=False): pass
  assert capsys.readouterr().out == ""

# *** disk cache ***

@pytest.fixture
def db(tmp_path, monkeypatch):
  path = tmp_path / "cache.db"
  monkeypatch.setenv("CACHEDB", str(path))
  return path

def test_cache_dir(monkeypatch, tmp_path):
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
  assert cache_dir() == tmp_path / "tinygrad"

def test_diskcache_roundtrip(db):
  assert diskcache_get("t", "missing") is None
  assert diskcache_put("t", "k", {"a": [1, 2]}) == {"a": [1, 2]}
  assert diskcache_get("t", "k") == {"a": [1, 2]} and diskcache_get("other table!", "k") is None
  diskcache_put("t", "k", 5)
  assert diskcache_get("t", "k") == 5
  diskcache_put("t", {"b": 1, "a": 2}, "dict key")
  assert diskcache_get("t", {"a": 2, "b": 1}) == "dict key"  # dict keys don't depend on insertion order
  diskcache_put("t", (1, "x"), 3.5)
  assert diskcache_get("t", (1, "x")) == 3.5
  assert db.exists()

def test_diskcache_disabled(db):
  with Context(CACHELEVEL=0):
    diskcache_put("t", "k", 1)
    assert diskcache_get("t", "k") is None
  assert not db.exists()

def test_diskcache_corrupted_entry(db):
  diskcache_put("t", "k", 1)
  tbl = f"t_v{helpers.CACHEDB_VERSION}"
  with sqlite3.connect(db) as conn: conn.execute(f'UPDATE "{tbl}" SET val=? WHERE key=?', (b"\x80\x04garbage", "k"))
  assert diskcache_get("t", "k") is None
  with sqlite3.connect(db) as conn: assert conn.execute(f'SELECT COUNT(*) FROM "{tbl}"').fetchone()[0] == 0  # dropped
  diskcache_put("t", "k", 2)
  assert diskcache_get("t", "k") == 2

def test_diskcache_corrupted_file(db):
  db.write_bytes(os.urandom(64) + b"garbage" * 1000)
  assert diskcache_get("t", "k") is None
  diskcache_put("t", "k", [1, 2, 3])
  assert diskcache_get("t", "k") == [1, 2, 3]
  with sqlite3.connect(db) as conn: assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"  # rebuilt as a real db

def test_diskcache_file_corrupted_while_open(db):
  diskcache_put("t", "k", 1)
  key = (os.getpid(), str(db))
  helpers._dbs[key][0].execute("PRAGMA wal_checkpoint(TRUNCATE)")  # get the data out of the wal into the main file
  db.write_bytes(b"\xff" * 8192)
  diskcache_get("t", "k")  # an open connection may still serve cached pages, but must not raise
  helpers._dbs.pop(key)[0].close()  # a fresh connection, as another process would open, sees the garbage and rebuilds
  assert diskcache_get("t", "k") is None
  diskcache_put("t", "k", 3)
  assert diskcache_get("t", "k") == 3

def test_diskcache_unwritable_dir(monkeypatch, tmp_path):
  (blocker := tmp_path / "file").write_text("x")
  monkeypatch.setenv("CACHEDB", str(blocker / "sub" / "cache.db"))  # a file where a directory should be
  assert diskcache_put("t", "k", 1) == 1 and diskcache_get("t", "k") is None

WRITER = """
import sys
from tinygrad.helpers import diskcache_put, diskcache_get
name = sys.argv[1]
for i in range(300):
  diskcache_put("conc", f"{name}-{i}", (name, i))
  diskcache_put("conc", "shared", (name, i))
  assert diskcache_get("conc", f"{name}-{i}") == (name, i)
"""

def test_diskcache_two_processes(db):
  env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in [str(pathlib.Path(helpers.__file__).parents[1]), os.environ.get("PYTHONPATH")] if p)}
  procs = [subprocess.Popen([sys.executable, "-c", WRITER, name], env=env, stderr=subprocess.PIPE) for name in ("a", "b")]
  for p in procs: assert p.wait(timeout=120) == 0, p.stderr.read().decode()
  for name in ("a", "b"): assert all(diskcache_get("conc", f"{name}-{i}") == (name, i) for i in range(300))
  assert diskcache_get("conc", "shared") in (("a", 299), ("b", 299))
