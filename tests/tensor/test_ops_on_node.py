"""The mixins' composite ops of one tensor are built on its node with one handle (tensor._ON_NODE): the same node as the op built step by
step through Tensor handles, values against numpy, gradients through them (the sorts': tests/tensor/test_scan_sort.py), and a tensor
argument taking the step-by-step way."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.mixin import OpMixin
from tinygrad import tensor as tensor_module

X = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
KWARGS = {"softmax": [{}, {"axis": 0}, {"dtype": dtypes.float16}], "log_softmax": [{}, {"axis": 0}], "mean": [{}, {"axis": 1, "keepdim": True}],
          "var": [{}, {"axis": 0, "correction": 0}], "std_mean": [{"axis": 1}], "leaky_relu": [{"neg_slope": 0.2}], "elu": [{"alpha": 0.5}],
          "hardtanh": [{"min_val": -2, "max_val": 3}],
          "clip": [{"min_": -0.5, "max_": 0.5}], "argmax": [{}, {"axis": 1, "keepdim": True}], "min": [{}, {"axis": 0}],
          "sort": [{}, {"dim": 0, "descending": True}], "topk": [{"k": 2}, {"k": 3, "dim": 0, "largest": False}]}

def _stepwise(monkeypatch, x:Tensor, name:str, kwargs:dict):
  """the op built the old way: every step a Tensor handle (the wrappers taken off for the call)"""
  with monkeypatch.context() as m:
    for n in tensor_module._ON_NODE: m.setattr(Tensor, n, getattr(OpMixin, n))
    return getattr(x, name)(**kwargs)

def _graph(u:UOp) -> UOp:
  """u's graph with each CUSTOM_GRADIENT its value (the sorts' values carry one: its function is made anew with every build)"""
  new:dict[UOp, UOp] = {}
  for x in u.toposort(): new[x] = new[x.src[0]] if x.op is Ops.CUSTOM_GRADIENT else x.replace(src=tuple(new[s] for s in x.src))
  return new[u]

@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float16, dtypes.int32])
@pytest.mark.parametrize("name", tensor_module._ON_NODE)
def test_same_node_as_stepwise(monkeypatch, name, dtype):
  x = Tensor(X).cast(dtype)
  for kwargs in KWARGS.get(name, [{}]):
    want, got = _stepwise(monkeypatch, x, name, kwargs), getattr(x, name)(**kwargs)
    if isinstance(want, tuple):
      assert all(type(g) is Tensor and _graph(g.uop) is _graph(w.uop) for w, g in zip(want, got, strict=True)), (name, kwargs)
    else: assert type(got) is Tensor and _graph(got.uop) is _graph(want.uop), (name, kwargs)

def test_softmax_values_and_gradient():
  x = Tensor(X, requires_grad=True)
  s = x.softmax(-1)
  e = np.exp(X - X.max(-1, keepdims=True))
  want = e / e.sum(-1, keepdims=True)
  np.testing.assert_allclose(s.numpy(), want, rtol=1e-5, atol=1e-6)
  g = np.random.default_rng(1).standard_normal(X.shape).astype(np.float32)
  (s * Tensor(g)).sum().backward()
  # d softmax: s * (g - sum(g * s))
  np.testing.assert_allclose(x.grad.numpy(), want * (g - (g * want).sum(-1, keepdims=True)), rtol=1e-4, atol=1e-5)

def test_tuple_results_are_tensors():
  v, m = Tensor(X).var_mean(0)
  np.testing.assert_allclose(v.numpy(), X.var(0, ddof=1), rtol=1e-5)
  np.testing.assert_allclose(m.numpy(), X.mean(0), rtol=1e-5, atol=1e-7)

def test_tensor_argument_takes_the_stepwise_way():
  lo, hi = Tensor(np.full(6, -0.5, np.float32)), Tensor(np.full(6, 0.5, np.float32))
  np.testing.assert_allclose(Tensor(X).hardtanh(lo, hi).numpy(), np.clip(X, -0.5, 0.5))


NUMBER_OPS = {"add": lambda a, y: a + y, "radd": lambda a, y: y + a, "mul": lambda a, y: a * y, "sub": lambda a, y: a - y,
              "rsub": lambda a, y: y - a, "lt": lambda a, y: a < y, "gt": lambda a, y: a > y, "ne": lambda a, y: a != y,
              "maximum": lambda a, y: a.maximum(y)}

@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float16, dtypes.int8, dtypes.int32, dtypes.bool])
@pytest.mark.parametrize("op", NUMBER_OPS)
def test_python_number_ops_on_the_node(monkeypatch, op, dtype):
  """an op with a python number builds the mixin's node (the number's constant in the joined dtype) with one handle, the result's; the
  mixin's way made one for the constant too"""
  x = Tensor(X).cast(dtype)
  handles = []
  plain = tensor_module._handle
  monkeypatch.setattr(tensor_module, "_handle", lambda u: handles.append(u) or plain(u))
  for y in (2, -300, 0.5, 1e10, True):
    if op in ("sub", "rsub") and dtype is dtypes.bool and y is True:
      with pytest.raises(RuntimeError, match="subtracting bools"): NUMBER_OPS[op](x, y)
      continue
    handles.clear()
    got = NUMBER_OPS[op](x, y)
    # (an int past an int dtype settles a comparison elementwise alike: the mixin's own steps, _compare)
    settled = op in ("lt", "gt", "ne") and type(y) is int and dtypes.is_int(dtype) and not dtypes.min(dtype) <= y <= dtypes.max(dtype)
    assert settled or handles == [got.uop], (op, y)
    with monkeypatch.context() as m:
      m.setattr(Tensor, "_binop", OpMixin._binop)
      m.setattr(Tensor, "_sub", OpMixin._sub)
      want = NUMBER_OPS[op](x, y)
    assert got.uop is want.uop and got.dtype is want.dtype, (op, y)
