"""Lowered programs on disk: a kernel AST lowered by one process is not lowered again by a later one (a program's second run skips the
python of lowering, ~15 passes per kernel). A program is found only under everything that decides what lowering makes of an AST:
  - the AST's content hash (UOp.key: ops, dtypes, args, opts to apply),
  - the switches lowering reads (codegen.LOWERING_SWITCHES),
  - the renderer: its classes and every field of the instance and of its classes, described by value (host facts it read at start-up:
    SIMD registers, FMA, cache sizes),
  - the code that lowers: the size and modification time of every source file of the tinygrad packages and of the renderer's classes.
A change to any of them is a miss, never a stale program. Not under BEAM (its search has its own cache), SPEC (which checks every pass's
graph), DEBUG>=4 (which prints what lowering makes) or VIZ; off with LCACHE=0 (or CACHELEVEL=0, every disk cache)."""
from __future__ import annotations
import dataclasses, functools, hashlib, inspect, os, pathlib, sys, types
from tinygrad.uop.ops import UOp
from tinygrad.helpers import ContextVar, BEAM, DEBUG, SPEC, VIZ, diskcache_get, diskcache_put

LCACHE = ContextVar("LCACHE", 1)
TABLE = "lowered_program"

def enabled() -> bool: return bool(LCACHE.value) and not BEAM.value and not SPEC.value and DEBUG.value < 4 and not VIZ.value

def load(key:str):
  """the ProgramSpec stored under key, or None"""
  return diskcache_get(TABLE, key)

def store(key:str, spec):
  """spec under key, without its uops (nothing after lowering reads them; a worker's specs come back without them too)"""
  diskcache_put(TABLE, key, dataclasses.replace(spec, uops=()))

def lowering_key(ast:UOp, renderer, switches:tuple) -> str|None:
  """the disk cache's key of ast's program, None for a renderer that cannot be described (its class wants more than arch, a field whose
  description fails): its programs are not stored"""
  cls, arch = type(renderer), getattr(renderer, "arch", None)
  try: described = describe_renderer(cls, arch)
  except Exception: return None
  return hashlib.sha256(b"\0".join([ast.key, repr(switches).encode(), described.encode(), code_stamp(_class_files(cls)).encode()])).hexdigest()

# *** what the renderer is ***

@functools.cache
def describe_renderer(cls:type, arch:str|None) -> str:
  """the renderer as its class makes it for arch (`cls(arch)`, as devices do: what an instance's render() leaves on it is its own
  scratch), by value: its classes' names and fields and the instance's (set at start-up from the host: SIMD registers, FMA, cache
  sizes); functions by where they are defined (their code is in code_stamp). Once per process and renderer"""
  classes = [c for c in cls.__mro__ if c is not object]
  fields = [(f"{c.__module__}.{c.__qualname__}", {k: v for k, v in vars(c).items() if not k.startswith("__")}) for c in classes]
  return describe([fields, vars(cls(arch))])

def describe(v, depth:int=0) -> str:
  """a deterministic text for v: no addresses, dicts and sets in a sorted order, an object by its repr where that shows no address, else
  by its public fields (a private one is a cache filled as it is used)"""
  if depth > 8: return "..."
  if v is None or isinstance(v, (bool, int, float, str, bytes)): return repr(v)
  if isinstance(v, (list, tuple)): return f"{type(v).__name__}({', '.join(describe(x, depth+1) for x in v)})"
  if isinstance(v, (set, frozenset)): return f"{{{', '.join(sorted(describe(x, depth+1) for x in v))}}}"
  if isinstance(v, dict): return f"{{{', '.join(sorted(f'{describe(k, depth+1)}: {describe(x, depth+1)}' for k, x in v.items()))}}}"
  if isinstance(v, (staticmethod, classmethod)): v = v.__func__
  if isinstance(v, property): return f"property({describe(v.fget, depth+1)})"
  if isinstance(v, functools.partial): return f"partial({describe(v.func, depth+1)}, {describe(v.args, depth+1)}, {describe(v.keywords, depth+1)})"
  if isinstance(v, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)):
    where = f"{getattr(v, '__module__', '?')}.{getattr(v, '__qualname__', '?')}"
    # a function made at run time (one per intrinsic name) differs by what it closed over
    cells = [c.cell_contents for c in (v.__closure__ or ())] if isinstance(v, types.FunctionType) else []
    return where + (f"[{describe([c for c in cells if not isinstance(c, types.FunctionType)], depth+1)}]" if cells else "")
  if type(v).__repr__ is not object.__repr__ and " at 0x" not in (r := repr(v)): return r
  state = {k: x for k, x in vars(v).items() if not k.startswith("_")} if hasattr(v, "__dict__") else {}
  state.update({k: getattr(v, k) for k in getattr(type(v), "__slots__", ()) if not k.startswith("_") and hasattr(v, k)})
  return f"{type(v).__module__}.{type(v).__qualname__}{describe(state, depth+1)}"

# *** the code that lowers ***

def _class_files(cls:type) -> tuple[str, ...]:
  """the source files of a renderer's classes (a third party's renderer lives outside the tinygrad packages)"""
  files = []
  for c in cls.__mro__:
    try: files.append(inspect.getsourcefile(c) or "")
    except TypeError: pass  # a builtin
  return tuple(sorted({f for f in files if f}))

@functools.cache
def code_stamp(extra_files:tuple[str, ...]=()) -> str:
  """size and modification time of every .py file of the tinygrad packages (every folder of the namespace, in sys.path order) and of
  extra_files, hashed: a changed, added or removed source file changes it. Worked out once per process (a process runs the code it
  imported at start-up)"""
  import tinygrad
  h = hashlib.sha256()
  for root in map(pathlib.Path, tinygrad.__path__):
    for dirpath, dirnames, filenames in os.walk(root):
      dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
      for f in sorted(filenames):
        if f.endswith(".py"): h.update(_stat_line(os.path.join(dirpath, f)))
  for f in extra_files: h.update(_stat_line(f))
  h.update(sys.version.encode())
  return h.hexdigest()

def _stat_line(path:str) -> bytes:
  try: st = os.stat(path)
  except OSError: return f"{path} missing\n".encode()
  return f"{path} {st.st_size} {st.st_mtime_ns}\n".encode()
