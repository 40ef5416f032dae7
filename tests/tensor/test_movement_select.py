"""Movement composites, gather/scatter and advanced indexing against numpy; the core subset on every executing backend."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.uop import Ops

pytestmark = pytest.mark.hcq_matrix  # also on the mock AMD and NV devices (tests/conftest.py)

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5) - 20

def check(t, want):
  got = t.numpy()
  assert got.shape == np.shape(want), f"shape {got.shape} != {np.shape(want)}"
  np.testing.assert_array_equal(got, want)

def test_roll_repeat_interleave_split(device):
  t = Tensor(X, device=device)
  check(t.roll(2, 2), np.roll(X, 2, 2))
  check(t.roll((1, -3), (0, -1)), np.roll(X, (1, -3), (0, 2)))
  check(t.roll(7), np.roll(X, 7))
  check(t.repeat_interleave(2, 1), np.repeat(X, 2, 1))
  check(t.repeat_interleave(3), np.repeat(X, 3))
  for got, want in zip(t.split([1, 3], 1), np.split(X, [1], 1)): check(got, want)
  assert [p.shape for p in t.split(2, -1)] == [(3, 4, 2), (3, 4, 2), (3, 4, 1)]

def test_chunk_meshgrid_squeeze():
  t = Tensor(X)
  assert [p.shape for p in t.chunk(2, 2)] == [(3, 4, 3), (3, 4, 2)]
  assert [p.shape for p in Tensor.zeros(6).chunk(4)] == [(2,), (2,), (2,)]  # like torch: fewer chunks when they divide unevenly
  assert [p.shape for p in Tensor.zeros(0).chunk(2)] == [(0,), (0,)]
  for ix in ("ij", "xy"):
    for got, want in zip(Tensor([1, 2, 3]).meshgrid(Tensor([4, 5]), Tensor([6]), indexing=ix), np.meshgrid([1, 2, 3], [4, 5], [6], indexing=ix)):
      check(got, want.astype(np.int32))
  assert Tensor(3.0).squeeze(0).shape == () and Tensor.zeros(2, 1).squeeze(-1).shape == (2,) and Tensor.zeros(2, 1).squeeze(0).shape == (2, 1)

def test_movement_errors():
  t = Tensor(X)
  with pytest.raises(ValueError, match=r"add up to 4, but axis 1 of shape \(3, 4, 5\) has 4|add up to 3"): t.split([1, 2], 1)
  with pytest.raises(ValueError, match="one shift per dim"): t.roll((1, 2), 0)
  with pytest.raises(ValueError, match="'ij' or 'xy'"): t.meshgrid(t, indexing="ji")
  with pytest.raises(IndexError, match="out of range"): t.roll(1, 3)

def test_gather(device):
  idx = np.array([[[0, 2, 1], [3, 3, 0]], [[1, 1, 1], [0, 0, 2]]])
  check(Tensor(X, device=device).gather(1, Tensor(idx, device=device)), np.take_along_axis(X[:2, :, :3], idx, 1))
  idx2 = np.array([[4, 0], [1, 1], [2, 3]])
  check(Tensor(X[:, 0], device=device).gather(-1, Tensor(idx2, device=device)), np.take_along_axis(X[:, 0], idx2, -1))
  check(Tensor([[True, False], [False, True]], device=device).gather(1, Tensor([[1, 1], [0, 1]], device=device)), np.array([[False, False], [False, True]]))

def np_scatter(base, dim, idx, src, op):
  out = base.copy()
  for pos in np.ndindex(*idx.shape):
    tgt = list(pos); tgt[dim] = idx[pos]; tgt = tuple(tgt)
    out[tgt] = src[pos] if op is None else op(out[tgt], src[pos])
  return out

def test_scatter(device):
  base = np.arange(15, dtype=np.float32).reshape(3, 5)
  idx = np.array([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]])
  src = np.arange(10, dtype=np.float32).reshape(2, 5) + 100
  t, i, s = Tensor(base, device=device), Tensor(idx, device=device), Tensor(src, device=device)
  check(t.scatter(0, i, s), np_scatter(base, 0, idx, src, None))
  check(t.scatter(0, i, 7.0), np_scatter(base, 0, idx, np.full(idx.shape, 7.0), None))
  check(t.scatter(0, i, s, reduce="add"), np_scatter(base, 0, idx, src, np.add))
  check(t.scatter(0, i, s, reduce="multiply"), np_scatter(base, 0, idx, src, np.multiply))
  idx1 = np.array([[4, 4, 0], [1, 1, 1], [3, 2, 3]])  # repeated positions: the last write wins, like numpy
  check(t.scatter(1, Tensor(idx1, device=device), s[:, :3].pad(((0, 1), None))), np_scatter(base, 1, idx1, np.pad(src[:, :3], ((0, 1), (0, 0))), None))

@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
  base = np.array([[1, -2, 3, 4], [5, 6, -7, 8]], np.float32)
  idx = np.array([[0, 1, 1, 3, 0], [2, 2, 2, 0, 1]])
  src = np.array([[2, -3, 4, 5, 0.5], [1, 9, -6, 2, 3]], np.float32)
  groups = {}
  for pos in np.ndindex(*idx.shape): groups.setdefault((pos[0], idx[pos]), []).append(src[pos])
  want = base.copy()
  red = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce]
  for (r, c), vals in groups.items(): want[r, c] = red(vals + ([base[r, c]] if include_self else []))
  got = Tensor(base).scatter_reduce(1, Tensor(idx), Tensor(src), reduce, include_self=include_self).numpy()
  np.testing.assert_allclose(got, want, rtol=1e-6)

def test_scatter_gather_errors():
  t = Tensor.zeros(3, 4)
  with pytest.raises(ValueError, match=r"index of shape \(4, 4\) needs 2 dims, each at most self's \(3, 4\) off dim 1"): t.gather(1, Tensor.zeros(4, 4, dtype=dtypes.int32))
  with pytest.raises(TypeError, match="int index tensor, got dtypes.float"): t.scatter(0, Tensor.zeros(3, 4), 1.0)
  with pytest.raises(ValueError, match="must be one of"): t.scatter_reduce(0, Tensor.zeros(3, 4, dtype=dtypes.int32), t, "max")

def test_masked_fill_and_select(device):
  t, m = Tensor(X, device=device), X % 3 == 0
  check(t.masked_fill(Tensor(m, device=device), -1.5), np.where(m, -1.5, X))
  # the dtype is where()'s (tinygrad's rule): a python float into an int tensor promotes, a python int into a float or bool one does not
  i = Tensor([[3, 1], [2, 2]], device=device)
  assert (f := i.masked_fill(i > 2, 0.5)).dtype == dtypes.default_float and f.tolist() == [[0.5, 1.0], [2.0, 2.0]]
  assert (k := i.masked_fill(i > 2, -7)).dtype == dtypes.int32 and k.tolist() == [[-7, 1], [2, 2]]
  assert t.masked_fill(Tensor(m, device=device), 2).dtype == t.dtype
  assert Tensor([True, False], device=device).masked_fill(Tensor([True, True], device=device), False).tolist() == [False, False]
  check(t.masked_select(Tensor(m, device=device)), X[m])
  check(t.masked_select(Tensor(m[0, 0], device=device)), X[np.broadcast_to(m[0, 0], X.shape)])

INDEX_CASES = [([0, 2],), ([[0, -1], [1, 2]],), (slice(None), [1, 3]), (0, slice(None), [1, -1]), ([0, 1], slice(None), [2, 3]),
               ([0, 1], [1, 2]), (Ellipsis, [4, 0]), (None, [2, 0], slice(1, 3)), ([[0], [2]], [1, 2, 3]), (slice(None, None, -1), [0, 0, 1]),
               ([True, False, True],), (1, [0, 1], 2), ([0, 2], 1, slice(None), None), (slice(1, None), [-4, 3], slice(None, None, 2)), ([],)]

def _indexed(x:np.ndarray, idx:tuple) -> np.ndarray:
  """numpy's x[idx] with each int taking its axis away first, as in tinygrad and torch (numpy counts an int beside index arrays as one:
  x[0, :, [1, 2]] has the list's axis first there, where it stays in place here)"""
  idx = tuple(np.array(i, dtype=None if i else np.int64) if isinstance(i, list) else i for i in idx)
  if any(type(i) is int for i in idx) and any(isinstance(i, np.ndarray) for i in idx) and all(i is not None and i is not Ellipsis for i in idx):
    return x[tuple(i if type(i) is int else slice(None) for i in idx)][tuple(i for i in idx if type(i) is not int)]
  return x[idx]

@pytest.mark.parametrize("idx", INDEX_CASES, ids=[str(i) for i in range(len(INDEX_CASES))])
def test_advanced_getitem(idx):
  want = _indexed(X, idx)
  check(Tensor(X)[idx], want)
  check(Tensor(X)[tuple(Tensor(i) if isinstance(i, list) and i else i for i in idx)], want)

def test_single_index_tensor_layouts():
  # one index tensor: its mask is made as (B..., N, 1 per other axis) and x is read as it is (broadcasting right-aligned)
  ids = np.array([[2, -1, 0], [1, 1, -3]])
  for idx in [(ids,), (slice(None), ids), (slice(None), slice(None), ids), (np.array(1),), (slice(None), np.array(-2)), (Ellipsis, ids, slice(1, 3))]:
    want = X[idx]
    check(Tensor(X)[tuple(Tensor(i) if isinstance(i, np.ndarray) else i for i in idx)], want)
  w, i = Tensor(X.reshape(12, 5)), Tensor([3, 11, 0])
  assert not [u for u in w[i].uop.toposort() if u.op is Ops.RESHAPE and u.src[0] is w.uop], "w[ids] reads w without a reshape"
  # index tensors of different ranks broadcast together (the leading axes are implicit)
  check(Tensor(X)[Tensor([[0], [2]]), Tensor([1, -1, 3])], X[np.array([[0], [2]]), np.array([1, -1, 3])])
  check(Tensor(X)[Tensor([0, 2]), :, Tensor([[4], [0], [1]])], X[np.array([0, 2]), :, np.array([[4], [0], [1]])])

def test_ints_take_their_axis_first():
  """tinygrad's and torch's rule, not numpy's: index tensors separated only by ints stay in place (shapes checked against torch 2.13)"""
  x = np.arange(3 * 2 * 5 * 4 * 2, dtype=np.float32).reshape(3, 2, 5, 4, 2)
  i, j = [0, 4, 1], [1, 0, 1]
  cases = (((1, slice(None), i), (2, 3, 4, 2)), ((1, slice(None), i, 1), (2, 3, 2)), ((slice(None), j, 1, [1, 0, 3]), (3, 3, 2)),
           ((slice(None), j, slice(None), [1, 0, 3]), (3, 3, 5, 2)), ((j, 1, i), (3, 4, 2)), ((slice(None), 0, slice(None), j), (3, 5, 3, 2)))
  for idx, shape in cases:
    got = Tensor(x)[tuple(Tensor(k) if isinstance(k, list) else k for k in idx)]
    assert got.shape == shape, (idx, got.shape)
    if all(type(k) is not int for k in idx): want = x[tuple(np.array(k) if isinstance(k, list) else k for k in idx)]
    else: want = _indexed(x, idx)
    np.testing.assert_array_equal(got.numpy(), want)

def test_advanced_getitem_devices(device):
  t = Tensor(X, device=device)
  check(t[Tensor([[2, 0]], device=device), :, Tensor([1, -1], device=device)], X[[[2, 0]], :, [1, -1]])
  m = X[:, :, 0] > -10
  check(t[Tensor(m, device=device)], X[m])
  check(Tensor(X[0, 0].astype(np.int32), device=device)[[True, False, True, True, False]], X[0, 0, [0, 2, 3]].astype(np.int32))

def test_advanced_getitem_with_a_symbolic_position():
  # a bound Variable as a position takes its axis away like an int, next to tensor indices too
  from tinygrad.uop.ops import Variable
  v = Variable("p", 0, 3).bind(2)
  check(Tensor(X)[v, Tensor([3, 0, 1])], X[2, [3, 0, 1]])
  check(Tensor(X)[Tensor([1, 0]), v], X[[1, 0], 2])
  check(Tensor(X)[:, v, Tensor([4, -1])], X[:, 2, [4, -1]])

def test_getitem_errors():
  t = Tensor(X)
  with pytest.raises(IndexError, match="int or bool, got dtypes.float"): t[Tensor([0.5])]
  with pytest.raises(IndexError, match=r"boolean mask of shape \(2,\) doesn't match axes 0..0 of shape \(3, 4, 5\)"): t[[True, False]]
  with pytest.raises(IndexError, match="don't broadcast"): t[[0, 1], [0, 1, 2]]
  with pytest.raises(IndexError, match="too many indices"): t[0, 0, 0, [0]]

def test_setitem(device):
  a, want = Tensor(np.zeros((4, 5), np.float32), device=device).realize(), np.zeros((4, 5), np.float32)
  view = a[1]
  def both(idx, v):
    a[idx] = Tensor(v, device=device) if isinstance(v, np.ndarray) else v
    want[idx] = v
  both((slice(1, 3),), 5.0)
  both((0, slice(None, None, 2)), np.array([1, 2, 3], np.float32))
  both(([3, 0, 3], [1, 1, 1]), np.array([7, 8, 9], np.float32))
  both((slice(None), 4), np.arange(4, dtype=np.float32))
  both((Ellipsis, -1), 2)
  both(([True, False, True, False],), -1.0)
  check(a, want)
  check(view, want[1])  # a view taken before reads the writes: they went into the same buffer

def test_setitem_reads_itself_and_casts():
  a = Tensor(np.arange(6, dtype=np.int32)).realize()
  a[1:] = a[:-1]
  a[0] = 2.7  # takes a's dtype
  assert a.tolist() == [2, 0, 1, 2, 3, 4]
  b = Tensor.ones(3) * 2  # lazy: realized first, then written
  b[[0, 2]] = Tensor([5., 6.])
  assert b.tolist() == [5, 2, 6]
  with pytest.raises(ValueError, match=r"shape \(3,\) to the indexed shape \(2,\)"): b[:2] = Tensor([1., 2., 3.])

def test_cat_and_stack_take_a_sequence():
  # torch.cat / torch.stack take a list; upstream tinygrad's Tensor.stack does too
  a, b = np.arange(6, dtype=np.float32).reshape(2, 3), -np.arange(6, dtype=np.float32).reshape(2, 3)
  np.testing.assert_equal(Tensor.cat([Tensor(a), Tensor(b)], dim=1).numpy(), np.concatenate([a, b], 1))
  np.testing.assert_equal(Tensor.stack((Tensor(a), Tensor(b)), dim=-1).numpy(), np.stack([a, b], -1))
  np.testing.assert_equal(Tensor.stack([Tensor(a)]).numpy(), a[None])
  with pytest.raises(ValueError, match="empty sequence"): Tensor.cat([])

def test_setitem_on_a_value_with_a_gradient():
  """torch's setitem on a non-leaf: the overwritten elements pass no gradient back, the written value's elements get theirs (it was
  the reverse: written into a buffer, the old graph still took the gradient at the new value)"""
  a = Tensor(np.arange(4, dtype=np.float32), requires_grad=True)
  c = a * 1
  c[1] = 100.0
  (c * c).sum().backward()
  np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0, 4.0, 6.0])  # d/da sum(c^2) = 2a, except where c no longer holds a
  a, b = Tensor([1.0, 2.0, 3.0], requires_grad=True), Tensor([4.0, 5.0, 6.0, 7.0, 8.0, 9.0], requires_grad=True)
  w = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
  c = b.reshape(2, 3) * 1
  c[0:1] = a.reshape(1, 3)
  c[1, Tensor([2, 0])] = a[:2] * 10  # tensor indices too
  assert c.tolist() == [[1.0, 2.0, 3.0], [20.0, 8.0, 10.0]]
  (c * Tensor(w)).sum().backward()
  np.testing.assert_array_equal(a.grad.numpy(), [1 + 10 * 6, 2 + 10 * 4, 3])  # a[0] -> c[0,0] and c[1,2]; a[1] -> c[0,1] and c[1,0]
  np.testing.assert_array_equal(b.grad.numpy(), [0, 0, 0, 0, 5, 0])  # only c[1,1] still holds b's element
  x = Tensor([1.0, 2.0])
  h = x * 2
  h[0] = 7.0  # no gradient can flow (no requires_grad=True tensor): written into a buffer as before
  assert h.tolist() == [7.0, 4.0] and h.uop.base.op is Ops.BUFFER
