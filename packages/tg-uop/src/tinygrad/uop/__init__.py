"""The op vocabulary of the one IR. Every stage (tensor graph, kernel AST, linear program, command list) is spelled in these Ops."""
from enum import auto

class _FastEnumType(type):
  """Named singleton members, like enum.Enum's, without enum's metaclass: python 3.11's EnumType has a __getattr__ hook, which sends
  every attribute read of the class down a slow path (`Ops.ADD` cost ~3x a plain class attribute, and a realize reads hundreds).
  Members are made from the class body's `auto()` entries, numbered from 1 in order; `Cls(value)`, `Cls[name]`, iteration and len
  work as for an Enum."""
  def __new__(mcs, name:str, bases:tuple, ns:dict):
    names = [k for k, v in ns.items() if isinstance(v, auto)]
    cls = super().__new__(mcs, name, bases, {k: v for k, v in ns.items() if k not in names})
    members: dict[str, FastEnum] = {}
    for value, member_name in enumerate(names, 1):
      m = members[member_name] = object.__new__(cls)
      object.__setattr__(m, "name", member_name)
      object.__setattr__(m, "value", value)
      type.__setattr__(cls, member_name, m)
    type.__setattr__(cls, "_members", members)
    type.__setattr__(cls, "_by_value", {m.value: m for m in members.values()})
    return cls
  def __call__(cls, value:int):
    if (m := cls._by_value.get(value)) is None: raise ValueError(f"{value!r} is not a valid {cls.__name__}")
    return m
  def __getitem__(cls, name:str): return cls._members[name]
  def __iter__(cls): return iter(cls._members.values())
  def __len__(cls) -> int: return len(cls._members)
  def __contains__(cls, x) -> bool: return type(x) is cls
  @property
  def __members__(cls) -> dict: return dict(cls._members)
  def __setattr__(cls, k:str, v):
    if k in cls._members: raise AttributeError(f"cannot reassign member {cls.__name__}.{k}")
    type.__setattr__(cls, k, v)

class FastEnum(metaclass=_FastEnumType):
  # members compare and hash by identity (in C); a stable integer order makes sorted() and toposort tiebreaks deterministic
  __slots__ = ("name", "value")
  def __setattr__(self, k, v): raise AttributeError(f"{self!r} is immutable")
  def __lt__(self, other): return self.value < other.value
  def __repr__(self): return f"{type(self).__name__}.{self.name}"
  __str__ = __repr__
  def __format__(self, spec:str) -> str: return format(str(self), spec)  # f"{op:20}" pads like an Enum member
  def __reduce__(self): return getattr, (type(self), self.name)  # unpickles to the same singleton
  def __copy__(self): return self
  def __deepcopy__(self, memo): return self

class Ops(FastEnum):
  __slots__ = ()
  # defines / leaves
  CONST = auto(); DEVICE = auto(); DEFINE_VAR = auto(); BIND = auto(); SPECIAL = auto(); PARAM = auto(); BUFFER = auto() # noqa: E702
  UNIQUE = auto() # noqa: E702
  # structure
  NOOP = auto(); SINK = auto(); GROUP = auto(); AFTER = auto(); STACK = auto(); FUNCTION = auto(); CALL = auto() # noqa: E702
  CUSTOM_FUNCTION = auto(); LINEAR = auto(); PROGRAM = auto(); SOURCE = auto(); BINARY = auto() # noqa: E702
  # tensor graph only
  COPY = auto(); CONTIGUOUS = auto(); DETACH = auto(); REDUCE_AXIS = auto() # noqa: E702
  CONTIGUOUS_BACKWARD = auto()  # the value itself; its gradient is made contiguous
  AT = auto()  # scheduling: AT(x, valid, *idx), the value of tensor node x at an index, rewritten into kernel math
  # multi-device (tensor graph): MULTI(*pieces, arg=shard axis or None), one piece per device; MSELECT(x, arg=(i, axis, (b, e))) device
  # i's value of x, restricted to [b, e) on axis (None: whole); ALLREDUCE(*pieces, arg=reduce op): every device gets the reduced value
  MULTI = auto(); MSELECT = auto(); ALLREDUCE = auto() # noqa: E702
  RESHAPE = auto(); PERMUTE = auto(); EXPAND = auto(); PAD = auto(); SHRINK = auto(); FLIP = auto() # noqa: E702
  # kernel level
  RANGE = auto(); END = auto(); REDUCE = auto(); INDEX = auto(); LOAD = auto(); STORE = auto() # noqa: E702
  BARRIER = auto(); IF = auto(); ENDIF = auto(); CUSTOM = auto(); CUSTOMI = auto() # noqa: E702
  # a tensor core's matrix multiply-accumulate, run by a whole warp: WMMA(*a_frag, *b_frag, *c_frag, arg=(TensorCore, e)) is element e
  # of this lane's D = A@B + C fragment; the nodes with the same sources are one instruction (codegen/opt/tc.py)
  WMMA = auto()
  # command level
  INS = auto(); GETADDR = auto() # noqa: E702
  # unary
  CAST = auto(); BITCAST = auto(); EXP2 = auto(); LOG2 = auto(); SIN = auto(); SQRT = auto(); RECIPROCAL = auto() # noqa: E702
  NEG = auto(); TRUNC = auto() # noqa: E702
  # binary
  ADD = auto(); MUL = auto(); SUB = auto(); MAX = auto(); CDIV = auto(); CMOD = auto(); FLOORDIV = auto(); FLOORMOD = auto() # noqa: E702
  FDIV = auto(); POW = auto(); SHL = auto(); SHR = auto(); XOR = auto(); OR = auto(); AND = auto() # noqa: E702
  CMPLT = auto(); CMPNE = auto(); CMPEQ = auto(); THREEFRY = auto() # noqa: E702
  # ternary
  WHERE = auto(); MULACC = auto() # noqa: E702
  # tensor graph only, gone before scheduling (last: the ops' order sorts sources): CUSTOM_GRADIENT(value, *inputs, arg=fn) is value, and
  # each input's gradient is fn(gradient of value) (Tensor._custom_gradient)
  CUSTOM_GRADIENT = auto()

class GroupOp:
  Unary = {Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.RECIPROCAL, Ops.NEG, Ops.TRUNC}
  Binary = {Ops.ADD, Ops.MUL, Ops.SUB, Ops.MAX, Ops.CDIV, Ops.CMOD, Ops.FLOORDIV, Ops.FLOORMOD, Ops.FDIV, Ops.POW, Ops.SHL, Ops.SHR,
            Ops.XOR, Ops.OR, Ops.AND, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.THREEFRY}
  Ternary = {Ops.WHERE, Ops.MULACC}
  ALU = Unary | Binary | Ternary
  Elementwise = ALU | {Ops.CAST, Ops.BITCAST}
  Broadcastable = Binary | Ternary
  Movement = {Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.FLIP}
  Defines = {Ops.PARAM, Ops.BUFFER, Ops.DEFINE_VAR}
  Irreducible = {Ops.CONST, Ops.SPECIAL, Ops.RANGE, Ops.PARAM, Ops.DEFINE_VAR, Ops.GETADDR}
  Commutative = {Ops.ADD, Ops.MUL, Ops.MAX, Ops.CMPNE, Ops.CMPEQ, Ops.XOR, Ops.AND, Ops.OR}
  Associative = {Ops.ADD, Ops.MUL, Ops.AND, Ops.OR, Ops.MAX}
  Idempotent = {Ops.OR, Ops.AND, Ops.MAX}
  Comparison = {Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ}
  Reduce = {Ops.ADD, Ops.MUL, Ops.MAX}
  Bitwise = {Ops.SHL, Ops.SHR, Ops.XOR, Ops.OR, Ops.AND}
  All = set(Ops)

class AxisType(FastEnum):
  __slots__ = ()
  GLOBAL = auto(); LOCAL = auto(); LOOP = auto(); THREAD = auto(); GROUP_REDUCE = auto(); REDUCE = auto() # noqa: E702
  UPCAST = auto(); UNROLL = auto() # noqa: E702
  WARP = auto()  # the lanes of a tensor core's warp: the fastest work-item id (codegen/opt/tc.py)
