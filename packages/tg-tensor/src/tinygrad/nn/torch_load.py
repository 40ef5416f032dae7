"""torch checkpoints: the zip format (<root>/data.pkl and one <root>/data/<key> entry per storage) and the legacy format (pickled magic
number, protocol, sys info, the object, the storage keys, then each storage as an 8-byte element count and its bytes)."""
from __future__ import annotations
import io, struct, zipfile
from tinygrad.helpers import prod
from tinygrad.nn.binary import FormatError, Cursor, source_bytes
from tinygrad.nn.torch_pickle import Storage, TensorRef, unpickle, check_view

LEGACY_MAGIC, LEGACY_PROTOCOL = 0x1950a86a20f9469cfc6c, 1001
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, KeyError, struct.error, NotImplementedError)

def strided(storage, offset:int, size:tuple, stride:tuple):
  """as_strided of a 1-d storage tensor: a shrink and reshape when the strides are row-major (after a permute), else a gather"""
  if 0 in size: return storage[:0].reshape(size)
  order = sorted(range(len(size)), key=lambda i: -stride[i])
  want, acc = [0]*len(size), 1
  for i in reversed(order): want[i], acc = acc, acc * size[i]
  if all(st == w or s == 1 for s, st, w in zip(size, stride, want)):
    return storage[offset:offset+prod(size)].reshape(tuple(size[i] for i in order)).permute(tuple(order.index(i) for i in range(len(size))))
  from tinygrad.tensor import Tensor
  idx = Tensor(offset, device=storage.device, dtype="int64")
  for d, (s, st) in enumerate(zip(size, stride)):
    idx = idx + (Tensor.arange(s, device=storage.device, dtype="int64") * st).reshape(tuple(s if k == d else 1 for k in range(len(size))))
  return storage[idx]

def _materialize(obj, make, memo:dict):
  """obj with every TensorRef in its dicts, lists and tuples made a Tensor (a shared or cyclic container stays shared)"""
  if id(obj) in memo: return memo[id(obj)]
  if isinstance(obj, TensorRef): ret = memo[id(obj)] = make(obj)
  elif isinstance(obj, dict):
    ret = memo[id(obj)] = type(obj)()
    ret.update((k, _materialize(v, make, memo)) for k, v in obj.items())
  elif isinstance(obj, list):
    ret = memo[id(obj)] = []
    ret.extend(_materialize(v, make, memo) for v in obj)
  elif isinstance(obj, tuple): ret = memo[id(obj)] = tuple(_materialize(v, make, memo) for v in obj)
  else: ret = obj
  return ret

def _build(obj, raw:dict[str, bytes], storages:dict[str, Storage], name:str):
  from tinygrad.tensor import Tensor
  tensors = {k: Tensor(raw[k][:st.numel*st.dtype.itemsize], dtype=st.dtype) for k, st in storages.items()}
  def make(r:TensorRef):
    check_view(r.storage, r.offset, r.size, r.stride)  # checked when unpickled too: this is where a bad view would read past the bytes
    return strided(tensors[r.storage.key], r.storage.offset + r.offset, r.size, r.stride)
  try: return _materialize(obj, make, {})
  except RecursionError: raise FormatError(f"{name}: the pickled object is nested too deeply to walk") from None
  except FormatError as e: raise FormatError(f"{name}: {e}") from None

def _byteswapped(raw:bytes, itemsize:int) -> bytes:
  """each itemsize-byte element's bytes reversed"""
  out = bytearray(len(raw))
  for j in range(itemsize): out[j::itemsize] = raw[itemsize-1-j::itemsize]
  return bytes(out)

def _load_zip(data:bytes, name:str):
  zf = zipfile.ZipFile(io.BytesIO(data))
  if not (pkl := [i for i in zf.infolist() if i.filename.endswith("data.pkl") and i.filename.count("/") <= 1]):
    raise FormatError(f"{name}: a torch zip checkpoint needs <root>/data.pkl; the archive holds {[i.filename for i in zf.infolist()][:10]}")
  root = pkl[0].filename[:-len("data.pkl")]
  def entry(path:str) -> bytes:
    try: info = zf.getinfo(path)
    except KeyError: raise FormatError(f"{name}: entry {path!r} is missing from the archive") from None
    if info.flag_bits & 1: raise FormatError(f"{name}: entry {path!r} is encrypted; torch never encrypts its entries")
    # torch stores entries uncompressed: refusing compression keeps every read within the file's own size (no zip bombs)
    if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size or info.file_size > len(data):
      raise FormatError(f"{name}: entry {path!r} is compressed or claims {info.file_size} bytes; torch writes stored entries within the file")
    return zf.read(info)
  storages: dict[str, Storage] = {}
  obj = unpickle(io.BytesIO(entry(root + "data.pkl")), f"{name}:{root}data.pkl", storages)
  raw = {k: entry(f"{root}data/{k}") for k in storages}
  for k, st in storages.items():
    if len(raw[k]) < st.numel * st.dtype.itemsize:
      raise FormatError(f"{name}: storage entry {root}data/{k} has {len(raw[k])} bytes but {st.numel} {st.dtype} need {st.numel*st.dtype.itemsize}")
  # torch writes the saving machine's byte order (no entry: little) and swaps on load when it differs
  if (order := entry(root + "byteorder") if root + "byteorder" in zf.namelist() else b"little") not in (b"little", b"big"):
    raise FormatError(f"{name}: {root}byteorder is {bytes(order[:20])!r}; torch writes 'little' or 'big'")
  if order == b"big": raw = {k: _byteswapped(raw[k][:st.numel*st.dtype.itemsize], st.dtype.itemsize) for k, st in storages.items()}
  return _build(obj, raw, storages, name)

def _brief(x) -> str: return repr(x) if type(x) is int and abs(x) < 1 << 64 else f"a {type(x).__name__}"

def _load_legacy(data:bytes, name:str):
  f, storages = io.BytesIO(data), {}
  for what, want in (("magic number", LEGACY_MAGIC), ("protocol version", LEGACY_PROTOCOL)):
    # name what was found by type: its repr could be huge, or recurse past the limit
    if (got := unpickle(f, name, storages)) != want: raise FormatError(f"{name}: legacy {what} is {_brief(got)}, expected {want}")
  unpickle(f, name, storages)  # sys info: endianness and type sizes, all little-endian for the files we read
  obj = unpickle(f, name, storages)
  if not isinstance(keys := unpickle(f, name, {}), list) or not all(isinstance(k, str) for k in keys):
    raise FormatError(f"{name}: the storage key list before offset {f.tell()} is not a list of strings")
  c, raw = Cursor(data, name, f.tell()), {}
  for k in keys:
    if (st := storages.get(k)) is None: c.fail(f"storage {k!r} follows the pickle but no tensor uses it")
    (n,) = c.unpack("q", f"element count of storage {k!r}")
    if n != st.numel: c.fail(f"storage {k!r} holds {n} elements but the pickle declared {st.numel}", c.pos - 8)
    raw[k] = bytes(c.take(n * st.dtype.itemsize, f"data of storage {k!r}"))
  if missing := storages.keys() - raw.keys(): raise FormatError(f"{name}: storages {sorted(missing)} are used but not in the file")
  return _build(obj, raw, storages, name)

def torch_load(src):
  """the object in a torch .pth/.pt checkpoint (usually a state dict), its tensors as Tensors; a path or a uint8 Tensor of the file"""
  data, name = source_bytes(src)
  if not zipfile.is_zipfile(io.BytesIO(data)): return _load_legacy(data, name)
  try: return _load_zip(data, name)
  except ZIP_ERRORS as e:
    if isinstance(e, FormatError): raise
    raise FormatError(f"{name}: malformed zip archive: {type(e).__name__}: {e}") from None
