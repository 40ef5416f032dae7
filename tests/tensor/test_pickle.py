"""Pickling tensors and device buffers: realized and lazy, every protocol; protocol 5 sends the data out of band without copying it."""
import pickle, tracemalloc
import numpy as np, pytest
from tinygrad import Tensor
from tinygrad.device import Buffer
from tinygrad.dtype import dtypes
from tinygrad.engine.realize import buffer_of

@pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
def test_realized_and_lazy_tensors_round_trip(device, protocol):
  data = np.arange(12, dtype=np.float32).reshape(3, 4)
  a = Tensor(data, device=device).realize()
  lazy = (a.T * 2 + 1).sum(0)
  a2, lazy2 = pickle.loads(pickle.dumps([a, lazy], protocol=protocol))
  assert (a2.device, a2.dtype, a2.shape, lazy2.uop.op) == (a.device, dtypes.float32, (3, 4), lazy.uop.op)
  np.testing.assert_equal(a2.numpy(), data)
  np.testing.assert_equal(lazy2.numpy(), (data.T * 2 + 1).sum(0))

def test_unpickled_tensor_has_its_own_memory():
  a = Tensor([1.0, 2.0, 3.0]).realize()
  b, view = pickle.loads(pickle.dumps([a, a[1:]]))
  assert b.uop.base is not a.uop.base
  b.assign(Tensor([7.0, 8.0, 9.0]))
  np.testing.assert_equal(a.numpy(), [1, 2, 3])
  np.testing.assert_equal(view.numpy(), [8, 9])  # tensors pickled together keep sharing their buffer

def test_requires_grad_and_unallocated_buffers_pickle():
  e = Tensor.empty(5)
  t = Tensor([1.0, 2.0], requires_grad=True)
  e2, t2 = pickle.loads(pickle.dumps([e, t]))
  assert e2.shape == (5,) and e2.uop.base is not e.uop.base and t2.requires_grad
  np.testing.assert_equal((t2 * 3).numpy(), [3, 6])

@pytest.mark.parametrize("protocol", [4, 5])
def test_device_buffer_round_trips(protocol):
  buf = buffer_of((Tensor(np.arange(10, dtype=np.int32)) + 0).realize().uop.base)
  for b in (buf, buf.view(4, dtypes.int32, 8).ensure_allocated()):
    b2 = pickle.loads(pickle.dumps(b, protocol=protocol))
    assert (b2.device, b2.size, b2.dtype) == (b.device, b.size, b.dtype)
    np.testing.assert_equal(b2.numpy(), b.numpy())
  empty = pickle.loads(pickle.dumps(Buffer("CPU", 3, dtypes.float32), protocol=protocol))
  assert (empty.size, empty.is_allocated()) == (3, False)

def _traced_peak(fn):
  tracemalloc.start()
  try:
    ret = fn()
    return ret, tracemalloc.get_traced_memory()[1]
  finally: tracemalloc.stop()

def test_protocol_5_sends_data_out_of_band_without_copies():
  ts = [Tensor.ones(256, 1024).contiguous().realize(), (Tensor.arange(262144) * 2).realize()]
  total = sum(t.nbytes() for t in ts)
  oob: list = []
  blob, peak = _traced_peak(lambda: pickle.dumps(ts, protocol=5, buffer_callback=oob.append))
  assert len(oob) == 2 and len(blob) < 10_000 and peak < total // 4, (len(blob), peak, total)
  (ones, ar), peak = _traced_peak(lambda: pickle.loads(blob, buffers=oob))
  assert peak < total // 4, (peak, total)
  np.testing.assert_equal(ones.numpy(), np.ones((256, 1024), np.float32))
  np.testing.assert_equal(ar.numpy(), np.arange(262144) * 2)
  for pb in oob:  # each PickleBuffer was released once its bytes were copied into the new buffer
    with pytest.raises(ValueError, match="released"): pb.raw()
