"""float16 on the LLVM target: converted by LLVM's half type where the host converts in hardware (F16C), by integer helpers for a named
CPU model. Both against numpy, whose float16 ops compute in float and round once, as the renderer does: every float16 bit pattern
widened, floats rounded to float16 (ties, denormals, overflow, NaN), and elementwise ops rounded after each op."""
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes
from tinygrad.renderer.host_cpu import has_f16c, host_has_f16c

TARGETS = ["CPU:LLVM", "CPU:LLVM:x86-64"]  # the host (native when it has F16C) and a named model (the integer helpers)

def test_has_f16c():
  assert has_f16c("x86_64", "flags\t\t: fpu sse avx f16c fma\n") and not has_f16c("x86_64", "flags\t\t: fpu sse avx\n")
  assert has_f16c("aarch64", "") and not has_f16c("riscv64", "flags: f16c")

def test_which_conversions():
  host = Device["CPU:LLVM"].renderer.narrow
  assert host[dtypes.float16].native == host_has_f16c() and not host[dtypes.bfloat16].native
  assert not Device["CPU:LLVM:x86-64"].renderer.narrow[dtypes.float16].native

def _same(got:np.ndarray, want:np.ndarray):
  """bit for bit, except that any NaN matches any NaN (payloads differ between hardware and helpers)"""
  nan = np.isnan(want.astype(np.float32))
  np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
  np.testing.assert_array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))

@pytest.mark.parametrize("dev", TARGETS)
def test_every_half_widened(dev):
  bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
  got = Tensor(bits, device=dev).cast(dtypes.float32).numpy()
  want = bits.astype(np.float32)
  nan = np.isnan(want)
  np.testing.assert_array_equal(np.isnan(got), nan)
  np.testing.assert_array_equal(got[~nan], want[~nan])

@pytest.mark.parametrize("dev", TARGETS)
def test_floats_rounded(dev):
  rng = np.random.default_rng(3)
  halves = rng.integers(0, 1 << 16, 4096, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
  # ties between neighbouring halves (round to even), values just off them, denormals, overflow to inf and the largest half
  with np.errstate(all="ignore"): ties = (halves.astype(np.float64) + np.spacing(halves.astype(np.float16)).astype(np.float64) / 2).astype(np.float32)
  x = np.concatenate([ties, np.nextafter(ties, np.float32(np.inf)), rng.standard_normal(4096).astype(np.float32) * 1e-6,
                      np.array([65504, 65519.99, 65520, 1e30, -1e30, 2**-25, 2**-24, 3 * 2**-26, -0.0, np.inf, np.nan], np.float32)])
  with np.errstate(all="ignore"): _same(Tensor(x, device=dev).cast(dtypes.float16).numpy(), x.astype(np.float16))

@pytest.mark.parametrize("dev", TARGETS)
@pytest.mark.parametrize("op", ["add", "mul", "div", "sqrt", "mulsum"])
def test_rounded_after_each_op(dev, op):
  rng = np.random.default_rng(len(op))
  a = np.concatenate([rng.standard_normal(997) * 50, [0, -0.0, np.inf, 60000, 1e-7]]).astype(np.float16)
  b = np.concatenate([rng.standard_normal(997) * 3, [np.inf, 2, 2, 2, 1e-3]]).astype(np.float16)
  ta, tb = Tensor(a, device=dev), Tensor(b, device=dev)
  # a division is rounded once, like numpy's (codegen/true_division.py)
  with np.errstate(all="ignore"):
    want = {"add": lambda x, y: x + y, "mul": lambda x, y: x * y, "div": lambda x, y: x / y,
            "sqrt": lambda x, y: np.sqrt(np.abs(x)), "mulsum": lambda x, y: x * y + x}[op](a, b)
  got = {"add": lambda: ta + tb, "mul": lambda: ta * tb, "div": lambda: ta / tb, "sqrt": lambda: ta.abs().sqrt(),
         "mulsum": lambda: ta * tb + ta}[op]()
  _same(got.numpy(), want)
