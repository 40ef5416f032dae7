"""tinygrad.helpers' names that programs use: fetch (against files served by file:// URLs: no network), tqdm/trange, argfix,
make_tuple, polyN."""
import gzip, hashlib, io, tarfile
import pytest
from tinygrad.helpers import fetch, tqdm, trange, argfix, make_tuple, polyN

@pytest.fixture
def cache(tmp_path, monkeypatch):
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
  return tmp_path / "cache" / "tinygrad" / "downloads"

def test_fetch_downloads_once_into_the_cache(tmp_path, cache):
  (src := tmp_path / "data.bin").write_bytes(b"first")
  p = fetch(src.as_uri())
  assert p.parent == cache and p.read_bytes() == b"first"
  src.write_bytes(b"second")
  assert fetch(src.as_uri()) == p and p.read_bytes() == b"first"  # cached: not read again
  assert fetch(src.as_uri(), allow_caching=False).read_bytes() == b"second"
  assert fetch(src.as_uri(), name="x.bin", subdir="sub") == cache / "sub" / "x.bin"

def test_fetch_gunzip_sha256_and_extract(tmp_path, cache):
  (src := tmp_path / "a.gz").write_bytes(gzip.compress(b"hello"))
  assert fetch(src.as_uri(), gunzip=True, sha256=hashlib.sha256(b"hello").hexdigest()).read_bytes() == b"hello"
  with pytest.raises(ValueError, match="sha256"): fetch(src.as_uri(), name="bad", sha256="00" * 32)
  assert not (cache / "bad").exists()
  buf = io.BytesIO()
  with tarfile.open(fileobj=buf, mode="w") as tar:
    info = tarfile.TarInfo("d/f.txt"); info.size = 3; tar.addfile(info, io.BytesIO(b"abc"))
  (tgz := tmp_path / "t.tar").write_bytes(buf.getvalue())
  assert (fetch(tgz.as_uri(), name="t", extract=True) / "d" / "f.txt").read_bytes() == b"abc"
  buf = io.BytesIO()
  with tarfile.open(fileobj=buf, mode="w") as tar:
    info = tarfile.TarInfo("../escape.txt"); info.size = 1; tar.addfile(info, io.BytesIO(b"x"))
  (evil := tmp_path / "e.tar").write_bytes(buf.getvalue())
  with pytest.raises(ValueError, match="leaves the extraction"): fetch(evil.as_uri(), name="e", extract=True)
  assert not (cache / "escape.txt").exists()

def test_tqdm_and_trange(capsys):
  assert list(trange(4, desc="steps")) == [0, 1, 2, 3]
  err = capsys.readouterr().err
  assert "steps" in err and "4/4" in err and "100%" in err and err.endswith("\n")
  bar = tqdm(total=10, unit_scale=True)
  bar.set_description("loss 1.5")
  bar.update(10, close=True)
  assert "loss 1.5" in (err := capsys.readouterr().err) and "10/10" in err
  assert list(tqdm(iter("ab"), disable=True)) == ["a", "b"] and capsys.readouterr().err == ""
  with pytest.raises(TypeError, match="update"): list(tqdm(total=3))

def test_argfix_make_tuple_polyN():
  assert argfix(1, 2) == (1, 2) and argfix((1, 2)) == (1, 2) and argfix([3]) == (3,) and argfix() == ()
  with pytest.raises(ValueError): argfix((1, 2), 3)
  assert make_tuple(3, 2) == (3, 3) and make_tuple([1, 2], 2) == (1, 2)
  assert polyN(2.0, [1.0, 2.0, 3.0]) == 1 * 4 + 2 * 2 + 3 and polyN(5, []) == 0.0

def test_top_level_fetch():
  import tinygrad
  assert tinygrad.fetch is fetch
