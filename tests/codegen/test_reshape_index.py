"""reshape_index re-linearizes each run of axes with equal products on its own: checked against the flat index of every element, and
for the axes a reshape leaves alone, that their index passes through untouched."""
import itertools
import pytest
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.uop.render import python_eval
from tinygrad.schedule.indexing import reshape_index, _groups

def _flat(idx, shape):
  ret = 0
  for i, s in zip(idx, shape): ret = ret*s + i
  return ret

SHAPES = [((4, 6, 5, 7), (4, 6*5*7)), ((4, 6*5*7), (4, 6, 5, 7)), ((2, 3, 4), (6, 1, 4, 1)), ((4, 6), (6, 4)), ((1, 6, 1), (2, 3)), ((12,), (3, 1, 4)),
          ((2, 2, 3, 5), (4, 15)), ((6, 5), (2, 3, 5)), ((1,), ()), ((), (1, 1))]

@pytest.mark.parametrize("old,new", SHAPES)
def test_reshape_index_brute_force(old, new):
  rngs = tuple(UOp.range(s, i) if s != 1 else UOp.const(UOp.range(2, 0).dtype, 0) for i, s in enumerate(new))
  idx = [u.simplify() for u in reshape_index(rngs, new, old)]
  for vals in itertools.product(*[range(s) for s in new]):
    env = {f"r{i}": v for i, v in enumerate(vals)}
    got = tuple(python_eval(u, env) for u in idx)
    assert all(0 <= g < s for g, s in zip(got, old)) and _flat(got, old) == _flat(vals, new), (old, new, vals, got)

def test_untouched_axes_keep_their_index():
  # (N, C*H*W) -> (N, C, H, W): the batch index is the batch range, no division
  r = (UOp.range(8, 0), UOp.range(64, 1), UOp.range(5, 2), UOp.range(7, 3))
  idx = reshape_index(r, (8, 64, 5, 7), (8, 64*5*7))
  assert idx[0].simplify() is r[0] and not any(u.op in (Ops.FLOORDIV, Ops.FLOORMOD) for u in idx[1].simplify().toposort())
  idx = reshape_index((r[0], UOp.range(2240, 1)), (8, 2240), (8, 64, 5, 7))
  assert idx[0].simplify() is r[0]
  assert _groups((8, 64, 5, 7), (8, 2240)) == [(0, 1, 0, 1), (1, 4, 1, 2)] and _groups((2, 5), (5, 2)) == [(0, 2, 0, 2)]
