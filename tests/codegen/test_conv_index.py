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

def test_padded_conv_reads_plain_memory_along_rows():
  # the padded input is written out once, so the conv kernel's loads are ungated and the row (stride 1) axis is a vector tile of 8:
  # through a padded view each read was a gated load (compare, two selects) and no vector load along the row
  from tinygrad.helpers import Context
  from tinygrad.codegen.opt import hand_coded_opts, OptOps
  out = Tensor.empty(2, 4, 16, 16).conv2d(Tensor.empty(8, 4, 3, 3), padding=1)
  items, _ = create_schedule([out.uop])
  from tinygrad.uop.ops import graph_rewrite
  from tinygrad.uop.symbolic import symbolic
  conv = graph_rewrite([it.ast for it in items if it.kind == "kernel"][-1], symbolic)  # what the optimizer sees
  gates = [u.src[2] for u in conv.toposort() if u.op is Ops.LOAD and len(u.src) == 3]
  assert all(g.op is Ops.CONST and g.arg is True for g in gates), "the conv kernel still reads a gated (padded) view"
  with Context(THREADS=1): opts = hand_coded_opts(conv, Device["CPU"].renderer)
  assert any(o.op is OptOps.UPCAST and o.axis == 3 and o.amt % 8 == 0 for o in opts), opts

@pytest.mark.parametrize("width", [13, 14, 15, 28])
def test_depthwise_short_rows_are_padded_to_a_vector(width):
  # a depthwise conv's output row shorter than 16 (ResNet-style 14x14) is padded up to one whole vector of 16 lanes where that adds at
  # most PAD_WIDE of work: before, rows under 16 never padded, and a row of 14 took 7 lanes x 4 images, a stream per image (b8 512x14x14
  # 3x3 at 2 threads: 0.78 -> 0.48 ms with the pad copy). A row of 28 runs its second vector over columns 12-27 (OVERLAP) instead of
  # padding it with gated lanes. The values against numpy
  import pathlib, sys
  from tinygrad.helpers import Context
  from tinygrad.codegen.opt import hand_coded_opts, Opt, OptOps
  sys.path.insert(0, str(pathlib.Path(__file__).parent))
  from test_opt import AVX512
  rng = np.random.default_rng(width)
  x, w = rng.standard_normal((4, 8, width, width), dtype=np.float32), rng.standard_normal((8, 1, 3, 3), dtype=np.float32)
  out = Tensor(x).realize().conv2d(Tensor(w).realize(), groups=8, padding=1)
  items, _ = create_schedule([out.uop])
  with Context(THREADS=1): opts = hand_coded_opts([it.ast for it in items if it.kind == "kernel"][-1], AVX512)
  assert opts[:2] == [Opt(OptOps.PADTO if width < 16 else OptOps.OVERLAP, 3, 16), Opt(OptOps.UPCAST, 3, 16)], opts
  want = np.stack([_np_conv(x[:, c:c+1], w[c:c+1], 1)[:, 0] for c in range(8)], 1)
  np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
