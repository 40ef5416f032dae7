"""Boolean masks' positions computed on the device (a cumsum ranks the True elements and a scatter puts each one's position at its rank):
nonzero, masked_select and x[mask] / x[mask] = v against numpy, with and without size=, on masks of every density and rank."""
import numpy as np
import pytest
from tinygrad import Tensor

R = np.random.default_rng(7)

@pytest.mark.parametrize("shape", [(17,), (4, 5), (2, 3, 4)])
@pytest.mark.parametrize("density", [0.0, 0.3, 1.0])
def test_nonzero_and_masked_select_match_numpy(shape, density):
  x = R.standard_normal(shape).astype(np.float32)
  m = R.random(shape) < density
  xm = np.where(m, x, 0)
  assert Tensor(xm).nonzero().tolist() == np.argwhere(xm).tolist()
  assert Tensor(x).masked_select(Tensor(m)).tolist() == x[m].tolist()
  n = int(m.sum())
  for size in (0, max(n - 1, 0), n + 2):  # cut, or padded with fill_value
    want = np.argwhere(xm)[:size].tolist() + [[-3] * len(shape)] * max(size - n, 0)
    assert Tensor(xm).nonzero(size=size, fill_value=-3).tolist() == want
    assert Tensor(x).masked_select(Tensor(m), size=size, fill_value=9).tolist() == x[m][:size].tolist() + [9.0] * max(size - n, 0)

@pytest.mark.parametrize("shape", [(9,), (3, 4), (2, 3, 2)])
def test_mask_index_and_write_match_numpy(shape):
  x = R.standard_normal(shape).astype(np.float32)
  t = Tensor(x)
  assert t[t > 0].tolist() == x[x > 0].tolist()
  if len(shape) > 1: assert t[:, 0][Tensor(x[:, 0] > 0)].tolist() == x[:, 0][x[:, 0] > 0].tolist()  # a mask of a view
  want = x.copy()
  want[want < 0] = 0.5
  t[t < 0] = 0.5  # a whole-shape mask and one value: a where over t
  assert t.tolist() == want.tolist()
  vals = np.arange(int((want > 1).sum()), dtype=np.float32)
  want[want > 1] = vals
  t[t > 1] = Tensor(vals)  # one value per True element: written at their positions
  assert t.tolist() == want.tolist()

def test_mask_write_shows_in_views_and_passes_gradients():
  x = Tensor([[1.0, -2.0], [-3.0, 4.0]])
  v = x.T
  x[x < 0] = Tensor([0.0])
  assert v.tolist() == [[1.0, 0.0], [0.0, 4.0]]
  w = Tensor([1.0, -2.0, 3.0], requires_grad=True)
  y = w * 2
  y[y < 0] = 0.0  # a lazy y on a gradient path takes the written value as its graph: the overwritten element passes none back
  y.sum().backward()
  assert w.grad.tolist() == [2.0, 0.0, 2.0]
