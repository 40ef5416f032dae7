"""The multi-device pass: before scheduling, every node whose value lives on several devices becomes a MULTI of one ordinary node per
device, so the rest of the scheduler only ever sees single-device graphs. The rules push MULTI up through the tensor graph, each device's
piece built to the layout `shard_of` gives the node (tinygrad.uop.multi). A source whose layout differs (sharded on another axis, split
differently, replicated) is resliced on each device; one that must be whole on a device is gathered there (allgather); a reduction over
the shard axis reduces each piece and then the pieces across devices (ALLREDUCE, lowered by tinygrad.schedule.collectives)."""
from __future__ import annotations
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite
from tinygrad.uop.multi import shard_of, bounds, source_axis
from tinygrad.helpers import sint_eq, prod
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
  if not parts:  # an empty window (x[:0]) holds no elements: a constant, no copy
    return UOp.const(m.dtype, 0, device).reshape((1,) * len(m.shape)).expand(tuple(0 if j == axis else s for j, s in enumerate(m.shape)))
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

def _view_chain(view:UOp) -> tuple[UOp, list[UOp]]:
  """(the node under view's movement ops, those ops innermost first)"""
  chain = []
  while view.op in GroupOp.Movement: chain, view = [view] + chain, view.src[0]
  return view, chain

def _reshaped_window(old:tuple, new:tuple, axis:int, lo:int, hi:int) -> tuple[int, int, int]|None:
  """rows [lo, hi) of axis `axis` of a reshape's source as a window of one axis of its result: (that axis, the window), or None where
  they are no such window (the reshape merges the axis with one before it, or cuts a row apart)"""
  if not all(isinstance(s, int) for s in old + new): return None
  inner = prod(old[axis+1:])
  for a in range(len(new)):
    step = prod(new[a+1:])
    if prod(new[:a]) == prod(old[:axis]) and new[a] * step == old[axis] * inner and step and lo * inner % step == 0 and hi * inner % step == 0:
      return a, lo * inner // step, hi * inner // step
  return None

def _piece_view(chain:list[UOp], piece:UOp, axis:int|None, lo:int, hi:int) -> tuple[UOp, int|None, int, int]|None:
  """the part of the view `chain` that `piece` holds, rows [lo, hi) of the shard axis: (piece's view, the view's axis they are on and
  their window [lo, hi) in the view; axis None once that axis is gone, a size-1 row), or None where the view holds none of them"""
  x = piece
  for u in chain:
    arg = u.marg
    if axis is None: x = x._mop(u.op, arg)
    elif u.op is Ops.SHRINK:
      if not all(isinstance(v, int) for v in arg[axis]): raise RuntimeError(f"cannot write through a symbolic window {arg[axis]} of a shard axis")
      b, e = arg[axis]
      if (nlo := max(lo, b)) >= (nhi := min(hi, e)): return None
      x, lo, hi = x._mop(Ops.SHRINK, tuple((nlo - lo, nhi - lo) if j == axis else p for j, p in enumerate(arg))), nlo - b, nhi - b
    elif u.op is Ops.PERMUTE: x, axis = x._mop(Ops.PERMUTE, arg), arg.index(axis)
    elif u.op is Ops.FLIP:
      x = x._mop(Ops.FLIP, arg)
      if arg[axis]: lo, hi = u.shape[axis] - hi, u.shape[axis] - lo
    elif u.op is Ops.RESHAPE and (w := _reshaped_window(u.src[0].shape, arg, axis, lo, hi)) is not None:
      axis, lo, hi = w
      x = x._mop(Ops.RESHAPE, tuple(hi - lo if j == axis else s for j, s in enumerate(arg)))
    elif u.op is Ops.RESHAPE and u.src[0].shape[axis] == 1: x, axis = x._mop(Ops.RESHAPE, arg), None  # one row, gone (t[0, 0])
    else: raise RuntimeError(f"cannot write through a {u.op.name} of shape {u.src[0].shape} -> {u.shape} across the shard axis {axis} of a "
                             f"value on {piece.device} and other devices: write into a whole tensor (t.assign) or shard it on another axis")
  return x, axis, lo, hi

def _store_into_view(view:UOp, v:UOp) -> UOp|None:
  """a write into a view of a sharded MULTI (t[1:3] = v, t[0] = v): each device writes the part of the view its piece holds (none where
  the view misses its rows), from the matching part of v; the result reads the view after the writes"""
  m, chain = _view_chain(view)
  if not chain or m.op is not Ops.MULTI or (sh := shard_of(m)) is None: return None
  pieces = []
  for i, (p, (lo, hi)) in enumerate(zip(m.src, bounds(sh[1]))):
    if (part := _piece_view(chain, p, sh[0], lo, hi)) is None: pieces.append(p)
    else:
      x, axis, b, e = part
      val = UOp(Ops.MSELECT, v.dtype, (v,), (i, axis, None if axis is None else (b, e))) if isinstance(v.device, tuple) else v
      pieces.append(p.after(x.store(val)))
  new = UOp.multi(pieces, sh[0])
  for u in chain: new = new._mop(u.op, u.marg)
  return new

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

# first, before the views are rewritten as reads: a write through a view of a sharded value goes into each device's own piece
pm_store_views = PatternMatcher([
  (UPat(Ops.AFTER, src=(UPat(GroupOp.Movement, name="view"), UPat(Ops.STORE, src=(UPat(name="view"), UPat(name="v"))))), _store_into_view),
])

def push_multi(sink:UOp) -> UOp:
  """sink with every multi-device node replaced by a MULTI of single-device pieces (a no-op for single-device graphs)"""
  topo = sink.toposort()
  if not any(isinstance(u.device, tuple) for u in topo): return sink
  if any(u.op is Ops.STORE and u.src[0].op in GroupOp.Movement for u in topo): sink = graph_rewrite(sink, pm_store_views, name="tensor")
  ret = graph_rewrite(sink, multi_pm, name="tensor")
  for u in ret.toposort():
    if isinstance(u.device, tuple) and u.op not in (Ops.MULTI, Ops.SINK, Ops.DEVICE):
      raise RuntimeError(f"{u.op} (shape {u._shape}) of a value on devices {u.device} has no multi-device rule")
  return ret
