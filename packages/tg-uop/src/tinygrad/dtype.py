from __future__ import annotations
import enum, math, struct, functools, types
from dataclasses import dataclass
from typing import Any, Callable, Mapping
from tinygrad.helpers import getenv

class AddrSpace(enum.Enum):
  GLOBAL = enum.auto(); LOCAL = enum.auto(); REG = enum.auto(); ALU = enum.auto()  # ALU: a scalar value, e.g. a variable
  def __repr__(self): return f"AddrSpace.{self.name}"
  __hash__ = object.__hash__  # members are singletons: identity hashing in C (every BUFFER and PARAM arg hashes one)

class _Interned(type):
  """equal constructor args give the identical object, so dtypes compare and hash by identity"""
  _cache: dict[tuple, Any] = {}
  def __call__(cls, *args):
    if (ret := _Interned._cache.get(key := (cls, args))) is None: ret = _Interned._cache[key] = super().__call__(*args)
    return ret

@dataclass(frozen=True, eq=False)
class DType(metaclass=_Interned):
  priority: int  # only orders dtypes for display/sorting; promotion uses the lattice below
  itemsize: int
  name: str      # the short C-style `dtypes` alias ("float", "uchar"), so repr round-trips through eval
  fmt: str|None  # struct format char, None where struct has none
  def __reduce__(self): return type(self), tuple(getattr(self, f) for f in self.__dataclass_fields__)  # unpickle through the intern cache
  def __repr__(self): return f"dtypes.{self.name}"
  def __lt__(self, x:DType): return (self.priority, self.itemsize, self.name) < (x.priority, x.itemsize, x.name)
  @property
  def vcount(self) -> int: return 1  # vectors are shapes in this design, never dtypes
  @property
  def base(self) -> DType: return self
  def scalar(self) -> DType: return self
  @property
  def min(self): return dtypes.min(self)
  @property
  def max(self): return dtypes.max(self)
  def ptr(self, size:int=-1, addrspace:AddrSpace=AddrSpace.GLOBAL) -> PtrDType:
    return PtrDType(self.priority, self.itemsize, self.name, self.fmt, self, addrspace, size)

@dataclass(frozen=True, eq=False)
class PtrDType(DType):
  _base: DType
  addrspace: AddrSpace
  size: int  # element count, -1 when unknown
  @property
  def base(self) -> DType: return self._base
  def ptr(self, size=-1, addrspace=AddrSpace.GLOBAL): raise TypeError(f"{self!r} is already a pointer")
  def __repr__(self): return f"{self._base!r}.ptr({self.size}" + ("" if self.addrspace is AddrSpace.GLOBAL else f", {self.addrspace!r}") + ")"

_SUM_ACC: dict[DType, DType] = {}  # sum_acc_dtype of each strong dtype asked about (the lattice never changes)

class dtypes:
  void = DType(-1, 0, "void", None)
  bool = DType(0, 1, "bool", "?")
  int8, uint8 = DType(1, 1, "char", "b"), DType(2, 1, "uchar", "B")
  int16, uint16 = DType(3, 2, "short", "h"), DType(4, 2, "ushort", "H")
  int32, uint32 = DType(5, 4, "int", "i"), DType(6, 4, "uint", "I")
  int64, uint64 = DType(7, 8, "long", "q"), DType(8, 8, "ulong", "Q")
  fp8e4m3, fp8e5m2 = DType(9, 1, "fp8e4m3", None), DType(10, 1, "fp8e5m2", None)
  float16, bfloat16 = DType(11, 2, "half", "e"), DType(12, 2, "bfloat16", None)
  float32, float64 = DType(13, 4, "float", "f"), DType(14, 8, "double", "d")
  # weak types of python scalars: they adapt to the strong dtype they meet. Not meant for buffers (itemsize is python's 8)
  weakint, weakfloat = DType(-1, 8, "weakint", None), DType(-1, 8, "weakfloat", None)
  char, uchar, short, ushort, int, uint, long, ulong = int8, uint8, int16, uint16, int32, uint32, int64, uint64
  half, float, double = float16, float32, float64
  default_float: DType = float32  # settable; weakfloat strengthens to whatever this is at the time
  default_int: DType = int32
  uints = (uint8, uint16, uint32, uint64)
  sints = (int8, int16, int32, int64)
  ints = sints + uints
  floats = (fp8e4m3, fp8e5m2, float16, bfloat16, float32, float64)
  all = (bool,) + ints + floats
  # membership by hash: DType defines __lt__, so == between two different dtypes goes through a python-level slot (~0.2 us each here)
  # and `dt in <tuple>` pays it per element it passes (is_int(weakint): 8 of them, 1.7 us, on every size a movement op is given)
  _int_set, _float_set, _sint_set, _uint_set = frozenset(ints + (weakint,)), frozenset(floats + (weakfloat,)), frozenset(sints), frozenset(uints)

  @staticmethod
  def is_float(dt:DType) -> bool: return dt in dtypes._float_set
  @staticmethod
  def is_int(dt:DType) -> bool: return dt in dtypes._int_set
  @staticmethod
  def is_unsigned(dt:DType) -> bool: return dt in dtypes._uint_set
  @staticmethod
  def is_bool(dt:DType) -> bool: return dt is dtypes.bool
  @staticmethod
  def is_weak(dt:DType) -> bool: return dt is dtypes.weakint or dt is dtypes.weakfloat
  @staticmethod
  def strong(dt:DType) -> DType:
    """weak -> the current default dtype of its kind; anything else is returned as is"""
    return dtypes.default_int if dt is dtypes.weakint else dtypes.default_float if dt is dtypes.weakfloat else dt
  @staticmethod
  def from_py(x) -> DType:
    if isinstance(x, bool): return dtypes.bool  # before int: bool is an int subclass
    if isinstance(x, int): return dtypes.weakint
    if isinstance(x, float): return dtypes.weakfloat
    # a python list literal is still python: join without strengthening; empty is a weak float, like Tensor([])
    if isinstance(x, (list, tuple)): return _join(frozenset(dtypes.from_py(v) for v in x)) if x else dtypes.weakfloat
    raise TypeError(f"no dtype for python value of type {type(x).__name__}")
  @staticmethod
  def as_const(val, dtype:DType):
    """python value `val` as `dtype` holds it: ints wrap around, floats round, bool is truthiness"""
    return truncate[dtype]((int if dtypes.is_int(dtype) else bool if dtype is dtypes.bool else float)(val))
  @staticmethod
  def min(dt:DType):
    if dtypes.is_weak(dt): return dtypes.min(dtypes.strong(dt))
    if dt is dtypes.bool: return False
    if dt in dtypes._sint_set: return -(1 << (8*dt.itemsize - 1))
    if dt in dtypes._uint_set: return 0
    if dt in dtypes._float_set: return -math.inf
    raise TypeError(f"{dt!r} has no min")
  @staticmethod
  def max(dt:DType):
    if dtypes.is_weak(dt): return dtypes.max(dtypes.strong(dt))
    if dt is dtypes.bool: return True
    if dt in dtypes._uint_set or dt in dtypes._sint_set: return (1 << (8*dt.itemsize - (dt in dtypes._sint_set))) - 1
    if dt in dtypes._float_set: return math.inf
    raise TypeError(f"{dt!r} has no max")
  @staticmethod
  def finfo(dt:DType) -> tuple[int, int]:
    """(exponent bits, mantissa bits)"""
    if (ret := _FINFO.get(dtypes.strong(dt))) is None: raise TypeError(f"{dt!r} is not a float dtype")
    return ret
  @staticmethod
  @functools.cache
  def fields() -> Mapping[str, DType]:
    """every dtype name and alias -> DType (read-only; default_* are settings, not names)"""
    return types.MappingProxyType({k: v for k, v in vars(dtypes).items() if isinstance(v, DType) and not k.startswith("default")})
  @staticmethod
  def sum_acc_dtype(dt:DType) -> DType:
    """accumulator for a sum: ints/bool at least 32 bits (uints stay unsigned); floats at least float32 (even when the default is lower)"""
    if (ret := _SUM_ACC.get(dt)) is not None: return ret
    strong = dtypes.strong(dt)
    if dtypes.is_unsigned(strong): ret = least_upper_dtype(strong, dtypes.uint32)
    elif dtypes.is_int(strong) or strong is dtypes.bool: ret = least_upper_dtype(strong, dtypes.int32)
    else: ret = least_upper_dtype(strong, dtypes.float32)
    if strong is dt: _SUM_ACC[dt] = ret  # a weak dtype's answer follows the current default: not kept
    return ret

_FINFO = {dtypes.fp8e4m3: (4, 3), dtypes.fp8e5m2: (5, 2), dtypes.float16: (5, 10), dtypes.bfloat16: (8, 7),
  dtypes.float32: (8, 23), dtypes.float64: (11, 52)}
if (_env_float := getenv("DEFAULT_FLOAT", "")): dtypes.default_float = dtypes.fields()[_env_float.lower()]

def to_dtype(x:DType|str) -> DType:
  """a DType from itself or a name/alias ("float32", "float", "int", also "dtypes.half")"""
  if isinstance(x, DType): return x
  if not isinstance(x, str): raise TypeError(f"expected DType or dtype name, got {type(x).__name__}")
  if (ret := dtypes.fields().get(x.removeprefix("dtypes."))) is None:
    raise ValueError(f"unknown dtype name {x!r}, expected one of {sorted(dtypes.fields())}")
  return ret

# *** python value truncation: what a python value becomes when stored in the dtype ***

def _round_float(x:float, ebits:int, mbits:int, fmax:float, overflow:float) -> float:
  """round-to-nearest-even of a float64 into a narrower IEEE-like format (subnormals included) in one step, no double rounding"""
  if x == 0 or math.isnan(x): return x
  if math.isinf(x): return math.copysign(overflow, x)
  q = 2.0 ** (max(math.frexp(x)[1] - 1, 2 - (1 << (ebits-1))) - mbits)  # spacing at x's exponent, floored at the subnormal spacing
  # python round() is half-to-even; copysign: a negative value that rounds to zero is -0.0 (round() gives the int 0)
  return r if abs(r := math.copysign(round(x / q) * q, x)) <= fmax else math.copysign(overflow, x)

def _struct_round(fmt:str) -> Callable[[float], float]:
  def f(x:float) -> float:
    try: return struct.unpack(fmt, struct.pack(fmt, x))[0]
    except OverflowError: return math.copysign(math.inf, x)  # 'e' raises instead of rounding to inf
  return f

def _wrap(dt:DType) -> Callable[[int], int]:
  bits, signed = 8*dt.itemsize, dt in dtypes.sints
  return (lambda x: ((x + (1 << (bits-1))) & ((1 << bits) - 1)) - (1 << (bits-1))) if signed else (lambda x: x & ((1 << bits) - 1))

truncate: dict[DType, Callable] = {dtypes.bool: bool, dtypes.weakint: int, dtypes.weakfloat: float, dtypes.float64: float,
  **{dt: _wrap(dt) for dt in dtypes.ints}, dtypes.float32: _struct_round("f"), dtypes.float16: _struct_round("e"),
  dtypes.bfloat16: lambda x: _round_float(x, 8, 7, 3.3895313892515355e38, math.inf),
  # fp8e4m3 is the "fn" variant: no inf, so overflow saturates to +-448 like hardware satfinite conversions
  dtypes.fp8e4m3: lambda x: _round_float(x, 4, 3, 448.0, 448.0), dtypes.fp8e5m2: lambda x: _round_float(x, 5, 2, 57344.0, math.inf)}

def _odd_double(x:float, err:float) -> float:
  """x, the nearest double to a value v = x + err, rounded to odd instead: x when exact, else the one of x and its neighbour towards v
  whose last mantissa bit is 1. A value rounded to odd at 53 bits rounds to any format of at most 51 bits as v itself would"""
  if err == 0 or struct.unpack("<Q", struct.pack("<d", x))[0] & 1: return x
  return math.nextafter(x, math.inf if err > 0 else -math.inf)

def fma(a, b, c, dt:DType):
  """a*b+c rounded once to dt (Ops.MULACC): what a fused multiply-add instruction computes. Python 3.11 has no math.fma. Narrower
  floats than float64: a*b is exact in a double (2x24 bits), TwoSum gives the sum's exact error, and the double rounded to odd rounds
  to dt once. float64 (and python floats): the exact rational value, rounded by int division (correctly rounded, subnormals too)"""
  if not dtypes.is_float(dt): return truncate[dt](a*b+c)
  if not (math.isfinite(a) and math.isfinite(b)): return truncate[dt](a*b+c)  # inf/NaN products: IEEE a*b+c is the fused value too
  if not math.isfinite(c): return truncate[dt](c)
  if dt not in (dtypes.float64, dtypes.weakfloat):
    p = a*b
    s = p + c
    t = s - p
    return truncate[dt](_odd_double(s, (p - (s - t)) + (c - t)))
  from fractions import Fraction  # here, not at import: it pulls in decimal
  exact = Fraction(a) * Fraction(b) + Fraction(c)
  if exact == 0 or a == 0 or b == 0: return a*b+c  # zero signs follow IEEE addition; a zero product is exact
  try: return exact.numerator / exact.denominator
  except OverflowError: return math.inf if exact > 0 else -math.inf

# *** promotion: JAX-style lattice with weak python scalars ***
# Edges go to the next wider type. Weak nodes sit where JAX puts them: weakint (i*) just above bool, weakfloat (f*) above every int
# and below every float, so a python scalar never widens a strong operand of its kind. Choices of ours:
# - uint64 and int64 meet only at weakfloat, so uint64+int64 is default_float (as JAX)
# - fp8s are the narrowest floats: int+fp8 -> fp8; both fp8s fit exactly in float16, so fp8e4m3+fp8e5m2 -> float16 (and fp8+bfloat16
#   -> float32). fp8 -> float16 is their only edge, keeping a true lattice (an extra edge to bfloat16 would leave fp8e4m3+fp8e5m2 with no least bound)
_parents: dict[DType, tuple[DType, ...]] = {
  dtypes.bool: (dtypes.weakint,), dtypes.weakint: (dtypes.int8, dtypes.uint8),
  dtypes.int8: (dtypes.int16,), dtypes.uint8: (dtypes.int16, dtypes.uint16),
  dtypes.int16: (dtypes.int32,), dtypes.uint16: (dtypes.int32, dtypes.uint32),
  dtypes.int32: (dtypes.int64,), dtypes.uint32: (dtypes.int64, dtypes.uint64), dtypes.int64: (dtypes.weakfloat,), dtypes.uint64: (dtypes.weakfloat,),
  dtypes.weakfloat: (dtypes.fp8e4m3, dtypes.fp8e5m2, dtypes.bfloat16), dtypes.fp8e4m3: (dtypes.float16,), dtypes.fp8e5m2: (dtypes.float16,),
  dtypes.float16: (dtypes.float32,), dtypes.bfloat16: (dtypes.float32,), dtypes.float32: (dtypes.float64,), dtypes.float64: ()}

@functools.cache
def _ancestors(dt:DType) -> frozenset[DType]:
  if dt not in _parents: raise TypeError(f"{dt!r} takes no part in type promotion")
  return frozenset([dt]).union(*(_ancestors(p) for p in _parents[dt]))

@functools.cache
def _join(ds:frozenset[DType]) -> DType:
  """the lattice join, weak types kept; static, so safe to cache across default_* changes"""
  ubs = frozenset.intersection(*(_ancestors(d) for d in ds))
  least = [u for u in ubs if _ancestors(u) >= ubs]
  assert len(least) == 1, f"promotion lattice has no least upper bound for {sorted(ds)}"
  return least[0]

def least_upper_dtype(*ds:DType) -> DType:
  """the dtype all of ds promote to. The result is weak only if every input is weak; a weak join met by a strong input becomes the
  current default (bool+weakint -> default_int, int32+weakfloat -> default_float). That strengthening is why, unlike the lattice join,
  chained binary calls can differ from one n-ary call: JAX keeps a weak flag on such results instead, we keep dtypes plain."""
  if len(ds) == 2:
    if ds[0] is ds[1]: return ds[0]  # the usual binary op: its own join, weak or strong as it is
    if (ret := _STRONG_PAIRS.get(ds)) is not None: return ret
  ret = _join(frozenset(ds))
  if not dtypes.is_weak(ret):  # a strong join (some input is strong) never depends on the defaults
    if len(ds) == 2: _STRONG_PAIRS[ds] = ret
    return ret
  return ret if all(dtypes.is_weak(d) for d in ds) else dtypes.strong(ret)
_STRONG_PAIRS: dict[tuple[DType, DType], DType] = {}  # least_upper_dtype of two dtypes whose join is strong (a tensor and a python scalar)

# *** names tinygrad programs import from tinygrad.dtype ***
ConstType = float | int | bool  # a python value a constant holds
DTypeLike = str | DType  # what a dtype= argument takes (to_dtype reads it)
sum_acc_dtype = dtypes.sum_acc_dtype
def least_upper_float(dt:DType) -> DType:
  """dt if it is a float, else the float an op on it computes in (the default float)"""
  return dt if dtypes.is_float(dt) else least_upper_dtype(dt, dtypes.default_float)
