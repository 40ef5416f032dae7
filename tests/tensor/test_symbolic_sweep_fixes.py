"""Symbolic shapes, from a sweep against upstream tinygrad and numpy: reshape checks sizes and infers -1 by exact division, equal sizes
built differently match (broadcast, cat, expand), a bound value is an int that fits its axis, comparisons decided by bounds have a truth
value (gather, scatter, rearrange), negative slice ends count back from a symbolic end, Variables of one name share a kernel argument,
and an unbound one is named. numpy on the concrete slice is the oracle."""
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, Variable

A = np.arange(400, dtype=np.float32).reshape(40, 10)
B = A[:10]
I = Variable("i", 1, 10)

def test_symbolic_reshape_checks_the_size():
  t, v = Tensor(B), I.bind(3)
  for bad in ((v, 5), (v, 20), (v*2, 10)):
    with pytest.raises(ValueError, match="cannot reshape shape"): t[:v].reshape(bad)
  np.testing.assert_array_equal(t[:v].reshape(v, 2, 5).numpy(), B[:3].reshape(3, 2, 5))
  np.testing.assert_array_equal(t[:v].reshape(v*10).numpy(), B[:3].reshape(30))

def test_bound_value_past_the_axis_is_refused():
  t, k = Tensor(B), Variable("k", 1, 20)
  with pytest.raises(IndexError, match="outside axis 0 of size 10"): t[:k.bind(15)]
  with pytest.raises(ValueError, match="out of bounds"): t.shrink(((0, k.bind(15)), None))
  with pytest.raises(ValueError, match="out of bounds"): t.shrink(((k.bind(12) - 5, k.bind(12)), None))
  assert t[:k.bind(7)].sum().item() == B[:7].sum()  # a range past the axis is fine where the value fits

def test_bind_needs_an_int():
  for bad in (3.5, 3.0, True, "3"):
    with pytest.raises(TypeError, match="must be bound to an int"): I.bind(bad)
  assert I.bind(np.int64(3)).unbind()[1] == 3 and type(I.bind(np.int64(3)).unbind()[1]) is int

def test_reshape_minus_one_divides_symbolic_sizes():
  v = I.bind(3)
  x = Tensor(A[:, :8].copy())[:v]
  assert x.reshape(v, -1, 2).shape == x.reshape(v, 4, 2).shape and x.reshape(v, -1, 2).shape[1] == 4
  assert (x.reshape(v, -1, 2) * Tensor.ones(1, 4, 2)).sum().item() == A[:3, :8].sum()
  np.testing.assert_array_equal(x.reshape(-1, 4).numpy(), A[:3, :8].reshape(-1, 4))
  with pytest.raises(ValueError, match="no multiple"): x.reshape(-1, 3)
  assert ((I*8)//(I*2)).simplify().render() == "4"

V, W = I.bind(3), Variable("w", 1, 10).bind(4)
EQUAL_SIZES = {  # name: (tinygrad, numpy)
  "cat v+w and w+v": (lambda t: t[:V].cat(t[:W]).sum(), A[:3].sum() + A[:4].sum()),
  "2+v and pad 1,1": (lambda t: t[:2+V] + t[:V].pad(((1, 1), None)), A[:5] + np.pad(A[:3], ((1, 1), (0, 0)))),
  "v+v and cat": (lambda t: t[:V+V] + t[:V].cat(t[:V]), A[:6] + np.concatenate([A[:3], A[:3]])),
  "(v+1)*2 and v*2+2": (lambda t: t[:(V+1)*2] + t[:V*2+2], 2*A[:8]),
  "flatten and reshape v*w": (lambda t: t[:V, :W].flatten() + t[:V, :W].reshape(V*W), 2*A[:3, :4].flatten()),
  "v*w and w*v": (lambda t: t[:V*W] + t[:W*V], 2*A[:12]),
  "expand to w+v": (lambda t: t[:V+W] + Tensor.ones(1, 10).expand(W+V, 10), A[:7] + 1),
}

@pytest.mark.parametrize("name", EQUAL_SIZES)
def test_equal_symbolic_sizes_built_differently_match(name):
  f, want = EQUAL_SIZES[name]
  np.testing.assert_array_equal(f(Tensor(A)).numpy(), want)

def test_comparisons_decided_by_bounds_have_a_truth_value():
  v = I.bind(4)
  assert bool(I < 11) is True and bool(v < v) is False and bool(I >= 1) is True and bool(I + 1)
  with pytest.raises(TypeError, match="truth value"): bool(I < 5)

def test_gather_scatter_rearrange_on_a_symbolic_axis():
  v, idx = I.bind(4), np.array([[0], [1], [2], [3], [0], [0], [0], [0], [0], [0]])
  np.testing.assert_array_equal(Tensor(B)[:v].gather(1, Tensor(idx)[:v]).numpy(), np.take_along_axis(B[:4], idx[:4], 1))
  want = np.zeros((4, 10), np.float32)
  np.put_along_axis(want, idx[:4], 1.0, 1)
  np.testing.assert_array_equal(Tensor(B)[:v].zeros_like().scatter(1, Tensor(idx)[:v], 1.0).numpy(), want)
  np.testing.assert_array_equal(Tensor(B)[:v].rearrange("a b -> b a").numpy(), B[:4].T)
  np.testing.assert_array_equal(Tensor(B)[:v].reshape(v*10).rearrange("(a b) -> b a", b=5).numpy(), B[:4].reshape(8, 5).T)
  np.testing.assert_array_equal(Tensor(B)[:v].reshape(v*10).rearrange("(a b) -> b a", a=v).numpy(), B[:4].T)  # b = v*10 / v
  # an index longer than self (at the bound values) is refused
  with pytest.raises(ValueError, match="index of shape"): Tensor(B)[:v].gather(1, Tensor(idx)[:Variable("j", 1, 10).bind(5)])

@pytest.mark.parametrize("sl", ["-1:", "-2:", ":-1", "-3:-1", "1:-1", "-4:"])
def test_negative_slice_ends_on_a_symbolic_axis(sl):
  v = I.bind(4)
  got = eval(f"Tensor(B)[:v][{sl}]", {"Tensor": Tensor, "B": B, "v": v})
  np.testing.assert_array_equal(got.numpy(), eval(f"B[:4][{sl}]"))

def test_negative_slice_end_past_a_symbolic_axis_is_refused():
  with pytest.raises(IndexError, match="outside axis 0"): Tensor(B)[:I.bind(4)][-5:]

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
def test_variables_of_one_name_and_different_ranges_in_one_kernel(dev):
  t = Tensor(B, device=dev)
  got = (t[:Variable("i", 1, 10).bind(3)].sum() + t[:, :Variable("i", 1, 5).bind(3)].sum()).item()
  assert got == B[:3].sum() + B[:, :3].sum()

def test_unbound_variable_is_named_when_realized():
  t = Tensor(B).realize()
  for f in (lambda: t[:I].sum().item(), lambda: (t[:I] + 1).realize(), lambda: TinyJit(lambda v: t[:v].sum(0).realize())(I)):
    with pytest.raises(RuntimeError, match="unbound Variable 'i'"): f()

# *** second sweep (stop 51) ***

def test_item_of_one_element_with_a_bound_variable_in_its_shape():
  t = Tensor(A)[:I.bind(1), :1]
  assert t.item() == A[0, 0]
  with pytest.raises(ValueError, match="exactly one element.*3 elements"): Tensor(A)[:I.bind(3), :1].item()

def test_batchnorm_training_over_a_symbolic_batch():
  from tinygrad import nn
  a = np.random.default_rng(4).standard_normal((10, 4)).astype(np.float32)
  bn = nn.BatchNorm(4)
  with Tensor.train():
    out = bn(Tensor(a)[:I.bind(6)].reshape(I.bind(6), 4, 1, 1)).numpy()[..., 0, 0]
  x = a[:6].astype(np.float64)
  np.testing.assert_allclose(out, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), atol=1e-5)
  np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * x.var(0, ddof=1), rtol=1e-5)  # the unbiased variance: n / (n-1)
  np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * x.mean(0), rtol=1e-5, atol=1e-7)

def test_minimum_keeps_a_variables_bounds():
  m = I.minimum(5)
  assert (m.vmin, m.vmax) == (1, 5) and ((~I).vmin, (~I).vmax) == (-11, -2)
  np.testing.assert_array_equal(Tensor(A)[:I.bind(7).minimum(5)].numpy(), A[:5])  # sized at vmax: int64's was an OverflowError
  np.testing.assert_array_equal(Tensor.zeros(I.bind(3).minimum(5)).numpy(), np.zeros(3))

def test_slice_bounds_that_are_no_ints():
  x = Tensor(A[0])
  with pytest.raises(TypeError, match="slice bound .* of type Tensor is not supported"): x[:Tensor(3)]
  with pytest.raises(TypeError, match="slice bound 2.5 of type float"): x[:2.5]
  # numpy's integers are indices (__index__), as in torch
  np.testing.assert_array_equal(x[np.int64(2):np.int32(5)].numpy(), A[0, 2:5])
  assert x[np.uint8(3)].item() == A[0, 3]

def test_argmax_over_a_symbolic_axis_bound_to_zero():
  # as over a concrete empty axis: no index to return (it gave INT_MIN); at other values the first extreme's index
  z = Variable("z", 0, 10)
  x = Tensor(A[0])
  with pytest.raises(ValueError, match=r"argmax over the empty axis 0 of shape \(z=0,\)"): x[:z.bind(0)].argmax()
  with pytest.raises(ValueError, match="empty axis"): x[:z.bind(0)].argmin()
  assert x[:z.bind(3)].argmax().item() == 2 and x[:z.bind(3)].argmin().item() == 0
