"""CPU:0..n and PYTHON:0..n are separate devices: their own device objects, buffers and kernel launches; copies between them go
through the runtime's device-to-device path where it has one, through host memory otherwise."""
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.uop import Ops
from tinygrad.engine import realize
from tinygrad.runtime.ops_cpu import CPUAllocator

@pytest.mark.parametrize("base", ["CPU", "PYTHON"])
def test_indexed_devices_are_separate(base):
  d0, d1 = Device[base], Device[f"{base}:1"]
  assert d0 is not d1 and d1.device == f"{base}:1" and d0.allocator is not d1.allocator
  assert Device.canonicalize(f"{base.lower()}:0") == base and Device.canonicalize((f"{base}:1",)) == f"{base}:1"

def test_buffers_and_kernels_live_on_their_device(monkeypatch):
  launched = []
  orig = realize.launch
  monkeypatch.setattr(realize, "launch", lambda spec, prg, bufs, vv, dev: (launched.append((dev, {b.device for b in bufs})), orig(spec, prg, bufs, vv, dev))[1])
  t = (Tensor([1.0, 2.0, 3.0], device="CPU:1") * 2).realize()
  buf = realize.buffer_of(t.uop.base)
  assert buf.device == "CPU:1" and buf.allocator is Device["CPU:1"].allocator
  assert launched == [("CPU:1", {"CPU:1"})]
  assert t.to("CPU:2").tolist() == [2.0, 4.0, 6.0]

def test_kernel_over_two_devices_is_refused():
  a, b = Tensor([1.0, 2.0], device="CPU:1").realize(), Tensor([3.0, 4.0], device="CPU:2").realize()
  with pytest.raises(RuntimeError, match="different devices"): a + b
  with pytest.raises(RuntimeError, match="several devices"): Tensor(a.uop.alu(Ops.ADD, b.uop)).realize()

def test_copy_paths(monkeypatch):
  moved = []
  monkeypatch.setattr(CPUAllocator, "_transfer", lambda self, dest, src, n, src_dev: (moved.append((src_dev.device, self.dev.device, n)),
                                                                                      CPUAllocator.__dict__["_memmove"](dest, src, n)))
  monkeypatch.setattr(CPUAllocator, "_memmove", staticmethod(__import__("ctypes").memmove), raising=False)
  x = np.arange(6, dtype=np.float32)
  src = Tensor(x, device="CPU:1").realize()
  np.testing.assert_equal(src.to("CPU:3").numpy(), x)
  assert moved == [("CPU:1", "CPU:3", 24)]  # device to device, no stop in host memory
  b1, b2 = realize.buffer_of(src.uop.base), realize.buffer_of(Tensor(x, device="PYTHON:1").realize().uop.base)
  assert realize.copy_path(b2, b1) == "host" and realize.copy_path(b1, b2) == "host"
  assert realize.copy_path(realize.buffer_of(Tensor(x, device="PYTHON:2").realize().uop.base), b2) == "transfer"
  np.testing.assert_equal(src.to("PYTHON:2").to("CPU").numpy(), x)
  assert len(moved) == 1

def test_copy_size_mismatch_is_an_error():
  from tinygrad.device import Buffer
  from tinygrad.dtype import dtypes
  a, b = Buffer("CPU:1", 4, dtypes.float32).allocate(), Buffer("CPU:2", 3, dtypes.float32).allocate()
  with pytest.raises(RuntimeError, match="12 bytes on CPU:2"): realize.run_copy(b, a)

def test_shard_over_devices_of_two_kinds():
  # CPU:1 and PYTHON:1: each piece is computed by its own device's kernels, the allreduce's copies go through host memory
  x = np.arange(12, dtype=np.float32).reshape(4, 3)
  t = Tensor(x).shard(("CPU:1", "PYTHON:1"), 0)
  np.testing.assert_allclose((t * 2).sum(0).numpy(), (x * 2).sum(0))
  np.testing.assert_allclose((t.exp() @ Tensor(x.T).to(("CPU:1", "PYTHON:1"))).numpy(), np.exp(x) @ x.T, rtol=1e-5)
