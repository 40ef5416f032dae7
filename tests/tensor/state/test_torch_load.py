import io, pathlib, pickle, pickletools, struct, sys, tracemalloc, zipfile
from collections import OrderedDict
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.nn.state import torch_load, FormatError
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the writer beside this file is found by path
from torch_writer import FakeStorage, FakeTensor, FakeView, zip_checkpoint, legacy_checkpoint

def _state():
  st = FakeStorage("FloatStorage", "f", [float(i) for i in range(12)])
  return OrderedDict(w=FakeTensor(st, 0, (3, 4), (4, 1)), wt=FakeTensor(st, 0, (4, 3), (1, 4)), row=FakeTensor(st, 4, (4,), (1,)),
                     col=FakeTensor(st, 1, (3,), (4,)), bcast=FakeTensor(st, 2, (2, 3), (0, 1)), scalar=FakeTensor(st, 11, (), ()),
                     empty=FakeTensor(st, 0, (0, 5), (5, 1)),
                     ints=FakeTensor(FakeStorage("LongStorage", "q", [1, -2, 3]), 0, (3,), (1,)),
                     flags=FakeTensor(FakeStorage("BoolStorage", "?", [True, False]), 0, (2,), (1,)),
                     half=FakeTensor(FakeStorage("HalfStorage", "e", [0.5, -1.0]), 0, (2,), (1,)))

@pytest.mark.parametrize("write", [zip_checkpoint, legacy_checkpoint])
def test_views_dtypes_and_nesting(tmp_path, write):
  (p := tmp_path / "m.pth").write_bytes(write({"model": _state(), "epoch": 3, "names": ["a", "b"]}))
  out = torch_load(p)
  assert out["epoch"] == 3 and out["names"] == ["a", "b"] and isinstance(out["model"], OrderedDict)
  m = out["model"]
  full = [[float(4*r + c) for c in range(4)] for r in range(3)]
  assert m["w"].tolist() == full and m["wt"].tolist() == [list(c) for c in zip(*full)]
  assert m["row"].tolist() == full[1] and m["col"].tolist() == [1.0, 5.0, 9.0] and m["bcast"].tolist() == [[2.0, 3.0, 4.0]] * 2
  assert m["scalar"].tolist() == 11.0 and m["empty"].shape == (0, 5)
  assert m["ints"].dtype is dtypes.int64 and m["ints"].tolist() == [1, -2, 3] and m["flags"].tolist() == [True, False]
  assert m["half"].dtype is dtypes.float16 and m["half"].tolist() == [0.5, -1.0]

def test_zip_path_is_mapped_not_read(tmp_path):
  """a zip checkpoint's path is mapped (DISK): its stored storages are views of the file, copied to the default device when realized"""
  from tinygrad import Device
  (p := tmp_path / "m.pth").write_bytes(zip_checkpoint({"model": _state()}))
  for src in (p, Tensor(p)):
    m = torch_load(src)["model"]
    assert m["w"].device == Device.DEFAULT and any(u.op.name == "BUFFER" and str(u.arg.device).startswith("DISK:") for u in m["w"].uop.toposort())
    assert m["col"].tolist() == [1.0, 5.0, 9.0] and m["half"].tolist() == [0.5, -1.0] and m["flags"].tolist() == [True, False]

def test_zip_from_a_tensor_with_another_root():
  assert torch_load(Tensor(zip_checkpoint({"x": _state()["row"]}, root="model")))["x"].tolist() == [4.0, 5.0, 6.0, 7.0]

class Evil:
  def __reduce__(self): return (print, ("pwned",))

@pytest.mark.parametrize("write", [zip_checkpoint, legacy_checkpoint])
def test_unknown_globals_never_run(tmp_path, capsys, write):
  (p := tmp_path / "evil.pth").write_bytes(write({"x": Evil()}))
  with pytest.raises(FormatError, match=r"__builtin__\.print"): torch_load(p)
  assert "pwned" not in capsys.readouterr().out

def test_views_out_of_range_are_refused(tmp_path):
  st = FakeStorage("FloatStorage", "f", [0.0] * 4)
  for bad in (FakeTensor(st, 2, (3,), (1,)), FakeTensor(st, 0, (2, 2), (3, 1)), FakeTensor(st, -1, (1,), (1,))):
    (p := tmp_path / "oob.pth").write_bytes(zip_checkpoint({"x": bad}))
    with pytest.raises(FormatError, match="storage|offset"): torch_load(p)

def _rewrite(blob:bytes, name:str, data:bytes, compress=zipfile.ZIP_STORED) -> bytes:
  src, f = zipfile.ZipFile(io.BytesIO(blob)), io.BytesIO()
  with zipfile.ZipFile(f, "w") as z:
    for i in src.infolist(): z.writestr(i.filename, data if i.filename == name else src.read(i), compress_type=compress if i.filename == name else zipfile.ZIP_STORED)
  return f.getvalue()

@pytest.mark.parametrize("entry, data, compress, match", [
  ("archive/data/0", b"\0" * 8, zipfile.ZIP_STORED, "has 8 bytes but 12"),
  ("archive/data.pkl", b"\x80\x02}q\x00(X", zipfile.ZIP_STORED, "bad pickle"),
])
def test_zip_entries_are_checked(tmp_path, entry, data, compress, match):
  blob = zip_checkpoint({"x": FakeTensor(FakeStorage("FloatStorage", "f", [0.0] * 12), 0, (12,), (1,))})
  (p := tmp_path / "z.pth").write_bytes(_rewrite(blob, entry, data, compress))
  with pytest.raises(FormatError, match=match): torch_load(p)

def test_deflated_entries_load_and_a_damaged_one_is_refused(tmp_path):
  """torch writes stored entries, but torch.load reads a checkpoint re-zipped with deflate: so does torch_load, each entry inflated to
  its declared size and CRC and no further (a damaged stream is a FormatError, not garbage)"""
  blob = zip_checkpoint({"x": FakeTensor(FakeStorage("FloatStorage", "f", [float(i) for i in range(12)]), 0, (12,), (1,))})
  src, f = zipfile.ZipFile(io.BytesIO(blob)), io.BytesIO()
  with zipfile.ZipFile(f, "w") as z:
    for i in src.infolist(): z.writestr(i.filename, src.read(i), compress_type=zipfile.ZIP_DEFLATED)
  (p := tmp_path / "d.pth").write_bytes(deflated := f.getvalue())
  assert torch_load(p)["x"].tolist() == [float(i) for i in range(12)]
  info = zipfile.ZipFile(io.BytesIO(deflated)).getinfo("archive/data/0")
  at = info.header_offset + 30 + len(info.filename) + len(info.extra) + 2
  (p := tmp_path / "bad.pth").write_bytes(deflated[:at] + bytes([deflated[at] ^ 0xFF]) + deflated[at+1:])
  with pytest.raises(FormatError, match="archive/data/0"): torch_load(p)

def test_legacy_checks_magic_counts_and_truncation(tmp_path):
  blob = legacy_checkpoint({"x": FakeTensor(FakeStorage("FloatStorage", "f", [1.0, 2.0]), 0, (2,), (1,))})
  for bad, match in ((pickle.dumps(123, protocol=2) + blob[30:], "magic number"), (blob[:-3], "data of storage '0'"),
                     (blob[:-16] + (5).to_bytes(8, "little") + blob[-8:], "holds 5 elements"), (blob[:40], "bad pickle")):
    (p := tmp_path / "l.pth").write_bytes(bad)
    with pytest.raises(FormatError, match=match): torch_load(p)

# hand-written pickle opcodes (python's pickler never writes these sequences): storage "0" of 4 floats, kept in memo slot 1, and
# _rebuild_tensor_v2(that storage, 0, (4,), (1,))
STORAGE = b"(Vstorage\nctorch\nFloatStorage\nV0\nVcpu\nI4\ntQq\x01"
REBUILD = b"ctorch._utils\n_rebuild_tensor_v2\n"
TENSOR = REBUILD + b"(" + STORAGE + b"I0\n(I4\nt(I1\nttR"

def _zip_pickle(ops:bytes) -> bytes:
  f = io.BytesIO()
  with zipfile.ZipFile(f, "w") as z:
    z.writestr("archive/data.pkl", b"\x80\x02" + ops + b".")
    z.writestr("archive/data/0", struct.pack("<4f", 1, 2, 3, 4))
  return f.getvalue()

@pytest.mark.parametrize("ops, target", [
  (TENSOR + b"(h\x01I0\n(I2\nI2\nt(I1000000\nI1\nttb", "TensorRef"),  # fields (storage, offset, size, stride) far past the storage
  (STORAGE + b"(V0\nNI4\ntb", "Storage"),                              # dtype None
  (REBUILD + b"(N}V__qualname__\nVhijacked\nstb0" + TENSOR, "Global"),  # a slot state: setattr on the loader's own function
])
def test_build_on_loader_objects_is_refused(tmp_path, ops, target):
  from tinygrad.nn import torch_pickle
  (p := tmp_path / "b.pth").write_bytes(_zip_pickle(ops))
  with pytest.raises(FormatError, match=f"sets the state of a {target}"): torch_load(p)
  assert torch_pickle._rebuild_tensor.__qualname__ == "_rebuild_tensor" and torch_pickle._rebuild_tensor.__defaults__ is None

@pytest.mark.parametrize("write", [zip_checkpoint, legacy_checkpoint])
def test_state_dict_metadata_is_built(tmp_path, write):
  # nn.Module.state_dict() is an OrderedDict with a _metadata attribute, which pickle restores with BUILD
  sd = OrderedDict(w=FakeTensor(FakeStorage("FloatStorage", "f", [1.0, 2.0]), 0, (2,), (1,)))
  sd._metadata = OrderedDict({"": {"version": 1}})
  blob = write(sd)
  if write is zip_checkpoint:
    assert "BUILD" in [op.name for op, _, _ in pickletools.genops(zipfile.ZipFile(io.BytesIO(blob)).read("archive/data.pkl"))]
  (p := tmp_path / "m.pth").write_bytes(blob)
  assert torch_load(p)["w"].tolist() == [1.0, 2.0]

@pytest.mark.parametrize("put", [b"r\xff\xff\xff\xff", b"p4000000000\n"])
def test_memo_index_past_the_opcodes_is_not_allocated(tmp_path, put):
  # CPython's unpickler grows its memo to twice the index (64 GiB here) before storing into it
  (p := tmp_path / "m.pth").write_bytes(_zip_pickle(b"N" + put))
  tracemalloc.start()
  try:
    with pytest.raises(FormatError, match=r"memo index \d+ after only 2 opcodes"): torch_load(p)
  finally:
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
  assert peak < 1 << 20

def test_legacy_storage_views(tmp_path):
  # torch's legacy loader: a view is elements [offset, offset+numel) of its root storage
  root = FakeStorage("FloatStorage", "f", [1.0, 2.0, 3.0, 4.0])
  (p := tmp_path / "v.pth").write_bytes(legacy_checkpoint({"w": FakeTensor(FakeView(root, "v", 2, 2), 0, (2,), (1,)),
                                                           "all": FakeTensor(root, 1, (3,), (1,))}))
  out = torch_load(p)
  assert out["w"].tolist() == [3.0, 4.0] and out["all"].tolist() == [2.0, 3.0, 4.0]
  for bad, match in ((FakeTensor(FakeView(root, "v", 3, 2), 0, (2,), (1,)), r"spans elements \[3, 5\)"),
                     (FakeTensor(FakeView(root, "v", 2, 2), 1, (2,), (1,)), "reads element 2 of storage '0', which has 2"),
                     ([FakeTensor(FakeView(root, "v", 0, 2), 0, (2,), (1,)), FakeTensor(FakeView(root, "v", 2, 2), 0, (2,), (1,))],
                      "two different views")):
    (p := tmp_path / "bad.pth").write_bytes(legacy_checkpoint({"x": bad}))
    with pytest.raises(FormatError, match=match): torch_load(p)

@pytest.mark.parametrize("order", ["little", "big", None])
def test_zip_byteorder_entry(order):
  blob = zip_checkpoint({"f": FakeTensor(FakeStorage("FloatStorage", "f", [1.0, -2.5]), 0, (2,), (1,)),
                         "q": FakeTensor(FakeStorage("LongStorage", "q", [1, -(1 << 40)]), 0, (2,), (1,)),
                         "h": FakeTensor(FakeStorage("HalfStorage", "e", [0.5, -3.0]), 0, (2,), (1,))}, byteorder=order)
  out = torch_load(Tensor(blob))
  assert out["f"].tolist() == [1.0, -2.5] and out["q"].tolist() == [1, -(1 << 40)] and out["h"].tolist() == [0.5, -3.0]

def test_zip_unknown_byteorder_is_refused():
  blob = zip_checkpoint({"f": FakeTensor(FakeStorage("FloatStorage", "f", [1.0]), 0, (1,), (1,))}, byteorder="middle")
  with pytest.raises(FormatError, match="byteorder is b'middle'"): torch_load(Tensor(blob))

def test_zip_encrypted_entry_is_refused():
  blob = bytearray(zip_checkpoint({"f": FakeTensor(FakeStorage("FloatStorage", "f", [1.0]), 0, (1,), (1,))}))
  blob[6] |= 1                                    # general purpose flag bit 0 (encrypted) of data.pkl's local header
  blob[blob.index(b"PK\x01\x02") + 8] |= 1       # ... and of its central directory entry
  with pytest.raises(FormatError, match="'archive/data.pkl' is encrypted"): torch_load(Tensor(bytes(blob)))

@pytest.mark.parametrize("depth, match", [(900, "legacy magic number is a list"), (100000, "APPEND at offset 101001 nests objects more than 1000")])
def test_legacy_deep_magic_number_is_named_by_type(tmp_path, depth, match):
  (p := tmp_path / "d.pth").write_bytes(b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b".")  # a list nested `depth` deep
  with pytest.raises(FormatError, match=match): torch_load(p)

@pytest.mark.parametrize("container", [b"", b"\x91"])  # a dict key, a frozenset member (FROZENSET over a mark: b"(" ... b"\x91")
def test_deeply_nested_tuples_are_refused_before_python_hashes_them(tmp_path, container):
  """CPython hashes a nested tuple recursively in C: 200000 TUPLE1s (400 KB) as a dict key crashed the process (SIGSEGV)"""
  deep = b")" + b"\x85" * 200000
  (p := tmp_path / "t.pth").write_bytes(_zip_pickle(b"}" + deep + b"Ns" if not container else b"(" + deep + container))
  with pytest.raises(FormatError, match="TUPLE1 at offset 1003 nests objects more than 1000 deep"): torch_load(p)

@pytest.mark.parametrize("size, match", [((1 << 40, 1 << 40, 0), "multiply past"), ((1,) * 65, "65 dims")])
def test_shapes_past_the_limits_are_refused(tmp_path, size, match):
  (p := tmp_path / "s.pth").write_bytes(zip_checkpoint({"x": FakeTensor(FakeStorage("FloatStorage", "f", [0.0]), 0, size, (1,) * len(size))}))
  with pytest.raises(FormatError, match=match): torch_load(p)

# --- untrusted sizes: declared zip entry sizes and shared references in the pickle

def _float_checkpoint(n:int, **kw) -> bytes:
  return zip_checkpoint({"x": FakeTensor(FakeStorage("FloatStorage", "f", [0.0] * n), 0, (n,), (1,))}, **kw)

@pytest.mark.parametrize("entry, data, compress, match", [
  pytest.param("archive/data/0", bytes(16 << 20), zipfile.ZIP_DEFLATED, "'archive/data/0' has 16777216 bytes but 4 dtypes.float need exactly 16",
               id="deflated-storage-too-long"),
  pytest.param("archive/data/0", bytes(20), zipfile.ZIP_STORED, "'archive/data/0' has 20 bytes but 4 dtypes.float need exactly 16",
               id="stored-storage-too-long"),
  pytest.param("archive/byteorder", bytes(16 << 20), zipfile.ZIP_DEFLATED, "byteorder declares 16777216 bytes", id="deflated-byteorder"),
])
def test_entry_sizes_are_checked_before_inflating(entry, data, compress, match):
  """a 16 KiB deflated entry that inflates to 16 MiB: refused by its declared size, too long as well as too short, never inflated"""
  blob = _rewrite(_float_checkpoint(4, byteorder="little"), entry, data, compress)
  tracemalloc.start()
  try:
    with pytest.raises(FormatError, match=match): torch_load(Tensor(blob))
  finally:
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
  assert peak < 1 << 20

def _shared_chain(levels:int) -> bytes:
  """ops that leave the stack as they found it and memo slot i holding T_i: T_0 = (), T_i = (T_i-1, T_i-1), the same object twice,
  so T_i is 2**(i+1) - 1 tuples when expanded (as repr and hash walk it)"""
  ops = b")q\x000"  # EMPTY_TUPLE, BINPUT 0, POP
  for i in range(levels): ops += b"h" + bytes([i]) + b"h" + bytes([i]) + b"\x86q" + bytes([i + 1]) + b"0"  # BINGET twice, TUPLE2, BINPUT, POP
  return ops

def test_error_messages_show_a_bounded_part_of_shared_tuples():
  # repr(T_20) is 6 MB built before any truncation: a message is built from a bounded walk instead
  tracemalloc.start()
  try:
    with pytest.raises(FormatError, match=r"persistent id \(\(\(\(.* is not \('storage'"):
      torch_load(Tensor(_zip_pickle(_shared_chain(20) + b"h\x14Q")))  # BINGET T_20, BINPERSID
  finally:
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
  assert peak < 1 << 20
  from tinygrad.nn.torch_pickle import bounded_repr
  chain = ()
  for _ in range(200): chain = (chain, chain)
  assert len(bounded_repr(chain)) <= 203 and bounded_repr(1 << 100000) == "<100001-bit int>" and bounded_repr((1,)) == "(1,)"

@pytest.mark.parametrize("ops, op", [
  (b"}" + _shared_chain(20) + b"h\x14K\x01s", "SETITEM"),                                  # a dict key
  (_shared_chain(20) + b"(h\x14\x91", "FROZENSET"),                                        # a frozenset member
  (b"\x8f" + _shared_chain(20) + b"(h\x14\x90", "ADDITEMS"),                               # a set member
  (b"c__builtin__\nset\n" + _shared_chain(20) + b"h\x14\x85R", "REDUCE"),                  # set(T_20)
  # frozenset([T_20]) of a list memoized while empty, then filled: the memo sees what APPEND put in it
  (b"c__builtin__\nfrozenset\n" + _shared_chain(20) + b"]q\x1eh\x14a0h\x1e\x85R", "REDUCE"),
])
def test_hashing_shared_tuples_is_bounded(ops, op):
  """T_20 as a dict key or set member: python hashes 2**21 tuples (2**40 for a 300-byte file at T_40); the prescan counts that first"""
  with pytest.raises(FormatError, match=f"{op} at offset \\d+ hashes objects that expand, through shared references, to 2097"):
    torch_load(Tensor(_zip_pickle(ops)))

def test_many_tensors_sharing_a_storage_are_within_the_hash_budget():
  flat = FakeStorage("FloatStorage", "f", [float(i) for i in range(4000)])
  sd = OrderedDict((f"layer{i}.weight", FakeTensor(flat, i, (2, 2), (2, 1))) for i in range(3000))
  state = {i: {"step": 1, "exp_avg": t, "exp_avg_sq": t} for i, t in enumerate(sd.values())}
  out = torch_load(Tensor(zip_checkpoint({"model": sd, "tied": sd, "optimizer": {"state": state, "param_groups": [{"params": list(state)}]}})))
  assert out["model"]["layer2999.weight"].tolist() == [[2999.0, 3000.0], [3001.0, 3002.0]] and out["tied"] is out["model"]
  assert out["optimizer"]["state"][7]["exp_avg"].tolist() == [[7.0, 8.0], [9.0, 10.0]]

def test_complex_storages_are_named_as_unsupported():
  ops = TENSOR.replace(b"FloatStorage", b"ComplexFloatStorage")
  with pytest.raises(FormatError, match="torch.ComplexFloatStorage, the storage of a complex64 tensor: tinygrad does not support complex"):
    torch_load(Tensor(_zip_pickle(ops)))
