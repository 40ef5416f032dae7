"""The seven wheels install alone or together into clean venvs (one site-packages), share no file, and
uninstalling a backend leaves the rest working."""
import fcntl, os, pathlib, shutil, subprocess, sys, venv, zipfile
import pytest

pytestmark = pytest.mark.slow
REPO = pathlib.Path(__file__).resolve().parent.parent
DISTS = ["tg-uop", "tg-codegen", "tg-renderers", "tg-hcq-amd", "tg-hcq-nv", "tg-tensor", "tg-onnx"]
SOURCES = [REPO / "packages" / d for d in DISTS] + [REPO / "examples" / "tg-backend-example"]

def sh(*cmd, ok=True, cwd=None) -> subprocess.CompletedProcess:
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DEV", "TG_PLUGINS_AUTOLOAD", "TG_STRICT_PLUGINS")}
  r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
  if ok: assert r.returncode == 0, f"{cmd} failed:\n{r.stdout}\n{r.stderr}"
  return r

@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> pathlib.Path:
  # one build per test run, shared by the xdist workers (they share the run id and the base temp's parent)
  run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
  root = tmp_path_factory.getbasetemp().parent / f"tg-wheels-{run_id}" if run_id else tmp_path_factory.mktemp("tg-wheels")
  root.mkdir(exist_ok=True)
  with open(root / "lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    out = root / "wheels"
    if not (root / "done").exists(): build(out, root / "src")
    (root / "done").touch()
  return out

def build(out:pathlib.Path, src:pathlib.Path):
  # build from copies: a stale build/ in the checkout would leak deleted files into the wheels
  copies = [shutil.copytree(s, src / s.name, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")) for s in SOURCES]
  sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", out, *copies)
  # third-party dependencies fetched once (pip's cache), so the venvs install with --no-index: no tg-* from any index
  sh(sys.executable, "-m", "pip", "download", "-q", "-d", out, "pluggy>=1.3", "llvmlite>=0.42")

def make_venv(path:pathlib.Path) -> pathlib.Path:
  venv.create(path, with_pip=False, clear=True)  # clean: no system site-packages; pip drives it via --python
  return path / "bin" / "python"

def pip(py, *args): return sh(sys.executable, "-m", "pip", "--python", py, "-q", *args)
def install(py, wheels, *names): return pip(py, "install", "--no-index", "--find-links", wheels, *names)

def test_no_file_in_two_wheels(wheels):
  seen: dict[str, str] = {}
  for whl in sorted(wheels.glob("tg_*.whl")):
    for f in zipfile.ZipFile(whl).namelist():
      if ".dist-info/" in f: continue
      assert f not in seen, f"{f} is shipped by both {seen[f]} and {whl.name}"
      seen[f] = whl.name
  assert "tinygrad/__init__.py" in seen and seen["tinygrad/__init__.py"].startswith("tg_tensor-")

def test_uop_alone(wheels, tmp_path):
  py = make_venv(tmp_path / "venv")
  install(py, wheels, "tg-uop")
  code = "import tinygrad.uop, importlib.util as u; print(u.find_spec('pluggy'))\n" \
         "try: import tinygrad.tensor\nexcept ModuleNotFoundError: print('no tensor')"
  r = sh(py, "-c", code, cwd=tmp_path)
  assert r.stdout.split() == ["None", "no", "tensor"]

def test_full_install_then_remove_backend(wheels, tmp_path):
  py, cwd = make_venv(tmp_path / "venv"), tmp_path
  install(py, wheels, "tg-tensor", "tg-onnx")
  doctor = sh(py, "-m", "tinygrad", cwd=cwd).stdout
  for dev in ("CPU", "PYTHON", "NULL"): assert f" {dev} " in doctor, doctor
  assert "devices (default: CPU)" in doctor and " AMD " not in doctor and "refused or failed plugins:\n  none" in doctor
  sh(py, "-c", "import tinygrad.nn.onnx, tinygrad.uop, tinygrad.device", cwd=cwd)
  r = sh(py, "-c", "from tinygrad import Tensor; print((Tensor([1,2,3])*2).sum().item())", cwd=cwd)
  assert r.stdout.strip() == "12"

  install(py, wheels, "tg-hcq-amd", "tg-backend-example")
  doctor = sh(py, "-m", "tinygrad", cwd=cwd).stdout
  assert "amd        tg-hcq-amd 0.1.0" in doctor and "example    tg-backend-example 0.1.0" in doctor and " EXAMPLE " in doctor
  amd = next(l for l in doctor.splitlines() if " AMD " in l)
  if not os.path.exists("/dev/kfd"): assert "unavailable" in amd and "/dev/kfd not found" in doctor

  pip(py, "uninstall", "-y", "tg-hcq-amd")
  doctor = sh(py, "-m", "tinygrad", cwd=cwd).stdout
  assert " AMD " not in doctor and "tg-hcq-amd" not in doctor and " CPU " in doctor
  sh(py, "-c", "import tinygrad.runtime.hooks_host, tinygrad.plugins, tinygrad.nn.onnx; from tinygrad import Device; print(Device.DEFAULT)", cwd=cwd)
  r = sh(py, "-c", "from tinygrad import Tensor; print((Tensor([1,2,3], device='EXAMPLE')*2).tolist())", cwd=cwd)
  assert r.stdout.strip() == "[2, 4, 6]"
