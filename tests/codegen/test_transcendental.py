"""EXP2/LOG2/SIN lowered to polynomials (TRANSCENDENTAL=2, or a renderer without them), run through the real pipeline on every
executing backend. Accuracy is measured in ulps of the dtype against a wider reference: numpy in float64 for float32, long double
for float64 (skipped where long double is no wider)."""
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes
from tinygrad.helpers import Context
from tinygrad.uop import Ops
from tinygrad.codegen import get_program, get_program_cached
from tinygrad.codegen.lowering import rewrite_to_program
from tinygrad.renderer import Renderer
from tinygrad.renderer.python import PythonRenderer
from tinygrad.schedule.rangeify import create_schedule

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # inputs and references that overflow on purpose
OPS = {"exp2": Ops.EXP2, "log2": Ops.LOG2, "sin": Ops.SIN}
WIDE = {np.float32: np.float64, np.float64: np.longdouble if np.finfo(np.longdouble).nmant > 52 else None}
# max ulps (float32 measured over every input: 1.23, 0.91, 0.97; float64 over 1e7 samples: 1.22, 0.82, 1.15)
BOUND = {(np.float32, "exp2"): 1.5, (np.float32, "log2"): 1.0, (np.float32, "sin"): 1.0,
         (np.float64, "exp2"): 1.5, (np.float64, "log2"): 1.0, (np.float64, "sin"): 1.5}

def lowered(x:np.ndarray|Tensor, fn:str, device:str) -> np.ndarray:
  with Context(TRANSCENDENTAL=2): return getattr(x if isinstance(x, Tensor) else Tensor(x, device=device), fn)().numpy()

def ulps(out:np.ndarray, x:np.ndarray, fn:str) -> np.ndarray:
  """|out - f(x)| in units of the spacing of out's dtype at f(x), f computed wider"""
  ref = getattr(np, fn)(x.astype(WIDE[x.dtype.type]))
  return np.abs(out.astype(ref.dtype) - ref) / np.spacing(np.abs(ref.astype(x.dtype))).astype(ref.dtype)

def samples(fn:str, dt, n:int) -> np.ndarray:
  """dense random inputs over the documented ranges, plus the hard spots: near 1 for log2, near multiples of pi/2 for sin"""
  rng, f32 = np.random.default_rng(0), dt is np.float32
  mant, emin, emax = (23, -149, 128) if f32 else (52, -1074, 1024)
  if fn == "exp2": x = np.concatenate([rng.uniform(emin-1, emax-0.01, n), rng.uniform(-1, 1, n//4)])
  elif fn == "log2": x = np.concatenate([np.exp2(rng.uniform(emin, emax-0.01, n)), rng.uniform(0.5, 2, n//4)])
  else:
    near_k_pi_2 = rng.integers(1, 2**(mant+1) * 0.63, n//4).astype(np.longdouble) * np.longdouble("1.5707963267948966192313216916397514421")
    x = np.concatenate([rng.uniform(-10, 10, n//4), rng.uniform(-1e4, 1e4, n//4), near_k_pi_2.astype(np.float64),
                        np.exp2(rng.uniform(-30, mant+0.99, n//4)) * rng.choice([-1, 1], n//4)])
  return x.astype(dt)

def _n(device:str) -> int: return 20_000 if device == "PYTHON" else 300_000

# *** accuracy ***

@pytest.mark.parametrize("fn", OPS)
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["float32", "float64"])
def test_accuracy(device, fn, dt):
  if WIDE[dt] is None: pytest.skip("long double is no wider than double here: no reference for float64")
  x = samples(fn, dt, _n(device))
  err = ulps(lowered(x, fn, device), x, fn)
  assert not np.isnan(err).any(), x[np.isnan(err)][:5]
  assert err.max() <= BOUND[dt, fn], f"{fn} {dt.__name__}: {err.max():.3f} ulp at x={x[np.argmax(err)]!r}"

@pytest.mark.parametrize("fn", OPS)
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=["float32", "float64"])
def test_same_bits_as_emulator(device, fn, dt, monkeypatch):
  # no fast-math and no fma contraction anywhere: every backend computes the lowered ops bit for bit like the emulator, and a fused
  # multiply-add (Ops.MULACC) exactly where its renderer forms one: against a target without it, the emulator forms none either
  if device == "PYTHON": pytest.skip("the emulator is the reference")
  if Ops.MULACC not in Device[device].renderer.code_for_op:
    emu = PythonRenderer()
    emu.code_for_op = {k: v for k, v in emu.code_for_op.items() if k is not Ops.MULACC}
    monkeypatch.setattr(Device["PYTHON"], "renderer", emu)
  x = samples(fn, dt, 2000)
  assert np.array_equal(lowered(x, fn, device).view(np.uint8), lowered(x, fn, "PYTHON").view(np.uint8))

@pytest.mark.parametrize("fn", OPS)
def test_float16_bfloat16_round_from_float32(device, fn):
  # every finite float16 and bfloat16 (a strided subset on the emulator): computed in float32, so the result is the true value
  # rounded to the dtype, or where that is a near tie, the float32 result an ulp or two off rounded the other way
  bits = np.arange(0, 1 << 16, 1 if device != "PYTHON" else 29, dtype=np.uint32)
  for dt in (dtypes.float16, dtypes.bfloat16):
    x = bits.astype(np.uint16).view(np.float16).astype(np.float32) if dt is dtypes.float16 else (bits << 16).view(np.float32)
    x = x[np.isfinite(x) & ((x > 0) if fn == "log2" else True)]
    t = Tensor(x, device=device).cast(dt)
    out = lowered(t, fn, device).astype(np.float32)
    ref = getattr(np, fn)(t.numpy().astype(np.float64))
    ok = np.zeros(len(x), bool)
    for s in (1 - 2**-22, 1, 1 + 2**-22): ok |= Tensor((ref * s).astype(np.float32), device=device).cast(dt).numpy().astype(np.float32) == out
    assert ok.all(), f"{fn} {dt}: x={x[~ok][:4]} out={out[~ok][:4]} ref={ref[~ok][:4]}"

# *** special values ***

INF, NAN = np.inf, np.nan
SPECIAL = {
  "exp2": [(-INF, 0.0), (INF, INF), (NAN, NAN), (0.0, 1.0), (-0.0, 1.0), (1e30, INF), (-1e30, 0.0), (-2000.0, 0.0), (2000.0, INF)],
  "log2": [(0.0, -INF), (-0.0, -INF), (-1.0, NAN), (-INF, NAN), (INF, INF), (NAN, NAN), (1.0, 0.0), (-1e-3, NAN)],
  "sin": [(INF, NAN), (-INF, NAN), (NAN, NAN), (0.0, 0.0), (-0.0, -0.0), (1e-30, 1e-30), (-1e-30, -1e-30)]}

@pytest.mark.parametrize("fn", OPS)
@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64], ids=["float16", "float32", "float64"])
def test_special_values(device, fn, dt):
  x, want = (np.array(v, dtype=dt) for v in zip(*SPECIAL[fn]))
  out = lowered(x, fn, device)
  assert np.array_equal(out, want, equal_nan=True) and (np.signbit(out) == np.signbit(want))[~np.isnan(want)].all(), (x, out)

def test_exact_points(device):
  # integers give 2**k exactly down into the subnormals and up to the largest power; powers of two give exact logs; tiny sin(x) is x
  k = np.arange(-149, 128).astype(np.float32)
  p = np.exp2(k.astype(np.float64)).astype(np.float32)
  assert np.array_equal(lowered(k, "exp2", device), p)
  assert np.array_equal(lowered(p, "log2", device), k)
  tiny = np.array([1e-45, -1e-45, 1e-38, 2.0**-20, -(2.0**-20)], dtype=np.float32)
  assert np.array_equal(lowered(tiny, "sin", device), tiny)

def _near_multiples_of_pi_2(n:int) -> np.ndarray:
  """float32 values from 2**24 up whose x*2/pi is closest to an integer (|sin| or |cos| down to 3e-9): m*2**k for m the continued
  fraction denominators of frac(2**k * 2/pi), scaled into 24 bits. 2/pi's digits from numpy's longdouble would be too short: Machin's"""
  from tinygrad.codegen.transcendental import _two_over_pi_bits
  bits = 224
  two_pi = _two_over_pi_bits(bits)
  out = []
  for k in range(1, 105, max(1, 104 // n)):
    num, den = (two_pi << k) % (1 << bits), 1 << bits  # frac(2**k * 2/pi) as num/den
    q0, q1 = 0, 1  # denominators of the convergents, frac's whole part being 0
    while num and q1 < 2**24:
      a, (num, den) = den // num, (den % num, num)
      q0, q1 = q1, a * q1 + q0
      if 0 < q1 < 2**24: out.append(q1 * -(-2**23 // q1) * 2.0**k)  # the least multiple of q1 with 24 bits
  return np.array([v for v in out if v < 3.4e38], np.float32)

def test_sin_float32_past_2_24(device):
  # Payne-Hanek: 2/pi's bits picked by x's exponent; random values up to float32's max and the hardest ones near multiples of pi/2
  rng = np.random.default_rng(1)
  n = 2000 if device == "PYTHON" else 100_000
  x = np.concatenate([(np.exp2(rng.uniform(24, 127.99, n)) * rng.choice([-1, 1], n)).astype(np.float32), np.float32([2**24, 3.4028235e38]),
                      (hard := _near_multiples_of_pi_2(26 if device == "PYTHON" else 104)), -hard])
  err = ulps(lowered(x, "sin", device), x, "sin")
  assert not np.isnan(err).any() and err.max() <= BOUND[np.float32, "sin"], f"{err.max():.3f} ulp at x={x[np.argmax(err)]!r}"
  assert np.abs(np.sin(hard.astype(np.float64))).min() < 1e-8  # the hard cases are hard
  big = np.float32([1e8, 3e30, -3e38])  # cos too: 1 - 2*sin(x/2)**2
  assert np.allclose(Tensor(big, device=device).cos().numpy(), np.cos(big.astype(np.float64)), rtol=0, atol=1e-6)

def test_sin_float64_past_the_reduction_is_nan(device):
  # documented: float64 from 2**53 would need 128-bit products; sin answers NaN there rather than a wrong number
  out = lowered(np.array([2.0**53, -3e300, 2.0**53 - 1], dtype=np.float64), "sin", device)
  assert np.isnan(out[:2]).all() and abs(out[2] - np.sin(2.0**53 - 1)) < 1e-15

# *** when the native op stays ***

def _kernel_ast(fn:str, device:str):
  t = getattr(Tensor(np.ones(4, np.float32), device=device), fn)()
  return next(it.ast for it in create_schedule([t.uop])[0] if it.kind == "kernel")

def _ops(uops) -> set: return {u.op for u in uops} & set(OPS.values())

@pytest.mark.parametrize("fn", OPS)
def test_native_op_kept_unless_transcendental_2(device, fn):
  # a renderer with a polynomial budget lowers this one-op kernel anyway (test_llvm_host_polynomial_budget)
  ast, renderer = _kernel_ast(fn, device), Device[device].renderer
  assert _ops(get_program(ast, renderer).uops) == ({OPS[fn]} if OPS[fn] in renderer.code_for_op and not renderer.polynomial_budget else set())
  with Context(TRANSCENDENTAL=2): assert not _ops(get_program(ast, renderer).uops)

@pytest.mark.parametrize("fn", OPS)
def test_llvm_host_uses_the_polynomials(fn):
  # exp2's intrinsic is a libm call per lane that nothing vectorizes; the polynomial is 1.6x faster (bench/RESULTS.md). log2 and sin are
  # native but within the polynomial budget in a kernel of one op; the C renderer keeps libm (gcc vectorizes the polynomials worse)
  llvm = Device["CPU:LLVM"].renderer
  assert Ops.EXP2 not in llvm.code_for_op and {Ops.LOG2, Ops.SIN} <= llvm.code_for_op.keys() and Ops.EXP2 in Device["CPU:C"].renderer.code_for_op
  assert Device["CPU:C"].renderer.polynomial_budget == 0
  assert _ops(get_program(_kernel_ast(fn, "CPU:LLVM"), llvm).uops) == set()
  x = samples(fn, np.float32, 20_000)
  err = ulps(getattr(Tensor(x, device="CPU:LLVM"), fn)().numpy(), x, fn)  # the default, no TRANSCENDENTAL set
  assert not np.isnan(err).any() and err.max() <= BOUND[np.float32, fn]

def _chain_ops(n:int, device:str) -> set:
  """the transcendentals left in the program of a kernel of n sins and n log2s in a chain, on one element (one lane)"""
  t = Tensor(np.ones(1, np.float32), device=device)
  for _ in range(n): t = t.sin().abs().log2()
  ast = next(it.ast for it in create_schedule([t.uop])[0] if it.kind == "kernel")
  return _ops(get_program(ast, Device[device].renderer).uops)

def test_llvm_host_polynomial_budget():
  # up to the budget of LOG2 and SIN in a kernel (lanes counted), all polynomials; past it, all libm calls (compile time in long chains)
  budget = Device["CPU:LLVM"].renderer.polynomial_budget
  assert budget > 0 and _chain_ops(budget // 2, "CPU:LLVM") == set() and _chain_ops(budget // 2 + 1, "CPU:LLVM") == {Ops.LOG2, Ops.SIN}
  assert _chain_ops(1, "CPU:C") == {Ops.LOG2, Ops.SIN}

def test_program_cache_follows_transcendental():
  ast, renderer = _kernel_ast("exp2", "PYTHON"), Device["PYTHON"].renderer
  assert _ops(get_program_cached(ast, renderer).uops) == {Ops.EXP2}
  with Context(TRANSCENDENTAL=2): assert not _ops(get_program_cached(ast, renderer).uops)
  assert _ops(get_program_cached(ast, renderer).uops) == {Ops.EXP2}

class _NoExp2(Renderer):
  code_for_op = {Ops.LOG2: None, Ops.SIN: None}

def test_only_missing_ops_are_lowered():
  # one kernel with all three, for a renderer with log2 and sin but no exp2
  t = Tensor(np.ones(4, np.float32), device="PYTHON")
  ast = next(it.ast for it in create_schedule([(t.exp2() + t.log2() + t.sin()).uop])[0] if it.kind == "kernel")
  assert _ops(rewrite_to_program(ast, _NoExp2()).toposort()) == {Ops.LOG2, Ops.SIN}
  assert _ops(rewrite_to_program(ast, None).toposort()) == set(OPS.values())  # no renderer: nothing to go by, all stay

class _FusingNoExp2(Renderer):
  code_for_op = {Ops.LOG2: None, Ops.SIN: None, Ops.MULACC: None}

def test_polynomial_steps_fuse_where_the_target_has_mulacc():
  # float32 exp2's polynomial has 7 coefficients: 6 Horner steps, each one fused multiply-add on a target with MULACC, none without. FMA=0
  # keeps the general a*b+c rule off, so every MULACC counted is the polynomial's (their accuracy: test_accuracy, test_same_bits_as_emulator)
  t = Tensor(np.ones(1, np.float32), device="PYTHON")  # one element: one lane
  ast = next(it.ast for it in create_schedule([t.exp2().uop])[0] if it.kind == "kernel")
  def fused(r) -> int: return sum(u.op is Ops.MULACC for u in rewrite_to_program(ast, r).toposort())
  with Context(FMA=0): assert fused(_FusingNoExp2()) == 6 and fused(_NoExp2()) == 0

def test_float64_sin_of_huge_values_keeps_the_targets_sin():
  # under the LLVM renderer's polynomial budget a float64 sin was the polynomial, NaN past 2**53 (128-bit products would be needed), while
  # C, CL and the emulator call libm: a target's own float64 sin is kept; float32 still gets the polynomial
  x = np.array([1e15, 2.0**54, 1e17, 1e20, 1e300, -1e25])
  np.testing.assert_allclose(Tensor(x, device="CPU:LLVM").sin().numpy(), np.sin(x), rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(Tensor(x, device="CPU:LLVM").cos().numpy(), np.cos(x), rtol=1e-12, atol=1e-12)
  src = get_program(create_schedule([Tensor([1.0, 2.0], device="CPU:LLVM").sin().uop])[0][-1].ast, Device["CPU:LLVM"].renderer).src
  assert "llvm.sin.f32" not in src  # float32: the polynomial (vectorizes)
