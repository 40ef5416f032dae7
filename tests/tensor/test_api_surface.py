"""docs/api-coverage.md against upstream tinygrad 0.14.0's Tensor API (docs/upstream-tensor-api-0.14.json: every public name and its
parameters, read with inspect.signature) and against our Tensor: nothing missing or different goes unlisted."""
import inspect, json, pathlib, re
import pytest
from tinygrad import Tensor

DOCS = pathlib.Path(__file__).parents[2] / "docs"
UPSTREAM = json.loads((DOCS / "upstream-tensor-api-0.14.json").read_text())
STATUS = dict(re.findall(r"^\| `([^`]+)` \| (.+?) \|$", (DOCS / "api-coverage.md").read_text(), re.M))

def _params(sig:str) -> list[str]:
  """upstream's named parameters, from the dump's '(self, x, kw:y=1, *args, **kwargs)' form"""
  inner, parts, depth, cur = sig[sig.index("(")+1:sig.rindex(")")], [], 0, ""
  for ch in inner + ",":  # split at top-level commas only: defaults such as (2, 2) hold commas too
    if ch == "," and depth == 0: parts, cur = parts + [cur.strip()], ""
    else: depth, cur = depth + (ch in "([{") - (ch in ")]}"), cur + ch
  return [p.split("=")[0].removeprefix("kw:") for p in parts if p and not p.startswith("*") and p not in ("self", "cls")]

def _ours(name:str) -> inspect.Signature|None:
  obj = inspect.getattr_static(Tensor, name)
  fn = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
  try: return inspect.signature(fn)
  except (TypeError, ValueError): return None

def test_every_upstream_name_is_listed():
  assert not (unlisted := sorted(set(UPSTREAM) - set(STATUS))), f"add these to docs/api-coverage.md: {unlisted}"

@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_status_is_true(name):
  status, here = STATUS[name], hasattr(Tensor([1.0]), name)  # an instance: grad is an attribute every tensor has
  assert status.startswith("here") == here, f"{name}: the page says {status!r}, but hasattr is {here}"
  if not here: assert status.startswith("missing: "), f"{name}: a missing name needs its reason on the page"
  if status != "here" or not UPSTREAM[name].startswith(("(", "static (", "class (")) or (sig := _ours(name)) is None: return
  takes_any = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
  lacking = [p for p in _params(UPSTREAM[name]) if p not in sig.parameters and not takes_any]
  assert not lacking, f"{name} lacks upstream's parameters {lacking} (upstream {UPSTREAM[name]}, ours {sig}): add them or say 'here, differs: ...'"
