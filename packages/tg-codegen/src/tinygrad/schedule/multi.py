"""The multi-device pass: before scheduling, every node whose value lives on several devices becomes a MULTI of one ordinary node per
device, so the rest of the scheduler only ever sees single-device graphs. The rules push MULTI up through the tensor graph, each device's
piece built to the layout `shard_of` gives the node (tinygrad.uop.multi). A source whose layout differs (sharded on another axis, split
differently, replicated) is resliced on each device; one that must be whole on a device is gathered there (allgather); a reduction over
the shard axis reduces each piece and then the pieces across devices (ALLREDUCE, lowered by tinygrad.schedule.collectives)."""
from __future__ import annotations
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite
from tinygrad.uop.multi import shard_of, bounds, source_axis
from tinygrad.helpers import sint_eq
from tinygrad.schedule.collectives import allgather, allreduce, to_device

def select(m:UOp, i:int, axis:int|None, bound:tuple|None) -> UOp:
  """device i's value of the MULTI m: whole (axis None), or only [b, e) of `axis`"""
  sh = shard_of(m)
  if sh is not None and axis == sh[0] and all(sint_eq(x, y) for x, y in zip(bounds(sh[1])[i], bound)): return m.src[i]
  whole = m.src[i] if sh is None else allgather(list(m.src), sh[0], m.device[i])
  return whole if axis is None else whole.shrink(tuple(bound if j == axis else (0, s) for j, s in enumerate(whole.shape)))

def _source_piece(s:UOp, i:int, layout:tuple|None, out_ndim:int) -> UOp:
  """device i's part of source s of an elementwise op whose output has `layout`; a device-less source (a Variable) is the same everywhere"""
  if s.op is not Ops.MULTI: return s
  if layout is None or (a := source_axis(layout[0], out_ndim, s.shape)) is None: return select(s, i, None, None)
  return select(s, i, a, bounds(layout[1])[i])

def _elementwise(u:UOp) -> UOp|None:
  if not any(s.op is Ops.MULTI for s in u.src): return None
  devs = next(s.device for s in u.src if s.op is Ops.MULTI)
  if (other := next((s.device for s in u.src if isinstance(s.device, tuple) and s.device != devs), None)) is not None:
    raise RuntimeError(f"{u.op} of values on different device sets {devs} and {other}: move one with .to()")
  layout = shard_of(u)
  pieces = [u.replace(src=tuple(_source_piece(s, i, layout, len(u.shape)) for s in u.src)) for i in range(len(devs))]
  return UOp.multi(pieces, None if layout is None else layout[0])

def _reduce(u:UOp, m:UOp) -> UOp:
  pieces = [p._rop(*u.arg) for p in m.src]
  if (sh := shard_of(m)) is not None and sh[0] in u.arg[1]: return UOp(Ops.ALLREDUCE, u.dtype, tuple(pieces), u.arg[0])
  return UOp.multi(pieces, m.arg)

def _piece_arg(u:UOp, piece:UOp, layout:tuple|None, i:int):
  """a movement op's argument for one device's piece: the shard axis takes the piece's size"""
  arg = u.marg
  if layout is None: return arg
  axis, size = layout[0], layout[1][i]
  if u.op in (Ops.RESHAPE, Ops.EXPAND): return tuple(size if j == axis else s for j, s in enumerate(arg))
  if u.op is Ops.SHRINK: return tuple((0, piece.shape[j]) if j == axis else p for j, p in enumerate(arg))
  return arg

def _window(m:UOp, axis:int, begin, end, device:str) -> UOp:
  """[begin, end) of the shard axis of the sharded MULTI m, on `device`: only the pieces that overlap the window are copied there"""
  parts = []
  for p, (b, e) in zip(m.src, bounds(shard_of(m)[1])):
    lo, hi = max(b, begin), min(e, end)
    if lo < hi: parts.append(to_device(p.shrink(tuple((lo-b, hi-b) if j == axis else (0, s) for j, s in enumerate(p.shape))), device))
  return parts[0].cat(*parts[1:], dim=axis)

def _movement(u:UOp) -> UOp|None:
  if (m := u.src[0]).op is not Ops.MULTI: return None
  layout, sh = shard_of(u), shard_of(m)
  if u.op is Ops.SHRINK and sh is not None and layout is None and all(isinstance(x, int) for x in u.marg[sh[0]]):
    # a window of the shard axis (x[2:5], x[0]): each device gets the window's rows from the pieces that hold them
    (b, e), other = u.marg[sh[0]], tuple((0, s) if j == sh[0] else p for j, (p, s) in enumerate(zip(u.marg, u.shape)))
    return UOp.multi([_window(m, sh[0], b, e, d).shrink(other) for d in m.device], None)
  # a movement across the shard axis (pad, shrink or flip of it, a reshape that splits a device's block) needs the whole value
  pieces = list(m.src) if layout is not None or sh is None else [allgather(list(m.src), sh[0], d) for d in m.device]
  return UOp.multi([p._mop(u.op, _piece_arg(u, p, layout, i)) for i, p in enumerate(pieces)], None if layout is None else layout[0])

def _copy_out(m:UOp, device:str|tuple) -> UOp:
  if device == m.device: return m
  if not isinstance(device, str): raise RuntimeError(f"copy from devices {m.device} to other devices {device}: copy to one device first")
  if (sh := shard_of(m)) is not None: return allgather(list(m.src), sh[0], device)
  return next((p for p in m.src if p.device == device), to_device(m.src[0], device))

def _store(t:UOp, v:UOp) -> UOp:
  """a write into a multi-device target: each device writes its piece, the value resliced to the target's layout"""
  sh = shard_of(t)
  vals = [v if v.op is not Ops.MULTI else select(v, i, None, None) if sh is None else select(v, i, sh[0], bounds(sh[1])[i])
          for i in range(len(t.src))]
  return UOp.multi([p.store(x) for p, x in zip(t.src, vals)], t.arg)

def _after(u:UOp, t:UOp) -> UOp:
  deps = u.src[1:]
  return UOp.multi([p.after(*[d.src[i] if d.op is Ops.MULTI else d for d in deps]) for i, p in enumerate(t.src)], t.arg)

def _replicate_const(c:UOp, d:UOp) -> UOp|None:
  if not isinstance(d.arg, tuple): return None
  return UOp.multi([UOp.const(c.dtype, c.arg, dev) for dev in d.arg], None)

def _per_piece(u:UOp, m:UOp) -> UOp: return UOp.multi([u.replace(src=(p,) + u.src[1:]) for p in m.src], m.arg)

multi_pm = PatternMatcher([
  # a constant on several devices is one constant per device
  (UPat(Ops.CONST, src=(UPat(Ops.DEVICE, name="d"),), name="c"), _replicate_const),
  # device i's part of a value (the gradient of a shard asks for these)
  (UPat(Ops.MSELECT, src=(UPat(Ops.MULTI, name="m"),), name="u"), lambda u, m: select(m, *u.arg)),
  # a reduction across devices, built from copies and ALU ops
  (UPat(Ops.ALLREDUCE, name="u"), lambda u: UOp.multi(allreduce(u.arg, list(u.src)), None)),
  (UPat(Ops.REDUCE_AXIS, src=(UPat(Ops.MULTI, name="m"),), name="u"), _reduce),
  (UPat(Ops.COPY, src=(UPat(Ops.MULTI, name="m"), UPat(Ops.DEVICE, name="d"))), lambda m, d: _copy_out(m, d.arg)),
  # a copy of a single-device value to several devices replicates it
  (UPat(Ops.COPY, src=(UPat(name="x"), UPat(Ops.DEVICE, name="d"))),
   lambda x, d: UOp.multi([to_device(x, dev) for dev in d.arg], None) if isinstance(d.arg, tuple) and x.op is not Ops.MULTI else None),
  (UPat(GroupOp.ALU, name="u"), _elementwise),
  (UPat(GroupOp.Movement, name="u"), _movement),
  (UPat((Ops.CAST, Ops.BITCAST, Ops.CONTIGUOUS, Ops.CONTIGUOUS_BACKWARD, Ops.DETACH), src=(UPat(Ops.MULTI, name="m"),), name="u"),
   _per_piece),
  # in-place writes: each device writes its own piece
  (UPat(Ops.STORE, src=(UPat(Ops.MULTI, name="t"), UPat(name="v"))), _store),
  (UPat(Ops.AFTER, src=(UPat(Ops.MULTI, name="t"),), allow_any_len=True, name="u"), _after),
])

def push_multi(sink:UOp) -> UOp:
  """sink with every multi-device node replaced by a MULTI of single-device pieces (a no-op for single-device graphs)"""
  if not any(isinstance(u.device, tuple) for u in sink.toposort()): return sink
  ret = graph_rewrite(sink, multi_pm, name="tensor")
  for u in ret.toposort():
    if isinstance(u.device, tuple) and u.op not in (Ops.MULTI, Ops.SINK, Ops.DEVICE):
      raise RuntimeError(f"{u.op} (shape {u._shape}) of a value on devices {u.device} has no multi-device rule")
  return ret
