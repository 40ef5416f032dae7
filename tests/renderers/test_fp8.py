"""fp8e4m3 (the "fn" variant: no inf, NaN 0x7F, saturating at 448) and fp8e5m2 (IEEE-like) held as float and stored as one byte by the
LLVM and C renderers and the PYTHON emulator: every byte decoded against the formats' definition (numpy), values rounded to nearest even
against dtype.py's python rounding of constants (every midpoint between neighbours, subnormals, overflow, inf, NaN, -0.0), rounding after
each op, casts from ints, doubles and between the narrow floats; torch's float8 types as a second oracle where torch is installed."""
import math
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.device import Device
from tinygrad.dtype import truncate

FORMATS = {dtypes.fp8e4m3: (4, 3, False), dtypes.fp8e5m2: (5, 2, True)}  # exponent bits, mantissa bits, has inf

def decoded(dt) -> np.ndarray:
  """the value of each byte 0..255 by the format's definition"""
  ebits, mbits, ieee = FORMATS[dt]
  c = np.arange(256)
  sign, e, m = np.where(c & 0x80, -1.0, 1.0), (c >> mbits) & ((1 << ebits) - 1), c & ((1 << mbits) - 1)
  bias = (1 << (ebits - 1)) - 1
  v = sign * np.where(e == 0, m * 2.0 ** (1 - bias - mbits), (1 + m / (1 << mbits)) * 2.0 ** (e - bias))
  top = e == (1 << ebits) - 1
  if ieee: return np.where(top & (m == 0), sign * np.inf, np.where(top, np.nan, v))
  return np.where(top & (m == (1 << mbits) - 1), np.nan, v)

def devices() -> list[str]:
  found = ["CPU", "PYTHON"]
  try:
    Device["CPU:C"]
    found.append("CPU:C")
  except Exception: pass  # no C compiler: the LLVM and PYTHON forms still run
  return found

@pytest.fixture(params=devices())
def device(request): return request.param

def same(got:np.ndarray, want:np.ndarray):
  np.testing.assert_array_equal(got, want)
  keep = ~np.isnan(want)
  np.testing.assert_array_equal(np.signbit(got[keep]), np.signbit(want[keep]))  # -0.0 kept (a NaN's sign is not)

@pytest.mark.parametrize("dt", list(FORMATS))
def test_every_byte_decodes(device, dt):
  got = Tensor(np.arange(256, dtype=np.uint8), device=device).bitcast(dt).cast(dtypes.float32).numpy()
  same(got, decoded(dt).astype(np.float32))
  back = Tensor(np.arange(256, dtype=np.uint8), device=device).bitcast(dt).bitcast(dtypes.uint8).numpy()
  keep = ~np.isnan(decoded(dt))  # a NaN may come back as the format's one NaN byte
  np.testing.assert_array_equal(back[keep], np.arange(256)[keep])

def probes(dt) -> np.ndarray:
  """every finite value, every midpoint between neighbours (ties go to even), a dense log-uniform spread, the subnormal range, values
  around and past the largest, inf, NaN and both zeros"""
  v = np.unique(decoded(dt)[np.isfinite(decoded(dt))])
  rng = np.random.default_rng(0)
  spread = np.exp2(rng.uniform(-22, 17, 20000)) * rng.choice([-1.0, 1.0], 20000)
  edge = np.array([v.max() * f for f in (1.01, 1.03, 1.0624, 1.0626, 1.125, 1.2, 2, 1e6)] + [np.inf, -np.inf, np.nan, 0.0, -0.0])
  return np.concatenate([v, (v[1:] + v[:-1]) / 2, spread, edge, -edge]).astype(np.float32)

@pytest.mark.parametrize("dt", list(FORMATS))
def test_rounding_from_float32(device, dt):
  x = probes(dt)
  want = np.array([truncate[dt](float(v)) for v in x], np.float32)
  same(Tensor(x, device=device).cast(dt).cast(dtypes.float32).numpy(), want)

@pytest.mark.parametrize("dt", list(FORMATS))
def test_torch_agrees_in_range(dt):
  """torch's float8 casts saturate to NaN (e4m3fn) past the largest value where tg (and dtype.py) saturate to 448: compared in range"""
  torch = pytest.importorskip("torch")
  x = probes(dt)
  x = x[np.isfinite(x) & (np.abs(x) <= np.nanmax(decoded(dt)[np.isfinite(decoded(dt))]))]
  tdt = torch.float8_e4m3fn if dt is dtypes.fp8e4m3 else torch.float8_e5m2
  same(Tensor(x).cast(dt).cast(dtypes.float32).numpy(), torch.from_numpy(x).to(tdt).float().numpy())

@pytest.mark.parametrize("dt", list(FORMATS))
def test_ops_round_each_result(device, dt):
  rng = np.random.default_rng(1)
  a = np.array([truncate[dt](float(v)) for v in rng.uniform(-20, 20, 4096)], np.float32)
  b = np.array([truncate[dt](float(v)) for v in rng.uniform(-20, 20, 4096)], np.float32)
  ta, tb = Tensor(a, device=device).cast(dt), Tensor(b, device=device).cast(dt)
  r = lambda arr: np.array([truncate[dt](float(v)) for v in arr], np.float32)
  same((ta * tb).cast(dtypes.float32).numpy(), r(a.astype(np.float64) * b))
  same((ta * tb + ta).cast(dtypes.float32).numpy(), r(r(a.astype(np.float64) * b) + a))
  same(ta.maximum(tb).cast(dtypes.float32).numpy(), np.maximum(a, b))

@pytest.mark.parametrize("dt", list(FORMATS))
def test_casts_from_ints_doubles_and_narrow_floats(device, dt):
  ints = np.array([0, 1, -3, 17, 300, -300, 449, 1000, 2**20, -(2**31)], np.int64)
  for src in (dtypes.int32, dtypes.int64, dtypes.int8):
    x = ints.astype(np.dtype(src.fmt)) if src is not dtypes.int8 else ints.astype(np.int8)
    same(Tensor(x, device=device).cast(dt).cast(dtypes.float32).numpy(), np.array([truncate[dt](float(v)) for v in x], np.float32))
  d = np.array([1 + 2.0**-40, 0.3, -1e-7, 3.0 * 2**-10, 57344.0 + 4095], np.float64)  # one rounding from double, not two
  same(Tensor(d, device=device).cast(dt).cast(dtypes.float32).numpy(), np.array([truncate[dt](float(v)) for v in d], np.float32))
  h = np.array([0.1, 300.0, -65504.0, 6e-5], np.float16)
  same(Tensor(h, device=device).cast(dt).cast(dtypes.float32).numpy(), np.array([truncate[dt](float(v)) for v in h], np.float32))
  other = dtypes.fp8e5m2 if dt is dtypes.fp8e4m3 else dtypes.fp8e4m3
  v = np.array([truncate[dt](float(x)) for x in (0.3, -5.0, 448.0, 2.0**-9)], np.float32)
  same(Tensor(v, device=device).cast(dt).cast(other).cast(dtypes.float32).numpy(), np.array([truncate[other](float(x)) for x in v], np.float32))
  assert Tensor([1.5], device=device).cast(dt).cast(dtypes.float16).numpy().dtype == np.float16
  assert math.isnan(Tensor([float("nan")], device=device).cast(dt).cast(dtypes.float32).item())
