"""The bitonic network of long sorts (mixin/sorting.py, _network): every stage one of a few compiled programs, its distance a buffer's
value; values against numpy for padded rows, several rows, descending, 64-bit pairs, the mixin on Tensor handles, and under TinyJit."""
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, dtypes
from tinygrad.mixin import OpMixin
from tinygrad.schedule.rangeify import create_schedule
import tinygrad.mixin.sorting as sorting

R = np.random.default_rng(0)

@pytest.fixture
def network(monkeypatch):
  """every sort takes the network: packed keys past 32 elements, (value, index) pairs past 4"""
  monkeypatch.setattr(sorting, "PACKED_RANK_MAX_COMPARES", 0)
  monkeypatch.setattr(sorting, "BITONIC_MIN", 4)

def _kernels(*ts:Tensor) -> list:
  items, _ = create_schedule([t.uop for t in ts])
  return [it.ast for it in items if it.kind == "kernel"]

@pytest.mark.parametrize("shape, dt", [((1 << 16,), np.float32), ((3, 5000), np.int32), ((2000,), np.float64)], ids=str)
def test_network_is_a_few_programs(network, shape, dt):
  """a long row's ~log2(n)^2/4 network kernels are a handful of distinct ASTs, each compiled once: a stage's distance is data. Each stage's
  own reshape made each a program of its own (1<<16 floats: 57 kernels, 57 programs, a first sort of a million floats compiled 18 s)"""
  a = R.standard_normal(shape).astype(dt) if dt is not np.int32 else R.integers(-1000, 1000, shape).astype(dt)
  v, i = Tensor(a).sort(-1)
  asts = _kernels(v, i)
  assert len(asts) > 50 and len(set(asts)) <= 12, (len(asts), len(set(asts)))
  np.testing.assert_array_equal(i.numpy(), np.argsort(a, -1, kind="stable"))
  np.testing.assert_array_equal(v.numpy(), np.sort(a, -1))

SHAPES = [(33,), (4, 100), (2, 3, 257), (1000,), (2, 4096)]
@pytest.mark.parametrize("shape, dt", [(s, d) for d in (np.float32, np.int32) for s in SHAPES] +
                                      [(s, d) for d in (np.float64, np.int64) for s in SHAPES[:3]], ids=str)
def test_network_values(network, shape, dt):
  """padded rows (33 -> 64 .. 257 -> 512), exact powers of two, lead dims, ties, NaN and -0.0, both orders, against numpy's stable sort"""
  a = R.integers(-20, 20, shape).astype(dt)
  if dt in (np.float32, np.float64):
    a = a / 4
    a.reshape(-1, shape[-1])[:, ::7] = np.nan
    a.reshape(-1, shape[-1])[:, 1::5] = -0.0
  for descending in (False, True):
    # numpy's stable order: NaN last ascending; descending is the reverse order with ties (NaN among them) in index order
    want = np.argsort(-a if descending else a, -1, kind="stable")
    if descending and dt in (np.float32, np.float64): want = np.argsort(np.where(np.isnan(a), -np.inf, -a), -1, kind="stable")
    v, i = Tensor(a).sort(-1, descending=descending)
    assert v.numpy().dtype == dt and i.dtype is dtypes.int32
    np.testing.assert_array_equal(i.numpy(), want)
    got, expect = v.numpy(), np.take_along_axis(a, want, -1)
    np.testing.assert_array_equal(got, expect)
    assert (np.signbit(got) == np.signbit(expect)).all()  # -0.0 comes back as itself

def test_network_64_bit_extremes(network):
  """(order, index) pairs: int64's and uint64's extremes, infinities, in both orders"""
  i64 = np.array([np.iinfo(np.int64).max, 3, np.iinfo(np.int64).min, -1, 3, 0, np.iinfo(np.int64).min + 1] * 3, dtype=np.int64)
  u64 = np.array([2**64 - 1, 0, 2**63, 7, 2**63 - 1, 7] * 3, dtype=np.uint64)
  f64 = np.array([np.inf, -np.inf, 1e308, -1e-308, 0.0, -0.0, np.nan, 5e-324] * 3, dtype=np.float64)
  for a in (i64, u64, f64):
    for descending in (False, True):
      def key(j):
        nan = bool(np.isnan(a[j]))
        return (nan != descending, 0 if nan else (-1 if descending else 1) * a[j].item(), j)  # NaN last ascending, first descending
      order = sorted(range(len(a)), key=key)
      v, i = Tensor(a).sort(descending=descending)
      assert i.tolist() == order, (a.dtype, descending)
      np.testing.assert_array_equal(v.numpy(), a[order])

def test_network_mixin_on_tensor_handles(network):
  """the mixin is shared: built step by step on Tensor handles (not on the node), the network sorts the same"""
  a = R.standard_normal((2, 300)).astype(np.float32)
  for x in (a, a.astype(np.float64)):
    v, i = OpMixin.sort(Tensor(x), -1, descending=True)
    want = np.argsort(-x, -1, kind="stable")
    np.testing.assert_array_equal(i.numpy(), want)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(x, want, -1))

@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=lambda d: d.__name__)
def test_network_under_jit(network, dt):
  """a jitted sort replays the network's kernels, their distances' buffers included: right on new input data every call"""
  @TinyJit
  def f(x:Tensor):
    v, i = x.sort(-1, descending=True)
    return v.realize(), i.realize()
  for _ in range(4):
    a = R.standard_normal((3, 700)).astype(dt)
    v, i = f(Tensor(a))
    want = np.argsort(-a, -1, kind="stable")
    np.testing.assert_array_equal(i.numpy(), want)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, want, -1))
