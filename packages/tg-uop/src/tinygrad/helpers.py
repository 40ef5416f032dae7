from __future__ import annotations
import os, sys, gc, re, time, string, pickle, pathlib, functools, itertools, operator, contextlib, collections
from typing import Any, Callable, ClassVar, Iterable, Sequence, TypeVar

T = TypeVar("T")
OSX, WIN = sys.platform == "darwin", sys.platform == "win32"

# *** env and context ***

@functools.cache
def getenv(key:str, default=0):
  """the env var `key` converted to the type of `default` (cached: read once per process)"""
  if (v := os.getenv(key)) is None: return default
  if isinstance(default, bool): return v.lower() not in ("", "0", "false", "no")  # bool("0") would be True
  try: return type(default)(v)
  except ValueError: raise ValueError(f"environment variable {key}={v!r}: expected {type(default).__name__}") from None

_snapshot_count = itertools.count()

class ContextVar:
  """a named global knob: initial value from the env, temporarily overridable with Context"""
  _cache: ClassVar[dict[str, ContextVar]] = {}
  # bumped by every write of any value (and every new ContextVar): snapshot() rebuilds only after one
  _version: ClassVar[int] = 0
  _snapshot: ClassVar[tuple[int, tuple, int]] = (-1, (), -1)
  _snapshot_ids: ClassVar[dict[tuple, int]] = {}  # snapshot -> its number (snapshot_id)
  def __init__(self, key:str, default:Any):
    if key in ContextVar._cache: raise RuntimeError(f"ContextVar {key} already exists")
    self.key, self.value = key, getenv(key, default)
    self.initial = self.value
    ContextVar._cache[key] = self
  def __setattr__(self, k:str, v:Any):
    object.__setattr__(self, k, v)
    ContextVar._version += 1
  @staticmethod
  def snapshot() -> tuple:
    """the (key, value) of every ContextVar set to other than its initial value, as one hashable tuple: the part of a cache key that says
    which knobs were set. Those at their initial value are left out: a module imported on a program's first realize makes new ones
    (_SWITCH_MODULES), and with them in, the second realize of every graph missed the schedule cache (an LSTM's gradient: seconds)"""
    if ContextVar._snapshot[0] != ContextVar._version:
      ContextVar._snapshot = (ContextVar._version, tuple((k, v.value) for k, v in ContextVar._cache.items() if v.value != v.initial), None)
    return ContextVar._snapshot[1]
  @staticmethod
  def snapshot_id() -> int:
    """a number that stands for snapshot(): equal snapshots get the same one. A cache key holds it instead of the tuple, whose hash (every
    knob's name and value, ~1 us) would be worked out again on each lookup. TypeError where a knob holds something unhashable"""
    if (s := ContextVar._snapshot)[0] == ContextVar._version and s[2] is not None: return s[2]
    snap, ids = ContextVar.snapshot(), ContextVar._snapshot_ids
    if len(ids) >= 4096: ids.clear()  # numbers are never reused (the count goes on): a dropped snapshot seen again is a new one
    ContextVar._snapshot = (ContextVar._version, snap, n := ids.setdefault(snap, next(_snapshot_count)))
    return n
  def __bool__(self): return bool(self.value)
  # compare by value so `DEBUG >= 2` and `DEBUG == 2` both do what they read like
  def __eq__(self, x): return self.value == x
  def __hash__(self): return id(self)
  def __ge__(self, x): return self.value >= x
  def __gt__(self, x): return self.value > x
  def __le__(self, x): return self.value <= x
  def __lt__(self, x): return self.value < x
  def __repr__(self): return f"ContextVar({self.key}={self.value!r})"

# the engine's switches (THREADS, PACK, FUSE_ROWS, SCACHE, FMA, TC, BEAM_CUTOFF, ...) are made by modules imported on first use, which
# `from tinygrad import Tensor` does not import (a cold start pays for them only when it realizes): a Context naming one imports them
_SWITCH_MODULES = ("tinygrad.engine.realize", "tinygrad.codegen.opt.search")
def _load_switch_modules():
  import importlib, importlib.util
  for mod in _SWITCH_MODULES:
    try:
      if importlib.util.find_spec(mod) is not None: importlib.import_module(mod)
    except ImportError: pass  # its distribution is not installed: its switches stay unknown

class Context(contextlib.ContextDecorator):
  """`with Context(DEBUG=2, BEAM=1):` sets ContextVars for the duration of the block"""
  def __init__(self, **kwargs):
    if any(k not in ContextVar._cache for k in kwargs): _load_switch_modules()
    if unknown := [k for k in kwargs if k not in ContextVar._cache]: raise KeyError(f"unknown ContextVar(s): {', '.join(unknown)}")
    self.kwargs, self.saved = kwargs, []
  def __enter__(self):
    self.saved.append({k: ContextVar._cache[k].value for k in self.kwargs})  # a stack, so one Context can be re-entered
    for k, v in self.kwargs.items(): ContextVar._cache[k].value = v
  def __exit__(self, *exc):
    for k, v in self.saved.pop().items(): ContextVar._cache[k].value = v

DEBUG, SPEC, NOOPT, BEAM, JIT = ContextVar("DEBUG", 0), ContextVar("SPEC", 0), ContextVar("NOOPT", 0), ContextVar("BEAM", 0), ContextVar("JIT", 1)
CACHELEVEL, VIZ, TRANSCENDENTAL = ContextVar("CACHELEVEL", 2), ContextVar("VIZ", 0), ContextVar("TRANSCENDENTAL", 1)
# 1 while TinyJit runs the function it captures (its first two calls): the schedules built then are replayed on every later call, so
# schedule-time work that makes kernels faster is paid once (schedule/pack.py packs smaller matmuls). A ContextVar, so the schedule
# cache keys on it: a graph scheduled both inside and outside a capture gets both schedules
JIT_CAPTURE = ContextVar("JIT_CAPTURE", 0)
# tinygrad 0.14 spells training mode `with Context(TRAINING=1):`; tg also keeps the older `Tensor.training` / `with Tensor.train():`,
# and training is on while either is set (tensor_nn.is_training)
TRAINING = ContextVar("TRAINING", 0)
# worker processes that lower and compile a schedule's new kernels (engine/realize.py; 0 or 1: none, then only compiles run beside the
# lowering). One per core, at most 8: each fork copies the process's page tables (8 bytes per 4 KB page: 100 MB for a process holding
# 50 GB). On Linux only by default: elsewhere a fork of a process with threads (the CPU pool's) is not safe (macOS) or does not exist
COMPILE_WORKERS = ContextVar("COMPILE_WORKERS", min(os.cpu_count() or 1, 8) if sys.platform == "linux" else 1)

# *** small utilities ***

def prod(x:Iterable[T]) -> T|int: return functools.reduce(operator.mul, x, 1)
def dedup(x:Iterable[T]) -> list[T]: return list(dict.fromkeys(x))  # keeps first-seen order
def flatten(l:Iterable[Iterable[T]]) -> list[T]: return list(itertools.chain.from_iterable(l))
def argsort(x:Sequence) -> list[int]: return sorted(range(len(x)), key=x.__getitem__)
def all_same(items:Sequence) -> bool: return all(x == items[0] for x in items)
_is_int = int.__instancecheck__  # isinstance(s, int) as a bound builtin: map runs it in C, with no comprehension frame per call
def all_int(t:Iterable) -> bool: return all(map(_is_int, t))
# sizes are ints or symbolic UOps (hash-consed, so one expression is one object); a UOp's == and != build comparisons instead
def sint_eq(a, b) -> bool: return a is b or (isinstance(a, int) and isinstance(b, int) and a == b)
def partition(itr:Iterable[T], fxn:Callable[[T], bool]) -> tuple[list[T], list[T]]:
  ret: tuple[list[T], list[T]] = ([], [])
  for x in itr: ret[0 if fxn(x) else 1].append(x)
  return ret
def unwrap(x:T|None) -> T:
  assert x is not None, "unwrap of None"
  return x
def merge_dicts(ds:Iterable[dict]) -> dict:
  ret = {k: v for d in ds for k, v in d.items()}
  assert all(ret[k] == v for d in ds for k, v in d.items()), f"merge_dicts with conflicting values for some keys in {ret}"
  return ret
def argfix(*x) -> tuple:
  """f(2, 3) and f((2, 3)) mean the same: the sizes as one tuple"""
  if x and isinstance(x[0], (tuple, list)):
    if len(x) != 1: raise ValueError(f"bad arguments {x}: pass one tuple or several ints")
    return tuple(x[0])
  return tuple(x)
def make_tuple(x:Any, cnt:int) -> tuple: return tuple(x) if isinstance(x, (tuple, list)) else (x,) * cnt
def polyN(x, p:list[float]):
  """p[0]*x**(n-1) + ... + p[-1] by Horner's rule, for numbers and Tensors alike"""
  return functools.reduce(lambda acc, c: acc * x + c, p, 0.0)
def _is_seq(x:Any) -> bool:
  return hasattr(x, "__len__") and hasattr(x, "__getitem__") and not isinstance(x, (str, bytes)) and getattr(x, "shape", None) != ()
def fully_flatten(l:Any) -> list:
  """the leaves of nested sequences (lists, tuples, numpy arrays), in order; a 0-d array is its value"""
  out: list = []
  stack = [iter([l])]
  while stack:
    if (x := next(stack[-1], _END)) is _END: stack.pop()
    elif _is_seq(x): stack.append(iter(x))
    else: out.append(x[()] if getattr(x, "shape", None) == () else x)
  return out
_END = object()
def get_single_element(x:Sequence[T]) -> T:
  if len(x) != 1: raise ValueError(f"expected exactly one element, got {len(x)}: {x!r:.200}")
  return x[0]
def round_up(num:int, amt:int) -> int: return (num + amt - 1) // amt * amt
def ceildiv(num, amt): return -(num // -amt)  # plain operators so it works on symbolic values too
def cdiv(x:int, y:int) -> int: return abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) if y != 0 else 0  # C division truncates toward 0
def cmod(x:int, y:int) -> int: return x - cdiv(x, y) * y  # C remainder takes the sign of x

_COLORS = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
def use_color() -> bool:
  """ANSI colours only when stdout is a terminal, and never with NO_COLOR set (no-color.org)"""
  return "NO_COLOR" not in os.environ and sys.stdout is not None and sys.stdout.isatty()
def colored(st:str, color:str|None, background=False) -> str:
  """ANSI color (when use_color()); an UPPERCASE color name selects the bright variant"""
  if color is None or not use_color(): return st
  return f"\x1b[{30 + 10*background + 60*color.isupper() + _COLORS.index(color.lower())}m{st}\x1b[0m"
def ansistrip(s:str) -> str: return re.sub(r"\x1b\[(K|.*?m)", "", s)
def ansilen(s:str) -> int: return len(ansistrip(s))
_IDENT_CHARS = frozenset(string.ascii_letters + string.digits + "_")
def to_function_name(s:str) -> str: return "".join(c if c in _IDENT_CHARS else f"{ord(c):02X}" for c in ansistrip(s))
def strip_parens(s:str) -> str:
  """drop one pair of outer parens, only if they match each other: "(a)+(b)" is left alone"""
  if not (s.startswith("(") and s.endswith(")")): return s
  depth = 0
  for i, c in enumerate(s):
    depth += (c == "(") - (c == ")")
    if depth == 0 and i != len(s) - 1: return s
  return s[1:-1]
def pluralize(st:str, cnt:int) -> str: return f"{cnt} {st}" + ("" if cnt == 1 else "s")
def temp(name:str) -> str:
  import tempfile  # on first use: tempfile pulls in random, hashlib and shutil, which a first computation does not need
  return os.path.join(tempfile.gettempdir(), name)

# *** profiling ***

class GlobalCounters:
  global_ops: ClassVar[int] = 0
  global_mem: ClassVar[int] = 0
  time_sum_s: ClassVar[float] = 0.0
  kernel_count: ClassVar[int] = 0
  mem_used: ClassVar[int] = 0  # bytes currently allocated: tracks live buffers, so reset() leaves it alone
  mem_used_per_device: ClassVar[collections.defaultdict[str, int]] = collections.defaultdict(int)  # mem_used split by device name
  @staticmethod
  def reset(): GlobalCounters.global_ops, GlobalCounters.global_mem, GlobalCounters.time_sum_s, GlobalCounters.kernel_count = 0, 0, 0.0, 0

@contextlib.contextmanager
def gc_paused():
  """no cyclic garbage collection inside: a pass that builds a big acyclic graph would otherwise pay a collection that walks the whole
  heap every few thousand nodes (time per node growing with graph size); cycles made inside are collected after"""
  was = gc.isenabled()
  gc.disable()
  try: yield
  finally:
    if was: gc.enable()

class Timing(contextlib.ContextDecorator):
  """prints the wall time of a block in ms; on_exit(ns) may append to the message"""
  def __init__(self, prefix="", on_exit:Callable[[int], str]|None=None, enabled=True):
    self.prefix, self.on_exit, self.enabled = prefix, on_exit, enabled
  def __enter__(self): self.st = time.perf_counter_ns()
  def __exit__(self, *exc):
    self.et = time.perf_counter_ns() - self.st
    if self.enabled: print(f"{self.prefix}{self.et*1e-6:6.2f} ms" + (self.on_exit(self.et) if self.on_exit else ""))

# *** disk cache: sqlite with pickled values. It is only a cache, so no db problem may ever raise ***

CACHEDB_VERSION = 1  # bump when pickled formats change: old tables are then ignored
_CORRUPT_CODES = (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB: the only errors that mean the file must go
_BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED
_dbs: dict[tuple[int, str], tuple[sqlite3.Connection, set[str]]] = {}  # (pid, path) -> (connection, tables known to exist)

def cache_dir() -> pathlib.Path:
  return pathlib.Path(os.getenv("XDG_CACHE_HOME") or os.path.expanduser("~/Library/Caches" if OSX else "~/.cache")) / "tinygrad"
def _db_path() -> str: return os.getenv("CACHEDB") or str(cache_dir() / "cache.db")  # read live so tests can point it elsewhere

def _drop_db(path:str):
  if (db := _dbs.pop((os.getpid(), path), None)) is not None: db[0].close()
  for p in (path, path + "-wal", path + "-shm"): pathlib.Path(p).unlink(missing_ok=True)

def _db_run(table:str, fn:Callable[[sqlite3.Connection, str], T]) -> T|None:
  if CACHELEVEL.value == 0: return None
  import sqlite3  # on first use: with the cache off, a process never loads it
  path, tbl, rebuilt, err = _db_path(), f"{to_function_name(table)}_v{CACHEDB_VERSION}", False, None
  for attempt in range(8):
    try:
      if (db := _dbs.get(key := (os.getpid(), path))) is None:  # keyed by pid: a connection must not cross a fork
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)  # autocommit; wait out other writers
        conn.execute("PRAGMA journal_mode=WAL")  # readers and the writer of other processes don't block each other
        db = _dbs[key] = (conn, set())
      if tbl not in db[1]:
        db[0].execute(f'CREATE TABLE IF NOT EXISTS "{tbl}" (key TEXT PRIMARY KEY, val BLOB)')
        db[1].add(tbl)
      return fn(db[0], tbl)
    except sqlite3.DatabaseError as e:
      err, code = e, getattr(e, "sqlite_errorcode", 0) & 0xff
      if code in _CORRUPT_CODES and not rebuilt: _drop_db(path); rebuilt = True  # rebuild from scratch and retry
      # a BUSY that skipped the timeout is sqlite's deadlock avoidance (two readers upgrading, mostly while setting up a fresh db): back off, retry
      elif code in _BUSY_CODES: time.sleep(0.002 * 2**attempt)
      else: break
    except OSError as e:  # unwritable cache dir and friends
      err = e
      break
  if DEBUG >= 1: print(f"diskcache: skipping {table}: {err!r}")
  return None

def _key(key) -> str: return key if isinstance(key, str) else repr(sorted(key.items()) if isinstance(key, dict) else key)

def diskcache_get(table:str, key) -> Any:
  """the cached value or None; an entry that fails to unpickle is deleted"""
  def get(conn:sqlite3.Connection, tbl:str):
    if (row := conn.execute(f'SELECT val FROM "{tbl}" WHERE key=?', (k := _key(key),)).fetchone()) is None: return None
    try: return pickle.loads(row[0])
    except Exception:
      conn.execute(f'DELETE FROM "{tbl}" WHERE key=?', (k,))
      return None
  return _db_run(table, get)

def diskcache_put(table:str, key, val:T) -> T:
  blob = pickle.dumps(val)  # outside the db guard: an unpicklable value is a caller bug
  _db_run(table, lambda conn, tbl: conn.execute(f'INSERT OR REPLACE INTO "{tbl}" (key, val) VALUES (?, ?)', (_key(key), blob)))
  return val

# *** a progress bar and downloads (names tinygrad programs import from here), loaded on first use ***
def __getattr__(name:str):
  if name in ("tqdm", "trange"):
    from tinygrad import progress
    return getattr(progress, name)
  raise AttributeError(f"module 'tinygrad.helpers' has no attribute {name!r}")

def fetch(url:str, *args, **kwargs) -> pathlib.Path:
  """url's content in tinygrad's download cache (tinygrad.download.fetch, imported on first use: urllib and tarfile cost ~20 ms)"""
  from tinygrad.download import fetch as fetch_
  return fetch_(url, *args, **kwargs)
