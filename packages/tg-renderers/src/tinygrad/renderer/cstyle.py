"""C-family source from a linear program. CStyleLanguage is the C every dialect shares: `base_rewrite`, a string-rewrite table keyed
by op whose rules return a node's C text, plus tables a dialect overrides (types, op spellings, prefixes, work items). A dialect adds
rules in front (`string_rewrite = PatternMatcher([...]) + base_rewrite`); render() only names values and lays out lines.
ClangRenderer is plain C for the CPU."""
from __future__ import annotations
import math
from collections import defaultdict
from typing import Callable
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher
from tinygrad.dtype import DType, dtypes, AddrSpace
from tinygrad.helpers import prod, strip_parens
from tinygrad.renderer import Renderer
from tinygrad.renderer.linear import SKIP, loop_of, param_order
from tinygrad.codegen.gpudims import workitem
from tinygrad.renderer.c_emulation import EMULATION
from tinygrad.renderer.fp8_formats import FP8
from tinygrad.renderer.c_vectors import Pack, plan_lanes, vector_dtypes
from tinygrad.renderer.host_cpu import host_has_fma, host_simd_registers

def _fmax(a, b, dt): return f"(({a}!={a}||{a}>{b})?{a}:{b})" if dtypes.is_float(dt) else f"(({a}>{b})?{a}:{b})"  # a NaN wins, as in numpy
def _math(name:str) -> Callable:  # float versions end in f; half/bfloat16 are held as float
  return lambda *a, dt: f"{name}{'' if dt is dtypes.float64 else 'f'}({', '.join(a)})"

def _buffer(ctx:CStyleLanguage, x:UOp) -> str:
  if x.arg.addrspace not in (AddrSpace.REG, AddrSpace.LOCAL): raise RuntimeError(f"a linear program has no {x.arg.addrspace} BUFFER")
  return f"{ctx.smem_prefix if x.arg.addrspace is AddrSpace.LOCAL else ''}{ctx.value_type(x.dtype)} {ctx[x]}[{prod(x.arg.shape)}];"

def _end(ctx:CStyleLanguage, x:UOp) -> str:
  cond = loop_of(x)[1]
  return "}" if cond is None else f"if (!({strip_parens(ctx[cond])})) break;\n}}"

# node -> its C text: an expression for values (render() decides whether to inline it), a statement otherwise. ctx is the renderer;
# ctx[x] is x's C text. Names of declared variables (ctx[x] of a RANGE, BUFFER, SPECIAL) are given before the rule runs.
base_rewrite = PatternMatcher([
  (UPat(Ops.PARAM, name="x"), lambda ctx, x: f"data{x.arg.slot}"),
  (UPat(Ops.DEFINE_VAR, name="x"), lambda ctx, x: x.arg.name),
  (UPat(Ops.CONST, name="x"), lambda ctx, x: ctx.render_const(x.arg, x.dtype)),
  (UPat(Ops.SPECIAL, name="x"), lambda ctx, x: f"{ctx.ctype(x.dtype)} {ctx[x]} = {ctx.render_workitem(x.arg)}; /* {ctx[x.src[0]]} */"),
  # memory: REG/LOCAL arrays hold values as computed, global buffers of an emulated dtype hold its 16 bits
  (UPat(Ops.BUFFER, name="x"), _buffer),
  (UPat(Ops.INDEX, src=(UPat.var("buf"), UPat.var("i"))), lambda ctx, buf, i: f"{ctx[buf]}[{strip_parens(ctx[i])}]"),
  (UPat(Ops.LOAD, src=(UPat.var("idx"),), name="x"), lambda ctx, x, idx: ctx.render_load(x.dtype, idx)),
  # a gated load: the conditional only reads memory when the gate is true
  (UPat(Ops.LOAD, src=(UPat.var("idx"), UPat.var("alt"), UPat.var("gate")), name="x"),
   lambda ctx, x, idx, alt, gate: f"({ctx[gate]}?{ctx.render_load(x.dtype, idx)}:{ctx[alt]})"),
  (UPat(Ops.STORE, src=(UPat.var("idx"), UPat.var("val"))), lambda ctx, idx, val: f"{ctx[idx]} = {strip_parens(ctx.render_store(idx, val))};"),
  # control flow: a bound-less loop is a for (;;) left by its do-while condition
  (UPat(Ops.RANGE, dtype=dtypes.void), lambda: "for (;;) {"),
  (UPat(Ops.RANGE, name="x"), lambda ctx, x: f"for ({ctx.ctype(x.dtype)} {ctx[x]} = 0; {ctx[x]} < {strip_parens(ctx[x.src[0]])}; {ctx[x]}++) {{"),
  (UPat(Ops.END, name="x"), _end),
  (UPat(Ops.IF, name="x"), lambda ctx, x: f"if ({strip_parens(ctx[x.src[0]])}) {{"),
  (UPat(Ops.ENDIF), lambda: "}"),
  (UPat(Ops.BARRIER), lambda ctx: ctx.barrier),
  # values
  (UPat(Ops.CAST, src=(UPat.var("a"),), name="x"), lambda ctx, x, a: ctx.render_cast(ctx[a], a.dtype, x.dtype)),
  (UPat(Ops.BITCAST, src=(UPat.var("a"),), name="x"), lambda ctx, x, a: ctx.render_bitcast(ctx[a], a.dtype, x.dtype)),
  (UPat(GroupOp.ALU, name="x"), lambda ctx, x: ctx.render_alu(x.op, [ctx[s] for s in x.src], x)),
])

_EXPRESSIONS = {Ops.PARAM, Ops.DEFINE_VAR, Ops.CONST, Ops.INDEX}  # always inlined into their users
# values: named in a variable of this prefix, or inlined (see _inlined)
_VALUES = {Ops.LOAD: "val", Ops.CAST: "cast", Ops.BITCAST: "cast", **dict.fromkeys(GroupOp.ALU, "alu")}

def _scopes(name:str, uops:list[UOp]) -> tuple[dict[UOp, UOp|None], dict[UOp, list[UOp]]]:
  """each node's innermost open RANGE/IF (END/ENDIF are inside what they close), and each node's users"""
  users: dict[UOp, list[UOp]] = defaultdict(list)
  scope: dict[UOp, UOp|None] = {}
  opened: list[UOp] = []
  for u in uops:
    for s in u.src: users[s].append(u)
    scope[u] = opened[-1] if opened else None
    if u.op in (Ops.END, Ops.ENDIF) and not opened: raise RuntimeError(f"{u.op} without an open RANGE/IF in kernel {name}")
    if u.op in (Ops.END, Ops.ENDIF): opened.pop()
    if u.op in (Ops.RANGE, Ops.IF): opened.append(u)
  if opened: raise RuntimeError(f"{len(opened)} RANGE/IF left open at the end of kernel {name}")
  return scope, users

_BITS = {1: dtypes.uint8, 2: dtypes.uint16}  # an emulated dtype's memory form: the unsigned int of its width

_WRAPPING = frozenset({Ops.ADD, Ops.SUB, Ops.MUL, Ops.NEG})
def _address_math(uops:list[UOp], users:dict[UOp, list[UOp]]) -> set[UOp]:
  """the int values that only index buffers (a buffer's size fits an int, so they never overflow): their ops keep C's signed arithmetic,
  which lets the compiler widen them to addresses; ops on values (stored, compared) wrap explicitly where signed overflow is undefined"""
  ret: set[UOp] = set()
  for u in reversed(uops):
    if dtypes.is_int(u.dtype) and users[u] and all((x.op is Ops.INDEX and x.src[0] is not u) or x in ret for x in users[u]): ret.add(u)
  return ret

_WIDE_SIGNED = {dtypes.int32: dtypes.uint32, dtypes.int64: dtypes.uint64}  # narrower ints are computed as int and wrapped back already

class CStyleLanguage(Renderer):
  kernel_prefix: str = ""       # before `void name(`, e.g. "__kernel " (OpenCL), 'extern "C" __global__ ' (CUDA)
  buffer_prefix: str = ""       # before a global buffer's element type, e.g. "__global "
  buffer_suffix: str = ""       # after its `*`, e.g. " restrict"
  smem_prefix: str = ""         # before a LOCAL (work group shared) array, e.g. "__local "
  barrier: str = ""             # the work group barrier statement (none: one work item runs the group)
  code_for_workitem: dict[str, Callable[[int], str]] = {}  # work-item kind (gidx, lidx, idx: codegen.gpudims.workitem) -> C of dim d
  string_rewrite: PatternMatcher = base_rewrite
  vector_lanes = False          # write a register tile's lanes as GCC/clang vectors (renderer/c_vectors.py)
  # the compiler is told that signed ints wrap (-fwrapv); elsewhere (OpenCL C, CUDA C) signed overflow is undefined and the compiler folds
  # (x+1) > x to true, so a 32/64-bit signed add, subtract, multiply or negate is computed on the unsigned type and converted back
  signed_wraps = False
  addresses: frozenset|set = frozenset()  # this kernel's index math (render: _address_math)
  infinity, nan = "INFINITY", "NAN"
  type_map: dict[DType, str] = {dtypes.bool: "bool", dtypes.int8: "char", dtypes.uint8: "unsigned char", dtypes.int16: "short",
    dtypes.uint16: "unsigned short", dtypes.int32: "int", dtypes.uint32: "unsigned int", dtypes.int64: "long", dtypes.uint64: "unsigned long",
    dtypes.float16: "half", dtypes.bfloat16: "bfloat16", dtypes.float32: "float", dtypes.float64: "double"}
  int_suffix: dict[DType, str] = {dtypes.uint32: "u", dtypes.int64: "l", dtypes.uint64: "ul"}
  emulated: dict[DType, tuple[str, str, str]] = {}  # dtype held as float -> (load fn from its bits, store fn to its bits, round fn)
  # operands are rendered C expressions; dt is the operands' dtype (the values', for WHERE)
  code_for_op: dict[Ops, Callable[..., str]] = {
    # C adds two _Bool as ints (1 + 1 is 2, read before a store narrows it back): a bool sum is an or
    Ops.ADD: lambda a, b, dt: f"({a}|{b})" if dt is dtypes.bool else f"({a}+{b})", Ops.SUB: lambda a, b, dt: f"({a}-{b})", Ops.MUL: lambda a, b, dt: f"({a}*{b})",
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
  def storage_type(self, dt:DType) -> str: return self.ctype(_BITS[dt.itemsize]) if dt in self.emulated else self.ctype(dt)
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
    if dst is dtypes.bool: return f"(({x}) != 0)"  # a byte other than 0 and 1 is True, as LLVM and the emulator read it: a bool holds 0 or 1
    if src in self.emulated: x, src = f"{self.emulated[src][1]}({x})", _BITS[src.itemsize]  # its 16 or 8 bits
    if dst in self.emulated: return f"{self.emulated[dst][0]}(({self.storage_type(dst)})({x}))"
    if dtypes.is_int(src) and dtypes.is_int(dst): return f"({self.ctype(dst)})({x})"  # between ints of one width a conversion keeps the bits
    return f"((union {{ {self.ctype(src)} a; {self.ctype(dst)} b; }}){{.a = {x}}}).b"  # C reads a union through another member as a bitcast

  def render_alu(self, op:Ops, srcs:list[str], u:UOp) -> str:
    if (fn := self.code_for_op.get(op)) is None or (op in self.int_ops and dtypes.is_float(u.src[0].dtype)):
      raise RuntimeError(f"{type(self).__name__} cannot render {op} on {u.src[0].dtype} operands: lower it first")
    if op in _WRAPPING and (dt := u.dtype) in _WIDE_SIGNED and not self.signed_wraps and u not in self.addresses:
      unsigned = self.ctype(_WIDE_SIGNED[dt])
      return f"(({self.ctype(dt)}){fn(*[f'(({unsigned}){x})' for x in srcs], dt=_WIDE_SIGNED[dt])})"
    ret = fn(*srcs, dt=u.src[-1].dtype)
    if u.dtype in self.emulated and op not in self.exact_ops: return f"{self.emulated[u.dtype][2]}({strip_parens(ret)})"
    # C computes narrow ints as int: wrap back to the dtype so later comparisons and shifts see the same bits as other targets
    if u.dtype in dtypes.ints and u.dtype.itemsize < 4: return f"({self.ctype(u.dtype)}){ret}"
    return ret

  def render_kernel(self, name:str, body:list[str], params:list[UOp], variables:list[UOp], uops:list[UOp]) -> str:
    # every runtime passes a variable as int32; C widens it where the kernel computes in 64 bits
    args = [f"{self.buffer_prefix}{self.storage_type(p.dtype)}*{self.buffer_suffix} data{p.arg.slot}" for p in params] + \
           [f"const {self.ctype(dtypes.int32)} {v.arg.name}" for v in variables] + \
           (["const int core_id"] if self.has_threads and any(u.op is Ops.SPECIAL for u in uops) else [])
    prelude = EMULATION if any(u.dtype in self.emulated for u in uops) else ""
    return prelude + f"{self.kernel_prefix}void {name}({', '.join(args)}) {{\n" + "\n".join(body) + "\n}\n"

  def __getitem__(self, u:UOp) -> str: return self.r[u]  # a rule's view of the C text of the nodes before it
  def render_workitem(self, name:str) -> str:
    kind, dim = workitem(name)
    if (fn := self.code_for_workitem.get(kind)) is None: raise RuntimeError(f"{type(self).__name__} has no work items (SPECIAL {name})")
    return fn(dim)
  def render_load(self, dt:DType, idx:UOp) -> str:
    return self[idx] if dt not in self.emulated or self._is_reg(idx) else f"{self.emulated[dt][0]}({self[idx]})"
  def render_store(self, idx:UOp, val:UOp) -> str:
    return self[val] if val.dtype not in self.emulated or self._is_reg(idx) else f"{self.emulated[val.dtype][1]}({self[val]})"

  def render(self, name:str, uops:list[UOp]) -> str:
    scope, users = _scopes(name, uops)
    self.addresses = set() if self.signed_wraps else _address_math(uops, users)
    self.r: dict[UOp, str] = {}
    names: dict[str, int] = defaultdict(int)
    def fresh(prefix:str, numbered=True) -> str:
      names[prefix] += 1
      return f"{prefix}{names[prefix]-1}" if numbered else prefix if names[prefix] == 1 else f"{prefix}_{names[prefix]-1}"
    body: list[str] = []
    depth = 1
    def emit(text:str):  # lines indented by the braces that open and close blocks
      nonlocal depth
      for line in text.split("\n") if text else []:
        depth -= line.startswith("}")
        body.append("  " * depth + line)
        depth += line.endswith("{")
    plan = plan_lanes(uops, scope, vector_dtypes(self.emulated)) if self.vector_lanes else None
    packed = plan.pack_of if plan is not None else {}
    computed_at = {p.pos: p for p, _ in packed.values()}
    self.vector_types: dict[str, str] = {}
    for pos, u in enumerate(uops):
      if u.op in SKIP: continue
      if u.op is Ops.SPECIAL: self.r[u] = u.arg
      elif u.op is Ops.RANGE and u.dtype is not dtypes.void: self.r[u] = fresh(f"ridx{u.arg[0]}", numbered=False)
      elif u.op is Ops.BUFFER and plan is not None and (g := plan.group_of.get(u)) is not None:
        if not g[0].name:  # the group's vector array is declared where its first buffer was
          g[0].name = fresh("vreg")
          emit(f"{self.vector_type(u.dtype, len(g[0].buffers))} {g[0].name}[{prod(u.arg.shape)}];")
        self.r[u] = g[0].name
        continue
      elif u.op is Ops.BUFFER: self.r[u] = fresh("reg" if u.arg.addrspace is AddrSpace.REG else "smem")
      if u not in packed:
        if (text := self.string_rewrite.rewrite(u, ctx=self)) is None:
          raise RuntimeError(f"{type(self).__name__} cannot render {u.op} in a linear program")
        if u.op is Ops.INDEX and plan is not None and (g := plan.group_of.get(u.src[0])) is not None: text += f"[{g[1]}]"  # its lane
        if u.op in _EXPRESSIONS or (u.op in _VALUES and self._inlined(u, users[u], scope)): self.r[u] = text
        elif u.op in _VALUES:
          self.r[u] = fresh(_VALUES[u.op])
          emit(f"{self.value_type(u.dtype)} {self.r[u]} = {strip_parens(text)};")
        else: emit(text)
      if (p := computed_at.get(pos)) is not None:
        emit(self.render_pack(p, fresh))
        for k, lane in enumerate(p.lanes):
          if lane.op is not Ops.STORE: self.r[lane] = f"{p.name}[{k}]"  # what a scalar node after it reads
    return "".join(f"{t}\n" for t in self.vector_types.values()) + self.render_kernel(name, body, *param_order(uops), uops)

  def vector_type(self, dt:DType, lanes:int) -> str:
    name = f"tg_{self.ctype(dt).replace(' ', '_')}{lanes}"
    self.vector_types[name] = f"typedef {self.ctype(dt)} {name} __attribute__((vector_size({lanes * dt.itemsize})));"
    return name

  def render_pack(self, p:Pack, fresh:Callable[[str], str]) -> str:
    """the C of a pack of lanes (renderer/c_vectors.py): a statement, naming its vector for values"""
    n, u0 = len(p.lanes), p.lanes[0]
    def vector(o:Pack|tuple[UOp, ...]) -> str:
      return o.name if isinstance(o, Pack) else f"(({self.vector_type(o[0].dtype, n)}){{{', '.join(strip_parens(self[s]) for s in o)}}})"
    def lane(o:Pack|tuple[UOp, ...], k:int) -> str: return f"{o.name}[{k}]" if isinstance(o, Pack) else self[o[k]]
    idx = u0.src[0]
    slot = f"{p.group.name}[{strip_parens(self[idx.src[1]])}]" if p.group is not None else ""  # a REG group's vector at the index
    if p.kind == "store": return f"__builtin_memcpy(&{self[idx]}, &{vector(p.operands[0])}, {n * u0.src[1].dtype.itemsize});"
    if p.kind == "regstore": return f"{slot} = {strip_parens(vector(p.operands[0]))};"
    p.name, vt = fresh("vec"), self.vector_type(u0.dtype, n)
    if p.kind == "load": return f"{vt} {p.name}; __builtin_memcpy(&{p.name}, &{self[idx]}, {n * u0.dtype.itemsize});"
    if p.kind == "regload": return f"{vt} {p.name} = {slot};"
    if p.native and u0.op is Ops.CAST: return f"{vt} {p.name} = __builtin_convertvector({vector(p.operands[0])}, {vt});"
    if p.native: return f"{vt} {p.name} = {strip_parens(self.code_for_op[u0.op](*map(vector, p.operands), dt=u0.src[-1].dtype))};"
    def scalar(k:int) -> str:
      texts, u = [lane(o, k) for o in p.operands], p.lanes[k]
      if u.op is Ops.CAST: return self.render_cast(texts[0], u.src[0].dtype, u.dtype)
      if u.op is Ops.BITCAST: return self.render_bitcast(texts[0], u.src[0].dtype, u.dtype)
      return self.render_alu(u.op, texts, u)
    return f"{vt} {p.name} = {{{', '.join(strip_parens(scalar(k)) for k in range(n))}}};"

  def _inlined(self, u:UOp, users:list[UOp], scope:dict[UOp, UOp|None]) -> bool:
    """a value goes inline into its one user in the same scope (never into a deeper loop), unless C repeats that operand; a load never"""
    return u.op is not Ops.LOAD and len(users) == 1 and users[0].op not in self.repeats_operands and scope[users[0]] is scope[u]

  @staticmethod
  def _is_reg(idx:UOp) -> bool: return idx.src[0].op is Ops.BUFFER  # REG/LOCAL arrays hold values as computed, not as stored in 16 bits

# buf[x+c] -> buf[x+c_ll]: an int index x+c is sign-extended to the 64-bit offset as a whole, and -fwrapv leaves the compiler no proof
# that x+1 did not wrap, so it cannot tell that neighbouring lanes' accesses are adjacent and packs none of them into a vector (matmul
# 1536 ran scalar: 21 GFLOP/s). With c 64 bits wide, x is widened first and the lanes differ by their constants
OFFSET = UPat.var("x") + UPat.cvar("c")
clang_rewrite = PatternMatcher([
  (UPat(Ops.INDEX, src=(UPat(Ops.PARAM, name="buf"), OFFSET)),
   lambda ctx, buf, x, c: f"{ctx[buf]}[{ctx[x]}+{ctx.render_const(c.arg, dtypes.int64)}]"),
]) + base_rewrite

class ClangRenderer(CStyleLanguage):
  """C99 with GNU vector extensions for the host CPU (gcc or clang builtins, no headers): one function with restrict pointers, a register
  tile's lanes as vectors (renderer/c_vectors.py), half/bfloat16 emulated"""
  device = "CPU"
  string_rewrite = clang_rewrite
  vector_lanes = True
  signed_wraps = True  # runtime/ops_cpu.py compiles with -fwrapv
  buffer_suffix = " restrict"
  # the thread id is the kernel's last argument (runtime/ops_cpu.py calls it once per thread)
  has_threads, code_for_workitem = True, {"gidx": lambda d: "core_id" if d == 0 else None}
  infinity, nan = "__builtin_inff()", '__builtin_nanf("")'
  # plain char may be unsigned (ARM) and long 32 bits (Windows): spell the widths out
  type_map = {**CStyleLanguage.type_map, dtypes.bool: "_Bool", dtypes.int8: "signed char", dtypes.int64: "long long",
              dtypes.uint64: "unsigned long long"}
  int_suffix = {dtypes.uint32: "u", dtypes.int64: "ll", dtypes.uint64: "ull"}
  emulated = {dtypes.float16: ("__tg_h2f", "__tg_f2h", "__tg_rh"), dtypes.bfloat16: ("__tg_bf2f", "__tg_f2bf", "__tg_rbf"),
              **{dt: (f"__tg_{f.name}2f", f"__tg_f2{f.name}", f"__tg_r{f.name}") for dt, f in FP8.items()}}
  code_for_op = {**CStyleLanguage.code_for_op, Ops.SQRT: _math("__builtin_sqrt"), Ops.EXP2: _math("__builtin_exp2"),
    Ops.LOG2: _math("__builtin_log2"), Ops.SIN: _math("__builtin_sin"), Ops.TRUNC: _math("__builtin_trunc"),
    Ops.MULACC: _math("__builtin_fma")}

  def __init__(self, arch:str|None=None):
    super().__init__(arch)
    # as in the LLVM renderer: fused only where -march=native has the instruction, never a library call per multiply-add
    if not (arch is None and host_has_fma()): self.code_for_op = {k: v for k, v in self.code_for_op.items() if k is not Ops.MULACC}
    if arch is None and (simd := host_simd_registers()) is not None: self.vector_bytes, self.vector_registers = simd
    # clang, with the flags runtime/host_toolchain.py gives it, packs a 24-accumulator tile as LLVM does (matmul 1536 at AVX-512,
    # bench/matmul_tiles.py: 8x2x16 321, 6x4x16 367 GFLOP/s); gcc 12 keeps the default: with the lanes as vectors (vector_lanes) it ran
    # both tiles level (matmul 1536 on one core ~200 GFLOP/s each)
    from tinygrad.runtime.host_toolchain import find_cc, cc_is_clang
    if arch is None and (cc := find_cc()) is not None and cc_is_clang(cc): self.tile_lanes = 384

  def _inlined(self, u:UOp, users:list[UOp], scope:dict[UOp, UOp|None]) -> bool:
    # an offset x+c that only indexes global buffers is never named: each access spells it out (clang_rewrite), a name would go unread
    return super()._inlined(u, users, scope) or \
      (bool(OFFSET.match(u, {})) and all(v.op is Ops.INDEX and v.src[0].op is Ops.PARAM and v.src[1] is u for v in users))
