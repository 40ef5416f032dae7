"""torch checkpoints: the zip format (<root>/data.pkl and one <root>/data/<key> entry per storage), the legacy format (pickled magic
number, protocol, sys info, the object, the storage keys, then each storage as an 8-byte element count and its bytes) and torch's
oldest, a tar archive (members "storages", "tensors" and "pickle"). zip_extract reads the members of any zip archive."""
from __future__ import annotations
import contextlib, io, struct, zipfile, zlib
from tinygrad.helpers import prod
from tinygrad.nn.binary import FormatError, Cursor, source_bytes, mapped_file, MAX_RANK
from tinygrad.nn.torch_pickle import Storage, StorageType, TensorRef, TorchDType, unpickle, check_view, tensor_ref, tar_key, bounded_repr
from tinygrad.nn.tar import looks_like_tar, tar_members

LEGACY_MAGIC, LEGACY_PROTOCOL = 0x1950a86a20f9469cfc6c, 1001
# a zip local file header: torch tells its zip format by these first 4 bytes (zipfile.is_zipfile looks for an end record near the
# end instead, which a legacy file's tensor bytes can hold)
ZIP_MAGIC = b"PK\x03\x04"
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, KeyError, struct.error, NotImplementedError,
              OverflowError, zlib.error)
TAR_MEMBERS = ("storages", "tensors", "pickle")

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
  elif isinstance(obj, TorchDType): ret = obj.value()
  elif isinstance(obj, dict):
    ret = memo[id(obj)] = type(obj)()
    ret.update((k, _materialize(v, make, memo)) for k, v in obj.items())
  elif isinstance(obj, list):
    ret = memo[id(obj)] = []
    ret.extend(_materialize(v, make, memo) for v in obj)
  elif isinstance(obj, (tuple, set, frozenset)): ret = memo[id(obj)] = type(obj)(_materialize(v, make, memo) for v in obj)
  else: ret = obj
  return ret

def _build(obj, raw:dict, storages:dict[str, Storage], name:str):
  """raw: each storage's bytes, or a view of them in the mapped file (a uint8 Tensor on its DISK device), copied to the default device"""
  from tinygrad.tensor import Tensor
  from tinygrad.device import Device
  bases: dict = {}
  def base(st:Storage):
    # one Tensor per storage and dtype: a _rebuild_tensor_v3 tensor reads its untyped (byte) storage as its own dtype
    if (k := (st.key, st.dtype)) not in bases:
      root, data = storages[st.key], raw[st.key]
      data = data[:root.numel*root.dtype.itemsize]
      if not isinstance(data, Tensor): bases[k] = Tensor(data, dtype=st.dtype)
      elif len(data) % st.dtype.itemsize: raise FormatError(f"storage {st.key!r} of {len(data)} bytes is no whole number of {st.dtype}")
      else: bases[k] = data.bitcast(st.dtype).to(Device.DEFAULT)
    return bases[k]
  def make(r:TensorRef):
    check_view(r.storage, r.offset, r.size, r.stride)  # checked when unpickled too: this is where a bad view would read past the bytes
    return strided(base(r.storage), r.storage.offset + r.offset, r.size, r.stride)
  try: return _materialize(obj, make, {})
  except RecursionError: raise FormatError(f"{name}: the pickled object is nested too deeply to walk") from None
  except FormatError as e: raise FormatError(f"{name}: {e}") from None

def _byteswapped(raw:bytes, itemsize:int) -> bytes:
  """each itemsize-byte element's bytes reversed"""
  out = bytearray(len(raw))
  for j in range(itemsize): out[j::itemsize] = raw[itemsize-1-j::itemsize]
  return bytes(out)

class _ViewFile(io.RawIOBase):
  """a read-only file over bytes in memory (a mapped file), for zipfile: io.BytesIO would copy them all"""
  def __init__(self, data:memoryview): self.data, self.pos = memoryview(data).cast("B"), 0
  def readable(self) -> bool: return True
  def seekable(self) -> bool: return True
  def tell(self) -> int: return self.pos
  def seek(self, pos:int, whence:int=0) -> int:
    self.pos = max(0, pos + (0, self.pos, len(self.data))[whence])
    return self.pos
  def readinto(self, b) -> int:
    n = len(chunk := self.data[self.pos:self.pos + len(b)])
    b[:n], self.pos = chunk, self.pos + n
    return n

def _load_zip(data:bytes|memoryview, name:str, disk=None):
  """disk: the file mapped on its DISK device, whose stored (uncompressed) storage entries become views of it, copied to the default
  device when realized"""
  zf = zipfile.ZipFile(_ViewFile(data))
  if not (pkl := [i for i in zf.infolist() if i.filename.endswith("data.pkl") and i.filename.count("/") <= 1]):
    raise FormatError(f"{name}: a torch zip checkpoint needs <root>/data.pkl; the archive holds {[i.filename for i in zf.infolist()][:10]}")
  root = pkl[0].filename[:-len("data.pkl")]
  def entry(path:str) -> zipfile.ZipInfo:
    try: info = zf.getinfo(path)
    except KeyError: raise FormatError(f"{name}: entry {bounded_repr(path)} is missing from the archive") from None
    if info.flag_bits & 1: raise FormatError(f"{name}: entry {bounded_repr(path)} is encrypted; torch never encrypts its entries")
    return info
  # torch stores entries uncompressed; one re-zipped with deflate (torch.load reads it) inflates to its declared size and CRC, no
  # further. So each entry's declared size is checked before it is read: a small entry can declare, and inflate to, gigabytes
  def storage_bytes(key:str, st:Storage, disk):
    if (info := entry(path := f"{root}data/{key}")).file_size != (need := st.numel * st.dtype.itemsize):
      raise FormatError(f"{name}: storage entry {bounded_repr(path)} has {info.file_size} bytes but {st.numel} {st.dtype} need exactly {need}")
    if disk is None or info.compress_type != zipfile.ZIP_STORED: return _member_bytes(data, info, name)
    start, end = _member_span(data, info, name)
    return disk[start:end]
  def byteorder() -> bytes:
    """the saving machine's byte order (no entry: little), which torch swaps from on load when it differs"""
    if root + "byteorder" not in zf.namelist(): return b"little"
    if (info := entry(root + "byteorder")).file_size > len(b"little"):
      raise FormatError(f"{name}: {root}byteorder declares {info.file_size} bytes; torch writes 'little' or 'big'")
    if (order := _member_bytes(data, info, name)) not in (b"little", b"big"):
      raise FormatError(f"{name}: {root}byteorder is {order!r}; torch writes 'little' or 'big'")
    return order
  storages: dict[str, Storage] = {}
  obj = unpickle(io.BytesIO(_member_bytes(data, entry(root + "data.pkl"), name)), f"{name}:{root}data.pkl", storages)
  if big := byteorder() == b"big": disk = None  # swapped here, in python
  raw = {k: storage_bytes(k, st, disk) for k, st in storages.items()}
  if big: raw = {k: _byteswapped(raw[k], st.dtype.itemsize) for k, st in storages.items()}
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
    if (st := storages.get(k)) is None: c.fail(f"storage {bounded_repr(k)} follows the pickle but no tensor uses it")
    (n,) = c.unpack("q", f"element count of storage {bounded_repr(k)}")
    if n != st.numel: c.fail(f"storage {bounded_repr(k)} holds {n} elements but the pickle declared {st.numel}", c.pos - 8)
    raw[k] = bytes(c.take(n * st.dtype.itemsize, f"data of storage {bounded_repr(k)}"))
  if missing := storages.keys() - raw.keys(): raise FormatError(f"{name}: storages {sorted(missing)} are used but not in the file")
  return _build(obj, raw, storages, name)

def _count(x, name:str, what:str) -> int:
  if type(x) is not int or x < 0: raise FormatError(f"{name}: the pickled {what} must be an int >= 0")
  return x

def _read_tar_storages(data:bytes, name:str, storages:dict, raw:dict, objects:dict):
  """torch's tar member "storages": a pickled count, then per storage a pickled (key, location, storage type), an 8-byte element
  count and the elements; then a pickled list of views (key, root key, element offset, element count)"""
  f = io.BytesIO(data)
  for _ in range(_count(unpickle(f, name, {}), name, "storage count")):
    at, rec = f.tell(), unpickle(f, name, {})
    if not (type(rec) is tuple and len(rec) == 3 and (key := tar_key(rec[0])) is not None and key not in objects
            and isinstance(rec[2], StorageType)):
      raise FormatError(f"{name}: the storage record at byte offset {at} is not a new (key, location, torch.*Storage)")
    c = Cursor(data, name, f.tell())
    (numel,) = c.unpack("q", f"element count of storage {bounded_repr(key)}")
    raw[key] = bytes(c.take(numel * rec[2].dtype.itemsize, f"data of storage {bounded_repr(key)}"))  # a negative count fails here too
    objects[key] = storages[key] = Storage(key, rec[2].dtype, numel)
    f.seek(c.pos)
  if type(views := unpickle(f, name, {})) is not list: raise FormatError(f"{name}: the storage views are a {type(views).__name__}, not a list")
  for i, v in enumerate(views):
    if not (type(v) is tuple and len(v) == 4 and (key := tar_key(v[0])) is not None and key not in objects
            and isinstance(root := objects.get(tar_key(v[1])), Storage) and all(type(x) is int and x >= 0 for x in v[2:])
            and v[2] + v[3] <= root.numel):
      raise FormatError(f"{name}: storage view {i} is not a new (key, storage key, element offset, element count) inside its storage")
    objects[key] = Storage(root.key, root.dtype, v[3], root.offset + v[2])

def _read_tar_tensors(data:bytes, name:str, objects:dict):
  """torch's tar member "tensors": a pickled count, then per tensor a pickled (key, storage key, tensor type), a 4-byte rank and 4
  unused bytes (old torch wrote the rank as 8), the rank's 8-byte sizes and strides, and an 8-byte storage offset"""
  f = io.BytesIO(data)
  for _ in range(_count(unpickle(f, name, {}), name, "tensor count")):
    at, rec = f.tell(), unpickle(f, name, {})
    if not (type(rec) is tuple and len(rec) == 3 and (key := tar_key(rec[0])) is not None and key not in objects
            and isinstance(storage := objects.get(tar_key(rec[1])), Storage)):
      raise FormatError(f"{name}: the tensor record at byte offset {at} is not a new (key, storage key, tensor type) of a declared storage")
    c = Cursor(data, name, f.tell())
    ndim, _ = c.unpack("ii", f"rank of tensor {bounded_repr(key)}")
    if not 0 <= ndim <= MAX_RANK: c.fail(f"tensor {bounded_repr(key)} has rank {ndim}; at most {MAX_RANK}", c.pos - 8)
    size, stride = c.unpack(f"{ndim}q", f"size of tensor {bounded_repr(key)}"), c.unpack(f"{ndim}q", f"stride of tensor {bounded_repr(key)}")
    (offset,) = c.unpack("q", f"storage offset of tensor {bounded_repr(key)}")
    try: objects[key] = tensor_ref(storage, offset, size, stride, f"tensor {bounded_repr(key)}")
    except FormatError as e: raise FormatError(f"{name}: {e}") from None
    f.seek(c.pos)

def _load_tar(data:bytes, name:str):
  members = tar_members(data, name)
  if missing := [m for m in TAR_MEMBERS if m not in members]:
    raise FormatError(f"{name}: a tar archive, but not a torch tar checkpoint: it lacks the members {missing} (it has {sorted(members)[:10]})")
  storages: dict[str, Storage] = {}
  raw: dict[str, bytes] = {}
  objects: dict = {}  # storages, storage views and tensors by key, as the members declare them
  _read_tar_storages(members["storages"], f"{name}:storages", storages, raw, objects)
  _read_tar_tensors(members["tensors"], f"{name}:tensors", objects)
  return _build(unpickle(io.BytesIO(members["pickle"]), f"{name}:pickle", {}, objects), raw, storages, name)

@contextlib.contextmanager
def _zip_errors(name:str):
  """every error zipfile raises for a damaged archive, as a FormatError naming the file"""
  try: yield
  except FormatError: raise
  except ZIP_ERRORS as e: raise FormatError(f"{name}: the zip archive is truncated or corrupt: {type(e).__name__}: {e}") from None

def torch_load(t):
  """the object in a torch .pth/.pt checkpoint (usually a state dict), its tensors as Tensors; a path or a uint8 Tensor of the file. A
  zip checkpoint's path is mapped (its DISK device): each stored tensor is read from the file when realized, on the default device"""
  if (mapped := mapped_file(t)) is not None:
    disk, view, name = mapped
    if bytes(view[:4]) == ZIP_MAGIC:
      with _zip_errors(name): return _load_zip(view, name, disk)
    data = bytes(view)
  else: data, name = source_bytes(t)
  if data[:4] == ZIP_MAGIC:
    with _zip_errors(name): return _load_zip(data, name)
  if looks_like_tar(data): return _load_tar(data, name)
  return _load_legacy(data, name)

LOCAL_HEADER = struct.Struct("<4s22xHH")  # a zip local file header's signature, then its name and extra field lengths (30 bytes)

def _inflate(raw:bytes, info:zipfile.ZipInfo, name:str) -> bytes:
  # at most one byte past the declared size is produced: a member that inflates further (a zip bomb) is refused, not expanded
  d = zlib.decompressobj(-15)
  try: out = d.decompress(raw, info.file_size + 1)
  except zlib.error as e: raise FormatError(f"{name}: member {info.filename!r} is not a valid deflate stream ({e})") from None
  if not d.eof or len(out) != info.file_size or zlib.crc32(out) != info.CRC:
    raise FormatError(f"{name}: member {info.filename!r} does not inflate to its declared {info.file_size} bytes and CRC")
  return out

def _member_bytes(data:bytes, info:zipfile.ZipInfo, name:str) -> bytes:
  start, end = _member_span(data, info, name)
  raw = bytes(data[start:end])
  if info.compress_type == zipfile.ZIP_DEFLATED: return _inflate(raw, info, name)
  return raw

def _member_span(data:bytes, info:zipfile.ZipInfo, name:str) -> tuple[int, int]:
  """where a member's (stored or deflated) bytes lie in the archive, checked"""
  if info.flag_bits & 1: raise FormatError(f"{name}: member {info.filename!r} is encrypted")
  if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
    raise FormatError(f"{name}: member {info.filename!r} uses compression method {info.compress_type}; only stored and deflated members are read")
  sig, name_len, extra_len = LOCAL_HEADER.unpack_from(data, info.header_offset)
  start = info.header_offset + LOCAL_HEADER.size + name_len + extra_len
  if sig != ZIP_MAGIC or start + info.compress_size > len(data):
    raise FormatError(f"{name}: member {info.filename!r} has no local header at byte offset {info.header_offset} or its data runs past the end")
  if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
    raise FormatError(f"{name}: stored member {info.filename!r} declares {info.file_size} bytes but holds {info.compress_size}")
  return start, start + info.compress_size

def zip_extract(t) -> dict:
  """{member name: uint8 Tensor of its bytes} of a zip archive: a path, or a 1-d uint8 Tensor holding one; stored and deflated members"""
  from tinygrad.tensor import Tensor
  data, name = source_bytes(t)
  with _zip_errors(name): return {i.filename: Tensor(_member_bytes(data, i, name)) for i in zipfile.ZipFile(io.BytesIO(data)).infolist()}
