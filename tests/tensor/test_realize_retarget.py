"""realize() and the handles it does not name: every live tensor whose graph holds a realized node reads the buffer afterwards (nothing
is computed twice, an in-place kernel runs once), and the cost of a realize does not depend on unrelated live tensors."""
import gc, weakref
from tinygrad import Tensor
from tinygrad.helpers import GlobalCounters
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, KernelInfo

def ops_of(t:Tensor) -> set[Ops]: return {u.op for u in t.uop.toposort()}

def test_another_handle_on_the_node_reads_the_buffer():
  x = Tensor([1., 2., 3.])
  a = (x + 1).sum()
  b, same = a * 2, Tensor(a.uop)  # b uses the node, `same` is a second handle on it
  same.realize()
  assert Ops.REDUCE_AXIS not in ops_of(a) | ops_of(b)
  GlobalCounters.reset()
  assert a.item() == 9.0 and b.item() == 18.0 and GlobalCounters.kernel_count == 1  # b's multiply only

def increment(c:UOp) -> UOp: return c[0].store(c[0].load() + 1).sink(arg=KernelInfo(name="inc"))

def test_in_place_kernel_runs_once_for_all_handles():
  c = Tensor([5])
  out = Tensor.custom_kernel(c, fxn=increment)[0]
  user, view, stale, same = out + 0, out.reshape(1, 1), out * 1, Tensor(out.uop)
  same.realize()
  assert user.tolist() == [6] and out.tolist() == [6] and c.tolist() == [6] and view.tolist() == [[6]]
  # the same kernel called again after that realize is new work, even while `stale` keeps the old node alive (hash-consing returns it)
  again = Tensor.custom_kernel(c, fxn=increment)[0]
  (Tensor([1.]) + 1).realize()  # an unrelated realize in between
  # `stale` was computed from the first call's result: the second call's write into c does not show in it (eager semantics)
  assert again.tolist() == [7] and stale.tolist() == [6] and c.tolist() == [7]

def test_replacement_realized_later_is_followed():
  # epoch 1: a becomes a buffer; epoch 2: a node built on that buffer becomes another. A handle that saw neither follows both.
  a = Tensor([1., 2.]) + 1
  w = (a * 3) * 2
  a.realize()
  m = a * 3
  held = m.uop  # the record of a node lives while some graph holds the node
  m.realize()
  assert m.uop is not held and [u.op for u in w.uop.toposort()].count(Ops.MUL) == 1 and m.uop.base in w.uop.toposort()
  GlobalCounters.reset()
  assert w.tolist() == [12., 18.] and GlobalCounters.kernel_count == 1

def test_records_are_freed_with_their_graphs():
  from tinygrad.tensor import _realized
  a = Tensor([1., 2.]) + 1
  b = a * 2
  node = weakref.ref(a.uop)
  key = id(a.uop)  # this record: other tests' graphs may hold records of their own (the schedule cache keeps constant graphs)
  a.realize()
  assert _realized.get(node()) is not None  # b still holds it
  buf = weakref.ref(_realized.get(node())[1].base)
  del b
  gc.collect()
  assert node() is None and buf() is not None and key not in _realized.nodes  # a holds the buffer; the record went with the node
  del a
  gc.collect()
  assert buf() is None

def test_realize_does_not_walk_unrelated_tensors(monkeypatch):
  walked: list[dict] = []
  toposort = UOp.toposort
  def counting(self, gate=None):
    walked.append(ret := toposort(self, gate))
    return ret
  def nodes_walked(n_live:int) -> int:
    live = [(Tensor.arange(8) + 100 + i) * 2 for i in range(n_live)]
    (Tensor([1.0, 2.0]) * 3 + 1).sum().realize()  # compiles outside the count
    monkeypatch.setattr(UOp, "toposort", counting)
    walked.clear()
    (Tensor([1.0, 2.0]) * 3 + 1).sum().realize()
    monkeypatch.setattr(UOp, "toposort", toposort)
    roots = {id(t._uop) for t in live}
    assert not any(id(u) in roots for w in walked for u in w)
    return sum(len(w) for w in walked)
  assert nodes_walked(10) == nodes_walked(1000)

def test_in_place_kernel_under_a_realized_view_runs_once():
  # realizing a view of the kernel's result materialises the kernel's node itself: handles that use it directly read the buffer too
  c = Tensor([5])
  out = Tensor.custom_kernel(c, fxn=increment)[0]
  user = out + 0
  out.reshape(1, 1).realize()
  assert user.tolist() == [6] and c.tolist() == [6]

def test_failed_compile_runs_nothing_and_leaves_the_tensor_lazy(monkeypatch):
  # every item is compiled before the first runs: a compile error in the second kernel leaves the first unrun, and the tensor keeps
  # its graph, so the same realize succeeds once the cause is gone
  import pytest
  import tinygrad.engine.realize as realize
  x = Tensor([1., 2., 3., 4.]).realize()
  t = (x.reshape(2, 2).sum(1).contiguous() * x[:2]).sum() + x.sum()  # (1+2)*1 + (3+4)*2 + 10, in two kernels
  prepare, launch, compiled, launched = realize.prepare_kernel, realize.launch, [], []
  def fails_second(ast, device):
    if len(compiled) == 1: raise RuntimeError("no compiler today")
    compiled.append(ast)
    return prepare(ast, device)
  monkeypatch.setattr(realize, "prepare_kernel", fails_second)
  monkeypatch.setattr(realize, "launch", lambda *a: launched.append(a) or launch(*a))
  with pytest.raises(RuntimeError, match="no compiler today"): t.realize()
  assert len(compiled) == 1 and launched == [] and t.uop.base.op is not Ops.BUFFER
  monkeypatch.setattr(realize, "prepare_kernel", prepare)
  assert t.item() == 27.0 and len(launched) > 1

def test_a_realize_between_forward_and_backward_keeps_the_gradient():
  # h is read (realized) after the loss was built on it: the loss now reads h's buffer, yet the gradient still goes through x * x
  x, w = Tensor([1., 2., 3.], requires_grad=True), Tensor([0.5, -1., 2.], requires_grad=True)
  h = x * x
  loss = (h * w).sum() + (x * 2).sum()  # a path through h and one around it
  assert h.tolist() == [1., 4., 9.]
  loss.backward()
  assert x.grad.tolist() == [2 * 1 * 0.5 + 2, 2 * 2 * -1. + 2, 2 * 3 * 2. + 2] and w.grad.tolist() == [1., 4., 9.]

def test_backward_after_reading_the_loss():
  x = Tensor([1., -2., 3.], requires_grad=True)
  loss = (x * x * 3).sum()
  assert loss.item() == 42.0
  loss.backward()
  assert x.grad.tolist() == [6., -12., 18.]

def test_realized_graphs_without_gradients_are_not_kept():
  x = Tensor([1., 2.]).realize()
  y = x * 3 + 1
  node = weakref.ref(y.uop)
  y.realize()
  gc.collect()
  assert node() is None and y.tolist() == [4., 7.]  # the view y reads does not hold the graph it replaced
  p = Tensor([1., 2.], requires_grad=True)
  z = p * 3 + 1
  kept = weakref.ref(z.uop)
  z.realize()
  gc.collect()
  assert kept() is not None  # on a gradient path: kept while z lives, for backward()
  (z * z).sum().backward()
  assert p.grad.tolist() == [2 * 4. * 3, 2 * 7. * 3]
  del z
  gc.collect()
  assert kept() is None

def test_contiguous_of_constants_is_kept_and_never_shared():
  import numpy as np
  # tinygrad's llama: a rotary table built as .contiguous() of constants, never realized by itself, read by every step's graph
  table = (Tensor.arange(6).float() * 0.5).cos().contiguous()
  want = np.cos(np.arange(6, dtype=np.float32) * 0.5)
  np.testing.assert_allclose((table * 2).numpy(), want * 2, rtol=1e-6)
  GlobalCounters.reset()
  np.testing.assert_allclose((table + 1).numpy(), want + 1, rtol=1e-6)
  assert GlobalCounters.kernel_count == 1  # the add: the table is the buffer the first realize left
  # the same constants made again are another node (hash-consing would make them one): a write through one never shows in the other
  a, b = Tensor.arange(4).contiguous(), Tensor.arange(4).contiguous()
  lazy_b = b + 0
  Tensor.realize(a, b)
  a.assign(Tensor([9, 9, 9, 9]))
  assert a.tolist() == [9, 9, 9, 9] and b.tolist() == [0, 1, 2, 3] and lazy_b.tolist() == [0, 1, 2, 3]
  c = Tensor.arange(4).contiguous()
  a.assign(Tensor([7, 7, 7, 7]))
  assert c.tolist() == [0, 1, 2, 3] and (Tensor.arange(4).contiguous() + 1).tolist() == [1, 2, 3, 4]
  # without contiguous() constants are not kept, so an equal graph built elsewhere is never the written buffer either
  d, e = Tensor.arange(4) + 1, Tensor.arange(4) + 1
  d.realize().assign(Tensor([5, 5, 5, 5]))
  assert e.tolist() == [1, 2, 3, 4] and d.tolist() == [5, 5, 5, 5]

def test_a_reshaped_contiguous_is_its_buffer():
  # the contiguous() is realized anyway: its reshape is that buffer (one kernel, not a second copy); a user's contiguous().permute()
  # keeps a buffer of its own, in its own row-major order, which an in-place write can target
  x = Tensor([[1., 2., 3.], [4., 5., 6.]])
  GlobalCounters.reset()
  r = (x + 1).contiguous().reshape(3, 2).realize()
  assert GlobalCounters.kernel_count == 1 and r._is_buffer() and r.tolist() == [[2., 3.], [4., 5.], [6., 7.]]
  p = (x * 2).contiguous().permute(1, 0).realize()
  assert p._is_buffer() and p.tolist() == [[2., 8.], [4., 10.], [6., 12.]]

def test_a_view_parameter_gets_a_buffer_of_its_own_for_the_step():
  # a parameter realized as a view of a buffer (here a transpose) gets its own buffer at the first step; the values follow SGD
  from tinygrad import nn
  w = Tensor([[1., 2., 3.], [4., 5., 6.]]).realize()
  p = w.T
  p.requires_grad = True
  opt = nn.optim.SGD([p], lr=0.5)
  with Tensor.train():
    for _ in range(2):
      opt.zero_grad()
      (p * p).sum().backward()  # gradient 2p: p - 0.5 * 2p is 0 after the first step, and stays 0
      opt.step()
  assert p._is_buffer() and p.tolist() == [[0., 0.], [0., 0.], [0., 0.]] and w.tolist() == [[1., 2., 3.], [4., 5., 6.]]
