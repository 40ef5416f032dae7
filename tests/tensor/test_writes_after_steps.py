"""In-place writes that must land in the buffer every view and capture reads: into views of a Tensor.full, into a parameter after an
optimizer step, and optimizer steps on parameters that are views (a shard of a realized tensor, a prefix) or have no elements; and which
movement ops see a write (torch's views) and which keep the old values (what torch copies)."""
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, Variable, nn
from tinygrad.helpers import Context
from tinygrad.nn.state import load_state_dict

def test_assign_into_a_view_of_zeros_writes_the_zeros():
  c = Tensor.zeros(2, 6, 3)
  whole = c.reshape(12, 3)
  c[:, 2:4].assign(Tensor.ones(2, 2, 3)).realize()
  want = np.zeros((2, 6, 3), np.float32)
  want[:, 2:4] = 1
  np.testing.assert_equal(c.numpy(), want)
  np.testing.assert_equal(whole.numpy(), want.reshape(12, 3))
  assert Tensor.zeros(2, 6, 3).numpy().sum() == 0  # another Tensor.zeros is its own

def test_kv_cache_of_zeros_written_at_a_bound_position():
  cache = Tensor.zeros(1, 8, 2)
  want = np.zeros((1, 8, 2), np.float32)
  for pos in (3, 5):
    v = Variable("start_pos", 0, 7).bind(pos)
    cache.shrink((None, (v, v + 1), None)).assign(Tensor.full((1, 1, 2), float(pos))).realize()
    want[:, pos] = pos
    np.testing.assert_equal(cache.numpy(), want)

def _sgd_step(opt, w):
  with Context(TRAINING=1):
    opt.zero_grad()
    (w * w).sum().backward()
    opt.step()

def test_assign_after_a_step_shows_in_views():
  w = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  view = w[:2]
  _sgd_step(nn.optim.SGD([w], lr=0.1), w)
  w.assign(Tensor([10.0, 20.0, 30.0]))
  np.testing.assert_equal(view.numpy(), [10.0, 20.0])

def test_a_jitted_step_sees_an_assign_between_calls():
  w = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  opt = nn.optim.SGD([w], lr=0.1)
  @TinyJit
  def step():
    opt.zero_grad()
    (w * w).sum().backward()
    opt.step()
    return w.realize()
  with Context(TRAINING=1):
    for _ in range(3): step()
    w.assign(Tensor([10.0, 20.0, 30.0]))
    out = step()
  np.testing.assert_allclose(out.numpy(), [8.0, 16.0, 24.0])
  np.testing.assert_allclose(w.numpy(), [8.0, 16.0, 24.0])

def test_jitted_forward_sees_load_state_dict_after_training():
  lin = nn.Linear(2, 1, bias=False)
  lin.weight.assign(Tensor([[1.0, 1.0]]))
  opt = nn.optim.SGD([lin.weight], lr=0.1)
  with Context(TRAINING=1):
    opt.zero_grad()
    lin(Tensor([[1.0, 2.0]])).sum().backward()
    opt.step()
  infer = TinyJit(lambda x: lin(x).realize())
  for _ in range(3): infer(Tensor([[1.0, 1.0]]))
  load_state_dict(lin, {"weight": Tensor([[5.0, 5.0]])}, verbose=False)
  assert infer(Tensor([[1.0, 1.0]])).item() == 10.0

def test_step_on_a_shard_of_a_realized_tensor_leaves_the_source():
  src = Tensor([1.0, 2.0, 3.0, 4.0]).realize()
  w = src.shard(("CPU:0", "CPU:1"), axis=0)
  opt = nn.optim.SGD([w], lr=0.1)
  for _ in range(2): _sgd_step(opt, w)
  np.testing.assert_equal(src.numpy(), [1.0, 2.0, 3.0, 4.0])
  np.testing.assert_allclose(w.numpy(), np.array([1.0, 2.0, 3.0, 4.0]) * 0.8 ** 2, rtol=1e-6)

def test_a_prefix_view_is_no_whole_buffer():
  base = Tensor([1.0, 2.0, 3.0, 4.0]).contiguous().realize()
  assert not base[:2]._is_buffer()
  w = base[:2]
  opt = nn.optim.SGD([w], lr=0.1)
  for _ in range(2): _sgd_step(opt, w)
  np.testing.assert_allclose(w.numpy(), [0.64, 1.28], rtol=1e-6)
  view = base[:2]
  view.assign(Tensor([7.0, 8.0]))
  np.testing.assert_equal(base.numpy(), [7.0, 8.0, 3.0, 4.0])

@pytest.mark.parametrize("make", [lambda ps: nn.optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: nn.optim.Adam(ps, lr=0.1),
                                  lambda ps: nn.optim.LAMB(ps, lr=0.1), lambda ps: nn.optim.LARS(ps, lr=0.1)], ids=["sgd", "adam", "lamb", "lars"])
def test_a_parameter_without_elements_steps(make):
  empty, w = Tensor.zeros(0, 3).contiguous().realize(), Tensor([1.0, 2.0])
  ref = Tensor([1.0, 2.0])
  opt, ref_opt = make([empty, w]), make([ref])
  with Context(TRAINING=1):
    for _ in range(2):
      opt.zero_grad(); ref_opt.zero_grad()
      ((empty.sum() + 1) * (w * w).sum()).backward()
      (ref * ref).sum().backward()
      opt.step(); ref_opt.step()
  np.testing.assert_allclose(w.numpy(), ref.numpy(), rtol=1e-6)
  assert empty.shape == (0, 3)

def test_is_param_marks_what_an_optimizer_updates():
  w, stat = Tensor([1.0, 2.0]), Tensor.zeros(2).is_param_(False)
  assert w.is_param and not stat.is_param and stat.is_param_(True).is_param and not stat.is_param_(False).is_param
  opt = nn.optim.SGD([w, stat], lr=0.1)
  assert opt.params == [w] and opt.buffers == [stat]

@pytest.mark.parametrize("make, match", [(lambda p: nn.optim.SGD(p, momentum=-0.5), "momentum value: -0.5"),
                                         (lambda p: nn.optim.AdamW(p, weight_decay=-0.1), "weight_decay value: -0.1"),
                                         (lambda p: nn.optim.LAMB(p, weight_decay=-0.1), "weight_decay value: -0.1"),
                                         (lambda p: nn.optim.Adam(p, b1=1.0), "b1 value: 1.0")])
def test_hyperparameters_out_of_range_are_refused(make, match):
  with pytest.raises(ValueError, match=match): make([Tensor([1.0])])

# torch's views see a later in-place write into their memory; what torch copies (flip, pad, repeat, a reshape of a transposed axis)
# keeps the values it was made from (numpy's views and copies of the same ops as the oracle)
VIEWS = {"slice": lambda t: t[:, 1:], "steps": lambda t: t[:, ::2, 1::3], "permute": lambda t: t.permute(2, 0, 1),
         "reshape": lambda t: t.reshape(6, 4), "expand": lambda t: t[:, :1].expand(2, 5, 4), "steps_reshaped": lambda t: t[:, :, ::2].reshape(12)}
COPIES = {"flip": lambda t: t.flip(0), "pad": lambda t: t.pad(((0, 0), (0, 0), (1, 1))), "repeat": lambda t: t.repeat(2, 1, 1),
          "permute_reshaped": lambda t: t.permute(2, 0, 1).reshape(-1), "expand_reshaped": lambda t: t[:, :1].expand(2, 5, 4).reshape(40),
          "roll": lambda t: t.roll(1, 2)}

@pytest.mark.parametrize("name", list(VIEWS) + list(COPIES))
def test_views_see_a_write_and_copies_do_not(name):
  start = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  x = Tensor(start).contiguous().realize()
  op = VIEWS.get(name) or COPIES[name]
  y = op(x)
  x += 100
  want = op(Tensor(start + 100 if name in VIEWS else start)).numpy()
  np.testing.assert_equal(y.numpy(), want)
