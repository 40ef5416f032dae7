"""Reductions, arg-reductions, softmax family, TopK. Axes were an attribute and became an input (ReduceSum at 13, the rest at 18)."""
from __future__ import annotations
import math
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.device import is_dtype_supported
from tinygrad.onnx.ops.registry import op
from tinygrad.onnx.ops.common import norm_axes, norm_axis

def _mean(x, a, k):
  if dtypes.is_float(x.dtype): return x.mean(a, keepdim=k)
  # T -> T: an int mean is the sum divided with truncation toward zero, as onnxruntime and the reference (-9 / 6 -> -1)
  return x.sum(a, keepdim=k).div(math.prod(x.shape[i] for i in a), rounding_mode="trunc").cast(x.dtype)

def _work(x):
  """the float an int reduction computes its sqrt/log in: double for 64-bit ints where the device has it"""
  return dtypes.float64 if x.dtype.itemsize == 8 and is_dtype_supported(dtypes.float64, x.device) else dtypes.float32

def _to_int(y, dt):
  # T -> T as onnxruntime casts back: toward zero; NaN and -inf (the log of a sum <= 0) become the type's minimum, as x86 converts them
  return (y.isnan() | y.isinf()).where(dtypes.min(dt), y.trunc()).cast(dt)

def _l2(x, a, k):
  if dtypes.is_float(x.dtype): return (x * x).sum(a, keepdim=k).sqrt()
  return _to_int((x * x).sum(a, keepdim=k).cast(_work(x)).sqrt(), x.dtype)  # the squares summed in T, as onnxruntime

def _log_sum(x, a, k):
  if dtypes.is_float(x.dtype): return x.sum(a, keepdim=k).log()
  return _to_int(x.sum(a, keepdim=k).cast(_work(x)).log(), x.dtype)

def _log_sum_exp(x, a, k):
  if dtypes.is_float(x.dtype): return x.logsumexp(a, keepdim=k)
  # onnxruntime sums exp(x - max) in T: every term below 1 truncates away, leaving max + log(how many elements are the max)
  m = x.max(a, keepdim=True)
  y = _to_int(m.cast(_work(x)) + x.eq(m).sum(a, keepdim=True).cast(_work(x)).log(), x.dtype)
  return y if k else y.reshape([s for i, s in enumerate(y.shape) if i not in a])

_REDUCE = {
  "ReduceSum": lambda x, a, k: x.sum(a, keepdim=k), "ReduceMean": _mean,
  "ReduceMax": lambda x, a, k: x.max(a, keepdim=k) if x.dtype is not dtypes.bool else x.any(a, keepdim=k),
  "ReduceMin": lambda x, a, k: x.min(a, keepdim=k) if x.dtype is not dtypes.bool else x.all(a, keepdim=k),
  "ReduceProd": lambda x, a, k: x.prod(a, keepdim=k), "ReduceL1": lambda x, a, k: x.abs().sum(a, keepdim=k),
  "ReduceL2": _l2, "ReduceLogSum": _log_sum, "ReduceLogSumExp": _log_sum_exp, "ReduceSumSquare": lambda x, a, k: (x * x).sum(a, keepdim=k),
}

# noop_with_empty_axes skips only the reduction: what each op does to the elements around it still applies
_NOOP = {"ReduceL1": lambda x: x.abs(), "ReduceL2": lambda x: x.abs(), "ReduceSumSquare": lambda x: x * x, "ReduceLogSum": lambda x: x.log()}

def _reduce(name, x, ax, keepdims, noop_with_empty_axes):
  if not ax:
    if noop_with_empty_axes: return _NOOP.get(name, lambda x: x)(x)
    ax = list(range(x.ndim))
  ax = tuple(norm_axes(ax, x.ndim))
  if any(x.shape[a] == 0 for a in ax):  # an empty reduction gives the reduction's identity
    ident = {"ReduceSum": 0, "ReduceMean": math.nan, "ReduceProd": 1, "ReduceL1": 0, "ReduceL2": 0, "ReduceSumSquare": 0, "ReduceLogSum": -math.inf,
             "ReduceLogSumExp": -math.inf, "ReduceMax": -math.inf if dtypes.is_float(x.dtype) else dtypes.min(x.dtype),
             "ReduceMin": math.inf if dtypes.is_float(x.dtype) else dtypes.max(x.dtype)}[name]
    shape = [1 if i in ax else s for i, s in enumerate(x.shape)] if keepdims else [s for i, s in enumerate(x.shape) if i not in ax]
    return Tensor.full(shape, ident, dtype=x.dtype)
  return _REDUCE[name](x, ax, bool(keepdims))

def _register(name, since_input):
  @op(name, since=1)
  def attr_axes(x, axes=None, keepdims=1): return _reduce(name, x, axes, keepdims, 0)
  @op(name, since=since_input, ctx=True)
  def input_axes(ctx, x, axes=None, keepdims=1, noop_with_empty_axes=0):
    return _reduce(name, x, None if axes is None else ctx.ints(axes), keepdims, noop_with_empty_axes)

for _n in _REDUCE: _register(_n, 13 if _n == "ReduceSum" else 18)

def _arg(x, axis, keepdims, select_last_index, largest):
  a = norm_axis(axis, x.ndim)
  if select_last_index: x = x.flip(a)
  ret = (x.argmax(a, keepdim=bool(keepdims)) if largest else x.argmin(a, keepdim=bool(keepdims))).cast(dtypes.int64)
  return x.shape[a] - 1 - ret if select_last_index else ret

@op("ArgMax")
def argmax(x, axis=0, keepdims=1, select_last_index=0): return _arg(x, axis, keepdims, select_last_index, True)
@op("ArgMin")
def argmin(x, axis=0, keepdims=1, select_last_index=0): return _arg(x, axis, keepdims, select_last_index, False)

_HALF = (dtypes.float16, dtypes.bfloat16)  # computed in float32, rounded once

def _flat2d(fn):
  """opsets < 13 coerce the input to 2-D at `axis` and apply over the second axis"""
  def run(x, axis=1):
    a = norm_axis(axis, x.ndim)
    return fn(x.reshape(math.prod(x.shape[:a]), -1), 1).reshape(x.shape)
  return run

def _hardmax(x, a):
  return x.argmax(a, keepdim=True).eq(Tensor.arange(x.shape[a]).reshape([-1 if i == a else 1 for i in range(x.ndim)])).cast(x.dtype)

op("Softmax", since=1)(_flat2d(lambda x, a: x.softmax(a)))
op("LogSoftmax", since=1)(_flat2d(lambda x, a: x.log_softmax(a)))
op("Hardmax", since=1)(_flat2d(_hardmax))
op("Softmax", since=13)(lambda x, axis=-1: x.softmax(axis, dtype=dtypes.float32).cast(x.dtype) if x.dtype in _HALF else x.softmax(axis))
op("LogSoftmax", since=13)(lambda x, axis=-1: x.log_softmax(axis, dtype=dtypes.float32).cast(x.dtype) if x.dtype in _HALF else x.log_softmax(axis))
op("Hardmax", since=13)(lambda x, axis=-1: _hardmax(x, norm_axis(axis, x.ndim)))

def _topk(x, k, axis, largest, sorted_):
  a = norm_axis(axis, x.ndim)
  # ties keep the lower index first, as ONNX specifies: sort (value, index) by negating for the largest
  vals, idx = x.topk(k, a, largest=bool(largest))
  return vals, idx.cast(dtypes.int64)

@op("TopK", since=1)
def topk_v1(x, axis=-1, k=1): return _topk(x, k, axis, 1, 1)
@op("TopK", since=10, ctx=True)
def topk(ctx, x, k, axis=-1, largest=1, sorted=1): return _topk(x, ctx.ints(k)[0], axis, largest, sorted)
