"""sin of a value known to be finite and well inside Cody-Waite's range. The polynomial (codegen/transcendental.py) reduces a float32
argument past 2**24 by Payne-Hanek, with 64-bit products and a select between the two reductions for every element: most of its cost
(cos of 16M floats 55 ms against exp's 5.6). Where the kernel AST bounds the argument, the SIN gets the arg SMALL and both go. Bounds of
float values built by +, -, * and where from constants, integers (a position from an arange) and bit patterns (rand's floats: mantissa
bits under the exponent of 1.0, bitcast), which randn's cos(2*pi*u) is."""
from __future__ import annotations
import math, struct
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite
from tinygrad.dtype import dtypes
from tinygrad.codegen.transcendental import SMALL

SMALL_BOUND = 2.0 ** 23  # Cody-Waite's reduction is exact below 2**24 (float32): a factor of 2 for the bounds' own rounding
MAX_DEPTH = 64           # a deeper expression is not bounded (no walk of a long polynomial; each node once: a memo per SIN)
_FINITE_BITS = {dtypes.float32: ("<I", "<f", 0x7F7FFFFF), dtypes.float64: ("<Q", "<d", 0x7FEFFFFFFFFFFFFF)}

def _span(*xs:float) -> tuple[float, float]|None:
  return (min(xs), max(xs)) if all(math.isfinite(x) for x in xs) else None

def _bitcast_bounds(x:UOp) -> tuple[float, float]|None:
  """a float read from an integer's bits: ordered as the integer where the bits are those of finite floats of one sign (not negative)"""
  if (fmt := _FINITE_BITS.get(x.dtype)) is None or not dtypes.is_int(x.src[0].dtype) or x.src[0].dtype.itemsize != x.dtype.itemsize: return None
  lo, hi = x.src[0]._min_max
  if not 0 <= lo <= hi <= fmt[2]: return None
  return tuple(struct.unpack(fmt[1], struct.pack(fmt[0], b))[0] for b in (lo, hi))

def _largest(dt) -> float:
  """the largest finite value of the float dtype dt (IEEE-like: an fp8 e4m3's is larger, which this only underestimates)"""
  e, m = dtypes.finfo(dt)
  return (2 - 2.0 ** -m) * 2.0 ** (2 ** (e - 1) - 1)

def float_bounds(x:UOp, depth:int=0, memo:dict|None=None) -> tuple[float, float]|None:
  """finite (lo, hi) that every value of the float x lies in, or None where the AST does not say. Bounds past half of x's dtype's
  largest value are none: rounded there, a value may be inf (a cast to half of 1e5, a sum of two large halves)"""
  if memo is None: memo = {}
  if (b := memo.get(x, _UNSEEN)) is _UNSEEN:
    b = memo[x] = None if depth > MAX_DEPTH else _bounds(x, depth, memo)
    if b is not None and dtypes.is_float(x.dtype) and max(abs(b[0]), abs(b[1])) > _largest(x.dtype) / 2: b = memo[x] = None
  return b

_UNSEEN = object()
def _bounds(x:UOp, depth:int, memo:dict) -> tuple[float, float]|None:
  if x.op is Ops.CONST: return (float(x.arg),) * 2 if isinstance(x.arg, (int, float)) and math.isfinite(x.arg) else None
  if x.op is Ops.CAST:
    return float_bounds(x.src[0], depth + 1, memo) if dtypes.is_float(x.src[0].dtype) else (float(x.src[0].vmin), float(x.src[0].vmax))
  if x.op is Ops.BITCAST: return _bitcast_bounds(x)
  if x.op is Ops.NEG: return None if (b := float_bounds(x.src[0], depth + 1, memo)) is None else (-b[1], -b[0])
  if x.op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.WHERE, Ops.MULACC):
    bs = [float_bounds(s, depth + 1, memo) for s in (x.src[1:] if x.op is Ops.WHERE else x.src)]
    if any(b is None for b in bs): return None
    if x.op is Ops.WHERE: return (min(bs[0][0], bs[1][0]), max(bs[0][1], bs[1][1]))
    if x.op is Ops.ADD: return _span(bs[0][0] + bs[1][0], bs[0][1] + bs[1][1])
    if x.op is Ops.SUB: return _span(bs[0][0] - bs[1][1], bs[0][1] - bs[1][0])
    prods = _span(*(a * b for a in bs[0] for b in bs[1]))
    return prods if x.op is Ops.MUL or prods is None else _span(prods[0] + bs[2][0], prods[1] + bs[2][1])
  return None

def small(x:UOp) -> bool:
  """x is finite and |x| < SMALL_BOUND wherever it is computed"""
  return (b := float_bounds(x)) is not None and max(abs(b[0]), abs(b[1])) < SMALL_BOUND

pm_small_sin = PatternMatcher([
  (UPat(Ops.SIN, name="s"), lambda s: s.replace(arg=SMALL) if s.arg is None and dtypes.is_float(s.dtype) and small(s.src[0]) else None),
])

def mark_small_sin(ast:UOp) -> UOp: return graph_rewrite(ast, pm_small_sin, name="kernel")
