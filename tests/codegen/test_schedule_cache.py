"""The schedule cache: a graph of the same structure on other buffers replays the stored schedule (numpy-equal results), and graphs
that differ in anything the schedule bakes in (shape, dtype, device, constants, which nodes share a buffer) never share one."""
import numpy as np, pytest
from tinygrad import Tensor
from tinygrad.helpers import Context, GlobalCounters
from tinygrad.uop.ops import Variable
from tinygrad.schedule import cache

@pytest.fixture(autouse=True)
def fresh_cache():
  cache.clear()
  yield
  cache.clear()

def rand(*shape, seed=0): return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)

def hits_of(make, inputs, ref=None, device=None) -> list[int]:
  """the cache's hit count after realizing make(*tensors) for each set of numpy inputs, checking each result against ref(*arrays)"""
  ret = []
  for arrays in inputs:
    out = make(*[Tensor(a, device=device) for a in arrays]).numpy()
    np.testing.assert_allclose(out, (ref or make)(*arrays), rtol=1e-5, atol=1e-6)
    ret.append(cache.stats["hits"])
  return ret

def test_same_structure_hits_with_new_buffers(device):
  # a reduce (split into partials), a broadcast-back reduce (its own kernel) and elementwise work: several kernels and fresh buffers
  make = lambda a, b: (a * b - (a * b).max(1, keepdim=True)).sum(1) + 1
  ref = lambda a, b: (a * b - (a * b).max(1, keepdims=True)).sum(1) + 1
  assert hits_of(make, [(rand(64, 33, seed=i), rand(64, 33, seed=i + 9)) for i in range(3)], ref, device) == [0, 1, 2]

def test_what_is_baked_in_does_not_share():
  x = rand(8, 4)
  Tensor(x).sum().realize()
  for other in (lambda: Tensor(rand(8, 5)).sum(), lambda: Tensor(x.astype(np.float16)).sum(), lambda: (Tensor(x) * 2).sum(),
                lambda: (Tensor(x) * 3).sum(), lambda: Tensor(x, device="CPU:1").sum(), lambda: Tensor(x).max()):
    other().realize()
  assert cache.stats == {"hits": 0, "misses": 7}
  np.testing.assert_allclose((Tensor(x) * 3).sum().numpy(), (x * 3).sum(), rtol=1e-5)
  assert cache.stats["hits"] == 1

def test_shared_buffer_is_part_of_the_key():
  a, b = rand(16), rand(16, seed=1)
  ta, tb = Tensor(a).realize(), Tensor(b).realize()
  np.testing.assert_allclose((ta * ta).numpy(), a * a)
  np.testing.assert_allclose((ta * tb).numpy(), a * b)  # two buffers where the first had one: another graph
  assert cache.stats["hits"] == 0

def test_in_place_assign_replays():
  acc, step = Tensor.zeros(4, 3).contiguous().realize(), rand(4, 3)
  view = acc[1:3]
  for i in range(4): acc.assign(acc + Tensor(step * i))  # a constant i would be another graph each time
  np.testing.assert_allclose(acc.numpy(), step * 6, rtol=1e-6)
  np.testing.assert_allclose(view.numpy(), step[1:3] * 6, rtol=1e-6)
  assert cache.stats["hits"] >= 3

def test_views_of_buffers():
  make = lambda a: a[1:, ::2].T.reshape(-1) * 2
  assert hits_of(make, [(rand(5, 6, seed=i),) for i in range(3)]) == [0, 1, 2]

def test_variables_take_each_calls_value():
  v, a = Variable("n", 1, 8), rand(8, 4)
  outs = []
  for n in (3, 5, 8):
    y = Tensor(a).shrink(((0, v.bind(n)), None)).sum(1) * 2
    outs.append(y.numpy())
    np.testing.assert_allclose(outs[-1], a[:n].sum(1) * 2, rtol=1e-5)
    assert y.shape[0].unbind()[1] == n  # the result is bound to this call's value
  assert cache.stats["hits"] == 2

def test_multiple_outputs_and_intermediates():
  for i in range(3):
    x = Tensor(rand(6, 7, seed=i))
    m = x.max(1, keepdim=True)  # broadcast back: realized on the way
    e, s = (x - m).exp(), (x - m).sum()
    Tensor.realize(e, s)
    ref = rand(6, 7, seed=i)
    np.testing.assert_allclose(e.numpy(), np.exp(ref - ref.max(1, keepdims=True)), rtol=1e-5)
    np.testing.assert_allclose(s.numpy(), (ref - ref.max(1, keepdims=True)).sum(), rtol=1e-4)
    np.testing.assert_allclose(m.numpy(), ref.max(1, keepdims=True))  # the live handle on an intermediate reads its buffer
  assert cache.stats["hits"] >= 2

def test_scache_0_turns_it_off():
  with Context(SCACHE=0):
    assert hits_of(lambda a: a + 1, [(rand(3),), (rand(3),)]) == [0, 0]
  assert cache.stats["misses"] == 0

def test_a_changed_contextvar_misses():
  from tinygrad.helpers import NOOPT
  x = rand(8, 4)
  run = lambda: np.testing.assert_allclose((Tensor(x) * 2).sum(1).numpy(), (x * 2).sum(1), rtol=1e-5)
  run(); run()
  assert cache.stats == {"hits": 1, "misses": 1}
  with Context(NOOPT=1): run()  # through Context
  saved = NOOPT.value
  try:
    NOOPT.value = 1  # set directly: the key's snapshot of the ContextVars must see it too
    run()
  finally: NOOPT.value = saved
  assert cache.stats == {"hits": 2, "misses": 2}  # NOOPT=1 twice: one schedule, then its hit
  run()
  assert cache.stats == {"hits": 3, "misses": 2}

def test_a_new_contextvar_at_its_initial_value_still_hits():
  # a module imported on a program's first realize makes ContextVars of its own: with them in the key, the second realize of every graph
  # scheduled again (an LSTM's gradient: seconds), where nothing that steers scheduling had changed
  from tinygrad.helpers import ContextVar
  x = rand(8, 4)
  run = lambda: np.testing.assert_allclose((Tensor(x) * 3).sum(0).numpy(), (x * 3).sum(0), rtol=1e-5)
  run()
  knob = ContextVar(f"_TEST_KNOB_{id(x)}", 0)
  run()
  assert cache.stats == {"hits": 1, "misses": 1}
  with Context(**{knob.key: 1}): run()  # set, it is part of the key
  assert cache.stats == {"hits": 1, "misses": 2}
  run()
  assert cache.stats == {"hits": 2, "misses": 2}

def test_buffers_that_swap_places_between_hits():
  # a buffer keeps the hole it last became: the same two buffers in the other order (one structure: holes go by position) must still
  # read each its own data
  a, b = rand(5), rand(5, seed=1)
  ta, tb = Tensor(a).realize(), Tensor(b).realize()
  for _ in range(2):
    np.testing.assert_allclose((ta + tb * 2).numpy(), a + b * 2, rtol=1e-6)
    np.testing.assert_allclose((tb + ta * 2).numpy(), b + a * 2, rtol=1e-6)
    np.testing.assert_allclose((ta + ta * 2).numpy(), a * 3, rtol=1e-6)  # one buffer twice: another graph
  assert cache.stats == {"hits": 4, "misses": 2}

def test_a_hit_after_a_changed_dtype_or_shape_reads_the_right_values():
  x = rand(6, 4)
  for arr in (x, x.astype(np.float16), x[:5], x, x.astype(np.float16), x[:5]):
    t = Tensor(arr).realize()
    out = (t * 2).sum(0)
    assert out.shape == (4,) and out.dtype == Tensor(arr).dtype
    np.testing.assert_allclose(out.numpy(), (arr.astype(np.float32) * 2).sum(0), rtol=2e-3)
  assert cache.stats == {"hits": 3, "misses": 3}

def test_creation_function_constants_share_schedules_and_stay_apart():
  # Tensor.full's constant is a node of its own (a tag, for autograd): a program that makes new ones each step finds the last step's
  # schedule; which of them are the same node stays in the key
  x = rand(4)
  for _ in range(3): np.testing.assert_allclose((Tensor(x) * Tensor.full((4,), 2.0) + Tensor.ones(4)).numpy(), x * 2 + 1)
  assert cache.stats == {"hits": 2, "misses": 1}
  for k in range(3):
    a, b = Tensor.full((4,), 3.0), Tensor.full((4,), 3.0)
    outs = [a + Tensor(x), b + Tensor(x)] if k != 1 else [a + Tensor(x), a + Tensor(x)]  # two constants, one used twice, two again
    Tensor.realize(*outs)
    for o in outs: np.testing.assert_allclose(o.numpy(), x + 3)
  assert cache.stats == {"hits": 3, "misses": 3}

def test_contiguous_of_constants_shares_schedules_and_stays_apart():
  # contiguous() of constants alone is a node of its own too (tensor.py _own_contiguous), numbered like Tensor.full's constants
  from tinygrad.helpers import GlobalCounters
  x, ar = rand(8), np.arange(8, dtype=np.float32)
  for _ in range(3): np.testing.assert_allclose((Tensor.arange(8).float().contiguous() * Tensor(x)).numpy(), ar * x)
  assert cache.stats == {"hits": 2, "misses": 1}
  for k in range(4):
    p, q = Tensor.arange(8).float().contiguous(), (Tensor.arange(8).float() * 2).contiguous()
    np.testing.assert_allclose((p + q * Tensor(x) if k != 2 else p + p * Tensor(x)).numpy(), ar + (2 * ar if k != 2 else ar) * x, rtol=1e-6)
    # each result, a hit or not, leaves the copies it computed in buffers of their own: reading them runs nothing (q, unused at k=2: one)
    GlobalCounters.reset()
    np.testing.assert_array_equal(p.numpy(), ar)
    np.testing.assert_array_equal(q.numpy(), 2 * ar)
    assert GlobalCounters.kernel_count == (k == 2)
  assert cache.stats == {"hits": 4, "misses": 4}  # misses: the first loop, k=0, k=2 and its q

def test_constant_subgraphs_hit_and_key_their_shape():
  # x[ids] compares ids with an arange of the axis: a graph of constants that later walks skip (cache._STATIC). Each call's ids and
  # weights are read; another axis length is another arange, another key
  for n, seed in ((37, 0), (37, 1), (37, 2), (41, 3), (37, 4)):
    w, ids = rand(n, 5, seed=seed), np.random.default_rng(seed).integers(-n, n, 9).astype(np.int32)
    np.testing.assert_array_equal(Tensor(w)[Tensor(ids)].numpy(), w[ids])
  assert cache.stats == {"hits": 3, "misses": 2}

def test_intermediates_found_again_after_a_constant_graph_is_first_walked():
  # the miss walks into the new constant graph (an arange never seen before), the hits stop at it: the live handle on the realized
  # intermediate must be found at the same place either way
  for i in range(3):
    a = rand(6, 11, seed=i)
    x = Tensor(a)
    m = (x + Tensor.arange(11).float() * 0.37).max(1, keepdim=True)
    e, s = (x - m).exp(), (x - m).sum()
    Tensor.realize(e, s)
    GlobalCounters.reset()
    ref_m = (a + np.arange(11, dtype=np.float32) * np.float32(0.37)).max(1, keepdims=True)
    np.testing.assert_allclose(e.numpy(), np.exp(a - ref_m), rtol=1e-5)
    np.testing.assert_allclose(s.numpy(), (a - ref_m).sum(), rtol=1e-4)
    np.testing.assert_allclose(m.numpy(), ref_m, rtol=1e-6)
    assert GlobalCounters.kernel_count == 0  # m was realized on the way: its handle reads that buffer
  assert cache.stats["hits"] == 2

def test_realized_constant_graphs_replay():
  # a graph of constants alone realized with one that reads a buffer: its result is a static node, found by itself on a hit
  for i in range(3):
    a = rand(4, seed=i)
    c, y = Tensor.arange(4).float() * 3 + 1, Tensor(a) * 2
    Tensor.realize(c, y)
    np.testing.assert_array_equal(c.numpy(), np.arange(4) * 3 + 1)
    np.testing.assert_allclose(y.numpy(), a * 2)
  assert cache.stats["hits"] >= 2

def test_variable_under_constants_takes_each_value():
  # a bound Variable inside an otherwise constant graph keeps it from being static: each call reads its own value
  v = Variable("k", 1, 9)
  for k in (2, 5, 9, 5):
    a = rand(9, seed=k)
    y = (Tensor.arange(9).float().shrink(((0, v.bind(k)),)) + Tensor(a).shrink(((0, v.bind(k)),))) * 2
    np.testing.assert_allclose(y.numpy(), (np.arange(k) + a[:k]) * 2, rtol=1e-6)
  assert cache.stats["hits"] >= 2
