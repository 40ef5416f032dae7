"""Movement ops become index arithmetic: the value of a tensor-level node at an index (one expression per axis) is built as a
kernel-level expression over RANGEs, loads of realized buffers and a validity predicate (from PAD). No data moves."""
from __future__ import annotations
from tinygrad.uop import Ops, GroupOp, AxisType
from tinygrad.uop.ops import UOp, KernelInfo, broadcast_axes
from tinygrad.dtype import dtypes

def _idx(x) -> UOp: return x if isinstance(x, UOp) else UOp.const(dtypes.weakint, x)
def _true() -> UOp: return UOp.const(dtypes.bool, True)

def flat_index(idx:tuple, shape:tuple) -> UOp:
  """row-major linear index of a multi-axis index"""
  ret, stride = _idx(0), 1
  for i, s in reversed(list(zip(idx, shape))):
    if not (isinstance(s, int) and s == 1): ret = ret + _idx(i) * stride
    stride = stride * s
  return ret

def unflat_index(lin:UOp, shape:tuple) -> tuple:
  ret, stride = [], 1
  for s in reversed(shape):
    ret.append(_idx(0) if isinstance(s, int) and s == 1 else (lin // stride) % s)
    stride = stride * s
  return tuple(reversed(ret))

class KernelBuilder:
  """Builds the body of one kernel. `realized` maps tensor-level nodes that live in buffers to the UOp used as that buffer
  (a BUFFER, or what a realized node will be stored into); reading one becomes a LOAD and ends the fusion there."""
  def __init__(self, realized:dict[UOp, UOp], root:UOp):
    self.realized, self.root = realized, root
    self.inputs: dict[UOp, None] = {}  # buffers this kernel reads, in first-use order
    self.variables: dict[UOp, int] = {}  # bound variables -> value
    self.next_axis = 0
    self.cache: dict[tuple, UOp] = {}

  def new_range(self, size, axis_type:AxisType) -> UOp:
    self.next_axis += 1
    return UOp.range(size, self.next_axis-1, axis_type)

  def value(self, u:UOp, idx:tuple, valid:UOp) -> UOp:
    key = (u, idx, valid)
    if (ret := self.cache.get(key)) is None: ret = self.cache[key] = self._value(u, idx, valid)
    return ret

  def _load(self, buf:UOp, lin:UOp, valid:UOp) -> UOp:
    self.inputs[buf] = None
    index = buf.index(lin)
    if valid.op is Ops.CONST and valid.arg is True: return index.load()
    return UOp(Ops.LOAD, buf.dtype, (index, UOp.const(buf.dtype, 0), valid))  # gated: padding reads nothing

  def _value(self, u:UOp, idx:tuple, valid:UOp) -> UOp:
    if u is not self.root and u in self.realized:
      buf = self.realized[u]
      return self._load(buf, flat_index(idx, u.shape), valid)
    op, src, arg = u.op, u.src, u.arg
    if op is Ops.BUFFER: return self._load(u, flat_index(idx, u.shape), valid)
    if op is Ops.CONST: return UOp.const(u.dtype, arg)
    if op is Ops.BIND:
      var, val = u.unbind()
      self.variables[var] = val
      return var
    if op is Ops.DEFINE_VAR: return u
    if op in {Ops.CONTIGUOUS, Ops.DETACH}: return self.value(src[0], idx, valid)
    if op is Ops.AFTER: return self.value(src[0], idx, valid)
    if op in {Ops.CAST, Ops.BITCAST}: return UOp(op, u.dtype, (self.value(src[0], idx, valid),))
    if op in GroupOp.ALU:
      vals = []
      for s in src:
        bcast = broadcast_axes(s.shape, u.shape)
        off = len(u.shape) - len(s.shape)
        vals.append(self.value(s, tuple(_idx(0) if i+off in bcast else idx[i+off] for i in range(len(s.shape))), valid))
      return UOp(op, u.dtype, tuple(vals), arg)
    if op is Ops.RESHAPE: return self.value(src[0], unflat_index(flat_index(idx, u.shape), src[0].shape), valid)
    if op is Ops.EXPAND: return self.value(src[0], tuple(_idx(0) if s == 1 and n != 1 else i for i, s, n in zip(idx, src[0].shape, u.shape)), valid)
    if op is Ops.PERMUTE:
      inv = [0]*len(arg)
      for i, p in enumerate(arg): inv[p] = idx[i]
      return self.value(src[0], tuple(inv), valid)
    if op is Ops.FLIP: return self.value(src[0], tuple(s-1-i if f else i for i, s, f in zip(idx, src[0].shape, arg)), valid)
    if op is Ops.SHRINK: return self.value(src[0], tuple(_idx(i)+b if b != 0 else i for i, (b, _) in zip(idx, arg)), valid)
    if op is Ops.PAD:
      inner, pad_valid = [], _true()
      for i, (b, _), s in zip(idx, arg, src[0].shape):
        if b == 0 and _ == 0: inner.append(i); continue
        j = _idx(i) - b if b != 0 else _idx(i)
        pad_valid = pad_valid & (j >= 0) & (j < s)
        inner.append(j)
      val = self.value(src[0], tuple(inner), valid & pad_valid if not (valid.op is Ops.CONST and valid.arg is True) else pad_valid)
      return pad_valid.where(val, UOp.const(u.dtype, 0))
    if op is Ops.REDUCE_AXIS:
      rop, axes = arg
      rngs = {a: self.new_range(src[0].shape[a], AxisType.REDUCE) for a in axes if not (isinstance(src[0].shape[a], int) and src[0].shape[a] == 1)}
      inner = tuple(rngs[a] if a in rngs else (_idx(0) if a in axes else i) for a, i in enumerate(idx))
      return self.value(src[0], inner, valid).reduce(*rngs.values(), op=rop)
    raise RuntimeError(f"cannot fuse {op} into a kernel (shape {u._shape}, dtype {u.dtype})")

def build_kernel(root:UOp, out_buf:UOp, realized:dict[UOp, UOp], name_hint:str="") -> tuple[UOp, KernelBuilder]:
  """the AST that computes `root` into `out_buf`: SINK(END(STORE(out[idx], value), ranges))"""
  kb = KernelBuilder(realized, root)
  shape = root.shape
  rngs = tuple(_idx(0) if isinstance(s, int) and s == 1 else kb.new_range(s, AxisType.LOOP) for s in shape)
  val = kb.value(root, rngs, _true())
  store = out_buf.index(flat_index(rngs, shape)).store(val)
  open_rngs = [r for r in rngs if r.op is Ops.RANGE]
  red = any(u.op is Ops.REDUCE for u in val.toposort())
  name = ("r" if red else "E") + "".join(f"_{s}" for s in shape if not (isinstance(s, int) and s == 1)) + name_hint
  return store.end(*open_rngs).sink(arg=KernelInfo(name=name)), kb
