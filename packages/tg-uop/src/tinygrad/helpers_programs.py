"""Helpers tinygrad 0.14 programs import from tinygrad.helpers besides the core: fetch (a download kept in the cache, returned as a
path) and tqdm/trange (a progress line on stderr). Heavy modules (urllib, hashlib, tarfile) load on first use."""
from __future__ import annotations
import os, sys, time, pathlib
from typing import Generic, Iterable, Iterator, TypeVar

T = TypeVar("T")

def fetch(url:str, name:pathlib.Path|str|None=None, subdir:str|None=None, gunzip:bool=False, allow_caching:bool=True,
          headers:dict[str, str]|None=None, sha256:str|None=None, extract:bool=False) -> pathlib.Path:
  """the file at url (any scheme urllib opens), downloaded once into <cache_dir>/downloads[/subdir]/name (default name: a hash of the
  url) and its path returned; allow_caching=False downloads again. gunzip decompresses; sha256 checks the bytes kept (ValueError on a
  mismatch, and nothing is kept); extract unpacks a tar archive into a directory of that name and returns the directory"""
  import hashlib, urllib.request
  from tinygrad.helpers import cache_dir
  if name is not None and pathlib.Path(name).is_absolute(): path = pathlib.Path(name)
  else:
    folder = cache_dir() / "downloads" / (subdir or "")
    path = folder / (str(name) if name is not None else hashlib.md5(url.encode() + (b"gunzip" if gunzip else b"")).hexdigest())
  if path.exists() and allow_caching: return path
  with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as r: data = r.read()
  if gunzip:
    import gzip
    data = gzip.decompress(data)
  if sha256 is not None and (got := hashlib.sha256(data).hexdigest()) != sha256.lower():
    raise ValueError(f"fetch {url}: sha256 is {got}, expected {sha256}")
  path.parent.mkdir(parents=True, exist_ok=True)
  if extract: return _extract_tar(data, path, url)
  tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # written whole, then renamed: a reader never sees half a file
  tmp.write_bytes(data)
  os.replace(tmp, path)
  return path

def _extract_tar(data:bytes, path:pathlib.Path, url:str) -> pathlib.Path:
  import io, tarfile
  with tarfile.open(fileobj=io.BytesIO(data)) as tar:
    for m in tar.getmembers():  # members stay inside the directory: no absolute paths, no '..', no links
      if not (m.isfile() or m.isdir()) or m.name.startswith("/") or ".." in pathlib.PurePosixPath(m.name).parts:
        raise ValueError(f"fetch {url}: tar member {m.name!r} is a link or leaves the extraction directory")
    tar.extractall(path, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))  # python's own checks too, where it has them
  return path

class tqdm(Generic[T]):
  """a progress line on stderr for an iterable (or a total advanced by update()): desc, percent, count, elapsed time and rate, redrawn
  at most `rate` times a second and once at the end. disable=None turns it off when stderr is not a terminal"""
  def __init__(self, iterable:Iterable[T]|None=None, desc:str="", disable:bool|None=False, unit:str="it", unit_scale=False,
               total:int|None=None, rate:int=100):
    self.iterable, self.desc, self.unit, self.unit_scale = iterable, desc, unit, unit_scale
    self.disable = (not sys.stderr.isatty()) if disable is None else disable
    self.t = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)  # type: ignore[arg-type]
    self.n, self.st, self.rate, self.last = 0, time.perf_counter(), rate, 0.0
    self.update(0)
  def __iter__(self) -> Iterator[T]:
    if self.iterable is None: raise TypeError("tqdm without an iterable: advance it with update()")
    for x in self.iterable:
      yield x
      self.update(1)
    self.update(close=True)
  def set_description(self, desc:str): self.desc = desc
  def update(self, n:int=0, close:bool=False):
    self.n += n
    now = time.perf_counter()
    if self.disable or (not close and now - self.last < 1 / self.rate and self.n != self.t): return
    self.last = now
    el = now - self.st
    count = f"{self._fmt(self.n)}/{self._fmt(self.t)}" if self.t else f"{self._fmt(self.n)}"
    pct = f"{100 * self.n / self.t:3.0f}%|" if self.t else ""
    speed = f"{self._fmt(self.n / el) if el > 0 else '?'}{self.unit}/s"
    sys.stderr.write(f"\r{self.desc}{': ' if self.desc else ''}{pct}{count} [{el:.2f}s, {speed}]" + ("\n" if close else ""))
    sys.stderr.flush()
  def _fmt(self, x) -> str:
    if not self.unit_scale: return f"{x:.2f}" if isinstance(x, float) else str(x)
    for p in ("", "k", "M", "G", "T"):
      if abs(x) < 1000: return f"{x:.3g}{p}"
      x /= 1000
    return f"{x:.3g}P"
  @staticmethod
  def write(s:str): sys.stderr.write(f"\r\033[K{s}\n")  # a line above the progress line

def trange(n:int, **kwargs) -> tqdm[int]: return tqdm(range(n), total=n, **kwargs)
