"""An upcast lane's index math is simplified before python's division and modulo become C's (codegen/lowering.py): a lane of
interleaved outputs, (r*8 + 3) % 2, folds to 1, so its gate is a constant and the lanes of a pair share their sources. Oracle: numpy."""
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes
from tinygrad.uop import Ops
from tinygrad.codegen import get_program
from tinygrad.schedule.rangeify import create_schedule

def _program(t:Tensor):
  its = [it for it in create_schedule([t.uop])[0] if it.kind == "kernel"]
  assert len(its) == 1
  return get_program(its[0].ast, Device["CPU"].renderer)

def _interleave(a:np.ndarray, b:np.ndarray) -> np.ndarray: return np.stack([a, b], axis=1).reshape(-1)

def test_interleaved_lanes_have_no_division():
  # a counter plus a key word, interleaved with the other key word (threefry's inputs); and an arange interleaved with a load
  n = 4096
  k, b = np.array([3, 0xfffffff0], np.uint32), np.random.default_rng(0).standard_normal(n, dtype=np.float32)
  kt = Tensor(k).realize()
  for out, want in [((Tensor.arange(n, dtype=dtypes.uint32) + kt[0]).stack(kt[1].expand(n), dim=1).flatten(),
                     _interleave(np.arange(n, dtype=np.uint32) + k[0], np.full(n, k[1]))),
                    (Tensor.arange(n).float().stack(Tensor(b), dim=1).flatten(), _interleave(np.arange(n, dtype=np.float32), b))]:
    p = _program(out)
    assert not any(u.op in (Ops.CDIV, Ops.CMOD) for u in p.uops), [u.op for u in p.uops if u.op in (Ops.CDIV, Ops.CMOD)]
    assert not any(u.op is Ops.LOAD and len(u.src) == 3 for u in p.uops)  # no gated load: each lane reads one of the two for sure
    np.testing.assert_array_equal(out.numpy(), want)

def test_pair_shares_its_computation():
  # threefry's two words of a counter, interleaved: the two lanes of a pair run one set of rounds, not one each
  n = 1 << 14
  p = _program(Tensor._random_bits(n, None, fused=True))
  lanes = sum(1 for u in p.uops if u.op is Ops.STORE)
  rotations = sum(1 for u in p.uops if u.op is Ops.SHL and u.src[1].op is Ops.CONST)
  # 20 rounds per pair, a rotation each (the first round's, of the key alone, is shared by all pairs); unshared, 20 per lane
  assert lanes % 2 == 0 and rotations == 19 * lanes // 2 + 1, (lanes, rotations)

@pytest.mark.parametrize("n", [1, 3, 7, 1001])
def test_odd_sizes(n):
  a, b = (np.random.default_rng(i).integers(0, 1 << 30, n).astype(np.int32) for i in range(2))
  out = (Tensor(a) * 3).stack(Tensor(b) ^ 5, dim=1).flatten()[: 2 * n - 1]  # a shrink after the interleave: the last lane is cut
  np.testing.assert_array_equal(out.numpy(), _interleave(a * 3, b ^ 5)[: 2 * n - 1])
