"""A reduce whose loads all stream its innermost axis with stride 1 reads them as whole vectors once unrolled. A register tile of scalar
lanes on top (lanes along an axis no load walks with stride 1: a layernorm gradient's batch rows, tiled to share the positional table
they all read) adds a stream and a copy of the unrolled body per lane for a few shared loads: a small GPT's first training step spent
~2 s per such kernel in lowering and LLVM, for a slower kernel (codegen/opt/heuristic.py, _scalar_tile_pays). Such a tile is kept only
where it cuts the loads per lane by SCALAR_TILE_GAIN (a product of two row-major operands shares every load) along a row shorter than
LONG_ROW.
Likewise a reduce whose loop runs around other loops (a loss's mean over the rows of a logsumexp) is not unrolled: each lane would be a
copy of the inner loops (_encloses_loops), and a cat along its stored axis is not tiled there. Values against numpy."""
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program
import tinygrad.codegen.lowering as lowering

rng = np.random.default_rng(3)

def _opts_and_size(t:Tensor, monkeypatch) -> tuple[list[str], int]:
  seen, opt = [], lowering.optimize
  monkeypatch.setattr(lowering, "optimize", lambda ast, r: seen.append(opt(ast, r)) or seen[-1])
  (ast,) = [it.ast for it in create_schedule([t.uop])[0] if it.kind == "kernel"]
  size = len(get_program(ast, Device["CPU"].renderer).uops)
  return [f"{o.op.name},{o.axis},{o.amt}" for o in seen[0].arg.applied_opts], size

@pytest.mark.parametrize("streams,row_scale", [(1, False), (3, False), (6, False), (3, True), (6, True)])
def test_row_streams_sharing_a_table_stay_untiled(monkeypatch, streams, row_scale):
  xs = [rng.standard_normal((4, 32, 256)).astype(np.float32) for _ in range(streams)]
  table = rng.standard_normal((32, 256)).astype(np.float32)  # read by every batch row, as a GPT's positional embedding
  # a layernorm's weight, which every lane reads, and its 1/std per row, loaded outside the reduce's loop with stride 1 along the rows:
  # no vector lanes inside that loop
  scale = rng.standard_normal((4, 32, 1)).astype(np.float32) if row_scale else np.ones((4, 32, 1), np.float32)
  weight = rng.standard_normal(256).astype(np.float32) if row_scale else np.ones(256, np.float32)
  t = Tensor(table).realize()
  for x in xs: t = t * Tensor(x).realize()
  if row_scale: t = t * Tensor(weight).realize() * Tensor(scale).realize()
  opts, size = _opts_and_size(t.sum(-1), monkeypatch)
  assert not any(o.startswith("UPCAST") for o in opts), opts
  assert size < 1500, (opts, size)
  want = np.prod([x.astype(np.float64) for x in xs], axis=0) * table * weight * scale
  np.testing.assert_allclose(t.sum(-1).numpy(), want.sum(-1), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("k,tiled", [(64, True), (256, True), (512, False), (4096, False)])
def test_product_of_row_major_operands_tiled_along_short_rows(monkeypatch, k, tiled):
  # a @ b.T with both rows walked with stride 1: each lane of a 2-D tile shares its loads with the rest of its row and column, which pays
  # in rows shorter than LONG_ROW; along longer ones the unroll's vectors do
  a, b = rng.standard_normal((16, 1, k)).astype(np.float32), rng.standard_normal((1, 64, k)).astype(np.float32)
  t = (Tensor(a).realize() * Tensor(b).realize()).sum(-1)
  opts, _ = _opts_and_size(t, monkeypatch)
  assert (sum(o.startswith("UPCAST") for o in opts) >= 2) == tiled, opts
  np.testing.assert_allclose(t.numpy(), (a.astype(np.float64) * b).sum(-1), rtol=1e-4, atol=1e-4)

def test_mean_over_rows_of_a_logsumexp_unrolls_the_inner_loops_only(monkeypatch):
  logits, labels = rng.standard_normal((256, 1000)).astype(np.float32), rng.integers(0, 1000, 256)
  t = Tensor(logits).realize().sparse_categorical_crossentropy(Tensor(labels).realize())
  seen, opt = [], lowering.optimize
  monkeypatch.setattr(lowering, "optimize", lambda ast, r: seen.append(opt(ast, r)) or seen[-1])
  sizes = [len(get_program(it.ast, Device["CPU"].renderer).uops) for it in create_schedule([t.uop])[0] if it.kind == "kernel"]
  assert max(sizes) < 1500, (sizes, [k.arg.applied_opts for k in seen])
  x = logits.astype(np.float64)
  lse = np.log(np.exp(x - x.max(1, keepdims=True)).sum(1)) + x.max(1)
  np.testing.assert_allclose(t.item(), (lse - x[np.arange(256), labels]).mean(), rtol=1e-5)

def test_cat_of_computed_pieces_along_the_stored_axis_stays_untiled(monkeypatch):
  # an LSTM's gradient joins its four gates' gradients along the hidden axis: each lane of a tile there would evaluate every piece's gated
  # loads (heuristic._elementwise_tile_axes)
  xs = [rng.standard_normal((16, 128)).astype(np.float32) for _ in range(12)]
  ts = [Tensor(x).realize() for x in xs]
  t = Tensor.cat(*[ts[3 * k] * ts[3 * k + 1] + ts[3 * k + 2] for k in range(4)], dim=1)
  opts, size = _opts_and_size(t, monkeypatch)
  assert not any(o.startswith("UPCAST") for o in opts), (opts, size)
  want = np.concatenate([xs[3 * k].astype(np.float64) * xs[3 * k + 1] + xs[3 * k + 2] for k in range(4)], axis=1)
  np.testing.assert_allclose(t.numpy(), want, rtol=1e-6, atol=1e-6)

def test_separate_column_sums_count_their_trips_added(monkeypatch):
  # a recurrent net's bias gradient: the sum over its steps of each step's column sum, a reduce apiece run one after another. As the
  # product of every axis its trips were 384 x 16^16: the widest tiles, a second upcast copied into each reduce's loop, threads
  xs = [rng.standard_normal((16, 384)).astype(np.float32) for _ in range(16)]
  t = Tensor(xs[0]).realize().sum(0)
  for x in xs[1:]: t = t + Tensor(x).realize().sum(0)
  opts, size = _opts_and_size(t, monkeypatch)
  assert size < 6000 and not any(o.startswith("THREAD") for o in opts), (opts, size)
  np.testing.assert_allclose(t.numpy(), np.sum([x.astype(np.float64).sum(0) for x in xs], axis=0), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("b,ci,co,hw,per_channel", [(8, 32, 32, 16, False), (4, 3, 16, 64, False), (8, 16, 16, 32, False), (8, 3, 16, 32, True)])
def test_conv_weight_gradient_unrolls_its_rows_into_vectors(monkeypatch, b, ci, co, hw, per_channel):
  # a 3x3 conv's weight gradient, sum over (batch, rows, columns) of dy x the input at (row + kh, column + kw). Tiled along the taps its
  # lanes read runs of the input shifted by one column each, and with the columns' reduce unrolled on top LLVM left every partial sum
  # scalar (3 taps x 8 channels x 8: 2.5-3x slower than not unrolled, 8-10x slower than 4 channels with the columns unrolled 16, which it
  # packs into vectors). Where the columns are a multiple of two vectors: no tile along the taps, the columns unrolled at least that far,
  # lanes x unroll within half the registers; elsewhere (16 columns with AVX-512's vectors of 16) lanes x unroll within the registers.
  # per_channel: the gradient scaled per output channel (a BatchNorm's backward), a load outside the reduce's loop that walks the
  # channels with stride 1: it made them a whole-vector axis (3 taps x 16 channels, one thread: 5.8 ms)
  x, dy = rng.standard_normal((b, ci, hw, hw)).astype(np.float32), rng.standard_normal((b, co, hw, hw)).astype(np.float32)
  scale, shift = (rng.standard_normal((1, co, 1, 1)).astype(np.float32) for _ in range(2))
  w = Tensor(rng.standard_normal((co, ci, 3, 3)).astype(np.float32), requires_grad=True).realize()
  upstream = Tensor(dy).realize() * Tensor(scale).realize() + Tensor(shift).realize() if per_channel else Tensor(dy).realize()
  g = (Tensor(x).realize().conv2d(w, padding=1) * upstream).sum().gradient(w)[0]
  seen, opt = [], lowering.optimize
  monkeypatch.setattr(lowering, "optimize", lambda ast, r: seen.append(opt(ast, r)) or seen[-1])
  renderer = Device["CPU"].renderer
  for it in create_schedule([g.uop])[0]:
    if it.kind == "kernel": get_program(it.ast, renderer)
  (k,) = [k for k in seen if k.arg.name.endswith("_3_3")]
  ups = [o.amt for o in k.arg.applied_opts if o.op.name == "UPCAST"]
  unroll, vector = int(np.prod([o.amt for o in k.arg.applied_opts if o.op.name == "UNROLL"])), renderer.vector_bytes // 4
  if hw % (2 * vector) == 0:
    assert 3 not in ups and unroll >= 2 * vector and int(np.prod(ups)) * unroll <= renderer.vector_registers // 2 * vector, k.arg.applied_opts
  else: assert 1 < int(np.prod(ups)) * unroll <= renderer.vector_registers, k.arg.applied_opts  # a scalar register each
  xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
  gy = dy.astype(np.float64) * scale + shift if per_channel else dy.astype(np.float64)
  want = np.stack([np.stack([np.einsum("bohw,bihw->oi", gy, xp[:, :, i:i + hw, j:j + hw]) for j in range(3)], -1) for i in range(3)], -2)
  np.testing.assert_allclose(g.numpy(), want, rtol=1e-4, atol=1e-3)
