"""OnnxRunner on models built with onnx.helper: named inputs and outputs, input checks, opset-versioned ops, ONNX Pow typing, custom
ops through the tg_onnx_ops plugin hook, external data, the CLI. numpy is the oracle."""
import os, subprocess, sys
import numpy as np, pytest
from tinygrad.onnx import OnnxRunner, UnsupportedOp
from tinygrad.nn.onnx import OnnxRunner as CompatRunner
onnx = pytest.importorskip("onnx")  # builds the models; a test-only dependency (requirements-test.txt)
helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto

def model(nodes, inputs, outputs, inits=(), opset=17, domains=()):
  g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
  return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]).SerializeToString()

def vi(name, elem, shape): return helper.make_tensor_value_info(name, elem, shape)

def test_named_inputs_and_outputs():
  m = model([helper.make_node("Add", ["a", "b"], ["sum"]), helper.make_node("Mul", ["a", "b"], ["prod"])],
            [vi("a", TP.FLOAT, [3]), vi("b", TP.FLOAT, [3])], [vi("prod", TP.FLOAT, [3]), vi("sum", TP.FLOAT, [3])])
  a, b = np.array([1, 2, 3], np.float32), np.array([4, 5, 6], np.float32)
  out = OnnxRunner(m)(a=a, b=b)
  assert list(out) == ["prod", "sum"]
  np.testing.assert_equal(out["prod"].numpy(), a * b)
  np.testing.assert_equal(out["sum"].numpy(), a + b)
  assert CompatRunner is OnnxRunner

@pytest.mark.parametrize("feeds, err, match", [
  ({}, ValueError, r"missing model inputs \['x'\]"),
  ({"x": np.zeros((2, 3), np.float32), "y": np.zeros(1)}, ValueError, r"unknown inputs \['y'\]"),
  ({"x": np.zeros((2, 3), np.int32)}, TypeError, "input 'x' is dtypes.int, the model declares FLOAT"),
  ({"x": np.zeros((2, 4), np.float32)}, ValueError, r"input 'x' has shape \(2, 4\), the model declares \('N', 3\)"),
  ({"x": np.zeros((3,), np.float32)}, ValueError, "the model declares rank 2"),
])
def test_bad_inputs_are_named(feeds, err, match):
  m = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", TP.FLOAT, ["N", 3])], [vi("y", TP.FLOAT, ["N", 3])])
  with pytest.raises(err, match=match): OnnxRunner(m)(feeds)

def test_named_dimension_must_agree_across_inputs():
  m = model([helper.make_node("Add", ["a", "b"], ["y"])], [vi("a", TP.FLOAT, ["N"]), vi("b", TP.FLOAT, ["N"])], [vi("y", TP.FLOAT, ["N"])])
  with pytest.raises(ValueError, match="dimension 'N' is 2 in one input and 3 in input 'b'"):
    OnnxRunner(m)(a=np.ones(2, np.float32), b=np.ones(3, np.float32))

def test_softmax_semantics_follow_the_opset():
  # opset < 13 coerces to 2-D at axis (a softmax over all trailing axes); 13 and later is one axis
  x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
  def run(opset):
    m = model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [vi("x", TP.FLOAT, [2, 3, 4])], [vi("y", TP.FLOAT, [2, 3, 4])], opset=opset)
    return OnnxRunner(m)(x=x)["y"].numpy()
  flat = np.exp(x.reshape(2, 12)) / np.exp(x.reshape(2, 12)).sum(1, keepdims=True)
  np.testing.assert_allclose(run(11), flat.reshape(2, 3, 4), rtol=1e-5)
  np.testing.assert_allclose(run(13), np.exp(x) / np.exp(x).sum(1, keepdims=True), rtol=1e-5)

def test_attribute_that_became_an_input():
  # Unsqueeze: axes is an attribute before opset 13, an input from 13 on
  x = np.ones((2, 3), np.float32)
  old = model([helper.make_node("Unsqueeze", ["x"], ["y"], axes=[0, 3])], [vi("x", TP.FLOAT, [2, 3])], [vi("y", TP.FLOAT, None)], opset=11)
  axes = numpy_helper.from_array(np.array([0, 3], np.int64), "axes")
  new = model([helper.make_node("Unsqueeze", ["x", "axes"], ["y"])], [vi("x", TP.FLOAT, [2, 3])], [vi("y", TP.FLOAT, None)], [axes], opset=13)
  assert OnnxRunner(old)(x=x)["y"].shape == OnnxRunner(new)(x=x)["y"].shape == (1, 2, 3, 1)

def test_pow_int_base_float_exponent_is_int():
  # ONNX casts the float power back: truncation (2 ** 2.5 = 5.66 -> 5, 3 ** 2.5 = 15.59 -> 15), yet exact results stay exact through
  # a float32 power (9 ** 0.5 -> 3, 1000 ** (1/3) -> 10, though exp2(log2) gives 9.999999) and an integral exponent is an exact
  # integer power (3 ** 19 has 31 bits)
  from onnx.reference import ReferenceEvaluator
  m = model([helper.make_node("Pow", ["b", "e"], ["y"])], [vi("b", TP.INT64, [9]), vi("e", TP.FLOAT, [9])], [vi("y", TP.INT64, [9])])
  b, e = np.array([2, 3, 9, -2, 4, 2, 1000, 3, -3], np.int64), np.array([2.5, 2.5, 0.5, 3.0, 1.5, 0.5, 1 / 3, 19, -1], np.float32)
  y = OnnxRunner(m)(b=b, e=e)["y"].numpy()
  assert y.dtype == np.int64
  np.testing.assert_equal(y, ReferenceEvaluator(m).run(None, {"b": b, "e": e})[0])
  np.testing.assert_equal(y, [5, 15, 3, -8, 8, 1, 10, 3 ** 19, 0])

def test_unsupported_op_is_named():
  m = model([helper.make_node("NoSuchOp", ["x"], ["y"], domain="my.ops")], [vi("x", TP.FLOAT, [1])], [vi("y", TP.FLOAT, [1])], domains=["my.ops"])
  with pytest.raises(UnsupportedOp, match="'NoSuchOp' of domain 'my.ops' is not supported; a plugin can add it with the tg_onnx_ops hook"):
    OnnxRunner(m)(x=np.ones(1, np.float32))

class _TwicePlugin:
  """a third-party plugin adding an op in its own domain"""
  from tinygrad.plugins import hookimpl
  @hookimpl
  def tg_plugin_api_version(self): return (1, 0)
  @hookimpl
  def tg_onnx_ops(self): return {"my.ops.Twice": lambda x, factor=2: x * factor}

def test_plugin_op(plugins):
  import tinygrad.plugins.discovery as disc
  plugins.register("tinygrad.runtime.hooks_host", distribution="tg-renderers")  # the CPU device
  plugins.register(_TwicePlugin(), name="twice")
  assert "twice" in disc.registry().plugins, disc.registry().failures
  m = model([helper.make_node("Twice", ["x"], ["y"], domain="my.ops", factor=3)], [vi("x", TP.FLOAT, [2])], [vi("y", TP.FLOAT, [2])],
            domains=["my.ops"])
  np.testing.assert_equal(OnnxRunner(m)(x=np.array([1, 2], np.float32))["y"].numpy(), [3, 6])

def test_external_data_round_trip(tmp_path):
  w = np.random.default_rng(0).standard_normal((64, 8)).astype(np.float32)
  g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [vi("x", TP.FLOAT, [1, 64])], [vi("y", TP.FLOAT, [1, 8])],
                        [numpy_helper.from_array(w, "w")])
  m = helper.make_model(g)
  onnx.save_model(m, str(tmp_path / "m.onnx"), save_as_external_data=True, location="weights.bin", size_threshold=0)
  assert (tmp_path / "weights.bin").exists()
  x = np.ones((1, 64), np.float32)
  np.testing.assert_allclose(OnnxRunner(str(tmp_path / "m.onnx"))(x=x)["y"].numpy(), x @ w, rtol=1e-5)

def test_cli_describes_and_runs(tmp_path):
  m = model([helper.make_node("MatMul", ["x", "w"], ["t"]), helper.make_node("Relu", ["t"], ["y"])], [vi("x", TP.FLOAT, ["N", 2])],
            [vi("y", TP.FLOAT, ["N", 2])], [numpy_helper.from_array(np.eye(2, dtype=np.float32) * -1, "w")])
  (tmp_path / "m.onnx").write_bytes(m)
  np.save(tmp_path / "x.npy", np.array([[1, -2]], np.float32))
  r = subprocess.run([sys.executable, "-m", "tinygrad.onnx", str(tmp_path / "m.onnx"), "--input", f"x={tmp_path / 'x.npy'}", "--benchmark", "2"],
                     capture_output=True, text=True, timeout=240, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
  assert r.returncode == 0, r.stderr
  assert "x: FLOAT (N, 2)" in r.stdout and "MatMul 1, Relu 1" in r.stdout, r.stdout
  assert "y: float32 (1, 2) [0. 2.]" in r.stdout and "benchmark: 2 runs under TinyJit" in r.stdout, r.stdout

def test_ops_that_make_tensors_use_the_runners_device():
  # EyeLike and Range build tensors from nothing (an arange, an identity): on a runner for another device they must land there too
  from tinygrad import Device
  m = model([helper.make_node("EyeLike", ["x"], ["e"]), helper.make_node("Add", ["x", "e"], ["s"]),
             helper.make_node("Range", ["start", "limit", "delta"], ["r"]), helper.make_node("Add", ["s", "r"], ["y"])],
            [vi("x", TP.FLOAT, [3, 3]), vi("start", TP.FLOAT, []), vi("limit", TP.FLOAT, []), vi("delta", TP.FLOAT, [])], [vi("y", TP.FLOAT, [3, 3])])
  before = Device.DEFAULT
  other = "PYTHON" if before != "PYTHON" else "CPU"
  out = OnnxRunner(m, device=other)({"x": np.ones((3, 3), np.float32), "start": np.float32(0), "limit": np.float32(3), "delta": np.float32(1)})["y"]
  assert out.device == other and Device.DEFAULT == before
  np.testing.assert_equal(out.numpy(), np.ones((3, 3)) + np.eye(3) + np.arange(3))

def _reshape_model():
  # x reshaped to (-1, floor(width / 2)): the size goes Shape -> Gather -> Cast -> Div -> Floor (not folded: computed) -> Concat; a
  # second Reshape takes its shape from the input s
  c = lambda name, v, dt=np.int64: numpy_helper.from_array(np.array(v, dt), name)
  nodes = [helper.make_node("Shape", ["x"], ["sh"]), helper.make_node("Gather", ["sh", "one"], ["w"]),
           helper.make_node("Cast", ["w"], ["wf"], to=TP.FLOAT), helper.make_node("Div", ["wf", "two"], ["h"]),
           helper.make_node("Floor", ["h"], ["hf"]), helper.make_node("Cast", ["hf"], ["hi"], to=TP.INT64),
           helper.make_node("Concat", ["minus1", "hi"], ["shape"], axis=0), helper.make_node("Reshape", ["x", "shape"], ["y"]),
           helper.make_node("Reshape", ["x", "s"], ["z"], name="by_input")]
  inits = [c("one", [1]), c("two", [2.0], np.float32), c("minus1", [-1])]
  return model(nodes, [vi("x", TP.FLOAT, [2, 6]), vi("s", TP.INT64, [2])], [vi("y", TP.FLOAT, None), vi("z", TP.FLOAT, None)], inits)

def test_jit_reads_shapes_but_refuses_values_of_inputs():
  # sizes computed from shapes and constants are the same every call: under jit they are read as usual, call after call. A shape
  # read from an input's values would be frozen by the capture (replays run no python), so it raises, naming the node and input
  run = OnnxRunner(_reshape_model()).jit()
  with pytest.raises(RuntimeError, match="ONNX node 8 Reshape 'by_input' reads input 's' as python numbers .* Run the model without jit"):
    run(x=np.zeros((2, 6), np.float32), s=np.array([3, 4], np.int64))
  m = onnx.load_from_string(_reshape_model())
  del m.graph.node[8], m.graph.output[1], m.graph.input[1]
  run = OnnxRunner(m.SerializeToString()).jit()
  for i in range(4):
    x = np.arange(12, dtype=np.float32).reshape(2, 6) * (i + 1)
    np.testing.assert_equal(run(x=x)["y"].numpy(), x.reshape(4, 3))
  # without jit the same values are simply read
  np.testing.assert_equal(OnnxRunner(_reshape_model())(x=x, s=np.array([6, 2], np.int64))["z"].numpy(), x.reshape(6, 2))

def test_jit_scatternd_takes_each_calls_indices():
  # ScatterND's indices are data, not graph structure: one capture serves any indices (negative ones and repeats included: later
  # rows win under 'none', every row counts under the reductions), as onnxruntime computes them
  ort = pytest.importorskip("onnxruntime")
  rng = np.random.default_rng(1)
  for reduction in ["none", "add", "mul", "max", "min"]:
    m = model([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)],
              [vi("x", TP.FLOAT, [5, 3, 2]), vi("i", TP.INT64, [4, 2]), vi("u", TP.FLOAT, [4, 2])], [vi("y", TP.FLOAT, None)], opset=18)
    run, sess = OnnxRunner(m).jit(), ort.InferenceSession(m, providers=["CPUExecutionProvider"])
    for _ in range(4):
      feeds = {"x": rng.standard_normal((5, 3, 2)).astype(np.float32), "u": rng.standard_normal((4, 2)).astype(np.float32),
               "i": np.stack([rng.integers(-5, 5, 4), rng.integers(-3, 3, 4)], -1)}
      feeds["i"][3] = feeds["i"][0]  # a repeated row
      np.testing.assert_allclose(run(feeds)["y"].numpy(), sess.run(["y"], feeds)[0], rtol=1e-6, err_msg=reduction)

@pytest.mark.parametrize("order, match", [
  ("a b", "ONNX node 0 Add 'first' reads input 'zz' before it is defined: it is not a graph input, an initializer or the output of any"),
  ("b a", "ONNX node 0 Relu 'second' reads input 't' before it is defined: it is produced by node 1 Add 'first': the nodes must be in"),
  ("a", "graph 'g' output 'y' is not a graph input, an initializer or the output of any node"),
])
def test_undefined_names_are_explained(order, match):
  nodes = {"a": helper.make_node("Add", ["x", "zz" if order == "a b" else "x"], ["t"], name="first"),
           "b": helper.make_node("Relu", ["t"], ["y"], name="second")}
  m = model([nodes[k] for k in order.split()], [vi("x", TP.FLOAT, [2])], [vi("y", TP.FLOAT, [2])])
  with pytest.raises(ValueError, match=match): OnnxRunner(m)(x=np.ones(2, np.float32))
