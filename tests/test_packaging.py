"""The seven wheels install alone or together into clean venvs (one site-packages), share no file, and
uninstalling a backend leaves the rest working; the embedded install (no llvmlite) runs on CPU:C; a third-party renderer plugs
into CPU from its wheel; another distribution shipping into `tinygrad` (upstream tinygrad) is named by import and the doctor."""
import fcntl, json, os, pathlib, shutil, subprocess, sys, venv, zipfile
import pytest

pytestmark = pytest.mark.slow
REPO = pathlib.Path(__file__).resolve().parent.parent
DISTS = ["tg-uop", "tg-codegen", "tg-renderers", "tg-hcq-amd", "tg-hcq-nv", "tg-tensor", "tg-onnx"]
SOURCES = [REPO / "packages" / d for d in DISTS] + [REPO / "examples" / "tg-backend-example", REPO / "examples" / "tg-renderer-example"]
HAS_CC = any(shutil.which(c) for c in ("clang", "gcc", "cc"))

def sh(*cmd, ok=True, cwd=None, **env) -> subprocess.CompletedProcess:
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DEV", "TG_PLUGINS_AUTOLOAD", "TG_STRICT_PLUGINS", "CC", "MOCKGPU")} | env
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
  # a stand-in for upstream tinygrad (the local index has none): a distribution named tinygrad shipping into the namespace
  fake = src / "fake-upstream-tinygrad"
  (fake / "tinygrad" / "nn").mkdir(parents=True)
  (fake / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools>=70.1"]\nbuild-backend = "setuptools.build_meta"\n'
                                       '[project]\nname = "tinygrad"\nversion = "0.14.0"\n[tool.setuptools]\npackages = ["tinygrad", "tinygrad.nn"]\n')
  for f in ("__init__.py", "tensor.py", "nn/__init__.py", "nn/state.py"): (fake / "tinygrad" / f).write_text("import tinygrad.upstream_only\n")
  sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", out, *copies, fake)
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
  assert "tinygrad/__init__.py" in seen and seen["tinygrad/__init__.py"].startswith("tg_uop-")  # the base every install has

def test_uop_alone(wheels, tmp_path):
  py = make_venv(tmp_path / "venv")
  install(py, wheels, "tg-uop")
  code = "import tinygrad.uop, importlib.util as u; print(u.find_spec('pluggy'))\n" \
         "try: import tinygrad.tensor\nexcept ModuleNotFoundError: print('no tensor')\n" \
         "try: from tinygrad import Tensor\nexcept ImportError as e: print(e)"
  r = sh(py, "-c", code, cwd=tmp_path)
  lines = r.stdout.splitlines()
  assert lines[:2] == ["None", "no tensor"] and "pip install -U tg-tensor" in lines[2], r.stdout

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
  assert "unavailable" in amd and ("/dev/kfd not found" in doctor or "hardware needs the AMDGPU renderer" in doctor)

  pip(py, "uninstall", "-y", "tg-hcq-amd")
  doctor = sh(py, "-m", "tinygrad", cwd=cwd).stdout
  assert " AMD " not in doctor and "tg-hcq-amd" not in doctor and " CPU " in doctor
  sh(py, "-c", "import tinygrad.runtime.hooks_host, tinygrad.plugins, tinygrad.nn.onnx; from tinygrad import Device; print(Device.DEFAULT)", cwd=cwd)
  r = sh(py, "-c", "from tinygrad import Tensor; print((Tensor([1,2,3], device='EXAMPLE')*2).tolist())", cwd=cwd)
  assert r.stdout.strip() == "[2, 4, 6]"

def site_files(py) -> list[pathlib.Path]:
  site = pathlib.Path(sh(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
  return [f for f in (site / "tinygrad").rglob("*") if f.is_file() and "__pycache__" not in f.parts]

@pytest.mark.skipif(not HAS_CC, reason="no C compiler (clang/gcc/cc) on PATH")
def test_embedded_install_without_llvmlite(wheels, tmp_path):
  py = make_venv(tmp_path / "venv")
  install(py, wheels, "--no-deps", "tg-uop", "tg-codegen", "tg-renderers", "tg-tensor", "pluggy")
  files = site_files(py)
  print(f"embedded install: {len(files)} files of tg, {sum(f.stat().st_size for f in files) / 1024:.0f} KiB")
  r = sh(py, "-c", "from tinygrad import Tensor, Device; print(Device.DEFAULT, Device['CPU'].renderer.__class__.__name__, "
                   "(Tensor([1,2,3])*2).sum().item())", cwd=tmp_path)
  assert r.stdout.split() == ["CPU", "ClangRenderer", "12"] and "Warning" not in r.stderr, r.stderr
  assert sh(py, "-c", "from tinygrad import Tensor; print(Tensor([4]).item())", cwd=tmp_path, DEV="CPU:C").stdout.strip() == "4"
  doctor = sh(py, "-m", "tinygrad", cwd=tmp_path).stdout
  assert "renderers LLVM* (unavailable), C" in doctor and "renderer LLVM: llvmlite is not installed: pip install llvmlite" in doctor
  # and no C compiler either: the PYTHON emulator, with a warning that names both fixes
  r = sh(py, "-c", "from tinygrad import Tensor; print((Tensor([1,2,3])*2).sum().item())", cwd=tmp_path, PATH=str(tmp_path / "venv" / "bin"))
  assert r.stdout.strip() == "12" and "default device is PYTHON, an emulator" in r.stderr
  assert "pip install llvmlite" in r.stderr and "no C compiler found" in r.stderr and r.stderr.count("Warning") == 1

@pytest.mark.skipif(not HAS_CC, reason="no C compiler (clang/gcc/cc) on PATH")
def test_renderer_plugin_from_its_wheel(wheels, tmp_path):
  py = make_venv(tmp_path / "venv")
  install(py, wheels, "tg-tensor", "tg-renderer-example")
  assert "provides CPU:SIGNED" in sh(py, "-m", "tinygrad", cwd=tmp_path).stdout
  code = "from tinygrad import Tensor, Device, dtypes; from tinygrad.device import is_dtype_supported as s\n" \
         "print(type(Device['CPU'].renderer).__name__, (Tensor([1,2,3])*2).sum().item(), s(dtypes.fp8e4m3), s(dtypes.float32))"
  assert sh(py, "-c", code, cwd=tmp_path, DEV="CPU:SIGNED").stdout.split() == ["SignedCRenderer", "12", "False", "True"]
  assert sh(py, "-c", code, cwd=tmp_path).stdout.split() == ["LLVMRenderer", "12", "True", "True"]

def test_upstream_tinygrad_conflict_named(wheels, tmp_path):
  py = make_venv(tmp_path / "venv")
  install(py, wheels, "tinygrad==0.14.0")
  install(py, wheels, "tg-tensor")
  r = sh(py, "-c", "import tinygrad", cwd=tmp_path)
  assert "another distribution ships the `tinygrad` package beside tg: tinygrad 0.14.0" in r.stderr and "pip uninstall tinygrad" in r.stderr
  assert r.stderr.count("Warning") == 1
  r = sh(py, "-m", "tinygrad", "--json", ok=False, cwd=tmp_path)
  (c,) = json.loads(r.stdout)["namespace_conflicts"]
  assert r.returncode == 1 and (c["name"], c["version"]) == ("tinygrad", "0.14.0") and "pip uninstall tinygrad" in c["fix"]
