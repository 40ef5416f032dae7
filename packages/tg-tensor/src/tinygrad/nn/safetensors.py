"""safetensors: an 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}},
then the tensors' bytes; data_offsets are [begin, end) relative to the end of the header."""
from __future__ import annotations
import json, struct
from tinygrad.dtype import DType, dtypes
from tinygrad.helpers import prod
from tinygrad.nn.binary import FormatError, Cursor, source_bytes, shape_problem, mapped_file

SAFE_DTYPES: dict[str, DType] = {"F64": dtypes.float64, "F32": dtypes.float32, "F16": dtypes.float16, "BF16": dtypes.bfloat16,
  "F8_E4M3": dtypes.fp8e4m3, "F8_E5M2": dtypes.fp8e5m2, "I64": dtypes.int64, "I32": dtypes.int32, "I16": dtypes.int16, "I8": dtypes.int8,
  "U64": dtypes.uint64, "U32": dtypes.uint32, "U16": dtypes.uint16, "U8": dtypes.uint8, "BOOL": dtypes.bool}
SAFE_NAMES = {v: k for k, v in SAFE_DTYPES.items()}

def _is_uint(x) -> bool: return type(x) is int and x >= 0

def _check_entry(name:str, e, data_len:int, fail):
  if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
    fail(f"header entry {name!r} must be an object with exactly dtype, shape, data_offsets, got {e!r:.200}")
  if not isinstance(e["dtype"], str) or e["dtype"] not in SAFE_DTYPES:
    fail(f"header entry {name!r} has dtype {e['dtype']!r:.50}; known: {', '.join(SAFE_DTYPES)}")
  if not isinstance(e["shape"], list) or not all(_is_uint(s) for s in e["shape"]):
    fail(f"header entry {name!r} has shape {e['shape']!r:.200}: it must be a list of ints >= 0")
  if problem := shape_problem(e["shape"]): fail(f"header entry {name!r} {problem}")
  if not (isinstance(offs := e["data_offsets"], list) and len(offs) == 2 and all(_is_uint(o) for o in offs) and offs[0] <= offs[1] <= data_len):
    fail(f"header entry {name!r} has data_offsets {offs!r:.200}: they must be [begin, end] with 0 <= begin <= end <= {data_len} (the data size)")
  if (want := prod(e["shape"]) * SAFE_DTYPES[e["dtype"]].itemsize) != offs[1] - offs[0]:
    fail(f"header entry {name!r}: shape {e['shape']} of {e['dtype']} is {want} bytes but data_offsets {offs} span {offs[1]-offs[0]}")

def _unique_keys(pairs:list) -> dict:
  # a repeated key would make two readers of one file see different tensors
  out = {}
  for k, v in pairs:
    if k in out: raise ValueError(f"an object repeats the key {k!r:.100}")
    out[k] = v
  return out

def _u64(digits:str) -> int:
  # every number in a header is a 64-bit shape or offset: a longer one is refused before python's int() parses it
  if len(digits.lstrip("-")) > 20: raise ValueError(f"a number of {len(digits)} digits; sizes and offsets are 64-bit")
  return int(digits)

def read_header(data:bytes, name:str) -> tuple[dict, dict, int]:
  """(tensor entries, metadata, where the data starts), every entry checked against the file's size and the others"""
  c = Cursor(data, name)
  (n,) = c.unpack("Q", "header length")
  hdr = c.take(n, "JSON header")
  def fail(msg:str): raise FormatError(f"{name}: {msg} (header at byte offset 8)")
  try: header = json.loads(bytes(hdr), object_pairs_hook=_unique_keys, parse_int=_u64)
  except RecursionError: fail("the JSON header nests too deeply to parse")
  except ValueError as e: fail(f"the header is not JSON: {e}")  # bad UTF-8, bad syntax, an over-long number, a repeated key
  if not isinstance(header, dict): fail(f"the header must be a JSON object, got {type(header).__name__}")
  meta = header.pop("__metadata__", {})
  if not isinstance(meta, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
    fail("__metadata__ must be an object of strings to strings")
  for k, e in header.items(): _check_entry(k, e, c.left(), fail)
  spans = sorted((e["data_offsets"][0], e["data_offsets"][1], k) for k, e in header.items() if e["data_offsets"][0] != e["data_offsets"][1])
  for (_, end, a), (begin, _, b) in zip(spans, spans[1:]):
    if begin < end: fail(f"tensors {a!r} and {b!r} overlap: {a!r} ends at {end}, {b!r} begins at {begin}")
  return header, meta, c.pos

def _file_bytes(src, caller:str) -> tuple[bytes, str]:
  """source_bytes, with a clear error for a file's contents passed as they are: open() would take them for a path"""
  if isinstance(src, (bytes, bytearray, memoryview)):
    raise TypeError(f"{caller} expects a path or a uint8 Tensor of the file, got a {type(src).__name__}: pass Tensor(contents) instead")
  return source_bytes(src)

def safe_load_metadata(t) -> tuple:
  """(the raw bytes as a uint8 Tensor, where the data starts in them (8 + the header's JSON length), the header with its __metadata__),
  like upstream: raw[start+b:start+e] is a tensor's bytes for its data_offsets [b, e]. A path's raw Tensor is on its DISK device"""
  from tinygrad.tensor import Tensor
  if (disk := mapped_file(t)) is not None: raw, data, name = disk
  else:
    data, name = _file_bytes(t, "safe_load_metadata")
    raw = Tensor(data)
  header, meta, start = read_header(data, name)
  return raw, start, {**header, "__metadata__": meta} if meta else header

def safe_load(fn) -> dict:
  """{name: Tensor} of a .safetensors path, or of a uint8 Tensor holding one. From a path (or a Tensor of it, on its DISK device) each
  is a view of the file, as upstream's: nothing is read until it is copied (load_state_dict moves each to its model tensor's device;
  .to("CPU") to compute with it)"""
  from tinygrad.tensor import Tensor
  if (disk := mapped_file(fn)) is not None:
    raw, data, name = disk
    header, _, start = read_header(data, name)
    return {k: raw[start+e["data_offsets"][0]:start+e["data_offsets"][1]].bitcast(SAFE_DTYPES[e["dtype"]]).reshape(tuple(e["shape"]))
            for k, e in header.items()}
  data, name = _file_bytes(fn, "safe_load")
  header, _, start = read_header(data, name)
  return {k: Tensor(data[start+e["data_offsets"][0]:start+e["data_offsets"][1]], dtype=SAFE_DTYPES[e["dtype"]]).reshape(tuple(e["shape"]))
          for k, e in header.items()}

def _metadata_text(metadata) -> dict[str, str]:
  """safetensors metadata maps str to str (readers refuse anything else): a value of another type is written as its JSON text (3 as "3")"""
  if not isinstance(metadata, dict): raise TypeError(f"safe_save: metadata must be a dict of str to str, got a {type(metadata).__name__}")
  out = {}
  for k, v in metadata.items():
    if not isinstance(k, str): raise TypeError(f"safe_save: metadata key {k!r:.50} is a {type(k).__name__}, not a str")
    try: out[k] = v if isinstance(v, str) else json.dumps(v)
    except (TypeError, ValueError) as e: raise TypeError(f"safe_save: metadata {k!r} is neither a str nor JSON: {e}") from None
  return out

def _type_name(x) -> str: return type(x).__qualname__ if type(x).__module__ == "builtins" else f"{type(x).__module__}.{type(x).__qualname__}"

def safe_save(tensors:dict, fn, metadata:dict|None=None):
  """write {name: Tensor} as safetensors, in the dict's order; the header is padded with spaces to a multiple of 8 bytes"""
  from tinygrad.tensor import Tensor
  if "__metadata__" in tensors: raise ValueError("safe_save: no tensor may be named '__metadata__', the header key of the file's metadata")
  header: dict = {"__metadata__": _metadata_text(metadata)} if metadata else {}
  blobs, off = [], 0
  for k, t in tensors.items():
    if not isinstance(t, Tensor): raise TypeError(f"safe_save: value of {k!r} is a {_type_name(t)}, not a Tensor")
    if t.dtype not in SAFE_NAMES: raise TypeError(f"safetensors has no dtype for {t.dtype} (tensor {k!r})")
    blobs.append(raw := bytes(t._data()))
    header[k], off = {"dtype": SAFE_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}, off + len(raw)
  js = json.dumps(header, separators=(",", ":")).encode()
  js += b" " * (-len(js) % 8)
  with open(fn, "wb") as f: f.write(struct.pack("<Q", len(js)) + js + b"".join(blobs))
