"""Ops.MULACC, a*b+c rounded once (fused multiply-add): the python emulator's exact dtype.fma against exact rationals, every target
that declares the op against the same oracle, bit for bit, and the rewrite that forms it only where a target declares it."""
import math, random
from fractions import Fraction
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, graph_rewrite
from tinygrad.uop.symbolic import symbolic
from tinygrad.dtype import dtypes, fma
from tinygrad.codegen import get_program
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.renderer.host_cpu import has_fma, host_has_fma
from tinygrad.renderer.llvmir import LLVMRenderer
from tinygrad.renderer.cstyle import ClangRenderer
from tinygrad.renderer.python import PythonRenderer
from linprog import TARGETS, NP, Prog, run, device

def nearest(v:Fraction, np_dt) -> float:
  """the value of np_dt nearest to v, ties to the even bit pattern: the neighbours of a first guess, compared exactly"""
  big = np.finfo(np_dt).max
  if abs(v) >= Fraction(float(big)) + Fraction(float(big - np.nextafter(big, np_dt(0)))) / 2: return math.inf if v > 0 else -math.inf
  guess = np_dt(float(v))
  cands = [np.nextafter(guess, np_dt(-np.inf)), guess, np.nextafter(guess, np_dt(np.inf))]
  bits = np.uint32 if np_dt is np.float32 else np.uint64
  return float(min(cands, key=lambda x: (abs(Fraction(float(x)) - v) if np.isfinite(x) else math.inf, int(np.array(x).view(bits)) & 1)))

@np.errstate(all="ignore")
def oracle(a:float, b:float, c:float, np_dt) -> float:
  if not all(map(math.isfinite, (a, b, c))): return float(np_dt(np.float64(a) * np.float64(b) + np.float64(c)))  # inf/NaN rules
  exact = Fraction(a) * Fraction(b) + Fraction(c)
  if exact == 0: return float(np_dt(a) * np_dt(b) + np_dt(c))  # the sign of an exact zero: IEEE addition's rule
  return nearest(exact, np_dt)

def cases(np_dt, n:int, seed:int=0) -> list[tuple[float, float, float]]:
  """random triples, half of them with c nearly cancelling a*b (where one rounding differs from two), the double-rounding traps (a*b
  exactly halfway between two values of the dtype, c tipping it) and IEEE specials"""
  rng, e = random.Random(seed), (20, 120) if np_dt is np.float32 else (60, 500)
  def val(x): return float(np_dt(x))
  out = []
  for i in range(n):
    a, b = val(rng.uniform(-1, 1) * 2.0**rng.randint(-e[0], e[0])), val(rng.uniform(-1, 1) * 2.0**rng.randint(-e[0], e[0]))
    c = val(-a*b * (1 + rng.uniform(-1e-6, 1e-6))) if i % 2 else val(rng.uniform(-1, 1) * 2.0**rng.randint(-e[1], e[1]))
    out.append((a, b, c))
  # (1+2^-m)(1+2^-k) = 1 + 2^-m + 2^-k + half an ulp: a tie, which a tiny c (lost when a*b+c is first rounded to a double) decides
  m, k, tiny = (12, 12, 2.0**-70) if np_dt is np.float32 else (26, 27, 2.0**-100)
  for s in (1, -1):
    out.append((val(1 + 2.0**-m), val(1 + 2.0**-k), s * tiny))
    out.append((val(-(1 + 2.0**-m)), val(1 + 2.0**-k), s * tiny))
  big = float(np.finfo(np_dt).max)
  out += [(0.0, 5.0, -0.0), (-0.0, 5.0, -0.0), (-0.0, 5.0, 0.0), (2.0, 3.0, -6.0), (math.inf, 0.0, 1.0), (math.inf, 1.0, -math.inf),
          (1.0, 1.0, math.nan), (big, 2.0, -big), (big, 2.0, 0.0), (2.0**-70, 2.0**-70, 0.0), (2.0**-149, 0.5, 0.0)]
  return out

def same(got:float, want:float) -> bool:
  return (math.isnan(got) and math.isnan(want)) or (got == want and math.copysign(1, got) == math.copysign(1, want))

@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64])
def test_fma_is_exact(dt):
  np_dt = NP[dt]
  bad = [(a, b, c, fma(a, b, c, dt), oracle(a, b, c, np_dt)) for a, b, c in cases(np_dt, 4000)
         if not same(fma(a, b, c, dt), oracle(a, b, c, np_dt))]
  assert not bad, bad[:5]

def test_double_rounding_trap_differs_from_two_roundings():
  # the reason fma needs care: float32(double(a*b+c)) and fma differ here, and fma follows the exact value
  a, b, c = 1 + 2.0**-12, 1 + 2.0**-12, 2.0**-70  # a*b: a float32 tie, rounded to even; c, past the tie, is lost in a double
  assert fma(a, b, c, dtypes.float32) == float(np.nextafter(np.float32(a*b), np.float32(2))) != float(np.float32(a*b + c))

@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dt", [dtypes.float32, dtypes.float64])
def test_mulacc_on_each_target(target, dt):
  np_dt = NP[dt]
  xs = cases(np_dt, 200, seed=1)
  p = Prog()
  out, ins = p.param(0, dt, len(xs)), [p.param(i+1, dt, len(xs)) for i in range(3)]
  r = p.range(len(xs), 0)
  p.store(out, r, p.alu(Ops.MULACC, *[p.load(b, r) for b in ins]))
  p.end(r)
  arrays = [np.zeros(len(xs), np_dt)] + [np.array([x[i] for x in xs], np_dt) for i in range(3)]
  if (dev := device(target)) is not None and Ops.MULACC not in dev.renderer.code_for_op:
    # a CPU without the instruction: the renderer does not declare the op, so it is never formed, and rendering it says so
    assert target != "PYTHON" and not host_has_fma()
    with pytest.raises(RuntimeError, match="MULACC"): run(target, p, *arrays)
    return
  got = run(target, p, *arrays)[0]
  bad = [(x, g, oracle(*x, np_dt)) for x, g in zip(xs, got.tolist()) if not same(g, oracle(*x, np_dt))]
  assert not bad, bad[:5]

def test_has_fma_reads_the_cpu():
  assert has_fma("x86_64", "processor: 0\nflags\t\t: fpu sse2 avx avx2 fma bmi2\n")
  assert not has_fma("x86_64", "flags\t\t: fpu sse2 avx fma4\n")  # AMD's old four-operand FMA4 is not the FMA3 LLVM's fma uses
  assert not has_fma("x86_64", "")
  assert has_fma("aarch64", "") and not has_fma("riscv64", "")

def _kernel_ops(dt, renderer) -> set:
  a, b, c = (Tensor(np.arange(16) + i, device="CPU").cast(dt).contiguous() for i in range(3))
  ast = [it for it in create_schedule([(a * b + c).uop])[0] if it.kind == "kernel"][-1].ast
  return {u.op for u in get_program(ast, renderer).uops}

def test_formed_only_where_declared(monkeypatch):
  assert Ops.MULACC in _kernel_ops(dtypes.float32, PythonRenderer())
  assert Ops.MULACC not in _kernel_ops(dtypes.float16, PythonRenderer())  # computed in float32 and rounded to 16 bits: not one rounding
  assert Ops.MULACC not in _kernel_ops(dtypes.int32, PythonRenderer())
  # a named CPU model, or a host without the instruction: the renderer does not declare it, a*b+c stays two ops
  assert Ops.MULACC not in _kernel_ops(dtypes.float32, LLVMRenderer("x86-64"))
  assert Ops.MULACC not in _kernel_ops(dtypes.float32, ClangRenderer("x86-64"))
  import tinygrad.renderer.llvmir as llvmir
  monkeypatch.setattr(llvmir, "host_has_fma", lambda: False)
  assert Ops.MULACC not in LLVMRenderer().code_for_op and Ops.MULACC not in _kernel_ops(dtypes.float32, LLVMRenderer())
  monkeypatch.setattr(llvmir, "host_has_fma", lambda: True)
  assert Ops.MULACC in _kernel_ops(dtypes.float32, LLVMRenderer())

@np.errstate(all="ignore")
def test_tensor_a_times_b_plus_c_is_what_the_target_computes(device):
  # each device computes exactly what its kernel says: one rounding where its renderer forms MULACC, two where it does not
  xs = cases(np.float32, 300, seed=2)
  a, b, c = (np.array([x[i] for x in xs], np.float32) for i in range(3))
  got = (Tensor(a, device=device) * Tensor(b, device=device) + Tensor(c, device=device)).numpy()
  fused = Ops.MULACC in Device[device].renderer.code_for_op
  want = [oracle(*x, np.float32) if fused else float(np.float32(np.float32(x[0]) * np.float32(x[1])) + np.float32(x[2])) for x in xs]
  bad = [(x, g, w) for x, g, w in zip(xs, got.tolist(), want) if not same(g, w)]
  assert not bad, bad[:5]

def test_folded_constant_is_rounded_once():
  a, b, c = 1 + 2.0**-12, 1 + 2.0**-12, 2.0**-70
  u = UOp(Ops.MULACC, dtypes.float32, tuple(UOp.const(dtypes.float32, v) for v in (a, b, c)))
  folded = graph_rewrite(u, symbolic)
  assert folded.op is Ops.CONST and folded.arg == fma(a, b, c, dtypes.float32) != float(np.float32(a*b + c))
