"""Prefix reduces as one pass (codegen/prefix_scan.py): cumsum, cumprod, cummax/cummin and logcumsumexp against numpy along the last
axis and along axis 0, at odd sizes and in several dtypes, their gradients, the kernels' work (a few ops per element, not the
triangle's O(n)), the same bits as the triangle summed in order, and the opts leaving the scanned axis alone."""
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes
from tinygrad.uop import Ops
from tinygrad.uop.ops import graph_rewrite
from tinygrad.uop.symbolic import symbolic
from tinygrad.helpers import Context
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program
from tinygrad.codegen.prefix_scan import TAG, LANES, mark_scans, serial_scan
from tinygrad.codegen.opt import Opt, OptOps, OptError, apply_opt, axes
from tinygrad.mixin.scan import SCAN_BLOCK

R = np.random.default_rng(7)
# the CPU's two renderers, and the PYTHON emulator (work items: the pass runs there only under SCAN=2) at small sizes
DEVICES = [("CPU", (1, 7, 1000, 1025)), ("CPU:C", (1, 7, 300)), ("PYTHON", (1, 7, 40))]

def scanned(t:Tensor, device:str) -> bool:
  """every kernel of t does a few ops per element of t (a scan: ~2; a serial MAX scan's in-block prefix over its block of 4: ~15), none
  O(n) per element (the triangle: over 3n)"""
  items = [it for it in create_schedule([t.uop])[0] if it.kind == "kernel"]
  return max(get_program(it.ast, Device[device].renderer).ops for it in items) < 24 * t.numel()

@pytest.fixture(params=DEVICES, ids=[d for d, _ in DEVICES])
def dev(request):
  device, sizes = request.param
  if device == "CPU:C":
    try: Device["CPU:C"]
    except Exception as e: pytest.skip(f"no C compiler: {e}")
  with Context(SCAN=2 if device == "PYTHON" else 1): yield device, sizes

def test_scan_values(dev):
  device, sizes = dev
  for n in sizes:
    a = R.standard_normal((3, n)).astype(np.float32)
    ai = R.integers(-4, 5, (n, 5)).astype(np.int32)
    for x, axis, want, tol in [(a, 1, np.cumsum(a.astype(np.float64), 1), 1e-4), (a.T.copy(), 0, np.cumsum(a.T.astype(np.float64), 0), 1e-4)]:
      t = Tensor(x, device=device).cumsum(axis)
      if n > 1: assert scanned(t, device), "the kernel lost its scan form"
      np.testing.assert_allclose(t.numpy(), want, rtol=tol, atol=tol * max(1, n ** 0.5))
    np.testing.assert_array_equal(Tensor(ai, device=device).cumsum(0).numpy(), np.cumsum(ai, 0))
    np.testing.assert_array_equal(Tensor(ai, device=device).cumprod(0).numpy(), np.cumprod(ai, 0).astype(np.int32))  # wraps, like C
    np.testing.assert_allclose(Tensor(a / 8 + 1, device=device).cumprod(1).numpy(), np.cumprod((a / 8 + 1).astype(np.float64), 1), rtol=1e-4)
    np.testing.assert_allclose(Tensor(a, device=device).logcumsumexp(1).numpy(), np.logaddexp.accumulate(a.astype(np.float64), 1),
                               rtol=1e-5, atol=1e-5)
    h = (a / 4).astype(np.float16)
    got = Tensor(h, device=device).cumsum(1)
    assert got.dtype is dtypes.float16
    np.testing.assert_allclose(got.numpy().astype(np.float32), np.cumsum(h.astype(np.float32), 1), rtol=2e-3, atol=2e-2)  # in float32

def _last_of_running_max(x:np.ndarray, axis:int) -> np.ndarray:
  """the index of the last element equal to the running max at each position (torch's cummax index), by brute force"""
  x = np.moveaxis(x, axis, -1)
  out = np.zeros(x.shape, np.int32)
  for i in range(x.shape[-1]):
    m = x[..., :i + 1].max(-1, keepdims=True)
    out[..., i] = i - (x[..., i::-1] == m).argmax(-1)
  return np.moveaxis(out, -1, axis)

def test_cummax_values_and_indices(dev):
  device, sizes = dev
  for n in sizes:
    for x in (R.integers(-3, 4, (4, n)).astype(np.int32), R.integers(-3, 4, (4, n)).astype(np.float32)):  # few values: many ties
      for axis in (0, 1):
        v, i = Tensor(x, device=device).cummax(axis)
        if x.shape[axis] > SCAN_BLOCK: assert scanned(i, device), "values and index: two scans"  # a short axis: one square either way
        np.testing.assert_array_equal(v.numpy(), np.maximum.accumulate(x, axis))
        np.testing.assert_array_equal(i.numpy(), _last_of_running_max(x, axis))
    np.testing.assert_array_equal(Tensor(x, device=device).cummin(1)[0].numpy(), np.minimum.accumulate(x, 1))

def test_cummax_nan():
  x = np.arange(20, dtype=np.float32)
  x[[3, 15]] = np.nan
  v, i = Tensor(x).cummax(0)
  assert np.isnan(v.numpy()[3:]).all() and i.tolist() == [0, 1, 2] + [3]*12 + [15]*5  # NaN wins, the last NaN is the index

def _serial_max(x:np.ndarray) -> np.ndarray:
  """the running MAX along the last axis one element at a time, as the MAX op defines it: the accumulator stays when it is NaN or greater,
  else the new element (the later of equal elements: -0.0 after 0.0 is -0.0)"""
  out, acc = np.empty_like(x), np.full(x.shape[:-1], -np.inf, x.dtype)
  for i in range(x.shape[-1]):
    acc = np.where(np.isnan(acc) | (acc > x[..., i]), acc, x[..., i])
    out[..., i] = acc
  return out

def test_cummax_values_bits_signed_zeros_and_nan(dev):
  # the serial scan's values by blocks (mixin/scan.py `_serial_max_scan`): the same bits as one element at a time, at sizes no block divides
  device, sizes = dev
  for n in sizes:
    x = R.choice(np.array([0.0, -0.0, 1.0, -1.0, np.nan], np.float32), (3, n), p=[0.35, 0.35, 0.1, 0.15, 0.05])
    got = Tensor(x, device=device).cummax(1)[0].numpy()
    np.testing.assert_array_equal(got.view(np.int32), _serial_max(x).view(np.int32))

def test_cumsum_gradient(dev):
  device, sizes = dev
  for n in sizes:
    a, w = R.standard_normal((3, n)).astype(np.float32), R.standard_normal((3, n)).astype(np.float32)
    for axis in (0, 1):
      x = Tensor(a, device=device, requires_grad=True)
      (x.cumsum(axis) * Tensor(w, device=device)).sum().backward()
      if a.shape[axis] > SCAN_BLOCK: assert scanned(x.grad, device), "the gradient (a reversed cumsum) lost its scan form"
      np.testing.assert_allclose(x.grad.numpy(), np.flip(np.cumsum(np.flip(w, axis), axis), axis), rtol=1e-4, atol=1e-4)

def test_scans_along_two_axes_of_one_store(dev):
  """two prefix reduces stored by one kernel along different loops (cumsum(0) + cumsum(1) of one input, or their gradients, which
  fuse into one kernel): only one loop can carry an accumulator innermost. Both were scanned, the outer one's accumulator reset by the
  inner loop every trip: the sum of the two cumsums' gradients came out [[4,4,4],[3,3,3],[2,2,2]]"""
  device, sizes = dev
  for n in sizes:
    a, w = R.standard_normal((n, n)).astype(np.float32), R.standard_normal((n, n)).astype(np.float32)
    x = Tensor(a, device=device, requires_grad=True)
    y = x.cumsum(0) + x.cumsum(1)
    np.testing.assert_allclose(y.numpy(), np.cumsum(a, 0) + np.cumsum(a, 1), rtol=1e-4, atol=1e-3)
    (y * Tensor(w, device=device)).sum().backward()
    want = sum(np.flip(np.cumsum(np.flip(w, axis), axis), axis) for axis in (0, 1))
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-4, atol=1e-3)
  x = Tensor(np.arange(9, dtype=np.float32).reshape(3, 3), device=device)
  np.testing.assert_equal((x.cumsum(0).sum() + x.cumsum(1).sum()).gradient(x)[0].numpy(), [[6, 5, 4], [5, 4, 3], [4, 3, 2]])

def test_scan_beside_a_padded_edge(dev):
  """a scan in a kernel whose other input is padded: the pad's edge is peeled into a loop nest of its own, whose scan accumulator was
  reset once before every loop instead of in the loops around the scan (x.pad + cumsum(0) summed rows: [[1,3],[2,4]] for [[1,1],[2,2]]);
  also the gradient of x[..., 1:] + x.cumsum(0), which is that kernel"""
  device, _ = dev
  a = np.arange(1, 9, dtype=np.float32).reshape(2, 2, 2)
  for fn, ref in [(lambda t: t.cumsum(0), lambda x: np.cumsum(x, 0)), (lambda t: t.cumsum(1), lambda x: np.cumsum(x, 1)),
                  (lambda t: t.cumprod(0), lambda x: np.cumprod(x, 0))]:
    ones = np.linspace(0.5, 2, 12, dtype=np.float32).reshape(2, 2, 3)
    got = (Tensor(a, device=device).pad(((0, 0), (0, 0), (1, 0))) + fn(Tensor(ones, device=device))).numpy()
    np.testing.assert_allclose(got, np.pad(a, ((0, 0), (0, 0), (1, 0))) + ref(ones), rtol=1e-6)
  x = Tensor(a, device=device, requires_grad=True)
  w = np.linspace(-1, 1, 4, dtype=np.float32).reshape(2, 2, 1)
  ((x[:, :, 1:] * Tensor(w, device=device)).sum() + x.cumsum(0).sum()).backward()
  want = np.flip(np.cumsum(np.ones_like(a), 0), 0) + np.concatenate([np.zeros_like(w), w], 2)
  np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)

def test_cumsum_gradient_by_finite_differences():
  a, w = R.standard_normal(9), R.standard_normal(9)
  f = lambda v: float((np.cumsum(v) ** 2 * w).sum())
  fd = np.array([(f(a + e) - f(a - e)) / 2e-6 for e in np.eye(9) * 1e-6])
  x = Tensor(a.astype(np.float32), requires_grad=True)
  (x.cumsum(0).square() * Tensor(w.astype(np.float32))).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-3, atol=1e-3)

def test_same_bits_as_the_triangle_in_order():
  """the scan adds x[0..o] in order, as the triangle's reduce does when nothing reorders it (NOOPT)"""
  a = R.standard_normal((4, 1000)).astype(np.float32) * 1e3
  at = Tensor.arange(1000, device="CPU")
  tri = (at.reshape(1000, 1) >= at.reshape(1, 1000)).where(Tensor(a, device="CPU").unsqueeze(-2), 0).sum(-1)
  with Context(SCAN=0, NOOPT=1): dense = tri.numpy()
  assert (Tensor(a, device="CPU").cumsum(1).numpy() == dense).all()

def test_opts_leave_the_scan_axis_alone():
  x = Tensor.empty(64, 48, device="CPU")
  ast = graph_rewrite([it for it in create_schedule([x.cumsum(0).uop])[0] if it.kind == "kernel"][0].ast, symbolic)  # as lowering sees it
  marked = mark_scans(ast, Device["CPU"].renderer)
  assert [u.tag for u in marked.toposort() if u.op is Ops.REDUCE] == [TAG]
  assert [r.src[0].arg for r in axes(marked)] == [48]  # the rows (scanned) and the reduce's range are no axes for the opts
  with pytest.raises(OptError): apply_opt(marked, Opt(OptOps.UNROLL, 1, 4))
  assert mark_scans(ast, Device["PYTHON"].renderer) is ast  # work items: the triangle stays (the mixin built the blocked form there)

def test_form_choice():
  assert serial_scan("CPU") and not serial_scan("PYTHON")
  with Context(SCAN=0): assert not serial_scan("CPU")
  with Context(SCAN=2): assert serial_scan("PYTHON")
  with Context(SCAN=0):  # the blocked form: no loop over the whole axis twice either, and the same values
    a = R.standard_normal((2, 100)).astype(np.float32)
    np.testing.assert_allclose(Tensor(a, device="CPU").cumsum(1).numpy(), np.cumsum(a, 1), rtol=1e-4, atol=1e-4)

def test_scans_inside_larger_graphs():
  """a scan's input and output fused with other work; rows that do not feed the scan's value still reset its accumulator"""
  a3, a, b = R.standard_normal((5, 40, 6)).astype(np.float32), R.standard_normal((30, 50)).astype(np.float32), R.standard_normal((50, 20))
  T = lambda v: Tensor(v.astype(np.float32), device="CPU")
  cases = [(T(a3).sum(2).cumsum(1), np.cumsum(a3.sum(2), 1)), ((T(a) @ T(b)).cumsum(1), np.cumsum(a @ b, 1)),
           (T(a).cumsum(1).sum(1), np.cumsum(a, 1).sum(1)), (T(a)[::2, 1::2].cumsum(1), np.cumsum(a[::2, 1::2], 1)),
           (T(a).flip(1).cumsum(1).flip(1), np.flip(np.cumsum(np.flip(a, 1), 1), 1)), (T(a3).cumsum(1), np.cumsum(a3, 1)),
           (T(a[0]).reshape(1, 50).expand(4, 50).cumsum(1), np.cumsum(np.broadcast_to(a[0], (4, 50)), 1)),
           (T(a).cumsum(1).cumsum(0), np.cumsum(np.cumsum(a, 1), 0))]
  for t, want in cases: np.testing.assert_allclose(t.numpy(), want, rtol=1e-4, atol=1e-3)
  # read through a transpose, the scanned axis is divided in the addresses (r//32, r%32): it stays one range, not split (split_ranges)
  p = R.standard_normal((4, 32, 32)).astype(np.float32)
  for t, want in [(T(p).permute(0, 2, 1).reshape(4, 1024).cumsum(1), np.cumsum(p.transpose(0, 2, 1).reshape(4, 1024), 1)),
                  (T(p).permute(2, 1, 0).reshape(1024, 4).cumsum(0), np.cumsum(p.transpose(2, 1, 0).reshape(1024, 4), 0))]:
    assert scanned(t, "CPU")
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-4, atol=1e-3)

def _trips(t:Tensor, device:str="CPU") -> list[tuple[int, ...]]:
  """the loop sizes of each kernel of t, as the program runs them"""
  items = [it for it in create_schedule([t.uop])[0] if it.kind == "kernel"]
  return [tuple(u.src[0].arg for u in get_program(it.ast, Device[device].renderer).uops if u.op is Ops.RANGE) for it in items]

@pytest.mark.parametrize("n", [8, 40, 96, 1000, 1024, 1025])
def test_lane_scan_int_max(n):
  """an int MAX scan along the axis its memory walks with stride 1 runs a block of lanes a trip (lower_lane_scans: the block's running
  max by doubling, the carry a step per block); the dtype's least value (the scan's identity), ties, and an axis no lane count divides"""
  x = R.integers(-3, 4, (3, n)).astype(np.int32)
  x[0, ::5], x[1] = np.iinfo(np.int32).min, np.iinfo(np.int32).min
  t = Tensor(x, device="CPU")._triangle(Ops.MAX, dtypes.min(dtypes.int32))
  lanes, trips = next((k for k in LANES if n % k == 0), None), _trips(t)
  assert trips == [(3, n // lanes)] if lanes else trips == [(3, n)]  # the rows, then a trip per block (or per element)
  np.testing.assert_array_equal(t.numpy(), np.maximum.accumulate(x, 1))

def test_lane_scan_only_where_it_regroups_and_walks_by_one():
  a = R.standard_normal((4, 64)).astype(np.float32)
  ai = R.integers(-9, 9, (64, 4)).astype(np.int32)
  # a float sum keeps its order (its bits), a float MAX its one-element loop; an int MAX along a strided axis: lanes would be gathers
  for t in (Tensor(a, device="CPU").cumsum(1), Tensor(a, device="CPU")._triangle(Ops.MAX, -np.inf),
            Tensor(ai, device="CPU").transpose()._triangle(Ops.MAX, dtypes.min(dtypes.int32))):
    assert all(64 in trips for trips in _trips(t)), "one element a trip"
  np.testing.assert_array_equal(Tensor(ai, device="CPU").transpose()._triangle(Ops.MAX, dtypes.min(dtypes.int32)).numpy(),
                                np.maximum.accumulate(ai.T, 1))

@pytest.mark.parametrize("shape,cat_dim,split", [((2, 2, 3), 2, 1), ((2, 6, 17), 2, 16), ((2, 6, 17), 2, 8), ((3, 5, 7), 1, 2)])
def test_scan_over_a_cat_whose_other_axis_is_split(shape, cat_dim, split):
  """a cat along the last axis, flattened with the axis before it and scanned along axis 0 (an uneven shard's gather is this): the
  column axis is split at the cat's boundary, and the part split off got a newer loop id than the scanned loop, so it nested inside it
  and its columns shared one accumulator, loaded once before that loop (a row of [6, 9, 10, 12, 15, 16] for [6, 8, 10, 12, 14, 16])"""
  x = R.standard_normal(shape).astype(np.float32)
  edges = [(0, split), (split, shape[cat_dim])]
  a, b = [Tensor(x).shrink(tuple(e if i == cat_dim else None for i in range(len(shape)))).contiguous().realize() for e in edges]
  flat = a.cat(b, dim=cat_dim).reshape(shape[0], -1)
  for op, want in [("cumsum", np.cumsum), ("cumprod", np.cumprod), ("cummax", np.maximum.accumulate)]:
    got = getattr(flat, op)(0)
    np.testing.assert_allclose((got[0] if isinstance(got, tuple) else got).numpy(), want(x.reshape(shape[0], -1), axis=0), rtol=1e-5, atol=1e-6)
