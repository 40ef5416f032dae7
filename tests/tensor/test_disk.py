"""The DISK device (tinygrad's `disk:PATH`): a file's bytes as a tensor, read and written through copies and views, never kernels. The
oracle is the file itself, written and read back with numpy."""
import pathlib
import numpy as np
import pytest
from tinygrad import Tensor, Device, GlobalCounters, dtypes
from tinygrad.device import DeviceError

@pytest.fixture
def f32_file(tmp_path) -> pathlib.Path:
  (p := tmp_path / "w.bin").write_bytes(np.arange(16, dtype=np.float32).tobytes())
  return p

def on_file(p:pathlib.Path, dtype=np.float32) -> np.ndarray: return np.frombuffer(p.read_bytes(), dtype)

def test_device_name_keeps_the_path(f32_file):
  t = Tensor.empty(16, dtype=dtypes.float32, device=f"disk:{f32_file}")
  assert t.device == f"DISK:{f32_file}" and Device.canonicalize(f"disk:{f32_file}") == f"DISK:{f32_file}"
  with pytest.raises(DeviceError, match="needs a file path"): Device.canonicalize("disk")
  from tinygrad.device import is_dtype_supported
  assert is_dtype_supported(dtypes.bfloat16, f"disk:{f32_file}")  # no kernels: any dtype's bytes

def test_reads_whole_rows_and_reinterpretations(f32_file):
  t = Tensor.empty(16, dtype=dtypes.float32, device=f"disk:{f32_file}")
  ref = np.arange(16, dtype=np.float32)
  np.testing.assert_array_equal(t.to("CPU").numpy(), ref)
  np.testing.assert_array_equal(t[4:8].to("CPU").numpy(), ref[4:8])
  np.testing.assert_array_equal(t.reshape(4, 4)[2].to("CPU").numpy(), ref.reshape(4, 4)[2])
  np.testing.assert_array_equal(t.reshape(4, 4)[1:3, :].numpy(), ref.reshape(4, 4)[1:3])
  np.testing.assert_array_equal(t.reshape(2, 2, 4)[1, 0:1, 1:3].numpy(), ref.reshape(2, 2, 4)[1, 0:1, 1:3])
  np.testing.assert_array_equal(t.bitcast(dtypes.int32)[2:5].numpy(), ref.view(np.int32)[2:5])
  np.testing.assert_array_equal(t[2:6].bitcast(dtypes.uint8).numpy(), ref[2:6].view(np.uint8))
  np.testing.assert_array_equal(t[2:6].bitcast(dtypes.float64).numpy(), ref[2:6].view(np.float64))

def test_a_path_is_a_tensor_on_its_file(f32_file):
  u = Tensor(f32_file)
  assert u.device == f"DISK:{f32_file.resolve()}" and u.dtype is dtypes.uint8 and u.shape == (64,)
  ref = np.arange(16, dtype=np.float32)
  np.testing.assert_array_equal(u[8:16].bitcast(dtypes.float32).numpy(), ref[2:4])
  assert u[0:8].bitcast(dtypes.int64).item() == int(ref[:2].view(np.int64)[0])
  assert Tensor(f32_file, dtype=dtypes.float32).tolist() == ref.tolist()
  moved = Tensor(f32_file, device="CPU", dtype=dtypes.float32)
  assert moved.device == "CPU"
  np.testing.assert_array_equal((moved + 1).numpy(), ref + 1)
  (empty := f32_file.parent / "empty.bin").write_bytes(b"")
  assert Tensor(empty).shape == (0,) and Tensor(empty).tolist() == []

def test_writes_land_in_the_file(f32_file, tmp_path):
  new = Tensor.empty(4, dtype=dtypes.float32, device=f"disk:{tmp_path / 'new.bin'}")
  new.assign(Tensor([1.0, 2.0, 3.0, 4.0])).realize()  # the value comes from the CPU: moved by a copy
  np.testing.assert_array_equal(on_file(tmp_path / "new.bin"), [1, 2, 3, 4])
  t = Tensor.empty(4, 4, dtype=dtypes.float32, device=f"disk:{f32_file}")
  t[1:3].assign(Tensor.full((2, 4), -1.0) * 2).realize()  # computed on the CPU, written into rows 1 and 2 only
  np.testing.assert_array_equal(on_file(f32_file), np.concatenate([np.arange(4), [-2.0] * 8, np.arange(12, 16)]))
  Tensor([7.0, 8.0]).to(f"disk:{f32_file}").realize()  # a new buffer on the file: its first bytes, as tinygrad's
  assert on_file(f32_file)[:3].tolist() == [7.0, 8.0, 2.0]

def test_compute_is_refused_by_name(f32_file):
  t = Tensor.empty(4, 4, dtype=dtypes.float32, device=f"disk:{f32_file}")
  with pytest.raises(RuntimeError, match=r"DISK:.*runs no kernels.*\.to\('CPU'\)"): (t + 1).numpy()
  with pytest.raises(RuntimeError, match="no run of a buffer's bytes"): t[:, 1].numpy()  # a column is strided
  with pytest.raises(RuntimeError, match="writes one run of its bytes"): t[:, 1].assign(Tensor.zeros(4)).realize()
  np.testing.assert_array_equal(on_file(f32_file), np.arange(16))  # nothing written

def test_read_only_file(f32_file, monkeypatch):
  import os
  import tinygrad.runtime.ops_disk as ops_disk
  real_open = os.open
  def no_write(path, flags, *args):  # as a user without write permission sees it (root may write any file)
    if flags & os.O_RDWR: raise PermissionError(13, "Permission denied", path)
    return real_open(path, flags, *args)
  monkeypatch.setattr(ops_disk.os, "open", no_write)
  t = Tensor(f32_file, dtype=dtypes.float32)
  assert t[0:2].tolist() == [0.0, 1.0]
  with pytest.raises(PermissionError, match="read-only"): t[0:2].assign(Tensor([5.0, 5.0])).realize()
  with pytest.raises(PermissionError, match="read-only"): Tensor.empty(32, device=f"disk:{f32_file}").to("CPU").realize()  # longer
  np.testing.assert_array_equal(on_file(f32_file), np.arange(16))

def test_copy_of_whole_rows_needs_no_kernel():
  """a copy reads a run of a buffer's bytes as a view of it, with no gather kernel first (CPU:1 is another device)"""
  t = Tensor.arange(24, dtype=dtypes.float32).reshape(6, 4).realize()
  before = GlobalCounters.kernel_count
  got = [t[i:i + 2].to("CPU:1").numpy() for i in range(0, 6, 2)]
  assert GlobalCounters.kernel_count == before
  for i, g in zip(range(0, 6, 2), got): np.testing.assert_array_equal(g, np.arange(24, dtype=np.float32).reshape(6, 4)[i:i + 2])
  np.testing.assert_array_equal(t[:, 1:3].to("CPU:1").numpy(), np.arange(24, dtype=np.float32).reshape(6, 4)[:, 1:3])  # strided: gathered

def test_copy_of_rows_at_an_offset_the_device_cannot_view_is_gathered(monkeypatch):
  """a device whose views start only at aligned bytes (an OpenCL sub-buffer: CL_DEVICE_MEM_BASE_ADDR_ALIGN) gets a gather kernel for a
  row at another offset, as before copies read views (simulated on CPU:2: its views at unaligned bytes raise like CL's)"""
  alloc = Device["CPU:2"].allocator
  real_offset = alloc._offset
  def aligned_only(buf, size:int, offset:int):
    if offset % 64: raise RuntimeError(f"a view at byte {offset} is not aligned to 64 bytes")
    return real_offset(buf, size, offset)
  monkeypatch.setattr(alloc, "_offset", aligned_only)
  monkeypatch.setattr(alloc, "view_align", 64, raising=False)
  a = np.arange(96, dtype=np.float32).reshape(16, 6)
  t = Tensor(a, device="CPU:2").realize()
  np.testing.assert_array_equal(t[1].to("CPU").numpy(), a[1])  # byte 24: gathered
  np.testing.assert_array_equal(t[8:10].to("CPU").numpy(), a[8:10])  # byte 192: a view
  np.testing.assert_array_equal(t[1:3].shard(("CPU:2", "CPU:3")).numpy(), a[1:3])

def test_copy_of_a_cl_row_at_an_unaligned_offset(cl):
  a = np.arange(24, dtype=np.float32).reshape(4, 6)
  t = Tensor(a, device="CL").realize()
  np.testing.assert_array_equal(t[1].to("CPU").numpy(), a[1])
  s = Tensor(a).shard(("CL", "CPU:1"), axis=0).realize()
  s[1:3, 2:4] = 5
  want = a.copy()
  want[1:3, 2:4] = 5
  np.testing.assert_array_equal(s.numpy(), want)

def test_same_slice_of_other_files_replays(tmp_path):
  """the schedule cache replays a slice of one file on another's buffer, each view of its own file"""
  got = []
  for k in range(3):
    (p := tmp_path / f"{k}.bin").write_bytes((np.arange(8, dtype=np.float32) * (k + 1)).tobytes())
    got.append(Tensor.empty(8, dtype=dtypes.float32, device=f"disk:{p}")[2:6].to("CPU").numpy())
  for k, g in enumerate(got): np.testing.assert_array_equal(g, np.arange(2, 6, dtype=np.float32) * (k + 1))

def test_jitted_copy_of_rows_reads_each_calls_input():
  """a TinyJit replay makes the view again on the new input's buffer (and on a computed one, never shared by memory planning)"""
  from tinygrad import TinyJit
  step = TinyJit(lambda x: ((x[1:3].to("CPU:1") * 2).realize(), ((x + 1)[2:4].to("CPU:1")).realize()))
  for k in range(4):
    x = np.arange(12, dtype=np.float32).reshape(4, 3) * (k + 1)
    a, b = step(Tensor(x).realize())
    np.testing.assert_array_equal(a.numpy(), x[1:3] * 2)
    np.testing.assert_array_equal(b.numpy(), (x + 1)[2:4])

def test_safe_load_of_a_path_maps_the_file(tmp_path):
  """safe_load(path) gives views of the file on its DISK device (tinygrad's: nothing read until copied); load_state_dict moves them"""
  from tinygrad import nn
  from tinygrad.nn.state import safe_save, safe_load, load_state_dict, get_state_dict
  model = nn.Linear(3, 2)
  w, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([-1.0, 1.0], np.float32)
  safe_save({"weight": Tensor(w).cast(dtypes.bfloat16), "bias": Tensor(b)}, p := tmp_path / "m.safetensors")
  loaded = safe_load(p)
  assert all(t.device == f"DISK:{p.resolve()}" for t in loaded.values()) and loaded["weight"].dtype is dtypes.bfloat16
  load_state_dict(model, loaded, verbose=False)
  assert all(t.device == "CPU" for t in get_state_dict(model).values())
  np.testing.assert_array_equal(model.weight.numpy(), w)
  np.testing.assert_array_equal(model(Tensor([[1.0, 0.0, 2.0]])).numpy(), [[0 + 4 - 1, 3 + 10 + 1]])
  assert safe_load(Tensor(p))["bias"].tolist() == [-1.0, 1.0]  # a Tensor of the path: the same views

def test_writes_of_numbers_and_through_views(f32_file, tmp_path):
  """(sweep) a number assigned or set into a slice; a safe_load tensor (a slice bitcast) written at its own bytes, not the file's first"""
  from tinygrad.nn.state import safe_save, safe_load
  t = Tensor.empty(16, dtype=dtypes.float32, device=f"disk:{f32_file}")
  t[4:8].assign(5.0).realize()
  t[8:10] = 9.0
  np.testing.assert_array_equal(on_file(f32_file), [0, 1, 2, 3, 5, 5, 5, 5, 9, 9, 10, 11, 12, 13, 14, 15])
  safe_save({"a": Tensor([1.0, 2.0]), "b": Tensor([4.0, 5.0, 6.0])}, p := tmp_path / "m.safetensors")
  header = p.read_bytes()[:-20]
  safe_load(p)["b"].assign(Tensor([9.0, 9.0, 9.0])).realize()
  assert p.read_bytes()[:-20] == header and safe_load(p)["b"].tolist() == [9.0, 9.0, 9.0] and safe_load(p)["a"].tolist() == [1.0, 2.0]
  with pytest.raises(ValueError, match=r"value is \(2,\) dtypes.int on CPU"): t[0:2].assign(Tensor([1, 2]))

def test_assign_through_a_bitcast_writes_the_buffer():
  """(sweep) on the CPU too: a same-size bitcast of a buffer (or of a slice of it) is a view that an assign writes through"""
  ref = np.arange(8, dtype=np.float32)
  for view in (lambda y: y[2:4].bitcast(dtypes.int32), lambda y: y.bitcast(dtypes.int32)[2:4], lambda y: y.bitcast(dtypes.int32).reshape(2, 4)[0, 2:4]):
    y = Tensor(ref).contiguous().realize()
    v = view(y)
    v.assign(Tensor([1, 1], dtype=dtypes.int32)).realize()
    want = ref.view(np.int32).copy()
    want[2:4] = 1
    np.testing.assert_array_equal(y.numpy().view(np.int32), want)
    assert v.tolist() == [1, 1]

def test_moves_a_copy_makes_on_the_other_device(f32_file, tmp_path):
  """(sweep) a transpose, flip or strided slice of a DISK tensor: its bytes copied, then moved on the device that computes; into
  another DISK tensor such a view is refused and nothing is written"""
  from tinygrad import nn
  from tinygrad.nn.state import load_state_dict
  t, ref = Tensor.empty(4, 4, dtype=dtypes.float32, device=f"disk:{f32_file}"), np.arange(16, dtype=np.float32).reshape(4, 4)
  np.testing.assert_array_equal(t.T.to("CPU").numpy(), ref.T)
  np.testing.assert_array_equal(t[:, 1].to("CPU").numpy(), ref[:, 1])
  np.testing.assert_array_equal(t.flip(1)[1:3].to("CPU").numpy(), ref[:, ::-1][1:3])
  load_state_dict(lin := nn.Linear(4, 4, bias=False), {"weight": t.T}, verbose=False)
  np.testing.assert_array_equal(lin.weight.numpy(), ref.T)
  (other := tmp_path / "o.bin").write_bytes(bytes(16))
  with pytest.raises(RuntimeError, match="runs no kernels"): Tensor.empty(4, device=f"disk:{other}")[0:4].assign(t[:, 1]).realize()
  assert other.read_bytes() == bytes(16)

def test_empty_file_and_bad_bitcast(tmp_path):
  (empty := tmp_path / "e.bin").write_bytes(b"")
  assert Tensor(empty).device == f"DISK:{empty.resolve()}" and Tensor(empty).shape == (0,) and Tensor(empty).to("CPU").tolist() == []
  (p := tmp_path / "f.bin").write_bytes(bytes(8))
  with pytest.raises(ValueError, match="0-d"): Tensor.empty(2, dtype=dtypes.float32, device=f"disk:{p}")[0].bitcast(dtypes.float16)

def test_shard_of_a_disk_tensor(f32_file):
  """(sweep) a DISK tensor sharded along an axis its rows cross: each piece is copied as rows, then cut on its device"""
  t, ref = Tensor.empty(4, 4, dtype=dtypes.float32, device=f"disk:{f32_file}"), np.arange(16, dtype=np.float32).reshape(4, 4)
  for axis in (0, 1):
    s = t.shard(("CPU:0", "CPU:1"), axis=axis)
    np.testing.assert_array_equal(s.numpy(), ref)
    np.testing.assert_array_equal((s * 2).to("CPU").numpy(), ref * 2)

def test_jit_on_another_file_says_so(tmp_path):
  """(sweep) a TinyJit captured on one file's tensor, called with another's: no advice to move it there (that overwrites the file)"""
  from tinygrad import TinyJit
  step = TinyJit(lambda x: (x.to("CPU") * 2).realize())
  paths = [tmp_path / f"{k}.bin" for k in range(2)]
  for p in paths: p.write_bytes(np.arange(2, dtype=np.float32).tobytes())
  for _ in range(3): assert step(Tensor.empty(2, dtype=dtypes.float32, device=f"disk:{paths[0]}")).tolist() == [0.0, 2.0]
  with pytest.raises(ValueError, match="another TinyJit for another file"): step(Tensor.empty(2, dtype=dtypes.float32, device=f"disk:{paths[1]}"))
