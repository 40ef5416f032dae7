"""Op semantics a sweep against onnxruntime found wrong, each with hand-checked or numpy values: exclusive CumSum, float fmod, Slice
clamping, ConvTranspose output_shape, Range in double, bicubic GridSample at the border, wide wrap padding, opset-10 Resize,
MaxPool indices, and the python-value folding of shape computations (integer Div, Cast, int overflow)."""
import numpy as np, pytest
from tinygrad.onnx import OnnxRunner
onnx = pytest.importorskip("onnx")  # builds the models; a test-only dependency (requirements-test.txt)
helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto
ELEM = {np.dtype(np.float16): TP.FLOAT16, np.dtype(np.float32): TP.FLOAT, np.dtype(np.float64): TP.DOUBLE,
        np.dtype(np.int32): TP.INT32, np.dtype(np.int64): TP.INT64}

def model(nodes, feeds, opset, inits=None):
  """nodes reading feeds (graph inputs) and inits (initializers); the last node's first output is the graph output "y" """
  g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, ELEM[a.dtype], a.shape) for n, a in feeds.items()],
                        [helper.make_empty_tensor_value_info("y")],
                        [numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()])
  return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()

def run(m, feeds=None): return OnnxRunner(m)(feeds or {})["y"].numpy()

def const(name, value): return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name + "_v"))

@pytest.mark.parametrize("x, reverse, want", [([np.inf, 1, 2], 0, [0, np.inf, np.inf]), ([np.inf, 1, 2], 1, [3, 2, 0]),
                                               ([1e8, 1, 2, 3], 1, [6, 5, 3, 0])])
def test_exclusive_cumsum_shifts_the_sums(x, reverse, want):
  # inclusive minus x gave inf - inf = NaN, and 1e8 + 6 - 1e8 rounds to 8 in float32
  feeds = {"x": np.array(x, np.float32)}
  m = model([helper.make_node("CumSum", ["x", "a"], ["y"], exclusive=1, reverse=reverse)], feeds, 14, {"a": np.array(0, np.int64)})
  np.testing.assert_equal(run(m, feeds), np.array(want, np.float32))

@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_float_fmod_is_exact(dtype):
  # a - trunc(a/b)*b rounds the quotient (1e6+0.3 fmod 0.7 came out 0.625) and gives NaN for b = inf
  big, tiny = (6e4, 6e-8) if dtype is np.float16 else (3e38, 1e-45) if dtype is np.float32 else (1.7e308, 5e-324)
  a = np.array([big / 7 + 0.3, -big / 3, big / 11, 3, -0.0, -5.5, big, big, 2, np.inf, 1], dtype)
  b = np.array([0.7, 0.3, 0.1, np.inf, 2, -np.inf, tiny, -7.3, 0, 1, np.nan], dtype)
  with np.errstate(all="ignore"): want = np.fmod(a, b)
  got = run(model([helper.make_node("Mod", ["a", "b"], ["y"], fmod=1)], {"a": a, "b": b}, 13), {"a": a, "b": b})
  assert got.dtype == dtype
  np.testing.assert_equal(got, want)
  number = ~np.isnan(want)
  np.testing.assert_equal(np.signbit(got[number]), np.signbit(want[number]))  # -0.0 keeps the dividend's sign

def slice_model(feeds, start, end, step):
  inits = {"s": np.array([start]), "e": np.array([end]), "ax": np.array([0]), "st": np.array([step])}
  return model([helper.make_node("Slice", ["x", "s", "e", "ax", "st"], ["y"])], feeds, 13, inits)

def test_slice_clamps_like_onnx():
  # with a negative step start clamps to [0, n-1] and end to [-1, n-1]: start -6 of 5 is element 0, not nothing
  feeds = {"x": np.arange(5, dtype=np.float32)}
  for start, end, step, want in [(-6, -7, -1, [0]), (9, -9, -2, [4, 2, 0]), (-9, 9, 2, [0, 2, 4]), (2, -9, -1, [2, 1, 0])]:
    np.testing.assert_equal(run(slice_model(feeds, start, end, step), feeds), np.array(want, np.float32))

def test_folded_slice_clamps_like_onnx():
  # the python value of a sliced constant (what Range reads) follows the same clamping: [10..14][-6:-7:-1] is [10]
  nodes = [const("x", np.arange(10, 15)), helper.make_node("Slice", ["x", "s", "e", "ax", "st"], ["n"]),
           helper.make_node("Squeeze", ["n"], ["l"]), helper.make_node("Range", ["z", "l", "d"], ["y"])]
  inits = {"s": np.array([-6]), "e": np.array([-7]), "ax": np.array([0]), "st": np.array([-1]), "z": np.array(0), "d": np.array(1)}
  np.testing.assert_equal(run(model(nodes, {}, 13, inits)), np.arange(10))

def test_conv_transpose_output_shape_grows_at_the_end():
  # natural width (3-1)*3 + 2 = 8, asked for 10: onnxruntime and the reference evaluator append both extra columns
  feeds = {"x": np.array([[[[1, 2, 3]]]], np.float32), "w": np.ones((1, 1, 1, 2), np.float32)}
  m = model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[1, 3], output_shape=[1, 10])], feeds, 17)
  np.testing.assert_equal(run(m, feeds)[0, 0, 0], [1, 1, 0, 2, 2, 0, 3, 3, 0, 0])

@pytest.mark.parametrize("start, limit, delta", [(16777216.0, 16777222.0, 1.0), (0.1, 0.5, 0.1)])
def test_double_range_is_computed_in_double(start, limit, delta):
  # float32 steps skip 16777217 and round 0.1 to 0.10000000149
  inits = {"s": np.array(start), "l": np.array(limit), "d": np.array(delta)}
  got = run(model([helper.make_node("Range", ["s", "l", "d"], ["y"])], {}, 11, inits))
  assert got.dtype == np.float64
  np.testing.assert_equal(got, [start + i * delta for i in range(len(got))])
  assert len(got) == round((limit - start) / delta)

def test_bicubic_border_clips_each_tap():
  # X[y, x] = 9y + x, 7 x 9. Grid (1, 0) is source (8.5, 3): taps x = 7, 8, 9, 10 clip to 7, 8, 8, 8, so the result is
  # X[3, 8] + w(1.5) * (X[3, 7] - X[3, 8]) with the cubic weight w(1.5) = a(1.5^3 - 5*1.5^2 + 8*1.5 - 4) = -0.09375 (a = -0.75);
  # clipping the coordinate to 8 first read X[3, 8] = 35 alone
  feeds = {"x": (9 * np.arange(7)[:, None] + np.arange(9)).astype(np.float32).reshape(1, 1, 7, 9),
           "g": np.array([[[[1.0, 0.0]]]], np.float32)}
  m = model([helper.make_node("GridSample", ["x", "g"], ["y"], mode="bicubic", padding_mode="border")], feeds, 16)
  np.testing.assert_allclose(run(m, feeds).ravel(), [35.09375], rtol=1e-6)

@pytest.mark.parametrize("pads", [[0, 4, 0, 5], [0, 7, 0, 0], [0, -1, 0, 7]])
def test_wrap_pad_wider_than_the_axis_repeats_it(pads):
  # np.pad(mode="wrap") and onnxruntime repeat the axis as often as needed; negative pads crop first
  feeds = {"x": np.arange(8, dtype=np.float32).reshape(2, 4)}
  m = model([helper.make_node("Pad", ["x", "p"], ["y"], mode="wrap")], feeds, 19, {"p": np.array(pads, np.int64)})
  cropped = feeds["x"][:, max(-pads[1], 0):]
  np.testing.assert_equal(run(m, feeds), np.pad(cropped, ((0, 0), (max(pads[1], 0), pads[3])), mode="wrap"))

def test_opset10_resize_nearest_floors():
  # opset 10 Resize is Upsample: asymmetric coordinates, floored (x / 1.5 for x = 1 is 0.67: column 0, not 1)
  feeds = {"x": np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)}
  m = model([helper.make_node("Resize", ["x", "s"], ["y"])], feeds, 10, {"s": np.array([1, 1, 1, 1.5], np.float32)})
  np.testing.assert_equal(run(m, feeds).ravel(), [0, 0, 1, 2, 3, 3, 4, 5])

def test_maxpool_indices_never_point_at_the_padding():
  # every element is -inf like the padding: each window's index is its first real element (onnxruntime)
  feeds = {"x": np.full((1, 1, 2, 2), -np.inf, np.float32)}
  g = helper.make_graph([helper.make_node("MaxPool", ["x"], ["v", "y"], kernel_shape=[2, 2], pads=[1, 1, 1, 1])], "g",
                        [helper.make_tensor_value_info("x", TP.FLOAT, [1, 1, 2, 2])], [helper.make_empty_tensor_value_info("y")])
  m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)]).SerializeToString()
  np.testing.assert_equal(run(m, feeds).ravel(), [0, 0, 1, 0, 0, 1, 2, 2, 3])

def range_of(nodes, limit):
  """a model whose output is Range(0, limit, 1) in int64, limit the (folded) value of the nodes' output `limit`"""
  return model(nodes + [helper.make_node("Cast", [limit], ["l"], to=TP.INT64), helper.make_node("Range", ["z", "l", "d"], ["y"])], {}, 18,
               {"z": np.array(0), "d": np.array(1)})

def test_folded_integer_div_truncates():
  # Div of ints is C's: -7 / 2 = -3 (flooring gave -4); Range(-3, 0) has 3 elements
  nodes = [const("a", np.array(-7)), const("b", np.array(2)), helper.make_node("Div", ["a", "b"], ["s"]),
           helper.make_node("Range", ["s", "z", "d"], ["y"])]
  np.testing.assert_equal(run(model(nodes, {}, 18, {"z": np.array(0), "d": np.array(1)})), [-3, -2, -1])

@pytest.mark.parametrize("value, to, want", [(np.array(300), TP.UINT8, 44), (np.array(-1), TP.UINT16, 65535)])
def test_folded_cast_wraps_ints(value, to, want):
  nodes = [const("a", value), helper.make_node("Cast", ["a"], ["c"], to=to)]
  assert len(run(range_of(nodes, "c"))) == want

def test_folded_cast_rounds_to_float16():
  # 0.1 in float16 is 0.0999755859375, so Range(0, 3, it) has 31 elements (30 for 0.1)
  nodes = [const("a", np.array(0.1, np.float32)), helper.make_node("Cast", ["a"], ["h"], to=TP.FLOAT16),
           helper.make_node("Cast", ["h"], ["d"], to=TP.FLOAT), helper.make_node("Range", ["s", "l", "d"], ["y"])]
  got = run(model(nodes, {}, 18, {"s": np.array(0, np.float32), "l": np.array(3, np.float32)}))
  assert len(got) == 31

@pytest.mark.parametrize("dtype, a, b", [(np.int32, 65536, 65536), (np.int64, 2**62, 4)])
def test_folded_int_arithmetic_wraps(dtype, a, b):
  # a * b is 2^32 (2^64): 0 in two's complement, so (3 - 0) + 1 = 4 elements; unbounded python ints made it negative: none
  nodes = [const("a", np.array(a, dtype)), const("b", np.array(b, dtype)), helper.make_node("Mul", ["a", "b"], ["m"]),
           const("k", np.array(3, dtype)), helper.make_node("Sub", ["k", "m"], ["p"]), const("o", np.array(1, dtype)),
           helper.make_node("Add", ["p", "o"], ["q"])]
  assert len(run(range_of(nodes, "q"))) == 4
