"""get_program runs without cycle collections (its graphs are acyclic; a collection in between scans the whole heap) and leaves the
collector as it found it: on after a lowering, after one that failed, and off when the caller had turned it off."""
import gc, pathlib, sys
import pytest
from tinygrad.codegen import get_program
from tinygrad.renderer.python import PythonRenderer
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # --import-mode=importlib puts no test folder on sys.path
from test_opt import elementwise

def test_collector_is_off_while_lowering_and_back_after():
  (ast, _), _ = elementwise(4, 8)
  seen = []
  renderer = PythonRenderer()
  render = renderer.render
  renderer.render = lambda *a: (seen.append(gc.isenabled()), render(*a))[1]
  assert gc.isenabled()
  get_program(ast, renderer)
  assert seen == [False] and gc.isenabled()

def test_collector_back_after_a_failed_lowering():
  (ast, _), _ = elementwise(4, 8)
  with pytest.raises(RuntimeError, match="a kernel is a SINK"): get_program(ast.src[0], PythonRenderer())
  assert gc.isenabled()

def test_collector_left_off_when_the_caller_turned_it_off():
  (ast, _), _ = elementwise(4, 8)
  gc.disable()
  try:
    get_program(ast, PythonRenderer())
    assert not gc.isenabled()
  finally: gc.enable()
