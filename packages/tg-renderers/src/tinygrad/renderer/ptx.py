"""PTX from a linear program, our own (no NVVM): `base_rewrite` maps each node to its PTX instructions, the node's destination register
given before its rule runs. Registers by kind: %p predicates (bool), %r 32 bits (ints up to 32 bits, held sign- or zero-extended and
wrapped back after arithmetic), %rd 64 bits (int64, addresses), %f float32 (also float16/bfloat16: computed in float32 and rounded after
every op, as the CPU targets do; 16 bits in memory), %fd float64, %h 16-bit scratch. Arithmetic carries an explicit rounding mode
(add.rn, mul.rn), which keeps ptxas from contracting it into fma: results match the IEEE targets. EXP2/LOG2/SIN use the software
decompositions (codegen/transcendental.py): ex2/lg2/sin.approx are approximations. A bounded loop is a counter and a guarded branch
out, a do-while a label and a predicated branch back."""
from __future__ import annotations
import re, struct
from typing import Callable
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher
from tinygrad.dtype import DType, dtypes, AddrSpace
from tinygrad.helpers import prod
from tinygrad.renderer import Renderer
from tinygrad.renderer.linear import SKIP, loop_of, param_order
from tinygrad.renderer.cuda import NVArch
from tinygrad.renderer.tensor_cores import MMA_M16N8K16
from tinygrad.codegen.gpudims import workitem

HALF = (dtypes.float16, dtypes.bfloat16)
_NARROW = {dtypes.int8: "s8", dtypes.uint8: "u8", dtypes.int16: "s16", dtypes.uint16: "u16"}
# in memory: bool is a byte, float16/bfloat16 their 16 bits
_MEM = {dtypes.bool: "u8", **_NARROW, dtypes.int32: "s32", dtypes.uint32: "u32", dtypes.int64: "s64", dtypes.uint64: "u64",
        dtypes.float16: "b16", dtypes.bfloat16: "b16", dtypes.float32: "f32", dtypes.float64: "f64"}
_DECL = {"p": "pred", "r": "b32", "rd": "b64", "f": "f32", "fd": "f64", "h": "b16"}

def reg_kind(dt:DType) -> str:
  if dt is dtypes.bool: return "p"
  if dt in (dtypes.int64, dtypes.uint64): return "rd"
  if dt is dtypes.float64: return "fd"
  if dtypes.is_float(dt): return "f"
  if dtypes.is_int(dt): return "r"
  raise RuntimeError(f"PTXRenderer has no register for {dt}")

def ptype(dt:DType) -> str:
  """the type instructions compute a value of dt in"""
  if dt is dtypes.bool: return "pred"
  if dtypes.is_float(dt): return "f64" if dt is dtypes.float64 else "f32"
  return ("u" if dtypes.is_unsigned(dt) else "s") + ("64" if dt.itemsize == 8 else "32")

def const_bits(x, dt:DType) -> str:
  if dt is dtypes.float64: return f"0d{struct.unpack('<Q', struct.pack('<d', x))[0]:016X}"
  if dtypes.is_float(dt): return f"0f{struct.unpack('<I', struct.pack('<f', x))[0]:08X}"  # float16/bfloat16 values are exact in float32
  if dt is dtypes.bool: return "1" if x else "0"
  return f"0x{int(x) & (2**64-1 if dt.itemsize == 8 else 2**32-1):0{16 if dt.itemsize == 8 else 8}X}"  # narrow ints sign-extended

# *** ALU: (destination, operands..., dt= the operands' dtype) -> instructions; ctx.tmp(kind) gives a scratch register ***

def _by_kind(f:str|None, i:str|None, b:str|None=None, bits:bool=False) -> Callable:
  """float, int and bool spellings; `bits`: the int form takes a b32/b64 type"""
  def fn(ctx, d, *a, dt):
    if dt is dtypes.bool: ins = b and f"{b}.pred"
    elif dtypes.is_float(dt): ins = f and f"{f}.{ptype(dt)}"
    else: ins = i and f"{i}.{'b' + ptype(dt)[1:] if bits else ptype(dt)}"
    return None if ins is None else [f"{ins} {d}, {', '.join(a)};"]
  return fn

def _max(ctx, d, a, b, dt):
  if not dtypes.is_float(dt): return [f"{'or.pred' if dt is dtypes.bool else f'max.{ptype(dt)}'} {d}, {a}, {b};"]
  # a NaN operand wins (numpy's maximum): pick a when a is NaN or a > b
  n, g = ctx.tmp("p"), ctx.tmp("p")
  return [f"setp.nan.{ptype(dt)} {n}, {a}, {a};", f"setp.gt.{ptype(dt)} {g}, {a}, {b};", f"or.pred {n}, {n}, {g};",
          f"selp.{ptype(dt)} {d}, {a}, {b}, {n};"]

def _cmp(cond_f:str, cond_i:str, bool_ops:list[str]) -> Callable:
  def fn(ctx, d, a, b, dt):
    if dt is dtypes.bool: return [x.format(d=d, a=a, b=b) for x in bool_ops]
    return [f"setp.{cond_f if dtypes.is_float(dt) else cond_i}.{ptype(dt)} {d}, {a}, {b};"]
  return fn

def _shift(op:str) -> Callable:
  def fn(ctx, d, a, b, dt):
    t = ("b" if op == "shl" else ptype(dt)[0]) + ptype(dt)[1:]  # a right shift is arithmetic on signed ints
    if dt.itemsize != 8: return [f"{op}.{t} {d}, {a}, {b};"]
    amt = ctx.tmp("r")  # the shift amount is a 32-bit operand
    return [f"cvt.u32.u64 {amt}, {b};", f"{op}.{t} {d}, {a}, {amt};"]
  return fn

def _where(ctx, d, c, a, b, dt):
  if dt is not dtypes.bool: return [f"selp.{ptype(dt)} {d}, {a}, {b}, {c};"]
  t = ctx.tmp("p")
  return [f"and.pred {t}, {c}, {a};", f"not.pred {d}, {c};", f"and.pred {d}, {d}, {b};", f"or.pred {d}, {d}, {t};"]

def _neg(ctx, d, a, dt):  # neg has signed and float forms only: an unsigned negation is the same bits
  return [f"not.pred {d}, {a};" if dt is dtypes.bool else f"neg.{ptype(dt).replace('u', 's')} {d}, {a};"]

code_for_op: dict[Ops, Callable] = {
  Ops.ADD: _by_kind("add.rn", "add", "or"), Ops.SUB: _by_kind("sub.rn", "sub"), Ops.MUL: _by_kind("mul.rn", "mul.lo", "and"),
  Ops.FDIV: _by_kind("div.rn", None), Ops.CDIV: _by_kind(None, "div"), Ops.CMOD: _by_kind(None, "rem"),
  Ops.AND: _by_kind(None, "and", "and", bits=True), Ops.OR: _by_kind(None, "or", "or", bits=True),
  Ops.XOR: _by_kind(None, "xor", "xor", bits=True),
  Ops.SHL: _shift("shl"), Ops.SHR: _shift("shr"), Ops.NEG: _neg, Ops.MAX: _max, Ops.WHERE: _where,
  # comparisons: float < and == are ordered (false on NaN), != unordered, as in C; on bools a < b is !a & b
  Ops.CMPLT: _cmp("lt", "lt", ["not.pred {d}, {a};", "and.pred {d}, {d}, {b};"]), Ops.CMPNE: _cmp("neu", "ne", ["xor.pred {d}, {a}, {b};"]),
  Ops.CMPEQ: _cmp("eq", "eq", ["xor.pred {d}, {a}, {b};", "not.pred {d}, {d};"]),
  Ops.RECIPROCAL: _by_kind("rcp.rn", None), Ops.SQRT: _by_kind("sqrt.rn", None),
  Ops.TRUNC: lambda ctx, d, a, dt: [f"cvt.rzi.{ptype(dt)}.{ptype(dt)} {d}, {a};"]}

# *** the rules ***

def _space(buf:UOp) -> str: return "global" if buf.op is Ops.PARAM else "shared" if buf.arg.addrspace is AddrSpace.LOCAL else "local"

def _special(ctx:PTXRenderer, x:UOp) -> list[str]:
  kind, dim = workitem(x.arg)
  xyz = "xyz"[dim]
  d = ctx[x] if reg_kind(x.dtype) == "r" else ctx.tmp("r")
  if kind == "idx":
    g, n = ctx.tmp("r"), ctx.tmp("r")
    lines = [f"mov.u32 {g}, %ctaid.{xyz};", f"mov.u32 {n}, %ntid.{xyz};", f"mov.u32 {d}, %tid.{xyz};", f"mad.lo.s32 {d}, {g}, {n}, {d};"]
  else: lines = [f"mov.u32 {d}, %{'ctaid' if kind == 'gidx' else 'tid'}.{xyz};"]
  return lines + ([] if d == ctx[x] else [f"cvt.u64.u32 {ctx[x]}, {d};"])

def _index(ctx:PTXRenderer, x:UOp, buf:UOp, i:UOp) -> list[str]|None:
  if buf in ctx.reg_elems: return []  # a register: its name was given
  size, d = _size(buf.dtype), ctx[x]
  if _space(buf) == "global":
    if i.dtype.itemsize == 8: return [f"mul.lo.s64 {d}, {ctx[i]}, {size};", f"add.s64 {d}, {ctx[buf]}, {d};"]
    return [f"mul.wide.{ptype(i.dtype)} {d}, {ctx[i]}, {size};", f"add.s64 {d}, {ctx[buf]}, {d};"]
  # shared and local memory have 32-bit addresses
  if i.dtype.itemsize != 8: return [f"mad.lo.s32 {d}, {ctx[i]}, {size}, {ctx[buf]};"]
  return [f"cvt.u32.u64 {d}, {ctx[i]};", f"mad.lo.s32 {d}, {d}, {size}, {ctx[buf]};"]

def _size(dt:DType) -> int: return 1 if dt is dtypes.bool else dt.itemsize

def _load(ctx:PTXRenderer, x:UOp) -> list[str]:
  idx, d = x.src[0], ctx[x]
  if idx.src[0] in ctx.reg_elems: lines = [f"mov.{_DECL[reg_kind(x.dtype)]} {d}, {ctx[idx]};"]
  else:
    sp, mt = _space(idx.src[0]), _MEM[x.dtype]
    if x.dtype is dtypes.bool:
      t = ctx.tmp("r")
      lines = [f"ld.{sp}.u8 {t}, [{ctx[idx]}];", f"setp.ne.u32 {d}, {t}, 0;"]
    elif x.dtype in HALF:
      h = ctx.tmp("h")
      lines = [f"ld.{sp}.b16 {h}, [{ctx[idx]}];", *ctx.from16(d, h, x.dtype)]
    else: lines = [f"ld.{sp}.{mt} {d}, [{ctx[idx]}];"]
  if len(x.src) == 1: return lines
  # gated: the alternative first, then the load only where the gate holds (memory is not touched elsewhere)
  return [f"mov.{_DECL[reg_kind(x.dtype)]} {d}, {ctx[x.src[1]]};"] + [f"@{ctx[x.src[2]]} {ln}" for ln in lines]

def _store(ctx:PTXRenderer, idx:UOp, val:UOp) -> list[str]:
  v, buf = ctx[val], idx.src[0]
  if buf in ctx.reg_elems: return [f"mov.{_DECL[reg_kind(val.dtype)]} {ctx[idx]}, {v};"]
  sp = _space(buf)
  if val.dtype is dtypes.bool:
    t = ctx.tmp("r")
    return [f"selp.u32 {t}, 1, 0, {v};", f"st.{sp}.u8 [{ctx[idx]}], {t};"]
  if val.dtype in HALF:
    h = ctx.tmp("h")
    return [f"cvt.rn.{'f16' if val.dtype is dtypes.float16 else 'bf16'}.f32 {h}, {v};", f"st.{sp}.b16 [{ctx[idx]}], {h};"]
  return [f"st.{sp}.{_MEM[val.dtype]} [{ctx[idx]}], {v};"]

def _range(ctx:PTXRenderer, x:UOp) -> list[str]:
  lbl = f"$L{ctx.pos[x]}"
  if x.dtype is dtypes.void: return [f"{lbl}:"]
  c, t = ctx.tmp("p"), ptype(x.dtype)
  return [f"mov.{t} {ctx[x]}, 0;", f"{lbl}:", f"setp.lt.{t} {c}, {ctx[x]}, {ctx[x.src[0]]};", f"@!{c} bra {lbl}_exit;"]

def _end(ctx:PTXRenderer, x:UOp) -> list[str]:
  rng, cond = loop_of(x)
  lbl = f"$L{ctx.pos[rng]}"
  if cond is not None: return [f"@{ctx[cond]} bra {lbl};"]  # do-while: back while the condition holds
  return [f"add.{ptype(rng.dtype)} {ctx[rng]}, {ctx[rng]}, 1;", f"bra {lbl};", f"{lbl}_exit:"]

def _alu(ctx:PTXRenderer, x:UOp) -> list[str]:
  if (fn := code_for_op.get(x.op)) is None or (lines := fn(ctx, ctx[x], *[ctx[s] for s in x.src], dt=x.src[-1].dtype)) is None:
    raise RuntimeError(f"PTXRenderer cannot render {x.op} on {x.src[-1].dtype} operands: lower it first")
  if x.dtype in HALF and x.op not in (Ops.NEG, Ops.MAX, Ops.WHERE, Ops.TRUNC): lines += ctx.round16(ctx[x], x.dtype)
  if x.dtype in _NARROW: lines.append(f"cvt.{_NARROW[x.dtype]}.{ptype(x.dtype)} {ctx[x]}, {ctx[x]};")  # wrap to the dtype's width
  return lines

def _wmma(ctx:PTXRenderer, x:UOp) -> list[str]:
  """the WMMA nodes with the same sources are one mma: the first emits it into the registers of all (PTX ISA: fragment elements low to
  high, two 16-bit ones per .b32 register, the lower index in the low half)"""
  tc, regs = x.arg[0], ctx.wmma_regs[x.src]
  if regs[0] is not True: return []
  na, nb, _ = tc.elements
  def pack(vals:tuple[UOp, ...]) -> list[str]:
    lines = []
    for lo, hi in zip(vals[::2], vals[1::2]):
      lines.append(f"cvt.rn.{'bf16x2' if tc.dtype_in is dtypes.bfloat16 else 'f16x2'}.f32 {(r := ctx.tmp('r'))}, {ctx[hi]}, {ctx[lo]};")
      ctx.packed.append(r)
    return lines
  ctx.packed = []
  lines = pack(x.src[:na]) + pack(x.src[na:na+nb])
  a, b, c = ctx.packed[:na//2], ctx.packed[na//2:], [ctx[s] for s in x.src[na+nb:]]
  regs[0] = False
  return lines + [f"{tc.name} {{{', '.join(regs[1])}}}, {{{', '.join(a)}}}, {{{', '.join(b)}}}, {{{', '.join(c)}}};"]

base_rewrite = PatternMatcher([
  (UPat(Ops.WMMA, name="x"), _wmma),
  (UPat(Ops.PARAM, name="x"), lambda ctx, x: [f"ld.param.u64 {ctx[x]}, [data{x.arg.slot}];", f"cvta.to.global.u64 {ctx[x]}, {ctx[x]};"]),
  # a variable is an s32 parameter (every runtime passes int32), sign-extended for 64-bit index math
  (UPat(Ops.DEFINE_VAR, name="x"), lambda ctx, x: [f"ld.param.s32 {ctx[x]}, [{ctx.var_name(x)}];"] if reg_kind(x.dtype) == "r" else
   [f"ld.param.s32 {(t := ctx.tmp('r'))}, [{ctx.var_name(x)}];", f"cvt.s64.s32 {ctx[x]}, {t};"]),
  (UPat(Ops.CONST, name="x"), lambda ctx, x: [f"{'setp.ne.s32' if x.dtype is dtypes.bool else 'mov.b' + _DECL[reg_kind(x.dtype)][1:]} "
                                              f"{ctx[x]}, {const_bits(x.arg, x.dtype)}{', 0' if x.dtype is dtypes.bool else ''};"]),
  (UPat(Ops.SPECIAL, name="x"), _special),
  # memory: a REG buffer indexed by constants only is registers; others are .shared/.local arrays whose 32-bit address is the BUFFER
  (UPat(Ops.BUFFER, name="x"), lambda ctx, x: [] if x in ctx.reg_elems else [f"mov.u32 {ctx[x]}, {ctx.array(x)};"]),
  (UPat(Ops.INDEX, src=(UPat.var("buf"), UPat.var("i")), name="x"), _index),
  (UPat(Ops.LOAD, name="x"), _load),
  (UPat(Ops.STORE, src=(UPat.var("idx"), UPat.var("val"))), _store),
  (UPat(Ops.RANGE, name="x"), _range),
  (UPat(Ops.END, name="x"), _end),
  (UPat(Ops.IF, name="x"), lambda ctx, x: [f"@!{ctx[x.src[0]]} bra $IF{ctx.pos[x]};"]),
  (UPat(Ops.ENDIF, src=(UPat.var("i"),)), lambda ctx, i: [f"$IF{ctx.pos[i]}:"]),
  (UPat(Ops.BARRIER), lambda: ["bar.sync 0;"]),
  (UPat(Ops.CAST, src=(UPat.var("a"),), name="x"), lambda ctx, x, a: ctx.render_cast(ctx[x], ctx[a], a.dtype, x.dtype)),
  (UPat(Ops.BITCAST, src=(UPat.var("a"),), name="x"), lambda ctx, x, a: ctx.render_bitcast(ctx[x], ctx[a], a.dtype, x.dtype)),
  (UPat(GroupOp.ALU, name="x"), _alu),
])

class PTXRenderer(NVArch, Renderer):
  device = "CUDA"
  has_local = has_shared = True
  global_max, local_max = (2**31-1, 65535, 65535), (1024, 1024, 64)
  code_for_op = code_for_op
  string_rewrite = base_rewrite
  # the PTX ISA version an architecture needs (PTX ISA, "Release Notes"); older ones take 7.0, the first with sm_80 and bfloat16
  isa_for_sm = {86: "7.1", 87: "7.4", 89: "7.8", 90: "7.8", 100: "8.6", 101: "8.6", 120: "8.7"}
  @property
  def tensor_cores(self) -> tuple:  # mma.m16n8k16 with float16 and bfloat16 inputs: sm_80 and later
    return MMA_M16N8K16 if self.sm >= 80 else ()

  # *** registers and helpers the rules use ***
  def __getitem__(self, u:UOp) -> str: return self.r[u]
  def tmp(self, kind:str) -> str:
    self.count[kind] = self.count.get(kind, 0) + 1
    return f"%{kind}{self.count[kind]-1}"
  def var_name(self, v:UOp) -> str: return "var_" + re.sub(r"\W", "_", v.arg.name)
  def array(self, buf:UOp) -> str:
    """declares the .shared/.local array of a BUFFER, returns its name"""
    name = f"{'smem' if _space(buf) == 'shared' else 'lmem'}{len(self.arrays)}"
    self.arrays.append(f".{_space(buf)} .align 16 .b8 {name}[{prod(buf.arg.shape) * _size(buf.dtype)}];")
    return name
  def from16(self, d:str, h:str, dt:DType) -> list[str]:
    """a float16/bfloat16 in 16 bits -> its float32 value (exact)"""
    if dt is dtypes.float16: return [f"cvt.f32.f16 {d}, {h};"]
    t = self.tmp("r")
    return [f"cvt.u32.u16 {t}, {h};", f"shl.b32 {t}, {t}, 16;", f"mov.b32 {d}, {t};"]
  def round16(self, d:str, dt:DType) -> list[str]:
    h = self.tmp("h")
    return [f"cvt.rn.{'f16' if dt is dtypes.float16 else 'bf16'}.f32 {h}, {d};", *self.from16(d, h, dt)]

  def render_cast(self, d:str, a:str, src:DType, dst:DType) -> list[str]:
    if dst is dtypes.bool:
      if dtypes.is_float(src): return [f"setp.neu.{ptype(src)} {d}, {a}, {const_bits(0.0, src)};"]
      return [f"setp.ne.{ptype(src)} {d}, {a}, 0;"] if src is not dtypes.bool else [f"mov.pred {d}, {a};"]
    if src is dtypes.bool: return [f"selp.{ptype(dst)} {d}, {const_bits(1, dst)}, {const_bits(0, dst)}, {a};"]
    if dst in HALF:
      if src in (dtypes.float32, dtypes.float16, dtypes.bfloat16) or (src is dtypes.float64 and dst is dtypes.float16) or \
         (dtypes.is_int(src) and dst is dtypes.float16):  # one rounding, straight to 16 bits
        h = self.tmp("h")
        return [f"cvt.rn.{'f16' if dst is dtypes.float16 else 'bf16'}.{ptype(src)} {h}, {a};", *self.from16(d, h, dst)]
      return [f"cvt.rn.f32.{ptype(src)} {d}, {a};", *self.round16(d, dst)]  # through float32 (bfloat16 has no other conversions)
    if dtypes.is_float(dst):
      if ptype(src) == ptype(dst): return [f"mov.{ptype(dst)} {d}, {a};"]
      widen = ptype(src) == "f32" and dst is dtypes.float64
      return [f"cvt{'' if widen else '.rn'}.{ptype(dst)}.{ptype(src)} {d}, {a};"]
    if dtypes.is_float(src):  # toward zero like C; narrow ints through 32 bits, so out-of-range values wrap as on the CPU
      if dst not in _NARROW: return [f"cvt.rzi.{ptype(dst)}.{ptype(src)} {d}, {a};"]
      return [f"cvt.rzi.{ptype(dst)}.{ptype(src)} {d}, {a};", f"cvt.{_NARROW[dst]}.{ptype(dst)} {d}, {d};"]
    if dst in _NARROW: return [f"cvt.{_NARROW[dst]}.{ptype(src)} {d}, {a};"]  # truncate, then extend by the new signedness
    if reg_kind(src) == reg_kind(dst): return [f"mov.b{'64' if dst.itemsize == 8 else '32'} {d}, {a};"]
    return [f"cvt.{ptype(dst)}.{ptype(src)} {d}, {a};"]

  def render_bitcast(self, d:str, a:str, src:DType, dst:DType) -> list[str]:
    if src in HALF or dst in HALF:
      h = self.tmp("h")  # the 16 bits; from a float16/bfloat16 value the rounding is exact
      lines = [f"cvt.rn.{'f16' if src is dtypes.float16 else 'bf16'}.f32 {h}, {a};" if src in HALF else f"cvt.u16.{ptype(src)} {h}, {a};"]
      if dst in HALF: return lines + self.from16(d, h, dst)
      return lines + [f"cvt.{ptype(dst)}.{'s16' if dst is dtypes.int16 else 'u16'} {d}, {h};"]
    if dtypes.is_int(src) and dtypes.is_int(dst) or dtypes.bool in (src, dst): return self.render_cast(d, a, src, dst)
    return [f"mov.b{8 * dst.itemsize} {d}, {a};"]

  def render(self, name:str, uops:list[UOp]) -> str:
    self.pos = {u: i for i, u in enumerate(uops)}
    self.r: dict[UOp, str] = {}
    self.count: dict[str, int] = {}
    self.arrays: list[str] = []
    # REG buffers indexed only by constants become one register per element
    indexes: dict[UOp, list[UOp]] = {}
    for u in uops:
      if u.op is Ops.INDEX and u.src[0].op is Ops.BUFFER and u.src[0].arg.addrspace is AddrSpace.REG: indexes.setdefault(u.src[0], []).append(u)
    self.reg_elems: dict[UOp, list[str]] = {b: [self.tmp(reg_kind(b.dtype)) for _ in range(prod(b.arg.shape))] for b, ix in indexes.items()
                                            if all(i.src[1].op is Ops.CONST for i in ix)}
    self.wmma_regs: dict[tuple, list] = {}
    body: list[str] = []
    for u in uops:
      if u.op in SKIP: continue
      if u.op is Ops.INDEX and u.src[0] in self.reg_elems:
        if not 0 <= (i := u.src[1].arg) < len(elems := self.reg_elems[u.src[0]]):
          raise RuntimeError(f"constant index {i} is outside a REG buffer of {len(elems)} elements")
        self.r[u] = self.reg_elems[u.src[0]][i]
      elif u.op is Ops.INDEX: self.r[u] = self.tmp("rd" if _space(u.src[0]) == "global" else "r")
      elif u.op in (Ops.PARAM,): self.r[u] = self.tmp("rd")
      elif u.op is Ops.WMMA:  # [not yet emitted, the D registers of the instruction]
        grp = self.wmma_regs.setdefault(u.src, [True, [self.tmp("f") for _ in range(u.arg[0].elements[2])]])
        self.r[u] = grp[1][u.arg[1]]
      elif u.op is Ops.BUFFER: self.r[u] = "" if u in self.reg_elems else self.tmp("r")
      elif u.op in (Ops.STORE, Ops.END, Ops.IF, Ops.ENDIF, Ops.BARRIER) or (u.op is Ops.RANGE and u.dtype is dtypes.void): self.r[u] = ""
      else: self.r[u] = self.tmp(reg_kind(u.dtype))
      if (lines := self.string_rewrite.rewrite(u, ctx=self)) is None: raise RuntimeError(f"PTXRenderer cannot render {u.op} in a linear program")
      body += [ln if ln.endswith(":") else f"\t{ln}" for ln in lines]
    params, variables = param_order(uops)
    args = [f"\t.param .u64 data{p.arg.slot}" for p in params] + [f"\t.param .s32 {self.var_name(v)}" for v in variables]
    decls = [f"\t.reg .{_DECL[k]} %{k}<{n}>;" for k, n in self.count.items()] + [f"\t{a}" for a in self.arrays]
    return (f".version {self.isa_for_sm.get(self.sm, '7.0')}\n.target {self.arch}\n.address_size 64\n\n.visible .entry {name}(\n" +
            ",\n".join(args) + "\n)\n{\n" + "\n".join(decls + body) + "\n\tret;\n}\n")
