"""Tensor ops over an axis whose length is a bound Variable: scans, var/std, integer indexing and einsum compute (numpy on the concrete
slice is the oracle, also past the scan's block size and under TinyJit); the ops that need a concrete length name the symbolic axis
instead of failing on a comparison's truth value; and on CL a kernel with a Variable takes the int32 the runtime passes."""
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, Variable, dtypes

N = Variable("i", 1, 10)
X = np.random.default_rng(0).standard_normal((3, 10)).astype(np.float32)

SCANS = {
  "cumsum": (lambda t, a: t.cumsum(a), lambda x, a: np.cumsum(x, a)),
  "cumprod": (lambda t, a: t.cumprod(a), lambda x, a: np.cumprod(x, a)),
  "cummax": (lambda t, a: t.cummax(a)[0], lambda x, a: np.maximum.accumulate(x, a)),
  "cummax_indices": (lambda t, a: t.cummax(a)[1], None),  # oracle: the same op on the concrete slice
  "cummin": (lambda t, a: t.cummin(a)[0], lambda x, a: np.minimum.accumulate(x, a)),
  "logcumsumexp": (lambda t, a: t.logcumsumexp(a), lambda x, a: np.logaddexp.accumulate(x, a)),
}

@pytest.mark.parametrize("name", SCANS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("n", [1, 4, 10])  # 10: longer than the scan's block
def test_scans_over_or_beside_a_symbolic_axis(name, axis, n):
  op, ref = SCANS[name]
  want = ref(X[:, :n], axis) if ref is not None else op(Tensor(X)[:, :n], axis).numpy()
  np.testing.assert_allclose(op(Tensor(X)[:, :N.bind(n)], axis).numpy(), want, rtol=1e-5, atol=1e-5)

def test_cumprod_gradient_over_a_symbolic_axis():
  a, b = Tensor(X, requires_grad=True), Tensor(X, requires_grad=True)
  a[:, :N.bind(4)].cumprod(1).sum().backward()
  b[:, :4].cumprod(1).sum().backward()
  np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-5)

@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("n", [2, 4, 10])
def test_var_std_over_a_symbolic_axis(correction, n):
  x = Tensor(X)[:, :N.bind(n)]
  np.testing.assert_allclose(x.var(1, correction=correction).numpy(), X[:, :n].var(1, ddof=correction), rtol=1e-5)
  np.testing.assert_allclose(x.std(1, correction=correction).numpy(), X[:, :n].std(1, ddof=correction), rtol=1e-5)
  np.testing.assert_allclose(x.var(correction=correction).numpy(), X[:, :n].var(ddof=correction), rtol=1e-5)

def test_int_index_into_a_symbolic_axis():
  x, v = Tensor(X), N.bind(4)
  assert x[0, :v][1].item() == X[0, 1] and x[0, :v][-1].item() == X[0, 3] and x[0, :v][-4].item() == X[0, 0]
  np.testing.assert_array_equal(x[:, :v][:, -1].numpy(), X[:, 3])
  # bounds are checked at the current binding
  for bad in (4, -5):
    with pytest.raises(IndexError, match=f"index {bad} is out of bounds for axis 1 with size i=4"): x[:, :v][:, bad]

def test_negative_index_into_a_symbolic_axis_under_jit():
  x = Tensor(X).realize()
  @TinyJit
  def last(t:Tensor, v) -> Tensor: return (t[:, :v][:, -1] * 2).realize()
  for n in (3, 5, 7, 9, 2):
    np.testing.assert_array_equal(last(x, N.bind(n)).numpy(), X[:, n - 1] * 2)

def test_einsum_over_a_symbolic_axis():
  x, v = Tensor(X), N.bind(4)
  np.testing.assert_allclose(Tensor.einsum("i,i->", x[0, :v], x[0, :v]).item(), X[0, :4] @ X[0, :4], rtol=1e-5)
  np.testing.assert_allclose(Tensor.einsum("ij,jk->ik", x[:, :v], Tensor(X.T)[:v]).numpy(), X[:, :4] @ X[:, :4].T, rtol=1e-5)
  np.testing.assert_allclose(Tensor.einsum("ij->j", x[:, :v]).numpy(), X[:, :4].sum(0), rtol=1e-5)
  np.testing.assert_allclose(Tensor.einsum("i,i->i", Tensor.ones(1), x[0, :v]).numpy(), X[0, :4])  # size 1 broadcasts
  with pytest.raises(ValueError, match="einsum letter 'i' has sizes i=4 and 4"): Tensor.einsum("i,i->", x[0, :v], Tensor.ones(4))

V = N.bind(4)
XS = Tensor(np.zeros((2, 3, 10, 10), np.float32))[:, :, :, :V]  # (2, 3, 10, i): the last axis is symbolic
UNSUPPORTED = {  # the op named in the message: the function's own (argsort is a sort)
  "sort": lambda: XS.sort(-1), "sort ": lambda: XS.argsort(), "topk": lambda: XS.topk(2),
  "conv2d": lambda: XS.conv2d(Tensor.ones(4, 3, 3, 3)), "conv_transpose2d": lambda: XS.conv_transpose2d(Tensor.ones(3, 4, 3, 3)),
  "max_pool2d": lambda: XS.max_pool2d(), "avg_pool2d": lambda: XS.avg_pool2d(), "interpolate": lambda: XS.interpolate((5, 5)),
  "unfold": lambda: XS.unfold(-1, 2, 1), "roll": lambda: XS.roll(1, -1), "split": lambda: XS.split(2, -1), "chunk": lambda: XS.chunk(2, -1),
  "pad mode 'reflect'": lambda: XS.pad((1, 1), mode="reflect"),
}

@pytest.mark.parametrize("name", UNSUPPORTED)
def test_ops_needing_a_concrete_length_name_the_symbolic_axis(name):
  with pytest.raises(NotImplementedError, match=rf"^{name.strip()} does not support a symbolic axis \(dim 3 is i=4\)"): UNSUPPORTED[name]()

def test_one_hot_with_symbolic_classes_says_so():
  with pytest.raises(NotImplementedError, match=r"one_hot does not support a symbolic num_classes \(i=4\)"): Tensor([0, 1]).one_hot(V)

def test_ops_still_run_on_a_symbolic_axis_they_do_not_touch():
  """the checks only look at the axes an op works on: a symbolic batch still sorts, convolves, pools and resizes"""
  a = np.random.default_rng(1).standard_normal((10, 3, 6, 6)).astype(np.float32)
  x, v = Tensor(a), N.bind(4)
  for op in (lambda t: t.sort(-1)[0], lambda t: t.conv2d(Tensor.ones(2, 3, 3, 3)), lambda t: t.max_pool2d(), lambda t: t.interpolate((3, 3)),
             lambda t: t.roll(1, -1), lambda t: t.pad((1, 1, 1, 1), mode="reflect")):
    np.testing.assert_allclose(op(x[:v]).numpy(), op(x[:4]).numpy(), rtol=1e-5, atol=1e-5)

def test_a_value_past_int32_cannot_be_bound():
  """every runtime passes a variable as int32: a larger value raises at bind instead of wrapping in the kernel (the CPU computed 5 for
  2**33 + 5), whatever the Variable's dtype"""
  for dt in (dtypes.weakint, dtypes.int64):
    with pytest.raises(ValueError, match="kernels receive a variable as int32"): Variable("n", 0, 2**40, dt).bind(2**33 + 5)
    v = Variable("n", 0, 2**40, dt).bind(2**31 - 1)
    assert (Tensor.zeros(2, dtype=dtypes.int64) + v).tolist() == [2**31 - 1] * 2

def test_opencl_declares_a_variable_as_int32():
  """the CL runtime sets each variable as 4 bytes: a `long` parameter made clSetKernelArg fail (CL_INVALID_ARG_SIZE)"""
  from tinygrad.device import Device
  from tinygrad.codegen import get_program
  from tinygrad.schedule.rangeify import create_schedule
  x = Tensor.empty(3, 10, device="NULL:CL")[:, :N.bind(4)].sum(1)
  ast = [it for it in create_schedule([x.uop])[0] if it.kind == "kernel"][-1].ast
  assert "const int i)" in get_program(ast, Device["NULL:CL"].renderer).src

@pytest.mark.parametrize("dt", [dtypes.weakint, dtypes.int64, dtypes.int32])
def test_symbolic_matmul_runs_on_cl(cl, dt):
  v = Variable("i", 1, 10, dt)
  x, w = Tensor(X, device="CL"), Tensor(np.ones((10, 5), np.float32), device="CL")
  for n in (4, 10):
    np.testing.assert_allclose((x[:, :v.bind(n)] @ w[:v.bind(n)]).numpy(), X[:, :n] @ np.ones((n, 5)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x[:, :v.bind(n)].cumsum(1).numpy(), X[:, :n].cumsum(1), rtol=1e-5, atol=1e-5)
