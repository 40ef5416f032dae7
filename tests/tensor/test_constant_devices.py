"""A tensor of constants alone (Tensor(2.0), an arange, their movement and ALU ops: no memory of its own) meets a tensor on any device,
as in tinygrad 0.14: it is made on that device. Values in memory (a buffer, Tensor.full's own constant) on different devices are an
error that names the op."""
import numpy as np
import pytest
from tinygrad import Tensor

D2 = ("CPU:1", "CPU:2")

@pytest.mark.parametrize("name,make,ref", [
  ("scalar", lambda x: x + Tensor(2.0), [4.0, 5.0]),
  ("scalar_first", lambda x: Tensor(2.0) + x, [4.0, 5.0]),
  ("int_scalar", lambda x: x * Tensor(2), [4.0, 6.0]),
  ("computed", lambda x: x + Tensor(2.0) * 3, [8.0, 9.0]),
  ("arange", lambda x: x + Tensor.arange(2), [2.0, 4.0]),
  ("expanded", lambda x: x - Tensor(1.0).reshape(1).expand(2), [1.0, 2.0]),
  ("other_device_constant", lambda x: x + Tensor(2.0, device="CPU:2"), [4.0, 5.0]),
  ("where", lambda x: (x > 2).where(Tensor(1.0), Tensor(0.0)), [0.0, 1.0]),
])
def test_constants_take_the_other_device(name, make, ref):
  r = make(Tensor([2.0, 3.0], device="CPU:1"))
  assert r.device == "CPU:1"
  np.testing.assert_equal(r.numpy(), ref)

def test_constants_meet_sharded_tensor():
  x = Tensor(np.ones((4, 2), np.float32)).shard(D2, 0)
  r = x + Tensor(2.0)
  assert r.device == D2 and r.uop.axis == 0
  np.testing.assert_equal(r.numpy(), np.full((4, 2), 3.0))

@pytest.mark.parametrize("other", [lambda: Tensor([2.0, 2.0]), lambda: Tensor.ones(2), lambda: Tensor.full((2,), 3.0)])
def test_memory_on_other_device_is_refused(other):
  x = Tensor([2.0, 3.0], device="CPU:1")
  with pytest.raises(RuntimeError, match=r"^ADD of tensors on different devices: \['CPU:1', 'CPU'\]"): x + other()
  assert (x + Tensor(1.0)).device == "CPU:1"  # the same value as a constant is no memory of its own
