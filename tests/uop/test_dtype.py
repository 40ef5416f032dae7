import math, pickle, itertools, random
import numpy as np
import pytest
from tinygrad.dtype import PtrDType, AddrSpace, dtypes, to_dtype, truncate, least_upper_dtype, _join, _round_float

D = dtypes
CORE = (D.bool, D.int8, D.uint8, D.int16, D.uint16, D.int32, D.uint32, D.int64, D.uint64, D.float16, D.bfloat16, D.float32, D.float64)
PROMOTABLE = CORE + (D.fp8e4m3, D.fp8e5m2, D.weakint, D.weakfloat)
lud = least_upper_dtype

# *** DType objects ***

def test_repr_and_eval_roundtrip():
  assert repr(D.float) == "dtypes.float" and repr(D.float32) == "dtypes.float"
  assert repr(D.float.ptr(16)) == "dtypes.float.ptr(16)"
  assert repr(D.half.ptr(4, AddrSpace.LOCAL)) == "dtypes.half.ptr(4, AddrSpace.LOCAL)"
  for dt in list(D.fields().values()) + [D.int8.ptr(3, AddrSpace.REG)]: assert eval(repr(dt), {"dtypes": D, "AddrSpace": AddrSpace}) is dt

def test_interned_and_hashable():
  assert D.float.ptr(16) is D.float.ptr(16) and D.float.ptr(16) is not D.float.ptr(8)
  assert len({D.float, D.float32, D.float.ptr(), D.float.ptr()}) == 2

@pytest.mark.parametrize("dt", list(D.fields().values()) + [D.float.ptr(16), D.uint8.ptr(-1, AddrSpace.LOCAL)], ids=repr)
def test_pickle_identity(dt): assert pickle.loads(pickle.dumps(dt)) is dt

def test_scalar_base_ptr():
  assert D.int32.scalar() is D.int32 and D.int32.base is D.int32 and D.int32.vcount == 1
  p = D.float16.ptr(8, AddrSpace.LOCAL)
  assert isinstance(p, PtrDType) and p.base is D.float16 and p.size == 8 and p.addrspace is AddrSpace.LOCAL and p.itemsize == 2
  assert D.int8.ptr().size == -1 and D.int8.ptr().addrspace is AddrSpace.GLOBAL
  with pytest.raises(TypeError): p.ptr()

def test_frozen():
  with pytest.raises(AttributeError): D.float.itemsize = 8

def test_min_max():
  assert (D.int8.min, D.int8.max, D.uint8.min, D.uint8.max) == (-128, 127, 0, 255)
  assert (D.int64.min, D.uint64.max) == (-2**63, 2**64-1)
  assert (D.bool.min, D.bool.max) == (False, True) and (D.float.min, D.half.max) == (-math.inf, math.inf)
  assert D.max(D.weakint) == D.max(D.default_int)
  for dt in D.ints: assert (D.min(dt), D.max(dt)) == (int(np.iinfo(np.dtype(dt.fmt)).min), int(np.iinfo(np.dtype(dt.fmt)).max))

def test_finfo():
  for dt in (D.float16, D.float32, D.float64):
    fi = np.finfo(np.dtype(dt.fmt))
    assert D.finfo(dt) == (fi.nexp, fi.nmant)
  assert D.finfo(D.bfloat16) == (8, 7) and D.finfo(D.fp8e4m3) == (4, 3) and D.finfo(D.fp8e5m2) == (5, 2)
  with pytest.raises(TypeError): D.finfo(D.int32)

def test_predicates():
  assert all(D.is_float(d) for d in D.floats + (D.weakfloat,)) and not any(D.is_float(d) for d in D.ints + (D.bool, D.weakint))
  assert all(D.is_int(d) for d in D.ints + (D.weakint,)) and not D.is_int(D.bool) and not D.is_int(D.float)
  assert D.is_unsigned(D.uint8) and not D.is_unsigned(D.int8) and not D.is_unsigned(D.weakint)
  assert D.is_bool(D.bool) and not D.is_bool(D.uint8)
  assert D.is_weak(D.weakint) and D.is_weak(D.weakfloat) and not any(D.is_weak(d) for d in D.all)
  assert set(D.ints) == set(D.sints) | set(D.uints) and set(D.all) == set(CORE) | {D.fp8e4m3, D.fp8e5m2}

def test_from_py():
  assert D.from_py(True) is D.bool and D.from_py(1) is D.weakint and D.from_py(1.0) is D.weakfloat
  assert D.from_py([1, 2]) is D.weakint and D.from_py([1, [2.0]]) is D.weakfloat and D.from_py((True, False)) is D.bool
  assert D.from_py([]) is D.weakfloat and D.strong(D.from_py([])) is D.default_float
  with pytest.raises(TypeError): D.from_py("x")

def test_to_dtype():
  assert to_dtype("float32") is D.float and to_dtype("float") is D.float and to_dtype("int") is D.int32 and to_dtype(D.half) is D.half
  assert to_dtype("dtypes.bfloat16") is D.bfloat16
  with pytest.raises(ValueError, match="floot"): to_dtype("floot")
  with pytest.raises(TypeError): to_dtype(3)

def test_fields_readonly():
  f = D.fields()
  assert f["uchar"] is D.uint8 and "default_float" not in f
  with pytest.raises(TypeError): f["x"] = D.float

# *** as_const / truncate ***

@pytest.mark.parametrize("val,dt,expected", [
  (300, D.uint8, 44), (-1, D.uint32, 4294967295), (128, D.int8, -128), (-129, D.int8, 127), (2**63, D.int64, -2**63), (2**64+5, D.uint64, 5),
  (3.7, D.int32, 3), (-3.7, D.int32, -3), (True, D.float, 1.0), (2, D.bool, True), (0.0, D.bool, False), (2**70, D.weakint, 2**70),
  (1e40, D.float32, math.inf), (-1e40, D.half, -math.inf), (65519.0, D.half, 65504.0), (1.1, D.weakfloat, 1.1), (1.1, D.float64, 1.1)])
def test_as_const(val, dt, expected):
  ret = D.as_const(val, dt)
  assert ret == expected and type(ret) is type(expected)

def test_as_const_float32_rounds(): assert D.as_const(0.1, D.float32) == float(np.float32(0.1)) != 0.1

def _samples(n=20000, seed=0):
  r = random.Random(seed)
  edges = [0.0, -0.0, math.inf, -math.inf, 65504.0, 65520.0, 2**-25, 2**-24]
  return [r.choice((-1, 1)) * r.uniform(1, 2) * 2.0 ** r.randint(-30, 18) for _ in range(n)] + edges

def test_truncate_float16_vs_numpy():
  for x in _samples():
    with np.errstate(over="ignore"): assert truncate[D.half](x) == float(np.float64(x).astype(np.float16)), x
    assert _round_float(x, 5, 10, 65504.0, math.inf) == truncate[D.half](x), x  # the generic rounder agrees with struct 'e'
  assert math.isnan(truncate[D.half](math.nan))

def _bf16_ref(x:float) -> float:
  # reference for inputs exactly representable in float32: round-to-nearest-even on the upper 16 bits
  b = int(np.array([x], np.float32).view(np.uint32)[0])
  b = ((b + 0x7fff + ((b >> 16) & 1)) & 0xffff0000)
  return float(np.array([b], np.uint32).view(np.float32)[0])

def test_truncate_bfloat16_vs_numpy():
  r = random.Random(1)
  xs = [float(np.float32(x)) for x in _samples()] + [float(np.array([r.getrandbits(31)], np.uint32).view(np.float32)[0]) for _ in range(5000)]
  for x in xs:
    if not math.isnan(x): assert truncate[D.bfloat16](x) == _bf16_ref(x), x
  assert truncate[D.bfloat16](3.4e38) == math.inf and truncate[D.bfloat16](1.0 + 2**-8) == 1.0 and truncate[D.bfloat16](1.0 + 3*2**-8) == 1.0 + 2**-6

def _fp8_values(ebits, mbits, has_inf):
  bias, out = (1 << (ebits-1)) - 1, []
  for b in range(1 << (ebits + mbits)):  # positive encodings
    e, m = b >> mbits, b & ((1 << mbits) - 1)
    if has_inf and e == (1 << ebits) - 1: continue   # e5m2: inf/nan
    if not has_inf and b == (1 << (ebits + mbits)) - 1: continue  # e4m3fn: only all-ones is nan
    out.append(m * 2.0 ** (1 - bias - mbits) if e == 0 else (1 + m / (1 << mbits)) * 2.0 ** (e - bias))
  return out

@pytest.mark.parametrize("dt,ebits,mbits,has_inf", [(D.fp8e4m3, 4, 3, False), (D.fp8e5m2, 5, 2, True)])
def test_truncate_fp8(dt, ebits, mbits, has_inf):
  vals = _fp8_values(ebits, mbits, has_inf)
  assert max(vals) == (448.0 if dt is D.fp8e4m3 else 57344.0)
  for v in vals: assert truncate[dt](v) == v and truncate[dt](-v) == -v
  for lo, hi in zip(vals, vals[1:]):  # between neighbours, round to the nearer one (ties to the even encoding)
    assert truncate[dt](lo + (hi - lo) * 0.49) == lo and truncate[dt](lo + (hi - lo) * 0.51) == hi
    assert truncate[dt]((lo + hi) / 2) == (lo if vals.index(lo) % 2 == 0 else hi)
  big = truncate[dt](1e6)
  assert big == (448.0 if dt is D.fp8e4m3 else math.inf)  # e4m3fn has no inf: saturates

def test_truncate_ints_match_numpy():
  for dt in D.ints:
    for v in (0, 1, -1, 2**7, 2**8+3, -2**15-1, 2**31, 2**40+7, -2**63, 2**64-1, 2**65+9):
      assert truncate[dt](v) == int(np.array(v % 2**64, dtype=np.uint64).astype(np.dtype(dt.fmt))), (dt, v)

# *** promotion ***

PY = {"pybool": True, "pyint": 1, "pyfloat": 1.0}
EXPECTED = [
  (D.bool, D.bool, D.bool), (D.int32, D.weakint, D.int32), (D.int32, D.weakfloat, D.float32), (D.float16, D.weakfloat, D.float16),
  (D.bool, D.weakint, D.int32), (D.uint8, D.weakint, D.uint8), (D.bool, D.weakfloat, D.float32), (D.weakint, D.weakfloat, D.weakfloat),
  (D.weakint, D.weakint, D.weakint), (D.int8, D.uint8, D.int16), (D.uint32, D.int32, D.int64), (D.int64, D.uint64, D.float32),
  (D.float16, D.bfloat16, D.float32), (D.int64, D.float16, D.float16), (D.uint64, D.float16, D.float16), (D.uint8, D.bfloat16, D.bfloat16),
  (D.fp8e4m3, D.fp8e5m2, D.float16), (D.fp8e4m3, D.bfloat16, D.float32), (D.int32, D.fp8e5m2, D.fp8e5m2), (D.bool, D.uint8, D.uint8),
  (D.uint16, D.int16, D.int32), (D.uint8, D.int64, D.int64), (D.float32, D.float64, D.float64), (D.bool, D.float64, D.float64),
  (D.uint64, D.int8, D.float32), (D.uint32, D.uint64, D.uint64), (D.int8, D.weakfloat, D.float32), (D.float64, D.weakint, D.float64),
  (D.int16, D.from_py(PY["pyint"]), D.int16), (D.uint8, D.from_py(PY["pybool"]), D.uint8), (D.bfloat16, D.from_py(PY["pyfloat"]), D.bfloat16)]

@pytest.mark.parametrize("a,b,expected", EXPECTED, ids=lambda x: repr(x).removeprefix("dtypes."))
def test_promotion_table(a, b, expected): assert lud(a, b) is expected and lud(b, a) is expected

def test_single_weak_stays_weak():
  assert lud(D.weakint) is D.weakint and lud(D.weakfloat) is D.weakfloat
  assert D.strong(D.weakint) is D.int32 and D.strong(D.weakfloat) is D.float32 and D.strong(D.half) is D.half

def test_full_core_table_against_numpy_where_they_agree():
  # among the strong non-bf16 types with a strong join, numpy's promotion is the same lattice
  nps = [d for d in CORE if d.fmt is not None]
  for a, b in itertools.product(nps, nps):
    if _join(frozenset((a, b))) is D.weakfloat or ({a, b} & set(D.ints) and {a, b} & {D.float16, D.float32}): continue  # numpy widens, JAX doesn't
    assert np.dtype(lud(a, b).fmt) == np.promote_types(np.dtype(a.fmt), np.dtype(b.fmt)), (a, b)

@pytest.mark.parametrize("a,b", list(itertools.product(PROMOTABLE, PROMOTABLE)), ids=str)
def test_pair_properties(a, b):
  r = lud(a, b)
  assert r is lud(b, a)                                  # commutative
  assert lud(a, a) is a and lud(r, r) is r               # idempotent
  if not (D.is_weak(a) and D.is_weak(b)): assert not D.is_weak(r)  # weak never wins over strong
  for x in (a, b):
    if not D.is_weak(x): assert lud(x, r) is r           # result is an upper bound of every strong input
  if D.is_weak(b) and not D.is_weak(a) and (D.is_float(a) or (D.is_int(a) and D.is_int(b))): assert r is a  # a scalar of a's kind never widens a

def test_lattice_join_is_a_lattice():
  # the weak-preserving join: associative, commutative, idempotent across ALL triples
  for a, b, c in itertools.product(PROMOTABLE, repeat=3):
    j = lambda *ds: _join(frozenset(ds))
    assert j(j(a, b), c) is j(a, j(b, c)) is j(a, b, c)

def test_nary_and_associativity():
  for a, b, c in itertools.product(PROMOTABLE, repeat=3):
    n = lud(a, b, c)
    assert all(lud(*p) is n for p in itertools.permutations((a, b, c)))  # n-ary is order independent
    # binary chains agree with the n-ary call unless an inner step strengthened a weak join (see least_upper_dtype's doc)
    if lud(a, b) is _join(frozenset((a, b))) and lud(b, c) is _join(frozenset((b, c))): assert lud(lud(a, b), c) is n is lud(a, lud(b, c)), (a, b, c)
  assert lud(D.int8, D.int16, D.uint8) is D.int16
  # the documented exception: strengthening drops weakness, so chaining differs from one call
  assert lud(lud(D.bool, D.weakint), D.int8) is D.int32 and lud(D.bool, D.weakint, D.int8) is D.int8

def test_no_promotion_for_void_or_ptr():
  with pytest.raises(TypeError): lud(D.void, D.int32)
  with pytest.raises(TypeError): lud(D.float.ptr(), D.float)

def test_default_float_and_int_are_followed():
  old_f, old_i = D.default_float, D.default_int
  try:
    D.default_float, D.default_int = D.float16, D.int64
    assert lud(D.int32, D.weakfloat) is D.float16 and lud(D.bool, D.weakfloat) is D.float16 and lud(D.int64, D.uint64) is D.float16
    assert lud(D.bool, D.weakint) is D.int64 and D.strong(D.weakfloat) is D.float16 and D.strong(D.weakint) is D.int64
    assert lud(D.bfloat16, D.weakfloat) is D.bfloat16 and lud(D.weakint, D.weakfloat) is D.weakfloat
    assert D.sum_acc_dtype(D.half) is D.float32  # accumulation precision does not follow the default
    assert D.max(D.weakint) == 2**63 - 1
  finally: D.default_float, D.default_int = old_f, old_i
  assert lud(D.int32, D.weakfloat) is D.float32 and lud(D.bool, D.weakint) is D.int32

@pytest.mark.parametrize("dt,acc", [(D.bool, D.int32), (D.int8, D.int32), (D.uint8, D.uint32), (D.uint16, D.uint32), (D.int64, D.int64),
  (D.uint64, D.uint64), (D.float16, D.float32), (D.bfloat16, D.float32), (D.fp8e4m3, D.float32), (D.float32, D.float32), (D.float64, D.float64),
  (D.weakint, D.int32), (D.weakfloat, D.float32)], ids=str)
def test_sum_acc_dtype(dt, acc): assert D.sum_acc_dtype(dt) is acc

def test_names_programs_import():
  from tinygrad.dtype import ConstType, DTypeLike, sum_acc_dtype, least_upper_float, DType, dtypes
  assert isinstance(1.5, ConstType) and isinstance(True, ConstType) and isinstance("float32", DTypeLike) and isinstance(dtypes.int8, DTypeLike)
  assert sum_acc_dtype(dtypes.int8) is dtypes.int32 and sum_acc_dtype(dtypes.uint8) is dtypes.uint32 and sum_acc_dtype(dtypes.half) is dtypes.float32
  assert least_upper_float(dtypes.half) is dtypes.half and least_upper_float(dtypes.int8) is dtypes.default_float
  assert least_upper_float(dtypes.bool) is dtypes.default_float and isinstance(least_upper_float(dtypes.int64), DType)
