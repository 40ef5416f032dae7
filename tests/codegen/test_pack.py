"""Matmul operands packed into panel-major copies (schedule/pack.py) and the range split that makes the packed address affine
(codegen/opt/split_ranges.py): which operand the rule packs and when it does not, the layout of the copy, and numpy-equal results
for odd sizes, batches, linear layers with an epilogue and gradients on every device of the op matrix (PACK=2 packs there too)."""
import pathlib, sys
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, KernelInfo, graph_rewrite
from tinygrad.uop.symbolic import symbolic
from tinygrad.dtype import dtypes
from tinygrad.helpers import Context, GlobalCounters
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.schedule.pack import panel_axis, WIDE
from tinygrad.codegen.opt import hand_coded_opts, Opt, OptOps
from tinygrad.codegen.opt.kernel import axes, size
from tinygrad.codegen.opt.split_ranges import split_divided_ranges, affine_addresses
from tinygrad.codegen.opt.heuristic import panel_streams
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's test_opt is not on sys.path by itself
from test_opt import AVX512

U = OptOps.UPCAST

def _kernels(t:Tensor) -> list:
  return [it for it in create_schedule([t.uop])[0] if it.kind == "kernel"]

def _copies(t:Tensor) -> list[tuple]:
  """the output shapes of the kernels that make a panel-major copy (named E_<panels>_<reduce>_16)"""
  return [it.ast.arg.name for it in _kernels(t) if it.ast.arg.name.startswith("E_") and it.ast.arg.name.endswith(f"_{WIDE}")]

def test_panel_axis_rule():
  x = (64, 256, 1024)  # (M, N, K), K reduced
  assert panel_axis(x, (1, 256, 1024), (2,)) == 1      # B: varies along N and K, re-read by all 64 rows
  assert panel_axis(x, (64, 1, 1024), (2,)) == 0       # A: along its rows (packed only where B can't be, see below)
  assert panel_axis((8, 256, 1024), (1, 256, 1024), (2,)) is None  # 8 rows re-read it: the copy costs more than it saves
  assert panel_axis((64, 8, 1024), (1, 8, 1024), (2,)) is None     # narrower than one panel
  assert panel_axis(x, (1, 256, 1), (2,)) is None      # does not walk the reduce

def test_which_operand_and_when():
  a, b = Tensor.empty(64, 1024), Tensor.empty(1024, 256)
  with Context(PACK=2):
    assert _copies(a @ b) == [f"E_16_1024_{WIDE}"]           # B, rows 1 KB apart
    assert _copies(a @ Tensor.empty(1024, 16)) == []         # a B 16 wide is one contiguous panel already
    w = Tensor.empty(256, 128)                               # a linear layer's weight (out, in): x @ w.T reads w down its rows
    assert _copies(Tensor.empty(32, 128) @ w.T) == [f"E_16_128_{WIDE}"]
    assert _copies(Tensor.empty(8, 1024) @ b) == []          # 8 rows re-read it: the copy costs more than it saves
    # a conv's input read as 3x3 windows: the copy would hold 9 elements per one it reads; its weight is packed along the output
    # channels instead, and the conv's own buffer is channels-last (N, H, W, C) so that those channels are the store's stride-1 axis;
    # the realized conv is a view of it (no copy to NCHW)
    conv = Tensor.empty(2, 16, 34, 34).conv2d(Tensor.empty(32, 16, 3, 3))
    assert _copies(conv) == [f"E_2_16_3_3_{WIDE}"] and [it.ast.arg.name for it in _kernels(conv)][-1] == "r_2_32_32_32"
    # A of a matmul is not packed along its rows: B (packed) serves the output's innermost axis
  with Context(PACK=1):
    assert _copies(Tensor.empty(1024, 1024) @ b) == [f"E_16_1024_{WIDE}"]  # 2^28 multiply-adds on the CPU
    assert _copies(a @ b) == []  # 2^24: the copy and its schedule cost as much as they save
  with Context(PACK=0): assert _copies(a @ b) == []

def _reduce_steps(t:Tensor) -> list[int]:
  """per load of the product's kernel (the last), the most its address steps along a reduce axis: 1 for a row read along the reduce,
  WIDE for a panel-major copy, a row's length for an operand read down its columns"""
  from tinygrad.codegen.opt.heuristic import _Access
  ast = _kernels(t)[-1].ast
  red = {r for r in ast.toposort() if r.op is Ops.RANGE and r.arg[1] is AxisType.REDUCE}
  return sorted(max((a.stride.get(r, 0) for r in red), default=0) for u in ast.toposort() if u.op is Ops.LOAD
                for a in [_Access(u.src[0].src[1], False)])

def test_an_operand_read_down_its_columns_is_copied():
  # a.T @ b reads A down a's columns, a row apart per step of the reduce: copied with the reduce innermost (as A of a @ b is), and B
  # into panels; so are both of a.T @ b.T, and x of a Linear's weight gradient x.T @ g
  a, b = Tensor.empty(1024, 64), Tensor.empty(1024, 256)
  with Context(PACK=2):
    assert _reduce_steps(Tensor.empty(64, 1024) @ b) == [1, WIDE]
    for t in (a.T @ b, a.T @ Tensor.empty(256, 1024).T, Tensor.empty(4, 1024, 64).transpose(1, 2) @ Tensor.empty(4, 1024, 256)):
      assert _reduce_steps(t) == [1, WIDE] and len(_kernels(t)) == 3
    # a matrix-vector product re-reads nothing: no copy (the heuristic's tile walks a's rows instead)
    assert _reduce_steps(a.T @ Tensor.empty(1024)) == [1, 64] and len(_kernels(a.T @ Tensor.empty(1024))) == 1
  with Context(PACK=1):
    assert _reduce_steps(a.T @ b) == [64, 256]  # 2^24 multiply-adds: the copies cost as much as they save
    assert _reduce_steps(Tensor.empty(1024, 1024).T @ Tensor.empty(1024, 1024)) == [1, WIDE]

@pytest.mark.parametrize("k,m,n", [(37, 17, 33), (16, 1, 20), (50, 18, 1)])
def test_transposed_operands_match_numpy(device, k, m, n):
  rng = np.random.default_rng(k*m*n)
  a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((k, m), (k, n), (n, k)))
  big = rng.standard_normal((k, 2*m + 1)).astype(np.float32)
  with Context(PACK=2):
    ta, tb, tc = Tensor(a, device=device), Tensor(b, device=device), Tensor(c, device=device)
    np.testing.assert_allclose((ta.T @ tb).numpy(), a.T @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose((ta.T @ tc.T).numpy(), a.T @ c.T, rtol=1e-4, atol=1e-4)
    # a strided view of a bigger buffer, and a chain whose first product is read down its columns
    np.testing.assert_allclose((Tensor(big, device=device)[:, 1::2].T @ tb).numpy(), big[:, 1::2].T @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(((ta.T @ tb) @ tc).numpy(), (a.T @ b) @ c, rtol=1e-4, atol=1e-4)

def test_linear_weight_gradient_copied(device):
  # a Linear's weight gradient reduces over the batch: g.T @ x, both read down their columns
  rng = np.random.default_rng(7)
  x, w, g = (rng.standard_normal(s).astype(np.float32) for s in ((40, 24), (33, 24), (40, 33)))
  with Context(PACK=2):
    tx, tw = Tensor(x, device=device, requires_grad=True), Tensor(w, device=device, requires_grad=True)
    (tx.linear(tw.T) * Tensor(g, device=device)).sum().backward()
    np.testing.assert_allclose(tw.grad.numpy(), g.T @ x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tx.grad.numpy(), g @ w, rtol=1e-4, atol=1e-4)

def test_a_packed_operand_is_not_packed_again():
  with Context(PACK=2):
    c = Tensor.empty(64, 1024) @ Tensor.empty(1024, 256)
    assert len(_kernels(c)) == 2
    assert len(_kernels(c + 1)) == 2  # the epilogue fuses into the matmul

def _panel_kernel(n:int, k:int) -> UOp:
  """out[i, j] = sum_r a[i, r] * packed[j//16, r, j%16]: the main kernel as the scheduler writes it for a panel-major B"""
  out, a, b = UOp.param(0, dtypes.float, (8*n,)), UOp.param(1, dtypes.float, (8*k,)), UOp.param(2, dtypes.float, (-(-n // 16)*16*k,))
  i, j, r = UOp.range(8, 0), UOp.range(n, 1), UOp.range(k, 2, AxisType.REDUCE)
  val = (a[i*k + r].load() * b[(j // 16)*(16*k) + r*16 + j % 16].load()).reduce(r, op=Ops.ADD)
  return graph_rewrite(out[i*n + j].store(val).end(i, j).sink(arg=KernelInfo(name="mm")), symbolic)

@pytest.mark.parametrize("n", [64, 40])
def test_split_makes_the_panel_address_affine(n):
  ast = _panel_kernel(n, 1024)
  assert affine_addresses(ast) == 2
  split = split_divided_ranges(ast)
  assert affine_addresses(split) == 3 and [size(r) for r in axes(split)] == [8, -(-n // 16), 16, 1024]
  # the packed load: stride 1 along the inner part, no gate even where 40 is padded to 48 (the copy is padded too)
  load = next(u for u in split.toposort() if u.op is Ops.LOAD and u.src[0].src[0].arg.slot == 2)
  assert len(load.src) == 1
  assert not panel_streams(split) and panel_streams(ast.replace(arg=ast.arg))  # contiguous panel rows: the 4x16 tile, no 8x16

def test_split_needs_a_gain():
  out, a = UOp.param(0, dtypes.float, (64,)), UOp.param(1, dtypes.float, (64,))
  j = UOp.range(64, 0)
  ast = out[j].store(a[j].load() + (j // 16).cast(dtypes.float)).end(j).sink(arg=KernelInfo(name="e"))
  assert split_divided_ranges(ast) is ast  # every address is affine already

@pytest.mark.parametrize("m,k,n", [(17, 37, 33), (20, 24, 16), (16, 9, 50)])
def test_matmul_packed_matches_numpy(device, m, k, n):
  rng = np.random.default_rng(m*k*n)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  with Context(PACK=2):
    w = Tensor(b.T.copy(), device=device)  # a weight stored (out, in): packed at any size
    assert _copies(Tensor(a, device=device) @ w.T)
    np.testing.assert_allclose((Tensor(a, device=device) @ w.T).numpy(), a @ b, rtol=1e-4, atol=1e-4)

def test_batched_linear_and_gradient_packed(device):
  rng = np.random.default_rng(3)
  x, w, bias = (rng.standard_normal(s).astype(np.float32) for s in ((2, 16, 6), (17, 6), (17,)))
  y = rng.standard_normal((2, 6, 17)).astype(np.float32)
  with Context(PACK=2):
    tx, tw = Tensor(x, device=device, requires_grad=True), Tensor(w, device=device, requires_grad=True)
    assert _copies(tx @ tw.T)
    out = (tx @ tw.T + Tensor(bias, device=device)).relu()
    ref = np.maximum(x @ w.T + bias, 0)
    out.sum().backward()
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)
    g = (ref > 0).astype(np.float32)
    np.testing.assert_allclose(tw.grad.numpy(), np.einsum("bij,bik->jk", g, x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tx.grad.numpy(), g @ w, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose((Tensor(x, device=device) @ Tensor(y, device=device)).numpy(), x @ y, rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("n", [1000, 1030])
def test_large_matmul_cpu(n):
  rng = np.random.default_rng(n)
  a, b = rng.standard_normal((n, 640)).astype(np.float32), rng.standard_normal((640, n)).astype(np.float32)
  c = Tensor(a) @ Tensor(b)
  assert _copies(c)  # packed by the default rule on the CPU
  np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-3, atol=1e-3)

@pytest.mark.parametrize("m,k,n", [(64, 2048, 1000), (1001, 320, 1001), (520, 520, 520)])
def test_odd_width_matmuls_cpu(m, k, n):
  # widths 16 does not divide: padded tiles, the last panel's gated stores peeled off the loop (codegen/opt/peel.py). Packed by the
  # default rule where the host has 64-byte vectors (2^27 multiply-adds), forced elsewhere (AVX2's threshold is 2^28)
  rng = np.random.default_rng(m + n)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  with Context(PACK=1 if Device["CPU"].renderer.vector_bytes >= 64 else 2):
    c = Tensor(a) @ Tensor(b)
    assert _copies(c)
  np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-3, atol=2e-3)

def test_fused_multiply_add_only_on_whole_vectors():
  # a packed panel's 16 lanes, or an unpacked reduce's 16 lanes along its store's stride-1 axis, are whole vectors: fused; 8 lanes of the
  # panel (or a tile of scalar lanes) are not
  from tinygrad import Device
  from tinygrad.codegen import get_program
  from tinygrad.codegen.opt.heuristic import reads_packed_panel, whole_vector_tile
  from tinygrad.codegen.opt.kernel import apply_opts, Opt, OptOps
  split = split_divided_ranges(_panel_kernel(64, 1024))
  tiled, halves = apply_opts(split, [Opt(OptOps.UPCAST, 2, 16), Opt(OptOps.UPCAST, 0, 4)]), apply_opts(split, [Opt(OptOps.UPCAST, 2, 8)])
  assert reads_packed_panel(tiled) and whole_vector_tile(tiled) and not reads_packed_panel(halves) and not whole_vector_tile(halves)
  a, b = Tensor.empty(1024, 1024), Tensor.empty(1024, 256)
  with Context(PACK=0): plain = _kernels(a @ b)[-1].ast
  assert whole_vector_tile(apply_opts(plain, [Opt(OptOps.UPCAST, 1, 16), Opt(OptOps.UPCAST, 0, 4)]))
  assert not whole_vector_tile(apply_opts(plain, [Opt(OptOps.UPCAST, 1, 8), Opt(OptOps.UPCAST, 0, 4)]))
  assert not whole_vector_tile(apply_opts(plain, [Opt(OptOps.UPCAST, 0, 16)]))  # 16 rows: lanes a row apart
  r = Device["CPU"].renderer
  if Ops.MULACC not in r.code_for_op: pytest.skip("this host CPU has no FMA instruction: no MULACC either way")
  assert "llvm.fma" in get_program(tiled, r).src and "llvm.fma" not in get_program(halves, r).src
  with Context(FMA=0): assert "llvm.fma" not in get_program(tiled, r).src

@pytest.mark.parametrize("co", [3, 7, 10])
def test_conv_of_few_channels_fused_along_rows_matches_numpy(co):
  # too few output channels for a panel: the conv's vectors run along its rows of 32 (16 lanes, whole vectors), fused multiply-adds
  from tinygrad import Device
  from tinygrad.codegen import get_program
  rng = np.random.default_rng(co)
  x, w = rng.standard_normal((2, 8, 32, 32)).astype(np.float32), rng.standard_normal((co, 8, 3, 3)).astype(np.float32)
  out = Tensor(x).conv2d(Tensor(w), padding=1)
  r = Device["CPU"].renderer
  if Ops.MULACC in r.code_for_op:
    assert "llvm.fma" in get_program(next(it.ast for it in _kernels(out) if it.ast.arg.name.startswith("r_")), r).src
  np.testing.assert_allclose(out.numpy(), _np_conv(x, w, 1, 1, 1), rtol=1e-4, atol=1e-4)

def test_packed_chain_strided_view_and_ints(device):
  rng = np.random.default_rng(5)
  a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((16, 8), (8, 34), (17, 40)))
  ai, bi = rng.integers(-9, 9, (16, 8)).astype(np.int32), rng.integers(-9, 9, (8, 20)).astype(np.int32)
  with Context(PACK=2):
    t = (Tensor(a, device=device) @ Tensor(b, device=device)[:, ::2]) @ Tensor(c, device=device)  # a packed product, a strided view
    assert len(_copies(t)) == 2
    np.testing.assert_allclose(t.numpy(), (a @ b[:, ::2]) @ c, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal((Tensor(ai, device=device) @ Tensor(bi, device=device)).numpy(), ai @ bi)

def _np_windows(x, kh:int, kw:int, stride:int, pad:int, groups:int):
  """(N, groups, C/groups, OH, OW, kh, kw): every window of the padded input, a strided numpy view"""
  x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
  win = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
  return win.reshape(x.shape[0], groups, x.shape[1] // groups, *win.shape[2:])

def _np_conv(x, w, stride:int, pad:int, groups:int):
  win, (co, cg, kh, kw) = _np_windows(x, *w.shape[2:], stride, pad, groups), w.shape
  return np.einsum("ngcyxij,gocij->ngoyx", win, w.reshape(groups, co // groups, cg, kh, kw)).reshape(x.shape[0], co, *win.shape[3:5])

def _np_conv_grads(x, w, g, stride:int, pad:int, groups:int):
  """d/dw and d/dx of sum(conv(x, w) * g): each window's share of g times the input, and g times the weight added back onto every
  input element its window read"""
  (n, c, h, wd), (co, cg, kh, kw) = x.shape, w.shape
  gg = g.reshape(n, groups, co // groups, *g.shape[2:])
  dw = np.einsum("ngcyxij,ngoyx->gocij", _np_windows(x, kh, kw, stride, pad, groups), gg).reshape(w.shape)
  dxp = np.zeros((n, c, h + 2*pad, wd + 2*pad), np.float32)
  taps = np.einsum("ngoyx,gocij->ngcyxij", gg, w.reshape(groups, co // groups, cg, kh, kw)).reshape(n, c, *g.shape[2:], kh, kw)
  oh, ow = g.shape[2:]
  for i in range(kh):
    for j in range(kw): dxp[:, :, i:i + stride*(oh-1) + 1:stride, j:j + stride*(ow-1) + 1:stride] += taps[..., i, j]
  return dw, dxp[:, :, pad:pad + h, pad:pad + wd]

def _conv_case(stride:int, groups:int):
  """small enough for the emulator, big enough to pack: 16 output channels per group, 16 re-reads of the weight (N x out pixels)"""
  rng = np.random.default_rng(stride + groups)
  xs = (1, 4, 6, 6) if stride == 1 else (2, 4, 9, 8)
  return rng.standard_normal(xs).astype(np.float32), rng.standard_normal((16 * groups, 4 // groups, 3, 3)).astype(np.float32), rng

@pytest.mark.parametrize("stride,pad,groups", [(1, 1, 1), (2, 0, 2)])
def test_conv_packed_weight_matches_numpy(device, stride, pad, groups):
  x, w, _ = _conv_case(stride, groups)
  with Context(PACK=2):
    out = Tensor(x, device=device).conv2d(Tensor(w, device=device), groups=groups, stride=stride, padding=pad)
    assert _copies(out)
    np.testing.assert_allclose(out.numpy(), _np_conv(x, w, stride, pad, groups), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("stride,pad,groups", [(1, 1, 1), (2, 0, 2)])
def test_conv_gradients_packed(stride, pad, groups):
  """the backward's big reduces (the weight's gradient, the input's) are packed too under PACK=2: their values against numpy"""
  x, w, rng = _conv_case(stride, groups)
  g = rng.standard_normal(_np_conv(x, w, stride, pad, groups).shape).astype(np.float32)
  with Context(PACK=2):
    tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
    (tx.conv2d(tw, groups=groups, stride=stride, padding=pad) * Tensor(g)).sum().backward()
    dw, dx = _np_conv_grads(x, w, g, stride, pad, groups)
    np.testing.assert_allclose(tw.grad.numpy(), dw, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tx.grad.numpy(), dx, rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("k,stride,pad", [(7, 1, 3), (3, 2, 1), (5, 1, 0)])
def test_depthwise_weight_not_packed(device, k, stride, pad):
  """a depthwise conv's weight varies along the channels as its input does: a panel of channels shares no load between its lanes, so
  nothing is packed (not even under PACK=2) and the conv keeps its NCHW buffer; its values against numpy"""
  rng = np.random.default_rng(k + stride)
  x, w = rng.standard_normal((2, 32, 9, 11)).astype(np.float32), rng.standard_normal((32, 1, k, k)).astype(np.float32)
  with Context(PACK=2):
    out = Tensor(x, device=device).conv2d(Tensor(w, device=device), groups=32, stride=stride, padding=pad)
    assert _copies(out) == []
    np.testing.assert_allclose(out.numpy(), _np_conv(x, w, stride, pad, 32), rtol=1e-4, atol=1e-4)

def test_operand_with_a_contiguous_inside_is_packed():
  # the copy's analysis reads a contiguous() inside the operand as the buffer it will be (a conv's window buffer is one)
  with Context(PACK=2): assert _copies(Tensor.empty(32, 128) @ (Tensor.empty(256, 128) * 2).contiguous().T) == [f"E_16_128_{WIDE}"]

def test_operand_under_contiguous_backward_is_packed():
  # contiguous_backward is the value itself in the forward: the weight broadcast per image for its gradient (tensor_conv's direct form,
  # output gradient past L2) is packed like the weight alone, so the forward's kernels stay those of a conv without gradient
  with Context(PACK=2):
    conv = Tensor.empty(8, 64, 58, 58).conv2d(Tensor.empty(64, 64, 3, 3, requires_grad=True))
    assert _copies(conv) == [f"E_4_64_3_3_{WIDE}"]

def _captured_copies(jit) -> list[str]:
  return [runner[0].name for kind, runner, _, _ in jit.captured.items
          if kind == "kernel" and runner[0].name.startswith("E_") and runner[0].name.endswith(f"_{WIDE}")]

def test_jit_capture_packs_smaller_matmuls():
  from tinygrad import TinyJit
  from tinygrad.schedule.pack import MIN_WORK, MIN_WORK_JIT
  rng = np.random.default_rng(7)
  w, small = Tensor(rng.standard_normal((256, 256)).astype(np.float32)), Tensor(rng.standard_normal((32, 32)).astype(np.float32))
  assert MIN_WORK_JIT <= 64 * 256 * 256 < MIN_WORK and 32 * 32 * 32 < MIN_WORK_JIT
  @TinyJit
  def f(x:Tensor, y:Tensor) -> tuple[Tensor, Tensor]: return (x @ w.T).realize(), (y @ small.T).realize()
  with Context(PACK=2): assert _copies(Tensor.empty(32, 32) @ small.T)  # the rule itself would pack the small one too
  with Context(PACK=1):
    assert _copies(Tensor.empty(64, 256) @ w.T) == []  # outside a JIT: below MIN_WORK, not worth its schedule time
    for i in range(4):
      x, y = rng.standard_normal((64, 256)).astype(np.float32), rng.standard_normal((32, 32)).astype(np.float32)
      got = f(Tensor(x), Tensor(y))
      np.testing.assert_allclose(got[0].numpy(), x @ w.numpy().T, rtol=1e-4, atol=1e-4)
      np.testing.assert_allclose(got[1].numpy(), y @ small.numpy().T, rtol=1e-4, atol=1e-4)
    assert _captured_copies(f) == [f"E_16_256_{WIDE}"]  # the 2^22 product is packed, the 2^15 one is not
    # the schedule cache keys on JIT_CAPTURE: the same graph outside the JIT gets the unpacked schedule again
    k0 = GlobalCounters.kernel_count
    (Tensor(x) @ w.T).realize()
    assert GlobalCounters.kernel_count - k0 == 1

def test_jitted_im2col_conv_step_packed_matches_numpy():
  # conv 8 -> 16, 3x3 over 13x13 (an 11-wide output row: the im2col form) with its gradients, under TinyJit where the 2^20-2^28
  # products are packed; numpy's windows give the reference
  from tinygrad import TinyJit
  rng = np.random.default_rng(11)
  wn = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
  w = Tensor(wn, requires_grad=True)
  @TinyJit
  def step(x:Tensor, g:Tensor) -> tuple[Tensor, Tensor, Tensor]:
    out = x.conv2d(w)
    (out * g).sum().backward()
    ret = out.realize(), w.grad.realize(), x.grad.realize()
    w.grad = None
    return ret
  with Context(PACK=1):
    for i in range(4):
      xn, gn = rng.standard_normal((16, 8, 13, 13)).astype(np.float32), rng.standard_normal((16, 16, 11, 11)).astype(np.float32)
      out, wg, xg = step(Tensor(xn, requires_grad=True), Tensor(gn))
      win = np.lib.stride_tricks.sliding_window_view(xn, (3, 3), axis=(2, 3))  # (N, Cin, 11, 11, 3, 3)
      np.testing.assert_allclose(out.numpy(), np.einsum("ncyxij,ocij->noyx", win, wn), rtol=1e-3, atol=1e-3)
      np.testing.assert_allclose(wg.numpy(), np.einsum("ncyxij,noyx->ocij", win, gn), rtol=1e-3, atol=1e-3)
      xref = np.zeros_like(xn)
      for a in range(3):
        for b in range(3): xref[:, :, a:a+11, b:b+11] += np.einsum("noyx,oc->ncyx", gn, wn[:, :, a, b])
      np.testing.assert_allclose(xg.numpy(), xref, rtol=1e-3, atol=1e-3)
    assert len(_captured_copies(step)) >= 2  # the weight (forward, windows' gradient), the window buffer (weight gradient)

def test_matmuls_pack_from_min_work_on_any_vectors(monkeypatch):
  # the copy pays from 2^25 multiply-adds on AVX2 as on AVX-512 (512^2 at 2 threads on znver3: 92 -> 151 GFLOP/s packed; 2^28 was the
  # AVX2 threshold before); 256^3 stays unpacked. Either way the product is what numpy computes
  from tinygrad import Device
  from tinygrad.schedule.pack import MIN_WORK
  assert 320**3 < MIN_WORK <= 384**3 and 256**3 < MIN_WORK
  rng = np.random.default_rng(3)
  a, b = rng.standard_normal((384, 384)).astype(np.float32), rng.standard_normal((384, 384)).astype(np.float32)
  for vector_bytes in (32, 64):
    monkeypatch.setattr(Device["CPU"].renderer, "vector_bytes", vector_bytes)
    with Context(PACK=1):
      assert _copies(Tensor(a, device="CPU") @ Tensor(b, device="CPU")) == [f"E_24_384_{WIDE}"]
      assert _copies(Tensor.empty(256, 256, device="CPU") @ Tensor.empty(256, 256, device="CPU")) == []
      np.testing.assert_allclose((Tensor(a, device="CPU") @ Tensor(b, device="CPU")).numpy(), a @ b, rtol=1e-4, atol=1e-3)

def _np_conv_transpose_s2p1(x, w):
  """conv_transpose2d stride 2, padding 1: a conv of the zero-stuffed input, padded k-2, with the flipped, transposed weight"""
  n, c, h, wd = x.shape
  up = np.zeros((n, c, 2*h - 1, 2*wd - 1), x.dtype)
  up[:, :, ::2, ::2] = x
  k = w.shape[2]
  return _np_conv(up, w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1], 1, k - 2, 1)

# (input shape, weight shape, the op, numpy's, the kernels a realize runs): a direct conv writes the weight's panels and the conv; a
# strided conv_transpose (its phases' conv: 4 phases x 16 channels) also the weight's phases and its padded input
LAYOUT_VIEWS = {"conv2d": ((2, 16, 34, 34), (32, 16, 3, 3), lambda x, w: x.conv2d(w), lambda x, w: _np_conv(x, w, 1, 0, 1), 2),
                "conv_transpose2d": ((2, 16, 5, 6), (16, 16, 4, 4), lambda x, w: x.conv_transpose2d(w, stride=2, padding=1),
                                     _np_conv_transpose_s2p1, 4)}

@pytest.mark.parametrize("op", LAYOUT_VIEWS)
def test_realized_conv_is_a_view_of_its_channels_last_buffer(op):
  # the direct conv's reduce writes (N, H, W, C): the realized result is a permuted view of that buffer (torch's channels-last), not a
  # second kernel copying it to NCHW; a strided conv_transpose's is its phases' conv's buffer interleaved (a permute) and cropped (a
  # shrink). It reads, realizes again, takes an assign, returns from a TinyJit and steps as a parameter
  from tinygrad import TinyJit, nn
  xs, ws, f, npf, kernels = LAYOUT_VIEWS[op]
  rng = np.random.default_rng(5)
  x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
  ref = npf(x, w)
  with Context(PACK=2):
    out = f(Tensor(x), Tensor(w))
    GlobalCounters.reset()
    out.realize()
    assert GlobalCounters.kernel_count == kernels and not out._is_buffer() and out.uop.base.op is Ops.BUFFER
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)
    GlobalCounters.reset()
    out.realize()
    assert GlobalCounters.kernel_count == 0
    np.testing.assert_allclose((out.relu() + 1).numpy(), np.maximum(ref, 0) + 1, rtol=1e-4, atol=1e-4)
    out.assign(out * 2)
    np.testing.assert_allclose(out.numpy(), 2 * ref, rtol=1e-4, atol=1e-4)
    @TinyJit
    def step(a:Tensor) -> Tensor: return f(a, Tensor(w)).realize()
    for _ in range(3):
      xi = rng.standard_normal(x.shape).astype(np.float32)
      np.testing.assert_allclose(step(Tensor(xi)).numpy(), npf(xi, w), rtol=1e-4, atol=1e-4)
    p = f(Tensor(x), Tensor(w)).realize()
    p.requires_grad = True
    opt = nn.optim.SGD([p], lr=0.25)
    with Tensor.train():
      opt.zero_grad()
      (p * p).sum().backward()
      opt.step()
    np.testing.assert_allclose(p.numpy(), ref * 0.5, rtol=1e-4, atol=1e-4)  # p - 0.25 * 2p

def test_direct_conv_tile_broadcasts_neighbouring_pixels():
  # the conv's vectors run along the output channels (the packed weight's panels); its input pixels are broadcast one per lane, so lanes
  # along the row are no cheaper in loads than lanes along the batch, but they share cache lines: the tile takes 2 panels x 8 pixels
  # of a row (b8 64->64 56x56 on AVX-512: 4.2 ms), not 8 images (5.4 ms) nor the 16-vs-1 load mix of 8 pixels x 2 images (4.5 ms)
  out = Tensor.empty(8, 64, 56, 56).conv2d(Tensor.empty(64, 64, 3, 3), padding=1)
  with Context(PACK=1, THREADS=1):
    ast = split_divided_ranges(next(it.ast for it in _kernels(out) if it.ast.arg.name.startswith("r_")))
    assert [size(r) for r in axes(ast)] == [8, 56, 56, 4, 16, 64, 3, 3]  # (N, H, W, channel panels, 16 channels; Cin, KH, KW)
    opts = hand_coded_opts(ast, AVX512)
  assert opts[:3] == [Opt(U, 4, 16), Opt(U, 3, 2), Opt(U, 2, 8)], opts

def _conv_buffer_channels(out:Tensor) -> int:
  """the channels of the buffer the conv's reduce stores: the innermost axis of its channels-last buffer, last in the kernel's name"""
  return int(next(it.ast.arg.name for it in _kernels(out) if it.ast.arg.name.startswith("r_")).split("_")[-1])

# output channels -> the channels-last buffer's: a last panel of lanes that are no one vector (3, 6, 15 of 16) is stored whole, the
# packed weight's zero channels computed and cropped off by the view; one whole vector's lanes (1, 4, 8) keep the exact width
WHOLE_PANELS = {17: 17, 19: 32, 22: 32, 20: 20, 24: 24, 31: 32, 32: 32}

@pytest.mark.parametrize("co", WHOLE_PANELS)
def test_odd_output_channels_whole_panels_match_numpy(co):
  rng = np.random.default_rng(co)
  x, w = rng.standard_normal((2, 5, 7, 9)).astype(np.float32), rng.standard_normal((co, 5, 3, 3)).astype(np.float32)
  with Context(PACK=2):
    out = Tensor(x).conv2d(Tensor(w), padding=1)
    assert _conv_buffer_channels(out) == WHOLE_PANELS[co]
    want = _np_conv(x, w, 1, 1, 1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose((out.relu() * 2).sum(axis=(0, 2, 3)).numpy(), (np.maximum(want, 0) * 2).sum(axis=(0, 2, 3)), rtol=1e-4, atol=1e-3)

def test_odd_output_channels_gradients_and_stride_match_numpy():
  """a strided conv of 31 channels (a last panel of 15 lanes, stored whole) and its gradients against numpy"""
  rng = np.random.default_rng(31)
  x, w = rng.standard_normal((2, 4, 9, 8)).astype(np.float32), rng.standard_normal((31, 4, 3, 3)).astype(np.float32)
  g = rng.standard_normal(_np_conv(x, w, 2, 1, 1).shape).astype(np.float32)
  with Context(PACK=2):
    tx, tw = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
    out = tx.conv2d(tw, stride=2, padding=1)
    np.testing.assert_allclose(out.numpy(), _np_conv(x, w, 2, 1, 1), rtol=1e-4, atol=1e-4)
    (out * Tensor(g)).sum().backward()
    dw, dx = _np_conv_grads(x, w, g, 2, 1, 1)
    np.testing.assert_allclose(tw.grad.numpy(), dw, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tx.grad.numpy(), dx, rtol=1e-4, atol=1e-4)

def test_few_channels_conv_tile_takes_every_channel():
  # a conv of 3 output channels (too few to pack) along its rows: lanes along the channels share every load of the input's windows, so
  # the tile takes all 3 beside 16 pixels, not 4 rows of the input's own and then no room for them (b8 64->3 56x56, one thread: 1.9 ->
  # 1.2 ms)
  out = Tensor.empty(8, 64, 56, 56).conv2d(Tensor.empty(3, 64, 3, 3), padding=1)
  with Context(PACK=1, THREADS=1):
    ast = split_divided_ranges(next(it.ast for it in _kernels(out) if it.ast.arg.name.startswith("r_")))
    assert [size(r) for r in axes(ast)] == [8, 3, 56, 56, 64, 3, 3]
    opts = hand_coded_opts(ast, AVX512)
  assert Opt(U, 1, 3) in opts and Opt(U, 3, 16) in opts, opts

def test_jitted_direct_conv_packs_weight_only_where_pixels_reread_it():
  # under a JIT capture the packing threshold admits batch-1 convs; a direct conv's weight packed along its output channels is copied
  # on every call, so it is packed only where MIN_REUSE_ACROSS pixels re-read it (16x16 at batch 1), not at 4x4 or 8x8 (rows of a
  # power of two, which the unpacked form tiles in whole vectors; rows of 7 keep it)
  from tinygrad import TinyJit
  from tinygrad.schedule.pack import MIN_REUSE_ACROSS, packs_along
  rng = np.random.default_rng(5)
  big = 1 << 28  # past the threshold of every host's vectors: the grid decides
  assert not packs_along("CPU", 64, big, (1, 8, 8)) and packs_along("CPU", 64, big, (1, 16, 16)) and packs_along("CPU", 64, big, (1, 7, 7))
  w = Tensor(rng.standard_normal((64, 32, 3, 3)).astype(np.float32) * 0.1).realize()
  for hw, packs in ((4, False), (8, False), (16, True)):
    assert (hw * hw >= MIN_REUSE_ACROSS) == packs
    @TinyJit
    def f(x:Tensor) -> Tensor: return x.conv2d(w, padding=1).realize()
    with Context(PACK=1):
      for i in range(3):
        x = rng.standard_normal((1, 32, hw, hw)).astype(np.float32)
        np.testing.assert_allclose(f(Tensor(x)).numpy(), _np_conv(x, w.numpy(), 1, 1, 1), rtol=1e-4, atol=1e-4)
      assert bool(_captured_copies(f)) == packs, (hw, _captured_copies(f))
  with Context(PACK=2):  # the rule itself, at any size
    assert _copies(Tensor.empty(1, 32, 4, 4).conv2d(Tensor.empty(64, 32, 3, 3), padding=1))
