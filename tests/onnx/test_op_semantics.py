"""Op semantics the backend node tests leave out, each checked against onnxruntime or the ONNX reference evaluator: float16
normalisation computed in float32 (stash_type), reductions with noop_with_empty_axes, integer ReduceMean, Softplus of large inputs,
LayerNormalization's output types."""
import numpy as np, pytest
from tinygrad.onnx import OnnxRunner
onnx = pytest.importorskip("onnx")  # builds the models; a test-only dependency (requirements-test.txt)
helper, TP = onnx.helper, onnx.TensorProto
ELEM = {np.dtype(np.float16): TP.FLOAT16, np.dtype(np.float32): TP.FLOAT, np.dtype(np.float64): TP.DOUBLE, np.dtype(np.int64): TP.INT64,
        np.dtype(np.int32): TP.INT32}

def one_node(op, feeds, opset, out=(("y", None),), **attrs):
  """a model of one node; out: (name, element type or None for the first input's)"""
  first = ELEM[next(iter(feeds.values())).dtype]
  g = helper.make_graph([helper.make_node(op, list(feeds), [n for n, _ in out], **attrs)], "g",
                        [helper.make_tensor_value_info(n, ELEM[a.dtype], a.shape) for n, a in feeds.items()],
                        [helper.make_tensor_value_info(n, t or first, None) for n, t in out])
  return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()

def onnxruntime(m, feeds):
  ort = pytest.importorskip("onnxruntime")  # optional oracle
  return ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, feeds)

def reference(m, feeds):
  from onnx.reference import ReferenceEvaluator
  return ReferenceEvaluator(onnx.load_from_string(m)).run(None, feeds)

def tg(m, feeds): return [t.numpy() for t in OnnxRunner(m)(feeds).values()]

@pytest.mark.parametrize("op, opset, attrs", [("GroupNormalization", 21, {"num_groups": 2}), ("InstanceNormalization", 17, {})])
def test_float16_normalization_computes_in_float32(op, opset, attrs):
  # |x| up to ~800: sums of squares past float16's 65504 would turn every output into 0 (or NaN)
  x = (np.random.default_rng(0).standard_normal((2, 4, 300)) * 200).astype(np.float16)
  feeds = {"x": x, "s": np.linspace(0.5, 2, 4).astype(np.float16), "b": np.linspace(-1, 1, 4).astype(np.float16)}
  m = one_node(op, feeds, opset, **attrs)
  got, want = tg(m, feeds)[0], onnxruntime(m, feeds)[0]
  assert got.dtype == np.float16
  np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)

@pytest.mark.parametrize("op", ["ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum"])
def test_reduce_noop_with_empty_axes_keeps_the_elementwise_part(op):
  # no axes and noop_with_empty_axes=1 skip the reduction only: ReduceL1 is |x|, ReduceL2 sqrt(x^2), ReduceSumSquare x^2, ReduceLogSum log x
  x = np.array([[-2.0, 0.5], [3.0, -0.25]], np.float32)
  feeds = {"x": np.abs(x) if op == "ReduceLogSum" else x}
  m = one_node(op, feeds, 18, noop_with_empty_axes=1)
  np.testing.assert_allclose(tg(m, feeds)[0], reference(m, feeds)[0], rtol=1e-6)

@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_int_reduce_mean_truncates_toward_zero(dtype):
  # T -> T: the sum divided with truncation, as onnxruntime: rows -5/3, -4/3 and -4/3 give -1 (flooring would give -2), all -13/9 -1
  x = np.array([[-1, -2, -2], [-5, 1, 0], [1, -2, -3]], dtype)
  for axes in ([1], None):
    feeds = {"x": x}
    m = one_node("ReduceMean", feeds, 13, keepdims=0, **({} if axes is None else {"axes": axes}))
    got, want = tg(m, feeds)[0], onnxruntime(m, feeds)[0]
    assert got.dtype == dtype
    np.testing.assert_equal(got, want)
  np.testing.assert_equal(want, -1)

def test_softplus_is_accurate_at_both_ends():
  # ln(exp(x) + 1) taken literally overflows float32 from x = 89 on, and far below 0 it is exp(x), which 1 + exp(x) rounds away
  feeds = {"x": np.array([-100, -20, 0, 20, 80, 89, 100, 1e4], np.float32)}
  m = one_node("Softplus", feeds, 17)
  np.testing.assert_allclose(tg(m, feeds)[0], onnxruntime(m, feeds)[0], rtol=1e-6, atol=1e-30)

def test_layer_normalization_mean_and_inv_std_dev_are_stash_type():
  # Mean and InvStdDev are of type U, stash_type's (float32 by default), whatever X's type; Y is X's
  feeds = {"x": np.random.default_rng(0).standard_normal((2, 3, 4)), "s": np.linspace(0.5, 2, 4)}
  m = one_node("LayerNormalization", feeds, 17, out=(("y", TP.DOUBLE), ("mean", TP.FLOAT), ("inv", TP.FLOAT)), axis=1)
  got, want = tg(m, feeds), onnxruntime(m, feeds)
  assert [g.dtype for g in got] == [w.dtype for w in want] == [np.float64, np.float32, np.float32]
  for g, w in zip(got, want): np.testing.assert_allclose(g, w, rtol=1e-5)
