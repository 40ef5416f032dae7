"""In-place operators (+=, -=, *=, ...): on a buffer or a view of one the result is written into it (every view and name sees it, as in
tinygrad and torch); on a lazy value the handle takes the new graph and a gradient flows on through it (torch's `h += x`)."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

OPS = [("__iadd__", lambda a, b: a + b), ("__isub__", lambda a, b: a - b), ("__imul__", lambda a, b: a * b),
       ("__itruediv__", lambda a, b: a / b), ("__ipow__", lambda a, b: a ** b)]

@pytest.mark.parametrize("name, ref", OPS, ids=[n for n, _ in OPS])
def test_float_ops_write_into_the_buffer(name, ref):
  a = np.array([1.0, 2.0, 3.0], np.float32)
  t = Tensor(a).contiguous().realize()
  alias = t
  out = getattr(t, name)(Tensor([2.0, 0.5, 3.0]))
  assert out is t and alias is t
  np.testing.assert_allclose(t.numpy(), ref(a, np.array([2.0, 0.5, 3.0], np.float32)), rtol=1e-6)

def test_int_and_bit_ops():
  t = Tensor([12, 7, -9], dtype=dtypes.int32).contiguous().realize()
  t //= 2
  assert t.tolist() == [6, 3, -5]  # floor division, like python and torch
  t &= 6; assert t.tolist() == [6, 2, 2]
  t |= 1; assert t.tolist() == [7, 3, 3]
  t ^= 2; assert t.tolist() == [5, 1, 1]
  t <<= 2; assert t.tolist() == [20, 4, 4]
  t >>= 1; assert t.tolist() == [10, 2, 2]

def test_matmul_in_place():
  a, b = np.arange(4, dtype=np.float32).reshape(2, 2), np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
  t = Tensor(a).contiguous().realize()
  t @= Tensor(b)
  np.testing.assert_allclose(t.numpy(), a @ b)

def test_hand_written_sgd_updates_the_parameters():
  w = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  for _ in range(3):
    loss = (w * w).sum()
    loss.backward()
    for p in [w]:  # the loop variable is another name: only writing into p's buffer reaches w
      p -= 0.25 * p.grad
      p.grad = None
  np.testing.assert_allclose(w.numpy(), np.array([1.0, 2.0, 3.0]) * 0.5 ** 3)  # each step w - 0.25 * 2w = w / 2

def test_a_view_writes_into_its_base():
  base = Tensor([1.0, 2.0, 3.0, 4.0]).contiguous().realize()
  v = base[1:3]
  v += 10
  assert base.tolist() == [1.0, 12.0, 13.0, 4.0]
  base[0] *= 5  # python: tmp = base[0]; tmp *= 5; base[0] = tmp
  assert base.tolist() == [5.0, 12.0, 13.0, 4.0]

def test_a_lazy_value_keeps_its_gradient():
  a = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  c = a * 2
  c += 1
  (c * c).sum().backward()
  np.testing.assert_allclose(a.grad.numpy(), 4 * (2 * np.array([1.0, 2.0, 3.0]) + 1))  # d/da (2a+1)^2
  x = Tensor([1.0, 2.0])
  h = x * 3
  h *= x
  np.testing.assert_allclose(h.sum().gradient(x)[0].numpy(), [6.0, 12.0])  # d/dx 3x^2

def test_wrong_result_shape_or_dtype_names_both():
  t = Tensor([1, 2], dtype=dtypes.int32).contiguous().realize()
  with pytest.raises(ValueError, match="dtype"): t /= 2
  lazy = Tensor([1, 2]) + 1
  with pytest.raises(ValueError, match=r"in-place truediv of \(2,\) dtypes.int.* gives \(2,\) dtypes.float"): lazy /= 2
  with pytest.raises(ValueError, match=r"shape"): lazy += Tensor([[1], [2]])
  assert lazy.tolist() == [2, 3]  # left as it was
