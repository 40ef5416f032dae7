"""Fixes from a sweep against onnxruntime: Shape under jit with a dynamic batch, RNN activation parameters, NaN in folded Equal, ops on
a dynamic batch (Resize, Upsample, Reshape, Split, NonZero), BatchNormalization's output type, integer reductions, out-of-range
constant indices, OnnxRunner(Tensor), TopK with a negative k, and clear errors for malformed nodes."""
import pathlib, numpy as np, pytest
from tinygrad import Tensor
from tinygrad.onnx import OnnxRunner
onnx = pytest.importorskip("onnx")  # builds the models; a test-only dependency (requirements-test.txt)
ort = pytest.importorskip("onnxruntime")  # the oracle
helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto
N = helper.make_node
ELEM = {np.dtype(np.float16): TP.FLOAT16, np.dtype(np.float32): TP.FLOAT, np.dtype(np.int32): TP.INT32, np.dtype(np.int64): TP.INT64}

def model(nodes, inputs, outputs=("y",), inits=None, opset=17):
  """inputs: {name: (numpy dtype, shape with names for dynamic axes)}"""
  g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, ELEM[np.dtype(dt)], s) for n, (dt, s) in inputs.items()],
                        [helper.make_empty_tensor_value_info(o) for o in outputs],
                        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
  m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
  m.ir_version = 8
  return m.SerializeToString()

def onnxruntime(m, feeds): return ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, feeds)

def assert_like_ort(got:dict, m, feeds, atol=1e-5):
  want = onnxruntime(m, feeds)
  assert len(got) == len(want)
  for g, w in zip(got.values(), want):
    g = g.numpy()
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
    np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), atol=atol, rtol=1e-5)

# 1. Shape under OnnxRunner.jit() with a dynamic batch

def test_jit_shape_follows_each_calls_batch():
  # the Shape tensor was built from the capture's bound size: every replay returned it
  m = model([N("Shape", ["x"], ["s"]), N("Size", ["x"], ["n"]), N("Shape", ["x"], ["t"], start=0, end=1), N("Mul", ["t", "two"], ["y"])],
            {"x": (np.float32, ["N", 3])}, ("s", "n", "y"), {"two": np.array([2])})
  run = OnnxRunner(m, dynamic={"N": 8}).jit()
  for n in [2, 5, 3, 4, 1]:
    feeds = {"x": np.ones((n, 3), np.float32)}
    assert_like_ort(run(feeds), m, feeds)

def test_jit_refuses_to_read_a_dynamic_size():
  # a shape value computed from Shape that folding can't follow (Floor) is read as numbers: under jit that froze the capture's batch
  m = model([N("Shape", ["x"], ["s"]), N("Cast", ["s"], ["f"], to=TP.FLOAT), N("Floor", ["f"], ["g"]), N("Cast", ["g"], ["i"], to=TP.INT64),
             N("Reshape", ["x", "i"], ["y"])], {"x": (np.float32, ["N", 3])})
  run = OnnxRunner(m, dynamic={"N": 8}).jit()
  with pytest.raises(RuntimeError, match="Reshape .* reads input 'i' .* dynamic= size"):
    for n in [2, 5, 3]: run({"x": np.ones((n, 3), np.float32)})

# 2. RNN/GRU/LSTM activations

def recurrent(op, gates, direction="forward", **attrs):
  d, h, i = 2 if direction == "bidirectional" else 1, 4, 3
  rng = np.random.default_rng(0)
  inits = {"W": rng.standard_normal((d, gates * h, i)).astype(np.float32), "R": (rng.standard_normal((d, gates * h, h)) * 0.5).astype(np.float32)}
  return model([N(op, ["x", "W", "R"], ["y"], hidden_size=h, direction=direction, **attrs)], {"x": (np.float32, [3, 2, i])}, inits=inits, opset=14)

@pytest.mark.parametrize("op, gates, direction, attrs", [
  ("RNN", 1, "forward", {"activations": ["HardSigmoid"]}),
  ("RNN", 1, "bidirectional", {"activations": ["Tanh", "LeakyRelu"], "activation_alpha": [0.3]}),
  ("RNN", 1, "bidirectional", {"activations": ["Elu", "HardSigmoid"], "activation_alpha": [0.5, 0.4], "activation_beta": [0.3]}),
  ("GRU", 3, "forward", {"activations": ["HardSigmoid", "LeakyRelu"]}),
  ("GRU", 3, "bidirectional", {"activations": ["HardSigmoid", "Tanh", "Sigmoid", "Affine"], "activation_alpha": [0.3, 0.5],
                               "activation_beta": [0.4, 0.1]}),
  ("LSTM", 4, "forward", {"activations": ["HardSigmoid", "LeakyRelu", "Elu"], "activation_alpha": [0.25]}),
])
def test_recurrent_activation_parameters(op, gates, direction, attrs):
  # HardSigmoid defaulted to alpha 1, beta 0 (ONNX: 0.2, 0.5), and alpha/beta were taken by position, not by the activations that use them
  m, feeds = recurrent(op, gates, direction, **attrs), {"x": (np.random.default_rng(1).standard_normal((3, 2, 3)) * 2).astype(np.float32)}
  assert_like_ort(OnnxRunner(m)(feeds), m, feeds)

@pytest.mark.parametrize("attrs, err, match", [
  ({"activations": ["ScaledTanh", "Tanh"]}, ValueError, "ScaledTanh needs its alpha and beta"),
  ({"activations": ["Sigmoid"]}, ValueError, r"activations \['Sigmoid'\] has 1 names; 1 direction\(s\) need 2"),
  ({"activations": ["Sigmoid", "Gelu"]}, NotImplementedError, "activation 'Gelu' is not one ONNX defines"),
])
def test_recurrent_activation_errors(attrs, err, match):
  with pytest.raises(err, match=match): OnnxRunner(recurrent("GRU", 3, **attrs))({"x": np.ones((3, 2, 3), np.float32)})

# 3. folded Equal

def test_folded_equal_of_nan_is_false():
  # Equal(c, c) folded `x is y`: True for a NaN, so the shape computed from it was wrong
  c = N("Constant", [], ["c"], value=numpy_helper.from_array(np.array([np.nan, 2.0], np.float32), "cv"))
  nodes = [c, N("Equal", ["c", "c"], ["e"]), N("Cast", ["e"], ["ei"], to=TP.INT64), N("Add", ["ei", "k"], ["shape"]),
           N("Reshape", ["x", "shape"], ["y"])]
  m, feeds = model(nodes, {"x": (np.float32, [8])}, ("e", "y"), {"k": np.array([2, 3])}), {"x": np.arange(8, dtype=np.float32)}
  assert_like_ort(OnnxRunner(m)(feeds), m, feeds)

def equal_to_batch(value):
  """Range(0, batch == value ? 10 : 5), the batch read through Shape"""
  nodes = [N("Shape", ["x"], ["s"], end=1), N("Equal", ["s", "v"], ["e"]), N("Where", ["e", "ten", "five"], ["l"]), N("Squeeze", ["l"], ["ls"]),
           N("Range", ["zero", "ls", "one"], ["y"])]
  inits = {"v": np.array([value]), "ten": np.array([10]), "five": np.array([5]), "zero": np.array(0), "one": np.array(1)}
  return model(nodes, {"x": (np.float32, ["N", 2])}, inits=inits)

@pytest.mark.parametrize("n", [3, 2])
def test_folded_equal_of_a_dynamic_size(n):
  # a dynamic batch compared with 3 folded to False whatever the batch
  m, feeds = equal_to_batch(3), {"x": np.ones((n, 2), np.float32)}
  assert_like_ort(OnnxRunner(m, dynamic={"N": 8})(feeds), m, feeds)

def test_folded_equal_outside_a_dynamic_sizes_range():
  # a batch is never -1: that folds without reading anything, so it works under jit too
  m, run = equal_to_batch(-1), OnnxRunner(equal_to_batch(-1), dynamic={"N": 8}).jit()
  for n in [2, 5, 3]: assert_like_ort(run(feeds := {"x": np.ones((n, 2), np.float32)}), m, feeds)

# 4. a dynamic batch (no jit)

def dyn(nodes, inits=None, opset=17, outputs=("y",)): return model(nodes, {"x": (np.float32, ["N", 3, 4, 4])}, outputs, inits, opset)

DYNAMIC = {
  "Upsample": dyn([N("Upsample", ["x", "s"], ["y"])], {"s": np.array([1, 1, 2, 2], np.float32)}, opset=9),
  "Resize scales": dyn([N("Resize", ["x", "", "s"], ["y"], mode="linear")], {"s": np.array([1, 1, 2, 1.5], np.float32)}, opset=13),
  "Resize sizes": dyn([N("Shape", ["x"], ["s"]), N("Slice", ["s", "z", "t"], ["nc"]), N("Concat", ["nc", "hw"], ["sz"], axis=0),
                       N("Resize", ["x", "", "", "sz"], ["y"])], {"z": np.array([0]), "t": np.array([2]), "hw": np.array([8, 8])}, opset=13),
  "Reshape [0,-1]": dyn([N("Reshape", ["x", "s"], ["y"])], {"s": np.array([0, -1])}),
  "Reshape [0,3,-1]": dyn([N("Reshape", ["x", "s"], ["y"])], {"s": np.array([0, 3, -1])}),
  "flatten to [N,-1]": dyn([N("Shape", ["x"], ["s"]), N("Gather", ["s", "z"], ["n"]), N("Unsqueeze", ["n", "z1"], ["nu"]),
                            N("Concat", ["nu", "m1"], ["t"], axis=0), N("Reshape", ["x", "t"], ["y"])],
                           {"z": np.array(0), "z1": np.array([0]), "m1": np.array([-1])}),
  "Split the batch": dyn([N("Split", ["x"], ["a", "b"], axis=0, num_outputs=2)], opset=18, outputs=("a", "b")),
  "NonZero": dyn([N("Greater", ["x", "h"], ["g"]), N("NonZero", ["g"], ["y"])], {"h": np.array(0.5, np.float32)}),
}

@pytest.mark.parametrize("name", DYNAMIC)
@pytest.mark.parametrize("n", [2, 3])
def test_dynamic_batch(name, n):
  feeds = {"x": np.random.default_rng(n).standard_normal((n, 3, 4, 4)).astype(np.float32)}
  assert_like_ort(OnnxRunner(DYNAMIC[name], dynamic={"N": 8})(feeds), DYNAMIC[name], feeds)

def test_resizing_a_dynamic_axis_is_refused():
  m = dyn([N("Resize", ["x", "", "s"], ["y"])], {"s": np.array([2, 1, 1, 1], np.float32)}, opset=13)
  with pytest.raises(NotImplementedError, match="axis of symbolic size N=2 to 2.0 times it .* can only keep its size"):
    OnnxRunner(m, dynamic={"N": 8})({"x": np.ones((2, 3, 4, 4), np.float32)})

# 5. BatchNormalization's output type

def test_batchnorm_output_has_the_inputs_type():
  inits = {k: np.full(3, v, np.float32) for k, v in dict(s=2.0, b=0.5, m=0.1, v=1.0).items()}
  m = model([N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])], {"x": (np.float16, [2, 3, 4])}, inits=inits, opset=15)
  feeds = {"x": np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float16)}
  assert_like_ort(OnnxRunner(m)(feeds), m, feeds, atol=1e-2)

# 6. integer reductions

@pytest.mark.parametrize("op", ["ReduceL2", "ReduceLogSumExp", "ReduceLogSum"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_int_reductions_keep_the_int_type(op, dtype, keepdims):
  # T -> T: onnxruntime truncates (sqrt 13 -> 3), sums LogSumExp's exp(x - max) in T (-5, -6, -6 -> -5) and gives the minimum for NaN
  x = np.array([[3, 4, 0], [2, 3, 0], [-5, -6, -6], [-5, -5, -100], [3, 3, 3], [-1, -1, -1], [0, 0, 0], [7, 7, 7]], dtype)
  m = model([N(op, ["x"], ["y"], keepdims=keepdims, axes=[1])], {"x": (dtype, list(x.shape))}, opset=13)
  assert_like_ort(OnnxRunner(m)({"x": x}), m, {"x": x}, atol=0)

# 7. constant indices out of range

@pytest.mark.parametrize("op, inputs, attrs, inits, match", [
  ("Gather", ["x", "i"], {"axis": 1}, {"i": np.array([1, 5])}, "index 5 is out of range for axis 1 of size 3"),
  ("Gather", ["x", "i"], {}, {"i": np.array([-3])}, "index -3 is out of range for axis 0 of size 2"),
  ("GatherElements", ["x", "i"], {"axis": 1}, {"i": np.array([[0, -4]])}, "index -4 is out of range for axis 1 of size 3"),
  ("GatherND", ["x", "i"], {}, {"i": np.array([[1, 3]])}, "index 3 is out of range for axis 1 of size 3"),
  ("ScatterND", ["x", "i", "u"], {}, {"i": np.array([[2, 0]]), "u": np.array([7], np.float32)}, "index 2 is out of range for axis 0 of size 2"),
  ("ScatterElements", ["x", "i", "u"], {"axis": 1}, {"i": np.array([[3]]), "u": np.array([[7]], np.float32)},
   "index 3 is out of range for axis 1 of size 3"),
])
def test_constant_indices_out_of_range_are_refused(op, inputs, attrs, inits, match):
  # a gather read 0 and a scatter dropped the update; onnxruntime refuses them
  m, feeds = model([N(op, inputs, ["y"], **attrs)], {"x": (np.float32, [2, 3])}, inits=inits), {"x": np.ones((2, 3), np.float32)}
  with pytest.raises(Exception): onnxruntime(m, feeds)
  with pytest.raises(IndexError, match=f"ONNX node 0 {op} '': {match}"): OnnxRunner(m)(feeds)

def test_constant_indices_in_range_still_gather():
  m = model([N("Gather", ["x", "i"], ["y"], axis=1)], {"x": (np.float32, [2, 3])}, inits={"i": np.array([[2, -3], [0, -1]])})
  feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}
  assert_like_ort(OnnxRunner(m)(feeds), m, feeds)

# 8. OnnxRunner(Tensor), debug=

def test_runner_takes_a_tensor_of_the_file(tmp_path, capsys):
  m = model([N("Relu", ["x"], ["y"], name="r")], {"x": (np.float32, [3])})
  (path := tmp_path / "m.onnx").write_bytes(m)
  feeds = {"x": np.array([-1, 2, 3], np.float32)}
  for t in (Tensor(m), Tensor(pathlib.Path(path))): assert_like_ort(OnnxRunner(t)(feeds), m, feeds)
  OnnxRunner(m)(feeds, debug=2)
  assert "0: Relu 'r'" in capsys.readouterr().out
  with pytest.raises(TypeError, match="Tensor of the model file's bytes"): OnnxRunner(Tensor([1.0, 2.0]))

# 9. TopK with a negative k

def test_topk_negative_k_is_a_value_error():
  m = model([N("TopK", ["x", "k"], ["y", "i"])], {"x": (np.float32, [2, 3])}, ("y", "i"), {"k": np.array([-1])}, opset=11)
  with pytest.raises(ValueError, match="k=-1 is out of range"): OnnxRunner(m)({"x": np.ones((2, 3), np.float32)})
  with pytest.raises(ValueError, match="k=-2 is out of range"): Tensor([[1.0, 2, 3]]).topk(-2)

# 10. malformed nodes

def x23(node, inits=None, opset=18, shape=(2, 3)): return model([node], {"x": (np.float32, list(shape))}, list(node.output), inits, opset)
W = {"w": np.ones((1, 1, 3, 3), np.float32)}

MALFORMED = [
  (x23(N("Resize", ["x", "", "s"], ["y"], mode="bilinear"), {"s": np.array([2, 2], np.float32)}), ValueError,
   "Resize '': mode 'bilinear' is not one of nearest, linear, cubic"),
  (x23(N("Resize", ["x", "", "s"], ["y"], nearest_mode="up"), {"s": np.array([2, 2], np.float32)}), ValueError, "nearest_mode 'up' is not one of"),
  (x23(N("Resize", ["x", "", "s"], ["y"]), {"s": np.array([2], np.float32)}), ValueError, r"scales has 1 values \[2.0\]; the 2 resized axes need 2"),
  (x23(N("Resize", ["x", "", "", "s"], ["y"]), {"s": np.array([4], np.int64)}), ValueError, r"sizes has 1 values \[4\]"),
  (x23(N("Upsample", ["x", "s"], ["y"]), {"s": np.array([2], np.float32)}, opset=9), ValueError, "Upsample: scales has 1 values"),
  (x23(N("Pad", ["x", "p"], ["y"], mode="symmetric"), {"p": np.array([1, 1, 1, 1])}), ValueError,
   "Pad: mode 'symmetric' is not one of constant, reflect, edge, wrap"),
  (x23(N("Pad", ["x", "p"], ["y"]), {"p": np.array([1, 1, 1])}), ValueError, r"Pad: pads \[1, 1, 1\] must have a begin and an end .* 4 values"),
  (x23(N("EyeLike", ["x"], ["y"]), shape=(2, 2, 2)), ValueError, r"EyeLike: the input must be 2-D, it has shape \(2, 2, 2\)"),
  (x23(N("Range", ["s", "l", "d"], ["y"]), {"s": np.array(0), "l": np.array(5), "d": np.array(0)}), ValueError, "Range '': Range delta is 0"),
  (x23(N("Gather", ["x", "i"], ["y"], axis="one"), {"i": np.array([0])}), ValueError,
   "Gather '': Gather attribute 'axis' is str 'one'; it must be an int"),
  (x23(N("Gather", ["x", "i", "i"], ["y"]), {"i": np.array([0])}), ValueError, r"Gather takes at most 2 inputs \(x, indices\), the node has 3"),
  (x23(N("Relu", ["x", "x", "x"], ["y"])), ValueError, r"Relu '': Relu takes at most 1 inputs \(x\), the node has 3"),
  (x23(N("Relu", ["x"], ["y"], foo=1)), ValueError, r"Relu has no attribute 'foo' \(it takes none\)"),
  (x23(N("Add", ["x"], ["y"])), ValueError, "Add needs 'b' .* leave unset"),
  (x23(N("Conv", ["x", "w"], ["y"], auto_pad="SAME"), W, shape=(1, 1, 3, 3)), ValueError,
   "Conv: auto_pad 'SAME' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID"),
  (x23(N("Conv", ["x", "w"], ["y"], pads=[1, 1]), W, shape=(1, 1, 3, 3)), ValueError,
   r"Conv: attribute pads \[1, 1\] has 2 values; 2 spatial axes need 4"),
  (x23(N("Conv", ["x", "w"], ["y"], strides=[1]), W, shape=(1, 1, 3, 3)), ValueError, "Conv: attribute strides"),
  (x23(N("Conv", ["x", "w"], ["y"], kernel_shape=[2, 2]), W, shape=(1, 1, 3, 3)), ValueError, "Conv: kernel_shape"),
  (x23(N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[1, 1]), shape=(1, 1, 3, 3)), ValueError, "MaxPool: attribute pads"),
  (x23(N("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], auto_pad="same"), shape=(1, 1, 3, 3)), ValueError, "AveragePool: auto_pad 'same'"),
  (x23(N("Split", ["x"], ["a", "b", "c", "d"], axis=1, num_outputs=4), shape=(2, 5)), ValueError,
   "Split '': num_outputs 4 cuts axis 1 of size 5 into chunks of 2, leaving -1 for the last"),
  (x23(N("Split", ["x"], ["a", "b"], axis=1, num_outputs=3), shape=(2, 6)), ValueError, "num_outputs 3, but the node has 2 outputs"),
  (x23(N("Split", ["x", "s"], ["a", "b"], axis=1), {"s": np.array([1, 1])}), ValueError, r"split \[1, 1\] adds up to 2, but axis 1 has size 3"),
  (x23(N("Split", ["x", "s"], ["a", "b"], axis=1), {"s": np.array([1, 1, 1])}), ValueError, "has 3 sizes, but the node has 2 outputs"),
  (x23(N("Split", ["x", "s"], ["a", "b"], axis=1), {"s": np.array([-1, 4])}), ValueError, "has a negative size"),
  (x23(N("Split", ["x"], ["a", "b"], axis=1), opset=13), ValueError, "axis 1 of size 3 does not split evenly into 2 outputs"),
  (x23(N("Split", ["x"], ["a", "b"], axis=1, split=[2, 2]), opset=11), ValueError, r"split \[2, 2\] adds up to 4"),
]

@pytest.mark.parametrize("m, err, match", MALFORMED)
def test_malformed_nodes_are_explained(m, err, match):
  shape = [d.dim_value for d in onnx.load_from_string(m).graph.input[0].type.tensor_type.shape.dim]
  feeds = {"x": np.ones(shape, np.float32)}
  with pytest.raises(Exception): onnxruntime(m, feeds)  # onnxruntime refuses each of them too
  with pytest.raises(err, match=match): OnnxRunner(m)(feeds)

@pytest.mark.parametrize("n, num", [(3, 4), (6, 4), (7, 3)])
def test_split_num_outputs_chunks(n, num):
  # ceil(n / num) each, the last what is left (possibly empty), as onnxruntime
  m = x23(N("Split", ["x"], [f"o{k}" for k in range(num)], axis=1, num_outputs=num), shape=(2, n))
  feeds = {"x": np.arange(2 * n, dtype=np.float32).reshape(2, n)}
  assert_like_ort(OnnxRunner(m)(feeds), m, feeds)

def test_resize_tf_half_pixel_for_nn():
  # opset 11's coordinate mode: (x + 0.5) / scale, was refused as unknown
  m = x23(N("Resize", ["x", "r", "s"], ["y"], coordinate_transformation_mode="tf_half_pixel_for_nn"),
          {"r": np.array([], np.float32), "s": np.array([1, 1, 1.7, 2.5], np.float32)}, opset=11, shape=(1, 1, 3, 4))
  feeds = {"x": np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)}
  assert_like_ort(OnnxRunner(m)(feeds), m, feeds)
