"""The cubin reader (runtime/cubin.py). Oracles: two cubins checked in (cubins/, made by ptxas 13.0 V13.0.88 from GOLDEN_PTX, so CI
without ptxas still reads real ones) with the figures ptxas -v printed for them and the section offsets readelf -S prints; where ptxas
is installed, fresh cubins of our PTX renderer's kernels against ptxas -v's own report; and mutations of the checked-in bytes, which
must raise CubinError naming what is wrong or read back, never crash."""
import pathlib, re, struct, subprocess
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes
from tinygrad.device import CompileError
from tinygrad.renderer.ptx import PTXRenderer
from tinygrad.runtime import cuda_toolchain
from tinygrad.runtime.cubin import read_cubin, attributes, CubinError
from tinygrad.runtime.elf import Elf
from linprog import Prog
from test_gpu_renderers import render

CUBINS = pathlib.Path(__file__).parent / "cubins"
LOCAL_SUM_90 = (CUBINS / "local_sum.sm_90.cubin").read_bytes()
FMA64_80 = (CUBINS / "fma64.sm_80.cubin").read_bytes()
PTXAS = cuda_toolchain.find_tool("ptxas")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas is not installed (test_checked_in_* read real cubins everywhere)")

def test_checked_in_sm90_reduce_with_shared_memory_and_a_barrier():
  # ptxas -v -arch=sm_90: "Used 16 registers, used 1 barriers, 16 bytes smem", "0 bytes stack frame"; readelf -S: .text.local_sum at
  # file offset 0x680, 0x200 bytes; .nv.shared.local_sum 0x410 bytes (16 + the 1 KiB sm_90 reserves per CTA); .nv.constant0 0x220
  k = read_cubin(LOCAL_SUM_90, "local_sum")
  assert (k.sm, k.registers, k.barriers, k.shared, k.frame, k.max_stack) == (90, 16, 1, 16 + 1024, 0, 0)
  assert k.text == LOCAL_SUM_90[0x680:0x680 + 0x200]
  # sm_90 puts the parameters at 0x210 of constant bank 0: two 64-bit buffer addresses, 0x220 bytes in all
  assert (k.param_offset, k.param_size, k.params, k.cbank0_size, k.max_threads) == (0x210, 16, ((0, 0, 8), (1, 8, 8)), 0x220, None)

def test_checked_in_sm80_elementwise():
  # ptxas -v -arch=sm_80: "Used 12 registers, used 0 barriers, 376 bytes cmem[0]"; readelf -S: .text.fma64 at 0x700, 0x180 bytes,
  # sh_info 201326600 = 12 << 24 | 8 (the register count also in the top byte, the symbol index below it)
  k = read_cubin(FMA64_80, "fma64")
  assert (k.sm, k.registers, k.barriers, k.shared, k.cbank0_size) == (80, 12, 0, 0, 376)
  assert k.text == FMA64_80[0x700:0x700 + 0x180]
  assert (k.param_offset, k.params) == (0x160, ((0, 0, 8), (1, 8, 8), (2, 16, 8)))

def test_nv_info_records():
  # the first record of .nv.info.local_sum is EIATTR_CUDA_API_VERSION (0x37), SVAL of 4 bytes: 0x82 = CUDA 13.0
  elf = Elf(LOCAL_SUM_90)
  recs = attributes(elf, elf.section(".nv.info.local_sum"))
  assert (recs[0].code, recs[0].fmt, recs[0].value, recs[0].offset) == (0x37, 4, struct.pack("<I", 130), 0x5cc)
  assert {r.code for r in recs} >= {0x0a, 0x17, 0x19, 0x4c}  # PARAM_CBANK, KPARAM_INFO, CBANK_PARAM_SIZE, NUM_BARRIERS

def test_what_is_missing_or_unsupported_is_named():
  with pytest.raises(CubinError, match="no kernel 'nope'"): read_cubin(LOCAL_SUM_90, "nope")
  with pytest.raises(CubinError, match="not a readable cubin"): read_cubin(b"\x7fELF" + b"\0" * 10, "k")
  with pytest.raises(CubinError, match="e_machine 62"): read_cubin(LOCAL_SUM_90[:18] + struct.pack("<H", 62) + LOCAL_SUM_90[20:], "local_sum")
  elf = Elf(LOCAL_SUM_90)
  # a relocation against the code: give the empty .rela.text.local_sum (header at e_shoff + 11 * 64) 24 bytes
  hdr = struct.unpack_from("<Q", LOCAL_SUM_90, 0x28)[0] + 11 * 64
  relocated = bytearray(LOCAL_SUM_90)
  struct.pack_into("<Q", relocated, hdr + 32, 24)
  with pytest.raises(CubinError, match="relocations.*applies none"): read_cubin(bytes(relocated), "local_sum")
  # a shared memory section larger than any SM has
  big = bytearray(LOCAL_SUM_90)
  struct.pack_into("<Q", big, struct.unpack_from("<Q", LOCAL_SUM_90, 0x28)[0] + 14 * 64 + 32, 1 << 40)
  with pytest.raises(CubinError, match="claims 1099511627776 bytes"): read_cubin(bytes(big), "local_sum")
  # an SVAL record claiming more bytes than the section holds: the CUDA_API_VERSION record's size field
  off = elf.section(".nv.info.local_sum").offset
  with pytest.raises(CubinError, match=f"file offset {off} claims 65535"): read_cubin(LOCAL_SUM_90[:off + 2] + b"\xff\xff" + LOCAL_SUM_90[off + 4:], "local_sum")
  with pytest.raises(CubinError, match=f"file offset {off} has format 9"): read_cubin(LOCAL_SUM_90[:off] + b"\x09" + LOCAL_SUM_90[off + 1:], "local_sum")

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["local_sum", "fma64"]), st.lists(st.tuples(st.integers(0, 4095), st.integers(0, 255)), max_size=6),
       st.one_of(st.none(), st.integers(0, 4096)))
def test_mutated_cubins_raise_cubin_error_or_read(name, flips, cut):
  data = LOCAL_SUM_90 if name == "local_sum" else FMA64_80
  b = bytearray(data)
  for at, v in flips:
    if at < len(b): b[at] = v
  if cut is not None: del b[cut:]
  try: k = read_cubin(bytes(b), name)
  except CubinError: return
  assert 0 < k.registers <= 255 and 0 <= k.shared <= 228 << 10 and k.param_offset + k.param_size <= k.cbank0_size and len(k.text) <= len(b)

# *** fresh cubins of our PTX renderer's kernels, against ptxas -v ***

def many_params() -> str:
  """12 buffers and 3 variables: out[0] = sum of in[k][n0] * n1 + n2"""
  p = Prog()
  bufs = [p.param(i, dtypes.float32, 4) for i in range(12)]
  n = [p.var(f"n{i}", 0, 3) for i in range(3)]
  acc = p.load(bufs[1], n[0])
  for b in bufs[2:]: acc = p.alu(Ops.ADD, acc, p.load(b, n[0]))
  p.store(bufs[0], 0, p.alu(Ops.ADD, p.alu(Ops.MUL, acc, p.cast(n[1], dtypes.float32)), p.cast(n[2], dtypes.float32)))
  return PTXRenderer().render("many_params", p.uops)

def stack_array() -> str:
  """a register array indexed by a variable: the PTX renderer makes it .local, ptxas a stack frame"""
  p = Prog()
  out, n = p.param(0, dtypes.int32, 16), p.var("n", 0, 15)
  arr = p.reg(dtypes.int32, 16)
  r = p.range(16, 0)
  p.store(arr, r, p.alu(Ops.MUL, r, r))
  p.end(r)
  p.store(out, 0, p.load(arr, n))
  return PTXRenderer().render("stack_array", p.uops)

SOURCES = {"fma64": lambda: render(PTXRenderer(), "elementwise"), "local_sum": lambda: render(PTXRenderer(), "local_sum"),
           "do_while": lambda: render(PTXRenderer(), "do_while"), "many_params": many_params, "stack_array": stack_array}

def ptxas_report(ptx:str, arch:str, tmp_path) -> tuple[bytes, dict[str, int]]:
  (src := tmp_path / "k.ptx").write_text(ptx)
  p = subprocess.run([PTXAS, "-v", f"-arch={arch}", str(src), "-o", str(out := tmp_path / "k.cubin")], capture_output=True, text=True, check=True)
  num = lambda pat: int(m[1]) if (m := re.search(pat, p.stderr)) else 0
  return out.read_bytes(), {"registers": num(r"Used (\d+) registers"), "barriers": num(r"used (\d+) barriers"), "smem": num(r"(\d+) bytes smem"),
                            "frame": num(r"(\d+) bytes stack frame"), "cmem0": num(r"(\d+) bytes cmem\[0\]")}

@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", list(SOURCES))
def test_parser_agrees_with_ptxas(name, arch, tmp_path):
  from tinygrad.runtime.ptx_check import check_ptx
  ptx = SOURCES[name]()
  cubin, want = ptxas_report(ptx, arch, tmp_path)
  k = read_cubin(cubin, name)
  assert (k.sm, k.registers, k.barriers, k.frame) == (int(arch[3:]), want["registers"], want["barriers"], want["frame"])
  assert k.shared == want["smem"] + (1024 if arch == "sm_90" and want["smem"] else 0)  # sm_90's reserved 1 KiB is in the section
  if want["cmem0"]: assert k.cbank0_size == want["cmem0"]  # ptxas reports cmem[0] for sm_80
  assert k.param_offset == {"sm_80": 0x160, "sm_90": 0x210}[arch]
  params = check_ptx(ptx)[name]
  assert len(k.params) == len(params) and k.param_size == sum(8 if t.endswith("64") else 4 for t, _ in params)

@needs_ptxas
def test_the_stack_kernel_has_a_frame(tmp_path):
  _, want = ptxas_report(stack_array(), "sm_80", tmp_path)
  assert want["frame"] > 0

def test_cubin_compiler_without_ptxas_says_what_to_install(monkeypatch):
  from tinygrad.runtime.compiler_cuda import CubinCompiler
  monkeypatch.setattr(cuda_toolchain, "find_tool", lambda name: None)
  with pytest.raises(CompileError, match="ptxas not found.*pip install nvidia-cuda-nvcc"): CubinCompiler("sm_90")
  ok, reason = cuda_toolchain.probe_ptxas()
  assert not ok and "ptxas not found" in reason

@needs_ptxas
def test_cubin_compiler_caches_under_ptxas_version_and_arch():
  from tinygrad.runtime.compiler_cuda import CubinCompiler
  c80, c90 = CubinCompiler("sm_80"), CubinCompiler("sm_90")
  assert c80.cachekey != c90.cachekey and re.fullmatch(r"compile_cubin_ptxas\d+\.\d+\.\d+_sm_80", c80.cachekey)
  assert read_cubin(c90.compile(SOURCES["local_sum"]()), "local_sum").sm == 90

@needs_ptxas
def test_maxntid_is_read(tmp_path):
  # .maxntid in the PTX becomes EIATTR_MAX_THREADS (x, y, z)
  ptx = SOURCES["do_while"]().replace("\n)\n{", "\n)\n.maxntid 64, 2, 1\n{", 1)
  cubin, _ = ptxas_report(ptx, "sm_90", tmp_path)
  assert read_cubin(cubin, "do_while").max_threads == (64, 2, 1)
