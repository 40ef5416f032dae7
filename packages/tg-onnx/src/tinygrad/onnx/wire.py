"""The protobuf wire format, read with bounds checks: varints, fixed32/64, length-delimited fields and packed repeated scalars.
A message is decoded by a schema (field number -> name, kind, repeated) into a Msg; unknown fields are skipped by wire type.
Every read checks that it stays inside the enclosing field, so a truncated or malformed file raises ProtobufError naming the
field path and byte offset, and nothing is allocated that the bytes in hand do not justify."""
from __future__ import annotations
import struct
from typing import Any

MAX_DEPTH = 64  # messages nest this deep at most: a graph in an attribute in a node in a graph ... (recursion stays bounded)

class ProtobufError(ValueError):
  """A malformed protobuf: the message names the field path and the byte offset where reading failed."""

class Msg:
  """A decoded message: one attribute per schema field, defaults for absent ones ([] for repeated, None for messages)."""
  def __init__(self, schema:Schema):
    self._schema, self._present = schema, set()
    for name, kind, repeated in schema.fields.values(): setattr(self, name, [] if repeated else _default(kind))
  def has(self, name:str) -> bool: return name in self._present
  def __repr__(self): return f"{self._schema.name}({', '.join(f'{n}={getattr(self, n)!r}' for n, _, _ in self._schema.fields.values())})"

def _default(kind) -> Any: return {"int": 0, "sint32": 0, "uint": 0, "float": 0.0, "double": 0.0, "string": "", "bytes": b""}.get(kind)

class Schema:
  """fields: {number: (name, kind, repeated)}; kind is a scalar name ("int" int64, "sint32" int32, "uint" uint64, "float",
  "double", "string", "bytes") or another Schema's name (resolved through `registry` so messages can refer to each other)."""
  registry: dict[str, Schema] = {}
  def __init__(self, name:str, fields:dict[int, tuple]):
    self.name, self.fields = name, {n: (f[0], f[1], len(f) > 2 and f[2] == "repeated") for n, f in fields.items()}
    Schema.registry[name] = self

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5
_SCALAR_WIRE = {"int": _VARINT, "sint32": _VARINT, "uint": _VARINT, "float": _FIXED32, "double": _FIXED64}

class Reader:
  def __init__(self, buf:bytes|memoryview):
    self.buf = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf

  def varint(self, pos:int, end:int, where:str) -> tuple[int, int]:
    """(value, next position); at most 10 bytes, never past `end`"""
    val, shift, start = 0, 0, pos
    while True:
      if pos >= end: raise ProtobufError(f"{where}: varint truncated at byte {start} (field ends at byte {end})")
      b = self.buf[pos]
      val |= (b & 0x7f) << shift
      pos += 1
      if not b & 0x80: return val, pos
      shift += 7
      if shift >= 70: raise ProtobufError(f"{where}: varint longer than 10 bytes at byte {start}")

  def _scalar(self, kind:str, wire:int, pos:int, end:int, where:str) -> tuple[Any, int]:
    if wire != _SCALAR_WIRE[kind]: raise ProtobufError(f"{where}: wire type {wire} at byte {pos} but a {kind} field needs {_SCALAR_WIRE[kind]}")
    if wire == _VARINT:
      v, pos = self.varint(pos, end, where)
      v &= (1 << 64) - 1
      if kind == "int" and v >= 1 << 63: v -= 1 << 64
      if kind == "sint32": v = ((v & 0xffffffff) ^ 0x80000000) - 0x80000000  # int32 is sign-extended to 64 bits, keep the low word
      return v, pos
    size = 4 if wire == _FIXED32 else 8
    if pos + size > end: raise ProtobufError(f"{where}: {kind} truncated at byte {pos} ({size} bytes needed, {end-pos} left)")
    return struct.unpack_from("<f" if size == 4 else "<d", self.buf, pos)[0], pos + size

  def _packed(self, kind:str, pos:int, end:int, where:str) -> list:
    # the count is bounded by the bytes in hand: fixed-size kinds decode in one step, varints one at a time
    if kind in ("float", "double"):
      size = 4 if kind == "float" else 8
      if (end - pos) % size: raise ProtobufError(f"{where}: packed {kind} field at byte {pos} has {end-pos} bytes, not a multiple of {size}")
      return list(struct.unpack_from(f"<{(end-pos)//size}{'f' if size == 4 else 'd'}", self.buf, pos))
    out = []
    while pos < end:
      v, pos = self._scalar(kind, _VARINT, pos, end, where)
      out.append(v)
    return out

  def skip(self, wire:int, pos:int, end:int, where:str) -> int:
    if wire == _VARINT: return self.varint(pos, end, where)[1]
    if wire in (_FIXED64, _FIXED32):
      if pos + (size := 8 if wire == _FIXED64 else 4) > end: raise ProtobufError(f"{where}: fixed field truncated at byte {pos}")
      return pos + size
    if wire == _LEN:
      n, pos = self.varint(pos, end, where)
      if pos + n > end: raise ProtobufError(f"{where}: length {n} at byte {pos} runs past the end of its field (byte {end})")
      return pos + n
    raise ProtobufError(f"{where}: unsupported wire type {wire} at byte {pos} (groups are not used by ONNX)")

  def message(self, schema:Schema, pos:int, end:int, where:str, depth:int=0) -> Msg:
    if depth > MAX_DEPTH: raise ProtobufError(f"{where}: messages nested deeper than {MAX_DEPTH} at byte {pos}")
    msg = Msg(schema)
    while pos < end:
      tag_at = pos
      tag, pos = self.varint(pos, end, f"{where} (field tag)")
      num, wire = tag >> 3, tag & 7
      if num == 0: raise ProtobufError(f"{where}: field number 0 at byte {tag_at}")
      if num not in schema.fields:
        pos = self.skip(wire, pos, end, f"{where}.<field {num}>")
        continue
      name, kind, repeated = schema.fields[num]
      at = f"{where}.{name}" + (f"[{len(getattr(msg, name))}]" if repeated else "")
      if kind in _SCALAR_WIRE:
        if repeated and wire == _LEN:  # packed
          n, pos = self.varint(pos, end, at)
          if pos + n > end: raise ProtobufError(f"{at}: packed length {n} at byte {pos} runs past the end of its field (byte {end})")
          getattr(msg, name).extend(self._packed(kind, pos, pos + n, at))
          msg._present.add(name)
          pos += n
          continue
        val, pos = self._scalar(kind, wire, pos, end, at)
      else:
        if wire != _LEN: raise ProtobufError(f"{at}: wire type {wire} at byte {pos} but a {kind} field is length-delimited")
        n, pos = self.varint(pos, end, at)
        if pos + n > end: raise ProtobufError(f"{at}: length {n} at byte {pos} runs past the end of its field (byte {end})")
        if kind == "bytes": val = self.buf[pos:pos+n]  # a view: large raw_data is not copied until it is used
        elif kind == "string":
          try: val = bytes(self.buf[pos:pos+n]).decode("utf-8")
          except UnicodeDecodeError as e: raise ProtobufError(f"{at}: invalid UTF-8 at byte {pos + e.start}") from None
        else: val = self.message(Schema.registry[kind], pos, pos + n, at, depth + 1)
        pos += n
      if repeated: getattr(msg, name).append(val)
      else: setattr(msg, name, val)
      msg._present.add(name)
    return msg

def decode(schema:Schema, buf:bytes|memoryview) -> Msg:
  return Reader(buf).message(schema, 0, len(buf), schema.name)
