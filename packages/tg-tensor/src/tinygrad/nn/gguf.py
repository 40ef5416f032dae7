"""GGUF (versions 2 and 3): magic, version, tensor and metadata counts, metadata key/values, tensor infos, then the tensor data at an
aligned offset. F32, F16, Q8_0 and Q4_0 tensors load; quantized ones are dequantized to float32."""
from __future__ import annotations
from tinygrad.dtype import dtypes
from tinygrad.helpers import prod
from tinygrad.nn.binary import FormatError, Cursor, source_bytes, shape_problem

# metadata value types: struct format (or a name for the variable-length ones) and the smallest size a value takes
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY, MAX_ARRAY_DEPTH, GGML_MAX_DIMS = 8, 9, 4, 4
# ggml tensor types: (name, elements per block, bytes per block)
GGML_TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 8: ("Q8_0", 32, 34)}

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

def _dequantize(kind:str, blocks):
  """blocks: uint8 (n, bytes per block) -> float32 (n*32,); each block is an fp16 scale then its quants"""
  scale = (blocks[:, 0].cast(dtypes.uint16) | (blocks[:, 1].cast(dtypes.uint16) << 8)).bitcast(dtypes.float16).cast(dtypes.float32).reshape(-1, 1)
  q = blocks[:, 2:]
  # Q8_0: 32 signed bytes; Q4_0: 16 bytes, low nibbles are elements 0..15 and high nibbles 16..31, each stored with +8
  vals = q.bitcast(dtypes.int8).cast(dtypes.float32) if kind == "Q8_0" else ((q & 0xF).cat(q >> 4, dim=1).cast(dtypes.float32) - 8)
  return (vals * scale).flatten()

def gguf_load(src) -> tuple[dict, dict]:
  """(metadata {key: value}, {name: Tensor}) of a .gguf path or a uint8 Tensor holding one; shapes are ggml's dims reversed (row-major)"""
  from tinygrad.tensor import Tensor
  data, name = source_bytes(src)
  c = Cursor(data, name)
  if (magic := bytes(c.take(4, "magic"))) != b"GGUF": c.fail(f"magic is {magic!r}, a GGUF file starts with b'GGUF'", 0)
  if (version := c.unpack("I", "version")[0]) not in (2, 3): c.fail(f"version {version} is not supported (2 and 3 are)", 4)
  n_tensors, n_kv = c.unpack("QQ", "tensor and metadata counts")
  c.need(n_kv, 13, "metadata count")  # key length 8 + type 4 + a value of at least 1 byte
  kv = {}
  for i in range(n_kv):
    at = c.pos
    if (key := _string(c, f"metadata key {i}")) in kv: c.fail(f"metadata key {key!r} appears twice", at)
    (vtype,) = c.unpack("I", f"type of metadata {key!r}")
    kv[key] = _value(c, vtype, f"metadata {key!r}")
  c.need(n_tensors, 24, "tensor count")  # name length 8 + n_dims 4 + type 4 + offset 8
  infos, names = [], set()
  for i in range(n_tensors):
    tname = _string(c, f"name of tensor {i}")
    (n_dims,) = c.unpack("I", f"n_dims of tensor {tname!r}")
    if n_dims > GGML_MAX_DIMS: c.fail(f"tensor {tname!r} has {n_dims} dims; ggml tensors have at most {GGML_MAX_DIMS}", c.pos - 4)
    dims = c.unpack(f"{n_dims}Q", f"dims of tensor {tname!r}")
    if problem := shape_problem(dims): c.fail(f"tensor {tname!r} {problem}", c.pos - 8 * n_dims)
    ttype, off = c.unpack("IQ", f"type and offset of tensor {tname!r}")
    if ttype not in GGML_TYPES:
      c.fail(f"tensor {tname!r} has ggml type {ttype}; supported: {', '.join(f'{v[0]} ({k})' for k, v in GGML_TYPES.items())}")
    if tname in names: c.fail(f"tensor name {tname!r} appears twice")
    names.add(tname)
    infos.append((tname, (dims, GGML_TYPES[ttype], off)))
  align = kv.get("general.alignment", 32)
  if type(align) is not int or not 0 < align <= 1 << 16 or align & (align - 1): c.fail(f"general.alignment {align!r} is not a power of two <= 65536")
  start = c.pos + (-c.pos % align)
  spans, out = [], {}
  for tname, (dims, (kind, per_block, block_bytes), off) in infos:
    n = prod(dims)
    row = dims[0] if dims else 1  # ggml quantizes each row (ne[0], the innermost dim) in whole blocks
    if row % per_block: c.fail(f"tensor {tname!r} has rows (ne[0]) of {row} elements, not a whole number of {kind} blocks of {per_block}")
    nbytes = n // per_block * block_bytes
    if off % align or start + off + nbytes > len(data):
      c.fail(f"tensor {tname!r} ({kind}, dims {list(dims)}, {nbytes} bytes) at data offset {off} is misaligned or runs past the file's end "
             f"({len(data)} bytes, data starts at {start})", start)
    spans.append((off, off + nbytes, tname))
    raw = data[start+off:start+off+nbytes]
    shape = tuple(reversed(dims))
    if kind in ("F32", "F16"): out[tname] = Tensor(raw, dtype=dtypes.float32 if kind == "F32" else dtypes.float16).reshape(shape)
    elif n: out[tname] = _dequantize(kind, Tensor(raw).reshape(-1, block_bytes)).reshape(shape)
    else: out[tname] = Tensor.zeros(shape)
  for (_, end, a), (begin, _, b) in zip(spans := sorted(spans), spans[1:]):
    if begin < end: raise FormatError(f"{name}: tensors {a!r} and {b!r} overlap in the data section (starting at byte offset {start})")
  return kv, out
