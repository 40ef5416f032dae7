"""RoiAlign (Mask R-CNN): each region of interest is cut into output_height x output_width bins; a bin averages (or maxes) a grid
of bilinear samples of its image's feature map. The samples of every roi are laid out on one static grid (R, oh, gh, ow, gw) and
read with gathers from the flattened feature maps; rois needing fewer samples than the grid (sampling_ratio=0) mask the rest."""
from __future__ import annotations
import math
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad.onnx.ops.registry import op

_MODES = ("avg", "max")
_TRANSFORMS = ("half_pixel", "output_half_pixel")

def _axis_taps(start, extent, grid, n_bins:int, n_grid:int, size:int):
  """for one axis: sample positions (R, n_bins, n_grid) -> (in_grid mask, [(index, weight)] for the low and high tap)"""
  b = Tensor.arange(n_bins, dtype=dtypes.float32, device=start.device).reshape(1, n_bins, 1)
  g = Tensor.arange(n_grid, dtype=dtypes.float32, device=start.device).reshape(1, 1, n_grid)
  start, extent, grid = start.reshape(-1, 1, 1), extent.reshape(-1, 1, 1), grid.reshape(-1, 1, 1)
  bin_size = extent / n_bins
  v = start + b * bin_size + (g + 0.5) * bin_size / grid.maximum(1)
  # samples beyond [-1, size] read nothing (weight 0), yet count towards the average. The test is on v * n_bins * grid, which has no
  # division in it: a sample exactly on the border (integer boxes put many there) must not fall out by the reciprocal's rounding
  scaled, den = (start * n_bins + b * extent) * grid + (g + 0.5) * extent, grid * n_bins
  inside = (scaled >= -den) & (scaled <= den * size)
  v = v.maximum(0)
  low = v.floor().minimum(size - 1)
  v = (low >= size - 1).where(low, v)  # at the last row or column both taps are that one
  frac = v - low
  high = (low + 1).minimum(size - 1)
  in_grid = g < grid
  zero = Tensor.zeros_like(v)
  taps = [(low, inside.where(1 - frac, zero)), (high, inside.where(frac, zero))]
  return in_grid, taps

def _roi_align(ctx, x, rois, batch_indices, coordinate_transformation_mode, mode, output_height, output_width, sampling_ratio,
               spatial_scale):
  if mode not in _MODES: raise ValueError(f"RoiAlign mode must be one of {_MODES}, not {mode!r}")
  if coordinate_transformation_mode not in _TRANSFORMS:
    raise ValueError(f"RoiAlign coordinate_transformation_mode must be one of {_TRANSFORMS}, not {coordinate_transformation_mode!r}")
  if x.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 4 or batch_indices.shape != (rois.shape[0],):
    raise ValueError(f"RoiAlign needs X (N, C, H, W), rois (R, 4) and batch_indices (R,); got {x.shape}, {rois.shape}, {batch_indices.shape}")
  if output_height < 1 or output_width < 1 or sampling_ratio < 0:
    raise ValueError(f"RoiAlign output_height/width must be >= 1 and sampling_ratio >= 0, got {output_height}, {output_width}, {sampling_ratio}")
  n, c, h, w = x.shape
  r, oh, ow = rois.shape[0], output_height, output_width
  shift = 0.5 if coordinate_transformation_mode == "half_pixel" else 0.0
  box = rois.cast(dtypes.float32) * spatial_scale - shift
  x0, y0, x1, y1 = (box[:, i] for i in range(4))
  rh, rw = y1 - y0, x1 - x0
  if shift == 0.0: rh, rw = rh.maximum(1.0), rw.maximum(1.0)  # the legacy mode gives every roi at least one pixel
  if sampling_ratio > 0: gh = gw = sampling_ratio; grid_h = grid_w = Tensor.full((r,), float(sampling_ratio), device=x.device)
  else:
    # the grid adapts to each roi's size, so its extent is a python value: read the boxes (this syncs; refused under a jit capture
    # unless the boxes are constants, so a fixed sampling_ratio > 0 is what serves jit())
    grid_h, grid_w = (rh / oh).ceil().maximum(0), (rw / ow).ceil().maximum(0)
    gh, gw = (max([1] + [int(v) for v in ctx.vals(t.contiguous())]) for t in (grid_h, grid_w))
  in_h, taps_h = _axis_taps(y0, rh, grid_h, oh, gh, h)
  in_w, taps_w = _axis_taps(x0, rw, grid_w, ow, gw, w)
  base = (batch_indices.cast(dtypes.int32) * (h * w)).reshape(r, 1, 1, 1, 1)
  flat_x = x.permute(1, 0, 2, 3).reshape(c, n * h * w)
  idxs, weights = [], []
  for iy, wy in taps_h:
    for ix, wx in taps_w:
      idxs.append(base + iy.cast(dtypes.int32).reshape(r, oh, gh, 1, 1) * w + ix.cast(dtypes.int32).reshape(r, 1, 1, ow, gw))
      weights.append(wy.reshape(r, oh, gh, 1, 1) * wx.reshape(r, 1, 1, ow, gw))
  sampled = in_h.reshape(r, 1, gh, 1, 1) & in_w.reshape(r, 1, 1, 1, gw)
  work = dtypes.float64 if x.dtype is dtypes.float64 else dtypes.float32
  weight = Tensor.stack(*weights).cast(work)  # (4 taps, r, oh, gh, ow, gw)
  if mode == "avg": weight = sampled.where(weight, 0) / (grid_h * grid_w).maximum(1).reshape(r, 1, 1, 1, 1).cast(work)
  # tap positions and weights belong to the roi, not the channel: computed once, so each channel only loads and accumulates
  idx, weight = Tensor.stack(*idxs).contiguous(), weight.contiguous()
  m = 4 * r * oh * gh * ow * gw
  vals = flat_x.gather(1, idx.reshape(1, m).expand(c, m)).reshape(c, 4, r, oh, gh, ow, gw).cast(work)
  terms = vals * weight.unsqueeze(0)
  if mode == "avg": out = terms.sum((1, 4, 6))
  else:
    # max mode takes the largest weighted tap of any sample (onnxruntime's and the reference's rule), 0 for a roi with no samples
    out = sampled.unsqueeze(0).where(terms.max(1), -math.inf).max((3, 5))
    out = out.eq(-math.inf).where(0, out)
  return out.permute(1, 0, 2, 3).cast(x.dtype)

@op("RoiAlign", since=10, ctx=True)
def roi_align_v10(ctx, x, rois, batch_indices, mode="avg", output_height=1, output_width=1, sampling_ratio=0, spatial_scale=1.0):
  return _roi_align(ctx, x, rois, batch_indices, "output_half_pixel", mode, output_height, output_width, sampling_ratio, spatial_scale)

@op("RoiAlign", since=16, ctx=True)
def roi_align(ctx, x, rois, batch_indices, coordinate_transformation_mode="half_pixel", mode="avg", output_height=1, output_width=1,
              sampling_ratio=0, spatial_scale=1.0):
  return _roi_align(ctx, x, rois, batch_indices, coordinate_transformation_mode, mode, output_height, output_width, sampling_ratio,
                    spatial_scale)
