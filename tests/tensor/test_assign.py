"""In-place assign: a kernel stores into the target's buffer, so every view of it (taken before or after) reads the new values."""
import numpy as np, pytest
from tinygrad import Tensor, dtypes
from tinygrad.helpers import GlobalCounters

pytestmark = pytest.mark.hcq_matrix  # also on the mock AMD and NV devices (tests/conftest.py)

def test_assign_writes_into_the_buffer(device):
  a = Tensor(np.arange(6, dtype=np.float32), device=device).reshape(2, 3).realize()
  buf = a.uop.base
  row, col = a[1], a[:, 2]   # views taken before
  a.assign(Tensor(np.full((2, 3), 5, np.float32), device=device) * 2)
  assert a.uop.base is buf  # same buffer, not a new one
  np.testing.assert_equal(a.numpy(), np.full((2, 3), 10))
  np.testing.assert_equal(row.numpy(), [10, 10, 10])
  np.testing.assert_equal(col.numpy(), [10, 10])

def test_assign_is_one_kernel():
  a = Tensor.zeros(4, 4).contiguous().realize()
  GlobalCounters.reset()
  a.assign(a + 1)
  assert GlobalCounters.kernel_count == 1
  np.testing.assert_equal(a.numpy(), np.ones((4, 4)))

def test_assign_through_a_view(device):
  a = Tensor(np.zeros((3, 4), np.float32), device=device).realize()
  a[1].assign(Tensor([1., 2., 3., 4.], device=device))
  a.T[0].assign(Tensor([7., 8., 9.], device=device))        # a permuted view: column 0
  a[2, 1:3].assign(Tensor([5., 6.], device=device))
  want = np.zeros((3, 4), np.float32)
  want[1] = [1, 2, 3, 4]; want[:, 0] = [7, 8, 9]; want[2, 1:3] = [5, 6]
  np.testing.assert_equal(a.numpy(), want)

@pytest.mark.parametrize("make", [lambda a: a.flip(1) * 2, lambda a: a.T.reshape(2, 3) + 0, lambda a: a - a.sum(1, keepdim=True),
                                  lambda a: a[:, ::-1].contiguous() + a])
def test_value_reading_other_elements_of_the_target(make):
  # the value reads elements the write would overwrite first: it is computed into its own buffer first
  src = np.arange(6, dtype=np.float32).reshape(2, 3)
  a = Tensor(src).realize()
  want = make(Tensor(src)).numpy()
  a.assign(make(a))
  np.testing.assert_equal(a.numpy(), want)

def test_assign_to_a_lazy_tensor_and_python_values():
  a = Tensor.ones(3) * 2
  a.assign([4., 5., 6.])
  np.testing.assert_equal(a.numpy(), [4, 5, 6])
  b = Tensor.zeros(2, dtype=dtypes.int32).contiguous()
  b.assign(Tensor([3, 4], dtype=dtypes.int32))
  assert b.tolist() == [3, 4]

def test_assign_errors_name_both_sides():
  a = Tensor.zeros(2, 3).contiguous().realize()
  with pytest.raises(ValueError, match=r"same shape: target is \(2, 3\).*value is \(3, 2\)"): a.assign(Tensor.ones(3, 2))
  with pytest.raises(ValueError, match="same dtype: target is .*float.*value is .*int"): a.assign(Tensor.ones(2, 3, dtype=dtypes.int32))
  with pytest.raises(ValueError, match="same device: target is .* on CPU, value is .* on PYTHON"): a.assign(Tensor.ones(2, 3, device="PYTHON"))
  with pytest.raises(ValueError, match="expanded view"): a[:1].expand(4, 3).assign(Tensor.ones(4, 3))
  np.testing.assert_equal(a.numpy(), np.zeros((2, 3)))  # nothing was written

def _deferred_write(target:Tensor, value:Tensor) -> Tensor:
  # the tensor-level form assign realizes at once: AFTER(target, STORE(target, value)), left lazy here to share one schedule
  return Tensor(target.uop.after(target.uop.store(value.uop)))

def test_writes_in_one_schedule_run_after_the_reads_of_old_values():
  a, b = Tensor([1., 2., 3.]).realize(), Tensor([10., 20., 30.]).realize()
  Tensor.realize(_deferred_write(a, a - b.sum()), _deferred_write(b, b - a.sum()))
  np.testing.assert_equal(a.numpy(), [-59., -58., -57.])
  np.testing.assert_equal(b.numpy(), [4., 14., 24.])  # b's write read the old a, although a's write is in the same schedule

def test_reading_a_write_through_a_reshaped_view_in_the_same_schedule():
  a = Tensor([1., 2., 3., 4.]).realize()
  w = _deferred_write(a.reshape(2, 2), Tensor([[5., 6.], [7., 8.]]))
  np.testing.assert_equal((w.T + 1).numpy(), [[6., 8.], [7., 9.]])
  np.testing.assert_equal(a.numpy(), [5., 6., 7., 8.])

def test_equal_lazy_tensors_do_not_share_a_written_buffer():
  # two Tensor.zeros(4) are one node (hash-consing): writing into one must not show in the other, as in torch
  a, b = Tensor.zeros(4), Tensor.zeros(4)
  a[1] = 5
  np.testing.assert_equal(a.numpy(), [0, 5, 0, 0])
  np.testing.assert_equal(b.numpy(), [0, 0, 0, 0])
  c, d = Tensor.zeros(3).contiguous(), Tensor.zeros(3).contiguous()
  c.assign(Tensor([1., 2., 3.]))
  np.testing.assert_equal(d.numpy(), [0, 0, 0])
  e, f = Tensor.ones(2), Tensor.ones(2)
  e.realize()
  e.assign(Tensor([3., 4.]))
  np.testing.assert_equal(f.numpy(), [1, 1])

def test_two_equal_layers_load_their_own_weights():
  from tinygrad import nn
  from tinygrad.nn.state import load_state_dict
  class Two:
    def __init__(self): self.a, self.b = nn.LayerNorm(3), nn.LayerNorm(3)
  m = Two()
  load_state_dict(m, {"a.weight": Tensor([1., 2., 3.]), "a.bias": Tensor([0., 0., 0.]),
                      "b.weight": Tensor([7., 8., 9.]), "b.bias": Tensor([1., 1., 1.])}, verbose=False)
  np.testing.assert_equal(m.a.weight.numpy(), [1, 2, 3])
  np.testing.assert_equal(m.b.weight.numpy(), [7, 8, 9])

def test_setitem_on_an_axis_of_size_one():
  """an index tensor, a list or a mask on an axis of size 1 (a batch of one) is a computed pick, not a view: the write went to a buffer of
  its own and the tensor was unchanged"""
  for index, value, want in [((Tensor([0]),), 1.0, [[1.0, 1.0, 1.0]]), (([0], 1), 9.0, [[5.0, 9.0, 8.0]]),
                             ((Tensor([True]),), 7.0, [[7.0, 7.0, 7.0]])]:
    t = Tensor([[5.0, 6.0, 8.0]]).contiguous().realize()
    t[index] = value
    assert t.tolist() == want, index
  s = Tensor([5.0]).contiguous().realize()
  s[Tensor(0)] = 7.0
  assert s.tolist() == [7.0]

def test_setitem_from_itself_through_a_moved_view():
  """a[::-1] = a writes each element from another one (numpy copies the value first): in place it read elements already overwritten"""
  for value, want in [(lambda a: a, [5, 4, 3, 2, 1, 0]), (lambda a: a + 1, [6, 5, 4, 3, 2, 1]), (lambda a: a[::-1] * 2, [0, 2, 4, 6, 8, 10])]:
    a = Tensor.arange(6).contiguous().realize()
    a[::-1] = value(a)
    assert a.tolist() == want
  a = Tensor.arange(6).contiguous().realize()
  a.flip(0).assign(a)
  assert a.tolist() == [5, 4, 3, 2, 1, 0]

def test_setitem_with_an_index_out_of_range_writes_nowhere():
  """an index tensor's value out of range (its pick reads 0) wrote element [0, 0]; it writes nothing (tinygrad's answer; the index is a
  value on the device, so nothing can raise without reading it back)"""
  t = Tensor.zeros(3, 4).contiguous().realize()
  t[Tensor([5])] = Tensor([1.0, 2.0, 3.0, 4.0])
  t[Tensor([1, 7]), Tensor([2, 2])] = Tensor([10.0, 20.0])
  np.testing.assert_array_equal(t.numpy(), [[0, 0, 0, 0], [0, 0, 10, 0], [0, 0, 0, 0]])
  with pytest.raises(IndexError, match="0-d boolean index"): Tensor([1.0, 2.0])[Tensor(True)]

def test_write_through_a_stepped_view():
  """a stepped view (a[:, ::2] pads, reshapes and shrinks) held in a variable writes through to its buffer, as a slice does (it raised
  "expanded or padded view"); numpy is the oracle"""
  for shape, index, value in [((2, 4), (slice(None), slice(None, None, 2)), -1), ((3, 4), (slice(None), slice(1, None, 2)), [[7], [8], [9]]),
                              ((10,), (slice(1, None, 3),), [-1, -2, -3]), ((2, 3, 4), (slice(None), slice(None, None, 2), slice(1, None, 2)), 0)]:
    n = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    a = Tensor(n).contiguous().realize()
    b = a[index]
    b[:] = Tensor(np.broadcast_to(np.array(value, np.float32), b.shape).copy())
    n[index] = value
    np.testing.assert_array_equal(a.numpy(), n)
  a = Tensor.arange(10).contiguous().realize()
  a[::-3][1] = 100
  assert a.tolist() == [0, 1, 2, 3, 4, 5, 100, 7, 8, 9]
  with pytest.raises(ValueError, match="expanded view"): a.reshape(2, 5)[:1].expand(2, 5).assign(Tensor.zeros(2, 5, dtype=a.dtype))

@pytest.mark.parametrize("write", [lambda a: a.assign(Tensor([0., 0., 0.])), lambda a: a.__iadd__(1),
                                   lambda a: a.__setitem__(0, 10.), lambda a: a.__setitem__(Tensor([2, 0]), Tensor([7., 8.])),
                                   lambda a: a[::-1].assign(Tensor([4., 5., 6.]))])
def test_a_value_computed_from_the_old_contents_keeps_them(write):
  # eager semantics (torch's): b = a * 2 was computed before the write, lazily or not; a view of a sees the write
  a = Tensor([1., 2., 3.]).realize()
  b, view, row = a * 2, a[1:], (a + 1).reshape(1, 3)[0, :2]  # row: a view of a lazy value, not of a's buffer
  write(a)
  new = a.numpy()
  np.testing.assert_equal(b.numpy(), [2., 4., 6.])
  np.testing.assert_equal(row.numpy(), [2., 3.])
  np.testing.assert_equal(view.numpy(), new[1:])

def test_the_written_value_held_by_the_caller_keeps_its_value():
  a = Tensor([1., 2., 3.]).realize()
  c = a + 1
  a.assign(c)
  a.assign(Tensor([0., 0., 0.]))  # c read a's old contents and wrote them into a: neither write shows in c
  np.testing.assert_equal(c.numpy(), [2., 3., 4.])
  np.testing.assert_equal(a.numpy(), [0., 0., 0.])

def test_the_written_value_on_a_gradient_path_keeps_its_value_and_gradient():
  a, w = Tensor([1., 2., 3.]).realize(), Tensor([4., 5., 6.], requires_grad=True)
  c = a + w * w
  a.assign(c)
  c.sum().backward()
  np.testing.assert_equal(c.numpy(), [17., 27., 39.])
  np.testing.assert_equal(w.grad.numpy(), [8., 10., 12.])  # the path from c back to w survives the write
  np.testing.assert_equal(a.numpy(), [17., 27., 39.])

def test_in_place_updates_stay_one_kernel():
  a, w = Tensor.zeros(4).contiguous().realize(), Tensor.ones(4, requires_grad=True).contiguous().realize()
  w.grad = Tensor.full((4,), 2.).contiguous().realize()
  GlobalCounters.reset()
  a += 1
  w -= 0.5 * w.grad
  assert GlobalCounters.kernel_count == 2
  np.testing.assert_equal(w.numpy(), [0., 0., 0., 0.])

@pytest.mark.parametrize("scheduled", [False, True])
def test_values_computed_from_parameters_before_a_step_keep_them(scheduled):
  from tinygrad import nn
  from tinygrad.nn.optim import SGD
  layer = nn.Linear(3, 2)
  x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
  opt = SGD(nn.state.get_parameters(layer), lr=0.5)
  w_before = layer.weight.numpy()
  side = layer.weight * 2  # not in the loss: the step's realize does not need it
  with Tensor.train():
    layer(x).sum().backward()
    if scheduled: Tensor.realize(*opt.schedule_step())
    else: opt.step()
  after = layer.weight * 2
  np.testing.assert_allclose(side.numpy(), w_before * 2)
  np.testing.assert_allclose(after.numpy(), (w_before - 0.5 * x.numpy().sum(0)) * 2, rtol=1e-6)

def test_assign_into_a_lazy_tensor_does_not_compute_its_old_value():
  t = Tensor.arange(6).float().reshape(2, 3).exp()  # lazy: a layer's initial weights before load_state_dict
  src = Tensor(np.ones((2, 3), np.float32)).realize()
  GlobalCounters.reset()
  t.assign(src * 2)
  assert GlobalCounters.kernel_count == 1  # the write alone: the exp is never computed
  np.testing.assert_equal(t.numpy(), np.full((2, 3), 2))

def test_assign_broadcasts_the_value():
  """tinygrad's rule: the value broadcasts to the target's shape (a cache reset with assign(0), a (1, T, D) row into (B, T, D)); a value
  that reads the target and that the caller keeps still holds what it computed before the write"""
  cache = Tensor.ones(2, 4, 3).contiguous().realize()
  cache.assign(0.0)
  cache[:, 1:3].assign(Tensor.full((1, 2, 3), 5.0))
  cache[:, 3:4].assign(Tensor(7.0))
  np.testing.assert_equal(cache.numpy()[:, :, 0], [[0, 5, 5, 7], [0, 5, 5, 7]])
  a = Tensor.arange(6).float().reshape(2, 3).contiguous().realize()
  row = a[1:2] * 10
  a.assign(row)
  np.testing.assert_equal(a.numpy(), [[30, 40, 50]] * 2)
  np.testing.assert_equal(row.numpy(), [[30, 40, 50]])
  a.assign(a[0])  # reads the target itself
  np.testing.assert_equal(a.numpy(), [[30, 40, 50]] * 2)
  with pytest.raises(ValueError, match=r"same shape: .*value is \(3, 1\).*broadcasts to the target's"): a.assign(Tensor.ones(3, 1))

def test_write_through_a_view_of_a_lazy_value_reaches_it():
  """torch's views: a write through a view of a value not yet computed (out.T[0] *= 10, v = out[1]; v += 1, out.T[0] = ...) shows in
  the value and its other views (the view got a buffer of its own, and the value was left as it was); values built before keep theirs"""
  base = Tensor.arange(6).float().reshape(2, 3).contiguous().realize()
  out = base * 2
  other_view, before = out[:, 0], out + 0
  out.T[0] *= 10
  np.testing.assert_equal(out.numpy(), [[0, 2, 4], [60, 8, 10]])
  np.testing.assert_equal(other_view.numpy(), [0, 60])
  np.testing.assert_equal(before.numpy(), [[0, 2, 4], [6, 8, 10]])
  out2 = base * 3
  v = out2[1]
  v += 1
  out2.T[2] = -1.0
  np.testing.assert_equal(out2.numpy(), [[0, 3, -1], [10, 13, -1]])
  np.testing.assert_equal(v.numpy(), [10, 13, -1])

def test_value_built_before_its_source_had_a_buffer_keeps_the_old_contents():
  """b was filed by the buffer clock before a had a buffer; once b's graph caught up to a's buffer (when d was built on it) a write into
  a looked only at handles filed after that buffer, and b read the new contents"""
  a = Tensor([2.0, 1.75, 1.0]).contiguous()
  b = a * 3
  a.realize()
  d = b * 2
  a[0] = -1.0
  np.testing.assert_equal(b.numpy(), [6.0, 5.25, 3.0])
  np.testing.assert_equal(d.numpy(), [12.0, 10.5, 6.0])

@pytest.mark.parametrize("write", ["add", "mul", "assign"])
def test_view_of_a_lazy_value_sees_a_write_into_the_value(write):
  """torch's views: x.T taken of a lazy x sees x += 1, x *= 2, x.assign(...) (x took a new graph, the view kept the old one)"""
  a = Tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).realize()
  x = a * 1
  v, before = x.T, x + 0
  if write == "add": x += 1
  elif write == "mul": x *= 2
  else: x.assign(Tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]))
  np.testing.assert_equal(v.numpy(), x.numpy().T)
  np.testing.assert_equal(before.numpy(), [[1, 2, 3], [4, 5, 6]])

def test_assign_of_a_lazy_value_to_itself_keeps_it():
  """x.assign(x) gave x a new empty buffer first, then read x, that buffer, as the value: zeros or another buffer's stale data"""
  x = Tensor([1.0, 2.0, 3.0, 4.0]).realize() * 2
  x.assign(x)
  np.testing.assert_equal(x.numpy(), [2, 4, 6, 8])

def test_setitem_into_a_view_of_a_lazy_value_on_a_gradient_path_is_refused():
  """the view took the write as its own graph and the value never saw it (the value and w's gradient silently as before the write)"""
  w = Tensor([1.0, -2.0, 3.0], requires_grad=True)
  out = w.reshape(3, 1) * Tensor([[1.0, 2.0]])
  with pytest.raises(NotImplementedError, match="setitem into a view of a .* value a gradient flows through"): out.T[0] *= 10
  out[0] = 5.0  # into the value itself: its graph takes the write, and the gradient flows on
  out.sum().backward()
  np.testing.assert_equal(w.grad.numpy(), [0.0, 3.0, 3.0])

@pytest.mark.parametrize("writer", ["realized", "caught_up", "together", "together_constants"])
@pytest.mark.parametrize("write", ["add", "setitem", "assign"])
def test_equal_graphs_built_twice_are_two_tensors(writer, write):
  """x * 2 built twice is one node (hash-consing): realizing one handle gave the other its buffer when it caught up, and a write through
  either showed in both (torch: two tensors). Realized together (Tensor.realize(a, b)) they got one buffer directly"""
  x = Tensor.full((2,), 1.0) if writer == "together_constants" else Tensor([1.0, 2.0]).realize()
  a, b = x * 2, x * 2
  if writer.startswith("together"): Tensor.realize(*((b, a) if write == "add" else (a, b)))
  else: (a if writer == "realized" else b).realize()
  if write == "add": a += 1
  elif write == "setitem": a[0] = 7.0
  else: a.assign(Tensor([0.0, 0.0]))
  two_x = [2, 2] if writer == "together_constants" else [2, 4]
  np.testing.assert_equal(a.numpy(), {"add": np.add(two_x, 1), "setitem": [7, two_x[1]], "assign": [0, 0]}[write])
  np.testing.assert_equal(b.numpy(), two_x)

@pytest.mark.parametrize("make", ["contiguous", "clone", "arange"])
@pytest.mark.parametrize("write", ["element", "row", "shifted", "tensor_index"])
def test_setitem_from_a_view_of_the_lazy_target_itself(make, write):
  """x[0] = x[5] on an unrealized copy: the view shares the buffer x got for the write, and catching x up across that buffer's fill
  filed x as an equal value of its own buffer, so the write went into a copy of it and x kept its old values"""
  base = np.arange(6, dtype=np.float32)
  x = {"contiguous": lambda: Tensor(base).contiguous(), "clone": lambda: Tensor(base).clone(),
       "arange": lambda: Tensor.arange(6).float().contiguous()}[make]()
  want = base.copy()
  if write == "element": x[0] = x[5]; want[0] = want[5]
  elif write == "row":
    x = x.reshape(2, 3).contiguous(); want = want.reshape(2, 3)
    x[0] = x[1]; want[0] = want[1]
  elif write == "shifted": x[1:] = x[:-1]; want[1:] = want[:-1].copy()
  else: x[Tensor([0])] = x[5]; want[0] = want[5]
  np.testing.assert_equal(x.numpy(), want)

def test_a_state_write_walks_only_what_reads_the_state(monkeypatch):
  """whether a write's value reads its target elsewhere (tensor._reads_elsewhere) is found below the nodes whose buffer filter holds the
  target's buffer: an optimizer's state write beside a deep gradient over other buffers does not walk the gradient. Oracle: numpy"""
  from tinygrad.uop.ops import UOp
  from tinygrad.tensor import _reads_elsewhere
  from tinygrad.tensor_live import read_bits
  m, x = Tensor.zeros(16).contiguous().realize(), Tensor(np.arange(16, dtype=np.float32)).realize()
  g = x
  for _ in range(300): g = g * 1.001 + 1
  filters = {"direct": m * 0.9 + g, "through a flip": m.flip(0) * 0.9 + g, "a reduce": m.sum() + g}
  for v in filters.values(): read_bits(v.uop)  # filled once per graph (a realize's search for old-value readers fills it too)
  walked: list[int] = []
  toposort = UOp.toposort
  monkeypatch.setattr(UOp, "toposort", lambda self, gate=None: walked.append(len(r := toposort(self, gate))) or r)
  assert [_reads_elsewhere(v.uop, m.uop) for v in filters.values()] == [False, True, True]
  assert max(walked) < 20, walked
  monkeypatch.undo()
  m.assign(filters["direct"]).realize()
  want = np.arange(16, dtype=np.float32)
  for _ in range(300): want = want * np.float32(1.001) + np.float32(1)
  np.testing.assert_allclose(m.numpy(), want, rtol=1e-5)
