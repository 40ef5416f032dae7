"""Elementwise math shared by UOp and Tensor. A class using it provides: dtype, alu(op, *srcs), const_like(x, dtype=None), cast(dtype)."""
from __future__ import annotations
import functools, math
from typing import Any
from tinygrad.uop import Ops
from tinygrad.dtype import DType, dtypes, least_upper_dtype
from tinygrad.mixin.float_mod import _float_fmod, _float_divmod

_ROUNDING = {"trunc": Ops.CDIV, "floor": Ops.FLOORDIV}  # div's rounding_mode -> the int op
MUL_POWER_MAX = 8  # a float to a whole python exponent up to this is multiplied out: at most 3 roundings, fewer ops than POW's

def _unwrap_numpy(x:Any) -> Any:
  """a numpy scalar (np.float64(0.25), np.int64(3)) as the python number it holds: an operand like a python scalar, as torch takes it"""
  return x.item() if type(x).__module__ == "numpy" and getattr(x, "ndim", None) == 0 else x

def _type_name(x:Any) -> str:
  """x's type for an error: a foreign library's type with its module (numpy.ndarray, torch.device), python's and ours as they are"""
  t = type(x)
  return t.__name__ if t.__module__.split(".")[0] in ("builtins", "tinygrad") else f"{t.__module__}.{t.__qualname__}"

def in_float32(fn):
  """a narrow float (half, bfloat16, fp8) computed in float32 and rounded once at the end, as torch does: each intermediate rounding
  costs (x * log2(e) rounded to half made exp up to 9 ulp off, and in bfloat16 rounded up to 128: exp(88.5) was inf)"""
  @functools.wraps(fn)
  def wrapper(self, *args, **kwargs):
    if dtypes.is_float(self.dtype) and self.dtype.itemsize < 4: return fn(self.cast(dtypes.float32), *args, **kwargs).cast(self.dtype)
    return fn(self, *args, **kwargs)
  return wrapper

def _python_number(x:Any, reverse:bool) -> float|None:
  """x where it is a python number divisor (a constant: the exact fmod's steps are worked out here, not in the kernel)"""
  return None if reverse or type(x := _unwrap_numpy(x)) not in (int, float) else float(x)

class ElementwiseMixin:
  # *** python scalars and dtype promotion ***
  def _scalar_like(self, b:Any, dtype=None):
    """b as a constant that broadcasts against self (a Tensor's const_like is b in self's whole shape, as tinygrad's)"""
    return self.const_like(b, dtype)
  def ufix(self, x:Any):
    """x as a node like self: python scalars become weakly typed constants, so int32 + 2 stays int32"""
    if isinstance(x, type(self)): return x
    x = _unwrap_numpy(x)
    # a list or an array is no scalar: it would reach as_const as a KeyError on a numpy dtype, or float([1.0, 2.0])
    if not isinstance(x, (int, float)) and not isinstance(getattr(x, "dtype", None), DType):
      raise TypeError(f"cannot combine a {type(self).__name__} with a {_type_name(x)} operand: wrap it with {type(self).__name__}(...)")
    # a symbolic scalar (a UOp size, e.g. a count over a Variable axis) keeps its int dtype, weak like a python int
    return self._scalar_like(x, x.dtype if hasattr(x, "dtype") else dtypes.from_py(x))
  def _broadcasted(self, y:Any, reverse=False, match_dtype=True) -> tuple:
    y = _unwrap_numpy(y)
    if match_dtype and type(y) in (int, float, bool):  # a python scalar is made in the joined dtype at once: the weak constant cast to it
      out = least_upper_dtype(self.dtype, dtypes.from_py(y))
      return (self._scalar_like(y, out), self.cast(out)) if reverse else (self.cast(out), self._scalar_like(y, out))
    x, y = self, self.ufix(y)
    if reverse: x, y = y, x
    if match_dtype:
      if x._weak is not None or y._weak is not None: return type(x)._join_weak(x, y)
      out = least_upper_dtype(x.dtype, y.dtype)
      x, y = x.cast(out), y.cast(out)
    return x, y
  # a Tensor made from a python number holds it here and joins another operand as that number would (tensor.py, _join_weak)
  _weak: Any = None
  def _binop(self, op:Ops, y:Any, reverse:bool):
    x, y = self._broadcasted(y, reverse)
    return x.alu(op, y)

  # *** arithmetic ***
  def __add__(self, x): return self._binop(Ops.ADD, x, False)
  def __radd__(self, x): return self._binop(Ops.ADD, x, True)
  def __sub__(self, x): return self._sub(x, False)
  def __rsub__(self, x): return self._sub(x, True)
  def _sub(self, x, reverse:bool):
    a, b = self._broadcasted(x, reverse)
    if a.dtype is dtypes.bool: raise RuntimeError("subtracting bools is not supported (dtypes.bool - dtypes.bool): use ^ (xor) or .logical_not()")
    return a.alu(Ops.ADD, b.alu(Ops.NEG))
  def __mul__(self, x): return self._binop(Ops.MUL, x, False)
  def __rmul__(self, x): return self._binop(Ops.MUL, x, True)
  def __neg__(self): return self.logical_not() if self.dtype is dtypes.bool else self.alu(Ops.NEG)
  def __truediv__(self, x): return self.div(x)
  def __rtruediv__(self, x): return self.div(x, True)
  def div(self, x, reverse=False, rounding_mode:str|None=None):
    """true division (ints give default_float); rounding_mode "trunc" (toward 0) or "floor" (python's //) keeps int dtypes"""
    if rounding_mode not in (None, *_ROUNDING): raise ValueError(f"div rounding_mode must be 'trunc', 'floor' or None, not {rounding_mode!r}")
    # a python int divisor of an int tensor is made a float first: in the int dtype 2**32 would wrap to 0 (and 256 in uint8 too)
    if rounding_mode is None and type(x) is int and not dtypes.is_float(self.dtype): x = float(x)
    a, b = self._broadcasted(x, reverse)
    if rounding_mode is not None and not dtypes.is_float(a.dtype): return a.alu(_ROUNDING[rounding_mode], b)
    if not dtypes.is_float(a.dtype): a, b = a.cast(dtypes.default_float), b.cast(dtypes.default_float)
    if rounding_mode == "floor": return _float_divmod(a, b, _python_number(x, reverse))[0]
    d = a.alu(Ops.MUL, b.alu(Ops.RECIPROCAL))
    return d if rounding_mode is None else d.trunc()
  def __floordiv__(self, x): return self.div(x, rounding_mode="floor")
  def __rfloordiv__(self, x): return self.div(x, True, rounding_mode="floor")
  def fmod(self, x):
    """C's fmod: the remainder takes the dividend's sign (python's % takes the divisor's); exact for floats, as C's is"""
    a, b = self._broadcasted(x)
    if dtypes.is_float(a.dtype): return _float_fmod(a, b, _python_number(x, False))
    r = a.mod(b)
    return ((r != 0) & ((r < 0) != (a < 0))).where(r - b, r)
  def mod(self, x, reverse=False):
    """python's %: the remainder takes the divisor's sign (a finite x % ±inf is x or ±inf, like numpy)"""
    a, b = self._broadcasted(x, reverse)
    return _float_divmod(a, b, _python_number(x, reverse))[1] if dtypes.is_float(a.dtype) else a.alu(Ops.FLOORMOD, b)
  def __mod__(self, x): return self.mod(x)
  def __rmod__(self, x): return self.mod(x, True)
  def __pow__(self, x): return self.pow(x)
  def __rpow__(self, x): return self.pow(x, True)
  def pow(self, x, reverse=False):
    """a float operand (or a float python exponent) gives a float result; ints stay ints, wrapping like numpy"""
    # kernels have POW for floats only: an int to a constant power is squarings and products
    if not reverse and isinstance(x, int) and not isinstance(x, bool) and not dtypes.is_float(self.dtype):
      # bool ** int is an int for every exponent, as bool + 1 is (bool * bool would keep ** 2 a bool, and ** 1 returned self)
      if self.dtype is dtypes.bool: return self.cast(dtypes.default_int).pow(x)
      if x < 0: raise RuntimeError(f"{self.dtype} to the negative integer power {x} is not an integer: cast to a float dtype first")
      if x <= 1: return self if x == 1 else self * 0 + 1
      half = self.pow(x // 2)
      return half * half * self if x % 2 else half * half
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_float(a.dtype) and a.dtype.itemsize < 4:  # in float32, rounded once (see in_float32): half 84.4375**2.5 was inf
      exponent = x if not reverse and type(x) in (int, float) else b.cast(dtypes.float32)
      return a.cast(dtypes.float32).pow(exponent).cast(a.dtype)
    if not reverse and dtypes.is_float(a.dtype) and type(x) in (int, float) and 1 <= abs(x) <= MUL_POWER_MAX and x == int(x):
      # a small whole exponent as products (x*x, x*x*x): exact where the result is; POW's exp2(y*log2|x|) gave 10.0**2 = 99.99999.
      # The range test goes first: int(x) of a nan or inf exponent raised
      return a._mul_pow(int(x)) if x > 0 else a._mul_pow(-int(x)).reciprocal()
    return a.alu(Ops.POW, b) if dtypes.is_float(a.dtype) else a._int_pow(b)
  def _mul_pow(self, n:int):
    if n == 1: return self
    half = self._mul_pow(n // 2)
    return half * half * self if n % 2 else half * half
  def _int_pow(self, e):
    """self ** e for int tensors by squaring, one step per bit of e; a negative e gives the truncated value (1, -1 or 0), like C"""
    if self.dtype is dtypes.bool: self, e = self.cast(dtypes.default_int), e.cast(dtypes.default_int)
    ret, sq = self._scalar_like(1), self
    for i in range(8 * self.dtype.itemsize - int(not dtypes.is_unsigned(self.dtype))):
      ret = ((e >> i) & 1).ne(0).where(ret * sq, ret)
      sq = sq * sq
    if dtypes.is_unsigned(self.dtype): return ret
    # 1 ** -n is 1, (-1) ** -n is +-1 by parity, anything else truncates to 0; constants of self's dtype (python ints made int32 of int8)
    one, minus_one, zero = self._scalar_like(1), self._scalar_like(-1), self._scalar_like(0)
    return (e < 0).where(self.eq(1).where(one, self.eq(-1).where((e & 1).ne(0).where(minus_one, one), zero)), ret)
  def maximum(self, x): return self._binop(Ops.MAX, x, False)
  def minimum(self, x):
    a, b = self._broadcasted(x)
    return a._inverse().maximum(b._inverse())._inverse()
  def _inverse(self):
    """an order-reversing map that is its own inverse and cannot overflow: -x for floats, else ~x (-x-1 signed, max-x unsigned, not x bool)"""
    return -self if dtypes.is_float(self.dtype) else ~self

  # *** bitwise (ints and bools only) ***
  def _bitop(self, op:Ops, x, reverse):
    a, b = self._broadcasted(x, reverse)
    if dtypes.is_float(a.dtype):
      raise RuntimeError(f"{op.name} needs int or bool operands, got {self.dtype} and {self.ufix(x).dtype}: cast floats with .int() first")
    if op not in (Ops.SHL, Ops.SHR): return a.alu(op, b)
    # kernels shift ints only: a bool shift compiled to bad code (LLVM's i1 where i32 was expected)
    if a.dtype is dtypes.bool: raise RuntimeError(f"shift operands must be int, got {a.dtype} {op.name} {b.dtype}: cast with .int() first")
    # a shift past the width (or negative) is undefined in LLVM and C, so devices disagreed: every bit is shifted out (numpy's and
    # torch's answer): 0, or -1 for a negative value shifted right
    width = 8 * a.dtype.itemsize
    negative = (a < 0) if op is Ops.SHR and dtypes.is_int(a.dtype) and not dtypes.is_unsigned(a.dtype) else a.ne(a)
    fill = negative.where(a._scalar_like(-1), a._scalar_like(0))  # a's dtype: python ints made int8's fill int32
    if type(x) is int and not reverse: return a.alu(op, b) if 0 <= x < width else fill
    inside = (b < width) if dtypes.is_unsigned(b.dtype) or b.dtype is dtypes.bool else (b >= 0) & (b < width)
    return inside.where(a.alu(op, inside.where(b, 0)), fill)
  def __and__(self, x): return self._bitop(Ops.AND, x, False)
  def __rand__(self, x): return self._bitop(Ops.AND, x, True)
  def __or__(self, x): return self._bitop(Ops.OR, x, False)
  def __ror__(self, x): return self._bitop(Ops.OR, x, True)
  def __xor__(self, x): return self._bitop(Ops.XOR, x, False)
  def __rxor__(self, x): return self._bitop(Ops.XOR, x, True)
  def __lshift__(self, x): return self._bitop(Ops.SHL, x, False)
  def __rshift__(self, x): return self._bitop(Ops.SHR, x, False)
  def __invert__(self): return self.logical_not() if self.dtype is dtypes.bool else self ^ -1
  def logical_not(self): return (b := self.bool()).alu(Ops.CMPNE, b._scalar_like(True))

  # *** comparisons: always bool ***
  def _compare(self, op:Ops, y:Any, reverse:bool):
    """a python int past self's int dtype compares by value (numpy, torch) and settles every element alike, where made in the dtype it
    would wrap (int32 < 2**31 was all False). Not a weak int (a kernel's index math): its values are not bound to int32's range"""
    if type(y) is int and dtypes.is_int(dt := self.dtype) and not dtypes.is_weak(dt) and not dtypes.min(dt) <= y <= dtypes.max(dt):
      above = y > dtypes.max(dt)
      ret = self._scalar_like({Ops.CMPLT: above != reverse, Ops.CMPNE: True, Ops.CMPEQ: False}[op], dtypes.bool)
      return ret.reshape((1,) * len(self.shape)).expand(self.shape) if self.shape else ret  # a kernel's scalar node has no shape
    return self._binop(op, y, reverse)
  def __lt__(self, x): return self._compare(Ops.CMPLT, x, False)
  def __gt__(self, x): return self._compare(Ops.CMPLT, x, True)
  # not-less is greater-or-equal only without NaN: a float compare is (a > b) | (a == b), so NaN compares False as in numpy
  def __ge__(self, x): return self._or_equal(x, self > x, self < x)
  def __le__(self, x): return self._or_equal(x, self < x, self > x)
  def _or_equal(self, x, strict, opposite):
    a, _ = self._broadcasted(x)
    return strict | self.eq(x) if dtypes.is_float(a.dtype) else opposite.logical_not()
  def ne(self, x): return self._compare(Ops.CMPNE, x, False)
  def eq(self, x): return self._compare(Ops.CMPEQ, x, False)
  # only != builds a node here: == stays identity so hash-consed nodes work as dict keys (Tensor makes == elementwise itself)
  def __ne__(self, x): return self.ne(x)  # type: ignore[override]

  def where(self, x, y):
    if self.dtype is not dtypes.bool: raise RuntimeError(f"where needs a bool condition, got {self.dtype}: use cond.bool().where(x, y) (nonzero is True)")
    if isinstance(x, type(self)): x, y = x._broadcasted(y)
    elif isinstance(y, type(self)): y, x = y._broadcasted(x)
    else:
      x, y = _unwrap_numpy(x), _unwrap_numpy(y)
      out = least_upper_dtype(dtypes.from_py(x), dtypes.from_py(y))
      x, y = self._scalar_like(x, out), self._scalar_like(y, out)
    return self.alu(Ops.WHERE, x, y)

  # *** unary math ***
  def _float_unary(self, op:Ops): return self._float_cast().alu(op)
  def exp2(self): return self._float_unary(Ops.EXP2)
  def log2(self): return self._float_unary(Ops.LOG2)
  def log10(self): return self.log2() * math.log10(2)
  def sin(self): return self._float_unary(Ops.SIN)
  def sqrt(self): return self._float_unary(Ops.SQRT)
  def reciprocal(self): return self._float_unary(Ops.RECIPROCAL)
  def trunc(self): return self.alu(Ops.TRUNC) if dtypes.is_float(self.dtype) else self
  @in_float32
  def exp(self): return (self._float_cast() * 1.4426950408889634).exp2()
  @in_float32
  def log(self): return self.log2() * 0.6931471805599453
  def cos(self):
    # 1 - 2 sin(x/2)**2: x/2 is exact, where sin(pi/2 - x) lost x's low bits to the subtraction's rounding (float32's cos(32768.3), a
    # rotary embedding's angle, was off by 2e-3; half's cos(33) by 60%). Near cos's zeros the error is ~1 ulp of 1.0, absolute
    if (x := self._float_cast()).dtype.itemsize < 4: return x.cast(dtypes.float32).cos().cast(x.dtype)
    s = (x * 0.5).sin()
    return 1 - 2 * (s * s)
  def tan(self): return self.sin() / self.cos()
  def _float_cast(self): return self if dtypes.is_float(self.dtype) else self.cast(dtypes.default_float)
  def rsqrt(self): return self.sqrt().reciprocal()
  def square(self): return self * self
  def abs(self): return self if dtypes.is_unsigned(self.dtype) or self.dtype is dtypes.bool else (self < 0).where(-self, self)
  def sign(self):
    ret = self.ne(0).where((self < 0).where(self._scalar_like(-1), self._scalar_like(1)), self._scalar_like(0))
    return self.isnan().where(self, ret) if dtypes.is_float(self.dtype) else ret  # sign(nan) is nan, like numpy and torch
  def relu(self): return (self > 0).where(self, self._scalar_like(0))
  @in_float32
  def sigmoid(self):
    # from t = e^-|x|, which never overflows: 1/(1+t) at x >= 0, t/(1+t) below. 1/(1+e^-x) put an inf beside a 0 in the gradient for
    # x below -88 (-10 in half): NaN, in tanh, gelu and silu too. Ints and bools in float first: -x wrapped (uint8, -2**31) or was not x
    x = self._float_cast()
    t = ((below := x < 0).where(x, -x) * 1.4426950408889634).exp2()
    s = (1 + t).reciprocal()
    return below.where(t * s, s)
  def floor(self): return (self < (t := self.trunc())).where(t - 1, t) if dtypes.is_float(self.dtype) else self
  def ceil(self): return (self > (t := self.trunc())).where(t + 1, t) if dtypes.is_float(self.dtype) else self
  def round(self):  # half to even, like numpy and torch
    if not dtypes.is_float(self.dtype): return self
    f = self.floor()
    diff = self - f
    return (diff < 0.5).where(f, (diff > 0.5).where(f + 1, ((f * 0.5).floor() * 2).ne(f).where(f + 1, f)))
  def clip(self, min_=None, max_=None, **others):
    # torch's min=/max= keywords are not tinygrad's: said by name (python's own error named only clip)
    if others: raise TypeError(f"clip/clamp takes min_ and max_ (tinygrad's names), not {', '.join(others)}")
    # selects rather than maximum/minimum: a value on a bound keeps its whole gradient (torch's rule; MAX would split it in half)
    ret = self
    if min_ is not None: ret = (ret < min_).where(min_, ret)
    if max_ is not None: ret = (ret > max_).where(max_, ret)
    return ret
  clamp = clip
  def isnan(self): return self.ne(self)
  def int(self): return self.cast(dtypes.int32)
  def float(self): return self.cast(dtypes.float32)
  def half(self): return self.cast(dtypes.float16)
  def bool(self): return self.cast(dtypes.bool)
  def long(self): return self.cast(dtypes.int64)
  def double(self): return self.cast(dtypes.float64)
  def short(self): return self.cast(dtypes.int16)
  def bfloat16(self): return self.cast(dtypes.bfloat16)
  def is_floating_point(self) -> bool: return dtypes.is_float(self.dtype)
