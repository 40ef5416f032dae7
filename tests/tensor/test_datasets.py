"""helpers.fetch, nn.datasets (mnist, cifar), nn.state.tar_extract and the progress bar, against files made here and served from a
local HTTP server (no network): the bytes must come back as written, once downloaded, and bad files must name what is wrong."""
import gzip, hashlib, http.server, io, struct, tarfile, threading
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.helpers import fetch, tqdm, trange
from tinygrad.nn import datasets
from tinygrad.nn.state import tar_extract, FormatError

@pytest.fixture
def server(tmp_path, monkeypatch):
  """(base url, served dir, list of requested paths); downloads are cached under tmp_path/cache"""
  root, hits = tmp_path / "www", []
  root.mkdir()
  monkeypatch.setenv("CACHEDIR", str(tmp_path / "cache"))
  class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k): super().__init__(*a, directory=str(root), **k)
    def log_message(self, *a): pass
    def do_GET(self):
      hits.append(self.path)
      super().do_GET()
  srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
  threading.Thread(target=srv.serve_forever, daemon=True).start()
  yield f"http://127.0.0.1:{srv.server_address[1]}/", root, hits
  srv.shutdown()
  srv.server_close()

def test_fetch_downloads_once_and_gunzips(server):
  url, root, hits = server
  (root / "a.bin").write_bytes(b"hello" * 1000)
  (root / "b.gz").write_bytes(gzip.compress(b"inside"))
  p = fetch(url + "a.bin")
  assert p.read_bytes() == b"hello" * 1000 and fetch(url + "a.bin") == p and hits == ["/a.bin"]  # the second call reads the cache
  assert fetch(url + "b.gz", gunzip=True).read_bytes() == b"inside"
  assert fetch(url + "a.bin", allow_caching=False).read_bytes() == b"hello" * 1000 and hits.count("/a.bin") == 2
  assert fetch(url + "a.bin", name="named.bin", subdir="sub").parts[-2:] == ("sub", "named.bin")

def test_fetch_checks_sha256_and_keeps_nothing_bad(server):
  url, root, _ = server
  (root / "c.bin").write_bytes(b"data")
  good = hashlib.sha256(b"data").hexdigest()
  assert fetch(url + "c.bin", sha256=good).read_bytes() == b"data"
  with pytest.raises(RuntimeError, match=f"sha256 is {good}, expected 00"): fetch(url + "c.bin", name="other", sha256="00" * 32)
  assert [p.name for p in (root.parent / "cache" / "downloads").iterdir()] == [fetch(url + "c.bin").name]  # no partial file left

def test_fetch_errors_name_the_url(server):
  url, _, _ = server
  with pytest.raises(RuntimeError, match=r"fetch http://127.0.0.1:\d+/missing.bin: HTTP 404"): fetch(url + "missing.bin")

def test_fetch_extracts_tar_archives_safely(server):
  url, root, _ = server
  def tar(members:dict) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
      for name, data in members.items():
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()
  (root / "ok.tar").write_bytes(tar({"d/x.txt": b"x", "y.txt": b"yy"}))
  out = fetch(url + "ok.tar", extract=True)
  assert (out / "d" / "x.txt").read_bytes() == b"x" and (out / "y.txt").read_bytes() == b"yy"
  (root / "evil.tar").write_bytes(tar({"../escape.txt": b"no"}))
  with pytest.raises(RuntimeError, match="not a tar archive that can be unpacked safely"): fetch(url + "evil.tar", extract=True)
  assert not list(root.parent.rglob("escape.txt"))

def _idx(arr:np.ndarray) -> bytes:
  return gzip.compress(struct.pack(">I", 0x800 | arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.astype(np.uint8).tobytes())

def test_mnist_reads_idx_files(server, monkeypatch):
  url, root, _ = server
  monkeypatch.setattr(datasets, "MNIST_URL", url)
  rng = np.random.default_rng(0)
  imgs = {n: rng.integers(0, 256, (k, 28, 28)) for n, k in (("train", 7), ("t10k", 3))}
  labels = {n: rng.integers(0, 10, (k,)) for n, k in (("train", 7), ("t10k", 3))}
  for n in ("train", "t10k"):
    (root / f"{n}-images-idx3-ubyte.gz").write_bytes(_idx(imgs[n]))
    (root / f"{n}-labels-idx1-ubyte.gz").write_bytes(_idx(labels[n]))
  xt, yt, xv, yv = datasets.mnist()
  assert xt.shape == (7, 1, 28, 28) and xt.dtype is dtypes.uint8 and yv.shape == (3,)
  np.testing.assert_array_equal(xt.numpy()[:, 0], imgs["train"])
  np.testing.assert_array_equal(yt.numpy(), labels["train"])
  np.testing.assert_array_equal(xv.numpy()[:, 0], imgs["t10k"])
  np.testing.assert_array_equal(yv.numpy(), labels["t10k"])

def test_mnist_names_a_bad_file(server, monkeypatch):
  url, root, _ = server
  monkeypatch.setattr(datasets, "MNIST_URL", url)
  (root / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(b"<html>not found</html>"))
  with pytest.raises(FormatError, match=r"train-images-idx3-ubyte.gz: magic 0x3c68746d at byte offset 0, expected 0x00000803"): datasets.mnist()
  good = gzip.decompress(_idx(np.zeros((2, 28, 28))))
  (root / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(good[:-5]))
  fetch(url + "train-images-idx3-ubyte.gz", gunzip=True, allow_caching=False)  # the bad file is cached: download the new one over it
  with pytest.raises(FormatError, match=r"shape \(2, 28, 28\) needs 1568 bytes of data from byte offset 16, the file has 1563"): datasets.mnist()

def test_cifar_reads_the_binary_batches(server, monkeypatch):
  url, root, _ = server
  rng = np.random.default_rng(1)
  records = {f"data_batch_{i}.bin": rng.integers(0, 256, (2, 3073)) for i in range(1, 6)} | {"test_batch.bin": rng.integers(0, 256, (3, 3073))}
  buf = io.BytesIO()
  with tarfile.open(fileobj=buf, mode="w:gz") as tf:
    for name, rec in records.items():
      data = rec.astype(np.uint8).tobytes()
      info = tarfile.TarInfo(f"cifar-10-batches-bin/{name}")
      info.size = len(data)
      tf.addfile(info, io.BytesIO(data))
  (root / "cifar.tar.gz").write_bytes(buf.getvalue())
  monkeypatch.setattr(datasets, "CIFAR_URL", url + "cifar.tar.gz")
  xt, yt, xv, yv = datasets.cifar()
  train = np.concatenate([records[f"data_batch_{i}.bin"] for i in range(1, 6)])
  assert xt.shape == (10, 3, 32, 32) and yv.shape == (3,)
  np.testing.assert_array_equal(xt.numpy(), train[:, 1:].reshape(-1, 3, 32, 32))
  np.testing.assert_array_equal(yt.numpy(), train[:, 0])
  np.testing.assert_array_equal(xv.numpy(), records["test_batch.bin"][:, 1:].reshape(-1, 3, 32, 32))

def test_tar_extract_from_a_tensor():
  buf = io.BytesIO()
  with tarfile.open(fileobj=buf, mode="w") as tf:
    for name, data in (("a.bin", b"\x01\x02\x03"), ("dir/b.bin", b"zz" * 600)):
      info = tarfile.TarInfo(name)
      info.size = len(data)
      tf.addfile(info, io.BytesIO(data))
  raw = buf.getvalue()
  files = tar_extract(Tensor(raw))
  assert files["a.bin"].tolist() == [1, 2, 3] and bytes(files["dir/b.bin"].data()) == b"zz" * 600
  with pytest.raises(FormatError, match="not a valid tar archive \\(invalid header\\)"): tar_extract(Tensor(b"\x07" * 1024))
  with pytest.raises(FormatError, match=r"2000 bytes>: not a valid tar archive \(unexpected end of data\)"): tar_extract(Tensor(raw[:2000]))
  with pytest.raises(TypeError, match="1-d uint8"): tar_extract(Tensor([1.0, 2.0]))

def test_progress_bar(capsys):
  assert list(trange(4, desc="steps")) == [0, 1, 2, 3]
  err = capsys.readouterr().err
  assert "steps: 100%|" in err and "4/4 [" in err
  with tqdm(total=2_000_000, unit="B", unit_scale=True) as bar:
    bar.update(2_000_000)
    bar.set_description("dl")
  assert "dl: 100%|" in (err := capsys.readouterr().err) and "2.00M/2.00M" in err
  for _ in tqdm(range(3), disable=True): pass
  assert capsys.readouterr().err == ""
  with pytest.raises(TypeError, match="nothing to iterate over"): list(tqdm(total=3))

def test_from_url_caches_downloads(server):
  url, root, hits = server
  (root / "v.bin").write_bytes(np.arange(4, dtype=np.int16).tobytes())
  for _ in range(2): np.testing.assert_array_equal(Tensor.from_url(url + "v.bin", dtype=dtypes.int16).numpy(), np.arange(4))
  assert hits == ["/v.bin"]
