"""The ONNX backend node tests (shipped in the onnx package) through onnx.backend.base.Backend: every test in node_pass_list.txt must
keep passing. CI runs a fixed quarter of the list (chosen by a hash of the name, so it never changes between runs);
TG_ONNX_NODE_TESTS=all runs every listed test, and `python tests/onnx/node_suite.py` runs the whole suite (failures too)."""
import functools, os, pathlib, sys, unittest, zlib
import pytest
pytest.importorskip("onnx")
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from tg_backend import node_test_case

PASS_LIST = (pathlib.Path(__file__).parent / "node_pass_list.txt").read_text().split()
ALL = os.environ.get("TG_ONNX_NODE_TESTS") == "all"
SELECTED = [n for n in PASS_LIST if ALL or zlib.crc32(n.encode()) % 4 == 0]

@functools.cache
def _case(): return node_test_case()

@pytest.mark.parametrize("name", SELECTED)
def test_listed_node_test_passes(name):
  res = unittest.TestResult()
  _case()(name).run(res)
  bad = res.errors + res.failures
  assert not bad, f"{name} is in node_pass_list.txt but now fails:\n{bad[0][1]}"
  assert not res.skipped, f"{name} is in node_pass_list.txt but was skipped: {res.skipped[0][1]}"
