"""The methods upstream 0.14 has beyond the first API pass (see docs/api-coverage.md), each against numpy or a hand-checked value:
unfold, rearrange, nonzero, masked_select with size, fmod, log10, softmin, normalize, gelu's exact form, the creation helpers
(from_blob, from_url, empty_like), replace, contiguous_backward, clone to a device, pad_to with a value, max_shape."""
import gzip, math
import numpy as np, pytest
from tinygrad import Tensor, Variable, dtypes
from tinygrad.uop import Ops

X = np.arange(2*12*3, dtype=np.float32).reshape(2, 12, 3) - 30

@pytest.mark.parametrize("dim, size, step", [(1, 4, 3), (1, 12, 1), (0, 1, 1), (2, 2, 1), (-1, 3, 2), (1, 0, 5)])
def test_unfold(device, dim, size, step):
  want = np.lib.stride_tricks.sliding_window_view(X, size, axis=dim)[(slice(None),) * (dim % 3) + (slice(None, None, step),)]
  np.testing.assert_array_equal(Tensor(X, device=device).unfold(dim, size, step).numpy(), want)

@pytest.mark.parametrize("size, step", [(13, 1), (2, 0), (-1, 1)])
def test_unfold_bad(size, step):
  with pytest.raises(ValueError, match=r"unfold needs 0 <= size <= 12 \(axis 1 of \(2, 12, 3\)\)"): Tensor(X).unfold(1, size, step)

@pytest.mark.parametrize("formula, sizes, want", [
  ("a b c -> c a b", {}, lambda x: x.transpose(2, 0, 1)),
  ("a b c -> a (b c)", {}, lambda x: x.reshape(2, 36)),
  ("a (b d) c -> a d b c", {"d": 4}, lambda x: x.reshape(2, 3, 4, 3).transpose(0, 2, 1, 3)),
  ("... c -> c ...", {}, lambda x: np.moveaxis(x, 2, 0)),
  ("a ... -> (a ...)", {}, lambda x: x.reshape(72)),
  ("a b c -> a 1 b () c", {}, lambda x: x.reshape(2, 1, 12, 1, 3)),
  ("a (b1 b2) c -> (c b2) a b1", {"b1": 2}, lambda x: x.reshape(2, 2, 6, 3).transpose(3, 2, 0, 1).reshape(18, 2, 2)),
])
def test_rearrange(formula, sizes, want):
  np.testing.assert_array_equal(Tensor(X).rearrange(formula, **sizes).numpy(), want(X))

@pytest.mark.parametrize("formula, msg", [("a b -> a b", "the left side names 2 axes"), ("a b c -> a b", "each axis must appear once"),
  ("a (b c) d -> a b c d", r"axis \(b c\) of size 12 can't be split"), ("a b c", "exactly one '->'"), ("a (b -> a b", "'\\(' without"),
  ("a a c -> a c", "named twice"), ("a b c -> a b c%", "not an axis name")])
def test_rearrange_errors(formula, msg):
  with pytest.raises(ValueError, match=msg): Tensor(X).rearrange(formula)

def test_nonzero(device):
  x = np.array([[0, 1.5, 0], [2, 0, -3]], dtype=np.float32)
  got = Tensor(x, device=device).nonzero()
  assert got.dtype is dtypes.int32
  np.testing.assert_array_equal(got.numpy(), np.argwhere(x))
  np.testing.assert_array_equal(Tensor([0, 1, 0, 2], device=device).nonzero(size=4, fill_value=-1).numpy(), [[1], [3], [-1], [-1]])
  np.testing.assert_array_equal(Tensor([5, 6, 7], device=device).nonzero(size=2).numpy(), [[0], [1]])  # cut at size
  assert Tensor(np.zeros((2, 2)), device=device).nonzero().shape == (0, 2) and Tensor(4.0, device=device).nonzero().shape == (1, 0)

def test_masked_select_with_size(device):
  x, m = Tensor([1, 2, 3, 4], device=device), Tensor([True, False, True, False], device=device)
  np.testing.assert_array_equal(x.masked_select(m, size=3, fill_value=9).numpy(), [1, 3, 9])
  np.testing.assert_array_equal(x.masked_select(m).numpy(), [1, 3])
  with pytest.raises(ValueError, match="size must be an int >= 0"): x.masked_select(m, size=-1)

def test_fmod_log10_softmin_normalize(device):
  a, b = np.array([-4, 7, 5, 4, -7, 8, 0]), np.array([2, -3, 8, -2, 3, 5, 3])
  np.testing.assert_array_equal(Tensor(a, device=device).fmod(Tensor(b, device=device)).numpy(), np.fmod(a, b))
  f = np.array([-4.5, 7.0, -0.25, 3.0], dtype=np.float32)
  np.testing.assert_allclose(Tensor(f, device=device).fmod(2).numpy(), np.fmod(f, 2))
  np.testing.assert_allclose(Tensor([1.0, 100.0, 0.5], device=device).log10().numpy(), np.log10([1.0, 100.0, 0.5]), rtol=1e-6)
  s = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]], dtype=np.float32)
  e = np.exp(-s)
  np.testing.assert_allclose(Tensor(s, device=device).softmin().numpy(), e / e.sum(-1, keepdims=True), rtol=1e-6)
  np.testing.assert_allclose(Tensor(s, device=device).normalize().numpy(), s / np.linalg.norm(s, axis=1, keepdims=True), rtol=1e-6)
  np.testing.assert_allclose(Tensor(s, device=device).normalize(p=1, dim=0).numpy(), s / np.maximum(np.abs(s).sum(0, keepdims=True), 1e-12))
  np.testing.assert_array_equal(Tensor(np.zeros((2, 2), np.float32), device=device).normalize().numpy(), 0)  # eps: no 0/0

def test_gelu_exact():
  x = np.linspace(-4, 4, 17)
  want = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
  # erf is Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): gelu's error is at most |x|/2 of that
  np.testing.assert_allclose(Tensor(x, dtype=dtypes.float64).gelu(approximate="none").numpy(), want, atol=3.1e-7)
  with pytest.raises(ValueError, match="'tanh' or 'none'"): Tensor(x).gelu(approximate="erf")

def test_from_blob_from_url_empty_like(tmp_path, monkeypatch):
  monkeypatch.setenv("CACHEDIR", str(tmp_path / "cache"))  # from_url keeps a gunzipped copy in the download cache
  a = np.arange(6, dtype=np.float32)
  np.testing.assert_array_equal(Tensor.from_blob(a.ctypes.data, (2, 3), dtype=dtypes.float32).numpy(), a.reshape(2, 3))
  with pytest.raises(ValueError, match="host address"): Tensor.from_blob(0, (2,))
  (p := tmp_path / "blob.gz").write_bytes(gzip.compress(np.arange(4, dtype=np.int16).tobytes()))
  np.testing.assert_array_equal(Tensor.from_url(p.as_uri(), gunzip=True, dtype=dtypes.int16).numpy(), np.arange(4))
  assert Tensor.from_url(p.as_uri()).dtype is dtypes.uint8
  e = Tensor([1, 2, 3]).empty_like()
  assert e.shape == (3,) and e.dtype is dtypes.int32 and Tensor([1, 2]).empty_like(dtype=dtypes.float16).dtype is dtypes.float16

def test_replace_and_contiguous_backward():
  a = Tensor([1.0, 2.0])
  assert a.replace(Tensor([3.0, 4.0])) is a and a.tolist() == [3.0, 4.0]
  with pytest.raises(ValueError, match=r"same shape: self is \(2,\), x is \(3,\)"): a.replace(Tensor([1.0, 2.0, 3.0]))
  # a model cast to half in place: the dtype may change (tinygrad's rule), the values are the cast ones
  assert a.replace(Tensor([1.0, 65504.0]).half()) is a and a.dtype == dtypes.half and a.tolist() == [1.0, 65504.0]
  w = Tensor([0.1, 2.5]).realize()
  w.replace(w.cast(dtypes.half).realize())
  assert w.dtype == dtypes.half and (w * 2).tolist() == [np.float16(0.1) * 2, 5.0]
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  (x.contiguous_backward() * x).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])

def test_clone_pad_to_max_shape():
  t = Tensor([1, 2])
  c = t.clone(device="PYTHON")
  assert c.device == "PYTHON" and c.tolist() == [1, 2]
  np.testing.assert_array_equal(Tensor([[1, 2]]).pad_to((2, 3), value=7).numpy(), [[1, 2, 7], [7, 7, 7]])
  n = Variable("n", 1, 10).bind(3)
  s = Tensor.ones(4, 8)[:n]
  assert s.max_shape == (10, 8) and s.max_numel() == 80 and Tensor.ones(2, 3).max_shape == (2, 3)

def test_rand_contiguous_flag():
  Tensor.manual_seed(5)
  a = Tensor.rand(3)
  Tensor.manual_seed(5)
  b = Tensor.rand(3, contiguous=False)
  assert a.uop.op is Ops.CONTIGUOUS and b.uop.op is not Ops.CONTIGUOUS  # materialized, or left to fuse into its consumer
  assert a.tolist() == b.tolist()
