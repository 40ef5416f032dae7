"""The entry point reader (tinygrad.plugins.entry_points) against importlib.metadata, the standard library's reader of the same files."""
import importlib.metadata, sys
from tinygrad.plugins.entry_points import entry_points

def _dist(folder, dirname, metadata, entry_points_txt):
  d = folder / dirname
  d.mkdir()
  if metadata is not None: (d / ("PKG-INFO" if dirname.endswith(".egg-info") else "METADATA")).write_text(metadata)
  (d / "entry_points.txt").write_text(entry_points_txt)

def test_same_entry_points_as_importlib_metadata(tmp_path, monkeypatch):
  first, second = tmp_path / "a", tmp_path / "b"
  first.mkdir(); second.mkdir()
  _dist(first, "tg_one-1.2.dist-info", "Metadata-Version: 2.1\nName: tg-one\nVersion: 1.2\n\nName: not-a-header\n",
        "# a comment\n[console_scripts]\nx = y:z\n\n[tg_test_group]\nalpha = pkg.mod:obj.attr [extra]\nbeta=pkg.other\n")
  _dist(first, "tg_two.egg-info", "Metadata-Version: 1.1\nName: tg-two\nVersion: 0.3\n", "[tg_test_group]\ngamma = two:run\n")
  _dist(first, "tg_three-4.0.dist-info", None, "[tg_test_group]\ndelta = three\n")  # no METADATA: name and version from the folder
  _dist(second, "tg_one-9.9.dist-info", "Metadata-Version: 2.1\nName: tg-one\nVersion: 9.9\n", "[tg_test_group]\nshadowed = x\n")
  monkeypatch.setattr(sys, "path", [str(first), str(second)])
  ours = sorted((e.name, e.value, e.dist.name, e.dist.version) for e in entry_points("tg_test_group"))
  assert ours == [("alpha", "pkg.mod:obj.attr [extra]", "tg-one", "1.2"), ("beta", "pkg.other", "tg-one", "1.2"),
                  ("delta", "three", "tg_three", "4.0"), ("gamma", "two:run", "tg-two", "0.3")]
  theirs = sorted((e.name, e.value, e.dist.name, e.dist.version) for e in importlib.metadata.entry_points(group="tg_test_group")
                  if e.dist.name is not None)  # importlib.metadata gives a distribution without metadata no name
  assert [o for o in ours if o[0] != "delta"] == theirs

def test_load_follows_the_attribute_path(tmp_path, monkeypatch):
  (tmp_path / "tg_ep_target.py").write_text("class Obj:\n  attr = 42\n")
  _dist(tmp_path, "tg_ep-1.0.dist-info", "Name: tg-ep\nVersion: 1.0\n", "[tg_test_group]\nx = tg_ep_target:Obj.attr [extra]\n")
  monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path)
  assert [e.load() for e in entry_points("tg_test_group")] == [42]
