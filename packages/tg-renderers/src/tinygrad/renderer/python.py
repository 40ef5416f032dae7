"""The python emulator's renderer: a linear program serialised as JSON (op, dtype, sources, arg) rows, plus what every op means in python.
The meaning is exact: ints wrap around, CDIV/CMOD truncate like C, float32/float16/bfloat16 round after every op."""
from __future__ import annotations
import functools, json, math, operator, struct
from typing import Callable
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import DType, dtypes, truncate, AddrSpace, fma
from tinygrad.helpers import cdiv, cmod, prod
from tinygrad.renderer import Renderer
from tinygrad.renderer.linear import SKIP
from tinygrad.renderer.fp8_formats import FP8, decode

def _fdiv(a:float, b:float) -> float:
  if b != 0: return a / b
  return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1.0, b)
def _log2(x:float) -> float: return math.log2(x) if x > 0 else -math.inf if x == 0 else math.nan  # math.log2 raises on 0, <0; nan -> nan
def _exp2(x:float) -> float:
  try: return math.exp2(x)
  except OverflowError: return math.inf
def _trunc(x:float) -> float: return x if math.isinf(x) or math.isnan(x) else math.copysign(float(math.trunc(x)), x)  # keeps -0.0

# op -> (operand dtype -> function of the operand values); results are truncated to the node's dtype by the emulator
def _float_or_int(f:Callable, i:Callable) -> Callable: return lambda dt: f if dtypes.is_float(dt) else i
python_ops: dict[Ops, Callable[[DType], Callable]] = {
  Ops.ADD: lambda dt: operator.add, Ops.SUB: lambda dt: operator.sub, Ops.MUL: lambda dt: operator.mul,
  Ops.NEG: lambda dt: operator.not_ if dt is dtypes.bool else operator.neg,
  Ops.MAX: _float_or_int(lambda a, b: a if a != a or a > b else b, max),  # a NaN wins, as in the C and LLVM targets
  Ops.CMPLT: lambda dt: operator.lt, Ops.CMPNE: lambda dt: operator.ne, Ops.CMPEQ: lambda dt: operator.eq,
  Ops.AND: lambda dt: operator.and_, Ops.OR: lambda dt: operator.or_, Ops.XOR: lambda dt: operator.xor,
  Ops.SHL: lambda dt: operator.lshift, Ops.SHR: lambda dt: operator.rshift,
  Ops.CDIV: lambda dt: cdiv, Ops.CMOD: lambda dt: cmod, Ops.FDIV: lambda dt: _fdiv,
  Ops.WHERE: lambda dt: lambda c, a, b: a if c else b, Ops.MULACC: lambda dt: lambda a, b, c: fma(a, b, c, dt),
  Ops.RECIPROCAL: lambda dt: lambda x: _fdiv(1.0, x), Ops.SQRT: lambda dt: lambda x: math.sqrt(x) if x >= 0 or x != x else math.nan,
  Ops.EXP2: lambda dt: _exp2, Ops.LOG2: lambda dt: _log2, Ops.SIN: lambda dt: lambda x: math.nan if math.isinf(x) else math.sin(x),
  Ops.TRUNC: lambda dt: _trunc}

# *** values <-> bits: float16 and bfloat16 live in memory as 16 bit patterns, fp8 as bytes ***
_UINT = {1: "B", 2: "H", 4: "I", 8: "Q"}
@functools.cache
def _fp8_codes(dt:DType) -> tuple[list[float], dict[float, int]]:
  """(value of each byte, byte of each non-negative finite value or inf) of an fp8 dtype"""
  values = [decode(c, FP8[dt]) for c in range(256)]
  return values, {v: c for c, v in enumerate(values[:128]) if v == v}
def to_bits(x, dt:DType) -> int:
  if dt is dtypes.bfloat16: return struct.unpack("<I", struct.pack("<f", x))[0] >> 16
  if dt in FP8: return FP8[dt].nan_code if x != x else _fp8_codes(dt)[1][abs(x)] | (0x80 if math.copysign(1.0, x) < 0 else 0)
  return struct.unpack(f"<{_UINT[dt.itemsize]}", struct.pack(f"<{dt.fmt}", x))[0]
def from_bits(b:int, dt:DType):
  if dt is dtypes.bfloat16: return struct.unpack("<f", struct.pack("<I", b << 16))[0]
  if dt in FP8: return _fp8_codes(dt)[0][b]
  return struct.unpack(f"<{dt.fmt}", struct.pack(f"<{_UINT[dt.itemsize]}", b))[0]

def _int_to_float(x:int, dt:DType) -> float:
  # float(x) rounds to double first; for float32 that double rounding can be off by one ulp, so round to odd at 53 bits instead
  if dt is not dtypes.float32 or abs(x) < 1 << 53: return truncate[dt](float(x))
  s = abs(x).bit_length() - 53
  return truncate[dt](math.copysign(float((abs(x) >> s) | (abs(x) & ((1 << s) - 1) != 0)) * 2.0**s, x))
def cast_fn(src:DType, dst:DType) -> Callable:
  if dst is dtypes.bool: return bool
  if dtypes.is_int(dst) and dtypes.is_float(src): return lambda x: truncate[dst](int(x)) if math.isfinite(x) else 0  # int() truncates toward 0
  if dtypes.is_int(dst): return lambda x: truncate[dst](int(x))
  return truncate[dst] if dtypes.is_float(src) else lambda x: _int_to_float(int(x), dst)
def bitcast_fn(src:DType, dst:DType) -> Callable: return lambda x: from_bits(to_bits(x, src), dst)

def _arg(u:UOp):
  """the part of a node's arg the emulator needs, as JSON"""
  if u.op is Ops.CONST: return u.arg
  if u.op is Ops.PARAM: return u.arg.slot
  if u.op is Ops.DEFINE_VAR: return u.arg.name
  if u.op is Ops.BUFFER: return (prod(u.arg.shape), u.arg.addrspace is AddrSpace.LOCAL)  # a LOCAL buffer is one per work group
  if u.op is Ops.SPECIAL: return u.arg
  if u.op is Ops.WMMA: return (u.arg[0].name, u.arg[0].threads, u.arg[1])  # (instruction, lanes, element of D)
  return None

# what the emulator runs besides the ALU ops (SKIP: structure it steps over)
_RUNS = SKIP | {Ops.PARAM, Ops.BUFFER, Ops.CONST, Ops.SPECIAL, Ops.DEFINE_VAR, Ops.RANGE, Ops.END, Ops.IF, Ops.ENDIF, Ops.INDEX, Ops.LOAD,
                Ops.STORE, Ops.CAST, Ops.BITCAST, Ops.BARRIER, Ops.WMMA}

_DTYPES = {dtypes.void, dtypes.bool, *dtypes.ints, dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, *FP8}

class PythonRenderer(Renderer):
  """a GPU-shaped target: work items in groups, memory shared by a group and barriers, so GPU kernels are tested on any machine"""
  device = "PYTHON"
  has_local, has_shared = True, True
  global_max, local_max = (2**31-1, 65535, 65535), (1024, 1024, 64)
  code_for_op = python_ops
  def render(self, name:str, uops:list[UOp]) -> str:
    idx = {u: i for i, u in enumerate(uops)}
    for u in uops:
      if u.op not in python_ops and u.op not in _RUNS: raise RuntimeError(f"PythonRenderer cannot render {u.op} (on {u.dtype}): lower it first")
      if u.dtype not in _DTYPES: raise RuntimeError(f"PythonRenderer has no {u.dtype} values (in {u.op})")
    return json.dumps({"name": name, "uops": [(u.op.name, u.dtype.name, [idx.get(s) for s in u.src], _arg(u)) for u in uops]})

# *** tensor cores: what each instruction computes, from its ISA's fragment tables (independent of the renderers' TensorCore
# descriptions, so a description that lays fragments out wrong gives wrong results here) ***

def _mma_m16n8k16(operand:str, lane:int, i:int) -> tuple[int, int]:
  """PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type": (row, col) of element i of a lane"""
  group, tig = lane >> 2, lane % 4
  if operand == "A": return (group if i < 2 or 4 <= i < 6 else group + 8), tig * 2 + (i & 1) + (8 if i >= 4 else 0)
  if operand == "B": return tig * 2 + (i & 1) + (8 if i >= 2 else 0), group
  return (group if i < 2 else group + 8), tig * 2 + (i & 1)

def _wmma_rdna3(operand:str, lane:int, i:int) -> tuple[int, int]:
  """RDNA3 ISA, WMMA in wave32: a lane holds row lane%16 of A, column lane%16 of B (all of K; lanes 16-31 repeat 0-15), and D rows
  2*i + lane//16 of column lane%16"""
  if operand == "A": return lane % 16, i
  if operand == "B": return i, lane % 16
  return 2 * i + lane // 16, lane % 16

# instruction -> (M, N, K, lanes, elements of A, B, C per lane, layout)
WMMA_SEMANTICS = {
  "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32": (16, 8, 16, 32, (8, 4, 4), _mma_m16n8k16),
  "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32": (16, 8, 16, 32, (8, 4, 4), _mma_m16n8k16),
  "v_wmma_f32_16x16x16_f16": (16, 16, 16, 32, (16, 16, 8), _wmma_rdna3),
}

def wmma_warp(name:str, lanes:list[list]) -> list[list]:
  """one tensor-core instruction of a warp: lanes[l] is lane l's sources (its A, B and C fragment elements in order), the result lane
  l's D fragment. The matrices are put together from the fragments where the ISA says each element sits; lanes that hold one element
  twice must agree (RDNA3's repeated halves). D = A @ B + C, exact, rounded to float32 once"""
  if (sem := WMMA_SEMANTICS.get(name)) is None: raise RuntimeError(f"the emulator does not know the tensor core {name!r}")
  m, n, k, threads, counts, at = sem
  if len(lanes) != threads or any(len(x) != sum(counts) for x in lanes):
    raise RuntimeError(f"{name} takes {threads} lanes of {sum(counts)} values, got {len(lanes)} lanes of {sorted({len(x) for x in lanes})}")
  mats: list[dict] = [{}, {}, {}]
  for lane, srcs in enumerate(lanes):
    vals = (srcs[:counts[0]], srcs[counts[0]:counts[0]+counts[1]], srcs[counts[0]+counts[1]:])
    for what, mat, vs in zip("ABC", mats, vals):
      for i, x in enumerate(vs):
        if mat.setdefault(cell := at(what, lane, i), x) != x and not (x != x and mat[cell] != mat[cell]):
          raise RuntimeError(f"{name}: lanes disagree on {what}{list(cell)} ({mat[cell]} and {x} from lane {lane}): the fragments are laid out wrong")
  a, b, c = mats
  d = {(i, j): truncate[dtypes.float32](c[i, j] + math.fsum(a[i, q] * b[q, j] for q in range(k))) for i in range(m) for j in range(n)}
  return [[d[at("C", lane, i)] for i in range(counts[2])] for lane in range(threads)]
