"""Fixes from a sweep of the state loaders: safe_save's metadata and names, torch_load's plain-value globals, v1/v3 rebuilds, the tar
checkpoint format, zip detection and zip errors, sparse tar members, upstream's parameter names and zip_extract. No torch needed: the
pickles are written by python's pickler or by hand as opcodes."""
import inspect, io, pathlib, pickle, struct, sys, tarfile, tracemalloc, zipfile
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.nn import state
from tinygrad.nn.state import safe_save, safe_load, safe_load_metadata, torch_load, tar_extract, FormatError
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the writer beside this file is found by path
from torch_writer import FakeStorage, FakeTensor, zip_checkpoint, legacy_checkpoint

# --- safe_save

def test_safe_save_writes_non_string_metadata_as_json_text(tmp_path):
  safe_save({"w": Tensor([1.0, 2.0])}, p := tmp_path / "m.safetensors", metadata={"epoch": 3, "lr": 0.1, "tags": ["a"], "note": "x"})
  assert safe_load(p)["w"].tolist() == [1.0, 2.0]
  assert safe_load_metadata(p)[2]["__metadata__"] == {"epoch": "3", "lr": "0.1", "tags": '["a"]', "note": "x"}

def test_safe_save_refuses_what_the_format_cannot_hold(tmp_path):
  with pytest.raises(ValueError, match="__metadata__"): safe_save({"__metadata__": Tensor([1.0])}, p := tmp_path / "n.safetensors")
  assert not p.exists()
  with pytest.raises(TypeError, match="metadata key 1 is a int"): safe_save({"w": Tensor([1.0])}, p, metadata={1: "a"})
  with pytest.raises(TypeError, match="metadata 'o' is neither a str nor JSON"): safe_save({"w": Tensor([1.0])}, p, metadata={"o": object()})

# --- torch_load: hand-written pickles in a zip checkpoint

STORAGE4 = b"(Vstorage\nctorch\nFloatStorage\nV0\nVcpu\nI4\ntQ"  # storage "0" of 4 floats (BINPERSID)
UNTYPED6 = b"(Vstorage\nctorch.storage\nUntypedStorage\nV0\nVcpu\nI6\ntQ"  # storage "0" of 6 bytes, as torch saves uint16/32/64, float8

def _zip(pkl:bytes, storages:dict|None=None) -> bytes:
  f = io.BytesIO()
  with zipfile.ZipFile(f, "w") as z:
    z.writestr("archive/data.pkl", pkl)
    for k, v in (storages or {}).items(): z.writestr(f"archive/data/{k}", v)
  return f.getvalue()

def _load_ops(tmp_path, ops:bytes, storages:dict|None=None):
  (p := tmp_path / "c.pth").write_bytes(_zip(b"\x80\x02" + ops + b".", storages))
  return torch_load(p)

def test_plain_values_torch_pickles_load(tmp_path):
  # protocol 2 writes bytes as _codecs.encode(text, "latin1"), b"" as bytes(), and these types through __builtin__
  values = {"b": b"abc\xff", "e": b"", "ba": bytearray(b"xy"), "s": {1, 2}, "fs": frozenset({3}), "c": 1 + 2j}
  (p := tmp_path / "v.pth").write_bytes(zip_checkpoint(values))
  assert torch_load(p) == values

@pytest.mark.parametrize("ops, want", [
  (b"ctorch\nfloat16\n", dtypes.float16), (b"ctorch\nuint16\n", dtypes.uint16), (b"ctorch\ncomplex64\n", "torch.complex64"),
  (b"ctorch\nSize\n((I2\nI3\nttR", (2, 3)), (b"ctorch\ndevice\n(Vcuda\nI1\ntR", "cuda:1"), (b"ctorch\ndevice\n(Vcpu\ntR", "cpu"),
])
def test_torch_globals_load_as_plain_values(tmp_path, ops, want):
  assert _load_ops(tmp_path, b"(dVx\n" + ops + b"s")["x"] == want

@pytest.mark.parametrize("ops, match", [
  (b"c_codecs\nencode\n(Vabc\nVrot13\ntR", "only str text in latin1"),
  (b"c__builtin__\nbytes\n(I1000000000000\ntR", r"only bytes\(\) of bytes is loaded"),       # would allocate a terabyte
  (b"cbuiltins\nbytearray\n(I1000000000000\ntR", r"only bytearray\(\) of bytes or bytearray"),
  (b"ctorch\nfloat32\n}Vitemsize\nI100\nsb", "sets the state of a TorchDType"),            # would rewrite dtypes.float32
])
def test_plain_value_globals_check_their_arguments(tmp_path, ops, match):
  with pytest.raises(FormatError, match=match): _load_ops(tmp_path, ops)
  assert dtypes.float32.itemsize == 4

def test_rebuild_tensor_v1(tmp_path):
  ops = b"ctorch._utils\n_rebuild_tensor\n(" + STORAGE4 + b"I0\n(I2\nI2\nt(I2\nI1\nttR"
  assert _load_ops(tmp_path, ops, {"0": struct.pack("<4f", 1, 2, 3, 4)}).tolist() == [[1.0, 2.0], [3.0, 4.0]]

def _v3(dtype:bytes) -> bytes: return b"ctorch._utils\n_rebuild_tensor_v3\n(" + UNTYPED6 + b"I1\n(I2\nt(I1\ntI00\nN" + dtype + b"tR"

def test_rebuild_tensor_v3_reads_untyped_storage_as_its_dtype(tmp_path):
  t = _load_ops(tmp_path, _v3(b"ctorch\nuint16\n"), {"0": struct.pack("<3H", 1, 2, 65535)})
  assert t.dtype is dtypes.uint16 and t.tolist() == [2, 65535]
  with pytest.raises(FormatError, match="got dtype torch.complex64, which tinygrad has no dtype for"):
    _load_ops(tmp_path, _v3(b"ctorch\ncomplex64\n"), {"0": bytes(6)})
  with pytest.raises(FormatError, match="multiple of 4 bytes"): _load_ops(tmp_path, _v3(b"ctorch\nuint32\n"), {"0": bytes(6)})

# --- torch_load: format detection and zip errors

def test_legacy_file_ending_in_a_zip_end_record_is_legacy(tmp_path):
  tail = list(b"PK\x05\x06" + bytes(18))  # the tensor's bytes end the file: zipfile.is_zipfile would take them for an empty zip
  (p := tmp_path / "l.pth").write_bytes(legacy_checkpoint({"b": FakeTensor(FakeStorage("ByteStorage", "B", tail), 0, (22,), (1,))}))
  assert torch_load(p)["b"].tolist() == tail

def _zip_blob() -> bytes: return zip_checkpoint({"w": FakeTensor(FakeStorage("FloatStorage", "f", [1.0] * 64), 0, (64,), (1,))})

def test_truncated_zip_checkpoint_says_so(tmp_path):
  (p := tmp_path / "t.pth").write_bytes(_zip_blob()[:-100])
  with pytest.raises(FormatError, match="zip archive is truncated or corrupt"): torch_load(p)

def test_zip_errors_are_format_errors(tmp_path):
  blob = _zip_blob()
  eocd = blob.rfind(b"PK\x05\x06")
  (p := tmp_path / "d.pth").write_bytes(blob[:eocd] + b"PK\x06\x07" + struct.pack("<IQI", 1, 0, 2) + blob[eocd:])  # zip64 locator: disk 1 of 2
  with pytest.raises(FormatError, match=r"d\.pth: the zip archive is truncated or corrupt: BadZipFile"): torch_load(p)

# --- torch_load: torch's tar checkpoint format

def _tar(members:dict) -> bytes:
  f = io.BytesIO()
  with tarfile.open(fileobj=f, mode="w", format=tarfile.PAX_FORMAT) as t:
    for name, data in members.items():
      ti = tarfile.TarInfo(name)
      ti.size = len(data)
      t.addfile(ti, io.BytesIO(data))
  return f.getvalue()

def _tensor_record(key:int, storage:str, size:tuple, stride:tuple, offset:int, ndim:int|None=None) -> bytes:
  return (f"(I{key}\nV{storage}\nctorch\nFloatTensor\nt.".encode() + struct.pack("<ii", len(size) if ndim is None else ndim, 0) +
          struct.pack(f"<{len(size)}q", *size) + struct.pack(f"<{len(stride)}q", *stride) + struct.pack("<q", offset))

def _tar_checkpoint(numel:int=6, views:list|None=None, tensors:list|None=None, drop:str="") -> bytes:
  storages = (pickle.dumps(1, 2) + b"(V1\nVcpu\nctorch\nFloatStorage\nt." + struct.pack("<q", numel) + struct.pack("<6f", *range(6)) +
              pickle.dumps(views or [], 2))
  tensors = tensors or [_tensor_record(7, "1", (2, 3), (1, 2), 0)]
  members = {"sys_info": pickle.dumps({"little_endian": True}, 2), "pickle": b"(dVw\nP7\ns.",
             "tensors": pickle.dumps(len(tensors), 2) + b"".join(tensors), "storages": storages}
  return _tar({k: v for k, v in members.items() if k != drop})

def test_tar_checkpoint_loads(tmp_path):
  (p := tmp_path / "t.pth").write_bytes(_tar_checkpoint())
  assert torch_load(p)["w"].tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
  (p := tmp_path / "v.pth").write_bytes(_tar_checkpoint(views=[("v", "1", 2, 3)], tensors=[_tensor_record(7, "v", (3,), (1,), 0)]))
  assert torch_load(p)["w"].tolist() == [2.0, 3.0, 4.0]

@pytest.mark.parametrize("kw, match", [
  ({"drop": "pickle"}, r"not a torch tar checkpoint: it lacks the members \['pickle'\]"),
  ({"numel": 1 << 40}, r"data of storage '1' needs \d+ bytes but the file has \d+ left"),          # never allocated
  ({"views": [("v", "1", 4, 3)]}, "storage view 0 is not a new"),                                 # past its storage's 6 elements
  ({"tensors": [_tensor_record(7, "1", (2, 3), (1, 2), 1)]}, "reads element 6 of storage '1'"),
  ({"tensors": [_tensor_record(7, "1", (1,), (1,), 0, ndim=1000)]}, "rank 1000"),
  ({"tensors": [_tensor_record(7, "9", (1,), (1,), 0)]}, "not a new .* of a declared storage"),
])
def test_tar_checkpoint_is_checked(tmp_path, kw, match):
  (p := tmp_path / "b.pth").write_bytes(_tar_checkpoint(**kw))
  with pytest.raises(FormatError, match=match): torch_load(p)

# --- tar_extract

def test_tar_extract_refuses_sparse_members():
  # pax sparse 1.0: the member's data starts with its map (one region of 3 bytes at offset 1000), its holes are not stored
  body = b"1\n1000\n3\n".ljust(512, b"\0") + b"xyz"
  f = io.BytesIO()
  with tarfile.open(fileobj=f, mode="w", format=tarfile.PAX_FORMAT) as t:
    ti = tarfile.TarInfo("GNUSparseFile.0/s.bin")
    ti.size, ti.pax_headers = len(body), {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "s.bin", "GNU.sparse.realsize": "1003"}
    t.addfile(ti, io.BytesIO(body))
  with pytest.raises(FormatError, match="member 's.bin' is a sparse file"): tar_extract(Tensor(f.getvalue()))

# --- upstream's names

@pytest.mark.parametrize("fn, params", [("safe_save", ["tensors", "fn", "metadata"]), ("safe_load", ["fn"]), ("safe_load_metadata", ["t"]),
                                        ("torch_load", ["t"]), ("tar_extract", ["t"]), ("zip_extract", ["t"])])
def test_parameter_names_are_upstreams(fn, params):
  assert list(inspect.signature(getattr(state, fn)).parameters) == params

def test_keyword_calls(tmp_path):
  safe_save(tensors={"w": Tensor([1.0])}, fn=(p := tmp_path / "k.safetensors"), metadata={"a": "b"})
  assert safe_load(fn=p)["w"].tolist() == [1.0] and safe_load_metadata(t=p)[2]["__metadata__"] == {"a": "b"}

# --- zip_extract

def _zip_of(members:dict, compression=zipfile.ZIP_STORED) -> bytes:
  f = io.BytesIO()
  with zipfile.ZipFile(f, "w", compression) as z:
    for k, v in members.items(): z.writestr(k, v)
  return f.getvalue()

@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_zip_extract(tmp_path, compression):
  members = {"a.bin": bytes(range(256)) * 4, "dir/b.txt": b"hello", "empty": b""}
  (p := tmp_path / "z.zip").write_bytes(blob := _zip_of(members, compression))
  for src in (p, Tensor(blob)):
    assert {k: bytes(v.tolist()) for k, v in state.zip_extract(src).items()} == members

def _patch_central(blob:bytes, field_offset:int, fmt:str, value:int) -> bytes:
  b = bytearray(blob)
  struct.pack_into(fmt, b, blob.find(b"PK\x01\x02") + field_offset, value)
  return bytes(b)

def test_zip_extract_bounds_inflation_by_the_declared_size(tmp_path):
  # 16 MiB of zeros deflate to ~16 KiB; the central directory then claims 10 bytes
  (p := tmp_path / "bomb.zip").write_bytes(_patch_central(_zip_of({"z": bytes(16 << 20)}, zipfile.ZIP_DEFLATED), 24, "<I", 10))
  tracemalloc.start()
  try:
    with pytest.raises(FormatError, match="does not inflate to its declared 10 bytes"): state.zip_extract(p)
  finally:
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
  assert peak < 8 << 20

def test_zip_extract_refuses_other_compression_and_damage(tmp_path):
  (p := tmp_path / "m.zip").write_bytes(_patch_central(_zip_of({"x": b"abc"}), 10, "<H", 12))  # method 12: bzip2
  with pytest.raises(FormatError, match="member 'x' uses compression method 12"): state.zip_extract(p)
  (p := tmp_path / "t.zip").write_bytes(_zip_of({"x": b"abc"})[:-30])
  with pytest.raises(FormatError, match="zip archive is truncated or corrupt"): state.zip_extract(p)
