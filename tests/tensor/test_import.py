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
  code = f"import sys, json; from tinygrad import Device; Device.installed(); Device.get_available_devices(); print(json.dumps({HEAVY}))"
  assert json.loads(run(code)) == []

def test_default_opens_only_the_default_device():
  code = "import sys, json; from tinygrad import Device; Device.DEFAULT; print(json.dumps([m for m in sys.modules if m.startswith('tinygrad.runtime.ops_')]))"
  assert json.loads(run(code)) == ["tinygrad.runtime.ops_cpu"]

def test_lazy_public_names():
  import tinygrad
  from tinygrad.device import Device
  assert tinygrad.Device is Device and "Tensor" in dir(tinygrad) and dir(tinygrad).count("Device") == 1
  with pytest.raises(AttributeError, match="no attribute 'nothing'"): tinygrad.nothing

def test_missing_module_message(monkeypatch):
  import tinygrad
  monkeypatch.setitem(tinygrad._PUBLIC, "Missing", ("tinygrad.not_a_module", "tg-nowhere"))
  assert not hasattr(tinygrad, "Missing") and "Missing" not in dir(tinygrad) and "Missing" not in tinygrad.__all__
  with pytest.raises(AttributeError, match="tinygrad.not_a_module in tg-nowhere, which is not installed.*pip install -U tg-nowhere"): tinygrad.Missing
  with pytest.raises(ImportError, match="pip install -U tg-nowhere"):
    from tinygrad import Missing  # noqa: F401

def test_only_existing_names_offered():
  # TinyJit's module exists, so it is offered; a public name whose module file is absent is not, and asking names the distribution
  out = run("import tinygrad\nprint(hasattr(tinygrad, 'TinyJit'), 'TinyJit' in dir(tinygrad), tinygrad.TinyJit.__module__)\n"
            "tinygrad._PUBLIC['Later'] = ('tinygrad.engine.later', 'tg-codegen')\n"
            "print(hasattr(tinygrad, 'Later'), 'Later' in dir(tinygrad))\n"
            "try: from tinygrad import Later\nexcept ImportError as e: print(e)")
  lines = out.splitlines()
  assert lines[:2] == ["True True tinygrad.engine.jit", "False False"] and "pip install -U tg-codegen" in lines[2]

def doctor(*args, path=None, **env) -> subprocess.CompletedProcess:
  pre = "import sys; " + (f"sys.path.insert(0, {str(path)!r}); " if path else "")
  return subprocess.run([sys.executable, "-c", pre + "from tinygrad.plugins.doctor import main; raise SystemExit(main(sys.argv[1:]))", *args],
                        capture_output=True, text=True, timeout=120, env={**os.environ, **env})

def test_doctor_cli():
  r = subprocess.run([sys.executable, "-m", "tinygrad"], capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stderr
  for dev in ("CPU", "PYTHON", "NULL"): assert f" {dev} " in r.stdout
  assert "refused or failed plugins:\n  none" in r.stdout and "tg-renderers" in r.stdout

def test_doctor_help_version_and_bad_arguments():
  r = doctor("--help")
  assert r.returncode == 0 and "usage: python -m tinygrad" in r.stdout and "--json" in r.stdout and "devices (" not in r.stdout
  r = doctor("--version")
  assert r.returncode == 0 and r.stdout.splitlines()[0] == "plugin API 1.2" and "tg-codegen 0.1.0" in r.stdout.splitlines()
  r = doctor("bogus")
  assert r.returncode == 2 and "unrecognized arguments: bogus" in r.stderr and r.stdout == ""

def test_doctor_json():
  r = doctor("--json")
  info = json.loads(r.stdout)
  assert r.returncode == 0 and info["default"] == "CPU" and info["failures"] == [] and info["namespace_conflicts"] == []
  cpu = next(d for d in info["devices"] if d["name"] == "CPU")
  assert cpu["available"] and [(x["name"], x["default"]) for x in cpu["renderers"]] == [("LLVM", True), ("C", False)]
  assert {"name": "tg-codegen", "version": "0.1.0"} in info["distributions"] and any(p["name"] == "host" for p in info["plugins"])

def test_doctor_exit_status_when_no_default(tmp_path):
  r = doctor("--json", DEV="NOSUCH")
  assert r.returncode == 1 and json.loads(r.stdout)["default"] is None and "unknown device 'NOSUCH'" in json.loads(r.stdout)["default_error"]

def test_broken_installed_plugin_does_not_break_import(tmp_path):
  # a dist-info with an entry point to a module that does not exist: reported by name, the others still work
  d = tmp_path / "tg_broken-0.1.dist-info"
  d.mkdir()
  (d / "METADATA").write_text("Metadata-Version: 2.1\nName: tg-broken\nVersion: 0.1\n")
  (d / "entry_points.txt").write_text("[tinygrad]\nbroken = tg_broken_missing.hooks\n")
  out = run("import sys; sys.path.insert(0, %r); from tinygrad.plugins.doctor import report; print(report())" % str(tmp_path))
  assert "broken (tg-broken): ModuleNotFoundError: No module named 'tg_broken_missing' (raised at " in out and "devices (default: CPU)" in out
  r = doctor("--json", path=tmp_path)
  (f,) = json.loads(r.stdout)["failures"]
  assert r.returncode == 1 and f["type"] == "ModuleNotFoundError" and f["name"] == "broken" and ".py:" in f["where"]
  with pytest.raises(AssertionError, match="TG_STRICT_PLUGINS"):
    run("import sys; sys.path.insert(0, %r); from tinygrad import Device; Device.DEFAULT" % str(tmp_path), TG_STRICT_PLUGINS="1")
