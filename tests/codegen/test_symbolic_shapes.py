"""Shapes that hold Variables: every graph walk sees them, buffers are sized by the maximum, and a kernel compiles once for all values."""
import numpy as np, pytest
from tinygrad import Tensor
from tinygrad.uop.ops import UOp, Ops, Variable
from tinygrad.codegen import _get_program_memo

def test_variable_in_movement_is_visible():
  v = Variable("n", 1, 8)
  x = Tensor(np.arange(8, dtype=np.float32))
  y = x.shrink(((0, v.bind(3)),)) + 1
  assert y.uop.variables() == [v]
  assert any(u.op is Ops.BIND for u in y.uop.toposort())
  # substitute and the content key both see it: another value is another graph
  assert (x.shrink(((0, v.bind(4)),)) + 1).uop.key != y.uop.key
  assert y.uop.substitute({v.bind(3): v.bind(5)}).shape[0] is v.bind(5)
  np.testing.assert_equal(y.numpy(), [1, 2, 3])

@pytest.mark.parametrize("make", [
  lambda n, a: Tensor(a).shrink(((0, n), None)) * 2,                                   # shrink
  lambda n, a: Tensor(a).shrink(((0, n), None)).sum(1),                                # reduce over a static axis
  lambda n, a: Tensor(a).shrink(((0, n), None)).sum(0),                                # reduce over the symbolic axis
  lambda n, a: Tensor(a).shrink(((0, n), None)).reshape(n, 2, 2).permute(0, 2, 1),     # reshape with a symbolic size
  lambda n, a: Tensor(a).shrink(((0, n), None))._pad(((1, 2), (0, 0))) + 1,            # pad
  lambda n, a: Tensor(a)[:1].expand(n, 4) + 0,                                          # expand to a symbolic size
  lambda n, a: Tensor(a).shrink(((0, n), None)) @ Tensor(a).shrink(((0, n), None)).T,   # matmul n x n
  lambda n, a: Tensor(a).shrink(((0, n), None)).T @ Tensor(a).shrink(((0, n), None)),   # matmul reducing over n
])
def test_symbolic_ops_match_numpy(make):
  v = Variable("n", 1, 8)
  a = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
  for val in (1, 3, 8):
    want = make(val, a).numpy()
    got = make(v.bind(val), a)
    assert any(isinstance(s, UOp) for s in got.shape) or got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)

def test_creation_with_symbolic_shape():
  v = Variable("n", 1, 10)
  for val in (2, 7):
    n = v.bind(val)
    np.testing.assert_equal(Tensor.zeros(n, 3).numpy(), np.zeros((val, 3)))
    np.testing.assert_equal((Tensor.ones(n) * 3).numpy(), np.full(val, 3.0))
    np.testing.assert_equal(Tensor.full((2, n), 5).numpy(), np.full((2, val), 5))
    e = Tensor.empty(n, 2)
    assert e.uop.base.arg.shape == (20,)  # sized by the maximum
    np.testing.assert_equal((e.assign(Tensor.ones(n, 2)) + 1).numpy(), np.full((val, 2), 2.0))

def test_one_compile_for_every_value():
  v = Variable("n", 1, 64)
  a = np.random.default_rng(1).standard_normal(64).astype(np.float32)
  x = Tensor(a).realize()
  _get_program_memo.cache_clear()
  for val in (3, 17, 64, 1, 40):
    out = (x.shrink(((0, v.bind(val)),)) * 2 + 1).exp().sum()
    np.testing.assert_allclose(out.item(), np.exp(a[:val] * 2 + 1).sum(), rtol=1e-5)
  # one kernel AST, compiled once; five runs with five values
  assert _get_program_memo.cache_info().misses == 1 and _get_program_memo.cache_info().hits == 4

def test_conflicting_values_in_one_realize():
  v = Variable("n", 1, 8)
  x = Tensor(np.arange(8, dtype=np.float32))
  with pytest.raises(ValueError, match="bound to both"): (x.shrink(((0, v.bind(2)),)).sum() + x.shrink(((0, v.bind(3)),)).sum()).realize()

def test_unbound_variable_shape_cannot_be_read():
  v = Variable("n", 1, 8)
  with pytest.raises(ValueError, match="unbound Variable"): Tensor.zeros(v, 2).numpy()

def test_slicing_with_a_variable():
  v = Variable("n", 1, 10)
  a = np.arange(30, dtype=np.float32).reshape(10, 3)
  x = Tensor(a).realize()
  for val in (1, 4, 10):
    n = v.bind(val)
    np.testing.assert_equal((x[:n] + Tensor.ones(n, 3)).numpy(), a[:val] + 1)
    np.testing.assert_equal(x[:n, 1:].sum(0).numpy(), a[:val, 1:].sum(0))
    np.testing.assert_equal(x[:n][1:].numpy() if val > 1 else a[1:val], a[1:val])
  with pytest.raises(IndexError, match="symbolic bound"): x[:v.bind(3):2]

def test_a_window_at_a_variable_position():
  """x[:, start_pos], x[:, start_pos:start_pos+2] and Tensor.arange(start_pos, start_pos+2) (a KV-cache program's reads at a bound
  position) have concrete sizes and the values at the binding"""
  v = Variable("start_pos", 0, 9)
  a = np.arange(24, dtype=np.float32).reshape(2, 12)
  x = Tensor(a).realize()
  for val in (0, 3, 9):
    sp = v.bind(val)
    assert x[:, sp:sp + 2].shape == (2, 2) and Tensor.arange(sp, sp + 2).shape == (2,)
    np.testing.assert_equal(x[:, sp].numpy(), a[:, val])
    np.testing.assert_equal(x[:, sp + 1:sp + 3].numpy(), a[:, val + 1:val + 3])
    np.testing.assert_equal(Tensor.arange(sp, sp + 2).numpy(), [val, val + 1])
  with pytest.raises(IndexError, match="takes 12..12, outside axis 1 of size 12"): x[:, v.bind(9) + 3]
  with pytest.raises(IndexError, match="takes 0..9, outside axis 0 of size 2"): x[v]
  # a symbolic length is a symbolic axis (tests/tensor/test_symbolic_masks.py); a fractional step over one has no whole count
  assert Tensor.arange(v.bind(2), 8).shrink(((0, 6),)).tolist() == [2, 3, 4, 5, 6, 7]
  with pytest.raises(ValueError, match="needs an int step > 0"): Tensor.arange(v.bind(2), 8, 0.5)

@pytest.mark.parametrize("symbolic", [False, True])
def test_a_realize_over_a_variable_keeps_what_it_computed(symbolic):
  """a KV-cache step: realizing the cache write computes h; with start_pos a bound Variable as with an int, h is then a buffer, so the
  logits after it do not compute h again (it was recomputed once per later realize, 95 kernels for a 40-kernel decode step)"""
  from tinygrad import GlobalCounters
  rng = np.random.default_rng(0)
  a, w = rng.standard_normal((1, 8)).astype(np.float32), rng.standard_normal((8, 8)).astype(np.float32)
  c = rng.standard_normal((6, 8)).astype(np.float32)
  cache = Tensor(c).realize()
  pos = Variable("start_pos", 0, 4).bind(2) if symbolic else 2
  h = ((cache.shrink(((0, pos + 1), None)).sum(0, keepdim=True) + Tensor(a)) @ Tensor(w)).relu().contiguous()  # h reads the Variable
  cache.shrink(((pos + 1, pos + 2), None)).assign(h).realize()
  assert h.uop.base.op is Ops.BUFFER
  GlobalCounters.reset()
  out = (h * 2).realize()
  assert GlobalCounters.kernel_count == 1
  ref = np.maximum((c[:3].sum(0, keepdims=True) + a) @ w, 0)
  np.testing.assert_allclose(out.numpy(), 2 * ref, rtol=1e-5)
  np.testing.assert_allclose(cache.numpy()[3:4], ref, rtol=1e-5)

def test_pad_by_a_variable_and_mean_over_one():
  v = Variable("n", 1, 8)
  a = np.arange(4, dtype=np.float32)
  x = Tensor(a).realize()
  for val in (1, 5):
    n = v.bind(val)
    np.testing.assert_equal(x.pad((n, 1)).numpy(), np.pad(a, (val, 1)))
    np.testing.assert_equal(x.pad(((0, n),), value=7.0).numpy(), np.pad(a, (0, val), constant_values=7))
    np.testing.assert_allclose(Tensor(np.arange(8, dtype=np.float32))[:n].mean().item(), np.arange(val).mean())
    np.testing.assert_allclose((Tensor.ones(n, 3) * 2).mean(0).numpy(), np.full(3, 2.0))
