"""com.microsoft contrib ops (the fusions onnxruntime's exporters emit) against onnxruntime, which implements them natively."""
import numpy as np, pytest
from tinygrad.onnx import OnnxRunner
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
helper, TP = onnx.helper, onnx.TensorProto
MS = "com.microsoft"
rng = np.random.default_rng(0)

def f32(*shape): return rng.standard_normal(shape).astype(np.float32)

CASES = {
  "Gelu": ([f32(2, 8)], {}),
  "FastGelu": ([f32(2, 8), f32(8)], {}),
  "BiasGelu": ([f32(2, 8), f32(8)], {}),
  "QuickGelu": ([f32(2, 8)], {"alpha": 1.5}),
  "FusedMatMul": ([f32(2, 3, 4), f32(2, 5, 4)], {"alpha": 0.5, "transB": 1}),
  "SkipLayerNormalization": ([f32(2, 3, 8), f32(2, 3, 8), f32(8), f32(8), f32(8)], {"epsilon": 1e-5}),
  "SkipSimplifiedLayerNormalization": ([f32(2, 3, 8), f32(2, 3, 8), f32(8)], {"epsilon": 1e-5}),
  "Attention": ([f32(2, 4, 8), f32(8, 24) * 0.3, f32(24), np.array([[1, 1, 1, 0], [1, 1, 0, 0]], np.int32)], {"num_heads": 2}),
}

@pytest.mark.parametrize("op", sorted(CASES))
def test_contrib_op_matches_onnxruntime(op):
  inputs, attrs = CASES[op]
  names = [f"i{k}" for k in range(len(inputs))]
  node = helper.make_node(op, names, ["y"], domain=MS, **attrs)
  elem = {np.float32: TP.FLOAT, np.int32: TP.INT32}
  g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, elem[a.dtype.type], a.shape) for n, a in zip(names, inputs)],
                        [helper.make_tensor_value_info("y", TP.FLOAT, None)])
  m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]).SerializeToString()
  want = ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(["y"], dict(zip(names, inputs)))[0]
  got = OnnxRunner(m)(dict(zip(names, inputs)))["y"].numpy()
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
