"""DESIGN §2: one `tinygrad` namespace from seven src folders (development layout). tg-uop, the base every install has, ships
tinygrad/__init__.py, so the package root and its public-name table are there whatever else is installed."""
import os, pathlib, subprocess, sys
import pytest

PACKAGES = pathlib.Path(__file__).resolve().parent.parent / "packages"

def run_with(dists:list[str], code:str) -> subprocess.CompletedProcess:
  # -S: no site-packages, so only the src folders given here are on sys.path (pluggy's folder added for tg-codegen)
  import pluggy
  path = [str(PACKAGES / d / "src") for d in dists] + [str(pathlib.Path(pluggy.__file__).parent.parent)]
  return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=120,
                        env={**os.environ, "PYTHONPATH": os.pathsep.join(path), "TG_PLUGINS_AUTOLOAD": "0"}, cwd="/")

def test_uop_without_tensor():
  code = "import tinygrad.uop, tinygrad.dtype, tinygrad.helpers\ntry: import tinygrad.device\nexcept ModuleNotFoundError: print('ok')"
  r = run_with(["tg-uop"], code)
  assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr

def test_codegen_and_renderers_without_tensor():
  code = "import tinygrad.uop, tinygrad.device, tinygrad.renderer, tinygrad.runtime.hooks_host, tinygrad.runtime.hooks_amd; " \
         "print(tinygrad.renderer.Renderer)"
  r = run_with(["tg-uop", "tg-codegen", "tg-renderers", "tg-hcq-amd"], code)
  assert r.returncode == 0 and "Renderer" in r.stdout, r.stderr

def test_uop_alone_names_the_missing_distribution():
  code = "import tinygrad\ntry: from tinygrad import Tensor\nexcept ImportError as e: print(e)\nprint(hasattr(tinygrad, 'Tensor'), tinygrad.__all__)"
  r = run_with(["tg-uop"], code)
  out = r.stdout.splitlines()
  assert r.returncode == 0 and "pip install -U tg-tensor" in out[0], r.stderr
  assert out[1].startswith("False") and "'dtypes'" in out[1] and "'Tensor'" not in out[1]

@pytest.mark.parametrize("order", ["uop first", "uop last"])
def test_all_folders_with_the_package_root(order):
  dists = sorted(p.name for p in PACKAGES.iterdir() if (p / "src").is_dir())
  dists = sorted(dists, key=lambda d: (d != "tg-uop") == (order == "uop first"))
  r = run_with(dists, "import tinygrad, tinygrad.uop, tinygrad.plugins, tinygrad.runtime.hooks_host, tinygrad.runtime.hooks_nv, tinygrad.nn.onnx, "
                      "tinygrad.onnx; print(len(tinygrad.__path__))")
  assert r.returncode == 0 and int(r.stdout) == len(dists), r.stderr

def test_every_base_module_imports_first():
  # modules of tg-uop import each other at their ends (ops <-> rewrite, upat); each must also work as the first one a program imports.
  # One process, a forked child per module (the parent has imported none of tinygrad), so each child starts from nothing
  src = PACKAGES / "tg-uop" / "src"
  mods = sorted(".".join(p.relative_to(src).with_suffix("").parts).removesuffix(".__init__") for p in src.rglob("*.py"))
  code = ("import os, sys, traceback\nbad = []\nfor m in sys.argv[1:]:\n  if (pid := os.fork()) == 0:\n"
          "    try: __import__(m)\n    except BaseException: traceback.print_exc(); os._exit(1)\n    os._exit(0)\n"
          "  if os.waitpid(pid, 0)[1] != 0: bad.append(m)\nprint(bad)")
  r = subprocess.run([sys.executable, "-c", code, *mods], capture_output=True, text=True, timeout=120, cwd="/",
                     env={**os.environ, "TG_PLUGINS_AUTOLOAD": "0"})
  assert len(mods) > 20 and r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr
