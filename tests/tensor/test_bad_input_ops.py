"""Bad arguments to ops give a clear error naming what was wrong, where torch refuses them too (where torch is installed, each case
checks that it raises), instead of an internal AttributeError/KeyError or a silently wrong result. Good neighbours of each case still match numpy."""
import re
import numpy as np
import pytest
try: import torch  # an optional oracle: the cases stand without it
except ImportError: torch = None
from tinygrad import Tensor, Device, dtypes
from tinygrad.plugins.spec import DeviceError

A = np.arange(6, dtype=np.float32).reshape(2, 3)

# *** Tensor.to / Device.canonicalize: a device is a string ***

@pytest.mark.parametrize("dev, msg", [
  (dtypes.int, r"device must be a string such as 'CPU' or 'CPU:1', got DType dtypes\.int: to change the dtype use \.cast\(dtypes\.int\)"),
  (5, r"device must be a string such as 'CPU' or 'CPU:1', got int 5"),
  (object(), r"device must be a string .*, got object <object object at"),
])
def test_to_non_string_device(dev, msg):
  with pytest.raises(TypeError, match=msg): Tensor([1.0]).to(dev)
  with pytest.raises(TypeError, match=msg): Device.canonicalize(("CPU", dev))  # every caller of the parser gets it, a tuple's items too

def test_to_dtype_name_hints_cast():
  with pytest.raises(DeviceError, match=r"unknown device 'FLOAT16'.*'float16' is a dtype: to change the dtype use \.cast\(dtypes\.float16\)"):
    Tensor([1.0]).to("float16")
  with pytest.raises(DeviceError, match="unknown device 'NOSUCHDEV'") as e: Tensor([1.0]).to("nosuchdev")
  assert ".cast" not in str(e.value)
  np.testing.assert_equal(Tensor([1.0, 2.0]).to("cpu").numpy(), [1.0, 2.0])

# *** reductions and squeeze: an axis named twice (0 and -2 are the same axis of a 2-D tensor) ***

@pytest.mark.parametrize("op, axis, rep", [("sum", (0, 0), 0), ("mean", (0, -2), 0), ("max", (1, -1), 1), ("min", [0, 0], 0),
                                           ("var", (1, 1), 1), ("std", (0, -2), 0), ("prod", (-1, 1), 1), ("any", (0, 0), 0)])
def test_reduce_repeated_axis(op, axis, rep):
  with pytest.raises(ValueError, match="duplicate value in 'axis'"): np.var(A, tuple(axis)) if op == "var" else getattr(np, op)(A, tuple(axis))
  with pytest.raises(ValueError, match=re.escape(f"axis {rep} is repeated in {tuple(axis)}")):
    getattr(Tensor(A), op)(axis)

@pytest.mark.parametrize("op", ["sum", "mean", "max", "var", "prod"])
def test_reduce_distinct_axes(op):
  for axis in [(0, 1), (-1, 0), (1,), -2]:
    want = np.var(A, axis, ddof=1) if op == "var" else getattr(np, op)(A, axis)
    np.testing.assert_allclose(getattr(Tensor(A), op)(axis).numpy(), want, rtol=1e-6)

def test_squeeze_repeated_axis():
  if torch is not None:
    with pytest.raises(RuntimeError, match="multiple times"): torch.ones(1, 2, 1).squeeze((0, 0))
  with pytest.raises(ValueError, match=r"squeeze: axis 2 is repeated in \(-1, 2\)"): Tensor.ones(1, 2, 1).squeeze((-1, 2))
  with pytest.raises(ValueError, match=r"axis 0 is repeated"): Tensor.ones(1, 2, 1).squeeze([0, 0])
  assert Tensor.ones(1, 2, 1).squeeze((0, -1)).shape == np.ones((1, 2, 1)).squeeze((0, -1)).shape == (2,)

# *** flatten: start_dim after end_dim ***

@pytest.mark.parametrize("shape, s, e", [((2, 3), 1, 0), ((2, 3, 4), 2, 1), ((2, 3, 4), -1, 0)])
def test_flatten_start_after_end(shape, s, e):
  if torch is not None:
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"): torch.ones(shape).flatten(s, e)
  with pytest.raises(ValueError, match="flatten.. has invalid args: start_dim cannot come after end_dim"): Tensor.ones(*shape).flatten(s, e)

@pytest.mark.parametrize("shape, s, e, want", [((2, 3), 1, 1, (2, 3)), ((2, 3, 4), 0, -2, (6, 4)), ((2, 3, 4), -2, 2, (2, 12)), ((), 0, -1, (1,)),
                                               ((5,), 0, 0, (5,))])
def test_flatten_good_args(shape, s, e, want):  # want: torch's
  assert Tensor.ones(*shape).flatten(s, e).shape == want

# *** binary ops with an array or a list operand ***

@pytest.mark.parametrize("other, name", [(np.array([1.0, 2.0]), "numpy.ndarray"), ([1.0, 2.0], "list"), ((1, 2), "tuple")])
def test_binop_with_array_operand(other, name):
  msg = f"cannot combine a Tensor with a {name} operand: wrap it with Tensor"
  with pytest.raises(TypeError, match=msg): Tensor([1.0]) + other
  with pytest.raises(TypeError, match=msg): other - Tensor([1.0]) if name != "numpy.ndarray" else Tensor([1.0]).sub(other, reverse=True)
  with pytest.raises(TypeError, match=msg): Tensor([1.0]) * other
  with pytest.raises(TypeError, match=msg): Tensor([1.0]).maximum(other)

def test_binop_with_scalars_still_works():
  for s in (np.float32(3.0), np.int64(2), np.array(1.5), 2, 0.5, True):
    np.testing.assert_allclose((Tensor(A) + s).numpy(), A + s, rtol=1e-6)
    np.testing.assert_allclose((s * Tensor(A)).numpy(), s * A, rtol=1e-6)

# *** matmul with a non-tensor ***

@pytest.mark.parametrize("other, name", [(2, "int"), ([[1.0, 1.0], [1.0, 1.0]], "list"), (np.ones((2, 2)), "numpy.ndarray")])
def test_matmul_non_tensor(other, name):
  if torch is not None:
    with pytest.raises(TypeError, match="must be Tensor"): torch.ones(2, 2).matmul(other)
  with pytest.raises(TypeError, match=f"matmul needs a Tensor operand, got a {name}: wrap it with Tensor"): Tensor.ones(2, 2).matmul(other)
  with pytest.raises(TypeError, match=f"matmul needs a Tensor operand, got a {name}"): Tensor.ones(2, 2).dot(other)
  if not isinstance(other, np.ndarray):  # ndarray @ Tensor is numpy's own matmul, which converts the Tensor
    with pytest.raises(TypeError, match=f"got a {name}"): Tensor.ones(2, 2) @ other
    with pytest.raises(TypeError, match=f"got a {name}"): other @ Tensor.ones(2, 2)
  np.testing.assert_allclose((Tensor(A) @ Tensor(A.T)).numpy(), A @ A.T)

# *** creation and joins (tensor.py) ***

def test_linspace_steps_must_be_an_int():
  with pytest.raises(TypeError, match=r"linspace's steps must be an int, got 2.5"): Tensor.linspace(0, 1, 2.5)
  assert Tensor.linspace(0, 1, np.int64(3)).tolist() == [0.0, 0.5, 1.0]  # numpy's ints are ints

@pytest.mark.parametrize("make", [lambda dt: Tensor.randn(3, dtype=dt), lambda dt: Tensor.normal(3, dtype=dt), lambda dt: Tensor.rand(3, dtype=dt)],
                         ids=["randn", "normal", "rand"])
def test_samplers_of_reals_refuse_int_dtypes(make):
  with pytest.raises(TypeError, match=r"makes floats, not dtypes.int: use randint"): make(dtypes.int)
  assert make(dtypes.half).dtype == dtypes.half

def test_cat_and_stack_name_a_non_tensor_operand():
  with pytest.raises(TypeError, match=r"cat joins Tensors, but operand 1 is of type list"): Tensor.ones(2).cat([1.0, 2.0])
  with pytest.raises(TypeError, match=r"stack joins Tensors, but operand 2 is of type int"): Tensor.stack(Tensor.ones(2), Tensor.ones(2), 3)
  assert Tensor.cat(*[Tensor.ones(1), Tensor.zeros(1)]).tolist() == [1.0, 0.0]

def test_numpy_array_index_is_an_index_tensor_as_in_torch():
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  t = Tensor(x)
  assert t[np.array([1, 0])].tolist() == x[np.array([1, 0])].tolist()
  assert t[:, np.array([True, False, True])].tolist() == x[:, np.array([True, False, True])].tolist()
  with pytest.raises(IndexError, match=r"index tensors must be int or bool"): t[np.array([0.5])]
  t[np.array([0]), np.array([2])] = 9
  x[np.array([0]), np.array([2])] = 9
  assert t.tolist() == x.tolist()

def test_full_takes_numpy_scalars():
  assert Tensor.full((2,), np.float32(3)).tolist() == [3.0, 3.0] and Tensor.full((2,), np.int64(3)).dtype == dtypes.int
  assert Tensor.ones(2).full_like(np.float32(2)).tolist() == [2.0, 2.0]
