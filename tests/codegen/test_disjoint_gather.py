"""A sum of gated loads from one buffer whose gates pin one integer into disjoint intervals (a stack of shifted views, conv's tap
windows) is lowered as one load at the address that integer picks: numpy's values, gates and padding included, with one LOAD left.
Overlapping intervals or two buffers stay a sum."""
import pathlib, sys
import numpy as np
from tinygrad import Tensor
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.codegen.disjoint_gather import merge_disjoint_loads
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's test_opt is not on sys.path by itself
from test_opt import kernel, run_cpu

W, LANES = 11, 6

def gated(buf:UOp, idx:UOp, valid:UOp) -> UOp:
  ld = buf[idx].load()
  return valid.where(UOp(Ops.LOAD, ld.dtype, (ld.src[0], ld.const_like(0.0), valid)), 0.0)

def shifted_sum(spans:list[tuple[int, int, int]], two_buffers:bool=False):
  """out[i, q] = sum over (lo, hi, shift) with lo <= q % 3 < hi of a[i + shift] (0 outside the row): a stack of shifted rows by lane"""
  def body(out, a, b):
    i, q = UOp.range(W, 0), UOp.range(LANES, 1)
    e, val = q % 3, None
    for n, (lo, hi, s) in enumerate(spans):
      pick = (e < hi) & (e > lo - 1) if lo > 0 else e < hi
      term = pick.where(gated(b if two_buffers and n else a, i + s, (i + s > -1) & (i + s < W)), 0.0)
      val = term if val is None else val + term
    return i*LANES + q, val, (i, q)
  return kernel((W, LANES), body, 2, [W, W], W*LANES, "shifted")

def want(a:np.ndarray, b:np.ndarray, spans, two_buffers=False) -> np.ndarray:
  out = np.zeros((W, LANES), np.float32)
  for i in range(W):
    for q in range(LANES):
      for n, (lo, hi, s) in enumerate(spans):
        if lo <= q % 3 < hi and 0 <= i + s < W: out[i, q] += (b if two_buffers and n else a)[i + s]
  return out.ravel()

def loads(ast:UOp) -> int: return sum(u.op is Ops.LOAD for u in ast.toposort())

def test_disjoint_taps_are_one_load():
  spans = [(0, 1, -1), (1, 2, 0), (2, 3, 1)]
  ast, ins = shifted_sum(spans)
  assert loads(merged := merge_disjoint_loads(ast)) == 1
  np.testing.assert_array_equal(run_cpu(merged, ins, W*LANES), want(*ins, spans))
  np.testing.assert_array_equal(run_cpu(ast, ins, W*LANES), want(*ins, spans))

def test_an_integer_outside_every_interval_reads_zero():
  spans = [(0, 1, 2), (2, 3, -3)]  # lanes with q % 3 == 1 are in neither
  ast, ins = shifted_sum(spans)
  assert loads(merged := merge_disjoint_loads(ast)) == 1
  np.testing.assert_array_equal(run_cpu(merged, ins, W*LANES), want(*ins, spans))

def test_overlapping_intervals_stay_a_sum():
  spans = [(0, 2, -1), (1, 3, 1)]  # q % 3 == 1 is in both: two terms add up
  ast, ins = shifted_sum(spans)
  assert loads(merge_disjoint_loads(ast)) == 2
  np.testing.assert_array_equal(run_cpu(ast, ins, W*LANES), want(*ins, spans))

def test_two_buffers_stay_a_sum():
  spans = [(0, 1, 0), (1, 3, 0)]
  ast, ins = shifted_sum(spans, two_buffers=True)
  assert loads(merge_disjoint_loads(ast)) == 2
  np.testing.assert_array_equal(run_cpu(ast, ins, W*LANES), want(*ins, spans, two_buffers=True))

def test_stacked_windows_in_panels_match_numpy():
  # conv's window copy: 9 shifted slices of a padded image stacked last, then laid out in panels of 16 (tap and channel vary by lane)
  rng = np.random.default_rng(3)
  x = rng.standard_normal((2, 16, 5, 7), dtype=np.float32)
  t = Tensor(x).pad(((0, 0), (0, 0), (1, 1), (1, 1)))
  win = Tensor.stack(*[t[:, :, ky:ky+5, kx:kx+7] for ky in range(3) for kx in range(3)], dim=-1)  # (2, 16, 5, 7, 9)
  got = win.permute(0, 2, 3, 1, 4).reshape(70, 9, 16).permute(1, 0, 2).contiguous().numpy()
  xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
  ref = np.stack([xp[:, :, ky:ky+5, kx:kx+7] for ky in range(3) for kx in range(3)], -1).transpose(0, 2, 3, 1, 4).reshape(70, 9, 16)
  np.testing.assert_array_equal(got, ref.transpose(1, 0, 2))
