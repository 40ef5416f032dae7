"""The weak-type promotion examples of issue 3, through Tensor and UOp (python scalars are weakly typed)."""
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.uop.ops import UOp

def t(dt): return Tensor.ones(3, dtype=dt)

@pytest.mark.parametrize("make, expected", [
  (lambda: t(dtypes.int32) + 2, dtypes.int32),
  (lambda: t(dtypes.int32) + 2.5, dtypes.default_float),
  (lambda: t(dtypes.float16) + 0.5, dtypes.float16),
  (lambda: t(dtypes.bool) + 1, dtypes.default_int),
  (lambda: t(dtypes.uint8).pad(((1, 1),), value=1), dtypes.uint8),
  (lambda: t(dtypes.bool) + True, dtypes.bool),
  (lambda: 2 * t(dtypes.int8), dtypes.int8),
])
def test_tensor_promotion(make, expected):
  assert make().dtype is expected

def test_promotion_values():
  assert (t(dtypes.int32) + 2.5).tolist() == [3.5] * 3
  assert t(dtypes.uint8).pad(((1, 1),), value=1).tolist() == [1] * 5
  assert (t(dtypes.bool) + True).tolist() == [True] * 3

def test_default_float_is_settable():
  old = dtypes.default_float
  try:
    dtypes.default_float = dtypes.float16
    assert (t(dtypes.int32) + 2.5).dtype is dtypes.float16
  finally: dtypes.default_float = old

def test_uop_keeps_weak_index_math():
  r = UOp.range(4, 0)
  assert (r * 2 + 1).dtype is dtypes.weakint
  assert (UOp.const(dtypes.int32, 3) + 2).dtype is dtypes.int32
