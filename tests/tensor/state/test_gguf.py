import pathlib, struct, sys
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.nn.state import gguf_load, FormatError
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the writer beside this file is found by path
from gguf_writer import gguf_file, q8_0, q4_0, split_parts

KV = {"general.architecture": "llama", "n": 7, "neg": -3, "big": 1 << 40, "pi": 1.5, "ok": True, "tokens": ["a", "bc", "€"], "nums": [1, 2, 3],
      "nested": [[1, 2], [3]], "empty": []}

def test_metadata_and_float_tensors(tmp_path):
  f32 = struct.pack("<6f", *range(6))
  (p := tmp_path / "m.gguf").write_bytes(gguf_file(KV, {"w": (0, (3, 2), f32), "h": (1, (2,), struct.pack("<2e", 0.5, -2.0))}))
  kv, ts = gguf_load(p)
  assert kv == KV
  assert ts["w"].shape == (2, 3) and ts["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
  assert ts["h"].dtype is dtypes.float16 and ts["h"].tolist() == [0.5, -2.0]

def test_quantized_blocks_dequantize(tmp_path):
  q8 = [[(i * 7) % 256 - 128 for i in range(32)], [i - 16 for i in range(32)]]
  q4 = [[i % 16 for i in range(32)], [15 - i % 16 for i in range(32)]]
  blob = gguf_file({"general.alignment": 64}, {"a": (8, (32, 2), q8_0([0.5, -0.25], q8)), "b": (2, (64,), q4_0([2.0, 0.125], q4))}, align=64)
  _, ts = gguf_load(Tensor(blob))
  assert ts["a"].shape == (2, 32) and ts["a"].tolist() == [[q * 0.5 for q in q8[0]], [q * -0.25 for q in q8[1]]]
  assert ts["b"].tolist() == [(q - 8) * 2.0 for q in q4[0]] + [(q - 8) * 0.125 for q in q4[1]]

def test_tinygrad_014_import_path(tmp_path):
  """0.14 programs import the reader from tinygrad.llm.gguf and pass it a Tensor of the file's path"""
  from tinygrad.llm.gguf import gguf_load as llm_gguf_load
  (p := tmp_path / "m.gguf").write_bytes(gguf_file({"llama.context_length": 48}, {"tok": (0, (2, 2), struct.pack("<4f", 1, 2, 3, 4))}))
  kv, ts = llm_gguf_load(Tensor(p))
  assert kv == {"llama.context_length": 48} and ts["tok"].tolist() == [[1.0, 2.0], [3.0, 4.0]]

def _name(s:str) -> bytes: return struct.pack("<Q", len(s)) + s.encode()
def _kv_u32(key:str, v:int) -> bytes: return _name(key) + struct.pack("<II", 4, v)
def _info(name:str, ggml_type:int) -> bytes: return _name(name) + struct.pack("<IQIQ", 1, 1, ggml_type, 0)  # 1 dim of 1 element, offset 0

GOOD = gguf_file({"k": "v"}, {"w": (0, (4,), b"\0" * 16)})

@pytest.mark.parametrize("blob, match", [
  (b"GGML" + GOOD[4:], "magic"),
  (GOOD[:4] + struct.pack("<I", 1) + GOOD[8:], "version 1"),
  (GOOD[:16] + struct.pack("<Q", 1 << 60) + GOOD[24:], "metadata count = 1152921504606846976"),
  (GOOD[:8] + struct.pack("<Q", 1 << 60) + GOOD[16:], "tensor count"),
  (GOOD[:24] + struct.pack("<Q", 1 << 40) + GOOD[32:], "metadata key 0 needs 1099511627776 bytes"),
  (gguf_file({"a": [1]}, {})[:52], "metadata 'a' array count = 1 needs at least 4"),
  (gguf_file({}, {"w": (16, (256,), b"\0" * 66)}), "ggml type 16"),
  (gguf_file({}, {"w": (8, (31,), b"\0" * 34)}), "whole number of Q8_0 blocks"),
  (gguf_file({}, {"w": (0, (1 << 20, 1 << 20), b"\0" * 16)}), "runs past the file's end"),
  (gguf_file({"general.alignment": 3}, {}), "alignment"),
  (gguf_file({"x": [[[[[1]]]]]}, {}), "nests arrays deeper"),
  (GOOD[:-20], "runs past"),
  (gguf_file({}, {"w": (0, (1, 1, 1, 1, 1), b"\0" * 4)}), "5 dims; ggml tensors have at most 4"),
  (gguf_file({}, {"w": (0, (1 << 63, 1 << 63, 0), b"")}), "multiply past 281474976710656 elements"),
  (gguf_file({}, {"w": (8, (16, 2), q8_0([1.0], [[0] * 32]))}), r"rows \(ne\[0\]\) of 16 elements, not a whole number of Q8_0 blocks"),
  (gguf_file({}, {"w": (2, (48, 2), q4_0([1.0] * 3, [[0] * 32] * 3))}), r"rows \(ne\[0\]\) of 48 elements, not a whole number of Q4_0"),
  (gguf_file({}, {"w": (12, (128, 2), b"\0" * 144)}), r"rows \(ne\[0\]\) of 128 elements, not a whole number of Q4_K blocks of 256"),
  (gguf_file({}, {"w": (14, (256, 2), b"\0" * 210)}), r"tensor 'w' \(Q6_K, dims \[256, 2\], 420 bytes\) .* runs past the file's end"),
  (b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + _kv_u32("k", 1) + _kv_u32("k", 2), "metadata key 'k' appears twice"),
  (b"GGUF" + struct.pack("<IQQ", 3, 2, 0) + _info("w", 0) + _info("w", 0), "tensor name 'w' appears twice"),
])
def test_malformed_files_name_the_problem(tmp_path, blob, match):
  (p := tmp_path / "bad.gguf").write_bytes(blob)
  with pytest.raises(FormatError, match=match): gguf_load(p)

def test_overlapping_tensors(tmp_path):
  blob = bytearray(gguf_file({}, {"a": (0, (8,), b"\0" * 32), "b": (0, (8,), b"\0" * 32)}))
  at = blob.index(b"\x01\x00\x00\x00\x00\x00\x00\x00\x62") + 9 + 4 + 8 + 4  # tensor b's offset field: point it into a's bytes
  blob[at:at+8] = struct.pack("<Q", 0)
  (p := tmp_path / "o.gguf").write_bytes(blob)
  with pytest.raises(FormatError, match="overlap"): gguf_load(p)

def test_many_tensor_infos(tmp_path):
  """20000 infos, the last of an unknown type, so nothing loads: the error names it (the duplicate-name check built a dict per tensor,
  ~9 s here; a set now: its speed is not asserted, only that the walk reaches the end)"""
  n = 20000
  infos = b"".join(_info(f"t{i}", 99 if i == n-1 else 0) for i in range(n))
  (p := tmp_path / "many.gguf").write_bytes(b"GGUF" + struct.pack("<IQQ", 3, n, 0) + infos)
  with pytest.raises(FormatError, match="'t19999' has ggml type 99"): gguf_load(p)

def _f32(*values) -> tuple: return (0, (len(values),), struct.pack(f"<{len(values)}f", *values))
SPLIT_KV = {"general.architecture": "llama", "llama.block_count": 2}
SPLIT = [{"a": _f32(1, 2)}, {"b": _f32(3), "c": _f32(4, 5, 6)}, {"d": _f32(7)}]

def _write_split(tmp_path, files:list[bytes]) -> list:
  """files as the parts of a 3-part model, named as gguf-split names them (fewer files: the last parts missing)"""
  paths = [tmp_path / f"m-{i:05d}-of-{len(SPLIT):05d}.gguf" for i in range(1, len(files) + 1)]
  for path, blob in zip(paths, files): path.write_bytes(blob)
  return paths

def test_split_model_loads_every_part(tmp_path):
  """the first part's path loads the whole model: its metadata (split keys included), every part's tensors"""
  first = _write_split(tmp_path, split_parts(SPLIT_KV, SPLIT))[0]
  kv, ts = gguf_load(str(first))
  assert kv == {**SPLIT_KV, "split.no": 0, "split.count": 3, "split.tensors.count": 4}
  assert {k: t.tolist() for k, t in ts.items()} == {"a": [1.0, 2.0], "b": [3.0], "c": [4.0, 5.0, 6.0], "d": [7.0]}

def test_split_part_as_tensor_asks_for_the_path(tmp_path):
  first = _write_split(tmp_path, split_parts(SPLIT_KV, SPLIT))[0]
  with pytest.raises(FormatError, match="part 1 of a 3-part split model .* load it from the path"): gguf_load(Tensor(first))
  with pytest.raises(FormatError, match="part 1 of a 3-part split model"): gguf_load(Tensor(first.read_bytes()))

def test_split_later_part_asks_for_the_first(tmp_path):
  second = _write_split(tmp_path, split_parts(SPLIT_KV, SPLIT))[1]
  with pytest.raises(FormatError, match=r"part 2 of a 3-part split model \(split.no 1\); load the path of its first part"): gguf_load(second)

def _replace_kv(blob:bytes, key:str, value:int) -> bytes:
  """blob with the u32 metadata `key` set to value (split_parts writes small ints as u32)"""
  at = blob.index(struct.pack("<Q", len(key)) + key.encode()) + 8 + len(key) + 4
  return blob[:at] + struct.pack("<I", value) + blob[at+4:]

@pytest.mark.parametrize("edit, match", [
  (lambda files: files[:2], r"split part 3 of 3 is missing: .*m-00003-of-00003.gguf is not a file"),
  (lambda files: [files[0], split_parts({}, [{}, {"b": _f32(3), "a": _f32(9)}, {}])[1], files[2]], r"tensor name 'a' is also in part 1 \(m-00001"),
  (lambda files: [files[0], files[1], _replace_kv(files[2], "split.count", 4)], "split.count is 4 but part 1 .* says 3"),
  (lambda files: [files[0], files[2], files[1]], r"split.no is 2 but this is part 2 of 3 by its name \(split.no 1\)"),
  (lambda files: [_replace_kv(files[0], "split.tensors.count", 5), *files[1:]], "split.tensors.count is 5 but the 3 parts hold 4 tensors"),
  (lambda files: [gguf_file({"split.count": 3}, {}), *files[1:]], "metadata 'split.no' is missing"),
  (lambda files: [gguf_file({"split.no": 0, "split.count": "3"}, {}), *files[1:]], "metadata 'split.count' is '3', a split GGUF part needs an int"),
])
def test_malformed_split_models(tmp_path, edit, match):
  first = _write_split(tmp_path, edit(split_parts(SPLIT_KV, SPLIT)))[0]
  with pytest.raises(FormatError, match=match): gguf_load(first)

@pytest.mark.parametrize("name, match", [("m.gguf", "not named like a first part, NAME-00001-of-00003.gguf"),
                                         ("m-00001-of-00002.gguf", "the file's name says 2 parts but split.count is 3")])
def test_split_first_part_name(tmp_path, name, match):
  (p := tmp_path / name).write_bytes(split_parts(SPLIT_KV, SPLIT)[0])
  with pytest.raises(FormatError, match=match): gguf_load(p)

def test_a_path_is_mapped_not_read(tmp_path):
  """from a path (or Tensor(path)) the file is mapped on its DISK device: each tensor is a copy of its bytes to the default device,
  read when realized, never the whole file into memory"""
  from tinygrad import Device
  q8 = [[(i * 5) % 256 - 128 for i in range(32)]]
  (p := tmp_path / "m.gguf").write_bytes(gguf_file({}, {"w": (0, (2, 2), struct.pack("<4f", 1, 2, 3, 4)), "q": (8, (32, 1), q8_0([0.5], q8))}))
  for src in (p, Tensor(p)):
    _, ts = gguf_load(src)
    assert all(t.device == Device.DEFAULT for t in ts.values())
    assert any(u.op.name == "BUFFER" and str(u.arg.device).startswith("DISK:") for u in ts["w"].uop.toposort())
    assert ts["w"].tolist() == [[1.0, 2.0], [3.0, 4.0]] and ts["q"].tolist() == [[q * 0.5 for q in q8[0]]]
