"""Tensor cores (codegen/opt/tc.py): the renderers' fragment layouts against hand-worked entries of the PTX ISA and RDNA3 ISA tables,
the emulator's WMMA (its own reading of those tables) against numpy, TC matmuls of several shapes (padded, or refused where padding
would more than double the work) equal to numpy with float32 accumulation on the emulator with the PTX and RDNA3 descriptions, every opt
list BEAM reaches from them too, the heuristic choosing TC first (TC=0: not), the PTX ptxas accepts and the AMDGPU code LLVM compiles,
and half matmuls on the mock NV and AMD devices end to end."""
import pathlib, random, re, sys
import numpy as np
import pytest
from tinygrad import Tensor, Device, dtypes
from tinygrad.helpers import Context
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp, KernelInfo
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import Opt, OptOps, OptError, apply_opts, hand_coded_opts
from tinygrad.codegen.opt.tc import TensorCore, Fragment
from tinygrad.renderer.python import PythonRenderer, wmma_warp
from tinygrad.renderer.tensor_cores import MMA_M16N8K16, WMMA_RDNA3
from tinygrad.renderer.ptx import PTXRenderer
from tinygrad.renderer.amdgpu import AMDGPURenderer
from tinygrad.runtime.ops_python import PythonProgram
from tinygrad.runtime import cuda_toolchain
sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: this folder's test_opt is not on sys.path by itself

TC, G, L, U, N, P = OptOps.TC, OptOps.GLOBAL, OptOps.LOCAL, OptOps.UPCAST, OptOps.UNROLL, OptOps.PADTO
MMA_F16, MMA_BF16, RDNA3 = MMA_M16N8K16[0], MMA_M16N8K16[1], WMMA_RDNA3[0]

def emulated(*tcs:TensorCore) -> PythonRenderer:
  """the PYTHON emulator with a GPU renderer's tensor cores, as NV's and AMD's mock devices run them"""
  return type("EmulatedTC", (PythonRenderer,), {"tensor_cores": tcs})()

def bf16(x:np.ndarray) -> np.ndarray: return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # truncated: exact values
def bf16_values(bits:np.ndarray) -> np.ndarray: return (bits.astype(np.uint32) << 16).view(np.float32)

def half_matmul(m:int, n:int, k:int, dt=dtypes.half, seed:int=0):
  """out[m,n] = sum_k float(a[m,k]*b[k,n]) over half (or bfloat16) inputs, as Tensor.matmul builds it; (ast, inputs, numpy result)"""
  out, a, b = UOp.param(0, dtypes.float, (m*n,)), UOp.param(1, dt, (m*k,)), UOp.param(2, dt, (k*n,))
  i, j, r = UOp.range(m, 0), UOp.range(n, 1), UOp.range(k, 2, AxisType.REDUCE)
  ast = out[i*n+j].store((a[i*k+r].load() * b[r*n+j].load()).cast(dtypes.float).reduce(r, op=Ops.ADD)).end(i, j).sink(arg=KernelInfo(name="mm"))
  rng = np.random.default_rng(seed)
  x, y = rng.standard_normal((m, k)), rng.standard_normal((k, n))
  if dt is dtypes.bfloat16: ins, vals = [bf16(x), bf16(y)], [bf16_values(bf16(x)), bf16_values(bf16(y))]
  else: ins = vals = [x.astype(np.float16), y.astype(np.float16)]
  return ast, ins, (vals[0].astype(np.float64) @ vals[1].astype(np.float64)).astype(np.float32).ravel()

def run_emulated(ast:UOp, renderer, ins:list[np.ndarray], out_size:int) -> tuple[np.ndarray, bool]:
  """(the kernel's output, whether it runs on the tensor cores)"""
  spec = get_program(ast, renderer)
  bufs = [memoryview(bytearray(out_size * 4))] + [memoryview(bytearray(x.tobytes())) for x in ins]
  gs, ls = spec.launch_dims({})
  PythonProgram(spec.name, spec.src.encode())(*bufs, global_size=gs, local_size=ls)
  return np.frombuffer(bufs[0], np.float32), any(u.op is Ops.WMMA for u in spec.uops)

# *** the layouts: golden entries worked by hand from the ISA tables ***

def test_mma_m16n8k16_layout_from_the_ptx_isa():
  # lane 5: groupID 1, threadID_in_group 1. a_i: row 1 (i = 0,1,4,5) or 9, col 2+(i&1) (+8 for i >= 4); b_i: row 2+(i&1) (+8 for i >= 2),
  # col 1; c_i: row 1 (i < 2) or 9, col 2+(i&1). Lane 30: groupID 7, threadID_in_group 2.
  for tc in MMA_M16N8K16:
    assert [tc.a.at(5, i) for i in range(8)] == [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11), (9, 10), (9, 11)]
    assert [tc.b.at(5, i) for i in range(4)] == [(2, 1), (3, 1), (10, 1), (11, 1)]
    assert [tc.c.at(5, i) for i in range(4)] == [(1, 2), (1, 3), (9, 2), (9, 3)]
    assert (tc.a.at(30, 0), tc.a.at(30, 7), tc.b.at(30, 3), tc.c.at(30, 3)) == ((7, 4), (15, 13), (13, 7), (15, 5))
    assert (tc.dims, tc.threads, tc.elements) == ((8, 16, 16), 32, (8, 4, 4))
  assert (MMA_F16.dtype_in, MMA_BF16.dtype_in, MMA_F16.dtype_out) == (dtypes.float16, dtypes.bfloat16, dtypes.float32)

def test_wmma_rdna3_layout_from_the_rdna3_isa():
  # wave32: lane l holds row l%16 of A and column l%16 of B, k = element; D element i of lane l is at row 2i + l//16, column l%16
  assert [RDNA3.c.at(17, i) for i in range(8)] == [(1, 1), (3, 1), (5, 1), (7, 1), (9, 1), (11, 1), (13, 1), (15, 1)]
  assert [RDNA3.c.at(2, i) for i in range(3)] == [(0, 2), (2, 2), (4, 2)]
  assert (RDNA3.a.at(20, 3), RDNA3.a.at(4, 3), RDNA3.b.at(20, 3), RDNA3.b.at(31, 15)) == ((4, 3), (4, 3), (3, 4), (15, 15))

def test_the_emulator_reads_the_isa_the_same_way():
  # the emulator's own tables (renderer/python.py, written in the ISA's groupID/threadID_in_group terms) agree with every entry
  from tinygrad.renderer.python import WMMA_SEMANTICS
  for tc in (MMA_F16, MMA_BF16, RDNA3):
    at = WMMA_SEMANTICS[tc.name][-1]
    for what, f in zip("ABC", (tc.a, tc.b, tc.c)):
      assert all(f.at(lane, e) == at(what, lane, e) for lane in range(32) for e in range(len(f.elems))), (tc.name, what)

def test_a_description_must_cover_its_matrices():
  with pytest.raises(ValueError, match="the B fragments of 32 lanes do not cover its 16x8 matrix"):
    TensorCore("bad", (8, 16, 16), 32, dtypes.half, dtypes.float, MMA_F16.a, Fragment(MMA_F16.b.lane_bits, ((0, 0),) * 4), MMA_F16.c)

# *** the emulator's WMMA ***

@pytest.mark.parametrize("tc", [MMA_F16, RDNA3], ids=["mma", "rdna3"])
def test_wmma_warp_is_the_matrix_product(tc):
  rng = np.random.default_rng(1)
  n, m, k = tc.dims
  a, b, c = (rng.standard_normal(s).astype(np.float16).astype(np.float64) for s in ((m, k), (k, n), (m, n)))
  c = c.astype(np.float32).astype(np.float64)
  lanes = [[a[tc.a.at(l, e)] for e in range(len(tc.a.elems))] + [b[tc.b.at(l, e)] for e in range(len(tc.b.elems))] +
           [c[tc.c.at(l, e)] for e in range(len(tc.c.elems))] for l in range(32)]
  d = wmma_warp(tc.name, lanes)
  ref = a @ b + c
  assert all(abs(d[l][e] - ref[tc.c.at(l, e)]) <= 1e-6 * max(1, abs(ref[tc.c.at(l, e)])) for l in range(32) for e in range(len(tc.c.elems)))

def test_lanes_that_disagree_are_refused():
  lanes = [[float(l % 16)] * 16 + [1.0] * 16 + [0.0] * 8 for l in range(32)]
  lanes[16][0] = 99.0  # lane 16 must repeat lane 0's row of A
  with pytest.raises(RuntimeError, match=r"lanes disagree on A\[0, 0\]"): wmma_warp(RDNA3.name, lanes)
  with pytest.raises(RuntimeError, match="does not know the tensor core 'mma.bogus'"): wmma_warp("mma.bogus", lanes)

def test_a_wrong_layout_gives_wrong_results():
  # B's elements 0 and 1 swapped: still a cover of B, so the description is accepted, but the kernel hands the hardware (the emulator's
  # reading of the ISA) the wrong rows of B
  swapped = Fragment(MMA_F16.b.lane_bits, (MMA_F16.b.elems[1], MMA_F16.b.elems[0]) + MMA_F16.b.elems[2:])
  bad = TensorCore(MMA_F16.name, MMA_F16.dims, 32, dtypes.half, dtypes.float, MMA_F16.a, swapped, MMA_F16.c)
  ast, ins, ref = half_matmul(16, 8, 16)
  r = emulated(bad)
  out, wmma = run_emulated(apply_opts(ast, [Opt(TC, 0, 0)], r), r, ins, ref.size)
  assert wmma and not np.allclose(out, ref, rtol=1e-3, atol=1e-3)

# *** TC matmuls against numpy ***

# per tile shape: TC splits m, n, k into (outer loop, tile) and pads them to a multiple first; the outer loops are the axes after it
TC_CASES = {
  "mma": [((16, 8, 16), [Opt(TC, 0, 0)]), ((32, 24, 48), [Opt(TC, 0, 0), Opt(G, 0, 2), Opt(G, 0, 3)]),
          ((32, 24, 48), [Opt(TC, 0, 0), Opt(U, 0, 2), Opt(N, 1, 3)]), ((20, 12, 24), [Opt(TC, 0, 0)]),  # 20x12x24: m, n, k padded
          ((20, 12, 24), [Opt(TC, 0, 0), Opt(G, 0, 2), Opt(G, 0, 2), Opt(L, 1, 2)]),
          ((64, 16, 32), [Opt(TC, 0, 0), Opt(G, 0, 4), Opt(G, 0, 2), Opt(L, 0, 4), Opt(U, 0, 2)])],
  "rdna3": [((16, 16, 16), [Opt(TC, 0, 0)]), ((32, 48, 48), [Opt(TC, 0, 0), Opt(G, 0, 2), Opt(G, 0, 3)]),
            ((32, 48, 48), [Opt(TC, 0, 0), Opt(U, 0, 2), Opt(N, 1, 3)]), ((20, 12, 24), [Opt(TC, 0, 0)]),
            ((64, 16, 32), [Opt(TC, 0, 0), Opt(G, 0, 4), Opt(L, 0, 4), Opt(N, 0, 2)])],
}
TC_PARAMS = [(tcs, dt, shape, opts) for name, tcs, dt in (("mma", MMA_M16N8K16, dtypes.half), ("rdna3", WMMA_RDNA3, dtypes.half))
             for shape, opts in TC_CASES[name]] + [(MMA_M16N8K16, dtypes.bfloat16, shape, opts) for shape, opts in TC_CASES["mma"][2:4]]
def _tc_id(p): return f"{p[0][0].name.split('.')[0]}-{p[1].name}-{'x'.join(map(str, p[2]))}-{'+'.join(f'{o.op.name}{o.axis}x{o.amt}' for o in p[3])}"

@pytest.mark.parametrize("tcs, dt, shape, opts", TC_PARAMS, ids=[_tc_id(p) for p in TC_PARAMS])
def test_tc_matmul_matches_numpy(tcs, dt, shape, opts):
  ast, ins, ref = half_matmul(*shape, dt=dt)
  r = emulated(*tcs)
  opts = [Opt(TC, 0, 1) if o.op is TC and dt is dtypes.bfloat16 else o for o in opts]
  out, wmma = run_emulated(apply_opts(ast, opts, r), r, ins, ref.size)
  assert wmma
  np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)

@pytest.mark.parametrize("ast, opts, renderer, msg", [
  (half_matmul(5, 8, 16)[0], [Opt(TC, 0, 0)], emulated(MMA_F16), "the m axis of size 5 padded to a multiple of 16 \\(16\\) more than doubles"),
  (half_matmul(16, 8, 16, dt=dtypes.bfloat16)[0], [Opt(TC, 0, 0)], emulated(MMA_F16), "multiplies dtypes.half values, the product is of dtypes.bfloat16"),
  (half_matmul(16, 8, 16)[0], [Opt(U, 0, 2), Opt(TC, 0, 0)], emulated(MMA_F16), "TC comes first"),
  (half_matmul(16, 8, 16)[0], [Opt(TC, 1, 0)], emulated(MMA_F16), "1 \\(m, n, k\\) axis choices, asked for number 1"),
  (half_matmul(16, 8, 16)[0], [Opt(TC, 0, 0)], PythonRenderer(), "PythonRenderer declares 0 tensor cores"),
  (half_matmul(16, 8, 16)[0], [Opt(TC, 0, 0)], None, "NoneType declares 0 tensor cores"),
])
def test_tc_that_does_not_fit_says_why(ast, opts, renderer, msg):
  with pytest.raises(OptError, match=msg): apply_opts(ast, opts, renderer)

def test_float32_matmul_is_no_tc_matmul():
  from test_opt import matmul
  (ast, _), _ = matmul(16, 16, 16)
  with pytest.raises(OptError, match="multiplies dtypes.half values, the product is of dtypes.float and dtypes.float"):
    apply_opts(ast, [Opt(TC, 0, 0)], emulated(MMA_F16))

# *** the heuristic and BEAM ***

def test_heuristic_chooses_tc_first():
  ast, ins, ref = half_matmul(32, 16, 32)
  r = emulated(*MMA_M16N8K16)
  opts = hand_coded_opts(ast, r)
  assert opts[0] == Opt(TC, 0, 0) and all(o.op is not TC for o in opts[1:])
  out, wmma = run_emulated(apply_opts(ast, opts, r), r, ins, ref.size)
  assert wmma
  np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
  with Context(TC=0): assert all(o.op is not TC for o in hand_coded_opts(ast, r))
  assert all(o.op is not TC for o in hand_coded_opts(half_matmul(5, 8, 16)[0], r))  # padding would more than double it: the grid
  assert all(o.op is not TC for o in hand_coded_opts(ast, Device["CPU"].renderer))  # the CPU declares no tensor cores

@pytest.mark.parametrize("seed, tcs, shape", [(0, MMA_M16N8K16, (32, 24, 32)), (1, WMMA_RDNA3, (20, 16, 32))], ids=["mma", "rdna3"])
def test_every_beam_candidate_matches_numpy(seed, tcs, shape):
  from tinygrad.codegen.opt import search
  rnd, r = random.Random(seed), emulated(*tcs)
  ast, ins, ref = half_matmul(*shape, seed=seed)
  assert Opt(TC, 0, 0) in search.actions(ast, r)
  with Context(TC=0): assert not any(o.op is TC for o in search.actions(ast, r))
  # BEAM's extension step, two rounds, from TC alone and from the heuristic's list (which starts with TC); the opt lists without TC are
  # test_beam's (on these renderers they differ only in which lists BEAM also tries)
  level, cands = [(Opt(TC, 0, 0),), tuple(hand_coded_opts(ast, r))], []
  for width in (4, 3):
    nxt = [c for opts in level for c in search._extend(ast, opts, r)]
    cands += (level := rnd.sample(nxt, min(width, len(nxt))))
  assert len(cands) == 7 and all(opts[0].op is TC for opts in cands)
  for opts in cands:
    out, wmma = run_emulated(apply_opts(ast, opts, r), r, ins, ref.size)
    assert wmma, opts
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4, err_msg=str(opts))

# *** what the GPU compilers make of it ***

def _tc_kernel(renderer):
  ast, _, _ = half_matmul(32, 24, 48)  # 2 x 3 tiles of mma (2 x 2 of RDNA3's, n padded to 32), k in 3 steps
  return get_program(apply_opts(ast, [Opt(TC, 0, 0), Opt(G, 0, 2)], renderer), renderer).src

def test_ptx_has_one_mma_per_tile():
  src = _tc_kernel(PTXRenderer("sm_80"))
  assert src.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f") == 1 and src.count("cvt.rn.f16x2.f32") == 6
  # the accumulators are the mma's C (codegen/opt/tc.py accumulate_in_wmma): no float adds, four distinct C registers
  c = re.search(r"mma\.sync\S+ \{[^}]*\}, \{[^}]*\}, \{[^}]*\}, \{([^}]*)\};", src)[1].split(", ")
  assert "add.rn.f32" not in src and len(set(c)) == 4
  assert PTXRenderer("sm_75").tensor_cores == () and PTXRenderer("sm_90").tensor_cores == MMA_M16N8K16

@pytest.mark.skipif(cuda_toolchain.find_tool("ptxas") is None, reason="ptxas is not installed (test_ptx_has_one_mma_per_tile still runs)")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptxas_accepts_tc_kernels(arch):
  from tinygrad.runtime.compiler_cuda import PTXCompiler
  PTXCompiler(arch).compile(_tc_kernel(PTXRenderer(arch)))

def test_amdgpu_wmma_compiles_for_rdna3():
  from tinygrad.runtime.compiler_amdgpu import AMDGPUCompiler, read_code_object
  src = _tc_kernel(AMDGPURenderer("gfx1100"))
  assert src.count("call <8 x float> @llvm.amdgcn.wmma.f32.16x16x16.f16(") == 1 and "fadd float" not in src.split("define internal")[0]
  assert read_code_object(AMDGPUCompiler("gfx1100").compile(src), "mm").elf.machine == 224
  assert AMDGPURenderer("gfx90a").tensor_cores == ()

# *** end to end on the mock GPUs ***

@pytest.mark.parametrize("dev", ["NV", "NV:PTX", "AMD", "AMD:LLVM"])
def test_half_matmul_on_mock_gpus(dev):
  if dev == "NV:PTX" and cuda_toolchain.find_tool("ptxas") is None: pytest.skip("ptxas is not installed")
  rng = np.random.default_rng(2)
  a, b = rng.standard_normal((20, 40)).astype(np.float16), rng.standard_normal((40, 24)).astype(np.float16)
  out = Tensor(a, device=dev).matmul(Tensor(b, device=dev), dtype=dtypes.float).numpy()
  # float32 sums of exact products (a half product rounded to half would be off by up to ~1e-3 here)
  np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)
