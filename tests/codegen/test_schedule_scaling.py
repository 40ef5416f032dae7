"""The scheduler's cost of recomputing a node (rangeify.FusedCosts) takes time linear in the graph: every node of a deep elementwise
chain read by several kernels (an unrolled LSTM's cell state, forward and backward) asks for its costs, and a walk per node down to the
realized nodes went through the rest of the chain each time (T=32: 10M nodes walked, a minute to schedule)."""
import collections, numpy as np, pytest
from tinygrad import Tensor
from tinygrad.dtype import dtypes
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp
import tinygrad.schedule.rangeify as rangeify
from tinygrad.schedule.rangeify import _numel, create_schedule

def _costs_oracle(u, stop):
  """FusedCosts.get by its definition: one walk down u's fused subgraph, counting its distinct inputs and every path's ALU ops"""
  region = u.toposort(lambda w: w is u or (w not in stop and w.op is not Ops.BUFFER))
  inputs = {v for v in region if v is not u and (v in stop or v.op is Ops.BUFFER)}
  ops, over_reduce = {}, False
  for v in region:
    if v in inputs: ops[v] = 1; continue
    ops[v] = sum(ops[s] for s in v.src) + (v.op in GroupOp.ALU)
    if v.op is Ops.REDUCE_AXIS: ops[v], over_reduce = ops[v] * ((_numel(v.src[0]) or 1) // max(_numel(v) or 1, 1)), True
  return len(inputs) > 1, ops[u], over_reduce or not any(dtypes.is_float(v.dtype) for v in inputs)

def _chain(depth):
  # an elementwise recurrence, each step summed by a kernel of its own: every step is read by the kernels of all the steps above it
  x = Tensor.empty(4, 4)
  c, outs = x, []
  for _ in range(depth):
    c = c * 0.9 + x.exp()
    outs.append(c.sum(1))
  return outs

def _lstm(T, B=2, H=4, xs=None, wx=None, wh=None):
  """the gradient of an unrolled LSTM's last hidden state by its weights; empty buffers where no values are given"""
  xs, wx, wh = (Tensor(a) if a is not None else Tensor.empty(*s) for a, s in ((xs, (T, B, H)), (wx, (H, 4 * H)), (wh, (H, 4 * H))))
  wx.requires_grad = wh.requires_grad = True
  h = c = Tensor.zeros(B, H)
  for t in range(T):
    i, f, g, o = (xs[t] @ wx + h @ wh).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
  return list(h.sum().gradient(wx, wh))

def _walked(targets, monkeypatch) -> tuple[int, collections.Counter]:
  """nodes the cost pass walks (each toposort's nodes, while _costly_recomputes runs) and the schedule's kernels by name"""
  walked, inside = [0], [False]
  toposort, costly = UOp.toposort, rangeify._costly_recomputes
  def counting(self, gate=None):
    ret = toposort(self, gate)
    if inside[0]: walked[0] += len(ret)
    return ret
  def costly_counted(*args):
    inside[0] = True
    try: return costly(*args)
    finally: inside[0] = False
  with monkeypatch.context() as m:
    m.setattr(UOp, "toposort", counting)
    m.setattr(rangeify, "_costly_recomputes", costly_counted)
    items = create_schedule([t.uop for t in targets])[0]
  return walked[0], collections.Counter(it.ast.arg.name for it in items if it.kind == "kernel")

def test_costs_match_their_definition():
  # every node's costs against a walk of its own, with nothing realized, then each round adding stops (from the top down, as the rounds
  # realize them, and in any order): what a new stop changes is forgotten, what it does not is kept
  rng = np.random.default_rng(1)
  for targets in (_chain(6), _lstm(2), [(Tensor.empty(8, 16).layernorm() @ Tensor.empty(16, 16)).softmax(-1)]):
    sink = UOp.sink(*[t.uop for t in targets])
    nodes = [u for u in sink.toposort() if u.op in GroupOp.ALU or u.op is Ops.REDUCE_AXIS]
    for order in (nodes[::-1], [nodes[i] for i in rng.permutation(len(nodes))]):
      costs, stop, step = rangeify.FusedCosts(sink), {}, max(len(nodes) // 6, 1)
      for k in range(0, len(nodes), step):
        costs.advance(stop)
        for u in nodes:
          if u not in stop: assert costs.get(u) == _costs_oracle(u, stop)
        stop = stop | dict.fromkeys(order[k:k + step])

def test_nested_is_inside_another_region():
  x = Tensor.empty(4, 4)
  a = (x * 2).exp()
  b = (a + 1).log()
  c = b * x.sin()
  costs = rangeify.FusedCosts(c.uop)
  assert costs.nested(dict.fromkeys([a.uop, b.uop, c.uop])) == {a.uop, b.uop}
  costs.advance({b.uop: None})
  assert costs.nested(dict.fromkeys([a.uop, c.uop])) == set()  # a realized b: a is inside b's kernel, not c's

def test_cost_walk_grows_linearly_with_depth(monkeypatch):
  # twice the depth, about twice the walk (a walk per node: 715 nodes at 16 steps, 2459 at 32). The kernels: a step's state is cut
  # where its code reaches CHAIN_OPS distinct nodes (x.exp() once, not once per step: 9 and 25 cuts when every path counted), and below
  # the first cut, the outermost first, each step is read by its own sum and by the cut above it (a cascade, one step per round)
  (w16, k16), (w32, k32) = _walked(_chain(16), monkeypatch), _walked(_chain(32), monkeypatch)
  assert k16 == {"E_4_4": 1, "r_4": 16} and k32 == {"E_4_4": 17, "r_4": 32}
  assert w32 < 2.5 * w16, (w16, w32)
  (w4, k4), (w8, k8) = _walked(_lstm(4), monkeypatch), _walked(_lstm(8), monkeypatch)
  assert k4 == {"E_2_4": 57, "r_2_16": 8, "E_2_16": 4, "r_2_4": 3, "r_4_16": 2}
  assert k8 == {"E_2_4": 117, "r_2_16": 16, "E_2_16": 8, "r_2_4": 7, "r_4_16": 2}
  # the memos a walk leaves on nodes that other graphs share (hash-consing) make the counts depend on what ran before in the process:
  # 1.6-2.5x over test orders here; a walk that grew with the square of the depth is 4x
  assert w8 < 3 * w4, (w4, w8)

def _np_lstm_grads(xs, wx, wh):
  """numpy oracle for _lstm: the forward, then the backward through time by hand (gates in chunk order i, f, g, o)"""
  def sig(z): return 1 / (1 + np.exp(-z))
  T, B, H = xs.shape
  h, c, steps = np.zeros((B, H)), np.zeros((B, H)), []
  for t in range(T):
    i, f, g, o = np.split(xs[t] @ wx + h @ wh, 4, axis=1)
    si, sf, tg, so = sig(i), sig(f), np.tanh(g), sig(o)
    steps.append((h, c, si, sf, tg, so))
    c = sf * c + si * tg
    h = so * np.tanh(c)
  dwx, dwh, dh, dc = np.zeros_like(wx), np.zeros_like(wh), np.ones((B, H)), np.zeros((B, H))  # d sum(h_T) / d h_T is ones
  for t in reversed(range(T)):
    hp, cp, si, sf, tg, so = steps[t]
    tc = np.tanh(sf * cp + si * tg)
    dc = dc + dh * so * (1 - tc ** 2)
    dz = np.concatenate([dc * tg * si * (1 - si), dc * cp * sf * (1 - sf), dc * si * (1 - tg ** 2), dh * tc * so * (1 - so)], axis=1)
    dwx, dwh = dwx + xs[t].T @ dz, dwh + hp.T @ dz
    dh, dc = dz @ wh.T, dc * sf
  return dwx, dwh

def _np_lstm_loss(xs, wx, wh):
  """sum(h_T), written apart from the oracle's forward, for its finite differences"""
  h = c = np.zeros(xs.shape[1:])
  for x in xs:
    i, f, g, o = np.split(x @ wx + h @ wh, 4, axis=1)
    c = c / (1 + np.exp(-f)) + np.tanh(g) / (1 + np.exp(-i))
    h = np.tanh(c) / (1 + np.exp(-o))
  return h.sum()

def test_unrolled_lstm_gradient():
  rng = np.random.default_rng(0)
  T, B, H = 3, 3, 4
  xs, wx, wh = (rng.standard_normal(s, dtype=np.float32) * 0.5 for s in ((T, B, H), (H, 4 * H), (H, 4 * H)))
  got = [g.numpy() for g in _lstm(T, B, H, xs, wx, wh)]
  want = _np_lstm_grads(*(a.astype(np.float64) for a in (xs, wx, wh)))
  np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(got[1], want[1], rtol=1e-4, atol=1e-5)
  # the oracle's backward against central differences of its loss, on the smallest sizes with every path (2 steps, 2 rows, H=2)
  sxs, sw = np.random.default_rng(1).standard_normal((2, 2, 2)), np.random.default_rng(2).standard_normal((2, 2, 8))
  fd, eps = np.zeros_like(sw), 1e-6
  for idx in np.ndindex(sw.shape):
    sw[idx] += eps; hi = _np_lstm_loss(sxs, *sw); sw[idx] -= 2 * eps; lo = _np_lstm_loss(sxs, *sw); sw[idx] += eps
    fd[idx] = (hi - lo) / (2 * eps)
  np.testing.assert_allclose(np.stack(_np_lstm_grads(sxs, *sw)), fd, rtol=1e-6, atol=1e-8)
