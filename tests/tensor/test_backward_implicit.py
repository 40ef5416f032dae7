"""backward() with no requires_grad=True tensor in the graph: tinygrad 0.14 (which has no requires_grad) fills .grad of every live float
tensor in the graph. Expected values are worked out by hand or with numpy."""
import numpy as np
import pytest
from tinygrad import Tensor, nn
from tinygrad.tensor_live import LiveTensors

def test_the_tinygrad_docstring_example():
  t = Tensor([1.0, 2.0, 3.0, 4.0])
  t.sum().backward()
  assert t.grad.tolist() == [1.0, 1.0, 1.0, 1.0]

def test_leaves_and_intermediates_get_gradients():
  x = Tensor([1.0, 2.0])
  h = x * 3
  (h * h).sum().backward()
  assert h.grad.tolist() == [6.0, 12.0]  # d/dh sum(h^2) = 2h
  assert x.grad.tolist() == [18.0, 36.0]  # 2h * 3

def test_a_small_network_matches_numpy():
  rng = np.random.default_rng(0)
  xs, ws, bs = rng.standard_normal((4, 3), dtype=np.float32), rng.standard_normal((3, 2), dtype=np.float32), rng.standard_normal(2, dtype=np.float32)
  x, w, b = Tensor(xs), Tensor(ws), Tensor(bs)
  (x @ w + b).relu().sum().backward()
  on = (xs @ ws + bs > 0).astype(np.float32)
  np.testing.assert_allclose(w.grad.numpy(), xs.T @ on, rtol=1e-5)
  np.testing.assert_allclose(b.grad.numpy(), on.sum(0), rtol=1e-5)
  np.testing.assert_allclose(x.grad.numpy(), on @ ws.T, rtol=1e-5)

def test_module_parameters_without_an_optimizer():
  lin = nn.Linear(2, 2)
  lin(Tensor([[1.0, 2.0]])).sum().backward()
  assert lin.weight.grad.tolist() == [[1.0, 2.0], [1.0, 2.0]] and lin.bias.grad.tolist() == [1.0, 1.0]

def test_requires_grad_false_opts_out_and_ints_have_none():
  x, c, i = Tensor([1.0, 2.0]), Tensor([5.0, 6.0], requires_grad=False), Tensor([3, 4])
  (x * c * i).sum().backward()
  assert x.grad.tolist() == [15.0, 24.0] and c.grad is None and i.grad is None

def test_any_requires_grad_tensor_in_the_graph_means_only_those():
  x, y = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0])
  (x * y).sum().backward()
  assert x.grad.tolist() == [3.0, 4.0] and y.grad is None  # as torch: the program asked for gradients by name

def test_gradients_accumulate():
  x = Tensor([1.0, -2.0])
  (x * x).sum().backward()
  (x * 3).sum().backward()
  assert x.grad.tolist() == [2.0 + 3.0, -4.0 + 3.0]

def test_a_loss_read_before_backward_keeps_its_graph_as_in_tinygrad():
  """tinygrad 0.14 leaves a tensor lazy when its values are read (item, numpy, tolist), so backward() after a read goes through; here the
  read realizes it in place and the handle keeps the graph. An explicit realize() drops a graph with no requires_grad in it, as there"""
  x = Tensor([1.0, 2.0])
  loss = (x * x).sum()
  assert loss.item() == 5.0
  loss.backward()
  assert x.grad.tolist() == [2.0, 4.0]
  z = Tensor([1.0, 2.0])
  loss = (z * z).sum().realize()
  with pytest.raises(RuntimeError, match=r"realized \(realize\(\)\) before backward\(\).*requires_grad=True"): loss.backward()

def test_a_value_read_mid_forward_passes_gradients_on():
  """h read back in the middle of the forward (a debug print): backward() with no requires_grad anywhere reaches w and x behind it, and
  every float tensor of the graph gets its gradient (values worked out by hand: loss = sum(2 relu(x @ w)))"""
  w, x = Tensor([[1.0, 2.0], [3.0, 4.0]]), Tensor([[1.0, -0.5]])
  h = x @ w
  assert h.tolist() == [[-0.5, 0.0]]
  r = h.relu()
  assert r.argmax(1).item() == 0  # an int read of the graph above h changes nothing
  (r * 2).sum().backward()
  # relu'(h) = [0, 0] (h <= 0): nothing reaches w or x, but each gets its zero gradient through h
  assert r.grad.tolist() == [[2.0, 2.0]] and h.grad.tolist() == [[0.0, 0.0]] and w.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
  w2, x2 = Tensor([[1.0, 2.0], [3.0, 4.0]]), Tensor([[1.0, 1.0]])
  h2 = x2 @ w2
  assert h2.numpy().tolist() == [[4.0, 6.0]]
  (h2.relu() * 2).sum().backward()
  assert w2.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]] and x2.grad.tolist() == [[6.0, 14.0]] and h2.grad.tolist() == [[2.0, 2.0]]
  assert (h2 * h2).sum().gradient(w2)[0].tolist() == [[8.0, 12.0], [8.0, 12.0]]  # d sum(h^2)/dw = x^T 2h

def test_a_value_read_inside_a_function_that_returned_says_what_is_lost():
  w, x = Tensor([[1.0, 2.0], [3.0, 4.0]]), Tensor([[1.0, 1.0]])
  def forward():
    h = (x @ w).relu()
    assert h.tolist() == [[4.0, 6.0]]
    return (h * 2).sum()
  with pytest.raises(RuntimeError, match=r"read back .*went with the tensor that held it.*keep that tensor alive"): forward().backward()

def test_gradient_through_a_realized_part_says_why_none_reaches():
  x = Tensor([1.0, 2.0])
  v = (x * 2).realize()  # with no requires_grad=True tensor in it, v's graph is not kept
  with pytest.raises(RuntimeError, match=r"part of its graph was realized .*take the gradient first.*requires_grad=True"): (v * 3).sum().gradient(x)
  with pytest.raises(RuntimeError, match=r"not in its graph, or only through detach\(\)"): (Tensor([3.0]) * 2).sum().gradient(x)
  y = Tensor([1.0, 2.0], requires_grad=True)
  w = (y * 2).realize()
  assert (w * 3).sum().gradient(y)[0].tolist() == [6.0, 6.0]  # the fix it names: a graph with a requires_grad tensor in it is kept
  u = x * 2
  assert u.tolist() == [2.0, 4.0]  # read back, not realize(): the graph is kept, as the lazy tensor is in tinygrad 0.14
  assert (u * 3).sum().gradient(x)[0].tolist() == [6.0, 6.0]

def test_a_realized_intermediate_cuts_the_graph_as_in_tinygrad():
  x = Tensor([1.0, 2.0])
  y = (x * 2).realize()
  (y * y).sum().backward()
  assert y.grad.tolist() == [4.0, 8.0] and x.grad is None

def test_only_detach_leading_to_a_tensor_gives_zeros():
  x = Tensor([1.0, 2.0])
  (x.detach() * 2).sum().backward()
  assert x.grad.tolist() == [0.0, 0.0]

@pytest.mark.parametrize("make, value", [(lambda x: Tensor.ones(3), 1.0), (lambda x: Tensor.zeros(3), 0.0), (lambda x: Tensor.full((3,), 2.0), 2.0),
                                         (lambda x: x.ones_like(), 1.0), (lambda x: x.zeros_like(), 0.0), (lambda x: x.full_like(4.0), 4.0)],
                         ids=["ones", "zeros", "full", "ones_like", "zeros_like", "full_like"])
def test_a_constant_from_a_creation_function_gets_its_own_gradient(make, value):
  # tinygrad 0.14 makes these buffers; here each is a constant node of its own, apart from every equal constant (another Tensor.ones(3),
  # the 1.0 of a * 1.0), whose gradients stay theirs. By hand: loss = sum(2*a*x + 5*b + a)
  x = Tensor([1.0, 2.0, 3.0])
  a, b = make(x), make(x)
  (a * x * 2 + b * 5 + a * 1.0).sum().backward()
  assert a.grad.tolist() == [3.0, 5.0, 7.0] and b.grad.tolist() == [5.0] * 3  # 2x + 1; 5
  assert x.grad.tolist() == [2 * value] * 3

def test_what_is_made_from_a_creation_functions_constant_gets_a_gradient_too():
  x, ones = Tensor([1.0, -2.0]), Tensor.ones(2)
  c = ones * 3
  (c * x).sum().backward()
  assert c.grad.tolist() == [1.0, -2.0] and ones.grad.tolist() == [3.0, -6.0] and x.grad.tolist() == [3.0, 3.0]

def test_arange_and_linspace_are_constants_with_no_gradient_as_in_tinygrad():
  x, r, l = Tensor([1.0, 2.0, 3.0]), Tensor.arange(3.0), Tensor.linspace(0, 1, 3)
  (r * x + l * x).sum().backward()
  assert r.grad is None and l.grad is None and x.grad.tolist() == [0.0, 1.5, 3.0]

def test_requires_grad_on_a_creation_function_still_gives_a_buffer_of_its_own():
  a, b = Tensor.ones(3, requires_grad=True), Tensor.ones(3, requires_grad=True)
  (a * 2 + b * 5).sum().backward()
  assert a.grad.tolist() == [2.0] * 3 and b.grad.tolist() == [5.0] * 3

def test_a_python_number_constant_gets_no_gradient():
  c, x = Tensor(2.0), Tensor([1.0, 2.0])
  (x * c + x * 2).sum().backward()  # c is the same node as the 2 of x * 2: tinygrad 0.14 gives such constants no gradient either
  assert c.grad is None and x.grad.tolist() == [4.0, 4.0]

def test_the_loss_itself_gets_gradient_one_as_in_tinygrad():
  loss = (Tensor([1.0, 2.0]) * 3).sum()
  loss.backward()
  assert loss.grad.item() == 1.0

def test_the_live_registry_stays_bounded():
  live = LiveTensors()
  kept = [Tensor([float(i)]) for i in range(10)]
  for t in kept: live.add(t)
  for i in range(5 * LiveTensors.MIN_LIMIT): live.add(Tensor([float(i)]))
  assert len(live.refs) <= LiveTensors.MIN_LIMIT + 1
  assert {id(t) for t in live.alive()} >= {id(t) for t in kept}

@pytest.mark.parametrize("requires_grad", [True, None], ids=["explicit", "implicit"])
def test_an_intermediate_read_every_step_gives_this_steps_gradient(requires_grad):
  """h read each step of a training loop that writes the parameters in place: the gradient read the matmul's buffer realized by an
  earlier step's backward (computed from the old parameters; only a write into that buffer itself was checked): off by 3% at step 1,
  growing. And with no requires_grad, the parameters (realized from their initializers by the read) all get their gradients each step.
  Oracle: the same loop's gradients worked out with numpy"""
  R = np.random.default_rng(0)
  W, B, X = R.standard_normal((8, 4)).astype(np.float32), R.standard_normal(8).astype(np.float32), R.standard_normal((5, 4)).astype(np.float32)
  w, b, x = Tensor(W.copy(), requires_grad=requires_grad), Tensor(B.copy(), requires_grad=requires_grad), Tensor(X)
  for _ in range(3):
    w.grad = b.grad = None
    h = (x @ w.T + b).relu()
    hv = h.numpy()
    (h * h).sum().backward()
    dpre = 2 * hv * (hv > 0)  # d sum(relu(p)^2) / dp
    np.testing.assert_allclose(w.grad.numpy(), dpre.T @ X, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), dpre.sum(0), rtol=1e-5, atol=1e-5)
    w.assign(w - 0.01 * w.grad); b.assign(b - 0.01 * b.grad)
