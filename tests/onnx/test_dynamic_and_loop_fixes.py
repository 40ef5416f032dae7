"""Fixes from the ONNX sweep: ops on an axis that dynamic= makes symbolic (Concat, Slice, Gather with a symbolic-shaped index, Range
to a size read by Shape), a Loop that runs no iteration, and invalid Reshape targets. Each compares with onnxruntime or numpy."""
import numpy as np, pytest
from tinygrad import Tensor
from tinygrad.uop.ops import Variable
from tinygrad.onnx import OnnxRunner
onnx = pytest.importorskip("onnx")  # builds the models; a test-only dependency (requirements-test.txt)
ort = pytest.importorskip("onnxruntime")
helper, numpy_helper, TP = onnx.helper, onnx.numpy_helper, onnx.TensorProto
INT64_MAX = 2**63 - 1

def model(nodes, inputs, inits=None, outputs=("y",), opset=13):
  """inputs: {name: (onnx elem type, shape with names for dynamic dims)}; inits: {name: numpy value}"""
  g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
                        [helper.make_empty_tensor_value_info(o) for o in outputs],
                        [numpy_helper.from_array(np.asarray(v), n) for n, v in (inits or {}).items()])
  return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()

def oracle(m, feeds): return ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, feeds)[0]

def rand(*shape, seed=0): return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)

def assert_matches_onnxruntime(m, feeds_by_call, dynamic, jit=False):
  """one runner (or one jitted runner) for every call: with dynamic= the calls differ in the symbolic dimension's size"""
  runner = OnnxRunner(m, dynamic=dynamic)
  run = runner.jit() if jit else runner
  for feeds in feeds_by_call:
    want = oracle(m, feeds)
    got = run(feeds)["y"].numpy()
    assert got.shape == want.shape, f"{feeds_by_call.index(feeds)}: got shape {got.shape}, onnxruntime {want.shape}"
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)

# *** Concat: the empty-input check read a symbolic numel as a bool ***

@pytest.mark.parametrize("axis", [0, 1])
def test_concat_with_a_dynamic_batch(axis):
  m = model([helper.make_node("Concat", ["x", "x"], ["y"], axis=axis)], {"x": (TP.FLOAT, ["batch", 4])})
  assert_matches_onnxruntime(m, [{"x": rand(b, 4, seed=b)} for b in (3, 1, 5)], {"batch": 8})

def test_concat_with_a_dynamic_batch_under_jit():
  m = model([helper.make_node("Concat", ["x", "x"], ["y"], axis=1)], {"x": (TP.FLOAT, ["batch", 4])})
  assert_matches_onnxruntime(m, [{"x": rand(b, 4, seed=b)} for b in (3, 2, 5, 8)], {"batch": 8}, jit=True)

def test_concat_with_a_clamped_slice_of_a_dynamic_axis():
  # torch.cat([h, h[:, :2]], 1): the slice is min(2, T) long, and tinygrad's cat could not add the padded pieces back up
  nodes = [helper.make_node("Slice", ["x", "zero", "two", "one"], ["head"]), helper.make_node("Concat", ["x", "head"], ["y"], axis=1)]
  m = model(nodes, {"x": (TP.FLOAT, [2, "T", 4])}, {"zero": np.array([0]), "one": np.array([1]), "two": np.array([2])})
  assert_matches_onnxruntime(m, [{"x": rand(2, t, 4, seed=t)} for t in (5, 1, 2, 7)], {"T": 16})
  assert_matches_onnxruntime(m, [{"x": rand(2, t, 4, seed=t)} for t in (5, 3, 1, 7)], {"T": 16}, jit=True)

# *** Slice: the clamping compared the bounds with a symbolic axis size ***

def slice_model(start, end, step=1, name="cut"):
  inits = {"s": np.array([start]), "e": np.array([end]), "a": np.array([1]), "st": np.array([step])}
  return model([helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"], name=name)], {"x": (TP.FLOAT, [2, "T", 4])}, inits)

@pytest.mark.parametrize("start, end", [(1, -1), (0, INT64_MAX), (-1, INT64_MAX), (2, 4), (-3, INT64_MAX), (-2**63, -2), (3, 1)])
def test_slice_on_a_dynamic_axis(start, end):
  # T=1 and T=2 make most of these empty or clamped: the symbolic size must not go negative there
  assert_matches_onnxruntime(slice_model(start, end), [{"x": rand(2, t, 4, seed=t)} for t in (5, 1, 2, 7)], {"T": 16})

@pytest.mark.parametrize("start, end", [(1, -1), (-1, INT64_MAX)])
def test_slice_on_a_dynamic_axis_under_jit(start, end):
  assert_matches_onnxruntime(slice_model(start, end), [{"x": rand(2, t, 4, seed=t)} for t in (5, 3, 1, 9)], {"T": 16}, jit=True)

def test_slice_to_a_size_read_by_shape():
  # x[:, :T-1] as exporters write it: the end is the symbolic size itself, folded through Shape -> Gather -> Sub
  nodes = [helper.make_node("Shape", ["x"], ["sh"]), helper.make_node("Gather", ["sh", "one"], ["t"]),
           helper.make_node("Sub", ["t", "one"], ["e"]), helper.make_node("Slice", ["x", "zero", "e", "one"], ["y"])]
  m = model(nodes, {"x": (TP.FLOAT, [2, "T", 4])}, {"one": np.array([1]), "zero": np.array([0])})
  assert_matches_onnxruntime(m, [{"x": rand(2, t, 4, seed=t)} for t in (5, 1, 3)], {"T": 16})

def test_slice_to_a_bound_of_unknown_sign_names_the_node():
  # T-3 is negative (counts from the end) for T < 3 and not for larger T: one graph can't pick both
  nodes = [helper.make_node("Shape", ["x"], ["sh"]), helper.make_node("Gather", ["sh", "one"], ["t"]),
           helper.make_node("Sub", ["t", "three"], ["e"]), helper.make_node("Slice", ["x", "zero", "e", "one"], ["y"], name="cut")]
  m = model(nodes, {"x": (TP.FLOAT, [2, "T", 4])}, {"one": np.array([1]), "zero": np.array([0]), "three": np.array([3])})
  with pytest.raises(NotImplementedError, match=r"Slice 'cut' on axis 1: the bound .* may be negative or not"):
    OnnxRunner(m, dynamic={"T": 16})({"x": rand(2, 5, 4)})

def test_slice_with_a_step_on_a_dynamic_axis_names_the_node():
  with pytest.raises(NotImplementedError, match=r"Slice 'cut' on axis 1: step 2 on an axis of symbolic size .* only step 1"):
    OnnxRunner(slice_model(0, INT64_MAX, step=2), dynamic={"T": 16})({"x": rand(2, 5, 4)})

# *** Gather: a symbolic-shaped index tensor (an Embedding lookup with dynamic B, T) ***

@pytest.mark.parametrize("jit", [False, True])
def test_embedding_lookup_with_dynamic_ids(jit):
  table = rand(50, 4)
  m = model([helper.make_node("Gather", ["E", "ids"], ["y"], axis=0)], {"ids": (TP.INT64, ["B", "T"])}, {"E": table})
  run = OnnxRunner(m, dynamic={"B": 8, "T": 16})
  run = run.jit() if jit else run
  for b, t in ((2, 3), (4, 5), (1, 1), (3, 7)):
    ids = np.random.default_rng(b * t).integers(-50, 50, (b, t))
    np.testing.assert_equal(run({"ids": ids})["y"].numpy(), table[ids])

def test_tensor_index_with_a_symbolic_shaped_index():
  # the empty-index check (numel() == 0) read the symbolic numel as a bool
  table = rand(10, 3)
  n = Variable("n", 1, 6)
  ids = Tensor([[4, 0, 9, 2, 7, 1]]).shrink((None, (0, n.bind(4))))
  np.testing.assert_equal(Tensor(table)[ids].numpy(), table[[[4, 0, 9, 2]]])

# *** Range to a size read by Shape: arange(seq_len) under dynamic= ***

def range_model(cast_limit_to=None):
  cast = [helper.make_node("Cast", ["n"], ["nc"], to=cast_limit_to)] if cast_limit_to else []
  nodes = [helper.make_node("Shape", ["x"], ["sh"]), helper.make_node("Gather", ["sh", "one"], ["n"]), *cast,
           helper.make_node("Range", ["z", "nc" if cast else "n", "d"], ["r"], name="positions"),
           helper.make_node("Cast", ["r"], ["rf"], to=TP.FLOAT), helper.make_node("Unsqueeze", ["rf", "ax"], ["ru"]),
           helper.make_node("Add", ["x", "ru"], ["y"])]
  start = np.array(0, np.float32 if cast_limit_to else np.int64)
  return model(nodes, {"x": (TP.FLOAT, [2, "T", 4])}, {"one": np.array(1), "z": start, "d": start + 1, "ax": np.array([0, 2])})

@pytest.mark.parametrize("jit", [False, True])
def test_range_to_a_dynamic_size(jit):
  assert_matches_onnxruntime(range_model(), [{"x": rand(2, t, 4, seed=t)} for t in (5, 2, 1, 9)], {"T": 16}, jit=jit)

def test_float_range_to_a_dynamic_size_names_the_node():
  with pytest.raises(NotImplementedError, match=r"Range 'positions'.*symbolic bound"):
    OnnxRunner(range_model(cast_limit_to=TP.FLOAT), dynamic={"T": 16})({"x": rand(2, 5, 4)})

# *** Loop without iterations: the scan output keeps the body's declared shape ***

def loop_model(scan_shape):
  V = helper.make_tensor_value_info
  body = helper.make_graph([helper.make_node("Add", ["acc_in", "x"], ["acc_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                            helper.make_node("Identity", ["acc_out"], ["scan_out"])], "body",
                           [V("i", TP.INT64, []), V("cond_in", TP.BOOL, []), V("acc_in", TP.FLOAT, [4])],
                           [V("cond_out", TP.BOOL, []), V("acc_out", TP.FLOAT, [4]), V("scan_out", TP.FLOAT, scan_shape)])
  g = helper.make_graph([helper.make_node("Loop", ["n", "c", "a0"], ["acc", "y"], body=body)], "loop",
                        [V("n", TP.INT64, []), V("c", TP.BOOL, []), V("a0", TP.FLOAT, [4]), V("x", TP.FLOAT, [4])],
                        [V("acc", TP.FLOAT, [4]), V("y", TP.FLOAT, None)])
  return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()

def loop_feeds(trips, cond):
  return {"n": np.array(trips, np.int64), "c": np.array(cond), "a0": np.ones(4, np.float32), "x": np.arange(4, dtype=np.float32)}

@pytest.mark.parametrize("trips, cond", [(0, True), (3, False), (3, True)])
def test_loop_without_iterations_has_the_declared_scan_shape(trips, cond):
  m, feeds = loop_model([4]), loop_feeds(trips, cond)
  got = OnnxRunner(m)(feeds)["y"].numpy()
  want = ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]  # y is the second output
  assert got.shape == want.shape and got.dtype == want.dtype
  np.testing.assert_equal(got, want)

def test_loop_without_iterations_and_no_declared_shape_is_flat():
  # nothing says what one iteration's output looks like: the empty stack stays (0,)
  assert OnnxRunner(loop_model(None))(loop_feeds(0, True))["y"].numpy().shape == (0,)

# *** Reshape: invalid targets are errors naming the node and the shape ***

def reshape_model(target):
  return model([helper.make_node("Reshape", ["x", "s"], ["y"], name="r")], {"x": (TP.FLOAT, [6])}, {"s": np.array(target, np.int64)})

@pytest.mark.parametrize("target, why", [([-1, -1], r"Reshape 'r': target shape \[-1, -1\] has more than one -1: at most one -1"),
                                         ([2, 0], r"Reshape 'r': target shape \[2, 0\] has a 0 .* at position 1, past the input's rank 1")])
def test_reshape_rejects_an_invalid_target(target, why):
  m, feeds = reshape_model(target), {"x": np.arange(6, dtype=np.float32)}
  with pytest.raises(Exception): oracle(m, feeds)  # onnxruntime refuses both too
  with pytest.raises(ValueError, match=why): OnnxRunner(m)(feeds)
