"""ONNX models on tg's CPU device beside onnxruntime (CPU provider), in one run: a ResNet-18-shaped CNN (full channel widths,
64x64 input, BatchNormalization kept as nodes as exporters write it) and a small transformer encoder (2 layers, d=128, 4 heads,
sequence 64). Both are built with onnx.helper, so neither torch nor a download is needed. tg runs under TinyJit (OnnxRunner.jit);
figures are the median of N runs after a warm-up, and outputs are checked against onnxruntime.
Usage: python bench/onnx_models.py [runs, default 20]"""
import json, sys, time
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto as TP
import onnxruntime as ort
from tinygrad.onnx import OnnxRunner

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
rng = np.random.default_rng(0)

class Builder:
  def __init__(self): self.nodes, self.inits, self.n = [], [], 0
  def name(self, p): self.n += 1; return f"{p}{self.n}"
  def const(self, arr, p="w"):
    n = self.name(p); self.inits.append(numpy_helper.from_array(np.asarray(arr), n)); return n
  def node(self, op, ins, **attrs):
    out = self.name(op.lower()); self.nodes.append(helper.make_node(op, ins, [out], **attrs)); return out
  def model(self, x, shape, y, opset=17):
    g = helper.make_graph(self.nodes, "bench", [helper.make_tensor_value_info(x, TP.FLOAT, shape)],
                          [helper.make_tensor_value_info(y, TP.FLOAT, None)], self.inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])

def resnet18(hw=64) -> onnx.ModelProto:
  b = Builder()
  def conv_bn(x, cin, cout, k, s, relu=True):
    w = b.const((rng.standard_normal((cout, cin, k, k)) * (2 / (cin * k * k)) ** 0.5).astype(np.float32))
    y = b.node("Conv", [x, w], kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4)
    bn = [b.const(v.astype(np.float32)) for v in (rng.uniform(0.5, 1.5, cout), rng.normal(0, 0.1, cout), rng.normal(0, 0.1, cout),
                                                   rng.uniform(0.5, 1.5, cout))]
    y = b.node("BatchNormalization", [y, *bn], epsilon=1e-5)
    return b.node("Relu", [y]) if relu else y
  y = conv_bn("x", 3, 64, 7, 2)
  y = b.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
  cin = 64
  for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
    for i in range(2):
      s = stride if i == 0 else 1
      z = conv_bn(conv_bn(y, cin, cout, 3, s), cout, cout, 3, 1, relu=False)
      short = conv_bn(y, cin, cout, 1, s, relu=False) if (s != 1 or cin != cout) else y
      y, cin = b.node("Relu", [b.node("Add", [z, short])]), cout
  y = b.node("Flatten", [b.node("GlobalAveragePool", [y])])
  y = b.node("Gemm", [y, b.const((rng.standard_normal((512, 1000)) * 0.03).astype(np.float32)), b.const(np.zeros(1000, np.float32))])
  return b.model("x", [1, 3, hw, hw], y)

def transformer(seq=64, d=128, heads=4, ff=512, layers=2) -> onnx.ModelProto:
  b = Builder()
  def lin(x, i, o): return b.node("Add", [b.node("MatMul", [x, b.const((rng.standard_normal((i, o)) / i ** 0.5).astype(np.float32))]),
                                          b.const(np.zeros(o, np.float32))])
  def ln(x): return b.node("LayerNormalization", [x, b.const(np.ones(d, np.float32)), b.const(np.zeros(d, np.float32))], axis=-1)
  split, merge = b.const(np.array([1, seq, heads, d // heads], np.int64)), b.const(np.array([1, seq, d], np.int64))
  x = "x"
  for _ in range(layers):
    q, k, v = (b.node("Transpose", [b.node("Reshape", [lin(x, d, d), split])], perm=[0, 2, 1, 3]) for _ in range(3))
    kt = b.node("Transpose", [k], perm=[0, 1, 3, 2])
    att = b.node("Mul", [b.node("MatMul", [q, kt]), b.const(np.array(1 / (d // heads) ** 0.5, np.float32))])
    o = b.node("Reshape", [b.node("Transpose", [b.node("MatMul", [b.node("Softmax", [att], axis=-1), v])], perm=[0, 2, 1, 3]), merge])
    x = ln(b.node("Add", [x, lin(o, d, d)]))
    h = lin(x, d, ff)  # GELU as exporters write it: x * 0.5 * (1 + erf(x / sqrt(2)))
    erf = b.node("Erf", [b.node("Div", [h, b.const(np.array(2 ** 0.5, np.float32))])])
    g = b.node("Mul", [b.node("Mul", [h, b.const(np.array(0.5, np.float32))]), b.node("Add", [erf, b.const(np.array(1, np.float32))])])
    x = ln(b.node("Add", [x, lin(g, ff, d)]))
  return b.model("x", [1, seq, d], x)

def median_ms(fn) -> float:
  for _ in range(3): fn()
  ts = []
  for _ in range(RUNS):
    st = time.perf_counter(); fn(); ts.append(time.perf_counter() - st)
  return sorted(ts)[len(ts) // 2] * 1e3

def bench(name:str, m:onnx.ModelProto, shape:tuple) -> dict:
  raw = m.SerializeToString()
  x = rng.standard_normal(shape).astype(np.float32)
  sess = ort.InferenceSession(raw, providers=["CPUExecutionProvider"])
  ref = sess.run(None, {"x": x})[0]
  run = OnnxRunner(raw).jit()
  got = run({"x": x})
  out = next(iter(got.values())).numpy()
  err = float(np.abs(out - ref).max() / (np.abs(ref).max() + 1e-12))
  def tg_once(): next(iter(run({"x": x}).values())).numpy()
  res = {"bench": name, "nodes": len(m.graph.node), "tg_ms": median_ms(tg_once),
         "onnxruntime_ms": median_ms(lambda: sess.run(None, {"x": x})), "max_rel_err": err}
  res["ratio_tg_over_ort"] = res["tg_ms"] / res["onnxruntime_ms"]
  print(json.dumps(res), flush=True)
  return res

if __name__ == "__main__":
  rows = [bench("resnet18-like 1x3x64x64", resnet18(), (1, 3, 64, 64)), bench("transformer 2x(d128 h4 ff512) seq64", transformer(), (1, 64, 128))]
  print(f"\n| model | nodes | tg (TinyJit) | onnxruntime {ort.__version__} | tg / ort | max rel. error |\n|---|---:|---:|---:|---:|---:|")
  for r in rows:
    print(f"| {r['bench']} | {r['nodes']} | {r['tg_ms']:.2f} ms | {r['onnxruntime_ms']:.2f} ms | {r['ratio_tg_over_ort']:.1f}x | "
          f"{r['max_rel_err']:.1e} |")
