"""C-family source from a linear program. CStyleLanguage is the C every dialect shares, driven by tables a dialect overrides
(types, op spellings, prefixes); ClangRenderer is plain C for the CPU."""
from __future__ import annotations
import math
from collections import defaultdict
from typing import Callable
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp
from tinygrad.dtype import DType, dtypes, AddrSpace
from tinygrad.helpers import prod, strip_parens
from tinygrad.renderer import Renderer
from tinygrad.renderer.linear import SKIP, loop_of, param_order

def _fmax(a, b, dt): return f"(({a}!={a}||{a}>{b})?{a}:{b})" if dtypes.is_float(dt) else f"(({a}>{b})?{a}:{b})"  # a NaN wins, as in numpy
def _math(name:str) -> Callable:  # float versions end in f; half/bfloat16 are held as float
  return lambda *a, dt: f"{name}{'' if dt is dtypes.float64 else 'f'}({', '.join(a)})"

# float16/bfloat16 where the C compiler has no usable type: held as float in registers (rounded after every op), 16 bits in memory.
# h2f/f2h and bf2f/f2bf convert (round to nearest even); d2fo rounds double to float to odd, so rounding on to 16 bits is exact.
_EMULATION = """static inline float __tg_h2f(unsigned short h) {
  unsigned int em = h & 0x7fffu, b;
  if (em >= 0x7c00u) b = (em << 13) + 0x70000000u;
  else if (em >= 0x400u) b = (em << 13) + 0x38000000u;
  else { float s = (float)em * 5.9604644775390625e-08f; __builtin_memcpy(&b, &s, 4); }
  b |= (unsigned int)(h & 0x8000u) << 16; float f; __builtin_memcpy(&f, &b, 4); return f;
}
static inline unsigned short __tg_f2h(float f) {
  unsigned int u; __builtin_memcpy(&u, &f, 4);
  unsigned int s = (u >> 16) & 0x8000u; u &= 0x7fffffffu;
  if (u >= 0x47800000u) return s | (u > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (u < 0x38800000u) { float a; __builtin_memcpy(&a, &u, 4); a += 0.5f; __builtin_memcpy(&u, &a, 4); return s | (u - 0x3f000000u); }
  return s | ((u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13);
}
static inline float __tg_bf2f(unsigned short h) { unsigned int u = (unsigned int)h << 16; float f; __builtin_memcpy(&f, &u, 4); return f; }
static inline unsigned short __tg_f2bf(float f) {
  unsigned int u; __builtin_memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
static inline float __tg_d2fo(double d) {
  float f = (float)d; unsigned int u; __builtin_memcpy(&u, &f, 4);
  if ((double)f != d) { if (__builtin_fabs((double)f) > __builtin_fabs(d)) u -= 1; u |= 1; __builtin_memcpy(&f, &u, 4); }
  return f;
}
static inline float __tg_rh(float x) { return __tg_h2f(__tg_f2h(x)); }
static inline float __tg_rbf(float x) { return __tg_bf2f(__tg_f2bf(x)); }
"""

class CStyleLanguage(Renderer):
  kernel_prefix: str = ""       # before `void name(`, e.g. "__kernel " (OpenCL), 'extern "C" __global__ ' (CUDA)
  buffer_prefix: str = ""       # before a global buffer's element type, e.g. "__global "
  buffer_suffix: str = ""       # after its `*`, e.g. " restrict"
  smem_prefix: str = ""         # before a LOCAL (work group shared) array, e.g. "__local "
  barrier: str = ""             # the work group barrier statement
  code_for_workitem: dict[str, Callable[[int], str]] = {}  # SPECIAL name's first letter (g/l/i) -> expression of the axis
  infinity, nan = "INFINITY", "NAN"
  type_map: dict[DType, str] = {dtypes.bool: "bool", dtypes.int8: "char", dtypes.uint8: "unsigned char", dtypes.int16: "short",
    dtypes.uint16: "unsigned short", dtypes.int32: "int", dtypes.uint32: "unsigned int", dtypes.int64: "long", dtypes.uint64: "unsigned long",
    dtypes.float16: "half", dtypes.bfloat16: "bfloat16", dtypes.float32: "float", dtypes.float64: "double"}
  int_suffix: dict[DType, str] = {dtypes.uint32: "u", dtypes.int64: "l", dtypes.uint64: "ul"}
  emulated: dict[DType, tuple[str, str, str]] = {}  # dtype held as float -> (load fn from 16 bits, store fn to 16 bits, round fn)
  # operands are rendered C expressions; dt is the operands' dtype (the values', for WHERE)
  code_for_op: dict[Ops, Callable[..., str]] = {
    Ops.ADD: lambda a, b, dt: f"({a}+{b})", Ops.SUB: lambda a, b, dt: f"({a}-{b})", Ops.MUL: lambda a, b, dt: f"({a}*{b})",
    Ops.FDIV: lambda a, b, dt: f"({a}/{b})", Ops.CDIV: lambda a, b, dt: f"({a}/{b})", Ops.CMOD: lambda a, b, dt: f"({a}%{b})",
    Ops.NEG: lambda a, dt: f"(!{a})" if dt is dtypes.bool else f"(-{a})", Ops.MAX: _fmax,
    Ops.CMPLT: lambda a, b, dt: f"({a}<{b})", Ops.CMPNE: lambda a, b, dt: f"({a}!={b})", Ops.CMPEQ: lambda a, b, dt: f"({a}=={b})",
    Ops.AND: lambda a, b, dt: f"({a}&{b})", Ops.OR: lambda a, b, dt: f"({a}|{b})", Ops.XOR: lambda a, b, dt: f"({a}^{b})",
    Ops.SHL: lambda a, b, dt: f"({a}<<{b})", Ops.SHR: lambda a, b, dt: f"({a}>>{b})",
    Ops.WHERE: lambda c, a, b, dt: f"({c}?{a}:{b})",
    Ops.RECIPROCAL: lambda a, dt: f"({'1.0' if dt is dtypes.float64 else '1.0f'}/{a})",
    Ops.SQRT: _math("sqrt"), Ops.EXP2: _math("exp2"), Ops.LOG2: _math("log2"), Ops.SIN: _math("sin"), Ops.TRUNC: _math("trunc")}
  # C repeats these operands, so an operand must be a variable, not an inlined expression (that would grow exponentially)
  repeats_operands = {Ops.MAX}
  exact_ops = {Ops.NEG, Ops.MAX, Ops.WHERE, Ops.TRUNC}  # need no rounding back to an emulated dtype
  # C has these for ints only: on floats / would divide exactly and the others would not compile
  int_ops = {Ops.CDIV, Ops.CMOD, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR}

  def value_type(self, dt:DType) -> str: return "float" if dt in self.emulated else self.ctype(dt)
  def storage_type(self, dt:DType) -> str: return "unsigned short" if dt in self.emulated else self.ctype(dt)
  def ctype(self, dt:DType) -> str:
    if (t := self.type_map.get(dt)) is None: raise RuntimeError(f"{type(self).__name__} has no type for {dt}")
    return t

  def render_const(self, x, dt:DType) -> str:
    if dt is dtypes.bool: return "1" if x else "0"
    if dtypes.is_float(dt):
      if math.isnan(x): return self.nan
      if math.isinf(x): return self.infinity if x > 0 else f"(-{self.infinity})"
      s = repr(float(x)) + ("" if dt is dtypes.float64 else "f")
      return f"({s})" if x < 0 or s.startswith("-") else s
    suf = self.int_suffix.get(dt, "")
    # the most negative literal does not exist in C (it is the negation of a too-large positive one)
    if dt in dtypes.sints and x == dtypes.min(dt): return f"({x+1}{suf}-1)"
    return f"({x}{suf})" if x < 0 else f"{x}{suf}"

  def render_cast(self, x:str, src:DType, dst:DType) -> str:
    if dst in self.emulated:
      if src is dtypes.float64: x = f"__tg_d2fo({x})"
      elif src is not dtypes.float32 and src not in self.emulated: x = f"__tg_d2fo((double){x})"  # ints go through double, exactly
      return f"{self.emulated[dst][2]}({strip_parens(x)})"
    return f"({self.value_type(dst)})({x})"

  def render_bitcast(self, x:str, src:DType, dst:DType) -> str:
    if src in self.emulated: x, src = f"{self.emulated[src][1]}({x})", dtypes.uint16  # its 16 bits
    if dst in self.emulated: return f"{self.emulated[dst][0]}((unsigned short)({x}))"
    if dtypes.is_int(src) and dtypes.is_int(dst): return f"({self.ctype(dst)})({x})"  # between ints of one width a conversion keeps the bits
    return f"((union {{ {self.ctype(src)} a; {self.ctype(dst)} b; }}){{.a = {x}}}).b"  # C reads a union through another member as a bitcast

  def render_alu(self, op:Ops, srcs:list[str], u:UOp) -> str:
    if (fn := self.code_for_op.get(op)) is None or (op in self.int_ops and dtypes.is_float(u.src[0].dtype)):
      raise RuntimeError(f"{type(self).__name__} cannot render {op} on {u.src[0].dtype} operands: lower it first")
    ret = fn(*srcs, dt=u.src[-1].dtype)
    if u.dtype in self.emulated and op not in self.exact_ops: return f"{self.emulated[u.dtype][2]}({strip_parens(ret)})"
    # C computes narrow ints as int: wrap back to the dtype so later comparisons and shifts see the same bits as other targets
    if u.dtype in dtypes.ints and u.dtype.itemsize < 4: return f"({self.ctype(u.dtype)}){ret}"
    return ret

  def render_kernel(self, name:str, body:list[str], params:list[UOp], variables:list[UOp], uops:list[UOp]) -> str:
    args = [f"{self.buffer_prefix}{self.storage_type(p.dtype)}*{self.buffer_suffix} data{p.arg.slot}" for p in params] + \
           [f"const {self.ctype(v.dtype)} {v.arg.name}" for v in variables]
    prelude = _EMULATION if any(u.dtype in self.emulated for u in uops) else ""
    return prelude + f"{self.kernel_prefix}void {name}({', '.join(args)}) {{\n" + "\n".join(body) + "\n}\n"

  def render(self, name:str, uops:list[UOp]) -> str:
    users: dict[UOp, list[UOp]] = defaultdict(list)
    scope: dict[UOp, UOp|None] = {}  # innermost open RANGE/IF: an expression is inlined only into its own scope, never into a deeper loop
    opened: list[UOp] = []
    for u in uops:
      for s in u.src: users[s].append(u)
      scope[u] = opened[-1] if opened else None  # END/ENDIF are inside what they close: a do-while condition inlines into its END
      if u.op in (Ops.END, Ops.ENDIF) and not opened: raise RuntimeError(f"{u.op} without an open RANGE/IF in kernel {name}")
      if u.op in (Ops.END, Ops.ENDIF): opened.pop()
      if u.op in (Ops.RANGE, Ops.IF): opened.append(u)
    r: dict[UOp, str] = {}  # each value's C expression or variable name
    names: dict[str, int] = defaultdict(int)
    body: list[str] = []
    def emit(line:str): body.append("  " * (len(opened) + 1) + line)
    def fresh(prefix:str, numbered=True) -> str:
      names[prefix] += 1
      return f"{prefix}{names[prefix]-1}" if numbered else prefix if names[prefix] == 1 else f"{prefix}_{names[prefix]-1}"
    for u in uops:
      op, src = u.op, u.src
      if op in SKIP or op is Ops.BARRIER:
        if op is Ops.BARRIER and self.barrier: emit(self.barrier)
        continue
      if op is Ops.PARAM: r[u] = f"data{u.arg.slot}"
      elif op is Ops.DEFINE_VAR: r[u] = u.arg.name
      elif op is Ops.CONST: r[u] = self.render_const(u.arg, u.dtype)
      elif op is Ops.INDEX: r[u] = f"{r[src[0]]}[{strip_parens(r[src[1]])}]"
      elif op is Ops.SPECIAL:
        if (fn := self.code_for_workitem.get(u.arg[0])) is None: raise RuntimeError(f"{type(self).__name__} has no work items (SPECIAL {u.arg})")
        emit(f"{self.ctype(u.dtype)} {u.arg} = {fn(int(u.arg[-1]))}; /* {r[src[0]]} */")
        r[u] = u.arg
      elif op is Ops.BUFFER:
        if u.arg.addrspace not in (AddrSpace.REG, AddrSpace.LOCAL): raise RuntimeError(f"a linear program has no {u.arg.addrspace} BUFFER")
        r[u] = fresh("reg" if u.arg.addrspace is AddrSpace.REG else "smem")
        emit(f"{self.smem_prefix if u.arg.addrspace is AddrSpace.LOCAL else ''}{self.value_type(u.dtype)} {r[u]}[{prod(u.arg.shape)}];")
      elif op is Ops.RANGE:
        if u.dtype is dtypes.void: emit("for (;;) {")
        else:
          r[u] = fresh(f"ridx{u.arg[0]}", numbered=False)
          emit(f"for ({self.ctype(u.dtype)} {r[u]} = 0; {r[u]} < {strip_parens(r[src[0]])}; {r[u]}++) {{")
        opened.append(u)
      elif op is Ops.END:
        if (cond := loop_of(u)[1]) is not None: emit(f"if (!({strip_parens(r[cond])})) break;")
        opened.pop()
        emit("}")
      elif op is Ops.IF:
        emit(f"if ({strip_parens(r[src[0]])}) {{")
        opened.append(u)
      elif op is Ops.ENDIF:
        opened.pop()
        emit("}")
      elif op is Ops.STORE:
        val = r[src[1]] if src[1].dtype not in self.emulated or self._is_reg(src[0]) else f"{self.emulated[src[1].dtype][1]}({r[src[1]]})"
        emit(f"{r[src[0]]} = {strip_parens(val)};")
      elif op is Ops.LOAD:
        val = r[src[0]] if u.dtype not in self.emulated or self._is_reg(src[0]) else f"{self.emulated[u.dtype][0]}({r[src[0]]})"
        if len(src) == 3: val = f"({r[src[2]]}?{val}:{r[src[1]]})"  # the conditional only reads memory when the gate is true
        r[u] = fresh("val")
        emit(f"{self.value_type(u.dtype)} {r[u]} = {strip_parens(val)};")
      elif op in GroupOp.ALU or op in (Ops.CAST, Ops.BITCAST):
        if op is Ops.CAST: expr = self.render_cast(r[src[0]], src[0].dtype, u.dtype)
        elif op is Ops.BITCAST: expr = self.render_bitcast(r[src[0]], src[0].dtype, u.dtype)
        else: expr = self.render_alu(op, [r[s] for s in src], u)
        if len(us := users[u]) == 1 and us[0].op not in self.repeats_operands and scope[us[0]] is scope[u]: r[u] = expr
        else:
          r[u] = fresh("cast" if op in (Ops.CAST, Ops.BITCAST) else "alu")
          emit(f"{self.value_type(u.dtype)} {r[u]} = {strip_parens(expr)};")
      else: raise RuntimeError(f"{type(self).__name__} cannot render {op} in a linear program")
    if opened: raise RuntimeError(f"{len(opened)} RANGE/IF left open at the end of kernel {name}")
    return self.render_kernel(name, body, *param_order(uops), uops)

  @staticmethod
  def _is_reg(idx:UOp) -> bool: return idx.src[0].op is Ops.BUFFER  # REG/LOCAL arrays hold values as computed, not as stored in 16 bits

class ClangRenderer(CStyleLanguage):
  """C99 for the host CPU (gcc or clang builtins, no headers): one function with restrict pointers, half/bfloat16 emulated"""
  device = "CPU"
  buffer_suffix = " restrict"
  infinity, nan = "__builtin_inff()", '__builtin_nanf("")'
  # plain char may be unsigned (ARM) and long 32 bits (Windows): spell the widths out
  type_map = {**CStyleLanguage.type_map, dtypes.bool: "_Bool", dtypes.int8: "signed char", dtypes.int64: "long long",
              dtypes.uint64: "unsigned long long"}
  int_suffix = {dtypes.uint32: "u", dtypes.int64: "ll", dtypes.uint64: "ull"}
  emulated = {dtypes.float16: ("__tg_h2f", "__tg_f2h", "__tg_rh"), dtypes.bfloat16: ("__tg_bf2f", "__tg_f2bf", "__tg_rbf")}
  code_for_op = {**CStyleLanguage.code_for_op, Ops.SQRT: _math("__builtin_sqrt"), Ops.EXP2: _math("__builtin_exp2"),
    Ops.LOG2: _math("__builtin_log2"), Ops.SIN: _math("__builtin_sin"), Ops.TRUNC: _math("__builtin_trunc")}
