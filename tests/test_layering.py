"""DESIGN §2 layering: a distribution imports tinygrad modules only from itself and its tg-* dependency closure,
read from each packages/<dist>/pyproject.toml."""
import ast, pathlib, re, tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "packages"

def _norm(name:str) -> str: return re.sub(r"[-_.]+", "-", name).lower()

def allowed_closure(root:pathlib.Path) -> dict[str, set[str]]:
  deps = {}
  for pp in root.glob("*/pyproject.toml"):
    proj = tomllib.loads(pp.read_text())["project"]
    deps[_norm(proj["name"])] = {_norm(re.split(r"[\s<>=!~;\[(]", d, maxsplit=1)[0]) for d in proj.get("dependencies", [])}
  def closure(d:str, seen:set[str]) -> set[str]:
    for x in deps.get(d, set()) & deps.keys() - seen: seen.add(x); closure(x, seen)
    return seen
  return {d: closure(d, {d}) for d in deps}

def module_owners(root:pathlib.Path) -> tuple[dict[str, str], dict[pathlib.Path, tuple[str, str]]]:
  """module name -> owning distribution, and each file -> (distribution, its module name)."""
  owners, files = {}, {}
  for pp in root.glob("*/pyproject.toml"):
    dist, src = _norm(tomllib.loads(pp.read_text())["project"]["name"]), pp.parent / "src"
    for f in src.rglob("*.py"):
      parts = f.relative_to(src).with_suffix("").parts
      mod = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
      files[f] = (dist, mod)
      owners[mod] = dist
  return owners, files

def owner_of(mod:str, owners:dict[str, str]) -> str|None:
  while mod and mod != "tinygrad":
    if mod in owners: return owners[mod]
    mod = mod.rpartition(".")[0]
  return None

def imported(node:ast.AST, mod:str, is_pkg:bool) -> list[str]:
  if isinstance(node, ast.Import): return [a.name for a in node.names]
  if not isinstance(node, ast.ImportFrom): return []
  base = node.module or ""
  if node.level:  # relative: resolve against this module's package
    pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = ".".join(pkg[:len(pkg) - node.level + 1] + ([base] if base else []))
  # `from X import y` may import the submodule X.y; otherwise it reads a name from X itself
  return [f"{base}.{a.name}" for a in node.names] + [base]

def violations(root:pathlib.Path) -> list[str]:
  allowed, (owners, files) = allowed_closure(root), module_owners(root)
  out = []
  for f, (dist, mod) in sorted(files.items()):
    for node in ast.walk(ast.parse(f.read_text(), str(f))):
      names = imported(node, mod, f.name == "__init__.py")
      if isinstance(node, ast.ImportFrom): names = [n for n in names[:-1] if n in owners] or names[-1:]
      for n in names:
        if not (n == "tinygrad" or n.startswith("tinygrad.")): continue
        o = owners.get(n) if n == "tinygrad" else owner_of(n, owners)
        if o is not None and o not in allowed.get(dist, {dist}):
          out.append(f"{f.relative_to(root)}:{node.lineno}: {dist} imports {n}, owned by {o}, which is not among its dependencies")
  return out

def test_repository_layering():
  assert violations(ROOT) == []

def _pkg(root:pathlib.Path, dist:str, deps:list[str], files:dict[str, str]):
  (root / dist).mkdir()
  (root / dist / "pyproject.toml").write_text(f'[project]\nname = "{dist}"\ndependencies = {deps!r}\n'.replace("'", '"'))
  for rel, text in files.items():
    (p := root / dist / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)

def test_checker_catches_forbidden_imports(tmp_path):
  _pkg(tmp_path, "tg-uop", [], {"tinygrad/uop/ops.py": "import tinygrad.tensor\n", "tinygrad/helpers.py": "from tinygrad import Tensor\n"})
  _pkg(tmp_path, "tg-codegen", ["tg-uop>=0.1"], {"tinygrad/device.py": "from tinygrad.uop.ops import x\ndef f():\n  from .tensor import Tensor\n"})
  _pkg(tmp_path, "tg-tensor", ["tg-codegen"], {"tinygrad/__init__.py": "",
                                               "tinygrad/tensor.py": "from tinygrad.uop import ops\nfrom tinygrad.device import D\n"})
  v = violations(tmp_path)
  assert len(v) == 3, v
  assert any("tg-uop imports tinygrad.tensor, owned by tg-tensor" in x for x in v)
  assert any("tg-uop imports tinygrad, owned by tg-tensor" in x for x in v)  # `from tinygrad import Tensor` reads tg-tensor's __init__
  assert any("tg-codegen imports tinygrad.tensor" in x and ":3:" in x for x in v)  # lazy and relative imports count too
