"""codegen/valid_index.py: a load's address folded under the conditions that select its value."""
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, KernelInfo, graph_rewrite
from tinygrad.uop.symbolic import symbolic
from tinygrad.dtype import dtypes
from tinygrad.helpers import Context
from tinygrad.codegen import valid_index
from tinygrad.codegen.valid_index import fold_valid_indices

_DIVISIONS = (Ops.FLOORDIV, Ops.FLOORMOD)

def _tap_kernel(outside:bool=False) -> UOp:
  """out[w] = where(0 < w < 12, a[(w - 1) % 11], 0) for w in 0..12 (+ a[(w - 1) % 11] where `outside`: the load read unselected too)"""
  out, a = UOp.param(0, dtypes.float, (13,)), UOp.param(1, dtypes.float, (11,))
  w = UOp.range(13, 0)
  ld = a[(w - 1) % 11].load()
  val = ((w > 0) & (w < 12)).where(ld, 0.0)
  if outside: val = val + ld
  return graph_rewrite(out[w].store(val).end(w).sink(arg=KernelInfo(name="tap")), symbolic)

def _loads(sink:UOp) -> list[UOp]: return [u for u in sink.toposort() if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX]

def test_a_selected_load_drops_its_remainder():
  folded = fold_valid_indices(ast := _tap_kernel())
  assert folded is not ast
  idx = _loads(folded)[0].src[0].src[1]
  assert not any(u.op in _DIVISIONS for u in idx.toposort())
  # the address, clamped per range, is what the valid lanes read and in the buffer for every lane
  w = next(u for u in idx.toposort() if u.op is Ops.RANGE)
  for v in range(13):
    got = idx.substitute({w: w.const_like(v)}).simplify()
    assert got.op is Ops.CONST and 0 <= got.arg < 11 and (not 0 < v < 12 or got.arg == (v - 1) % 11), (v, got.arg)

def test_a_load_also_read_unselected_is_left_alone():
  assert fold_valid_indices(ast := _tap_kernel(outside=True)) is ast

def _divisions(sink:UOp) -> int: return sum(1 for u in sink.toposort() if u.op in _DIVISIONS)

def test_conv_input_gradient_divides_nothing_per_tap(monkeypatch):
  # col2im: each input pixel sums the im2col gradient of the 9 taps whose window holds it, each read at (pixel - tap) wrapped into the
  # 11x11 output by remainders and divisions, which the taps' conditions make exact. Seen as lowering hands the kernel to the pass
  seen = {}
  def watched(sink:UOp) -> UOp:
    seen[sink.arg.name] = (_divisions(sink), _divisions(out := fold_valid_indices(sink)))
    return out
  monkeypatch.setattr(valid_index, "fold_valid_indices", watched)
  with Context(PACK=2, COMPILE_WORKERS=1, LCACHE=0):  # lowered here, in this process, not found in a cache
    x, w = Tensor.empty(3, 32, 13, 13, requires_grad=True), Tensor.empty(64, 32, 3, 3, requires_grad=True)
    (x.conv2d(w) * Tensor.empty(3, 64, 11, 11)).sum().backward()
    Tensor.realize(x.grad, w.grad)
  assert seen["E_3_13_13_32"][0] > 0 and seen["E_3_13_13_32"][1] == 0, seen

@pytest.mark.parametrize("shape,pad", [((2, 3, 13, 13), 0), ((2, 3, 9, 7), 1), ((1, 2, 6, 6), 2)])
def test_conv_input_gradient_matches_numpy(shape, pad):
  rng = np.random.default_rng(sum(shape) + pad)
  x, w = rng.standard_normal(shape, dtype=np.float32), rng.standard_normal((4, shape[1], 3, 3), dtype=np.float32)
  tx = Tensor(x, requires_grad=True)
  out = tx.conv2d(Tensor(w), padding=pad)
  g = rng.standard_normal(out.shape, dtype=np.float32)
  (out * Tensor(g)).sum().backward()
  dxp = np.zeros((shape[0], shape[1], shape[2] + 2*pad, shape[3] + 2*pad), np.float32)
  for i in range(3):
    for j in range(3): dxp[:, :, i:i + out.shape[2], j:j + out.shape[3]] += np.einsum("nohw,oc->nchw", g, w[:, :, i, j])
  np.testing.assert_allclose(tx.grad.numpy(), dxp[:, :, pad:pad + shape[2], pad:pad + shape[3]], rtol=1e-4, atol=1e-4)
