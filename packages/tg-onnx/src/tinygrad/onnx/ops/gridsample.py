"""GridSample: each output point reads the input at a normalised coordinate from `grid`; nearest, (multi)linear or cubic taps,
out-of-range taps by padding_mode (zeros, border, reflection). Taps are gathers from the flattened spatial axes."""
from __future__ import annotations
import itertools, math
from tinygrad.dtype import dtypes
from tinygrad.onnx.ops.registry import op

def _reflect(v, lo:float, hi:float):
  """fold v back into [lo, hi] by reflecting at the near border as often as it takes"""
  rng = hi - lo
  below, above = v < lo, v > hi
  dx = below.where(lo - v, v - hi)
  n = (dx / rng).trunc()
  r = dx - n * rng
  even = (n % 2).eq(0)
  folded = below.where(even.where(lo + r, hi - r), even.where(hi - r, lo + r))
  return (below | above).where(folded, v)

def _cubic(t):
  a = -0.75
  def near(x): return ((a + 2) * x - (a + 3)) * x * x + 1
  def far(x): return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
  return [far(t + 1), near(t), near(1 - t), far(2 - t)]

@op("GridSample")
def grid_sample(x, grid, align_corners=0, mode="linear", padding_mode="zeros"):
  mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
  n, c, *sizes = x.shape
  nd, out = len(sizes), grid.shape[1:-1]
  g = grid.cast(dtypes.float32)
  coords, lows, highs = [], [], []
  for d, s in enumerate(sizes):
    u = g[..., nd - 1 - d]  # the grid lists x (the last axis) first
    v = (u + 1) / 2 * (s - 1) if align_corners else ((u + 1) * s - 1) / 2
    lo, hi = (0.0, s - 1.0) if align_corners else (-0.5, s - 0.5)
    if mode == "nearest": v = v.round()
    # border: nearest and linear clip the coordinate, cubic clips each of its four taps instead (onnxruntime, torch)
    if padding_mode == "border" and mode != "cubic": v = v.clip(0, s - 1)
    elif padding_mode == "reflection": v = _reflect(v, lo, hi)
    coords.append(v); lows.append(lo); highs.append(hi)
  # per axis: (index, weight) taps
  taps = []
  for v in coords:
    if mode == "nearest": taps.append([(v, None)])
    else:
      f = v.floor()
      t = v - f
      offs, ws = ([0, 1], [1 - t, t]) if mode == "linear" else ([-1, 0, 1, 2], _cubic(t))
      taps.append([(f + o, w) for o, w in zip(offs, ws)])
  flat_x = x.reshape(n, c, math.prod(sizes))
  q = math.prod(out)
  ret = None
  for combo in itertools.product(*taps):
    flat, valid, weight = None, None, None
    for d, ((idx, w), s) in enumerate(zip(combo, sizes)):
      if padding_mode == "border": idx = idx.clip(0, s - 1)
      elif padding_mode == "reflection": idx = _reflect(idx, lows[d], highs[d]).trunc().clip(0, s - 1)
      ok = (idx >= 0) & (idx <= s - 1)
      idx = ok.where(idx, 0).cast(dtypes.int32)
      flat = idx if flat is None else flat * s + idx
      valid = ok if valid is None else valid & ok
      if w is not None: weight = w if weight is None else weight * w
    vals = flat_x.gather(2, flat.reshape(n, 1, q).expand(n, c, q)).reshape(n, c, *out).cast(dtypes.float32)
    term = valid.unsqueeze(1).where(vals, 0) * (1 if weight is None else weight.unsqueeze(1))
    ret = term if ret is None else ret + term
  return ret.cast(x.dtype)
