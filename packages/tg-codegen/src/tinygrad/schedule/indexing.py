"""Movement ops become index arithmetic. `AT(x, valid, *idx)` asks for the value of the tensor-level node x at one index (an
expression per axis) where `valid` holds; the rules below push it down the tensor graph until only kernel-level math over RANGEs,
loads of realized buffers and validity predicates (from PAD) remain. No data moves. It is one bottom-up graph_rewrite: no recursion,
so a graph of any depth builds, and a node asked for at the same index twice is built once (hash-consing)."""
from __future__ import annotations
from dataclasses import dataclass, field
from tinygrad.uop import Ops, GroupOp, AxisType
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite, KernelInfo, broadcast_axes
from tinygrad.dtype import dtypes

def _idx(x) -> UOp: return x if isinstance(x, UOp) else UOp.const(dtypes.weakint, x)
def _is_one(s) -> bool: return isinstance(s, int) and s == 1
def _is_true(v:UOp) -> bool: return v.op is Ops.CONST and v.arg is True

def flat_index(idx:tuple, shape:tuple) -> UOp:
  """row-major linear index of a multi-axis index"""
  ret, stride = _idx(0), 1
  for i, s in reversed(list(zip(idx, shape))):
    if not _is_one(s): ret = ret + _idx(i) * stride
    stride = stride * s
  return ret

def unflat_index(lin:UOp, shape:tuple) -> tuple:
  """the multi-axis index of a linear one. The outermost axis takes no modulo: where an access is valid its index is in bounds, and a
  padded (invalid) one is never loaded, so lin < prod(shape) wherever the value matters"""
  ret, stride = [], 1
  for a, s in reversed(list(enumerate(shape))):
    ret.append(_idx(0) if _is_one(s) else lin // stride if a == 0 else (lin // stride) % s)
    stride = stride * s
  return tuple(reversed(ret))

def _groups(old:tuple, new:tuple) -> list[tuple[int, int, int, int]]|None:
  """(old_start, old_end, new_start, new_end): the shortest runs of axes whose sizes multiply to the same number, in order (size-1 axes
  left at the end form the last run). None for symbolic or empty shapes: one run of everything"""
  if not all(isinstance(s, int) and s > 0 for s in old + new): return None
  ret, i, j = [], 0, 0
  while i < len(old) and j < len(new):
    i0, j0, po, pn = i, j, old[i], new[j]
    i, j = i + 1, j + 1
    while po != pn:
      if po < pn: po, i = po * old[i], i + 1
      else: pn, j = pn * new[j], j + 1
    ret.append((i0, i, j0, j))
  return ret + [(i, len(old), j, len(new))] if i < len(old) or j < len(new) else ret

def reshape_index(idx:tuple, new:tuple, old:tuple) -> tuple:
  """the index into `old` of the element at `idx` of its reshape to `new`: each run of axes whose sizes multiply to the same number is
  re-linearized on its own, so axes a reshape leaves alone keep their index as is (no division to simplify away)"""
  if (groups := _groups(old, new)) is None: return unflat_index(flat_index(idx, new), old)
  return tuple(i for i0, i1, j0, j1 in groups for i in unflat_index(flat_index(idx[j0:j1], new[j0:j1]), old[i0:i1]))

def at(x:UOp, valid:UOp, idx:tuple) -> UOp: return UOp(Ops.AT, x.dtype, (x, valid) + tuple(_idx(i) for i in idx))

@dataclass
class KernelCtx:
  """what one kernel's build needs: `realized` maps tensor-level nodes that live in buffers to that buffer (reading one is a LOAD and ends
  the fusion there); the build records which buffers it reads and which Variables it uses, and numbers the reduce ranges it opens"""
  realized: dict[UOp, UOp]
  root: UOp|None
  inputs: dict[UOp, None] = field(default_factory=dict)
  next_axis: int = 0
  def new_range(self, size) -> UOp:
    self.next_axis += 1
    return UOp.range(size, self.next_axis-1, AxisType.REDUCE)

def _load(ctx:KernelCtx, buf:UOp, x:UOp, valid:UOp, idx:tuple) -> UOp:
  ctx.inputs[buf] = None
  index = buf.index(flat_index(idx, x.shape))
  if _is_true(valid): return index.load()
  return UOp(Ops.LOAD, buf.dtype, (index, UOp.const(buf.dtype, 0), valid))  # gated: padding reads nothing

def _at_realized(ctx:KernelCtx, a:UOp) -> UOp|None:
  x = a.src[0]
  if x.op is Ops.BUFFER: return _load(ctx, x, x, a.src[1], a.src[2:])
  if x is not ctx.root and (buf := ctx.realized.get(x)) is not None:
    # read after an in-place write: the written buffer, or the view of it that was written through (index it like the view)
    return _load(ctx, buf, x, a.src[1], a.src[2:]) if buf.op is Ops.BUFFER else at(buf, a.src[1], a.src[2:])
  return None

def _at_alu(a:UOp) -> UOp:
  x, valid, idx = a.src[0], a.src[1], a.src[2:]
  vals = []
  for s in x.src:
    bcast, off = broadcast_axes(s.shape, x.shape), len(x.shape) - len(s.shape)
    vals.append(at(s, valid, tuple(_idx(0) if i+off in bcast else idx[i+off] for i in range(len(s.shape)))))
  return UOp(x.op, x.dtype, tuple(vals), x.arg)

def _at_permute(x:UOp, valid:UOp, idx:tuple) -> UOp:
  inv = [None]*len(idx)
  for i, p in enumerate(x.marg): inv[p] = idx[i]
  return at(x.src[0], valid, tuple(inv))

def _at_pad(x:UOp, valid:UOp, idx:tuple) -> UOp:
  inner, pad_valid = [], UOp.const(dtypes.bool, True)
  for i, (b, e), s in zip(idx, x.marg, x.src[0].shape):
    if _is_zero(b) and _is_zero(e): inner.append(i); continue
    j = i - b
    pad_valid = pad_valid & (j >= 0) & (j < s)
    inner.append(j)
  return pad_valid.where(at(x.src[0], pad_valid if _is_true(valid) else valid & pad_valid, tuple(inner)), UOp.const(x.dtype, 0))
def _is_zero(s) -> bool: return isinstance(s, int) and s == 0

def _at_reduce(ctx:KernelCtx, x:UOp, valid:UOp, idx:tuple) -> UOp:
  rop, axes = x.arg
  shape = x.src[0].shape
  rngs = {a: ctx.new_range(shape[a]) for a in axes if not _is_one(shape[a])}
  inner = tuple(rngs[a] if a in rngs else (_idx(0) if a in axes else i) for a, i in enumerate(idx))
  return at(x.src[0], valid, inner).reduce(*rngs.values(), op=rop)

def _x(op) -> UPat: return UPat(Ops.AT, src=(UPat(op, name="x"), UPat.var("valid")), allow_any_len=True, name="a")
# AT(x, valid, *idx): the value of x at idx. Each rule moves the question one node down the tensor graph.
pm_index = PatternMatcher([
  # realized nodes and buffers are loads: fusion ends there
  (UPat(Ops.AT, name="a"), _at_realized),
  (_x(Ops.CONST), lambda x, **_: UOp.const(x.dtype, x.arg)),
  (_x(Ops.DEFINE_VAR), lambda x, **_: x),
  # nodes that don't change values or index
  (_x((Ops.CONTIGUOUS, Ops.CONTIGUOUS_BACKWARD, Ops.DETACH, Ops.AFTER)), lambda a, x, valid: at(x.src[0], valid, a.src[2:])),
  (_x((Ops.CAST, Ops.BITCAST)), lambda a, x, valid: UOp(x.op, x.dtype, (at(x.src[0], valid, a.src[2:]),))),
  # elementwise: a broadcast source is read at index 0 on the axes it is broadcast over
  (_x(GroupOp.ALU), lambda a, **_: _at_alu(a)),
  # movement: index math
  (_x(Ops.RESHAPE), lambda a, x, valid: at(x.src[0], valid, reshape_index(a.src[2:], x.shape, x.src[0].shape))),
  (_x(Ops.EXPAND), lambda a, x, valid: at(x.src[0], valid, tuple(_idx(0) if _is_one(s) and not _is_one(n) else i
                                                                     for i, s, n in zip(a.src[2:], x.src[0].shape, x.shape)))),
  (_x(Ops.PERMUTE), lambda a, x, valid: _at_permute(x, valid, a.src[2:])),
  (_x(Ops.FLIP), lambda a, x, valid: at(x.src[0], valid, tuple(s-1-i if f else i for i, s, f in zip(a.src[2:], x.shape, x.marg)))),
  (_x(Ops.SHRINK), lambda a, x, valid: at(x.src[0], valid, tuple(i+b if not _is_zero(b) else i for i, (b, _) in zip(a.src[2:], x.marg)))),
  (_x(Ops.PAD), lambda a, x, valid: _at_pad(x, valid, a.src[2:])),
  # a reduction opens one REDUCE range per reduced axis
  (_x(Ops.REDUCE_AXIS), lambda ctx, a, x, valid: _at_reduce(ctx, x, valid, a.src[2:])),
])

def _unfusable(a:UOp) -> UOp|None:
  if a.op is not Ops.AT: return None
  x = a.src[0]
  raise RuntimeError(f"cannot fuse {x.op} into a kernel (shape {x._shape}, dtype {x.dtype})")
pm_index_checked = pm_index + PatternMatcher([(UPat(Ops.AT, name="a"), _unfusable)])

def _store_index(out:UOp, rngs:tuple, shape:tuple) -> UOp:
  if out.op is Ops.BUFFER: return out.index(flat_index(rngs, shape))
  # a view: its address is what reading it at the same index would load
  addr = graph_rewrite(at(out, UOp.const(dtypes.bool, True), rngs), pm_index_checked, ctx=KernelCtx({}, out), bottom_up=True, name="kernel")
  if addr.op is not Ops.LOAD or len(addr.src) != 1: raise RuntimeError(f"cannot write through a padded view of shape {out.shape}")
  return addr.src[0]

def _dim_name(s) -> str: return str(s) if isinstance(s, int) else s.render()

def build_kernel(root:UOp, out:UOp, realized:dict[UOp, UOp], assign:bool=False) -> tuple[UOp, KernelCtx]:
  """the AST that computes `root` into `out`: SINK(END(STORE(out[idx], value), ranges)). For an assign, `out` may be a view of a
  buffer that the kernel writes through, and root is the value: read from its buffer if it was realized (it is not what this kernel makes)"""
  shape = root.shape
  ctx = KernelCtx(realized, None if assign else root, next_axis=sum(1 for s in shape if not _is_one(s)))
  rngs, n = [], 0
  for s in shape:
    if _is_one(s): rngs.append(_idx(0))
    else: rngs.append(UOp.range(s, n, AxisType.LOOP)); n += 1
  val = graph_rewrite(at(root, UOp.const(dtypes.bool, True), tuple(rngs)), pm_index_checked, ctx=ctx, bottom_up=True, name="kernel")
  store = _store_index(out, tuple(rngs), shape).store(val)
  red = any(u.op is Ops.REDUCE for u in val.toposort())
  name = ("r" if red else "E") + "".join(f"_{_dim_name(s)}" for s in shape if not _is_one(s))
  return store.end(*[r for r in rngs if r.op is Ops.RANGE]).sink(arg=KernelInfo(name=name)), ctx
