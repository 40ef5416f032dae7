"""Index math that divides a range: a pool gradient's address divides two ranges, which split_ranges.py splits together, and a panel
copy's lanes are divided into channels and taps, which the heuristic takes whole (heuristic._divided_lanes)."""
import pathlib, sys
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop.ops import UOp, KernelInfo, graph_rewrite
from tinygrad.uop.symbolic import symbolic
from tinygrad.dtype import dtypes
from tinygrad.helpers import Context
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen.opt import hand_coded_opts, Opt, OptOps
from tinygrad.codegen.opt.kernel import axes, size
from tinygrad.codegen.opt.split_ranges import split_divided_ranges, affine_addresses
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's test_opt is not on sys.path by itself
from test_opt import AVX2, AVX512

def _pool_gradient_kernel(n:int, channels:int=8) -> UOp:
  """out[h, w, c] = a[h, w, c] * g[c, h//2, w//2]: a 2x2 max pool's gradient written channels-last (as a packed conv's output is), the
  pooled gradient read at each input pixel"""
  m = n // 2
  out, a = UOp.param(0, dtypes.float, (n*n*channels,)), UOp.param(1, dtypes.float, (n*n*channels,))
  g = UOp.param(2, dtypes.float, (channels*m*m,))
  h, w, c = UOp.range(n, 0), UOp.range(n, 1), UOp.range(channels, 2)
  val = a[(h*n + w)*channels + c].load() * g[c*m*m + (h // 2)*m + w // 2].load()
  return graph_rewrite(out[(h*n + w)*channels + c].store(val).end(h, w, c).sink(arg=KernelInfo(name="pool_grad")), symbolic)

def test_an_address_dividing_two_ranges_splits_both():
  # split alone, neither h nor w makes g's address affine: both are split, into the pooled pixel and its place in the window
  ast = _pool_gradient_kernel(26)
  assert affine_addresses(ast) == 2
  split = split_divided_ranges(ast)
  assert affine_addresses(split) == 3 and sorted(size(r) for r in axes(split)) == [2, 2, 8, 13, 13]

def test_a_range_the_store_walks_is_not_split_with_others():
  # NCHW: w is the store's stride-1 axis, whole vectors of it whose divisions are constants once upcast; h alone makes nothing affine
  n, m = 8, 4
  out, a, g = UOp.param(0, dtypes.float, (n*n,)), UOp.param(1, dtypes.float, (n*n,)), UOp.param(2, dtypes.float, (m*m,))
  h, w = UOp.range(n, 0), UOp.range(n, 1)
  ast = graph_rewrite(out[h*n + w].store(a[h*n + w].load() * g[(h // 2)*m + w // 2].load()).end(h, w).sink(arg=KernelInfo(name="e")), symbolic)
  assert split_divided_ranges(ast) is ast

@pytest.mark.parametrize("n", [10, 11])
def test_a_divided_store_axis_is_upcast_whole(n):
  # NCHW pool gradient: the store walks w with stride 1 and g is read at w // 2. Whole, each lane's w // 2 is a constant; untiled (11)
  # or in pairs (10) every element divides again (MNIST's second pool gradient, (64, 64, 11, 11) at 2 threads: 0.65 -> 0.16 ms)
  m, batch = n // 2, 256
  out, a, g = UOp.param(0, dtypes.float, (batch*n*n,)), UOp.param(1, dtypes.float, (batch*n*n,)), UOp.param(2, dtypes.float, (batch*m*m,))
  b, h, w = UOp.range(batch, 0), UOp.range(n, 1), UOp.range(n, 2)
  pooled = ((h < 2*m) & (w < 2*m)).where(g[b*m*m + (h // 2)*m + w // 2].load(), 0.0)
  ast = graph_rewrite(out[(b*n + h)*n + w].store(a[(b*n + h)*n + w].load() * pooled).end(b, h, w).sink(arg=KernelInfo(name="e")), symbolic)
  assert hand_coded_opts(split_divided_ranges(ast), AVX2)[0] == Opt(OptOps.UPCAST, 2, n)

def test_nchw_pool_gradient_of_an_odd_conv_output():
  rng = np.random.default_rng(3)
  x, w = rng.standard_normal((8, 3, 13, 13), dtype=np.float32), rng.standard_normal((8, 3, 3, 3), dtype=np.float32)
  tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
  out = tx.conv2d(tw).relu().max_pool2d(2)  # 11x11 -> 5x5: the last row and column of each map are in no window
  g = rng.standard_normal(out.shape, dtype=np.float32)
  (out * Tensor(g)).sum().backward()
  windows = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))
  dy = _relu_pool_output_gradient(np.einsum("nchwij,ocij->nohw", windows, w), g)
  np.testing.assert_allclose(tw.grad.numpy(), np.einsum("nohw,nchwij->ocij", dy, windows), rtol=1e-4, atol=1e-4)
  dx = np.zeros_like(x)
  for i in range(3):
    for j in range(3): dx[:, :, i:i+11, j:j+11] += np.einsum("nohw,oc->nchw", dy, w[:, :, i, j])
  np.testing.assert_allclose(tx.grad.numpy(), dx, rtol=1e-4, atol=1e-4)

def _relu_pool_output_gradient(y:np.ndarray, g:np.ndarray) -> np.ndarray:
  """d/dy of sum(maxpool2x2(relu(y)) * g): each window's max takes the window's gradient (random data has no ties but relu's zeros,
  whose gradient relu' zeroes)"""
  n, c, h, w = y.shape
  r = np.maximum(y, 0)
  win = r[:, :, :h//2*2, :w//2*2].reshape(n, c, h//2, 2, w//2, 2)
  at_max = win == win.max(axis=(3, 5), keepdims=True)
  out = np.zeros_like(y)
  out[:, :, :h//2*2, :w//2*2] = (at_max * g[:, :, :, None, :, None]).reshape(n, c, h//2*2, w//2*2)
  return out * (y > 0)

@pytest.mark.parametrize("hw", [28, 9])  # 9: a 7x7 conv output, its window axes padded to 8 before the split
def test_channels_last_pool_gradient_is_split(hw):
  # a conv packed along its output channels stores channels-last; its ReLU and 2x2 pool gradient reads the pooled gradient at (h//2, w//2)
  rng = np.random.default_rng(hw)
  x, w = rng.standard_normal((2, 1, hw, hw), dtype=np.float32), rng.standard_normal((16, 1, 3, 3), dtype=np.float32)
  b = rng.standard_normal(16, dtype=np.float32)
  tw, tb = Tensor(w, requires_grad=True), Tensor(b, requires_grad=True)
  out = Tensor(x).conv2d(tw, tb).relu().max_pool2d(2)
  g = rng.standard_normal(out.shape, dtype=np.float32)
  (out * Tensor(g)).sum().backward()
  with Context(PACK=2):
    asts = [it.ast for it in create_schedule([tw.grad.uop, tb.grad.uop])[0] if it.kind == "kernel"]
    assert any(len(axes(s := split_divided_ranges(a))) == len(axes(a)) + 2 and affine_addresses(s) > affine_addresses(a) for a in asts)
    got_w, got_b = tw.grad.numpy(), tb.grad.numpy()
  windows = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))  # (n, c, oh, ow, kh, kw)
  dy = _relu_pool_output_gradient(np.einsum("nchwij,ocij->nohw", windows, w) + b[None, :, None, None], g)
  np.testing.assert_allclose(got_w, np.einsum("nohw,nchwij->ocij", dy, windows), rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(got_b, dy.sum((0, 2, 3)), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("renderer", [AVX2, AVX512], ids=["avx2", "avx512"])
def test_panel_copy_of_conv_taps_takes_its_lanes_whole(renderer):
  # the weight gradient's operand, packed along in-channels x taps (36 = 4 x 3 x 3) in panels of 16: lane k of panel p reads channel
  # (16p + k) // 9, tap (16p + k) % 9. All 16 lanes upcast, that math is per panel, out of the pixel loops
  rng = np.random.default_rng(0)
  x, w = rng.standard_normal((2, 4, 6, 6), dtype=np.float32), rng.standard_normal((16, 4, 3, 3), dtype=np.float32)
  g = rng.standard_normal((2, 16, 4, 4), dtype=np.float32)
  tw = Tensor(w, requires_grad=True)
  (Tensor(x).conv2d(tw) * Tensor(g)).sum().backward()
  with Context(PACK=2):
    copy = next(it.ast for it in create_schedule([tw.grad.uop])[0] if it.kind == "kernel" and it.ast.arg.name.endswith("_16"))
    copy = split_divided_ranges(copy)
    lane = next(i for i, r in enumerate(axes(copy)) if size(r) == 16)
    assert Opt(OptOps.UPCAST, lane, 16) in hand_coded_opts(copy, renderer)
    got = tw.grad.numpy()
  windows = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))  # (n, c, oh, ow, kh, kw)
  np.testing.assert_allclose(got, np.einsum("nohw,nchwij->ocij", g, windows), rtol=1e-4, atol=1e-4)
