"""The protobuf reader against hand-encoded bytes (tests/onnx/pbenc.py, written from the wire-format spec): values, every way a
field can be stored, and malformed input, which must fail with ProtobufError naming the field and byte offset."""
import math, os, struct
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad.onnx.wire import ProtobufError, MAX_DEPTH
from tinygrad.onnx.proto import parse
from tinygrad.onnx.model import load_model
from tinygrad.onnx.tensor_data import tensor_data
import pbenc as pb

def test_small_model_fields():
  m = load_model(pb.small_model())
  g = m.graph
  assert m.opsets == {"": 17} and m.ir_version == 8
  assert [n.op for n in g.nodes] == ["MatMul", "Add"] and g.nodes[1].attrs == {"alpha": 0.25, "perm": [1, 0]}
  assert list(g.inputs) == ["X"] and g.inputs["X"].shape == ("N", 3) and g.inputs["X"].elem.name == "FLOAT"
  assert g.initializers["W"].to_list() == [0, 1, 2, 3, 4, 5] and g.initializers["W"].shape == (3, 2)
  assert g.initializers["B"].to_list() == [0.5, -1.5]

@pytest.mark.parametrize("v", [0, 1, 127, 128, 300, 2**31 - 1, 2**63 - 1, -1, -2**63])
def test_int64_varints(v):
  t = parse("TensorProto", pb.packed(1, [v, 5]) + pb.vint(2, 7))
  assert t.dims == [v, 5]

def test_repeated_scalars_packed_or_not_are_the_same():
  unpacked = b"".join(pb.vint(7, v) for v in (3, -4, 5))
  assert parse("TensorProto", unpacked).int64_data == parse("TensorProto", pb.packed(7, [3, -4, 5])).int64_data == [3, -4, 5]

def test_int32_field_is_sign_extended_varint():
  # int32 -1 is written as a 10-byte varint; the reader keeps the low 32 bits, signed
  assert parse("TensorProto", pb.packed(5, [-1, 2**31 - 1])).int32_data == [-1, 2**31 - 1]

def test_unknown_fields_of_every_wire_type_are_skipped():
  extra = pb.vint(99, 5) + pb.tag(98, 1) + b"\0" * 8 + pb.ln(97, b"xyz") + pb.tag(96, 5) + b"\0" * 4
  assert parse("TensorProto", extra + pb.ln(8, "t")).name == "t"

@pytest.mark.parametrize("bad, what", [
  (b"\x80" * 11, "varint longer than 10 bytes"),
  (b"\x82", "varint truncated"),
  (pb.tag(8, 2) + pb.varint(50) + b"abc", "runs past the end"),
  (pb.tag(8, 0) + b"\x01", "wire type 0"),           # a string field as a varint
  (pb.tag(4, 2) + pb.varint(3) + b"abc", "not a multiple of 4"),  # packed floats
  (pb.tag(99, 3), "unsupported wire type 3"),         # groups
  (pb.tag(0, 0) + b"\x00", "field number 0"),
  (pb.ln(8, b"\xff\xfe"), "invalid UTF-8"),
])
def test_malformed_messages_name_the_problem(bad, what):
  with pytest.raises(ProtobufError, match=what) as e: parse("TensorProto", bad)
  assert "byte" in str(e.value) and "TensorProto" in str(e.value)

def test_every_truncation_of_a_model_fails_cleanly():
  full = pb.small_model()
  for cut in range(len(full)):
    try: load_model(full[:cut])
    except ProtobufError as e: assert "byte" in str(e) or "no graph" in str(e) or "needs" in str(e) or "values but dims" in str(e), str(e)

def test_deep_nesting_is_refused():
  g = b""
  for _ in range(MAX_DEPTH + 5): g = pb.ln(1, pb.ln(5, pb.ln(1, "a") + pb.vint(20, 5) + pb.ln(6, g)))  # graph > node > attr > graph ...
  with pytest.raises(ProtobufError, match="nested deeper"): load_model(pb.ln(7, g))

def test_huge_dims_with_little_data_do_not_allocate():
  t = parse("TensorProto", pb.tensor("big", [1 << 20, 1 << 20], 1, b"\0" * 8))
  with pytest.raises(ProtobufError, match=r"'big'.*needs \d+ bytes of data, the file has 8"): tensor_data(t)
  t = parse("TensorProto", pb.packed(1, [1 << 40]) + pb.vint(2, 7) + pb.packed(7, [1, 2]))
  with pytest.raises(ProtobufError, match="int64_data has 2 values but dims say"): tensor_data(t)
  with pytest.raises(ProtobufError, match="negative dimension"): tensor_data(parse("TensorProto", pb.tensor("n", [-1], 1, b"")))

# (data_type, raw bytes, expected python values): hand-checked bit patterns of the small types
SMALL_TYPES = [
  (17, bytes([0x38, 0xb8, 0x7e, 0x7f, 0x01]), [1.0, -1.0, 448.0, math.nan, 2.0**-9]),    # FLOAT8E4M3FN: max 448, 0x7f nan, subnormal
  (18, bytes([0x40, 0x80, 0x00, 0x7f]), [1.0, math.nan, 0.0, 240.0]),                   # FLOAT8E4M3FNUZ: bias 8, 0x80 nan
  (19, bytes([0x3c, 0x7c, 0xfc, 0x7d, 0x7b]), [1.0, math.inf, -math.inf, math.nan, 57344.0]),  # FLOAT8E5M2
  (20, bytes([0x40, 0x80, 0x7f]), [1.0, math.nan, 57344.0]),                            # FLOAT8E5M2FNUZ
  (24, bytes([127, 128, 0, 255]), [1.0, 2.0, 2.0**-127, math.nan]),                     # FLOAT8E8M0
  (23, bytes([0x72, 0xf1]), [1.0, 6.0, 0.5, -6.0]),                                     # FLOAT4E2M1, low nibble first
  (22, bytes([0x8f, 0x07]), [-1, -8, 7, 0]),                                            # INT4
  (21, bytes([0x8f, 0x07]), [15, 8, 7, 0]),                                             # UINT4
  (26, bytes([0b11100100]), [0, 1, -2, -1]),                                            # INT2, LSB first
  (25, bytes([0b11100100]), [0, 1, 2, 3]),                                              # UINT2
  (27, bytes([0x08 | (0x1f & 3) << 6, 0x1f >> 2, 0]), [1.0, 7.5, 0.0, 0.0]),          # FLOAT6E2M3 x4 in 3 bytes: 0x1f is the max
]

@pytest.mark.parametrize("dt, raw, want", SMALL_TYPES, ids=[str(t[0]) for t in SMALL_TYPES])
def test_small_types_decode(dt, raw, want):
  got = tensor_data(parse("TensorProto", pb.tensor("s", [len(want)], dt, raw))).to_list()
  assert len(got) == len(want)
  for g, w in zip(got, want): assert (math.isnan(g) and math.isnan(w)) or g == w, (got, want)

def test_sub_byte_types_from_int32_data():
  # int32_data holds one packed byte per entry for 4-bit types
  t = parse("TensorProto", pb.packed(1, [4]) + pb.vint(2, 22) + pb.packed(5, [0x8f, 0x07]))
  assert tensor_data(t).to_list() == [-1, -8, 7, 0]

@pytest.mark.parametrize("dt, field, vals, fmt", [(6, 5, [1, -2], "<2i"), (3, 5, [-3, 4], "<2b"), (9, 5, [1, 0], "<2?"),
                                                  (7, 7, [-5, 2**40], "<2q"), (13, 11, [2**64 - 1, 3], "<2Q"), (12, 11, [7, 2**32 - 1], "<2I")])
def test_typed_fields(dt, field, vals, fmt):
  t = parse("TensorProto", pb.packed(1, [2]) + pb.vint(2, dt) + pb.packed(field, vals))
  assert tensor_data(t).data == struct.pack(fmt, *vals)

def test_float16_bits_in_int32_data():
  t = parse("TensorProto", pb.packed(1, [2]) + pb.vint(2, 10) + pb.packed(5, [0x3c00, 0xc000]))
  assert tensor_data(t).to_list() == [1.0, -2.0]

def test_string_tensor():
  t = parse("TensorProto", pb.packed(1, [2]) + pb.vint(2, 8) + pb.ln(6, b"ab") + pb.ln(6, b""))
  assert tensor_data(t).data == [b"ab", b""]

def _external(tmp_path, location, offset="0", length="8", size=16):
  (tmp_path / "weights.bin").write_bytes(struct.pack("<4f", 1, 2, 3, 4)[:size])
  ext = pb.ln(13, pb.ln(1, "location") + pb.ln(2, location)) + pb.ln(13, pb.ln(1, "offset") + pb.ln(2, offset)) + \
        pb.ln(13, pb.ln(1, "length") + pb.ln(2, length)) + pb.vint(14, 1)
  t = pb.tensor("W", [2], 1, extra=ext)
  (tmp_path / "m.onnx").write_bytes(pb.model([pb.node("Identity", ["W"], ["Y"])], [], [pb.value_info("Y", 1, [2])], [t]))
  return load_model(str(tmp_path / "m.onnx"))

def test_external_data(tmp_path):
  assert _external(tmp_path, "weights.bin", offset="8").graph.initializers["W"].to_list() == [3.0, 4.0]

@pytest.mark.parametrize("loc, offset, length, what", [
  ("../weights.bin", "0", "8", "outside the model's folder"), ("/etc/passwd", "0", "8", "outside the model's folder"),
  ("weights.bin", "12", "8", "is outside"), ("weights.bin", "x", "8", "not integers"), ("nope.bin", "0", "8", "does not exist"),
  ("weights.bin", "0", "4", "needs 8 bytes"),
])
def test_external_data_is_checked(tmp_path, loc, offset, length, what):
  with pytest.raises(ProtobufError, match=what): _external(tmp_path, loc, offset, length)

def test_external_data_symlink_out_of_folder_is_refused(tmp_path):
  (tmp_path / "sub").mkdir()
  os.symlink(tmp_path / "weights.bin", tmp_path / "sub" / "link.bin")
  (tmp_path / "weights.bin").write_bytes(b"\0" * 16)
  ext = pb.ln(13, pb.ln(1, "location") + pb.ln(2, "link.bin")) + pb.vint(14, 1)
  (tmp_path / "sub" / "m.onnx").write_bytes(pb.model([], [], [], [pb.tensor("W", [2], 1, extra=ext)]))
  with pytest.raises(ProtobufError, match="outside the model's folder"): load_model(str(tmp_path / "sub" / "m.onnx"))

def _sparse(name:str, values:bytes, indices:bytes|None, dims:list[int]) -> bytes:
  """a SparseTensorProto: values (field 1) named `name`, indices (field 2), dims (field 3)"""
  return pb.ln(1, values) + (pb.ln(2, indices) if indices is not None else b"") + pb.packed(3, dims)

def _sparse_model(*sparse:bytes) -> bytes:
  return pb.vint(1, 8) + pb.ln(8, pb.ln(1, "") + pb.vint(2, 17)) + pb.ln(7, pb.ln(2, "g") + b"".join(pb.ln(15, s) for s in sparse))

def _floats(name:str, vals:list[float]) -> bytes: return pb.tensor(name, [len(vals)], 1, struct.pack(f"<{len(vals)}f", *vals))
def _int64s(dims:list[int], vals:list[int]) -> bytes: return pb.tensor("", dims, 7, struct.pack(f"<{len(vals)}q", *vals))

def test_sparse_initializers_densify():
  flat = _sparse("a", _floats("a", [5, 6]), _int64s([2], [1, 3]), [4])
  coords = _sparse("b", _floats("b", [5, 6]), _int64s([2, 2], [0, 1, 1, 0]), [2, 2])  # (0, 1) and (1, 0)
  inits = load_model(_sparse_model(flat, coords)).graph.initializers
  assert inits["a"].to_list() == [0, 5, 0, 6] and inits["a"].shape == (4,)
  assert inits["b"].to_list() == [0, 5, 6, 0] and inits["b"].shape == (2, 2)

@pytest.mark.parametrize("values, indices, dims, what", [
  (pb.tensor("v", [1], 8) + pb.ln(6, b"a"), _int64s([1], [0]), [4], "STRING have no tinygrad dtype"),
  (_floats("v", [5, 6]), None, [4], "needs indices"),
  (_floats("v", [5, 6]), _int64s([2, 1], [0, 1]), [2, 2], r"indices have shape \(2, 1\); 2 values in dims \(2, 2\) need \[2\] or \[2, 2\]"),
  (_floats("v", [5, 6]), _int64s([2, 2], [0, 1, 1, 0]), [4], r"indices have shape \(2, 2\)"),
  (_floats("v", [5]), pb.tensor("", [1], 1, struct.pack("<f", 1.5)), [4], "indices are FLOAT; ONNX requires INT64"),
  (_floats("v", [5]), _int64s([1], [4]), [4], "outside the 4 elements"),
  (_floats("v", [5]), _int64s([1, 2], [0, 2]), [2, 2], r"sparse index \[0, 2\] is outside dims \(2, 2\)"),  # row-major 2 is in range
  (pb.tensor("v", [1, 1], 1, struct.pack("<f", 5)), _int64s([1], [0]), [4], r"values have shape \(1, 1\)"),
  (_floats("v", [5]), _int64s([1], [0]), [1 << 62, 0], "multiply past"),
])
def test_malformed_sparse_initializers_name_it(values, indices, dims, what):
  with pytest.raises(ProtobufError, match=what) as e: load_model(_sparse_model(_sparse("v", values, indices, dims)))
  assert "sparse_initializer 0 'v'" in str(e.value)

def test_sparse_initializers_share_one_dense_limit(monkeypatch):
  from tinygrad.onnx import model
  monkeypatch.setattr(model, "MAX_DENSE_BYTES", 64)
  one = lambda name: _sparse(name, _floats(name, [5]), _int64s([1], [0]), [12])  # 48 bytes dense
  assert load_model(_sparse_model(one("a"))).graph.initializers["a"].to_list() == [5] + [0] * 11
  with pytest.raises(ProtobufError, match="'b': densifies to 48 bytes, more than the 16 left of the 64-byte limit"):
    load_model(_sparse_model(one("a"), one("b")))

def test_float6_codes_from_int32_data():
  # onnx.helper writes 6-bit floats one code per int32_data entry: 0x08 is 1.0 and 0x1f 7.5 in FLOAT6E2M3; 200 is no 6-bit code
  t = parse("TensorProto", pb.packed(1, [2]) + pb.vint(2, 27) + pb.packed(5, [0x08, 0x1f]))
  assert tensor_data(t).to_list() == [1.0, 7.5]
  with pytest.raises(ProtobufError, match="int32_data holds 200, which is no 6-bit FLOAT6E2M3 code"):
    tensor_data(parse("TensorProto", pb.packed(1, [1]) + pb.vint(2, 27) + pb.packed(5, [200])))

@pytest.mark.parametrize("dims, what", [([1 << 62, 0], "multiply past"), ([1] * 65, "65 dims")])
def test_shapes_past_the_limits_are_refused(dims, what):
  with pytest.raises(ProtobufError, match=f"'big': the tensor .*{what}"): tensor_data(parse("TensorProto", pb.tensor("big", dims, 1, b"")))

def test_external_location_with_a_nul_byte_names_the_tensor(tmp_path):
  with pytest.raises(ProtobufError, match=r"'W': external data location 'weights.bin\\x00x' holds a NUL byte"): _external(tmp_path, "weights.bin\0x")

# *** fuzzing: any mutation of a valid model parses or raises ProtobufError; nothing else, no hang ***
_MODEL = pb.small_model()

@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["flip", "set", "insert", "delete"]), st.integers(0, len(_MODEL) - 1), st.integers(0, 255)),
                min_size=1, max_size=6))
def test_fuzz_mutated_models(mutations):
  buf = bytearray(_MODEL)
  for kind, at, byte in mutations:
    at = min(at, len(buf) - 1)
    if kind == "flip": buf[at] ^= 1 << (byte % 8)
    elif kind == "set": buf[at] = byte
    elif kind == "insert": buf.insert(at, byte)
    elif len(buf) > 1: del buf[at]
  try: m = load_model(bytes(buf))
  except ProtobufError: return
  for t in m.graph.initializers.values(): assert len(t.data) <= len(buf) * 8  # decoded data is bounded by the file

@settings(max_examples=200, deadline=2000)
@given(st.binary(max_size=200))
def test_fuzz_random_bytes(data):
  try: load_model(data)
  except ProtobufError: pass

def test_runs_without_onnx_protobuf_or_numpy(tmp_path):
  # a board without them: block the imports in a fresh interpreter, then read and run a hand-encoded model
  import subprocess, sys, pathlib
  w = pb.tensor("W", [3, 2], 1, struct.pack("<6f", *range(6)))
  b = pb.tensor("B", [2], 1, extra=pb.ln(4, struct.pack("<2f", 0.5, -1.5)))
  m = pb.model([pb.node("MatMul", ["X", "W"], ["T"]), pb.node("Add", ["T", "B"], ["Y"])], [pb.value_info("X", 1, ["N", 3])],
               [pb.value_info("Y", 1, ["N", 2])], [w, b])
  (tmp_path / "m.onnx").write_bytes(m)
  script = f"""
import sys
class Block:
  def find_spec(self, name, path=None, target=None):
    if name.split(".")[0] in ("onnx", "google", "numpy", "onnxruntime"): raise ImportError(f"{{name}} is blocked")
sys.meta_path.insert(0, Block())
from tinygrad import Tensor
from tinygrad.onnx import OnnxRunner
out = OnnxRunner({str(tmp_path / "m.onnx")!r})({{"X": Tensor([[1.0, 2.0, 3.0]])}})
print(out["Y"].tolist())
"""
  r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240, cwd=pathlib.Path(__file__).parent)
  assert r.returncode == 0, r.stderr
  # X @ W + B with W = [[0, 1], [2, 3], [4, 5]], B = [0.5, -1.5]: [16 + 0.5, 22 - 1.5]
  assert r.stdout.strip() == "[[16.5, 20.5]]", r.stdout
