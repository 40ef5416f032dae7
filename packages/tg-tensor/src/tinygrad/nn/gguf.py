"""GGUF (versions 2 and 3): magic, version, tensor and metadata counts, metadata key/values, tensor infos, then the tensor data at an
aligned offset. Plain tensors (F32, F16, BF16, F64, I8..I64) load as their dtype; quantized ones are dequantized to float32
(gguf_quants.py). A model split into NAME-00001-of-0000N.gguf, ... loads whole from the path of its first part."""
from __future__ import annotations
import pathlib, re
from tinygrad.dtype import dtypes
from tinygrad.helpers import prod
from tinygrad.nn.binary import FormatError, Cursor, source_bytes, shape_problem, mapped_file
from tinygrad.nn.gguf_quants import QUANTIZED

# metadata value types: struct format (or a name for the variable-length ones) and the smallest size a value takes
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY, MAX_ARRAY_DEPTH, GGML_MAX_DIMS = 8, 9, 4, 4
PLAIN = {0: ("F32", dtypes.float32), 1: ("F16", dtypes.float16), 24: ("I8", dtypes.int8), 25: ("I16", dtypes.int16),
         26: ("I32", dtypes.int32), 27: ("I64", dtypes.int64), 28: ("F64", dtypes.float64), 30: ("BF16", dtypes.bfloat16)}
# ggml tensor types: (name, elements per block, bytes per block)
GGML_TYPES = {**{k: (name, 1, dt.itemsize) for k, (name, dt) in PLAIN.items()}, **{k: v[:3] for k, v in QUANTIZED.items()}}
# gguf-split names part i (from 1) of n NAME-0000i-of-0000n.gguf
SPLIT_NAME = re.compile(r"^(.*)-00001-of-(\d{5})\.gguf$")

def _string(c:Cursor, field:str) -> str:
  (n,) = c.unpack("Q", f"length of {field}")
  at = c.pos
  try: return bytes(c.take(n, field)).decode()
  except UnicodeDecodeError: c.fail(f"{field} is not UTF-8", at)

def _value(c:Cursor, vtype:int, field:str, depth:int=0):
  if vtype in SCALARS:
    (v,) = c.unpack(SCALARS[vtype], field)
    return v
  if vtype == STRING: return _string(c, field)
  if vtype != ARRAY: c.fail(f"{field} has unknown value type {vtype}", c.pos - 4)
  if depth >= MAX_ARRAY_DEPTH: c.fail(f"{field} nests arrays deeper than {MAX_ARRAY_DEPTH}")
  etype, count = c.unpack("IQ", f"{field} array header")
  c.need(count, 1 if etype in (0, 1, 7) else 2 if etype in (2, 3) else 4 if etype in (4, 5, 6) else 8, f"{field} array count")
  # scalars in one unpack: a vocabulary's scores and token types run to 100k+ entries, a value at a time took seconds
  if etype in SCALARS: return list(c.unpack(f"{count}{SCALARS[etype]}", f"{field} array"))
  return [_value(c, etype, f"{field}[{i}]", depth+1) for i in range(count)]

def _metadata(c:Cursor) -> tuple[int, dict, dict]:
  """the tensor count, then {key: value} and {key: byte offset of its value} (for messages about a value)"""
  if (magic := bytes(c.take(4, "magic"))) != b"GGUF": c.fail(f"magic is {magic!r}, a GGUF file starts with b'GGUF'", 0)
  if (version := c.unpack("I", "version")[0]) not in (2, 3): c.fail(f"version {version} is not supported (2 and 3 are)", 4)
  n_tensors, n_kv = c.unpack("QQ", "tensor and metadata counts")
  c.need(n_kv, 13, "metadata count")  # key length 8 + type 4 + a value of at least 1 byte
  kv, value_at = {}, {}
  for i in range(n_kv):
    at = c.pos
    if (key := _string(c, f"metadata key {i}")) in kv: c.fail(f"metadata key {key!r} appears twice", at)
    (vtype,) = c.unpack("I", f"type of metadata {key!r}")
    value_at[key] = c.pos
    kv[key] = _value(c, vtype, f"metadata {key!r}")
  return n_tensors, kv, value_at

def _tensor_infos(c:Cursor, n_tensors:int, in_other_parts:dict[str, str]) -> list:
  """[(name, dims, ggml type, data offset)]; in_other_parts names the split parts already loaded, by tensor"""
  c.need(n_tensors, 24, "tensor count")  # name length 8 + n_dims 4 + type 4 + offset 8
  infos, names = [], set()
  for i in range(n_tensors):
    at = c.pos
    tname = _string(c, f"name of tensor {i}")
    (n_dims,) = c.unpack("I", f"n_dims of tensor {tname!r}")
    if n_dims > GGML_MAX_DIMS: c.fail(f"tensor {tname!r} has {n_dims} dims; ggml tensors have at most {GGML_MAX_DIMS}", c.pos - 4)
    dims = c.unpack(f"{n_dims}Q", f"dims of tensor {tname!r}")
    if problem := shape_problem(dims): c.fail(f"tensor {tname!r} {problem}", c.pos - 8 * n_dims)
    ttype, off = c.unpack("IQ", f"type and offset of tensor {tname!r}")
    if ttype not in GGML_TYPES:
      c.fail(f"tensor {tname!r} has ggml type {ttype}; supported: {', '.join(f'{v[0]} ({k})' for k, v in GGML_TYPES.items())}")
    if tname in names: c.fail(f"tensor name {tname!r} appears twice")
    if tname in in_other_parts: c.fail(f"tensor name {tname!r} is also in {in_other_parts[tname]}", at)
    names.add(tname)
    infos.append((tname, dims, ttype, off))
  return infos

def _tensor(raw, dims:tuple, ttype:int):
  """raw: the tensor's bytes, or its bytes as a view of the mapped file, copied to the default device here (lazily: a tensor is read
  from the file when it is realized)"""
  from tinygrad.tensor import Tensor
  from tinygrad.device import Device
  shape = tuple(reversed(dims))
  if isinstance(raw, Tensor) and ttype in PLAIN: return raw.bitcast(PLAIN[ttype][1]).to(Device.DEFAULT).reshape(shape)
  if ttype in PLAIN: return Tensor(raw, dtype=PLAIN[ttype][1]).reshape(shape)
  if not (raw.numel() if isinstance(raw, Tensor) else raw): return Tensor.zeros(shape)
  _, _, block_bytes, decode = QUANTIZED[ttype]
  return decode((raw.to(Device.DEFAULT) if isinstance(raw, Tensor) else Tensor(raw)).reshape(-1, block_bytes)).reshape(shape)

def _tensors(c:Cursor, infos:list, kv:dict, disk=None) -> dict:
  """{name: Tensor} from the data section after the infos, each tensor's bytes checked to lie in the file and overlap no other's"""
  align = kv.get("general.alignment", 32)
  if type(align) is not int or not 0 < align <= 1 << 16 or align & (align - 1): c.fail(f"general.alignment {align!r} is not a power of two <= 65536")
  start, data = c.pos + (-c.pos % align), c.data
  spans, out = [], {}
  for tname, dims, ttype, off in infos:
    kind, per_block, block_bytes = GGML_TYPES[ttype]
    row = dims[0] if dims else 1  # ggml quantizes each row (ne[0], the innermost dim) in whole blocks
    if row % per_block: c.fail(f"tensor {tname!r} has rows (ne[0]) of {row} elements, not a whole number of {kind} blocks of {per_block}")
    nbytes = prod(dims) // per_block * block_bytes
    if off % align or start + off + nbytes > len(data):
      c.fail(f"tensor {tname!r} ({kind}, dims {list(dims)}, {nbytes} bytes) at data offset {off} is misaligned or runs past the file's end "
             f"({len(data)} bytes, data starts at {start})", start)
    spans.append((off, off + nbytes, tname))
    out[tname] = _tensor(disk[start+off:start+off+nbytes] if disk is not None else bytes(data[start+off:start+off+nbytes]), dims, ttype)
  for (_, end, a), (begin, _, b) in zip(spans := sorted(spans), spans[1:]):
    if begin < end: raise FormatError(f"{c.name}: tensors {a!r} and {b!r} overlap in the data section (starting at byte offset {start})")
  return out

def _read(src, in_other_parts:dict[str, str]) -> tuple[Cursor, dict, dict, dict]:
  """(a cursor on the file, metadata, metadata value offsets, tensors) of one GGUF file: a path is mapped (its DISK device), its tensors
  copied to the default device as they are realized, never the whole file read"""
  if (mapped := mapped_file(src)) is not None: disk, data, name = mapped
  else: (data, name), disk = source_bytes(src), None
  c = Cursor(data, name)
  n_tensors, kv, value_at = _metadata(c)
  return c, kv, value_at, _tensors(c, _tensor_infos(c, n_tensors, in_other_parts), kv, disk)

def _split_key(c:Cursor, kv:dict, value_at:dict, key:str, low:int) -> int:
  if key not in kv: c.fail(f"metadata {key!r} is missing; a split GGUF part needs it", 24)  # 24: where the metadata starts
  if type(v := kv[key]) is not int or v < low: c.fail(f"metadata {key!r} is {v!r}, a split GGUF part needs an int >= {low}", value_at[key])
  return v

def _part_paths(c:Cursor, first:pathlib.Path, count:int, count_at:int) -> list[pathlib.Path]:
  if not (m := SPLIT_NAME.match(first.name)):
    c.fail(f"split.count is {count} but the file is not named like a first part, NAME-00001-of-{count:05d}.gguf", count_at)
  if int(m[2]) != count: c.fail(f"the file's name says {int(m[2])} parts but split.count is {count}", count_at)
  return [first.with_name(f"{m[1]}-{i:05d}-of-{count:05d}.gguf") for i in range(2, count + 1)]

def _other_parts(c:Cursor, first:pathlib.Path, count:int, count_at:int, first_tensors:dict) -> dict:
  """the tensors of every part after the first; each part must say it is part i of `count` and repeat no tensor name"""
  where, out = dict.fromkeys(first_tensors, f"part 1 ({first.name})"), {}
  for i, path in enumerate(_part_paths(c, first, count, count_at), start=2):
    if not path.is_file(): c.fail(f"split part {i} of {count} is missing: {path} is not a file", count_at)
    part, kv, value_at, tensors = _read(path, where)
    if _split_key(part, kv, value_at, "split.count", 1) != count:
      part.fail(f"split.count is {kv['split.count']} but part 1 ({first.name}) says {count}", value_at["split.count"])
    if (no := _split_key(part, kv, value_at, "split.no", 0)) != i - 1:
      part.fail(f"split.no is {no} but this is part {i} of {count} by its name (split.no {i-1})", value_at["split.no"])
    where.update(dict.fromkeys(tensors, f"part {i} ({path.name})"))
    out.update(tensors)
  return out

def gguf_load(src) -> tuple[dict, dict]:
  """(metadata {key: value}, {name: Tensor}) of a .gguf path or a uint8 Tensor holding one; shapes are ggml's dims reversed (row-major).
  Given the path of a split model's first part, the metadata is the first part's and the tensors are every part's."""
  from tinygrad.tensor import Tensor
  c, kv, value_at, tensors = _read(src, {})
  if kv.get("split.count", 1) == 1: return kv, tensors
  count = _split_key(c, kv, value_at, "split.count", 1)
  if (no := _split_key(c, kv, value_at, "split.no", 0)) != 0:
    c.fail(f"this is part {no+1} of a {count}-part split model (split.no {no}); load the path of its first part, NAME-00001-of-{count:05d}.gguf",
           value_at["split.no"])
  if isinstance(src, Tensor):
    c.fail(f"this is part 1 of a {count}-part split model (split.count {count}): its other parts are separate files, so load it from the path "
           f"of this part, NAME-00001-of-{count:05d}.gguf, not from a Tensor", value_at["split.count"])
  tensors = {**tensors, **_other_parts(c, pathlib.Path(src), count, value_at["split.count"], tensors)}
  if "split.tensors.count" in kv and (want := _split_key(c, kv, value_at, "split.tensors.count", 0)) != len(tensors):
    c.fail(f"split.tensors.count is {want} but the {count} parts hold {len(tensors)} tensors", value_at["split.tensors.count"])
  return kv, tensors
