"""RoiAlign, DeformConv, TfIdfVectorizer and FlexAttention beyond the backend node tests: hand-computed values and numpy where the op
has a closed form (bilinear sampling of a linear ramp is exact, zero offsets make DeformConv a plain convolution), onnxruntime
(optional) for the data-dependent cases, and clear errors for bad attributes."""
import itertools
import numpy as np, pytest
from tinygrad.onnx import OnnxRunner
onnx = pytest.importorskip("onnx")  # builds the models; a test-only dependency (requirements-test.txt)
helper, TP = onnx.helper, onnx.TensorProto
rng = np.random.default_rng(0)
ELEM = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.int64): TP.INT64, np.dtype(np.int32): TP.INT32}

def one_node(op, feeds, opset=22, domain="", **attrs):
  names = list(feeds)
  node = helper.make_node(op, names, ["y"], domain=domain, **attrs)
  g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, ELEM[a.dtype], a.shape) for n, a in feeds.items()],
                        [helper.make_tensor_value_info("y", TP.FLOAT, None)])
  ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
  return helper.make_model(g, opset_imports=ops).SerializeToString()

def run(model, feeds): return OnnxRunner(model)(feeds)["y"].numpy()

def onnxruntime_run(model, feeds):
  ort = pytest.importorskip("onnxruntime")  # optional oracle
  return ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]

RAMP = (9 * np.arange(7)[:, None] + np.arange(9)[None, :]).astype(np.float32).reshape(1, 1, 7, 9)  # X[y, x] = 9y + x

def test_roialign_of_a_ramp_is_the_bin_centre():
  # bilinear samples of a linear function average to its value at the bin centre; half_pixel moves the box by -0.5
  feeds = {"X": RAMP, "rois": np.array([[1, 1, 5, 3]], np.float32), "bi": np.zeros(1, np.int64)}
  y = run(one_node("RoiAlign", feeds, output_height=2, output_width=2, sampling_ratio=2), feeds)
  np.testing.assert_allclose(y[0, 0], [[9 + 1.5, 9 + 3.5], [18 + 1.5, 18 + 3.5]], rtol=1e-6)

def test_roialign_adaptive_grid_counts_samples_outside_the_map():
  # opset 10 (no half-pixel shift), sampling_ratio=0: box [-3, 0, 12, 6] takes 15 x 6 samples (x = -2.5 .. 11.5 by 1, y = 0.5 .. 5.5);
  # the ones beyond x < -1 or x > 9 read 0 yet count, x in [-1, 0] clamps to column 0 and x >= 8 reads column 8
  feeds = {"X": RAMP, "rois": np.array([[-3, 0, 12, 6]], np.float32), "bi": np.zeros(1, np.int64)}
  y = run(one_node("RoiAlign", feeds, opset=10), feeds)
  xs = [min(max(x, 0), 8) for x in np.arange(-2.5, 12, 1.0) if -1 <= x <= 9]
  want = sum(9 * yy + x for yy in np.arange(0.5, 6, 1.0) for x in xs) / (15 * 6)
  np.testing.assert_allclose(y.ravel(), [want], rtol=1e-6)

@pytest.mark.parametrize("attrs", [{}, {"mode": "max", "sampling_ratio": 2}, {"coordinate_transformation_mode": "output_half_pixel"},
                                   {"output_height": 3, "output_width": 2, "spatial_scale": 0.5}])
def test_roialign_matches_onnxruntime(attrs):
  x = rng.standard_normal((2, 3, 7, 9)).astype(np.float32)
  rois = np.array([[0, 0, 8, 6], [1.3, 2.2, 5.7, 4.1], [-3, -2, 12, 10], [4, 4, 4.2, 4.1], [7, 5, 2, 1]], np.float32)
  feeds = {"X": x, "rois": rois, "bi": np.array([0, 1, 1, 0, 1], np.int64)}
  m = one_node("RoiAlign", feeds, opset=16, **attrs)
  np.testing.assert_allclose(run(m, feeds), onnxruntime_run(m, feeds), rtol=1e-5, atol=1e-5)

def numpy_conv(x, w, strides, pads, dilations, group):
  nd = x.ndim - 2
  x = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + nd]) for i in range(nd)])
  out = [(x.shape[2 + i] - dilations[i] * (w.shape[2 + i] - 1) - 1) // strides[i] + 1 for i in range(nd)]
  cg, og = w.shape[1], w.shape[0] // group
  y = np.zeros((x.shape[0], w.shape[0], *out), np.float64)
  for g, tap in itertools.product(range(group), itertools.product(*[range(k) for k in w.shape[2:]])):
    win = x[(slice(None), slice(g * cg, (g + 1) * cg)) + tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                                                              for t, d, o, s in zip(tap, dilations, out, strides))]
    y[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", win, w[(slice(g * og, (g + 1) * og), slice(None)) + tap])
  return y

@pytest.mark.parametrize("xs, ws, attrs", [
  ((2, 4, 9), (6, 2, 3), dict(group=2, offset_group=2, strides=[2], dilations=[2], pads=[1, 2])),
  ((1, 2, 4, 5, 4), (2, 1, 2, 2, 2), dict(group=2, pads=[1, 0, 0, 0, 1, 1])),
])
def test_deformconv_with_zero_offsets_is_a_convolution(xs, ws, attrs):
  # N-D (onnxruntime and the reference do 2-D only): zero offsets sample the grid points, the mask scales each tap
  nd, k = len(xs) - 2, int(np.prod(ws[2:]))
  x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
  want = numpy_conv(x, w, attrs.get("strides", [1] * nd), attrs["pads"], attrs.get("dilations", [1] * nd), attrs["group"])
  og = attrs.get("offset_group", 1)
  feeds = {"X": x, "W": w, "offset": np.zeros((xs[0], og * k * nd, *want.shape[2:]), np.float32), "B": np.zeros(ws[0], np.float32),
           "mask": np.full((xs[0], og * k, *want.shape[2:]), 0.5, np.float32)}
  np.testing.assert_allclose(run(one_node("DeformConv", feeds, **attrs), feeds), 0.5 * want, rtol=1e-4, atol=1e-4)

def test_deformconv_matches_onnxruntime():
  x, w = rng.standard_normal((2, 4, 6, 7)).astype(np.float32), rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
  attrs = dict(group=2, offset_group=2, strides=[2, 1], dilations=[1, 2], pads=[1, 0, 2, 1])
  feeds = {"X": x, "W": w, "offset": 2 * rng.standard_normal((2, 36, 4, 4)).astype(np.float32), "B": rng.standard_normal(6).astype(np.float32),
           "mask": rng.random((2, 18, 4, 4)).astype(np.float32)}
  m = one_node("DeformConv", feeds, **attrs)
  np.testing.assert_allclose(run(m, feeds), onnxruntime_run(m, feeds), rtol=1e-4, atol=1e-5)

TFIDF = dict(ngram_counts=[0, 3, 9], pool_int64s=[1, 2, 3, 1, 2, 2, 3, 3, 1, 1, 2, 3, 2, 2, 2], ngram_indexes=[7, 0, 1, 2, 3, 4, 5, 6])

def test_tfidf_counts_by_hand():
  # pool: 1-grams 1, 2, 3; 2-grams (1,2) (2,3) (3,1); 3-grams (1,2,3) (2,2,2). Row 1 2 3 1 2 2 2 with skips 0 and 1:
  # 2-grams at gap 1: 12 23 31 12 22 22, at gap 2: 13 21 32 12 22 -> (1,2) x3, (2,3) x1, (3,1) x1;
  # 3-grams at gap 1: 123 231 312 122 222, at gap 2: 132 212 -> (1,2,3) x1, (2,2,2) x1. 1-grams count once: 1 x2, 2 x4, 3 x1
  feeds = {"X": np.array([[1, 2, 3, 1, 2, 2, 2]], np.int64)}
  y = run(one_node("TfIdfVectorizer", feeds, opset=9, mode="TF", min_gram_length=1, max_gram_length=3, max_skip_count=1, **TFIDF), feeds)
  np.testing.assert_equal(y, [[4, 1, 3, 1, 1, 1, 1, 2]])  # output column = ngram_indexes of the pool n-gram

@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
def test_tfidf_matches_onnxruntime(mode):
  feeds = {"X": rng.integers(1, 4, (3, 11)).astype(np.int32)}
  m = one_node("TfIdfVectorizer", feeds, opset=9, mode=mode, min_gram_length=2, max_gram_length=3, max_skip_count=2,
               weights=[0.5, 1, 2, 3, 4, 5, 6, 7], **TFIDF)
  np.testing.assert_allclose(run(m, feeds), onnxruntime_run(m, feeds))

def test_flexattention_score_mod_and_gqa_against_numpy():
  q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((1, 4, 3, 8), (1, 2, 5, 8), (1, 2, 5, 6)))
  doubled = helper.make_graph([helper.make_node("Mul", ["s", "two"], ["t"])], "mod", [helper.make_tensor_value_info("s", TP.FLOAT, None)],
                              [helper.make_tensor_value_info("t", TP.FLOAT, None)], [helper.make_tensor("two", TP.FLOAT, [], [2.0])])
  feeds = {"Q": q, "K": k, "V": v}
  y = run(one_node("FlexAttention", feeds, opset=26, domain="ai.onnx.preview", score_mod=doubled, scale=0.25), feeds)
  kk, vv = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)  # query heads 0, 1 share kv head 0
  s = 2 * 0.25 * q @ kk.transpose(0, 1, 3, 2)
  p = np.exp(s - s.max(-1, keepdims=True))
  np.testing.assert_allclose(y, (p / p.sum(-1, keepdims=True)) @ vv, rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("op, feeds, attrs, match", [
  ("RoiAlign", {"X": RAMP, "rois": np.zeros((1, 4), np.float32), "bi": np.zeros(1, np.int64)}, {"mode": "min"}, "RoiAlign mode must be one of"),
  ("RoiAlign", {"X": RAMP, "rois": np.zeros((1, 4), np.float32), "bi": np.zeros(1, np.int64)},
   {"coordinate_transformation_mode": "asymmetric"}, "coordinate_transformation_mode must be one of"),
  ("DeformConv", {"X": np.zeros((1, 2, 4, 4), np.float32), "W": np.zeros((2, 2, 2, 2), np.float32),
                  "offset": np.zeros((1, 4, 3, 3), np.float32)}, {}, r"offset must have shape \(1, 8, 3, 3\)"),
  ("DeformConv", {"X": np.zeros((1, 3, 4, 4), np.float32), "W": np.zeros((2, 3, 2, 2), np.float32),
                  "offset": np.zeros((1, 16, 3, 3), np.float32)}, {"offset_group": 2}, "divisible by group"),
  ("TfIdfVectorizer", {"X": np.zeros((4,), np.int64)}, dict(mode="BM25", min_gram_length=1, max_gram_length=1, max_skip_count=0, **TFIDF),
   "TfIdfVectorizer mode must be one of"),
  ("TfIdfVectorizer", {"X": np.zeros((4,), np.int64)}, dict(mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=0,
   ngram_counts=[0, 2], pool_int64s=[1, 2, 3], ngram_indexes=[0, 1, 2]), "not a whole number of 2-grams"),
])
def test_bad_attributes_are_named(op, feeds, attrs, match):
  with pytest.raises(ValueError, match=match): run(one_node(op, feeds, opset=9 if op == "TfIdfVectorizer" else 22, **attrs), feeds)

def test_sampling_ops_on_every_device(device):
  # the index and weight tensors the ops build must live on X's device
  feeds = {"X": RAMP, "rois": np.array([[1, 1, 5, 3]], np.float32), "bi": np.zeros(1, np.int64)}
  y = OnnxRunner(one_node("RoiAlign", feeds, output_height=2, output_width=2, sampling_ratio=0), device=device)(feeds)["y"].numpy()
  np.testing.assert_allclose(y.ravel(), [10.5, 12.5, 19.5, 21.5], rtol=1e-6)
  # X[y, x] = 3y + x, a 2x2 kernel of ones, every tap moved by (0.5, 0.5): output (0, 0) reads 2 + 3 + 5 + 6; output (0, 1) reads
  # 3 + 6 inside and half of 3.5 and of 6.5 at x = 2.5 (its x = 3 corner is outside: zero)
  feeds = {"X": np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3), "W": np.ones((1, 1, 2, 2), np.float32),
           "offset": np.full((1, 8, 2, 2), 0.5, np.float32)}
  y = OnnxRunner(one_node("DeformConv", feeds), device=device)(feeds)["y"].numpy()
  np.testing.assert_allclose(y.ravel(), [16, 14, 18, 15], rtol=1e-6)
  feeds = {"X": np.array([1, 2, 3, 1, 2, 2, 2], np.int64)}
  m = one_node("TfIdfVectorizer", feeds, opset=9, mode="TF", min_gram_length=1, max_gram_length=3, max_skip_count=1, **TFIDF)
  np.testing.assert_equal(OnnxRunner(m, device=device)(feeds)["y"].numpy(), [4, 1, 3, 1, 1, 1, 1, 2])

def test_roialign_under_jit():
  # a fixed sampling_ratio keeps the graph independent of the boxes, so one capture serves any boxes (bin centres of the ramp);
  # sampling_ratio=0 sizes the graph from the boxes' values, which a capture would freeze: it is refused
  def feeds(box): return {"X": RAMP, "rois": np.array([box], np.float32), "bi": np.zeros(1, np.int64)}
  run = OnnxRunner(one_node("RoiAlign", feeds([1, 1, 5, 3]), output_height=2, output_width=2, sampling_ratio=2)).jit()
  for x0, y0, x1, y1 in [(1, 1, 5, 3), (2, 1, 6, 5), (0.5, 1.5, 4.5, 5.5), (1, 1, 5, 3)]:
    ys, xs = [y0 - 0.5 + (i + 0.5) * (y1 - y0) / 2 for i in range(2)], [x0 - 0.5 + (i + 0.5) * (x1 - x0) / 2 for i in range(2)]
    np.testing.assert_allclose(run(feeds([x0, y0, x1, y1]))["y"].numpy()[0, 0], [[9 * y + x for x in xs] for y in ys], rtol=1e-5)
  run = OnnxRunner(one_node("RoiAlign", feeds([1, 1, 5, 3]), output_height=2, output_width=2)).jit()
  with pytest.raises(RuntimeError, match="node 0 RoiAlign '' reads a value computed from its inputs as python numbers"):
    run(feeds([1, 1, 5, 3]))
