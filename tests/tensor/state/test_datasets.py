"""nn.datasets.mnist against IDX files written here and served by file:// URLs (no network)."""
import gzip, struct
import numpy as np
import pytest
from tinygrad import dtypes
from tinygrad.nn import datasets

def idx(arr:np.ndarray) -> bytes: return gzip.compress(bytes((0, 0, 8, arr.ndim)) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.tobytes())

@pytest.fixture
def served(tmp_path, monkeypatch):
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
  (d := tmp_path / "mnist").mkdir()
  monkeypatch.setattr(datasets, "MNIST_URL", d.as_uri() + "/")
  return d

def test_mnist_shapes_and_values(served):
  rng = np.random.default_rng(0)
  imgs, labels = rng.integers(0, 256, (3, 28, 28), dtype=np.uint8), np.array([7, 0, 9], np.uint8)
  for split, n in (("train", 3), ("t10k", 2)):
    (served / f"{split}-images-idx3-ubyte.gz").write_bytes(idx(imgs[:n]))
    (served / f"{split}-labels-idx1-ubyte.gz").write_bytes(idx(labels[:n]))
  xt, yt, xv, yv = datasets.mnist()
  assert xt.shape == (3, 1, 28, 28) and yt.shape == (3,) and xv.shape == (2, 1, 28, 28) and yv.shape == (2,)
  assert xt.dtype == yt.dtype == dtypes.uint8
  np.testing.assert_array_equal(xt.numpy()[:, 0], imgs)
  assert yt.tolist() == [7, 0, 9] and yv.tolist() == [7, 0]

@pytest.mark.parametrize("bad,msg", [(b"\x00\x00\x08\x03" + struct.pack(">3I", 2, 28, 28) + b"abc", "header says"), (b"\x00\x00\x0d\x03abc", "not an IDX")])
def test_malformed_files_are_named(served, bad, msg):
  for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
    (served / name).write_bytes(gzip.compress(bad))
  with pytest.raises(ValueError, match=msg): datasets.mnist()
