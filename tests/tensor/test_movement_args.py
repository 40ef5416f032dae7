"""Movement ops check their arguments before any shortcut: a float size equal to the current one (reshape(3, 4.0) on a (3, 4) tensor)
raises like a different one does, as in torch, and the error names the bad value. The UOp shares the mixin, so it is checked too."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.uop.ops import UOp

X = np.arange(12, dtype=np.float32).reshape(3, 4)

# (call, the bad value the message must name): each raises TypeError in torch 2.x as well (a float or bool where an int goes)
FLOAT_ARGS = [
  (lambda t: t.reshape(3, 4.0), "4.0"), (lambda t: t.reshape((3.0, 4)), "3.0"), (lambda t: t.reshape(2, 6.0), "6.0"),
  (lambda t: t.reshape(3, -1.0), "-1.0"), (lambda t: t.reshape(True, 12), "True"), (lambda t: t.view(3, 4.0), "4.0"),
  (lambda t: t.expand(3, 4.0), "4.0"), (lambda t: t.expand(2, 3, 4.0), "4.0"), (lambda t: t.permute(0, 1.0), "1.0"),
  (lambda t: t.permute(1.0, 0), "1.0"), (lambda t: t.flip(0.0), "0.0"), (lambda t: t.flip(True), "True"),
  (lambda t: t.squeeze(0.0), "0.0"), (lambda t: t.unsqueeze(0.0), "0.0"), (lambda t: t.transpose(0.0, 1), "0.0"),
  (lambda t: t.flatten(0.0), "0.0"), (lambda t: t.unflatten(1, (4.0,)), "4.0"), (lambda t: t.repeat(1, 1.0), "1.0"),
  (lambda t: t.shrink(((0, 3), (0, 4.0))), "4.0"), (lambda t: t.shrink(((0, 3.0), None)), "3.0"), (lambda t: t.pad((0, 0.0)), "0.0"),
  (lambda t: t.pad((0, 0, 0, 0.0)), "0.0"), (lambda t: t.pad(((0, 0), (0.0, 0))), "0.0"), (lambda t: t._pad(((0, 0), (0, 0.0))), "0.0"),
  (lambda t: t.roll(0.0, 0), "0.0"), (lambda t: t.split(3.0), "3.0"), (lambda t: t.split([1, 2.0]), "2.0"),
]

@pytest.mark.parametrize("make", [lambda: Tensor(X), lambda: UOp.placeholder((3, 4), dtypes.float32, 0)], ids=["Tensor", "UOp"])
@pytest.mark.parametrize("i", range(len(FLOAT_ARGS)))
def test_non_int_argument_raises_even_when_it_is_a_no_op(make, i):
  call, bad = FLOAT_ARGS[i]
  with pytest.raises(TypeError, match=rf"must be an int, got {bad}"): call(make())

def test_malformed_arguments_name_the_input():
  t = Tensor(X)
  with pytest.raises(ValueError, match=r"shrink \(\(0, 3\), \(0, 4, 1\)\): each axis takes a \(start, end\) pair or None, got \(0, 4, 1\)"):
    t.shrink(((0, 3), (0, 4, 1)))
  with pytest.raises(ValueError, match=r"shrink \(\(0, 3\),\) needs one \(start, end\) pair or None per axis of \(3, 4\)"): t.shrink(((0, 3),))
  with pytest.raises(ValueError, match=r"pad \(\(0, 0\), 1\): each axis takes a \(before, after\) pair or None, got 1"): t._pad(((0, 0), 1))
  with pytest.raises(TypeError, match="padding must be a tuple or list, got 1"): t.pad(1)
  # torch: "expanded size -2 ... must match" and "-1 is not allowed in a leading, non-existing dimension"
  with pytest.raises(ValueError, match=r"cannot expand \(3, 4\) to \(-2, 4\): a size must be >= 0"): t.expand(-2, 4)
  with pytest.raises(ValueError, match=r"cannot expand \(3, 4\) to \(-1, 3, 4\)"): t.expand(-1, 3, 4)
  with pytest.raises(ValueError, match=r"cannot expand \(1, 4\) to \(-3, 4\)"): t[:1].expand(-3, 4)
  with pytest.raises(ValueError, match=r"repeat counts must be >= 0, got \(1, -1\)"): t.repeat(1, -1)
  with pytest.raises(ValueError, match=r"reshape \(3, 4, None\): None keeps an axis's size, and shape \(3, 4\) has only 2"): t.reshape(3, 4, None)

def test_numpy_ints_are_ints():
  # torch takes anything with __index__ as a size or a dim; the results match numpy's
  t, i = Tensor(X), np.int64
  np.testing.assert_array_equal(t.reshape(i(2), 6).numpy(), X.reshape(2, 6))
  np.testing.assert_array_equal(t.reshape(i(3), i(4)).numpy(), X)
  np.testing.assert_array_equal(t.permute(i(1), 0).numpy(), X.T)
  np.testing.assert_array_equal(t.flip(i(1)).numpy(), X[:, ::-1])
  np.testing.assert_array_equal(t.shrink(((i(1), 3), None)).numpy(), X[1:3])
  np.testing.assert_array_equal(t.pad((i(1), 0)).numpy(), np.pad(X, ((0, 0), (1, 0))))
  np.testing.assert_array_equal(t[:1].expand(i(2), 4).numpy(), np.broadcast_to(X[:1], (2, 4)))
  np.testing.assert_array_equal(t.repeat(i(2), 1).numpy(), np.tile(X, (2, 1)))
  np.testing.assert_array_equal(t.reshape(3, None).numpy(), X)  # None keeps an axis, as in tinygrad
  # a no-op stays the same tensor
  assert t.reshape(i(3), 4) is t and t.expand(-1, 4) is t and t.permute(0, 1) is t and t.shrink((None, (0, 4))) is t and t.pad((0, 0)) is t

@pytest.mark.parametrize("dim, want", [((0, 2), (3, 2)), ([0, 1], (3, 1, 2)), (-2, (1, 3, 2)), ((-1, -4), (3, 1, 2)), ((), (1, 3, 1, 2))])
def test_squeeze_takes_several_dims(dim, want):
  """torch's squeeze(dims): each listed axis of size 1 removed (a tuple was a TypeError deep in _resolve_dim)"""
  x = np.arange(6, dtype=np.float32).reshape(1, 3, 1, 2)
  got = Tensor(x).squeeze(dim)
  assert got.shape == want
  np.testing.assert_equal(got.numpy(), x.reshape(want))

def test_masked_select_broadcasts_self_to_the_mask():
  """torch broadcasts self and mask together: a row of 3 under a (2, 3) mask selects from the row broadcast (tg expanded the mask to
  self's shape only, an error here)"""
  x, m = np.arange(3, dtype=np.float32), np.array([[True, False, True], [False, True, True]])
  np.testing.assert_equal(Tensor(x).masked_select(Tensor(m)).numpy(), np.broadcast_to(x, m.shape)[m])
  np.testing.assert_equal(Tensor(x).masked_select(Tensor(m), size=5, fill_value=-1).numpy(), [0, 2, 1, 2, -1])
  with pytest.raises(ValueError, match="cannot be broadcast"): Tensor(x).masked_select(Tensor(np.array([True, False])))
