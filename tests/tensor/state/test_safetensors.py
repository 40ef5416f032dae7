import json, struct
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.nn.state import safe_load, safe_save, safe_load_metadata, FormatError
from tinygrad.nn.safetensors import SAFE_DTYPES

VALUES = {dtypes.bool: [True, False, True], dtypes.float16: [1.5, -2.0, 0.25], dtypes.bfloat16: [1.5, -2.0, 256.0]}
FP8 = ("F8_E4M3", "F8_E5M2")

@pytest.mark.parametrize("code", [c for c in SAFE_DTYPES if c not in FP8])
def test_roundtrip_every_dtype(tmp_path, code):
  dt = SAFE_DTYPES[code]
  vals = VALUES.get(dt, [1, 2, 3] if dtypes.is_int(dt) else [1.5, -2.0, 1e-3])
  t = Tensor(vals * 2, dtype=dt).reshape(2, 3)
  safe_save({"t": t, "scalar": t[0, 0], "empty": Tensor.empty(0, 4, dtype=dt)}, p := tmp_path / "x.safetensors")
  header = json.loads(p.read_bytes()[8:8+struct.unpack("<Q", p.read_bytes()[:8])[0]])
  assert header["t"]["dtype"] == code and header["t"]["shape"] == [2, 3]
  out = safe_load(p)
  assert out["t"].dtype is dt and out["t"].tolist() == t.tolist() and out["scalar"].shape == () and out["empty"].shape == (0, 4)

@pytest.mark.parametrize("code", FP8)
def test_fp8_loads_as_its_dtype(tmp_path, code):
  # bytes 0x00, 0x38, 0xB8, 0x7B: 0, 1 (e4m3) or 0.5 (e5m2), its negative, and 0b0_1111_011 = 1.375 * 2**8 = 352 (e4m3)
  # or 0b0_11110_11 = 1.75 * 2**15 = 57344 (e5m2's largest)
  data = bytes([0x00, 0x38, 0xB8, 0x7B])
  (p := tmp_path / "f8.safetensors").write_bytes(_file({"w": {"dtype": code, "shape": [2, 2], "data_offsets": [0, 4]}}, data))
  assert (t := safe_load(p)["w"]).dtype is SAFE_DTYPES[code] and t.shape == (2, 2)
  # a path's tensors are views of the file on its DISK device (tinygrad's): moved to a device that computes to convert them
  assert t.to("CPU").float().tolist() == ([[0.0, 1.0], [-1.0, 352.0]] if code == "F8_E4M3" else [[0.0, 0.5], [-0.5, 57344.0]])
  assert t.tolist() == t.to("CPU").tolist() and t.device.startswith("DISK:")

def test_metadata_and_tensor_source(tmp_path):
  safe_save({"a": Tensor([1.0, 2.0])}, p := tmp_path / "m.safetensors", metadata={"format": "pt"})
  raw, data_start, header = safe_load_metadata(p)
  assert header["__metadata__"] == {"format": "pt"} and data_start % 8 == 0 and raw.shape == (p.stat().st_size,)
  begin, end = header["a"]["data_offsets"]  # upstream's meaning of the second value: where the data starts
  assert raw[data_start+begin:data_start+end].bitcast(dtypes.float32).tolist() == [1.0, 2.0]
  assert safe_load(Tensor(p.read_bytes()))["a"].tolist() == [1.0, 2.0]

def _raw(js:bytes, data:bytes=b"") -> bytes: return struct.pack("<Q", len(js)) + js + data
def _file(header:dict, data:bytes=b"") -> bytes: return _raw(json.dumps(header).encode(), data)

@pytest.mark.parametrize("blob, match", [
  (b"\x01\x00", "header length"),
  (struct.pack("<Q", 1 << 40) + b"{}", "JSON header needs 1099511627776 bytes"),
  (struct.pack("<Q", 2) + b"{]", "not JSON"),
  (_file([1]), "JSON object"),
  (_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4), "data_offsets"),
  (_file({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}, b"\0" * 8), "16 bytes but data_offsets"),
  (_file({"a": {"dtype": "F32", "shape": [1 << 20, 1 << 20], "data_offsets": [0, 4]}}, b"\0" * 4), "bytes but data_offsets"),
  (_file({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4), "shape"),
  (_file({"a": {"dtype": "Q9", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4), "dtype 'Q9'"),
  (_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8), "overlap"),
  (_file({"__metadata__": {"a": 1}}), "__metadata__"),
  (_file({"a": {"dtype": "F32", "shape": [1]}}), "exactly dtype"),
  (_file({"a": {"dtype": ["F32"], "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4), r"dtype \['F32'\]"),
  (_file({"a": {"dtype": "F32", "shape": [1 << 32, 1 << 32, 0], "data_offsets": [0, 0]}}), "multiply past 281474976710656 elements"),
  (_file({"a": {"dtype": "F32", "shape": [1] * 65, "data_offsets": [0, 4]}}, b"\0" * 4), "65 dims"),
  (_raw(b"[" * 100000 + b"]" * 100000), "nests too deeply"),
  (_raw(b'{"__metadata__": ' + b"1" * 5000 + b"}"), "a number of 5000 digits"),
  (_raw(b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "a": {"dtype": "I32", "shape": [1], "data_offsets": [0, 4]}}', b"\0" * 4),
   "repeats the key 'a'"),
])
@pytest.mark.parametrize("load", [safe_load, safe_load_metadata])
def test_malformed_files_name_the_problem(tmp_path, blob, match, load):
  (p := tmp_path / "bad.safetensors").write_bytes(blob)
  with pytest.raises(FormatError, match=match): load(p)

def test_safe_save_names_a_value_that_is_not_a_tensor(tmp_path):
  import numpy as np
  with pytest.raises(TypeError, match="safe_save: value of 'w' is a numpy.ndarray, not a Tensor"):
    safe_save({"w": np.ones(3, dtype=np.float32)}, tmp_path / "n.safetensors")
  with pytest.raises(TypeError, match="value of 'b' is a list, not a Tensor"): safe_save({"a": Tensor([1.0]), "b": [1.0]}, tmp_path / "l.safetensors")

@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
@pytest.mark.parametrize("load", [safe_load, safe_load_metadata])
def test_file_contents_passed_as_bytes_are_a_type_error(tmp_path, kind, load):
  # open() takes bytes for a path: the contents gave "ValueError: embedded null byte"
  safe_save({"a": Tensor([1.0])}, p := tmp_path / "a.safetensors")
  with pytest.raises(TypeError, match=f"{load.__name__} expects a path or a uint8 Tensor of the file, got a {kind.__name__}"):
    load(kind(p.read_bytes()))
