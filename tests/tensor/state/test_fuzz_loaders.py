"""Mutated model files either load or raise FormatError: never another exception, never a hang, never a large allocation."""
import io, json, pathlib, struct, sys, tracemalloc, zipfile
from collections import OrderedDict
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad import Tensor
from tinygrad.nn.state import safe_load, torch_load, gguf_load, FormatError
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the writers beside this file are found by path
from gguf_writer import gguf_file, q4_0
from torch_writer import FakeStorage, FakeTensor, zip_checkpoint, legacy_checkpoint

def _safetensors() -> bytes:
  js = json.dumps({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}, "b": {"dtype": "I8", "shape": [3], "data_offsets": [16, 19]},
                   "__metadata__": {"k": "v"}}).encode()
  return struct.pack("<Q", len(js)) + js + bytes(range(19))
def _torch(write) -> bytes:
  s = FakeStorage("FloatStorage", "f", [1.0, 2.0, 3.0, 4.0])
  return write(OrderedDict(a=FakeTensor(s, 0, (2, 2), (2, 1)), b=FakeTensor(s, 1, (2,), (2,))))
SEEDS = {"safetensors": (safe_load, _safetensors()), "torch zip": (torch_load, _torch(zip_checkpoint)),
         "torch legacy": (torch_load, _torch(legacy_checkpoint)),
         "gguf": (gguf_load, gguf_file({"s": "x", "a": [1, 2]}, {"w": (0, (2, 2), b"\0" * 16), "q": (2, (32,), q4_0([1.0], [[3] * 32]))}))}

def _mutate(blob:bytes, data) -> bytes:
  b = bytearray(blob)
  for _ in range(data.draw(st.integers(1, 4))):
    kind, at = data.draw(st.sampled_from(["flip", "truncate", "u64", "u32"])), data.draw(st.integers(0, len(b) - 1))
    if kind == "flip": b[at] ^= 1 << data.draw(st.integers(0, 7))
    elif kind == "truncate": del b[at:]
    else:  # a lying length, count or offset: small, huge, or off by a little
      n = 8 if kind == "u64" else 4
      b[at:at+n] = data.draw(st.sampled_from([0, 1, 2**(8*n) - 1, 2**(8*n-4), len(blob) + 1])).to_bytes(n, "little")
    if not b: break
  return bytes(b)

def _realize_all(obj):
  if isinstance(obj, Tensor): obj.realize()
  elif isinstance(obj, dict): [_realize_all(v) for v in obj.values()]
  elif isinstance(obj, (list, tuple)): [_realize_all(v) for v in obj]

@pytest.mark.parametrize("fmt", list(SEEDS))
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_files_load_or_raise_format_error(tmp_path, fmt, data):
  load, seed = SEEDS[fmt]
  (p := tmp_path / "f.bin").write_bytes(blob := _mutate(seed, data))
  tracemalloc.start()
  try: out = load(p)
  except FormatError: out = None
  finally:
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
  assert peak < 64 * len(blob) + (4 << 20), f"{fmt}: {peak} bytes traced for a {len(blob)}-byte file"
  _realize_all(out)  # what loaded is usable: every view stays inside its storage

def _huge_safetensors() -> bytes:
  js = json.dumps({"a": {"dtype": "F64", "shape": [1 << 37], "data_offsets": [0, 1 << 40]}}).encode()
  return struct.pack("<Q", len(js)) + js
def _huge_torch() -> bytes:
  return zip_checkpoint({"a": FakeTensor(FakeStorage("FloatStorage", "f", [0.0]), 0, (1 << 38,), (1,))})
def _huge_gguf_tensor() -> bytes: return gguf_file({}, {"w": (0, (1 << 38,), b"\0" * 4)})
def _huge_gguf_kv() -> bytes: return b"GGUF" + struct.pack("<IQQ", 3, 0, 1 << 60)

@pytest.mark.parametrize("make, load", [(_huge_safetensors, safe_load), (_huge_torch, torch_load), (_huge_gguf_tensor, gguf_load),
                                        (_huge_gguf_kv, gguf_load)])
def test_huge_declared_sizes_fail_fast_and_small(tmp_path, make, load):
  (p := tmp_path / "huge.bin").write_bytes(make())
  tracemalloc.start()
  try:
    with pytest.raises(FormatError): load(p)
  finally:
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
  assert peak < 1 << 20, f"{peak} bytes traced"

def test_pickle_length_past_the_end_is_not_allocated(tmp_path):
  # BINBYTES8 claiming 1 TB: the C unpickler would allocate it before reading; the opcode scan refuses it first
  pkl = b"\x80\x04\x8e" + struct.pack("<Q", 1 << 40) + b"xx."
  f = io.BytesIO()
  with zipfile.ZipFile(f, "w") as z: z.writestr("archive/data.pkl", pkl)
  (p := tmp_path / "b.pth").write_bytes(f.getvalue())
  tracemalloc.start()
  try:
    with pytest.raises(FormatError, match="bad pickle"): torch_load(p)
  finally:
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
  assert peak < 1 << 20
