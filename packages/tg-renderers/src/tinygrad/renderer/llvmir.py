"""Textual LLVM IR from a linear program: one function, loops as basic blocks with a phi induction variable, math through llvm.*
intrinsics. No fast-math flags: results follow IEEE (NaN, inf, rounding) like the C and python targets."""
from __future__ import annotations
import math, re, struct
from typing import Callable
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp
from tinygrad.dtype import DType, dtypes, AddrSpace
from tinygrad.helpers import prod
from tinygrad.renderer import Renderer
from tinygrad.renderer.linear import SKIP, loop_of, param_order

# value types; float16/bfloat16 are held as float (rounded after every op) and stored as i16, bool is stored as i8
_LTYPE = {dtypes.bool: "i1", dtypes.int8: "i8", dtypes.uint8: "i8", dtypes.int16: "i16", dtypes.uint16: "i16", dtypes.int32: "i32",
          dtypes.uint32: "i32", dtypes.int64: "i64", dtypes.uint64: "i64", dtypes.float16: "float", dtypes.bfloat16: "float",
          dtypes.float32: "float", dtypes.float64: "double"}
_EMULATED = {dtypes.float16: ("@__tg_h2f", "@__tg_f2h", "@__tg_rh"), dtypes.bfloat16: ("@__tg_bf2f", "@__tg_f2bf", "@__tg_rbf")}
def ltype(dt:DType) -> str:
  if (t := _LTYPE.get(dt)) is None: raise RuntimeError(f"LLVMRenderer has no type for {dt}")
  return t
def mtype(dt:DType) -> str: return "i8" if dt is dtypes.bool else "i16" if dt in _EMULATED else ltype(dt)

def render_const(x, dt:DType) -> str:
  if dt is dtypes.bool: return "true" if x else "false"
  # LLVM spells a float constant as the hex bits of the same value as a double
  if dtypes.is_float(dt): return "0x7FF8000000000000" if math.isnan(x) else f"0x{struct.unpack('<Q', struct.pack('<d', x))[0]:016X}"
  bits = 8 * dt.itemsize
  return str(x - (1 << bits) if x >= 1 << (bits - 1) else x)  # two's complement: unsigned constants as their signed bit pattern

def _by_kind(f:str|None, s:str|None, u:str|None=None, b:str|None=None) -> Callable:
  """one instruction chosen by the operands' kind: float, signed int, unsigned int (default: signed) or bool (default: unsigned);
  None where that kind has none"""
  def fn(d, *a, dt):
    ins = f if dtypes.is_float(dt) else (b or u or s) if dt is dtypes.bool else (u or s) if dtypes.is_unsigned(dt) else s
    return None if ins is None else [f"{d} = {ins} {ltype(dt)} {', '.join(a)}"]
  return fn
def _intrinsic(name:str) -> Callable:
  def fn(d, *a, dt):
    t = ltype(dt)
    return [f"{d} = call {t} @llvm.{name}.{'f64' if t == 'double' else 'f32'}({', '.join(f'{t} {x}' for x in a)})"]
  return fn
def _max(d, a, b, dt):
  t = ltype(dt)
  if not dtypes.is_float(dt): return [f"{d}.c = icmp {'ugt' if dtypes.is_unsigned(dt) or dt is dtypes.bool else 'sgt'} {t} {a}, {b}",
                                      f"{d} = select i1 {d}.c, {t} {a}, {t} {b}"]
  # a NaN operand wins (numpy's maximum): pick a when a is NaN or a > b, the same choice as the C and python targets
  return [f"{d}.n = fcmp uno {t} {a}, {a}", f"{d}.g = fcmp ogt {t} {a}, {b}", f"{d}.c = or i1 {d}.n, {d}.g",
          f"{d} = select i1 {d}.c, {t} {a}, {t} {b}"]
def _neg(d, a, dt):
  t = ltype(dt)
  return [f"{d} = fneg {t} {a}" if dtypes.is_float(dt) else f"{d} = xor i1 {a}, true" if dt is dtypes.bool else f"{d} = sub {t} 0, {a}"]

# float16/bfloat16 conversions (round to nearest even) and double -> float rounding to odd, so a second rounding to 16 bits is exact
_HELPERS = """define internal float @__tg_h2f(i16 %h) alwaysinline {
  %x = zext i16 %h to i32
  %em = and i32 %x, 32767
  %sh = shl i32 %em, 13
  %nb = add i32 %sh, 939524096
  %ib = add i32 %sh, 1879048192
  %sf = uitofp i32 %em to float
  %sv = fmul float %sf, 0x3E70000000000000
  %sb = bitcast float %sv to i32
  %isnorm = icmp uge i32 %em, 1024
  %isinf = icmp uge i32 %em, 31744
  %b0 = select i1 %isnorm, i32 %nb, i32 %sb
  %b1 = select i1 %isinf, i32 %ib, i32 %b0
  %s = and i32 %x, 32768
  %ss = shl i32 %s, 16
  %b = or i32 %b1, %ss
  %f = bitcast i32 %b to float
  ret float %f
}
define internal i16 @__tg_f2h(float %f) alwaysinline {
  %u0 = bitcast float %f to i32
  %s0 = lshr i32 %u0, 16
  %s = and i32 %s0, 32768
  %u = and i32 %u0, 2147483647
  %big = icmp uge i32 %u, 1199570944
  %isnan = icmp ugt i32 %u, 2139095040
  %inf = select i1 %isnan, i32 32256, i32 31744
  %small = icmp ult i32 %u, 947912704
  %af = bitcast i32 %u to float
  %a = fadd float %af, 0x3FE0000000000000
  %ab = bitcast float %a to i32
  %sub = sub i32 %ab, 1056964608
  %o0 = lshr i32 %u, 13
  %odd = and i32 %o0, 1
  %n0 = add i32 %u, -939520001
  %n1 = add i32 %n0, %odd
  %n = lshr i32 %n1, 13
  %r0 = select i1 %small, i32 %sub, i32 %n
  %r1 = select i1 %big, i32 %inf, i32 %r0
  %r = or i32 %r1, %s
  %h = trunc i32 %r to i16
  ret i16 %h
}
define internal float @__tg_bf2f(i16 %h) alwaysinline {
  %x = zext i16 %h to i32
  %s = shl i32 %x, 16
  %f = bitcast i32 %s to float
  ret float %f
}
define internal i16 @__tg_f2bf(float %f) alwaysinline {
  %u = bitcast float %f to i32
  %a = and i32 %u, 2147483647
  %isnan = icmp ugt i32 %a, 2139095040
  %hi = lshr i32 %u, 16
  %q = or i32 %hi, 64
  %odd = and i32 %hi, 1
  %r0 = add i32 %u, 32767
  %r1 = add i32 %r0, %odd
  %r2 = lshr i32 %r1, 16
  %r = select i1 %isnan, i32 %q, i32 %r2
  %h = trunc i32 %r to i16
  ret i16 %h
}
define internal float @__tg_d2fo(double %d) alwaysinline {
  %f = fptrunc double %d to float
  %b = fpext float %f to double
  %exact = fcmp oeq double %b, %d
  %ab = call double @llvm.fabs.f64(double %b)
  %ad = call double @llvm.fabs.f64(double %d)
  %away = fcmp ogt double %ab, %ad
  %u = bitcast float %f to i32
  %dn = sub i32 %u, 1
  %u1 = select i1 %away, i32 %dn, i32 %u
  %u2 = or i32 %u1, 1
  %r = select i1 %exact, i32 %u, i32 %u2
  %o = bitcast i32 %r to float
  ret float %o
}
declare double @llvm.fabs.f64(double)
define internal float @__tg_rh(float %x) alwaysinline {
  %h = call i16 @__tg_f2h(float %x)
  %f = call float @__tg_h2f(i16 %h)
  ret float %f
}
define internal float @__tg_rbf(float %x) alwaysinline {
  %h = call i16 @__tg_f2bf(float %x)
  %f = call float @__tg_bf2f(i16 %h)
  ret float %f
}
"""

class LLVMRenderer(Renderer):
  device = "CPU"
  # (destination, operands..., dt= the operands' dtype) -> instruction lines
  code_for_op: dict[Ops, Callable[..., list[str]]] = {
    Ops.ADD: _by_kind("fadd", "add", b="or"), Ops.SUB: _by_kind("fsub", "sub"), Ops.MUL: _by_kind("fmul", "mul", b="and"),
    Ops.FDIV: _by_kind("fdiv", None), Ops.CDIV: _by_kind(None, "sdiv", "udiv"), Ops.CMOD: _by_kind(None, "srem", "urem"),
    Ops.CMPLT: _by_kind("fcmp olt", "icmp slt", "icmp ult"), Ops.CMPNE: _by_kind("fcmp une", "icmp ne"), Ops.CMPEQ: _by_kind("fcmp oeq", "icmp eq"),
    Ops.AND: _by_kind(None, "and"), Ops.OR: _by_kind(None, "or"), Ops.XOR: _by_kind(None, "xor"),
    Ops.SHL: _by_kind(None, "shl"), Ops.SHR: _by_kind(None, "ashr", "lshr"), Ops.NEG: _neg, Ops.MAX: _max,
    Ops.WHERE: lambda d, c, a, b, dt: [f"{d} = select i1 {c}, {ltype(dt)} {a}, {ltype(dt)} {b}"],
    Ops.RECIPROCAL: lambda d, a, dt: [f"{d} = fdiv {ltype(dt)} {render_const(1.0, dt)}, {a}"],
    Ops.SQRT: _intrinsic("sqrt"), Ops.EXP2: _intrinsic("exp2"), Ops.LOG2: _intrinsic("log2"), Ops.SIN: _intrinsic("sin"),
    Ops.TRUNC: _intrinsic("trunc")}
  exact_ops = {Ops.NEG, Ops.MAX, Ops.WHERE, Ops.TRUNC}  # need no rounding back to an emulated dtype

  def render_cast(self, d:str, x:str, src:DType, dst:DType) -> list[str]|str:
    """instructions computing d, or the operand itself when the value types agree"""
    st, dt = ltype(src), ltype(dst)
    if dst is dtypes.bool: return [f"{d} = fcmp une {st} {x}, 0.0" if dtypes.is_float(src) else f"{d} = icmp ne {st} {x}, 0"]
    if dst in _EMULATED:  # ints and doubles reach 16 bits through double and a float rounded to odd: one correct rounding
      lines = []
      if st != "float":
        if src is not dtypes.float64: lines.append(f"{d}.d = {'sitofp' if src in dtypes.sints else 'uitofp'} {st} {x} to double"); x = f"{d}.d"
        lines.append(f"{d}.o = call float @__tg_d2fo(double {x})"); x = f"{d}.o"
      return lines + [f"{d} = call float {_EMULATED[dst][2]}(float {x})"]
    if st == dt: return x
    signed = src in dtypes.sints
    if dtypes.is_float(src) and dtypes.is_float(dst): ins = "fpext" if dt == "double" else "fptrunc"
    elif dtypes.is_float(src): ins = "fptoui" if dtypes.is_unsigned(dst) else "fptosi"
    elif dtypes.is_float(dst): ins = "sitofp" if signed else "uitofp"
    else: ins = "trunc" if src.itemsize > dst.itemsize else "sext" if signed else "zext"
    return [f"{d} = {ins} {st} {x} to {dt}"]

  def render_bitcast(self, d:str, x:str, src:DType, dst:DType) -> list[str]|str:
    if src in _EMULATED and dst in _EMULATED:
      return [f"{d}.b = call i16 {_EMULATED[src][1]}(float {x})", f"{d} = call float {_EMULATED[dst][0]}(i16 {d}.b)"]
    if src in _EMULATED: return [f"{d} = call i16 {_EMULATED[src][1]}(float {x})"]  # to int16/uint16, also i16
    if dst in _EMULATED: return [f"{d} = call float {_EMULATED[dst][0]}(i16 {x})"]
    if src is dtypes.bool or dst is dtypes.bool: return self.render_cast(d, x, src, dst)  # bool is one bit in registers, a byte in memory
    return x if ltype(src) == ltype(dst) else [f"{d} = bitcast {ltype(src)} {x} to {ltype(dst)}"]

  def render(self, name:str, uops:list[UOp]) -> str:
    idx = {u: i for i, u in enumerate(uops)}
    r: dict[UOp, str] = {}  # each value's operand text
    allocas: list[str] = []
    body: list[str] = []
    label = "entry"  # the block being filled, for phi predecessors
    def block(nm:str):
      nonlocal label
      body.append(f"{nm}:")
      label = nm
    for u in uops:
      op, src, i, d = u.op, u.src, idx[u], f"%v{idx[u]}"
      if op in SKIP or op is Ops.BARRIER: continue
      if op is Ops.PARAM: r[u] = f"%data{u.arg.slot}"
      elif op is Ops.DEFINE_VAR: r[u] = f"%var.{u.arg.name}"
      elif op is Ops.CONST: r[u] = render_const(u.arg, u.dtype)
      elif op is Ops.SPECIAL: raise RuntimeError(f"LLVMRenderer renders single threaded CPU kernels, it has no work items (SPECIAL {u.arg})")
      elif op is Ops.BUFFER:
        if u.arg.addrspace not in (AddrSpace.REG, AddrSpace.LOCAL): raise RuntimeError(f"a linear program has no {u.arg.addrspace} BUFFER")
        allocas.append(f"  {d} = alloca [{prod(u.arg.shape)} x {ltype(u.dtype)}]")  # in the entry block, so a loop does not grow the stack
        r[u] = d
      elif op is Ops.INDEX:
        body.append(f"  {d} = getelementptr inbounds {self._elem(u)}, ptr {r[src[0]]}, {ltype(src[1].dtype)} {r[src[1]]}")
        r[u] = d
      elif op is Ops.RANGE:
        body.append(f"  br label %L{i}")
        pre = label
        block(f"L{i}")
        if u.dtype is not dtypes.void:
          t = ltype(u.dtype)
          body += [f"  {d} = phi {t} [0, %{pre}], [{d}.next, %L{i}.latch]", f"  {d}.c = icmp slt {t} {d}, {r[src[0]]}",
                   f"  br i1 {d}.c, label %L{i}.body, label %L{i}.exit"]
          block(f"L{i}.body")
          r[u] = d
      elif op is Ops.END:
        rng, cond = loop_of(u)
        j = idx[rng]
        if cond is None: body += [f"  br label %L{j}.latch", f"L{j}.latch:", f"  %v{j}.next = add {ltype(rng.dtype)} %v{j}, 1", f"  br label %L{j}"]
        else: body.append(f"  br i1 {r[cond]}, label %L{j}, label %L{j}.exit")  # do-while: back while the condition holds
        block(f"L{j}.exit")
      elif op is Ops.IF:
        body.append(f"  br i1 {r[src[0]]}, label %L{i}.then, label %L{i}.end")
        block(f"L{i}.then")
      elif op is Ops.ENDIF:
        body.append(f"  br label %L{idx[src[0]]}.end")
        block(f"L{idx[src[0]]}.end")
      elif op is Ops.STORE:
        val, t = r[src[1]], self._elem(src[0])
        if t != ltype(src[1].dtype):  # to the in-memory form: bool as a byte, float16/bfloat16 as 16 bits
          body.append(f"  {d}.m = zext i1 {val} to i8" if src[1].dtype is dtypes.bool else
                      f"  {d}.m = call i16 {_EMULATED[src[1].dtype][1]}(float {val})")
          val = f"{d}.m"
        body.append(f"  store {t} {val}, ptr {r[src[0]]}")
      elif op is Ops.LOAD:
        t, vt, gated = self._elem(src[0]), ltype(u.dtype), len(src) == 3
        if gated:  # branch around the load, so memory is not touched when the gate is false
          pre = label
          body.append(f"  br i1 {r[src[2]]}, label %L{i}.load, label %L{i}.join")
          block(f"L{i}.load")
        val = f"{d}.m" if t != vt or gated else d
        body.append(f"  {val} = load {t}, ptr {r[src[0]]}")
        if t != vt:  # from the in-memory form
          conv = f"{d}.x" if gated else d
          body.append(f"  {conv} = icmp ne i8 {val}, 0" if u.dtype is dtypes.bool else f"  {conv} = call float {_EMULATED[u.dtype][0]}(i16 {val})")
          val = conv
        if gated:
          body.append(f"  br label %L{i}.join")
          block(f"L{i}.join")
          body.append(f"  {d} = phi {vt} [{val}, %L{i}.load], [{r[src[1]]}, %{pre}]")
        r[u] = d
      elif op in (Ops.CAST, Ops.BITCAST):
        out = (self.render_cast if op is Ops.CAST else self.render_bitcast)(d, r[src[0]], src[0].dtype, u.dtype)
        if isinstance(out, str): r[u] = out
        else: body += [f"  {x}" for x in out]; r[u] = d
      elif op in GroupOp.ALU:
        rounds = u.dtype in _EMULATED and op not in self.exact_ops  # computed in float, then rounded to 16 bits
        if (fn := self.code_for_op.get(op)) is None or (lines := fn(f"{d}.u" if rounds else d, *[r[s] for s in src], dt=src[-1].dtype)) is None:
          raise RuntimeError(f"LLVMRenderer cannot render {op} on {src[-1].dtype} operands: lower it first")
        body += [f"  {x}" for x in lines] + ([f"  {d} = call float {_EMULATED[u.dtype][2]}(float {d}.u)"] if rounds else [])
        r[u] = d
      else: raise RuntimeError(f"LLVMRenderer cannot render {op} in a linear program")
    params, variables = param_order(uops)
    args = [f"ptr noalias %data{p.arg.slot}" for p in params] + [f"{ltype(v.dtype)} %var.{v.arg.name}" for v in variables]
    fn = f'define void @"{name}"({", ".join(args)}) nounwind {{\nentry:\n' + "\n".join(allocas + body) + "\n  ret void\n}\n"
    # declare each llvm intrinsic the kernel calls, with the argument types of the call
    decls = {f"declare {m[1]} {m[2]}({', '.join(a.split()[0] for a in m[3].split(', '))})"
             for m in re.finditer(r"call (\w+) (@llvm\.[\w.]+)\(([^)]*)\)", fn)}
    return fn + "".join(f"{x}\n" for x in sorted(decls)) + (_HELPERS if any(u.dtype in _EMULATED for u in uops) else "")

  @staticmethod
  def _elem(idx:UOp) -> str:
    """the element type an INDEX points at: REG/LOCAL arrays hold values, global buffers their in-memory form"""
    return ltype(idx.dtype) if idx.src[0].op is Ops.BUFFER else mtype(idx.src[0].dtype)
