"""Reverse-mode differentiation of the tensor-level graph. `pm_gradient` is the rule table: given the gradient of a node's output
(ctx), a rule returns the gradient of each of its value sources (None: no gradient flows there). `compute_gradient` walks the graph
from the root back to the targets, applies the rules and sums what reaches each node."""
from __future__ import annotations
import math
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, broadcast_axes
from tinygrad.dtype import dtypes

def _max_share(ctx:UOp, x:UOp, y:UOp) -> UOp:
  """the part of MAX(x, y)'s gradient that goes to x: all of it where x is larger, half on a tie (like torch's maximum), none below"""
  return (x < y).where(ctx.const_like(0), x.eq(y).where(ctx * 0.5, ctx))

def _pow_grad(ctx:UOp, ret:UOp, b:UOp, e:UOp) -> tuple:
  # d/db = e*b^(e-1), 0 where e is 0 (b^0 is constant); d/de = b^e*ln(b), 0 where b is 0 and e >= 0 (0^e is constant there); torch's choices
  return (ctx * e.eq(0).where(0, e * b.pow(e - 1)), ctx * (b.eq(0) & (e >= 0)).where(0, ret * b.log()))

def _reduce_grad(ctx:UOp, ret:UOp) -> tuple:
  (x,), (op, axes) = ret.src, ret.arg
  if op is Ops.ADD: return (ctx.expand(x.shape),)
  if op is Ops.MAX:
    # split evenly among the elements equal to the max (upstream tinygrad's choice; torch's amax does the same); a NaN max is its NaNs'
    # (NaN equals nothing: 0 hits, and ctx / 0 made the whole window NaN)
    hit = x.eq(ret)
    if dtypes.is_float(x.dtype): hit = hit | (x.ne(x) & ret.ne(ret))
    hit = hit.cast(ctx.dtype)
    return (hit * (ctx / hit._rop(Ops.ADD, axes)),)
  # MUL: the product of the other elements. ret/x where x != 0; at a zero it is the product of the rest if that zero is the only one
  zero = x.eq(0)
  rest = zero.where(x.const_like(1), x)._rop(Ops.MUL, axes)
  lone = zero.cast(ctx.dtype)._rop(Ops.ADD, axes).eq(1)
  return (ctx * zero.where(lone.where(rest, 0), ret / x),)

def _multi_grad(ctx:UOp, ret:UOp) -> tuple:
  from tinygrad.uop.multi import bounds
  if ret.arg is None: return tuple(UOp(Ops.MSELECT, ctx.dtype, (ctx,), (i, None, None)) for i in range(len(ret.src)))
  return tuple(UOp(Ops.MSELECT, ctx.dtype, (ctx,), (i, ret.arg, b)) for i, b in enumerate(bounds(tuple(s.shape[ret.arg] for s in ret.src))))

# rules give the gradients of the value sources, which come first; the sizes of RESHAPE/EXPAND/PAD/SHRINK and COPY's DEVICE get none
pm_gradient = PatternMatcher([
  # unary math: ctx * d(op)/dx
  (UPat(Ops.NEG), lambda ctx: (-ctx,)),
  (UPat(Ops.RECIPROCAL, name="ret"), lambda ctx, ret: (-ctx * ret * ret,)),
  (UPat(Ops.SQRT, name="ret"), lambda ctx, ret: (ctx / (ret * 2),)),
  (UPat(Ops.EXP2, name="ret"), lambda ctx, ret: (ctx * ret * math.log(2),)),
  (UPat(Ops.LOG2, src=(UPat.var("x"),)), lambda ctx, x: (ctx / (x * math.log(2)),)),
  (UPat(Ops.SIN, src=(UPat.var("x"),)), lambda ctx, x: (ctx * x.cos(),)),
  (UPat(Ops.TRUNC), lambda ctx: (None,)),  # piecewise constant
  # binary and ternary; a source broadcast into the output is summed back by compute_gradient
  (UPat(Ops.ADD), lambda ctx: (ctx, ctx)),
  (UPat(Ops.MUL, src=(UPat.var("x"), UPat.var("y"))), lambda ctx, x, y: (ctx * y, ctx * x)),
  (UPat(Ops.MAX, src=(UPat.var("x"), UPat.var("y"))), lambda ctx, x, y: (_max_share(ctx, x, y), _max_share(ctx, y, x))),
  (UPat(Ops.POW, name="ret", src=(UPat.var("b"), UPat.var("e"))), _pow_grad),
  (UPat(Ops.WHERE, src=(UPat.var("c"), UPat(), UPat())), lambda ctx, c: (None, c.where(ctx, 0), c.where(0, ctx))),
  # dtypes: a cast's gradient is cast back; a bitcast reinterprets bits, which has no derivative
  (UPat(Ops.CAST, name="ret"), lambda ctx, ret: (ctx.cast(ret.src[0].dtype),)),
  (UPat(Ops.BITCAST), lambda ctx: (None,)),
  (UPat(Ops.REDUCE_AXIS, name="ret"), _reduce_grad),
  # movement: the inverse movement (EXPAND is an explicit broadcast: summed back like an implicit one)
  (UPat(Ops.RESHAPE, name="ret"), lambda ctx, ret: (ctx.reshape(ret.src[0].shape),)),
  (UPat(Ops.EXPAND), lambda ctx: (ctx,)),
  (UPat(Ops.PERMUTE, name="ret"), lambda ctx, ret: (ctx.permute(tuple(sorted(range(len(ret.arg)), key=ret.arg.__getitem__))),)),
  (UPat(Ops.PAD, name="ret"), lambda ctx, ret: (ctx.shrink(tuple((b, b+s) for (b, _), s in zip(ret.marg, ret.src[0].shape))),)),
  (UPat(Ops.SHRINK, name="ret"), lambda ctx, ret: (ctx._pad(tuple((b, s-e) for (b, e), s in zip(ret.marg, ret.src[0].shape))),)),
  (UPat(Ops.FLIP, name="ret"), lambda ctx, ret: (ctx._mop(Ops.FLIP, ret.arg),)),
  # graph structure
  (UPat(Ops.CONTIGUOUS), lambda ctx: (ctx,)),
  (UPat(Ops.DETACH), lambda ctx: (None,)),
  (UPat(Ops.CONTIGUOUS_BACKWARD), lambda ctx: (ctx.contiguous(),)),
  # the value's own graph gets the gradient as usual, the inputs what the node's function gives
  (UPat(Ops.CUSTOM_GRADIENT, name="ret"), lambda ctx, ret: (ctx,) + tuple(ret.arg(ctx))),
  (UPat(Ops.COPY, name="ret"), lambda ctx, ret: (ctx.copy_to_device(ret.src[0].device),)),
  # multi-device: each piece gets its device's part of the gradient, laid out like the piece
  (UPat(Ops.MULTI, name="ret"), _multi_grad),
])

def _sum_to(g:UOp, shape:tuple) -> UOp:
  """g summed over the axes a value of `shape` is broadcast over to g's shape, viewed as `shape`: broadcasting, backwards"""
  return g if g.shape == shape else g._rop(Ops.ADD, broadcast_axes(shape, g.shape)).reshape(shape)

def compute_gradient(root:UOp, root_grad:UOp, targets:set[UOp]) -> dict[UOp, UOp]:
  """d(root)/d(target) for each target some gradient reaches, given d(loss)/d(root) = root_grad (root's shape).
  Only float nodes carry a gradient (a comparison, an int cast or an index is piecewise constant), so paths through them are cut.
  The walk is a loop over the toposort: a graph of any depth works at python's default recursion limit."""
  topo = list(root.toposort())
  on_path: dict[UOp, bool] = {}
  for u in topo: on_path[u] = u in targets or (dtypes.is_float(u.dtype) and any(on_path[s] for s in u.src))
  grads: dict[UOp, UOp] = {root: root_grad}
  for u in reversed(topo):
    if (g := grads.get(u)) is None or not any(on_path[s] for s in u.src): continue
    if (src_grads := pm_gradient.rewrite(u, ctx=g)) is None:
      raise RuntimeError(f"no gradient rule for {u.op} ({u.dtype}, shape {u._shape}) on the path to a tensor that needs a gradient; "
                         f"detach() what goes into it if no gradient should flow there")
    for s, sg in zip(u.src, src_grads):
      if sg is None or not on_path[s]: continue
      sg = _sum_to(sg, s.shape)
      grads[s] = sg if s not in grads else grads[s] + sg
  return {t: grads[t] for t in targets if t in grads}
