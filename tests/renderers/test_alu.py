"""Every ALU op, cast and bitcast across dtypes, on every target, against numpy (or python's dtype rounding where numpy has no dtype):
int wraparound, C division, float rounding after each op, NaN/inf, double rounding traps, transcendental accuracy."""
import math, zlib
import numpy as np
import pytest
from tinygrad.uop import Ops
from tinygrad.dtype import DType, dtypes, truncate
from tinygrad.helpers import cdiv, cmod
from linprog import TARGETS, NP, Prog, device, run, elementwise, unary

N = 64
FLOATS = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]
ALL = [dtypes.bool, *dtypes.ints, *FLOATS]
CMP = (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ)

# *** bfloat16: numpy has none, so it travels as uint16 bits and is compared as float32 ***
def bf16_bits(x) -> np.ndarray: return np.array([truncate[dtypes.bfloat16](float(v)) for v in np.ravel(x)], np.float32).view(np.uint32) >> 16
def to_np(x, dt:DType) -> np.ndarray:
  """values as dt's array (rounded to dt)"""
  return bf16_bits(x).astype(np.uint16) if dt is dtypes.bfloat16 else np.asarray(x).astype(NP[dt])
def as_float(a:np.ndarray, dt:DType) -> np.ndarray:
  return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64) if dt is dtypes.bfloat16 else a.astype(np.float64)

def inputs(dt:DType, rng, n=N) -> np.ndarray:
  if dt is dtypes.bool: return rng.integers(0, 2, n).astype(np.bool_)
  if dtypes.is_int(dt): return rng.integers(dtypes.min(dt), dtypes.max(dt), n, dtype=NP[dt], endpoint=True)
  specials = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5]
  return to_np(np.concatenate([specials, rng.standard_normal(n - len(specials)) * 10]), dt)

def ulps(v:np.ndarray, dt:DType) -> np.ndarray:
  """the spacing of dt's values around v (NaN at non-finite v)"""
  with np.errstate(all="ignore"):
    if dt is dtypes.bfloat16: return np.abs(np.spacing(v.astype(np.float32))).astype(np.float64) * 2**16
    return np.abs(np.spacing(v.astype(NP[dt]))).astype(np.float64)

def reference(op:Ops, dt:DType, *xs:np.ndarray) -> np.ndarray:
  """numpy: ints in their dtype (wrapping), floats in float64 rounded once to dt (one rounding of exact inputs, as IEEE asks)"""
  with np.errstate(all="ignore"):
    if dtypes.is_float(dt): xs = tuple(x if x.dtype == np.bool_ else as_float(x, dt) for x in xs)
    if op is Ops.CDIV or op is Ops.CMOD:
      f = cdiv if op is Ops.CDIV else cmod
      return np.array([truncate[dt](f(int(a), int(b))) for a, b in zip(*xs)], NP[dt])
    fn = {Ops.ADD: np.add, Ops.SUB: np.subtract, Ops.MUL: np.multiply, Ops.FDIV: np.divide, Ops.MAX: np.maximum, Ops.CMPLT: np.less,
          Ops.CMPNE: np.not_equal, Ops.CMPEQ: np.equal, Ops.AND: np.bitwise_and, Ops.OR: np.bitwise_or, Ops.XOR: np.bitwise_xor,
          Ops.SHL: np.left_shift, Ops.SHR: np.right_shift, Ops.NEG: np.logical_not if dt is dtypes.bool else np.negative,
          Ops.WHERE: np.where, Ops.RECIPROCAL: lambda x: 1.0 / x, Ops.SQRT: np.sqrt, Ops.TRUNC: np.trunc}[op]
    out = fn(*xs)
    return out if op in CMP else to_np(out, dt)

def check(target:str, op:Ops, dt:DType, *xs:np.ndarray):
  out_dt = dtypes.bool if op in CMP else dt
  in_dts = (dtypes.bool, dt, dt) if op is Ops.WHERE else (dt,) * len(xs)
  got = run(target, elementwise(op, dt, N, len(xs), in_dts=in_dts), np.zeros(N, NP[out_dt]), *xs)[0]
  want = reference(op, dt, *xs)
  if out_dt in FLOATS: np.testing.assert_array_equal(as_float(got, out_dt), as_float(want, out_dt), err_msg=f"{op} {dt}")
  else: np.testing.assert_array_equal(got, want, err_msg=f"{op} {dt}")

BINARY = [(op, dt) for op in (Ops.ADD, Ops.MUL, Ops.MAX, *CMP) for dt in ALL] + \
         [(op, dt) for op in (Ops.SUB,) for dt in ALL if dt is not dtypes.bool] + \
         [(op, dt) for op in (Ops.AND, Ops.OR, Ops.XOR) for dt in (dtypes.bool, *dtypes.ints)] + \
         [(op, dt) for op in (Ops.SHL, Ops.SHR, Ops.CDIV, Ops.CMOD) for dt in dtypes.ints] + [(Ops.FDIV, dt) for dt in FLOATS]

@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op,dt", BINARY, ids=[f"{op.name}-{dt.name}" for op, dt in BINARY])
def test_binary(target, op, dt):
  rng = np.random.default_rng(zlib.crc32(f"{op.name} {dt.name}".encode()))
  a, b = inputs(dt, rng), inputs(dt, rng)
  if op in (Ops.SHL, Ops.SHR): b = rng.integers(0, 8*dt.itemsize, N).astype(NP[dt])  # shifting by the width or more is undefined
  if op in (Ops.CDIV, Ops.CMOD):
    b = np.where(b == 0, 3, b).astype(NP[dt])
    a[:4], b[:4] = np.array([7, -7, 7, -7]).astype(NP[dt]), np.array([2, 2, -2, -2]).astype(NP[dt])  # C truncates toward zero
    if dt in dtypes.sints: a = np.where((a == dtypes.min(dt)) & (b == -1), 0, a).astype(NP[dt])  # INT_MIN / -1 traps in C and LLVM
  check(target, op, dt, a, b)

UNARY = [(Ops.NEG, dt) for dt in ALL] + [(op, dt) for op in (Ops.RECIPROCAL, Ops.SQRT, Ops.TRUNC) for dt in FLOATS]
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op,dt", UNARY, ids=[f"{op.name}-{dt.name}" for op, dt in UNARY])
def test_unary(target, op, dt): check(target, op, dt, inputs(dt, np.random.default_rng(1)))

@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dt", ALL, ids=[dt.name for dt in ALL])
def test_where(target, dt):
  rng = np.random.default_rng(2)
  check(target, Ops.WHERE, dt, inputs(dtypes.bool, rng), inputs(dt, rng), inputs(dt, rng))

def test_int_wraparound_and_c_division_on_python():
  # the emulator's own semantics, spelled out: wrap like two's complement, divide toward zero, remainder takes the dividend's sign
  outs = {op: run("PYTHON", elementwise(op, dtypes.int8, 4), np.zeros(4, np.int8), np.array([127, -128, -7, 7], np.int8),
                  np.array([1, -1, 2, -2], np.int8))[0].tolist() for op in (Ops.ADD, Ops.MUL, Ops.CDIV, Ops.CMOD)}
  assert outs == {Ops.ADD: [-128, 127, -5, 5], Ops.MUL: [127, -128, -14, -14], Ops.CDIV: [127, -128, -3, -3], Ops.CMOD: [0, 0, -1, 1]}

# *** transcendentals: within a few ulp of float64 numpy (libm / llvm intrinsics are not all correctly rounded) ***

TRANS = [(op, dt) for op in (Ops.EXP2, Ops.LOG2, Ops.SIN) for dt in FLOATS]
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op,dt", TRANS, ids=[f"{op.name}-{dt.name}" for op, dt in TRANS])
def test_transcendental(target, op, dt):
  rng = np.random.default_rng(3)
  lo, hi = {Ops.EXP2: (-14, 15), Ops.LOG2: (1e-3, 6e4), Ops.SIN: (-100, 100)}[op]
  x = to_np(np.concatenate([[0.0, -0.0, math.inf, -math.inf, math.nan, 1.0], rng.uniform(lo, hi, N - 6)]), dt)
  if (dev := device(target)) is not None and op not in dev.renderer.code_for_op:
    # LLVM on the host declares none (codegen lowers them to polynomials first: tests/codegen/test_transcendental.py): it refuses clearly
    with pytest.raises(RuntimeError, match=f"cannot render {op}.*lower it first"): run(target, elementwise(op, dt, N, 1), np.zeros(N, NP[dt]), x)
    return
  got = as_float(run(target, elementwise(op, dt, N, 1), np.zeros(N, NP[dt]), x)[0], dt)
  with np.errstate(all="ignore"): want = {Ops.EXP2: np.exp2, Ops.LOG2: np.log2, Ops.SIN: np.sin}[op](as_float(x, dt))
  ulp = ulps(want, dt)
  np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} {dt} NaN")
  fin = np.isfinite(want)
  assert np.all(got[~fin & ~np.isnan(want)] == want[~fin & ~np.isnan(want)])
  assert np.all(np.abs(got[fin] - want[fin]) <= 4 * ulp[fin]), f"{op} {dt}: max err {np.max(np.abs(got[fin]-want[fin])/ulp[fin])} ulp"

# *** casts: one kernel per source dtype storing into a buffer of every destination dtype ***

def cast_all(target:str, src:DType, x:np.ndarray, dsts:list[DType]) -> list[np.ndarray]:
  p = Prog()
  outs = [p.param(i, d, len(x)) for i, d in enumerate(dsts)]
  inp = p.param(len(dsts), src, len(x))
  r = p.range(len(x), 0)
  v = p.load(inp, r)
  for o, d in zip(outs, dsts): p.store(o, r, p.cast(v, d))
  p.end(r)
  return run(target, p, *[np.zeros(len(x), NP[d]) for d in dsts], x)[:len(dsts)]

def want_cast(x:np.ndarray, src:DType, dst:DType) -> np.ndarray:
  with np.errstate(all="ignore"): return to_np(as_float(x, src) if src is dtypes.bfloat16 else x, dst)

@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("src", ALL, ids=[dt.name for dt in ALL])
def test_cast(target, src):
  rng = np.random.default_rng(4)
  # every int value converts (wrapping between ints); floats only from where C defines the result: 0 <= x < 128 for every int dtype
  x = inputs(src, rng) if not dtypes.is_float(src) else to_np(np.concatenate([[0.0, -0.0, 1.0, 126.75, 0.5, 1.5, 2.5, 100.2],
                                                                              rng.uniform(0, 127, N - 8)]), src)
  for dst, got in zip(ALL, cast_all(target, src, x, ALL)):
    want = want_cast(x, src, dst)
    if dst in FLOATS: np.testing.assert_array_equal(as_float(got, dst), as_float(want, dst), err_msg=f"{src} -> {dst}")
    else: np.testing.assert_array_equal(got, want, err_msg=f"{src} -> {dst}")

@pytest.mark.parametrize("target", TARGETS)
def test_cast_negative_and_special_floats(target):
  x = np.array([-1.5, -2.5, -127.9, -0.0, math.inf, -math.inf, math.nan, 1e30], np.float32)
  b, f16, f64 = cast_all(target, dtypes.float32, x, [dtypes.bool, dtypes.float16, dtypes.float64])
  np.testing.assert_array_equal(b, x != 0)  # NaN is true
  with np.errstate(over="ignore"): np.testing.assert_array_equal(f16, x.astype(np.float16))
  np.testing.assert_array_equal(f64, x.astype(np.float64))
  np.testing.assert_array_equal(cast_all(target, dtypes.float32, x[:3], [dtypes.int8])[0], [-1, -2, -127])  # toward zero

@pytest.mark.parametrize("target", TARGETS)
def test_cast_rounds_once(target):
  # a detour through float32 would round twice and land on the even neighbour instead of the nearest value
  x = np.array([1 + 2**-11 + 2**-40, -(1 + 2**-11 + 2**-40), 1 + 2**-8 + 2**-40, 65519.99], np.float64)
  f16, bf16 = cast_all(target, dtypes.float64, x, [dtypes.float16, dtypes.bfloat16])
  np.testing.assert_array_equal(f16, x.astype(np.float16))
  assert as_float(bf16, dtypes.bfloat16)[2] == 1 + 2**-7
  big = np.array([2**60 + 2**36 + 1, 2**24 + 2**16 + 1], np.int64)
  f32, bf16 = cast_all(target, dtypes.int64, big, [dtypes.float32, dtypes.bfloat16])
  np.testing.assert_array_equal(f32, [2.0**60 + 2**37, 2.0**24 + 2**16])
  assert as_float(bf16, dtypes.bfloat16)[1] == 2**24 + 2**17

BITCASTS = [(dtypes.float32, dtypes.int32), (dtypes.float32, dtypes.uint32), (dtypes.int32, dtypes.float32), (dtypes.float64, dtypes.int64),
            (dtypes.uint64, dtypes.float64), (dtypes.float16, dtypes.int16), (dtypes.uint16, dtypes.float16), (dtypes.bfloat16, dtypes.uint16),
            (dtypes.int16, dtypes.bfloat16), (dtypes.float16, dtypes.bfloat16), (dtypes.int8, dtypes.uint8)]
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("src,dst", BITCASTS, ids=[f"{s.name}-{d.name}" for s, d in BITCASTS])
def test_bitcast(target, src, dst):
  x = inputs(src, np.random.default_rng(5))
  nan = np.zeros(N, bool)
  for d in (src, dst):  # NaN payloads may change on the way through a float register
    if d in FLOATS: nan |= np.isnan(as_float(x.view(NP[d]), d))
  x = np.where(nan, np.zeros_like(x), x)
  got = run(target, unary(lambda p, v: p.bitcast(v, dst), src, dst, N), np.zeros(N, NP[dst]), x)[0]
  np.testing.assert_array_equal(got.view(np.uint8), x.view(np.uint8))

# *** constants: every dtype's extremes, signed zero, inf and NaN come out bit-exact ***

CONSTS = {dtypes.float32: [math.inf, -math.inf, -0.0, 1e-45, 3.4028234663852886e38, 0.1], dtypes.float64: [math.inf, -math.inf, -0.0, 5e-324, 0.1],
          dtypes.float16: [math.inf, -math.inf, -0.0, 65504.0, 6e-08, 0.1], dtypes.bfloat16: [math.inf, -0.0, 3.3895313892515355e38, 0.1],
          **{dt: [dtypes.min(dt), dtypes.max(dt), 0, 1] for dt in dtypes.ints}, dtypes.bool: [True, False]}
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dt", list(CONSTS), ids=[dt.name for dt in CONSTS])
def test_consts(target, dt):
  vals = CONSTS[dt] + ([math.nan] if dtypes.is_float(dt) else [])
  p = Prog()
  out = p.param(0, dt, len(vals))
  for i, v in enumerate(vals): p.store(out, i, p.const(v, dt))
  got = run(target, p, np.zeros(len(vals), NP[dt]))[0]
  want = to_np(vals, dt) if dtypes.is_float(dt) else np.array(vals, NP[dt])
  if dtypes.is_float(dt): np.testing.assert_array_equal(np.signbit(as_float(got, dt)), np.signbit(as_float(want, dt)))
  np.testing.assert_array_equal(as_float(got, dt) if dtypes.is_float(dt) else got, as_float(want, dt) if dtypes.is_float(dt) else want)

# *** ops a target has for ints only: refused on floats with the op's name, never miscompiled or rendered as invalid source ***

@pytest.mark.parametrize("target", [t for t in TARGETS if t != "PYTHON"])
@pytest.mark.parametrize("op", [Ops.CDIV, Ops.CMOD])
def test_int_only_ops_refuse_floats(target, op):
  from tinygrad.helpers import Context
  # the spec rejects these nodes when they are built (SPEC=2); without it the renderer must still refuse them by name
  with Context(SPEC=0), pytest.raises(RuntimeError, match=f"cannot render {op} on dtypes.float operands"):
    run(target, elementwise(op, dtypes.float32, 4), *[np.zeros(4, np.float32)]*3)
