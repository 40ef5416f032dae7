"""UOp: the one immutable, hash-consed node type. Tensors, kernels, programs and command lists are all graphs of UOps."""
from __future__ import annotations
import functools, hashlib, math, weakref, itertools
from dataclasses import dataclass
from typing import Any, Callable
from tinygrad.uop import Ops, GroupOp, AxisType
from tinygrad.dtype import DType, PtrDType, AddrSpace, dtypes, least_upper_dtype
from tinygrad.helpers import prod, all_int, SPEC
from tinygrad.mixin import OpMixin

sint = int  # a shape dimension: an int or an integer UOp (symbolic); the alias documents intent in signatures

@dataclass(frozen=True)
class KernelInfo:
  name: str = "test"
  opts_to_apply: tuple|None = None
  dont_use_locals: bool = False
  applied_opts: tuple = ()

@dataclass(frozen=True)
class ParamArg:
  """payload of PARAM (a kernel/function argument) and BUFFER (a device buffer or a LOCAL/REG scratch buffer)"""
  slot: int
  shape: tuple = ()
  addrspace: AddrSpace = AddrSpace.GLOBAL
  device: str|tuple|None = None
  name: str|None = None
  vmin_vmax: tuple|None = None
  volatile: bool = False
  # every BUFFER and PARAM node's cache key hashes its arg (when made, looked up and dropped): worked out once. Never pickled (a string's
  # hash differs between processes): __reduce__ rebuilds from the fields
  def __hash__(self) -> int:
    if (h := self.__dict__.get("_hash")) is None:
      object.__setattr__(self, "_hash", h := hash((self.slot, self.shape, self.addrspace, self.device, self.name, self.vmin_vmax, self.volatile)))
    return h
  def __reduce__(self): return ParamArg, (self.slot, self.shape, self.addrspace, self.device, self.name, self.vmin_vmax, self.volatile)
  @staticmethod
  def global_buffer(slot:int, size:int, device:str|tuple) -> ParamArg:
    """ParamArg(slot, (size,), AddrSpace.GLOBAL, device), made without the frozen dataclass's __init__ (a setattr call per field): every
    new device buffer makes one"""
    ret = object.__new__(ParamArg)
    (d := ret.__dict__).update(_GLOBAL_BUFFER_FIELDS)  # the fields every new buffer shares, copied in C (no keyword dict per call)
    d["slot"], d["shape"], d["device"] = slot, (size,), device
    return ret

_GLOBAL_BUFFER_FIELDS = {"slot": 0, "shape": (), "addrspace": AddrSpace.GLOBAL, "device": None, "name": None, "vmin_vmax": None, "volatile": False}

@dataclass(frozen=True)
class VarArg:
  name: str
  vmin: int
  vmax: int

# keep 0.0 and -0.0, and True and 1 (equal, same hash), distinct in the cache
def _float_key(x): return (x, math.copysign(1, x)) if type(x) is float else (x, bool) if type(x) is bool else x

class UOpMetaClass(type):
  # hash-consing: equal (op, dtype, src, arg, tag) give the same object. The cache holds weak references, so dead graphs are freed: a
  # plain dict of weakref.ref (made in C) and a callback that drops the key, cheaper than WeakValueDictionary's python-level KeyedRef
  # and get() on the path every node is built through. A new node is made here, not through __init__: one python frame less per node
  ucache: dict[tuple, weakref.ref] = {}
  def __call__(cls, op:Ops, dtype:DType=dtypes.void, src:tuple=(), arg:Any=None, tag:Any=None):
    key = (op, dtype, src, _float_key(arg) if type(arg) is float or type(arg) is bool else arg, tag)
    if (wr := _ucache.get(key)) is not None and (ret := wr()) is not None: return ret
    # the check runs in C (no comprehension frame) when every source is exactly a UOp, the usual case
    if not isinstance(src, tuple) or not (_JUST_UOP.issuperset(map(type, src)) or all(isinstance(s, UOp) for s in src)):
      raise TypeError(f"UOp src must be a tuple of UOps, got {src!r}")
    if op is Ops.WHERE and src and src[0].dtype is not dtypes.bool: raise RuntimeError(f"WHERE needs a bool condition, got {src[0].dtype}")
    ret = cls.__new__(cls)
    # through the slots' own setters (__setattr__ refuses)
    _set_op(ret, op); _set_dtype(ret, dtype); _set_src(ret, src); _set_arg(ret, arg); _set_tag(ret, tag)
    if SPEC.value >= 2: _check_new(ret)
    _ucache[key] = wr = weakref.ref(ret, _forget)
    _ucache_keys[wr] = key
    return ret

_JUST_UOP: frozenset = frozenset()  # {UOp}, once the class exists
_ucache, _ucache_keys = UOpMetaClass.ucache, {}  # key -> weak reference, and back
# the dicts are bound as defaults: a callback that runs while the interpreter tears down its modules still finds them
def _forget(wr:weakref.ref, cache=_ucache, keys=_ucache_keys):
  # a node made again after this one died owns the key now: put back (one hash of the key in the usual case)
  if (now := cache.pop(key := keys.pop(wr), None)) is not wr and now is not None: cache[key] = now

def _check_new(u:UOp):
  from tinygrad.uop.spec import check_uop
  check_uop(u)

class UOp(OpMixin, metaclass=UOpMetaClass):
  # the fields are slots: python 3.11 reads an attribute of an object whose __dict__ was made by hand (every node: the caches below
  # live there) through its slow generic path, 2.3x the instructions of a slot's read, and walks read op and src of every node they visit.
  # __dict__ stays for the per-node caches (shape, device, key, ...)
  __slots__ = ("op", "dtype", "src", "arg", "tag")  # __dict__ and __weakref__ come with the mixins
  def __setattr__(self, k, v): raise AttributeError(f"UOp is immutable (tried to set {k}); use .replace()")
  def __reduce__(self): return UOp, (self.op, self.dtype, self.src, self.arg, self.tag)
  def replace(self, **kwargs) -> UOp:
    if len(kwargs) == 1 and (src := kwargs.get("src")) is not None:  # the usual case: new sources
      return self if src == self.src else UOp(self.op, self.dtype, src, self.arg, self.tag)
    new = (kwargs.pop("op", self.op), kwargs.pop("dtype", self.dtype), kwargs.pop("src", self.src), kwargs.pop("arg", self.arg), kwargs.pop("tag", self.tag))
    if kwargs: raise TypeError(f"replace got unknown fields {list(kwargs)}")
    return self if new == (self.op, self.dtype, self.src, self.arg, self.tag) else UOp(*new)
  def __repr__(self): return pretty_print(self)
  def __bool__(self):
    # a comparison its bounds decide once simplified (v < v, v < 11 for v in [1, 10]) has a value; an int one is true where it can't be 0
    if self.dtype in _INT_OR_BOOL:
      lo, hi = self.simplify()._min_max
      if lo == hi: return bool(lo)
      if lo > 0 or hi < 0: return True
    raise TypeError(f"a symbolic UOp has no truth value: {self.render()} (use resolve())")
  def __index__(self):
    if self.op is Ops.CONST and isinstance(self.arg, int): return self.arg
    raise TypeError(f"{self.render()} is not a constant int")
  def __int__(self): return int(self.arg) if self.op is Ops.CONST else self.__index__()
  def __float__(self):
    if self.op is Ops.CONST: return float(self.arg)
    raise TypeError(f"{self.render()} is not a constant")

  # *** graph walking (iterative, so deep graphs never hit the recursion limit) ***
  def toposort(self, gate:Callable[[UOp], bool]|None=None) -> dict[UOp, None]:
    """all nodes reachable from self, sources before users; `gate(u)` False stops descending below u (u itself is included)"""
    ret: dict[UOp, None] = {}
    stack: list[tuple[UOp, bool]] = [(self, False)]
    pop, push = stack.pop, stack.append  # the hottest loop of every pass: no generator, no attribute lookups
    while stack:
      node, visited = pop()
      if visited: ret[node] = None
      elif node not in ret:
        push((node, True))
        if gate is None or gate(node):
          for s in reversed(node.src):
            if s not in ret: push((s, False))
    return ret
  def backward_slice(self) -> dict[UOp, None]:
    """everything self depends on, excluding self"""
    ret = self.toposort()
    ret.pop(self)
    return ret
  def substitute(self, mapping:dict[UOp, UOp]) -> UOp:
    """replace nodes by the mapping everywhere below (and including) self, rebuilding the users"""
    new: dict[UOp, UOp] = {}
    for u in self.toposort():
      if u in mapping: new[u] = mapping[u]
      else: new[u] = u if all(new[s] is s for s in u.src) else u.replace(src=tuple(new[s] for s in u.src))
    return new[self]
  @functools.cached_property
  def key(self) -> bytes:
    """process-independent content hash, the key of every cache"""
    for u in self.toposort(lambda u: "key" not in u.__dict__):
      if "key" not in u.__dict__:
        h = hashlib.sha256(repr((u.op, u.dtype, u.arg, u.tag)).encode() + b"".join(s.key for s in u.src))
        u.__dict__["key"] = h.digest()
    return self.__dict__["key"]

  # *** shape inference ***
  @property
  def _shape(self) -> tuple|None:
    return s if (s := self.__dict__.get("_shape_c", _UNKNOWN)) is not _UNKNOWN else _shape_of(self)
  @property
  def shape(self) -> tuple:
    if (s := self.__dict__.get("_shape_c", _UNKNOWN)) is _UNKNOWN: s = _shape_of(self)
    if s is None: raise RuntimeError(f"{self.op} has no shape")
    return s
  @property
  def ndim(self) -> int: return len(self.shape)
  def numel(self) -> sint: return prod(self.shape)
  @property
  def device(self) -> str|tuple|None:
    return d if (d := self.__dict__.get("_device_c", _UNKNOWN)) is not _UNKNOWN else fill_memo(self, "_device_c", _infer_device)
  @property
  def base(self) -> UOp:
    """the node under any chain of movement ops"""
    u = self
    while u.op in GroupOp.Movement: u = u.src[0]
    return u
  @property
  def buf_uop(self) -> UOp:
    u = self.base
    while u.op is Ops.AFTER: u = u.src[0].base
    return u
  @property
  def addrspace(self) -> AddrSpace|None:
    u = self
    while u.op in {Ops.AFTER, Ops.INDEX} or u.op in GroupOp.Movement: u = u.src[0]
    return u.arg.addrspace if u.op in {Ops.PARAM, Ops.BUFFER} else None

  # *** construction helpers ***
  @staticmethod
  def const(dtype:DType, b:Any, device:str|tuple|None=None, shape:tuple|None=None) -> UOp:
    if isinstance(b, UOp): return b if dtype is b.dtype else b.cast(dtype)
    ret = UOp(Ops.CONST, dtype, (_device_node(device),) if device is not None else (), dtypes.as_const(b, dtype))
    if shape: ret = ret.reshape((1,)*len(shape)).expand(shape)
    return ret
  def const_like(self, b:Any, dtype:DType|None=None) -> UOp: return UOp.const(dtype or self.dtype, b, self.device)
  def _arange(self, n:int, dtype:DType|None=None) -> UOp:
    # indexing by a tensor builds an arange of the axis on every call (0.3 ms of python at 32000): one graph per device, size and dtype
    return _arange_on(self.device, n, dtype or dtypes.default_int)
  @staticmethod
  def variable(name:str, vmin:int, vmax:int, dtype:DType=dtypes.weakint) -> UOp: return UOp(Ops.DEFINE_VAR, dtype, arg=VarArg(name, vmin, vmax))
  def bind(self, val:int) -> UOp:
    if self.op is not Ops.DEFINE_VAR: raise RuntimeError(f"can only bind a Variable, not {self.op}")
    # a float would be truncated (3.5 -> 3) and a bool is no count: only an int (or anything with __index__, a numpy int)
    if isinstance(val, (bool, UOp)) or not hasattr(val, "__index__"):
      raise TypeError(f"Variable {self.arg.name} must be bound to an int, got {val!r} ({type(val).__name__})")
    val = val.__index__()
    if not self.arg.vmin <= val <= self.arg.vmax: raise ValueError(f"{val} is out of range [{self.arg.vmin}, {self.arg.vmax}] of Variable {self.arg.name}")
    # every runtime passes a variable to its kernels as int32 (whatever its dtype; renderers widen it for 64-bit math): past that it would wrap
    if not dtypes.int32.min <= val <= dtypes.int32.max:
      raise ValueError(f"Variable {self.arg.name} bound to {val}: kernels receive a variable as int32, which cannot hold it")
    return UOp(Ops.BIND, self.dtype, (self, self.const_like(val)))
  def unbind(self) -> tuple[UOp, int]:
    if self.op is not Ops.BIND: raise RuntimeError(f"can only unbind a BIND, not {self.op}")
    return self.src[0], self.src[1].arg
  @property
  def expr(self) -> str: return self.arg.name
  @staticmethod
  def range(end:sint, axis_id:int, axis_type:AxisType=AxisType.LOOP, dtype:DType=dtypes.weakint) -> UOp:
    return UOp(Ops.RANGE, dtype, (end if isinstance(end, UOp) else UOp.const(dtype, end),), (axis_id, axis_type))
  @staticmethod
  def loop(axis_id:int) -> UOp:
    """a bound-less loop header: no induction variable; close it with body.end(loop, cond) to loop again while cond (do-while)"""
    return UOp(Ops.RANGE, dtypes.void, (), (axis_id, AxisType.LOOP))
  @staticmethod
  def special(end:sint, name:str, dtype:DType=dtypes.weakint) -> UOp:
    return UOp(Ops.SPECIAL, dtype, (end if isinstance(end, UOp) else UOp.const(dtype, end),), name)
  @staticmethod
  def param(slot:int, dtype:DType, shape:tuple|int=(), addrspace:AddrSpace=AddrSpace.GLOBAL, name:str|None=None, vmin_vmax=None,
            volatile=False, device=None) -> UOp:
    return UOp(Ops.PARAM, dtype, arg=ParamArg(slot, _shape_tuple(shape), addrspace, device, name, vmin_vmax, volatile))
  @staticmethod
  def placeholder(shape:tuple|int, dtype:DType, slot:int, addrspace:AddrSpace=AddrSpace.GLOBAL, device=None) -> UOp:
    return UOp(Ops.BUFFER, dtype, arg=ParamArg(slot, _shape_tuple(shape), addrspace, device))
  @staticmethod
  def new_buffer(device:str|tuple, size:int, dtype:DType) -> UOp:
    BufferClock.last = n = next(_buffer_num)
    return UOp(Ops.BUFFER, dtype, (), ParamArg.global_buffer(n, size, device))
  # sink/group work as `UOp.sink(a, b)` and as `a.sink(b)`: the first source is self either way
  def sink(self, *srcs:UOp, arg=None) -> UOp: return UOp(Ops.SINK, dtypes.void, (self,)+srcs, arg)
  def group(self, *srcs:UOp) -> UOp: return self if not srcs else UOp(Ops.GROUP, dtypes.void, (self,)+srcs)
  def after(self, *srcs:UOp) -> UOp: return UOp(Ops.AFTER, self.dtype, (self,)+tuple(srcs)) if srcs else self
  def index(self, *idx) -> UOp: return UOp(Ops.INDEX, self.dtype, (self,)+tuple(UOp.const(dtypes.weakint, i) if not isinstance(i, UOp) else i for i in idx))
  def load(self, *src:UOp) -> UOp: return UOp(Ops.LOAD, self.dtype, (self,)+src)
  def store(self, val:Any, *src:UOp) -> UOp:
    return UOp(Ops.STORE, dtypes.void, (self, val if isinstance(val, UOp) else UOp.const(self.dtype, val))+src)
  def end(self, *rngs:UOp) -> UOp: return UOp(Ops.END, dtypes.void, (self,)+rngs) if rngs else self
  def barrier(self, *srcs:UOp) -> UOp: return UOp(Ops.BARRIER, dtypes.void, (self,)+srcs)
  def call(self, *args:UOp, arg=None) -> UOp: return UOp(Ops.CALL, dtypes.void, (self,)+args, arg)
  def reduce(self, *rngs:UOp, op:Ops=Ops.ADD) -> UOp: return UOp(Ops.REDUCE, self.dtype, (self,)+rngs, op) if rngs else self
  def __getitem__(self, idx):
    idx = idx if isinstance(idx, tuple) else (idx,)
    if all(isinstance(i, (int, UOp)) for i in idx) and (self.op in {Ops.PARAM, Ops.BUFFER, Ops.AFTER} or self.op in GroupOp.Movement
                                                         and self._shape is not None and self.base.op in {Ops.PARAM, Ops.BUFFER}):
      return self.index(*idx)
    return self._getitem(idx)
  @property
  def ended_ranges(self) -> tuple[UOp, ...]: return tuple(s for s in self.src[1:] if s.op is Ops.RANGE) if self.op is Ops.END else ()

  # *** the core the op mixins build on ***
  def alu(self, op:Ops, *src:UOp) -> UOp:
    out_dtype = dtypes.bool if op in GroupOp.Comparison else (src[-1].dtype if op is Ops.WHERE else self.dtype)
    return UOp(op, out_dtype, (self,)+src)
  def cast(self, dtype:DType) -> UOp:
    if self.dtype is dtype: return self
    if self.op is Ops.CONST: return UOp(Ops.CONST, dtype, self.src, dtypes.as_const(self.arg, dtype))  # a literal is folded right away
    return UOp(Ops.CAST, dtype, (self,))
  def bitcast(self, dtype:DType) -> UOp: return self if self.dtype is dtype else UOp(Ops.BITCAST, dtype, (self,))
  def _mop(self, op:Ops, arg:Any) -> UOp:
    # sizes and offsets are sources (so every graph walk sees a Variable in them); an axis order or flip mask is a plain arg
    if op in _SIZED_MOVEMENT:
      flat = arg if op in (Ops.RESHAPE, Ops.EXPAND) else tuple(x for pair in arg for x in pair)
      return UOp(op, self.dtype, (self,)+tuple(_sint_uop(x) for x in flat))
    return UOp(op, self.dtype, (self,), arg)
  @property
  def marg(self) -> tuple:
    """a movement op's argument as python values: new shape (RESHAPE, EXPAND), (begin, end) or (before, after) pairs (SHRINK, PAD),
    axis order (PERMUTE), flip mask (FLIP); a symbolic size stays a UOp"""
    if self.op not in _SIZED_MOVEMENT: return self.arg
    flat = tuple([s.arg if s.op is Ops.CONST else s for s in self.src[1:]])
    return flat if self.op in (Ops.RESHAPE, Ops.EXPAND) else tuple(zip(flat[0::2], flat[1::2]))
  def _rop(self, op:Ops, axis:tuple[int, ...]) -> UOp: return UOp(Ops.REDUCE_AXIS, self.dtype, (self,), (op, tuple(axis))) if axis else self
  def contiguous(self) -> UOp: return UOp(Ops.CONTIGUOUS, self.dtype, (self,))
  def detach(self) -> UOp: return UOp(Ops.DETACH, self.dtype, (self,))
  def contiguous_backward(self) -> UOp: return UOp(Ops.CONTIGUOUS_BACKWARD, self.dtype, (self,))
  # set once the first CUSTOM_GRADIENT is made: until then Tensor.realize walks no graph to take them out
  custom_gradients_made = False
  def _custom_gradient(self, inputs:tuple[UOp, ...], backward:Callable[[UOp], tuple[UOp|None, ...]]) -> UOp:
    """self's value, whose gradient flows into self's graph as usual and also gives each of `inputs` backward(that gradient)'s entry
    (None: nothing); self is built on inputs' detach() where only backward's gradient should reach them. Autograd: uop/gradient.py"""
    UOp.custom_gradients_made = True
    return UOp(Ops.CUSTOM_GRADIENT, self.dtype, (self,) + inputs, backward)
  def copy_to_device(self, device:str|tuple) -> UOp: return UOp(Ops.COPY, self.dtype, (self, _device_node(device)))
  @staticmethod
  def multi(pieces:tuple|list, axis:int|None) -> UOp:
    """one value spread over several devices: piece i lives on device i; sharded on `axis` (pieces joined along it) or replicated (None)"""
    return UOp(Ops.MULTI, pieces[0].dtype, tuple(pieces), axis)
  @property
  def axis(self) -> int|None:
    """the axis a multi-device value is sharded on; None for a replicated or single-device one"""
    from tinygrad.uop.multi import shard_of
    return None if (sh := shard_of(self)) is None else sh[0]

  # *** symbolic ***
  @property
  def vmin(self): return self._min_max[0]
  @property
  def vmax(self): return self._min_max[1]
  @property
  def _min_max(self) -> tuple:
    return mm if (mm := self.__dict__.get("_mm")) is not None else fill_memo(self, "_mm", _min_max)
  def simplify(self) -> UOp:
    from tinygrad.uop.symbolic import symbolic
    return graph_rewrite(self, symbolic, name="simplify", memo="_simplified")
  def ssimplify(self) -> UOp|int:
    ret = self.simplify()
    return ret.arg if ret.op is Ops.CONST else ret
  def render(self, simplify=True) -> str:
    from tinygrad.uop.render import render_expr
    return render_expr(self.simplify() if simplify else self)
  def variables(self) -> list[UOp]:
    return sorted({u.src[0] if u.op is Ops.BIND else u for u in self.toposort() if u.op is Ops.DEFINE_VAR or u.op is Ops.BIND},
                  key=lambda v: v.arg.name)
  def sym_infer(self, var_vals:dict[str, int]) -> int|float:
    return sym_infer(self, var_vals)

_JUST_UOP = frozenset([UOp])
_set_op, _set_dtype, _set_src, _set_arg, _set_tag = (UOp.__dict__[f].__set__ for f in ("op", "dtype", "src", "arg", "tag"))
_buffer_num = itertools.count(1 << 20)
class BufferClock:
  """the number (ParamArg.slot) of the newest device buffer node: a graph built before a buffer was made cannot hold it"""
  last = (1 << 20) - 1

_SIZED_MOVEMENT = {Ops.RESHAPE, Ops.EXPAND, Ops.PAD, Ops.SHRINK}
def _device_node(device:str|tuple) -> UOp:
  """the DEVICE node of `device`, kept: a constant made on a device would otherwise make a new one whenever the last graph holding it
  died (`t * 2` in a loop), and a new node's device and shape are worked out by a walk"""
  if (u := _device_nodes.get(device)) is None:
    if len(_device_nodes) >= 256: _device_nodes.clear()
    u = _device_nodes[device] = UOp(Ops.DEVICE, arg=device)
  return u
_device_nodes: dict[str|tuple, UOp] = {}
def _sint_uop(x) -> UOp:
  if isinstance(x, UOp):
    if not dtypes.is_int(x.dtype): raise TypeError(f"a size or offset must be an int, got {x.dtype}: {x.render()}")
    if isinstance(x := _canonical(x), UOp): return x
  if type(x) is int and (u := _size_consts.get(x)) is not None: return u
  if isinstance(x, bool) or not isinstance(x, int): raise TypeError(f"a size or offset must be an int or int UOp, got {type(x).__name__} {x!r}")
  if len(_size_consts) >= 4096: _size_consts.clear()
  _size_consts[x] = u = UOp.const(dtypes.weakint, x)
  return u
# the sizes movement ops were given lately, as their CONST nodes: a conv2d's graph names ~130 of them, each otherwise a UOp.const (~1 us)
_size_consts: dict[int, UOp] = {}

def _canonical(x:UOp|int) -> UOp|int:
  """a symbolic size in its one form (uop/symbolic.py): equal sizes built differently are then the same node"""
  if not isinstance(x, UOp): return x
  from tinygrad.uop.symbolic import canonical
  return canonical(x)

def _shape_tuple(s) -> tuple: return (s,) if isinstance(s, (int, UOp)) else tuple(s)

# *** shape and device inference, one node at a time (callers walk the graph) ***

def broadcast_shape(*shapes:tuple) -> tuple:
  """numpy broadcasting (right-aligned) of shapes; raises naming the shapes when they don't fit"""
  # the usual case first: equal shapes, or scalars (shape ()) beside one shape. Sizes compare by identity where symbolic (hash-consed)
  if len(rest := [s for s in shapes if s]) <= 1 or all([s == rest[0] for s in rest]): return tuple(rest[0]) if rest else ()
  # then two of one rank (x - x.max(axis, keepdim=True)): no padding, no set per axis; a mismatch is named by the general path below
  if len(rest) == 2 and len(a := rest[0]) == len(b := rest[1]):
    out = tuple([y if type(x) is int and x == 1 else x for x, y in zip(a, b)])
    if all([o == y or (type(y) is int and y == 1) for o, y in zip(out, b)]): return out
  nd = max(len(s) for s in shapes)
  padded = [(1,)*(nd-len(s)) + tuple(s) for s in shapes]
  out = []
  for dims in zip(*padded):
    non1 = {d for d in dims if not (isinstance(d, int) and d == 1)}
    if len(non1) > 1: raise ValueError(f"shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot be broadcast together")
    out.append(non1.pop() if non1 else 1)
  return tuple(out)

def broadcast_axes(src_shape:tuple, out_shape:tuple) -> tuple[int, ...]:
  """the axes of out_shape that a source of src_shape is broadcast over (right-aligned, numpy rules)"""
  off = len(out_shape) - len(src_shape)
  return tuple(i for i in range(len(out_shape)) if i < off or (src_shape[i-off] == 1 and not (isinstance(out_shape[i], int) and out_shape[i] == 1)))

_NO_SHAPE = {Ops.SINK, Ops.GROUP, Ops.STORE, Ops.END, Ops.BARRIER, Ops.IF, Ops.ENDIF, Ops.NOOP, Ops.CALL, Ops.LINEAR, Ops.PROGRAM,
             Ops.SOURCE, Ops.BINARY, Ops.INS, Ops.DEVICE, Ops.CUSTOM, Ops.FUNCTION, Ops.CUSTOM_FUNCTION, Ops.UNIQUE}
_SCALAR = {Ops.CONST, Ops.DEFINE_VAR, Ops.BIND, Ops.SPECIAL, Ops.GETADDR, Ops.CUSTOMI, Ops.AT, Ops.WMMA}

_SAME_SHAPE = {Ops.AFTER, Ops.CAST, Ops.CONTIGUOUS, Ops.CONTIGUOUS_BACKWARD, Ops.CUSTOM_GRADIENT, Ops.DETACH, Ops.COPY, Ops.LOAD,
               Ops.REDUCE}

_UNKNOWN = object()  # a node whose shape or device is not worked out yet (None is a node without one)
def _shape_of(u:UOp) -> tuple|None:
  """u's shape, worked out (and kept on each node) for u and whatever below it has none yet"""
  return fill_memo(u, "_shape_c", _infer_shape)

def fill_memo(u:UOp, key:str, rule:Callable[[UOp], Any]) -> Any:
  """rule(x), kept on x under key, for u and each node below it that has none yet, sources first (rule reads theirs); u's. The walk
  enters only those nodes (a graph grows one op at a time: usually u alone), with no gate call per node as a toposort would make"""
  stack = [u]
  push, pop = stack.append, stack.pop
  while stack:
    if key in (d := (x := stack[-1]).__dict__):
      pop()
      continue
    waiting = len(stack)
    for s in reversed(x.src):
      if key not in s.__dict__: push(s)
    if len(stack) == waiting:
      pop()
      d[key] = rule(x)
  return u.__dict__[key]

def _known_shape(u:UOp) -> tuple:
  """the worked-out shape of a source (sources go first), which a movement op or reduce needs"""
  if (s := u.__dict__["_shape_c"]) is None: raise RuntimeError(f"{u.op} has no shape")
  return s

def _index_shape(u:UOp) -> tuple:
  src = u.src
  bs = src[0]._shape
  if bs is None or len(src)-1 > len(bs): return ()
  return broadcast_shape(*[s._shape or () for s in src[1:]], ()) + bs[len(src)-1:] if any(s._shape for s in src[1:]) else bs[len(src)-1:]

def _multi_shape(u:UOp) -> tuple:
  from tinygrad.uop.multi import multi_shape
  return multi_shape(u)

def _alu_shape(u:UOp) -> tuple:
  shapes = [s.__dict__["_shape_c"] for s in u.src]
  if None in shapes: raise RuntimeError(f"{u.op} has a source without a shape: {[s.op for s in u.src]}")
  # the usual op first, without broadcast_shape's comprehensions: one source, two of one shape, or a shape beside a scalar (shape ())
  if len(shapes) <= 2 and ((a := shapes[0]) == (b := shapes[-1]) or not b): return a
  return broadcast_shape(*shapes)

def _sizes(u:UOp) -> tuple: return tuple([x.arg if x.op is Ops.CONST else x for x in u.src[1:]])  # RESHAPE's or EXPAND's marg

def _reshape_shape(u:UOp) -> tuple:
  ss, arg = _known_shape(u.src[0]), _sizes(u)
  if all_int(ss) and all_int(arg) and math.prod(ss) != math.prod(arg):  # math.prod: in C, on ints only
    raise ValueError(f"cannot reshape {ss} to {arg}: sizes {prod(ss)} != {prod(arg)}")
  return arg

def _expand_shape(u:UOp) -> tuple:
  ss, arg = _known_shape(u.src[0]), _sizes(u)
  if len(arg) != len(ss) or any(not (s == a or (isinstance(s, int) and s == 1)) for s, a in zip(ss, arg) if isinstance(s, int) or s is not a):
    raise ValueError(f"cannot expand {ss} to {arg}")
  return arg

def _permute_shape(u:UOp) -> tuple:
  ss, arg = _known_shape(u.src[0]), u.arg
  if sorted(arg) != list(range(len(ss))): raise ValueError(f"{arg} is not a permutation of the {len(ss)} axes of {ss}")
  return tuple(ss[i] for i in arg)

def _pad_shape(u:UOp) -> tuple:
  ss, arg = _known_shape(u.src[0]), u.marg
  if len(arg) != len(ss): raise ValueError(f"pad {arg} does not match the {len(ss)} axes of {ss}")
  return tuple(_canonical(s+b+a) for s, (b, a) in zip(ss, arg))

def _shrink_shape(u:UOp) -> tuple:
  ss, arg = _known_shape(u.src[0]), u.marg
  if len(arg) != len(ss): raise ValueError(f"shrink {arg} does not match the {len(ss)} axes of {ss}")
  return tuple(_canonical(e-b) for b, e in arg)

def _bitcast_shape(u:UOp) -> tuple|None:
  """a bitcast between item sizes (a tensor's bytes on a device that runs no kernels, read as another dtype) rescales the last axis"""
  ss, old, new = u.src[0].__dict__["_shape_c"], u.src[0].dtype.itemsize, u.dtype.itemsize
  if old == new or not ss: return ss
  if not isinstance(last := ss[-1], int) or (last * old) % new: raise ValueError(f"bitcast of shape {ss} from {u.src[0].dtype} to {u.dtype}: "
                                                                                 f"the last axis's {ss[-1]} items are no whole number of {u.dtype}")
  return ss[:-1] + (last * old // new,)

def _reduce_shape(u:UOp) -> tuple:
  ss, axes = _known_shape(u.src[0]), u.arg[1]
  if not all([0 <= a < len(ss) for a in axes]): raise ValueError(f"reduce axes {axes} out of range for shape {ss}")
  return tuple([1 if i in axes else s for i, s in enumerate(ss)])

# op -> its shape from its sources' (worked out already): one table lookup per node, not a chain of `op is Ops.X` tests
_SHAPE_RULES: dict[Ops, Callable[[UOp], tuple|None]] = {
  **{op: (lambda u: None) for op in _NO_SHAPE}, **{op: (lambda u: ()) for op in _SCALAR},
  **{op: (lambda u: u.src[0].__dict__["_shape_c"]) for op in _SAME_SHAPE | {Ops.ALLREDUCE}},
  **{op: _alu_shape for op in GroupOp.ALU}, **{op: _multi_shape for op in (Ops.MULTI, Ops.MSELECT)},
  Ops.RANGE: lambda u: None if u.dtype is dtypes.void else (), Ops.PARAM: lambda u: u.arg.shape, Ops.BUFFER: lambda u: u.arg.shape,
  Ops.INDEX: _index_shape, Ops.STACK: lambda u: (len(u.src),) + (broadcast_shape(*[s.shape for s in u.src]) if u.src else ()),
  Ops.RESHAPE: _reshape_shape, Ops.EXPAND: _expand_shape, Ops.PERMUTE: _permute_shape, Ops.PAD: _pad_shape, Ops.SHRINK: _shrink_shape,
  Ops.FLIP: lambda u: _known_shape(u.src[0]), Ops.REDUCE_AXIS: _reduce_shape, Ops.BITCAST: _bitcast_shape}

def _infer_shape(u:UOp) -> tuple|None:
  """u's shape from its sources' (worked out already)"""
  if (rule := _SHAPE_RULES.get(u.op)) is None: raise RuntimeError(f"no shape rule for {u.op}")
  return rule(u)

_DEVICE_RULES: dict[Ops, Callable[[UOp], str|tuple|None]] = {
  Ops.DEVICE: lambda u: u.arg, Ops.BUFFER: lambda u: u.arg.device, Ops.COPY: lambda u: u.src[1].arg,
  Ops.MULTI: lambda u: tuple(s.device for s in u.src), Ops.ALLREDUCE: lambda u: tuple(s.device for s in u.src),
  Ops.MSELECT: lambda u: u.src[0].device[u.arg[0]]}

def _infer_device(u:UOp) -> str|tuple|None:
  if (rule := _DEVICE_RULES.get(u.op)) is not None: return rule(u)
  for s in u.src:  # anything else: the first source's device
    if (d := s.device) is not None: return d
  return None

# *** value bounds ***

_BOUNDS: dict[DType, tuple] = {}  # per dtype (a pure function of it): asked for by most bounds rules
def _dtype_bounds(dt:DType) -> tuple:
  if (b := _BOUNDS.get(dt)) is None:
    if dt in (dtypes.weakint, dtypes.void): b = (-(2**63), 2**63-1)
    elif dtypes.is_float(dt): b = (-math.inf, math.inf)
    else: b = (dtypes.min(dt), dtypes.max(dt))
    _BOUNDS[dt] = b
  return b

_FLOAT_DTYPES = frozenset((*dtypes.floats, dtypes.weakfloat))
_INT_OR_BOOL = frozenset((*dtypes.ints, dtypes.weakint, dtypes.bool))

def _cast_bounds(u:UOp, s:tuple) -> tuple|None:
  if u.dtype in _FLOAT_DTYPES or s[0].dtype in _FLOAT_DTYPES: return None  # float->int truncates: bounds don't carry over
  lo, hi = _dtype_bounds(u.dtype)
  return s[0]._min_max if s[0].vmin >= lo and s[0].vmax <= hi else None

def _int_binary(rule:Callable) -> Callable:
  """a rule for a binary op of ints (or bools) from its sources' bounds; anything else falls through to the dtype's bounds"""
  def bounds(u:UOp, s:tuple) -> tuple|None:
    if u.dtype not in _INT_OR_BOOL or len(s) != 2: return None
    (a0, a1), (b0, b1) = s[0]._min_max, s[1]._min_max
    return rule(u, a0, a1, b0, b1)
  return bounds

def _mod_bounds(u:UOp, a0, a1, b0, b1) -> tuple|None:
  if not (b0 > 0 and (u.op is Ops.FLOORMOD or a0 >= 0)): return None
  return (a0 % b0, a1 % b0) if b0 == b1 and a1 - a0 < b0 and a0 % b0 <= a1 % b0 else (0, b1-1)

def _and_bounds(u:UOp, a0, a1, b0, b1) -> tuple|None:
  if u.dtype is dtypes.bool: return (a0 and b0, a1 and b1)
  return (0, min(a1, b1)) if a0 >= 0 and b0 >= 0 else None

def _or_bounds(u:UOp, a0, a1, b0, b1) -> tuple|None:
  """of ints that are not negative: at least the larger, below the next power of two of either (rand's mantissa bits | 1.0's exponent)"""
  if u.dtype is dtypes.bool: return (a0 or b0, a1 or b1)
  return (max(a0, b0), (1 << max(a1, b1).bit_length()) - 1) if a0 >= 0 and b0 >= 0 else None

def _xor_bounds(u:UOp, a0, a1, b0, b1) -> tuple|None:
  """x ^ -1 (~x, which minimum() builds on: -x-1 signed, max-x unsigned) reverses x's bounds; any other xor says nothing"""
  if u.dtype is dtypes.bool: return None
  if a0 == a1 and b0 == b1: return (a0 ^ b0, a0 ^ b0)
  if a0 == a1: (a0, a1), (b0, b1) = (b0, b1), (a0, a1)  # the constant second
  if b0 != b1: return None
  if b0 == -1 and not dtypes.is_unsigned(u.dtype): return (-a1-1, -a0-1)
  if dtypes.is_unsigned(u.dtype) and b0 == (top := dtypes.max(u.dtype)): return (top - a1, top - a0)
  return None

def _comparison(rule:Callable) -> Callable:
  def bounds(u:UOp, s:tuple) -> tuple:
    (a0, a1), (b0, b1) = s[0]._min_max, s[1]._min_max
    return rule(a0, a1, b0, b1)
  return bounds

# op -> its bounds from its sources' (worked out already), or None where they say nothing: then the dtype's own bounds.
# float branches of a WHERE may be NaN, which min/max can't order: their bounds would lie
_BOUND_RULES: dict[Ops, Callable[[UOp, tuple], tuple|None]] = {
  Ops.CONST: lambda u, s: (u.arg, u.arg), Ops.DEFINE_VAR: lambda u, s: (u.arg.vmin, u.arg.vmax), Ops.BIND: lambda u, s: s[0]._min_max,
  Ops.RANGE: lambda u, s: (0, s[0].vmax - 1) if s else None, Ops.SPECIAL: lambda u, s: (0, s[0].vmax - 1) if s else None,
  Ops.PARAM: lambda u, s: u.arg.vmin_vmax, Ops.CAST: _cast_bounds,
  Ops.WHERE: lambda u, s: None if u.dtype in _FLOAT_DTYPES else (min(s[1].vmin, s[2].vmin), max(s[1].vmax, s[2].vmax)),
  Ops.CMPLT: _comparison(lambda a0, a1, b0, b1: (a1 < b0, a0 < b1)),
  Ops.CMPNE: _comparison(lambda a0, a1, b0, b1: (a1 < b0 or b1 < a0, not (a0 == a1 == b0 == b1))),
  Ops.CMPEQ: _comparison(lambda a0, a1, b0, b1: (a0 == a1 == b0 == b1, not (a1 < b0 or b1 < a0))),
  Ops.ADD: _int_binary(lambda u, a0, a1, b0, b1: _clamp(u, a0+b0, a1+b1)),
  Ops.SUB: _int_binary(lambda u, a0, a1, b0, b1: _clamp(u, a0-b1, a1-b0)),
  Ops.MUL: _int_binary(lambda u, a0, a1, b0, b1: _clamp(u, *_span(a0*b0, a0*b1, a1*b0, a1*b1))),
  Ops.MAX: _int_binary(lambda u, a0, a1, b0, b1: (max(a0, b0), max(a1, b1))),
  Ops.FLOORDIV: _int_binary(lambda u, a0, a1, b0, b1: (a0//b0, a1//b0) if b0 == b1 and b0 > 0 else None),
  Ops.CDIV: _int_binary(lambda u, a0, a1, b0, b1: (a0//b0, a1//b0) if b0 == b1 and b0 > 0 and a0 >= 0 else None),
  Ops.FLOORMOD: _int_binary(_mod_bounds), Ops.CMOD: _int_binary(_mod_bounds), Ops.AND: _int_binary(_and_bounds), Ops.XOR: _int_binary(_xor_bounds),
  Ops.OR: _int_binary(_or_bounds),
  # a shift past the width has no defined value on every target (and 1 << 2**64 would fill memory): its bounds are the dtype's
  Ops.SHL: _int_binary(lambda u, a0, a1, b0, b1: _clamp(u, a0 << b0, a1 << b0) if b0 == b1 and 0 <= b0 < 8 * u.dtype.itemsize else None),
  Ops.SHR: _int_binary(lambda u, a0, a1, b0, b1: (a0 >> b0, a1 >> b0) if b0 == b1 and b0 >= 0 else None),
  Ops.NEG: lambda u, s: _clamp(u, -s[0].vmax, -s[0].vmin) if u.dtype in _INT_OR_BOOL else None,
  Ops.AFTER: lambda u, s: s[0]._min_max if s[0]._shape == () else _dtype_bounds(u.dtype)}

def _min_max(u:UOp) -> tuple:
  if (rule := _BOUND_RULES.get(u.op)) is not None and (ret := rule(u, u.src)) is not None: return ret
  return (False, True) if u.dtype is dtypes.bool else _dtype_bounds(u.dtype)

def _span(*x): return (min(x), max(x))
def _clamp(u:UOp, lo, hi):
  dlo, dhi = _dtype_bounds(u.dtype)
  return (lo, hi) if dlo <= lo and hi <= dhi else (dlo, dhi)  # an op that may overflow has the dtype's full range

def resolve(x:UOp|bool|int, default:bool=True) -> bool:
  """a python bool for a comparison when its bounds decide it, else `default`"""
  if not isinstance(x, UOp): return bool(x)
  if x.dtype is not dtypes.bool: raise ValueError(f"resolve needs a bool UOp, got {x.dtype}")
  lo, hi = x._min_max
  return bool(lo) if lo == hi else default

def ssimplify(x): return x.ssimplify() if isinstance(x, UOp) else x
def smax(*lst): return _sfold(max, Ops.MAX, lst)
def smin(*lst): return -_sfold(max, Ops.MAX, [-x for x in (lst[0] if len(lst) == 1 and isinstance(lst[0], (tuple, list)) else lst)])
def _sfold(pyfn, op, lst):
  lst = list(lst[0]) if len(lst) == 1 and isinstance(lst[0], (tuple, list)) else list(lst)
  ints, syms = [x for x in lst if not isinstance(x, UOp)], [x for x in lst if isinstance(x, UOp)]
  ret = pyfn(ints) if ints else None
  for s in syms: ret = s if ret is None else s.maximum(ret)
  return ssimplify(ret)

def sym_infer(x:UOp|int|float, var_vals:dict[str, int]) -> int|float:
  """evaluate a symbolic expression with the variables' values"""
  if not isinstance(x, UOp): return x
  from tinygrad.uop.render import python_eval
  return python_eval(x, var_vals)

def Variable(name:str, vmin:int, vmax:int, dtype:DType=dtypes.weakint) -> UOp: return UOp.variable(name, vmin, vmax, dtype)

# *** printing ***

def pretty_print(x:UOp) -> str:
  """multi-line repr; a node used more than once is named (xN:=) the first time and referred to by name after"""
  uses: dict[UOp, int] = {}
  for u in x.toposort():
    for s in u.src: uses[s] = uses.get(s, 0) + 1
  names: dict[UOp, str] = {}
  lines: list[str] = []
  stack: list[tuple[UOp, int, str]] = [(x, 0, "")]
  while stack:
    u, depth, suffix = stack.pop()
    pad = "  " * depth
    if u in names: lines.append(f"{pad}{names[u]}{suffix}"); continue
    nm = ""
    if uses.get(u, 0) > 1: names[u] = f"x{len(names)}"; nm = f"{names[u]}:="
    head = f"{pad}{nm}UOp({u.op}, {u.dtype}, arg={u.arg!r}" + (f", tag={u.tag!r}" if u.tag is not None else "")
    if not u.src: lines.append(head + ", src=())" + suffix); continue
    lines.append(head + ", src=(")
    stack.extend((s, depth+1, ("))" + suffix) if i == len(u.src)-1 else ",") for i, s in reversed(list(enumerate(u.src))))
  return "\n".join(lines)

@functools.lru_cache(maxsize=256)
def _arange_on(device:str|tuple|None, n:int, dtype:DType) -> UOp: return OpMixin._arange(UOp.const(dtype, 0, device), n, dtype)

from tinygrad.uop.upat import UPat, PatternMatcher  # noqa: E402  (re-exported: tinygrad's public home for them)
from tinygrad.uop.rewrite import graph_rewrite  # noqa: E402
__all__ = ["Ops", "GroupOp", "AxisType", "UOp", "UPat", "PatternMatcher", "graph_rewrite", "KernelInfo", "ParamArg", "VarArg", "sint",
           "Variable", "resolve", "smax", "smin", "ssimplify", "sym_infer", "broadcast_shape", "broadcast_axes"]
