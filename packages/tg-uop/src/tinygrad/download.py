"""fetch(url): a file from the network, kept in tinygrad's cache (`helpers.cache_dir()/downloads`, or $CACHEDIR/downloads) so a second run
reads it from disk. The download goes to a temporary file beside the cached name and is renamed into place only when whole (and when its
sha256 matches, if given): an interrupted or corrupt download never sits in the cache."""
from __future__ import annotations
import gzip, hashlib, os, pathlib, shutil, tarfile, tempfile, urllib.error, urllib.request
from tinygrad.helpers import cache_dir, getenv
from tinygrad.progress import tqdm

CHUNK = 1 << 16

def downloads_dir() -> pathlib.Path:
  return pathlib.Path(d) / "downloads" if (d := os.getenv("CACHEDIR")) else cache_dir() / "downloads"

def _target(url:str, name:pathlib.Path|str|None, subdir:str|None, gunzip:bool) -> pathlib.Path:
  if isinstance(name, pathlib.Path) and name.is_absolute(): return name
  base = downloads_dir() / subdir if subdir else downloads_dir()
  return base / (str(name) if name else hashlib.md5(url.encode()).hexdigest() + (".gunzip" if gunzip else ""))

def fetch(url:str, name:pathlib.Path|str|None=None, subdir:str|None=None, gunzip:bool=False, allow_caching:bool=True,
          headers:dict[str, str]|None=None, sha256:str|None=None, extract:bool=False) -> pathlib.Path:
  """the path of url's content on disk (gunzip: decompressed), downloaded once; DISABLE_HTTP_CACHE=1 or allow_caching=False downloads
  again. sha256: the hex digest the (decompressed) file must have. extract: a tar archive, unpacked into the directory beside it of the
  same name (members that would land outside it, links included, are refused); that directory is returned"""
  if url.startswith(("file://", "/")) and not gunzip and not extract:  # a local file is its own cache
    return pathlib.Path(urllib.request.url2pathname(url.removeprefix("file://")))
  path = _target(url, name, subdir, gunzip)
  done = path.with_suffix(path.suffix + ".d") if extract else path
  if done.exists() and allow_caching and not getenv("DISABLE_HTTP_CACHE"): return done
  path.parent.mkdir(parents=True, exist_ok=True)
  try: resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=getenv("FETCH_TIMEOUT", 60))
  except urllib.error.HTTPError as e: raise RuntimeError(f"fetch {url}: HTTP {e.code} {e.reason}") from None
  except (urllib.error.URLError, OSError) as e: raise RuntimeError(f"fetch {url}: {getattr(e, 'reason', e)}") from None
  with resp, tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
    try:
      total = int(resp.headers.get("Content-Length") or 0) or None
      digest = hashlib.sha256()
      with tqdm(total=total, unit="B", unit_scale=True, desc=url.rsplit("/", 1)[-1], disable=not total) as bar:
        stream = gzip.GzipFile(fileobj=_Counting(resp, bar)) if gunzip else _Counting(resp, bar)
        while chunk := stream.read(CHUNK):
          digest.update(chunk)
          tmp.write(chunk)
      if total is not None and bar.n != total: raise RuntimeError(f"fetch {url}: got {bar.n} of {total} bytes")
      if sha256 is not None and digest.hexdigest() != sha256.lower():
        raise RuntimeError(f"fetch {url}: sha256 is {digest.hexdigest()}, expected {sha256}")
    except BaseException:
      pathlib.Path(tmp.name).unlink(missing_ok=True)
      raise
  os.replace(tmp.name, path)
  if extract: _extract(path, done)
  return done

class _Counting:
  """a response read through: each read's byte count goes to the progress bar (compressed bytes, as Content-Length counts them)"""
  def __init__(self, raw, bar:tqdm):
    self.raw, self.bar = raw, bar
  def read(self, n:int=-1) -> bytes:
    data = self.raw.read(n)
    self.bar.update(len(data))
    return data

def _extract(archive:pathlib.Path, into:pathlib.Path):
  tmp = pathlib.Path(tempfile.mkdtemp(dir=archive.parent))
  try:
    try:
      with tarfile.open(archive) as tf: tf.extractall(tmp, filter="data")  # "data": no absolute paths, no .., no links out, no devices
    except tarfile.TarError as e: raise RuntimeError(f"fetch: {archive} is not a tar archive that can be unpacked safely: {e}") from None
    if into.exists(): shutil.rmtree(into)
    os.replace(tmp, into)
  finally: shutil.rmtree(tmp, ignore_errors=True)
