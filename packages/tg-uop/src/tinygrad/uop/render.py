"""One-line printing and python evaluation of (mostly index) expressions."""
from __future__ import annotations
import math
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes

_INFIX = {Ops.ADD: "+", Ops.MUL: "*", Ops.SUB: "-", Ops.FLOORDIV: "//", Ops.FLOORMOD: "%", Ops.CDIV: "/", Ops.CMOD: "%", Ops.CMPLT: "<",
          Ops.CMPNE: "!=", Ops.CMPEQ: "==", Ops.AND: "&", Ops.OR: "|", Ops.XOR: "^", Ops.SHL: "<<", Ops.SHR: ">>"}

def render_expr(x) -> str:
  """`(r0*4+r1)`-style text; nodes with no infix form print as calls, e.g. max(a, b)"""
  out: dict = {}
  for u in x.toposort():
    s = [out[v] for v in u.src]
    if u.op is Ops.CONST: out[u] = repr(u.arg)
    elif u.op is Ops.DEFINE_VAR: out[u] = u.arg.name
    elif u.op is Ops.BIND: out[u] = f"{s[0]}={s[1]}"
    elif u.op is Ops.RANGE: out[u] = f"r{u.arg[0]}" if u.src else f"loop{u.arg[0]}"
    elif u.op is Ops.SPECIAL: out[u] = u.arg
    elif u.op in _INFIX and len(s) == 2: out[u] = f"({s[0]}{_INFIX[u.op]}{s[1]})"
    elif u.op is Ops.NEG: out[u] = f"(-{s[0]})"
    elif u.op is Ops.WHERE: out[u] = f"({s[1]} if {s[0]} else {s[2]})"
    elif u.op is Ops.CAST: out[u] = f"{u.dtype.name}({s[0]})"
    elif u.op is Ops.MAX: out[u] = f"max({s[0]}, {s[1]})"
    elif u.op in {Ops.PARAM, Ops.BUFFER}: out[u] = u.arg.name or f"{'buf' if u.op is Ops.BUFFER else 'data'}{u.arg.slot}"
    else: out[u] = f"{u.op.name.lower()}({', '.join(s)})"
  return out[x]

_PY = {Ops.ADD: lambda a, b: a+b, Ops.MUL: lambda a, b: a*b, Ops.SUB: lambda a, b: a-b, Ops.FLOORDIV: lambda a, b: a//b,
       Ops.FLOORMOD: lambda a, b: a % b, Ops.CDIV: lambda a, b: int(a/b) if isinstance(a, int) else a/b,
       Ops.CMOD: lambda a, b: a - int(a/b)*b, Ops.MAX: max, Ops.CMPLT: lambda a, b: a < b, Ops.CMPNE: lambda a, b: a != b,
       Ops.CMPEQ: lambda a, b: a == b, Ops.AND: lambda a, b: a & b, Ops.OR: lambda a, b: a | b, Ops.XOR: lambda a, b: a ^ b,
       Ops.SHL: lambda a, b: a << b, Ops.SHR: lambda a, b: a >> b, Ops.NEG: lambda a: -a, Ops.WHERE: lambda c, a, b: a if c else b,
       Ops.RECIPROCAL: lambda a: 1/a, Ops.SQRT: math.sqrt, Ops.EXP2: lambda a: 2**a, Ops.LOG2: math.log2, Ops.SIN: math.sin,
       Ops.TRUNC: math.trunc, Ops.POW: lambda a, b: a**b}

def python_eval(x, var_vals:dict[str, int]):
  """value of a scalar expression, variables taken from var_vals by name (RANGE/SPECIAL by their printed name)"""
  vals: dict = {}
  for u in x.toposort():
    s = [vals[v] for v in u.src]
    if u.op is Ops.CONST: vals[u] = u.arg
    elif u.op is Ops.DEFINE_VAR:
      if u.arg.name not in var_vals: raise KeyError(f"no value for Variable {u.arg.name}")
      vals[u] = var_vals[u.arg.name]
    elif u.op is Ops.BIND: vals[u] = s[1]
    elif u.op in (Ops.RANGE, Ops.SPECIAL): vals[u] = var_vals[render_expr(u)]
    elif u.op is Ops.CAST: vals[u] = dtypes.as_const(s[0], u.dtype)
    elif u.op in _PY: vals[u] = _PY[u.op](*s)
    else: raise RuntimeError(f"cannot evaluate {u.op} in python")
  return vals[x]
