"""The repeated eager realize's fast path: a schedule-cache hit replays by position (this call's buffers as a list, its results found by
their place in the graph walk), and cache keys hold a number for the ContextVars' values.
Every result is checked against numpy; the counters show the fast path was (or was not) taken."""
import pathlib, sys
import numpy as np, pytest
from tinygrad import Tensor, dtypes
from tinygrad.device import Buffer
from tinygrad.helpers import Context, ContextVar, GlobalCounters
from tinygrad.schedule import cache
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's test_schedule_cache is not on sys.path
from test_schedule_cache import fresh_cache, rand  # noqa: F401  (fresh_cache: the autouse fixture, an empty cache around each test)

def test_snapshot_id_names_equal_snapshots_alike():
  from tinygrad.helpers import NOOPT
  before, snap = ContextVar.snapshot_id(), ContextVar.snapshot()
  with Context(NOOPT=1 - NOOPT.value):
    inside = ContextVar.snapshot_id()
    assert inside != before and ContextVar.snapshot() != snap
  assert ContextVar.snapshot_id() == before and ContextVar.snapshot() == snap  # the same values again: the same number

def test_an_unhashable_knob_schedules_without_the_cache():
  knob = ContextVar._cache.get("TEST_FASTPATH_KNOB") or ContextVar("TEST_FASTPATH_KNOB", 0)
  x = rand(8)
  try:
    knob.value = [1, 2]  # a list: no hash, so no key
    assert (knob.key, [1, 2]) in ContextVar.snapshot()  # the snapshot itself still works
    with pytest.raises(TypeError): ContextVar.snapshot_id()
    for _ in range(2): np.testing.assert_allclose((Tensor(x) * 2).sum().numpy(), (x * 2).sum(), rtol=1e-6)
    assert cache.stats == {"hits": 0, "misses": 0}
  finally: knob.value = 0
  for _ in range(2): np.testing.assert_allclose((Tensor(x) * 2).sum().numpy(), (x * 2).sum(), rtol=1e-6)
  assert cache.stats == {"hits": 1, "misses": 1}

def test_repeated_sum_hits():
  x = rand(1024)
  t = Tensor(x).realize()
  for _ in range(6):
    GlobalCounters.reset()
    s = t.sum().realize()
    assert s.uop.base.op.name == "BUFFER" and s._is_buffer()  # the handle points at its buffer
    np.testing.assert_allclose(s.numpy(), x.sum(), rtol=1e-5)
    assert GlobalCounters.kernel_count >= 1
  assert cache.stats == {"hits": 5, "misses": 1}

def test_a_changed_switch_misses_and_comes_back():
  from tinygrad.helpers import NOOPT
  x = rand(64, 16)
  t = Tensor(x).realize()
  for flip in (0, 1, 0, 1):
    with Context(NOOPT=NOOPT.value ^ flip): np.testing.assert_allclose(t.sum(1).numpy(), x.sum(1), rtol=1e-5)
  assert cache.stats == {"hits": 2, "misses": 2}  # the switch's two values: two keys, each found again by its number

def test_what_must_not_hit():
  x = rand(32)
  Tensor(x).sum().realize()
  for arr in (rand(33), x.astype(np.float16), x.astype(np.int32), rand(4, 8)):
    np.testing.assert_allclose(Tensor(arr).sum().numpy(), arr.sum(), rtol=2e-3)
  assert cache.stats == {"hits": 0, "misses": 5}

def test_a_buffer_written_between_hits_is_read_again():
  t = Tensor(rand(16)).realize()
  t.sum().realize()
  for k in range(4):
    vals = rand(16, seed=k + 1)
    t.assign(Tensor(vals))
    np.testing.assert_allclose(t.sum().numpy(), vals.sum(), rtol=1e-5)
    np.testing.assert_allclose((t * 2 + 1).numpy(), vals * 2 + 1, rtol=1e-6)
  assert cache.stats["hits"] >= 6

def test_positional_results_with_intermediates_and_shared_inputs():
  # results by their place in the walk: several outputs, a broadcast-back intermediate with a live handle, an input read twice
  for i in range(4):
    a, b = rand(6, 5, seed=i), rand(6, 5, seed=i + 10)
    ta, tb = Tensor(a).realize(), Tensor(b).realize()
    m = (ta * tb).max(1, keepdim=True)
    e, s, d = (ta * tb - m).exp(), (ta - m).sum(0), ta + ta * tb
    Tensor.realize(e, s, d)
    ab = a * b
    np.testing.assert_allclose(m.numpy(), ab.max(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(e.numpy(), np.exp(ab - ab.max(1, keepdims=True)), rtol=1e-5)
    np.testing.assert_allclose(s.numpy(), (a - ab.max(1, keepdims=True)).sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d.numpy(), a + ab, rtol=1e-6)
    assert all(x._is_buffer() for x in (e, s, d))
  assert cache.stats["hits"] >= 3

def test_elementwise_chain_and_mlp_step_match_numpy():
  a, b, c = rand(256), rand(256, seed=1), rand(256, seed=2)
  ta, tb, tc = (Tensor(x).realize() for x in (a, b, c))
  for _ in range(3): np.testing.assert_allclose(((ta * tb + tc).relu() * 0.5).numpy(), np.maximum(a * b + c, 0) * 0.5, rtol=1e-6)
  # a linear layer trained by plain gradient steps, against the same steps in numpy
  w0, x, y = rand(4, 3) * 0.1, rand(8, 4), rand(8, 3)
  w, ref = Tensor(w0, requires_grad=True), w0.copy()
  for _ in range(4):
    loss = ((Tensor(x) @ w - Tensor(y)) ** 2).mean()
    loss.backward()
    w.assign(w.detach() - w.grad * 0.1).realize()
    w.grad = None
    ref -= 0.1 * (2 * x.T @ (x @ ref - y) / y.size)
    np.testing.assert_allclose(w.numpy(), ref, rtol=1e-4, atol=1e-6)
  assert cache.stats["hits"] >= 4

def test_buffer_counts_its_memory_once():
  used, n = GlobalCounters.mem_used, 1000
  b = Buffer("CPU", n, dtypes.float32)
  assert b.nbytes == 4 * n and not b.is_allocated()
  b.allocate()
  assert b.is_allocated() and GlobalCounters.mem_used == used + 4 * n
  v = b.view(10, dtypes.int32, 8).ensure_allocated()  # a view owns no memory
  assert v.nbytes == 40 and GlobalCounters.mem_used == used + 4 * n
  b.copyin(memoryview(np.arange(n, dtype=np.float32).tobytes()))
  assert np.frombuffer(bytes(v.as_buffer()), np.int32).tolist() == np.arange(n, dtype=np.float32)[2:12].view(np.int32).tolist()
  del v
  b.deallocate()
  assert not b.is_allocated() and GlobalCounters.mem_used == used
  b.deallocate()  # twice: nothing more to give back
  assert GlobalCounters.mem_used == used
