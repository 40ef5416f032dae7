"""tinygrad.helpers' polyN and the top-level tinygrad.fetch (fetch itself, tqdm, argfix and make_tuple: tests/examples)."""
from tinygrad.helpers import fetch, polyN

def test_polyN_is_horner():
  assert polyN(2.0, [1.0, 2.0, 3.0]) == 1 * 4 + 2 * 2 + 3 and polyN(5, []) == 0.0 and polyN(-1, [2, 0, 1]) == 3

def test_top_level_fetch():
  import tinygrad
  assert tinygrad.fetch is fetch
