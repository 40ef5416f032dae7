"""conftest.py's own time limit: a hung test is named, every thread's stack is dumped, and the run ends."""
import os, pathlib, shutil, subprocess, sys, time
import pytest

@pytest.mark.parametrize("xdist", [[], ["-n", "1"]])
def test_hung_test_is_killed(tmp_path, xdist):
  shutil.copy(pathlib.Path(__file__).parent / "conftest.py", tmp_path / "conftest.py")
  (tmp_path / "test_hang.py").write_text("import time\ndef test_hang(): time.sleep(60)\n")
  start = time.monotonic()
  r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *xdist, str(tmp_path)], capture_output=True, text=True,
                     cwd=tmp_path, env={k: v for k, v in os.environ.items() if k != "TG_TEST_TIMEOUT_DIR"} | {"TEST_TIMEOUT": "2"}, timeout=120)
  out = r.stdout + r.stderr
  assert r.returncode != 0 and time.monotonic() - start < 40, out
  assert "test_hang.py::test_hang exceeded TEST_TIMEOUT=2s; stacks of all threads" in out, out
  assert 'test_hang.py", line 2 in test_hang' in out, out  # the stack dump
