"""A tiny protobuf encoder for tests, written from the wire-format spec: an oracle independent of the reader and of `onnx`."""
import struct

def varint(v:int) -> bytes:
  v &= (1 << 64) - 1  # negative int64 is its two's complement: 10 bytes
  out = bytearray()
  while True:
    out.append((v & 0x7f) | (0x80 if v > 0x7f else 0))
    v >>= 7
    if not v: return bytes(out)

def tag(num:int, wire:int) -> bytes: return varint(num << 3 | wire)
def vint(num:int, v:int) -> bytes: return tag(num, 0) + varint(v)
def ln(num:int, payload:bytes|str) -> bytes:
  payload = payload.encode() if isinstance(payload, str) else payload
  return tag(num, 2) + varint(len(payload)) + payload
def f32(num:int, v:float) -> bytes: return tag(num, 5) + struct.pack("<f", v)
def packed(num:int, vals:list[int]) -> bytes: return ln(num, b"".join(varint(v) for v in vals))

def tensor(name:str, dims:list[int], data_type:int, raw:bytes|None=None, extra:bytes=b"") -> bytes:
  return packed(1, dims) + vint(2, data_type) + ln(8, name) + (ln(9, raw) if raw is not None else b"") + extra

def value_info(name:str, elem:int, dims:list) -> bytes:
  shape = b"".join(ln(1, ln(2, d) if isinstance(d, str) else vint(1, d)) for d in dims)
  return ln(1, name) + ln(2, ln(1, vint(1, elem) + ln(2, shape)))

def node(op:str, ins:list[str], outs:list[str], attrs:bytes=b"") -> bytes:
  return b"".join(ln(1, i) for i in ins) + b"".join(ln(2, o) for o in outs) + ln(4, op) + attrs

def model(nodes:list[bytes], inputs:list[bytes], outputs:list[bytes], inits:list[bytes]=(), opset:int=17) -> bytes:
  g = b"".join(ln(1, n) for n in nodes) + ln(2, "g") + b"".join(ln(5, t) for t in inits) + \
      b"".join(ln(11, i) for i in inputs) + b"".join(ln(12, o) for o in outputs)
  return vint(1, 8) + ln(8, ln(1, "") + vint(2, opset)) + ln(7, g)

def small_model() -> bytes:
  """Y = X @ W + B with W, B initializers: every kind of field the reader handles once"""
  w = tensor("W", [3, 2], 1, struct.pack("<6f", *range(6)))
  b = tensor("B", [2], 1, extra=ln(4, struct.pack("<2f", 0.5, -1.5)))  # packed float_data
  attr = ln(5, ln(1, "alpha") + vint(20, 1) + f32(2, 0.25)) + ln(5, ln(1, "perm") + vint(20, 7) + packed(8, [1, 0]))
  return model([node("MatMul", ["X", "W"], ["T"]), node("Add", ["T", "B"], ["Y"], attr)],
               [value_info("X", 1, ["N", 3])], [value_info("Y", 1, ["N", 2])], [w, b])
