"""TensorProto -> (tinygrad dtype, shape, little-endian bytes), in pure python: every data field (raw_data, the typed *_data
fields, external files) and every ONNX data type. Types tinygrad has no dtype for widen on load: 2/4-bit ints to int8/uint8,
float8/6/4 variants to float32. Sizes are checked against dims before anything is allocated."""
from __future__ import annotations
import math, os, struct
from dataclasses import dataclass
from typing import Any
from tinygrad.dtype import DType, dtypes
from tinygrad.nn.binary import shape_problem
from tinygrad.onnx.wire import ProtobufError, Msg

def _minifloat(e_bits:int, m_bits:int, bias:int, special:str) -> list[float]:
  """value of every bit pattern of a small float; special: "ieee" (inf/nan at max exponent), "fn" (only all-ones is nan),
  "fnuz" (the negative-zero pattern is nan), "none" (every pattern is finite)"""
  out, top = [], (1 << e_bits) - 1
  for v in range(1 << (1 + e_bits + m_bits)):
    s, e, m = v >> (e_bits + m_bits), (v >> m_bits) & top, v & ((1 << m_bits) - 1)
    if special == "fnuz" and v == 1 << (e_bits + m_bits): out.append(math.nan); continue
    if special == "fn" and e == top and m == (1 << m_bits) - 1: out.append(math.nan); continue
    if special == "ieee" and e == top: out.append(math.nan if m else -math.inf if s else math.inf); continue
    mag = (m / (1 << m_bits)) * 2.0 ** (1 - bias) if e == 0 else (1 + m / (1 << m_bits)) * 2.0 ** (e - bias)
    out.append(-mag if s else mag)
  return out

@dataclass(frozen=True)
class OnnxType:
  name: str
  dtype: DType|None   # what it computes in here (None: strings and complex numbers, which have no tinygrad dtype)
  bits: int           # bits per element in raw_data
  fmt: str|None       # struct format of one stored element (None: sub-byte, decoded by `table`/`signed`)
  table: tuple|None = None  # float value of each bit pattern, for small floats
  signed: bool = False      # sub-byte ints: two's complement

ONNX_TYPES: dict[int, OnnxType] = {
  1: OnnxType("FLOAT", dtypes.float32, 32, "f"), 2: OnnxType("UINT8", dtypes.uint8, 8, "B"), 3: OnnxType("INT8", dtypes.int8, 8, "b"),
  4: OnnxType("UINT16", dtypes.uint16, 16, "H"), 5: OnnxType("INT16", dtypes.int16, 16, "h"), 6: OnnxType("INT32", dtypes.int32, 32, "i"),
  7: OnnxType("INT64", dtypes.int64, 64, "q"), 8: OnnxType("STRING", None, 0, None), 9: OnnxType("BOOL", dtypes.bool, 8, "?"),
  10: OnnxType("FLOAT16", dtypes.float16, 16, "e"), 11: OnnxType("DOUBLE", dtypes.float64, 64, "d"),
  12: OnnxType("UINT32", dtypes.uint32, 32, "I"), 13: OnnxType("UINT64", dtypes.uint64, 64, "Q"),
  14: OnnxType("COMPLEX64", None, 64, "f"), 15: OnnxType("COMPLEX128", None, 128, "d"), 16: OnnxType("BFLOAT16", dtypes.bfloat16, 16, "H"),
  17: OnnxType("FLOAT8E4M3FN", dtypes.float32, 8, None, tuple(_minifloat(4, 3, 7, "fn"))),
  18: OnnxType("FLOAT8E4M3FNUZ", dtypes.float32, 8, None, tuple(_minifloat(4, 3, 8, "fnuz"))),
  19: OnnxType("FLOAT8E5M2", dtypes.float32, 8, None, tuple(_minifloat(5, 2, 15, "ieee"))),
  20: OnnxType("FLOAT8E5M2FNUZ", dtypes.float32, 8, None, tuple(_minifloat(5, 2, 16, "fnuz"))),
  21: OnnxType("UINT4", dtypes.uint8, 4, None), 22: OnnxType("INT4", dtypes.int8, 4, None, signed=True),
  23: OnnxType("FLOAT4E2M1", dtypes.float32, 4, None, tuple(_minifloat(2, 1, 1, "none"))),
  24: OnnxType("FLOAT8E8M0", dtypes.float32, 8, None, tuple([2.0 ** (v - 127) for v in range(255)] + [math.nan])),
  25: OnnxType("UINT2", dtypes.uint8, 2, None), 26: OnnxType("INT2", dtypes.int8, 2, None, signed=True),
  27: OnnxType("FLOAT6E2M3", dtypes.float32, 6, None, tuple(_minifloat(2, 3, 1, "none"))),
  28: OnnxType("FLOAT6E3M2", dtypes.float32, 6, None, tuple(_minifloat(3, 2, 3, "none"))),
}

@dataclass
class TensorData:
  """A decoded initializer or constant: `data` is little-endian bytes of `dtype` (strings: a list of bytes)."""
  name: str
  onnx_type: OnnxType
  shape: tuple[int, ...]
  data: Any
  def to_list(self) -> list:
    """flat python values (for shapes, axes and other constants ops need before running)"""
    if self.onnx_type.dtype is None: raise TypeError(f"tensor {self.name!r} is {self.onnx_type.name}, which has no tinygrad dtype")
    if self.dtype is dtypes.bfloat16:  # the upper half of a float32
      return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in struct.unpack(f"<{len(self.data)//2}H", self.data)]
    return list(struct.unpack(f"<{len(self.data)//self.dtype.itemsize}{self.dtype.fmt}", self.data))
  @property
  def dtype(self) -> DType|None: return self.onnx_type.dtype

def onnx_type(type_id:int, where:str) -> OnnxType:
  if (t := ONNX_TYPES.get(type_id)) is None: raise ProtobufError(f"{where}: unknown ONNX data type {type_id}")
  return t

def checked_shape(dims:list[int], where:str) -> tuple[int, ...]:
  if any(d < 0 for d in dims): raise ProtobufError(f"{where}: negative dimension in dims {list(dims)[:8]}")
  if problem := shape_problem(dims): raise ProtobufError(f"{where}: the tensor {problem}")
  return tuple(dims)

def _stored_bytes(t:OnnxType, n:int) -> int: return (n * t.bits + 7) // 8

def _unpack_subbyte(t:OnnxType, raw:bytes, n:int) -> bytes:
  if t.bits == 6:  # 4 elements in 3 bytes, an LSB-first bit stream
    codes = []
    for g in range(0, len(raw), 3):
      w = int.from_bytes(raw[g:g+3], "little")
      codes.extend((w >> (6 * k)) & 63 for k in range(4))
  else:
    per, mask = 8 // t.bits, (1 << t.bits) - 1
    codes = [(raw[i // per] >> (t.bits * (i % per))) & mask for i in range(n)]
  return _decode_codes(t, codes[:n])

def _decode_codes(t:OnnxType, codes:list[int]) -> bytes:
  if t.table is not None: return struct.pack(f"<{len(codes)}f", *[t.table[c] for c in codes])
  if t.signed: codes = [c - (1 << t.bits) if c >> (t.bits - 1) else c for c in codes]
  return struct.pack(f"<{len(codes)}{'b' if t.signed else 'B'}", *codes)

def _from_raw(t:OnnxType, raw:bytes, n:int, where:str) -> bytes:
  if len(raw) != (want := _stored_bytes(t, n)):
    raise ProtobufError(f"{where}: {t.name} tensor of {n} elements needs {want} bytes of data, the file has {len(raw)}")
  if t.fmt is not None: return raw
  if t.bits == 8: return _decode_codes(t, list(raw))
  return _unpack_subbyte(t, raw, n)

def _external(t:Msg, base_dir:str|None, where:str) -> bytes:
  info = {e.key: e.value for e in t.external_data}
  if base_dir is None: raise ProtobufError(f"{where}: data is in an external file but the model was not loaded from a file")
  if not (loc := info.get("location")): raise ProtobufError(f"{where}: external data has no location")
  if "\0" in loc: raise ProtobufError(f"{where}: external data location {loc!r} holds a NUL byte, which no file name has")
  base = os.path.realpath(base_dir)
  path = os.path.realpath(os.path.join(base, loc))
  if os.path.isabs(loc) or os.path.commonpath([base, path]) != base:
    raise ProtobufError(f"{where}: external data location {loc!r} is outside the model's folder {base}")
  try: offset, length = int(info.get("offset", "0")), int(info["length"]) if "length" in info else None
  except ValueError: raise ProtobufError(f"{where}: external data offset/length are not integers: {info}") from None
  if not os.path.isfile(path): raise ProtobufError(f"{where}: external data file {path} does not exist")
  size = os.path.getsize(path)
  if length is None: length = size - offset
  if offset < 0 or length < 0 or offset + length > size:
    raise ProtobufError(f"{where}: external data [{offset}, {offset}+{length}) is outside {path} ({size} bytes)")
  with open(path, "rb") as f:
    f.seek(offset)
    return f.read(length)

def _from_field(t:OnnxType, proto:Msg, n:int, where:str) -> bytes|None:
  """the typed *_data field that holds this type, or None when it is empty"""
  name = t.name
  if name in ("FLOAT", "COMPLEX64"): vals, field = proto.float_data, "float_data"
  elif name in ("DOUBLE", "COMPLEX128"): vals, field = proto.double_data, "double_data"
  elif name == "INT64": vals, field = proto.int64_data, "int64_data"
  elif name in ("UINT32", "UINT64"): vals, field = proto.uint64_data, "uint64_data"
  else: vals, field = proto.int32_data, "int32_data"
  if not vals: return None
  count = n * (2 if name.startswith("COMPLEX") else 1)
  if t.bits < 8 and t.bits != 6:  # sub-byte values come packed, one byte of them per int32
    if len(vals) != (want := _stored_bytes(t, n)): raise ProtobufError(f"{where}: {field} has {len(vals)} entries, {name} x {n} needs {want}")
    return _unpack_subbyte(t, bytes(v & 0xff for v in vals), n)
  if len(vals) != count: raise ProtobufError(f"{where}: {field} has {len(vals)} values but dims say {count}")
  if t.fmt is None:  # 8- and 6-bit types: one code per entry, in its low byte (as onnx.helper writes them)
    codes = [v & 0xff for v in vals]
    if bad := [c for c in codes if c >> t.bits]: raise ProtobufError(f"{where}: {field} holds {bad[0]}, which is no {t.bits}-bit {name} code")
    return _decode_codes(t, codes)
  if name in ("FLOAT16", "BFLOAT16"): return struct.pack(f"<{n}H", *[v & 0xffff for v in vals])  # bit patterns
  if name == "BOOL": vals = [bool(v) for v in vals]
  try: return struct.pack(f"<{count}{t.fmt}", *vals)
  except struct.error as e: raise ProtobufError(f"{where}: {field} value out of range for {name}: {e}") from None

def tensor_data(proto:Msg, base_dir:str|None=None, where:str="TensorProto") -> TensorData:
  where = f"{where} {proto.name!r}" if proto.name else where
  t = onnx_type(proto.data_type, where)
  shape, n = checked_shape(proto.dims, where), math.prod(proto.dims)
  if t.name == "STRING":
    if len(proto.string_data) != n: raise ProtobufError(f"{where}: string_data has {len(proto.string_data)} values but dims say {n}")
    return TensorData(proto.name, t, shape, [bytes(s) for s in proto.string_data])
  if proto.data_location == 1 or proto.external_data: data = _from_raw(t, _external(proto, base_dir, where), n, where)
  elif len(proto.raw_data) or n == 0: data = _from_raw(t, bytes(proto.raw_data), n, where)
  elif (data := _from_field(t, proto, n, where)) is None: raise ProtobufError(f"{where}: no data for {n} elements of {t.name}")
  return TensorData(proto.name, t, shape, data)
