"""DESIGN §2: one `tinygrad` namespace from seven src folders (development layout), with or without tg-tensor's __init__."""
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

@pytest.mark.parametrize("order", ["tensor first", "tensor last"])
def test_all_folders_with_tensor_init(order):
  dists = sorted(p.name for p in PACKAGES.iterdir() if (p / "src").is_dir())
  dists = sorted(dists, key=lambda d: (d != "tg-tensor") == (order == "tensor first"))
  r = run_with(dists, "import tinygrad, tinygrad.uop, tinygrad.plugins, tinygrad.runtime.hooks_host, tinygrad.runtime.hooks_nv, tinygrad.nn.onnx, "
                      "tinygrad.onnx; print(len(tinygrad.__path__))")
  assert r.returncode == 0 and int(r.stdout) == len(dists), r.stderr
