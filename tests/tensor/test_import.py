"""`import tinygrad` and discovery stay cheap; public names arrive lazily; `python -m tinygrad` runs the doctor."""
import json, os, subprocess, sys
import pytest

def run(code:str, **env) -> str:
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, timeout=120)
  assert r.returncode == 0, r.stderr
  return r.stdout

HEAVY = "[m for m in sys.modules if m.split('.')[0] in ('llvmlite', 'numpy') or m.startswith('tinygrad.runtime.ops_')]"

def test_import_tinygrad_is_cheap():
  assert json.loads(run(f"import sys, json, tinygrad; print(json.dumps({HEAVY}))")) == []

def test_discovery_is_cheap():
  code = f"import sys, json; from tinygrad import Device; Device.DEFAULT; Device.get_available_devices(); print(json.dumps({HEAVY}))"
  assert json.loads(run(code)) == []

def test_lazy_public_names():
  import tinygrad
  from tinygrad.device import Device
  assert tinygrad.Device is Device and "Tensor" in dir(tinygrad) and dir(tinygrad).count("Device") == 1
  with pytest.raises(AttributeError, match="no attribute 'nothing'"): tinygrad.nothing

def test_missing_module_message(monkeypatch):
  import tinygrad
  monkeypatch.setitem(tinygrad._PUBLIC, "Missing", ("tinygrad.not_a_module", "tg-nowhere"))
  with pytest.raises(ImportError, match="pip install tg-nowhere"): tinygrad.Missing

def test_doctor_cli():
  r = subprocess.run([sys.executable, "-m", "tinygrad"], capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stderr
  for dev in ("CPU", "PYTHON", "NULL"): assert f" {dev} " in r.stdout
  assert "refused or failed plugins:\n  none" in r.stdout and "tg-renderers" in r.stdout

def test_broken_installed_plugin_does_not_break_import(tmp_path):
  # a dist-info with an entry point to a module that does not exist: reported by name, the others still work
  d = tmp_path / "tg_broken-0.1.dist-info"
  d.mkdir()
  (d / "METADATA").write_text("Metadata-Version: 2.1\nName: tg-broken\nVersion: 0.1\n")
  (d / "entry_points.txt").write_text("[tinygrad]\nbroken = tg_broken_missing.hooks\n")
  out = run("import sys; sys.path.insert(0, %r); from tinygrad.plugins.doctor import report; print(report())" % str(tmp_path))
  assert "broken (tg-broken): No module named 'tg_broken_missing'" in out and "devices (default: CPU)" in out
  with pytest.raises(AssertionError, match="TG_STRICT_PLUGINS"):
    run("import sys; sys.path.insert(0, %r); from tinygrad import Device; Device.DEFAULT" % str(tmp_path), TG_STRICT_PLUGINS="1")
