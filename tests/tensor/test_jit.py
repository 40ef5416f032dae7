"""TinyJit: call 1 runs, call 2 captures, later calls replay the captured kernels into the same buffers; numpy is the oracle."""
import numpy as np, pytest
from tinygrad import Tensor, TinyJit, dtypes, nn
from tinygrad.uop.ops import Variable
from tinygrad.helpers import Context, GlobalCounters
from tinygrad.engine import realize

pytestmark = pytest.mark.hcq_matrix  # also on the mock AMD and NV devices (tests/conftest.py)

def _sgd_step_numpy(w, x, y, lr):
  pred = x @ w
  grad = 2 * x.T @ (pred - y) / len(x)
  return ((pred - y) ** 2).mean(), w - lr * grad

def _model(device, lr=0.1):
  w = Tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), device=device).realize()
  def step(x, y):
    pred = x @ w
    loss = ((pred - y) ** 2).mean()
    w.assign(w - lr * (2 * x.T @ (pred - y) / x.shape[0]))  # the gradient of the loss, written by hand
    return loss
  return w, step

def test_replay_matches_numpy_with_assign_state(device):
  w, step = _model(device)
  jstep, ws, rng = TinyJit(step), w.numpy(), np.random.default_rng(0)
  for _ in range(5):
    x, y = rng.standard_normal((8, 4), dtype=np.float32), rng.standard_normal((8, 3), dtype=np.float32)
    loss = jstep(Tensor(x, device=device), Tensor(y, device=device))
    ref_loss, ws = _sgd_step_numpy(ws, x, y, 0.1)
    np.testing.assert_allclose(loss.numpy(), ref_loss, rtol=1e-5)
    np.testing.assert_allclose(w.numpy(), ws, rtol=1e-5, atol=1e-6)
  assert jstep.captured is not None

def test_replay_equals_unjitted_runs():
  (w1, step), (w2, jstep) = _model("CPU"), _model("CPU")
  jstep, rng = TinyJit(jstep), np.random.default_rng(1)
  for _ in range(4):
    x, y = rng.standard_normal((8, 4), dtype=np.float32), rng.standard_normal((8, 3), dtype=np.float32)
    np.testing.assert_equal(jstep(Tensor(x), Tensor(y)).numpy(), step(Tensor(x), Tensor(y)).numpy())
    np.testing.assert_equal(w2.numpy(), w1.numpy())

def test_replay_runs_no_python_and_no_scheduling(monkeypatch):
  calls, schedules = [], []
  inner = realize.create_schedule_cached
  monkeypatch.setattr(realize, "create_schedule_cached", lambda *a: schedules.append(1) or inner(*a))
  @TinyJit
  def f(a, b):
    calls.append(1)
    return (a * b).sum(0).contiguous() + a.max()
  def ref(a, b): return (a * b).sum(0) + a.max()
  x = [np.random.default_rng(i).standard_normal((5, 6), dtype=np.float32) for i in range(10)]
  for i in range(2): f(Tensor(x[i]), Tensor(x[i+1]))
  assert len(calls) == 2 and f.captured is not None
  kernels = len([it for it in f.captured.items if it[0] == "kernel"])
  for i in range(2, 8):
    a, b = Tensor(x[i]).realize(), Tensor(x[i+1]).realize()
    schedules.clear(); GlobalCounters.reset()
    out = f(a, b)
    assert (len(schedules), GlobalCounters.kernel_count) == (0, kernels)
    # against the float64 value: a 5-term float32 dot product is a few ulps of its terms off it, fused (one rounding per
    # multiply-add) or not
    np.testing.assert_allclose(out.numpy(), ref(x[i].astype(np.float64), x[i+1].astype(np.float64)), rtol=1e-6, atol=1e-5)
  assert len(calls) == 2

def test_outputs_view_the_captured_buffers():
  f = TinyJit(lambda a: (a + 1, a * 2))
  outs = [f(Tensor([float(i), 2.0])) for i in range(4)]
  assert isinstance(outs[3], tuple) and outs[2][0].uop.base is outs[3][0].uop.base  # a replay writes into the same output buffers
  np.testing.assert_equal([o.numpy() for o in outs[3]], [[4, 3], [6, 4]])

def test_returning_an_input_returns_the_new_input():
  f = TinyJit(lambda a, b: [a, a + b])
  for i in range(4): r = f(Tensor([float(i)]), Tensor([10.0]))
  assert isinstance(r, list)
  np.testing.assert_equal([t.numpy() for t in r], [[3], [13]])

def test_variable_shape_replays_one_capture():
  v = Variable("n", 1, 10)
  data = np.arange(40, dtype=np.float32).reshape(10, 4)
  f = TinyJit(lambda x: (x * 2).sum(1))
  captured = None
  for n in (3, 5, 7, 2, 10):
    out = f(Tensor(data).shrink(((0, v.bind(n)), None)).contiguous())
    if n == 7: captured = f.captured
    assert out.shape[0].unbind() == (v, n)
    np.testing.assert_equal(out.numpy(), (data[:n] * 2).sum(1))
  assert f.captured is captured is not None

def test_cnt_counts_every_call():
  """programs read jit.cnt (tinygrad's count of calls: 1 ran, 2 captured, more replayed)"""
  f = TinyJit(lambda x: (x + 1).realize())
  for n in range(1, 6):
    f(Tensor([float(n)]))
    assert f.cnt == n
  f.reset()
  assert f.cnt == 0

def test_bound_variable_as_a_tensor_value():
  """Tensor(bound Variable) and Tensor.full(shape, bound Variable) hold its value; a replay takes the value of the new binding"""
  v = Variable("p", 1, 9)
  assert Tensor(v.bind(5)).item() == 5 and Tensor(v.bind(5) + 2).item() == 7 and Tensor(v.bind(4), dtype=dtypes.float).item() == 4.0
  assert Tensor.full((2, 3), v.bind(6)).tolist() == [[6, 6, 6]] * 2
  f = TinyJit(lambda x, p: (x * Tensor(p) + Tensor.full((2,), p, dtype=dtypes.float)).realize())
  for k in (1, 2, 3, 8):
    np.testing.assert_equal(f(Tensor([1.0, -2.0]), v.bind(k)).numpy(), [2.0 * k, -1.0 * k])

@pytest.mark.parametrize("first, second, match", [
  (lambda: Tensor.ones(3, 4), lambda: Tensor.ones(4, 3), r"argument 0: shape \(4, 3\) now, \(3, 4\) when captured"),
  (lambda: Tensor.ones(3, 4), lambda: Tensor.ones(3, 4, dtype=dtypes.int32), "argument 0: dtype dtypes.int now, dtypes.float when captured"),
  (lambda: Tensor.ones(3, 4), lambda: Tensor.ones(3, 4, device="PYTHON"), "argument 0: device PYTHON now, CPU when captured"),
])
def test_changed_input_raises_naming_it(first, second, match):
  f = TinyJit(lambda x: x * 2)
  for _ in range(3): f(first())
  with pytest.raises((ValueError, TypeError), match=match): f(second())

def test_moved_or_duplicated_tensor_arguments_raise():
  f = TinyJit(lambda x, y=None: x + (0 if y is None else y))
  for _ in range(3): f(Tensor([1.0, 2.0]), y=Tensor([3.0, 4.0]))
  with pytest.raises(TypeError, match="captured with tensors as argument 0, keyword argument 'y', now called with them as argument 0, argument 1"):
    f(Tensor([1.0, 2.0]), Tensor([3.0, 4.0]))
  t = Tensor.ones(2).contiguous().realize()
  with pytest.raises(ValueError, match="argument 0 and keyword argument 'y' are the same buffer"): f(t, y=t)

def test_empty_tensor_argument():
  """an empty tensor realizes to a constant, not a buffer: the capture raised "CONST is not a buffer" (an ONNX Resize's empty roi input).
  It has nothing to pass; the others replay with each call's values, and a call with it non-empty is a changed input"""
  f = TinyJit(lambda a, b: (a + 1).cat(b).contiguous())
  for i in range(4):
    np.testing.assert_array_equal(f(Tensor(np.full(3, i, np.float32)), Tensor(np.zeros(0, np.float32))).numpy(), np.full(3, i + 1))
  with pytest.raises(ValueError): f(Tensor(np.ones(3, np.float32)), Tensor(np.zeros(2, np.float32)))

@pytest.mark.parametrize("make", [lambda: Tensor.zeros(0, 3), lambda: Tensor.rand(0, 3), lambda: Tensor.zeros(0, 3).contiguous()],
                         ids=["zeros", "rand", "contiguous"])
def test_empty_tensor_argument_made_by_a_graph(make):
  """an empty tensor made by zeros/rand stays its (empty) graph after realize: the capture raised "CONTIGUOUS is not a buffer", and
  the replay saw another view of it"""
  f = TinyJit(lambda x, y: (x.sum(0) + y).realize())
  for i in range(4): np.testing.assert_array_equal(f(make(), Tensor([1.0, 2.0, float(i)])).numpy(), [1.0, 2.0, i])

@pytest.mark.parametrize("step, ref", [(lambda h: h.flip(0) + 1, lambda h: h[::-1] + 1),
                                       (lambda h: h[::-1].cumsum(0), lambda h: h[::-1].cumsum(0)),
                                       (lambda h: h.reshape(4, 6).T.reshape(24) * 0.5 + 1, lambda h: h.reshape(4, 6).T.reshape(24) * 0.5 + 1)],
                         ids=["flip", "scan", "transpose"])
def test_output_passed_back_in(step, ref):
  """h = step(h): from the first replay on, the input's buffer is the captured output the replay writes while it reads the input"""
  f = TinyJit(lambda h: step(h).realize())
  h, want = Tensor(np.arange(24, dtype=np.float32) / 24).realize(), np.arange(24, dtype=np.float32) / 24
  for _ in range(5):
    h, want = f(h), ref(want)
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-6)

def test_two_outputs_passed_back_in_swapped():
  f = TinyJit(lambda a, b: ((a + b).realize(), (a - b).realize()))
  a, b, na, nb = Tensor([1.0, 2.0]).realize(), Tensor([3.0, 5.0]).realize(), np.array([1.0, 2.0]), np.array([3.0, 5.0])
  for _ in range(5):
    (a, b), (na, nb) = f(b, a), (nb + na, nb - na)
    np.testing.assert_allclose(a.numpy(), na)
    np.testing.assert_allclose(b.numpy(), nb)

def test_nested_return():
  """tuples, lists and dicts of tensors, nested, with None in places (tinygrad's rule): rebuilt around each replay's outputs"""
  f = TinyJit(lambda x: ((x * 2).realize(), [(x + 1).realize(), {"aux": (x - 1).realize(), "off": None}], None))
  for i in range(4):
    two, (plus, d), none = f(Tensor([float(i), 1.0]))
    assert none is None and d["off"] is None and list(d) == ["aux", "off"]
    assert two.tolist() == [2.0 * i, 2.0] and plus.tolist() == [i + 1.0, 2.0] and d["aux"].tolist() == [i - 1.0, 0.0]
  with pytest.raises(TypeError, match="not a list holding a str: a replay"): TinyJit(lambda x: (x, [x, "s"]))(Tensor([1.0]))

def test_non_tensor_return_raises():
  f = TinyJit(lambda x: x.sum().item())
  with pytest.raises(TypeError, match="not float"): f(Tensor.ones(2))

def test_jit_0_disables_capture():
  calls = []
  def f(x):
    calls.append(1)
    return x + 1
  jf = TinyJit(f)
  with Context(JIT=0):
    for i in range(4): np.testing.assert_equal(jf(Tensor([float(i)])).numpy(), [i + 1])
  assert len(calls) == 4 and jf.captured is None

def test_memory_planner_shares_step_local_buffers():
  # a chain of realized intermediates of one size: each dies after the next is computed, so two memories serve them all
  def chain(x):
    for i in range(6): x = (x * 2 + i).contiguous()
    return x.sum()
  f = TinyJit(chain)
  data = [np.random.default_rng(i).standard_normal(64, dtype=np.float32) for i in range(5)]
  for d in data[:2]: f(Tensor(d))
  intermediates = len([it for it in f.captured.items if it[0] == "kernel"]) - 1
  assert intermediates == 6 and len(f.captured.buffers()) == 3  # two shared intermediates and the output
  mem = GlobalCounters.mem_used
  for d in data[2:]:
    ref = d.astype(np.float64)
    for i in range(6): ref = ref * 2 + i
    np.testing.assert_allclose(f(Tensor(d)).numpy(), ref.sum(), rtol=1e-5)
  assert GlobalCounters.mem_used <= mem + 64 * 4 * 3  # a replay allocates nothing but its inputs

def test_buffers_alive_after_the_call_are_not_shared():
  kept = []
  def f(x):
    a = (x + 1).contiguous().realize()
    kept.append(a)  # lives on after the call: its memory must not be reused within the step
    return (a * 3).contiguous() + 1
  jf = TinyJit(f)
  for i in range(4):
    out = jf(Tensor([float(i)] * 8))
    np.testing.assert_equal(out.numpy(), [(i + 1) * 3 + 1] * 8)
  np.testing.assert_equal(kept[1].numpy(), [4] * 8)  # the captured buffer, written again by every replay

def test_random_numbers_advance_on_replay():
  # the key lives in a per-device buffer that a kernel advances: replays draw the same sequence as plain calls, not one repeated draw
  Tensor.manual_seed(3)
  @TinyJit
  def f(x:Tensor) -> Tensor: return (x + Tensor.rand(4)).realize()
  got = [f(Tensor([0., 0., 0., 0.])).numpy().copy() for _ in range(5)]
  Tensor.manual_seed(3)
  want = [Tensor.rand(4).numpy() for _ in range(5)]
  np.testing.assert_equal(np.stack(got), np.stack(want))
  assert len({tuple(g) for g in got}) == 5

def test_memory_shared_across_dtypes_replays():
  # an int32 intermediate may reuse a dead float32 intermediate's memory through a view: the view must be allocated before replay
  @TinyJit
  def f(x:Tensor) -> Tensor:
    a = (x + 1).contiguous()
    b = (a * 2).contiguous()
    c = b.cast(dtypes.int32).contiguous()
    return (c.float() * 3).realize()
  for k in range(5):
    np.testing.assert_equal(f(Tensor.full((8,), float(k)).contiguous().realize()).numpy(), np.full(8, (k + 1) * 2 * 3.0))

def test_decorator_with_options():
  # tinygrad 0.14 spells options as @TinyJit(prune=True); the replays match numpy whichever way it is written
  from tinygrad import TinyJit
  w = np.arange(3, dtype=np.float32)
  for jit in (TinyJit(prune=True)(lambda x: (x * Tensor(w)).realize()), TinyJit(lambda x: (x * Tensor(w)).realize(), prune=False)):
    for i in range(4): np.testing.assert_allclose(jit(Tensor([float(i)] * 3).realize()).numpy(), i * w)

def test_another_view_of_an_input_raises():
  """the kernels were made for the captured view of an argument's buffer and a replay only swaps the buffer: a transposed input, a
  slice at another offset, or the same slice of a smaller buffer (read out of bounds) gave silently wrong values"""
  base = Tensor(np.arange(40, dtype=np.float32).reshape(4, 10)).realize()
  f = TinyJit(lambda x: (x * 2).realize())
  for i in range(3): np.testing.assert_equal(f(Tensor(np.full((3, 3), i, np.float32)).realize()).numpy(), np.full((3, 3), 2 * i))
  with pytest.raises(ValueError, match="argument 0: another view of its buffer"): f(Tensor(np.ones((3, 3), np.float32)).realize().T)
  g = TinyJit(lambda x: (x * 2).realize())
  for i in range(2): np.testing.assert_equal(g(base[i:i+1, 1:4]).numpy(), np.arange(40).reshape(4, 10)[i:i+1, 1:4] * 2)
  with pytest.raises(ValueError, match="another view"): g(base[2:3, 1:4])
  h = TinyJit(lambda x: (x * 1).realize())
  big = Tensor.arange(1000).float().realize()
  for _ in range(2): h(big[500:504])
  with pytest.raises(ValueError, match="another view"): h(Tensor([1.0, 2.0, 3.0, 4.0]).realize())

def test_symbolic_slice_of_one_buffer_replays():
  """a[:, :v] of the same buffer is the same view for every binding of v: it replays; of a buffer with longer rows it is another view"""
  v = Variable("i", 1, 10)
  a, b = np.arange(30, dtype=np.float32).reshape(3, 10), np.arange(60, dtype=np.float32).reshape(3, 20)
  ta, tb = Tensor(a).realize(), Tensor(b).realize()
  f = TinyJit(lambda x: (x * 1).sum(1).realize())
  for n in (2, 3, 7, 4): np.testing.assert_equal(f(ta[:, :v.bind(n)]).numpy(), a[:, :n].sum(1))
  with pytest.raises(ValueError, match="another view"): f(tb[:, :v.bind(4)])

def test_tensors_inside_list_tuple_dict_arguments_are_inputs():
  """tinygrad takes the tensors one level inside a list, tuple or dict argument as inputs: every replay returned the capture's value"""
  f = TinyJit(lambda xs, d: (xs[0] + xs[1] * d["k"]).realize())
  for i in range(5):
    out = f([Tensor([float(i)]), Tensor([1.0])], {"k": Tensor([float(10 * i)])})
    assert out.item() == i + 10 * i
  with pytest.raises(ValueError, match=r"argument 0\[0\]: shape \(2,\) now"): f([Tensor([1.0, 2.0]), Tensor([1.0])], {"k": Tensor([1.0])})

def test_variable_bound_outside_the_arguments_raises():
  """a Variable bound in a closure is baked in at capture: a replay (no python) cannot see its new binding, so it raises (it silently
  used the capture's value)"""
  bound = {}
  f = TinyJit(lambda a: (a + Tensor.arange(bound["v"]).sum()).realize())
  for n in (2, 3):
    bound["v"] = Variable("k", 1, 10).bind(n)
    assert f(Tensor([0])).item() == n * (n - 1) // 2
  bound["v"] = Variable("k", 1, 10).bind(5)
  with pytest.raises(ValueError, match="Variable 'k' is bound when captured but not by this call's arguments"): f(Tensor([0]))

def test_jit_inside_a_capture_runs_as_python():
  """a TinyJit called while another captures runs its function, so the outer capture holds its kernels (the inner capture emptied the
  outer one's log: every replay returned the capture's value)"""
  inner = TinyJit(lambda x: (x + 1).realize())
  outer = TinyJit(lambda x: (inner(x) * 2).realize())
  assert [outer(Tensor([float(i)])).item() for i in range(5)] == [2.0, 4.0, 6.0, 8.0, 10.0]
  warm = TinyJit(lambda x: (x * 3).realize())
  for i in range(3): warm(Tensor([float(i)]))  # captured before the outer one runs
  outer2 = TinyJit(lambda x: (warm(x) + 1).realize())
  assert [outer2(Tensor([float(i)])).item() for i in range(5)] == [1.0, 4.0, 7.0, 10.0, 13.0]

def test_dict_return():
  f = TinyJit(lambda x: {"double": (x * 2).realize(), "total": x.sum().realize()})
  for i in range(4):
    out = f(Tensor([float(i), 1.0]))
    assert list(out) == ["double", "total"] and out["double"].tolist() == [2.0 * i, 2.0] and out["total"].item() == i + 1
  with pytest.raises(TypeError, match="not a tuple holding a int: a replay"): TinyJit(lambda x: (x, 1))(Tensor([1.0]))

def test_replay_keeps_values_computed_before_its_writes(device):
  """a replay runs no python, yet values built before it from the buffers it writes keep their old contents, as around an eager write:
  the step's state (assigned inside), an input it writes, and the output buffer the next replay overwrites"""
  a = Tensor.zeros(4, device=device).contiguous().realize()
  @TinyJit
  def add_into_state(x):
    a.assign(a + x)
    return (a * 1).realize()
  @TinyJit
  def add_into_input(x):
    x += 1
    return x.sum().realize()
  @TinyJit
  def double(x): return (x * 2).realize()
  state, before = np.zeros(4, np.float32), None
  for i in range(1, 6):
    b = a * 2  # lazy: a's value before this call
    c = (x := Tensor.full((3,), float(i), device=device).contiguous().realize()) * 10
    out, s = add_into_state(Tensor.full((4,), float(i), device=device).contiguous().realize()), add_into_input(x)
    np.testing.assert_equal(b.numpy(), state * 2)
    state += i
    np.testing.assert_equal(out.numpy(), state)
    np.testing.assert_equal(c.numpy(), np.full(3, 10.0 * i))
    np.testing.assert_equal((s.item(), x.numpy().tolist()), (3.0 * (i + 1), [i + 1.0] * 3))
    if before is not None: np.testing.assert_equal(before.numpy(), [2.0 * i - 1] * 2)  # the previous call's output plus one
    before = double(Tensor.full((2,), float(i), device=device).contiguous().realize()) + 1

def test_state_made_by_tensor_full_before_the_capture_is_read_as_memory():
  """a LayerNorm's weight is Tensor.ones, a constant the capture folded into its kernels: an optimizer made it memory after the capture
  and trained it, and the replays kept returning the output for weight 1, bias 0"""
  ln, x = nn.LayerNorm(3), Tensor([[1.0, 2.0, 4.0]])
  f = TinyJit(lambda x: ln(x).realize())
  for _ in range(3): f(x)
  opt = nn.optim.SGD(nn.state.get_parameters(ln), lr=1.0)
  with Context(TRAINING=1):
    opt.zero_grad()
    (ln(x) * Tensor([[1.0, 2.0, 3.0]])).sum().backward()
    opt.step()
  scale = Tensor.ones(3)
  g = TinyJit(lambda x: (x * scale).realize())
  for _ in range(3): g(x)
  scale.assign(Tensor([2.0, 3.0, 4.0]))
  xn = np.array([[1.0, 2.0, 4.0]])
  normed = (xn - xn.mean()) / np.sqrt(xn.var() + 1e-5)
  np.testing.assert_allclose(f(x).numpy(), normed * ln.weight.numpy() + ln.bias.numpy(), rtol=1e-5)
  assert not np.allclose(ln.weight.numpy(), 1.0)
  np.testing.assert_equal(g(x).numpy(), [[2.0, 6.0, 16.0]])

def test_a_constant_made_in_the_call_is_made_again_by_each_replay():
  @TinyJit
  def f(x):
    acc = Tensor.zeros(3)
    acc += x
    return (acc * 2).realize()
  for i in range(5): np.testing.assert_equal(f(Tensor([1.0, 2.0, 3.0]) * i).numpy(), np.array([2.0, 4.0, 6.0]) * i)

@pytest.mark.parametrize("read", ["item", "numpy", "tolist"])
def test_reading_data_in_the_capture_raises(read):
  """a + (a*2).sum().item(): the capture would keep call 2's sum, and every replay returned a + that number, silently (tinygrad: JitError)"""
  from tinygrad.engine.jit import JitError
  f = TinyJit(lambda a: a + float(np.sum(getattr((a * 2).sum(), read)())))
  assert f(Tensor([1.0])).item() == 3.0  # call 1 runs the function: nothing is captured yet
  with pytest.raises(JitError, match="cannot read tensor data"): f(Tensor([2.0]))

def test_weights_first_realized_inside_a_call_take_later_writes():
  """a layer's lazy weights are realized inside the first call (as part of its output's schedule): the weight then held that buffer as
  an "equal value" of another handle's, so load_state_dict wrote into a copy and the replays kept reading the old weights"""
  l = nn.Linear(3, 2)
  f = TinyJit(lambda t: l(t).realize())
  x = np.ones((1, 3), np.float32)
  for _ in range(3): f(Tensor(x))
  nn.state.load_state_dict(l, {"weight": Tensor.zeros(2, 3), "bias": Tensor([1.0, 2.0])}, verbose=False)
  assert f(Tensor(x)).tolist() == [[1.0, 2.0]] and l(Tensor(x)).tolist() == [[1.0, 2.0]]
  # equal graphs realized inside another stay apart: a write into one leaves the other
  base = Tensor([1.0, 2.0]).realize()
  a, b = base * 2, base * 2
  (a + 1).realize()
  a.assign(a + 10).realize()
  assert a.tolist() == [12.0, 14.0] and b.tolist() == [2.0, 4.0]
