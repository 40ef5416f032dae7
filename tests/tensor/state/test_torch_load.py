import io, pathlib, pickle, sys, zipfile
from collections import OrderedDict
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.nn.state import torch_load, FormatError
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the writer beside this file is found by path
from torch_writer import FakeStorage, FakeTensor, zip_checkpoint, legacy_checkpoint

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
  ("archive/data/0", b"\0" * 48, zipfile.ZIP_DEFLATED, "compressed"),
  ("archive/data.pkl", b"\x80\x02}q\x00(X", zipfile.ZIP_STORED, "bad pickle"),
])
def test_zip_entries_are_checked(tmp_path, entry, data, compress, match):
  blob = zip_checkpoint({"x": FakeTensor(FakeStorage("FloatStorage", "f", [0.0] * 12), 0, (12,), (1,))})
  (p := tmp_path / "z.pth").write_bytes(_rewrite(blob, entry, data, compress))
  with pytest.raises(FormatError, match=match): torch_load(p)

def test_legacy_checks_magic_counts_and_truncation(tmp_path):
  blob = legacy_checkpoint({"x": FakeTensor(FakeStorage("FloatStorage", "f", [1.0, 2.0]), 0, (2,), (1,))})
  for bad, match in ((pickle.dumps(123, protocol=2) + blob[30:], "magic number"), (blob[:-3], "data of storage '0'"),
                     (blob[:-16] + (5).to_bytes(8, "little") + blob[-8:], "holds 5 elements"), (blob[:40], "bad pickle")):
    (p := tmp_path / "l.pth").write_bytes(bad)
    with pytest.raises(FormatError, match=match): torch_load(p)
