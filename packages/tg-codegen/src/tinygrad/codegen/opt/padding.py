"""PADTO: an axis of size n loops to `padded` instead, and the indices n..padded-1 do nothing. Every access whose address depends on the
axis while it is open is gated by `axis < n` (a gated load reads no memory and gives 0, a gated store writes nothing), every store inside
the axis's loop too, and a REDUCE over the axis sees its identity there: `where(axis < n, x, identity)`. The select makes padding valid for
any value between the loads and the reduce (exp, a division, a max over negative numbers), where zeros from the gated loads would not be.
A float load needs no gate: what it reads at the padding is selected away or never stored, so it reads in bounds (its own address, or
the address at the axis's last index) instead."""
from __future__ import annotations
import math
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import DType, dtypes

def reduce_identity(op:Ops, dtype:DType):
  """x op identity == x: 0 for ADD, 1 for MUL, the lowest value for MAX"""
  if op is Ops.ADD: return 0
  if op is Ops.MUL: return 1
  return -math.inf if dtypes.is_float(dtype) else dtypes.min(dtype)

def _open_users(ast:UOp, rng:UOp) -> set[UOp]:
  """the nodes that depend on rng while its loop is open: a REDUCE or END over rng closes it"""
  ret = {rng}
  for u in ast.toposort():
    if u not in ret and any(s in ret for s in u.src) and not (u.op in (Ops.REDUCE, Ops.END) and rng in u.src[1:]): ret.add(u)
  return ret

def _in_bounds(load:UOp) -> bool:
  """a float load whose address stays inside its buffer at the padded indices too needs no gate: what it reads there is selected away
  (the reduce's identity) or never stored (the gated store). Int loads keep theirs: a value read there could divide by zero"""
  idx = load.src[0]
  if not dtypes.is_float(load.dtype) or idx.op is not Ops.INDEX or len(idx.src) != 2 or len(load.src) > 1: return False
  buf = idx.src[0]
  while buf.op is Ops.AFTER: buf = buf.src[0]
  n = buf.arg.shape[0] if buf.op is Ops.PARAM and len(buf.arg.shape) == 1 and isinstance(buf.arg.shape[0], int) else None
  return n is not None and 0 <= idx.src[1].vmin and idx.src[1].vmax < n

def _clamped(load:UOp, rng:UOp, n:int) -> UOp|None:
  """the float load reading at min(rng, n-1) instead: in bounds wherever it is at rng < n, so at the padded indices too, where what it
  reads is selected away or never stored (as for _in_bounds). A gate per lane would cost a select in the loop; this is one per lane
  outside it"""
  if not dtypes.is_float(load.dtype) or len(load.src) > 1 or (idx := load.src[0]).op is not Ops.INDEX or len(idx.src) != 2: return None
  return load.replace(src=(idx.substitute({rng: (rng < n).where(rng, rng.const_like(n - 1))}),))

def _gate(valid:UOp, old:UOp|None) -> UOp: return valid if old is None else old & valid

def pad_axis(ast:UOp, rng:UOp, padded:int) -> UOp:
  n = rng.src[0].arg if rng.src[0].op is Ops.CONST else rng.src[0]  # a Variable's size too (lowering.pad_short_loops)
  new = rng.replace(src=(rng.src[0].const_like(padded),))
  ast, valid = ast.substitute({rng: new}), new < n
  opened = _open_users(ast, new)
  in_loop = {s for e in ast.toposort() if e.op is Ops.END and new in e.src[1:] for s in e.src[0].toposort() if s.op is Ops.STORE}
  done: dict[UOp, UOp] = {}
  for u in ast.toposort():
    nu = u if all(done[s] is s for s in u.src) else u.replace(src=tuple(done[s] for s in u.src))
    if u.op is Ops.LOAD and u in opened and not _in_bounds(nu):
      if isinstance(n, int) and (clamped := _clamped(nu, new, n)) is not None: nu = clamped  # a Variable's n-1 may be -1
      else:
        alt, gate = nu.src[1] if len(nu.src) > 1 else nu.const_like(0), _gate(valid, nu.src[2] if len(nu.src) > 2 else None)
        nu = UOp(Ops.LOAD, nu.dtype, (nu.src[0], alt, gate))
    elif u.op is Ops.STORE and (u in opened or u in in_loop):
      nu = nu.replace(src=nu.src[:2] + (_gate(valid, nu.src[2] if len(nu.src) > 2 else None),))
    elif u.op is Ops.REDUCE and new in u.src[1:]:
      nu = nu.replace(src=(valid.where(nu.src[0], nu.src[0].const_like(reduce_identity(u.arg, u.dtype))),) + nu.src[1:])
    done[u] = nu
  return done[ast]
