"""A tensor made from a python int or float without a dtype joins another operand as the python number would: half * Tensor(2.0) is
half and int8 + Tensor(3) int8, as tinygrad's weakfloat / weakint and torch's 0-d tensors give (it was float32 and int32 here). Its own
dtype is the default one; given a dtype it is an ordinary tensor of it. Values against numpy in the joined dtype."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

@pytest.mark.parametrize("dt,scalar,want", [
  (dtypes.half, 2.5, dtypes.half), (dtypes.bfloat16, 0.5, dtypes.bfloat16), (dtypes.float64, 0.1, dtypes.float64),
  (dtypes.int8, 3, dtypes.int8), (dtypes.uint8, 7, dtypes.uint8), (dtypes.int16, -2, dtypes.int16),
  (dtypes.int32, 1.5, dtypes.float32), (dtypes.uint8, 0.5, dtypes.float32), (dtypes.half, 3, dtypes.half), (dtypes.bool, 2, dtypes.int32)])
def test_scalar_tensor_takes_the_other_operands_dtype(dt, scalar, want):
  xs = np.array([1, 0, 3, 1]).astype(np.float64)
  x = Tensor(xs.tolist(), dtype=dt)
  for out in (x * Tensor(scalar), Tensor(scalar) * x, x + Tensor(scalar), x - Tensor(scalar)):
    assert out.dtype == want, (dt, scalar, out.dtype)
  # the same as the python number itself
  assert (x * scalar).dtype == want and (x * Tensor(scalar)).tolist() == (x * scalar).tolist()
  np_dt = np.float32 if want == dtypes.bfloat16 else np.dtype(want.fmt).type
  ref = x.numpy().astype(np_dt) * np_dt(scalar)  # x's own values (a bool tensor's are 0 and 1), joined as numpy joins a typed scalar
  np.testing.assert_allclose((x * Tensor(scalar)).numpy().astype(np.float64), ref.astype(np.float64), rtol=1e-2)

def test_weak_scalar_tensor_in_comparisons_where_and_max():
  h = Tensor([1.5, -2.0, 0.25], dtype=dtypes.half)
  assert (h > Tensor(0.5)).tolist() == [True, False, False]
  assert (h > 0).where(h, Tensor(7.0)).dtype == dtypes.half and (h > 0).where(h, Tensor(7.0)).tolist() == [1.5, 7.0, 0.25]
  assert h.maximum(Tensor(1.0)).dtype == dtypes.half and h.maximum(Tensor(1.0)).tolist() == [1.5, 1.0, 1.0]
  assert (h ** Tensor(2.0)).dtype == dtypes.half and (h / Tensor(4.0)).tolist() == [0.375, -0.5, 0.0625]

def test_scalar_tensor_own_dtype_and_explicit_dtype():
  assert Tensor(2.0).dtype == dtypes.float32 and Tensor(3).dtype == dtypes.int32 and Tensor(True).dtype == dtypes.bool
  h = Tensor.ones(2, dtype=dtypes.half)
  assert (h * Tensor(2.0, dtype=dtypes.float32)).dtype == dtypes.float32  # a dtype given: an ordinary float32 tensor
  assert (Tensor(2.0) * Tensor(3)).dtype == dtypes.float32 and (Tensor(2) * Tensor(3)).dtype == dtypes.int32  # two of them: the default
  assert (h * Tensor([2.0])).dtype == dtypes.float32  # a list makes an ordinary tensor
  assert (h * Tensor(2.0).realize()).dtype == dtypes.half  # realized, it still joins as a python number

def test_weak_scalar_tensor_keeps_half_training_in_half():
  x = Tensor([1.0, 2.0, 3.0], dtype=dtypes.half, requires_grad=True)
  y = (x * Tensor(3.0)).sum()
  y.backward()
  assert y.dtype == dtypes.half and x.grad.dtype == dtypes.half and x.grad.tolist() == [3.0, 3.0, 3.0]
  w = Tensor(2.0, requires_grad=True)
  (Tensor([1.0, 2.0]) * w).sum().backward()
  assert w.grad.dtype == dtypes.float32 and w.grad.item() == 3.0

def test_weak_scalar_tensor_that_requires_grad_gets_its_gradient():
  x = Tensor([1.0, 2.0, 3.0], dtype=dtypes.half)
  w = Tensor(2.0, requires_grad=True)
  (x * w).sum().backward()
  later = Tensor(2.0)
  later.requires_grad = True  # marked after it was made
  (x * later).sum().backward()
  assert (x * w).dtype == dtypes.half and w.grad.item() == 6.0 and later.grad.item() == 6.0
