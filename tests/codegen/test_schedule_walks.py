"""The scheduler's walks over a graph take time linear in its size: a model's graph reaches most nodes along many paths (a transformer's
residual stream: each layer reads it twice), so a walk per path, or a kernel built to test a fusion over all of them, grows exponentially
with the depth. Each walk is checked here against its definition, computed the slow way on small graphs."""
import numpy as np
from tinygrad import Tensor
from tinygrad.helpers import Context
from tinygrad.uop import Ops, GroupOp
from tinygrad.schedule.rangeify import LoopTrips, ReduceReach, _numel, _sibling_products, create_schedule, RegionMemo
from tinygrad.schedule.row_fusion import _copies, _region, FUSE_ROWS_GROWTH
from tinygrad.schedule.pack import _find_strides, StridesCtx

def _paths_oracle(roots, stop):
  """ReduceReach and LoopTrips by their definition: every path from each root, one at a time"""
  bcast, reached, evals, body = {}, {}, {}, {}
  def walk(root, u, maxn, trips, inside):
    if u is not root and (u in stop or u.op is Ops.BUFFER): return
    n = _numel(u)
    if u.op is Ops.REDUCE_AXIS and u is not root:
      reached.setdefault(u, set()).add(root)
      if n is None or maxn > n: bcast[u] = None
    if u.op in GroupOp.ALU and u is not root:
      evals.setdefault(u, {})[root] = max(evals.get(u, {}).get(root, 0), trips)
      if inside: body[u] = max(body.get(u, 0), inside)
    if u.op is Ops.REDUCE_AXIS: inside = (_numel(u.src[0]) or 0) if u.arg[0] is Ops.ADD and u.src[0].op is Ops.MUL else 0
    nmax = max(maxn, n or 0) if u.op is not Ops.REDUCE_AXIS else (n or 0)
    if u.op is Ops.REDUCE_AXIS and n: trips = trips * (_numel(u.src[0]) or n) // n
    for s in u.src:
      if s._shape is not None: walk(root, s, nmax, trips, inside)
  for root in roots: walk(root, root, _numel(root) or 0, _numel(root) or 0, 0)
  return bcast, reached, evals, body

def _graphs():
  x, w, v = Tensor.empty(8, 16), Tensor.empty(16, 16), Tensor.empty(16)
  yield (x.layernorm() @ w).softmax(-1)
  yield x.softmax(0) * x.sum(1, keepdim=True) + (x @ w).max(0)
  h = x
  for _ in range(2): h = h + (h.layernorm() @ w).relu() * v
  yield h
  yield (x @ w).sum() + x.var()

def _trips(roots, stop, trips=None):
  (trips := trips or LoopTrips(RegionMemo())).update(roots, stop)
  return trips.evals, trips.body

def _walks(roots, stop): return ReduceReach().update(roots, stop) + _trips(roots, stop)

def test_broadcast_reduces_matches_every_path():
  for g in _graphs():
    root = g.uop
    stops = [{}, {u: None for u in root.toposort() if u.op is Ops.REDUCE_AXIS and u.src[0].op is Ops.MUL}]  # none, the matmuls realized
    for stop in stops:
      got, want = _walks({root: None}, stop), _paths_oracle([root], stop)
      assert set(got[0]) == set(want[0]) and got[1:] == want[1:]

def test_broadcast_reduces_of_many_roots():
  # all roots in one pass: each root's walk ends at the other roots that are stops, and goes through one that is not (an assign's value)
  for g in _graphs():
    nodes = list(g.uop.toposort())
    inner = [u for u in nodes if u.op is Ops.REDUCE_AXIS or u.op in GroupOp.ALU][::3]
    for stopped in (inner[:len(inner) // 2], inner[::2], []):
      roots = dict.fromkeys([g.uop] + inner)
      stop = dict.fromkeys([g.uop] + stopped)
      got, want = _walks(roots, stop), _paths_oracle(list(roots), stop)
      assert set(got[0]) == set(want[0]) and got[1:] == want[1:]

def test_reach_follows_new_stops():
  # rounds of one schedule: each adds stops (roots too); the kept state, updated from the new stops down, equals a pass from scratch
  for g in _graphs():
    nodes = list(g.uop.toposort())
    inner = [u for u in nodes if u.op is Ops.REDUCE_AXIS or u.op in GroupOp.ALU]
    reach, roots, stop = ReduceReach(), {g.uop: None, inner[-2]: None}, {g.uop: None}  # inner[-2]: a root no stop (an assign's value)
    for k in range(0, len(inner), 3):
      stop |= dict.fromkeys(inner[k:k + 3])
      roots |= stop
      got, want = reach.update(roots, stop), _paths_oracle(list(roots), stop)
      assert set(got[0]) == set(want[0]) and got[1] == want[1] and got == ReduceReach().update(roots, stop)

def test_root_walks_follow_new_stops():
  # a kept walk is dropped once a node it entered becomes a stop: the next round sees the same trips as a walk from scratch
  for g in _graphs():
    kept, roots = LoopTrips(RegionMemo()), {g.uop: None}
    reduces = [u for u in g.uop.toposort() if u.op is Ops.REDUCE_AXIS]
    for k in range(len(reduces) + 1):
      stop = dict.fromkeys([g.uop] + reduces[:k])
      roots |= stop
      assert _trips(roots, stop, kept) == _trips(roots, stop) == _paths_oracle(list(roots), stop)[2:]

def test_broadcast_reduces_of_a_deep_residual_stream():
  # 40 layers that each read the stream twice: 2^40 paths; the answer is known by construction, every layer's mean is broadcast back
  h = Tensor.empty(4, 8)
  for _ in range(40): h = h + (h - h.mean(1, keepdim=True))
  bcast, reached = ReduceReach().update({h.uop: None}, {})
  means = {u for u in h.uop.toposort() if u.op is Ops.REDUCE_AXIS}
  assert len(means) == 40 and set(bcast) == means and all(r == {h.uop} for r in reached.values())

def _copies_oracle(root, stop):
  """distinct (node, place) pairs of the fused kernel, a place being the list of reduce bodies and moved indices on the way down"""
  seen = set()
  def walk(u, place):
    if (u, place) in seen: return
    seen.add((u, place))
    if u is not root and (u in stop or u.op is Ops.BUFFER): return
    for x in set(u.src): walk(x, place + ((u,) if u.op in (Ops.REDUCE_AXIS, Ops.EXPAND, Ops.PERMUTE, Ops.SHRINK, Ops.PAD, Ops.FLIP) else ()))
  walk(root, ())
  return len(seen)

def test_fused_kernel_estimate():
  x = Tensor.empty(8, 16)
  for g in (x.softmax(-1), x.layernorm(), x.log_softmax(-1) * 2, (x - x.mean(1, keepdim=True)).square().mean(1)):
    root = g.uop.base
    # a real chain is within the bound, and the estimate names each place as the oracle does: it counts what the kernel holds
    region = _region(root, {})
    assert _copies(root, {}, region, limit := FUSE_ROWS_GROWTH * len(region)) == _copies_oracle(root, {}) <= limit
  h = x
  for _ in range(6): h = h + h.layernorm() * 0.5
  # layer over layer, each stream is read in the mean's body, the variance's and outside: far past the bound, where the count stops
  region = _region(h.uop, {})
  assert _copies_oracle(h.uop, {}) > _copies(h.uop, {}, region, limit := FUSE_ROWS_GROWTH * len(region)) > limit

def test_operand_strides_stop_at_a_reduce():
  # the operand of a matmul over a layernorm: the analysis reads the layernorm's reduces as the buffers they become (a mean and a variance
  # of 8 elements each, the input of 128), not built through them into the layers below
  x, w = Tensor.empty(8, 16), Tensor.empty(16, 16)
  op = (x.layernorm() * 2).uop
  strides, elements = _find_strides(op)
  assert elements == 8 * 16 + 8 + 8
  assert {0: 16, 1: 1} in strides and {0: 1} in strides  # x row-major; a row's statistic, the same along axis 1

def test_operand_strides_share_a_chain():
  # operands over one chain of adds (a gradient flowing back through the residual stream), some moved: analysed with one shared build,
  # each gets what it gets alone, and the chain below an operand analysed before is not built again
  x, w = Tensor.empty(8, 16), Tensor.empty(16, 16)
  h, ops = x, []
  for i in range(6):
    h = h + (x @ w) * (i + 1)
    ops += [h.uop, h.T.uop, h.reshape(2, 4, 16).permute(1, 0, 2).uop, h.pad(((1, 0), (0, 0))).uop]
  shared = StridesCtx()
  for op in ops: assert _find_strides(op, shared) == _find_strides(op)
  built, alone = len(shared.built), StridesCtx()
  assert _find_strides((h * 3).uop, shared) == _find_strides((h * 3).uop, alone)
  assert len(shared.built) - built <= 4 < len(alone.built) // 4

def _kernels(t):
  return [it for it in create_schedule([t.uop])[0] if it.kind == "kernel"]

def test_one_reader_operand_prologue_gets_a_buffer():
  # a GELU before a Linear: the matmul's one kernel would recompute it for every tile of output columns (and load no packed panel)
  rng = np.random.default_rng(0)
  a, w = rng.standard_normal((64, 128), dtype=np.float32), rng.standard_normal((128, 256), dtype=np.float32)
  with Context(PACK=0):
    y = Tensor(a).gelu() @ Tensor(w)
    ks = _kernels(y)
    assert len(ks) == 2 and not any(u.op is Ops.REDUCE for u in ks[0].ast.toposort())  # the GELU's own kernel, then the matmul
    g = 0.5 * a * (1 + np.tanh(0.7978845608 * (a + 0.044715 * a ** 3)))
    np.testing.assert_allclose(y.numpy(), g @ w, rtol=1e-4, atol=1e-4)
    # read by a second kernel too (the backward's GELU' beside the forward's matmul): still a buffer of its own, one input or not
    g = Tensor(a).gelu()
    items = [it for it in create_schedule([(g @ Tensor(w)).uop, (g * 2).uop])[0] if it.kind == "kernel"]
    assert len(items) == 3 and sum(not any(u.op is Ops.REDUCE for u in it.ast.toposort()) for it in items) == 2
    # the same GELU under a product only 16 columns wide: a register tile evaluates it once for all of them, it stays fused
    assert len(_kernels(Tensor(a).gelu() @ Tensor(w[:, :16]))) == 1
    # under a max over the broadcast (a cummax's window, no sum of products) it stays too: only a matmul's tiles re-read their operand
    assert len(_kernels((Tensor(a).gelu()[:, :, None] + Tensor(w)[None]).max(1))) == 1
    # a one-hot gather's mask reads no float data: it stays in the gather's kernel (codegen reads the row it selects)
    ids = Tensor(rng.integers(0, 128, (64,)).astype(np.int32))
    assert len(_kernels(Tensor(w.T.copy())[ids])) == 1

def _reduces(it) -> int: return sum(u.op is Ops.REDUCE for u in it.ast.toposort())

def test_sibling_reduces_of_a_matmul_get_their_own_kernels():
  # a tied embedding's gradient: the logits' matmul (8 x ids @ h) plus the lookup's one-hot sum over the same ids. In one kernel every
  # step of the matmul also ran the one-hot's compare and select; apart, the matmul is a matmul and the one-hot sum a scatter
  rng = np.random.default_rng(3)
  V, D, T = 256, 32, 64
  w0, ids = rng.standard_normal((V, D), dtype=np.float32), rng.integers(0, V, T).astype(np.int32)
  a, h, b = (rng.standard_normal(s, dtype=np.float32) for s in ((T, D), (T, D), (T, V)))
  with Context(PACK=0):
    W = Tensor(w0, requires_grad=True)
    g = ((W[Tensor(ids)] * Tensor(a)).sum() + ((Tensor(h) @ W.T) * Tensor(b)).sum()).gradient(W)[0]
    ks = _kernels(g)
    assert all(_reduces(k) <= 1 for k in ks) and sum(_reduces(k) for k in ks) == 2, [k.ast.arg.name for k in ks]
    want = b.T @ h
    np.add.at(want, ids, a)
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-4, atol=1e-4)
  # a reduce inside the matmul's operand (a centering before it) is no sibling, nor is a matmul alone in its kernel; two matmuls summed are
  x, y = Tensor.empty(64, 128), Tensor.empty(128, 256)
  for t, n in (((x - x.mean(1, keepdim=True)) @ y, 0), (x @ y, 0), (x @ y + x @ Tensor.empty(128, 256), 2)):
    root = t.uop
    assert len(_sibling_products(ReduceReach().update({root: None}, {})[1], {})) == n
