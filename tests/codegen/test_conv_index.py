"""A convolution's window is built from pad, expand, reshape and shrink (tensor_conv.py); the index math those leave must fold away: no
division or modulo in the forward kernel and 32-bit indices where the buffers fit, with the values against numpy."""
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.uop import Ops
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program

def _programs(t:Tensor):
  items, _ = create_schedule([t.uop])
  return [get_program(it.ast, Device["CPU"].renderer) for it in items if it.kind == "kernel"]

def _np_conv(x, w, pad):
  xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
  cols = np.lib.stride_tricks.sliding_window_view(xp, w.shape[2:], axis=(2, 3))
  return np.einsum("bchwij,ocij->bohw", cols, w)

@pytest.mark.parametrize("padding", [1, 0])
def test_conv_forward_has_no_division(padding):
  rng = np.random.default_rng(0)
  x, w = rng.standard_normal((2, 4, 10, 10), dtype=np.float32), rng.standard_normal((6, 4, 3, 3), dtype=np.float32)
  out = Tensor(x).realize().conv2d(Tensor(w).realize(), padding=padding)
  for spec in _programs(out):
    assert not [u.op for u in spec.uops if u.op in (Ops.FLOORDIV, Ops.FLOORMOD, Ops.CDIV, Ops.CMOD)]
    assert " i64 " not in spec.src  # every buffer here is small: 32-bit index math
  np.testing.assert_allclose(out.numpy(), _np_conv(x, w, padding), rtol=1e-4, atol=1e-4)
