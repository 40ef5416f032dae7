"""One matmul's kernels in one process, THREADS=1, CPU time of the calling thread, rounds interleaved, best of each: B in its own
row-major layout (the heuristic's opts and a 4x16 tile) against B in a panel-major copy made by numpy ((N/16, K, 16), what
schedule/pack.py writes) under several register tiles, each without and with fused multiply-add. No copy time: the kernels alone.
Usage: THREADS=1 python bench/matmul_panel_kernels.py N rounds"""
import pathlib, sys, time
sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "tests" / "codegen"))  # the test kernels: one matmul AST
import numpy as np
from test_opt import matmul, kernel
from tinygrad import Device
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp
from tinygrad.helpers import Context
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import apply_opts, Opt, OptOps, hand_coded_opts
from tinygrad.codegen.opt.search import _scratch

n, rounds, W = int(sys.argv[1]), int(sys.argv[2]), 16
U, S = OptOps.UPCAST, OptOps.SWAP
def panel_matmul(m, nn, k):
  """out[i, j] = sum_r a[i, r] * packed[j//16, r, j%16], j split as the optimizer splits it (codegen/opt/split_ranges.py)"""
  def body(out, a, b):
    i, jo, ji, r = UOp.range(m, 0), UOp.range(nn//W, 1), UOp.range(W, 2), UOp.range(k, 3, AxisType.REDUCE)
    return i*nn + jo*W + ji, (a[i*k + r].load() * b[jo*(k*W) + r*W + ji].load()).reduce(r, op=Ops.ADD), (i, jo, ji)
  return kernel((m, nn, k), body, 2, [m*k, k*nn], m*nn, "mmp")[0]
(plain, _), _ = matmul(n, n, n)
panel = panel_matmul(n, n, n)
dev = Device["CPU"]
A, B = np.random.rand(n, n).astype(np.float32), np.random.rand(n, n).astype(np.float32)
Bp = np.ascontiguousarray(B.reshape(n, n//W, W).transpose(1, 0, 2))
cfgs = {"row-major B, heuristic": (plain, hand_coded_opts(plain, dev.renderer), B),
        "row-major B, 4x16": (plain, [Opt(U, 1, 16), Opt(U, 0, 4), Opt(S, 0, 1)], B),
        "panel B, 4x16": (panel, [Opt(U, 2, 16), Opt(U, 0, 4), Opt(S, 0, 1)], Bp),
        "panel B, 8x16": (panel, [Opt(U, 2, 16), Opt(U, 0, 8), Opt(S, 0, 1)], Bp),
        "panel B, 2x32": (panel, [Opt(U, 2, 16), Opt(U, 1, 2), Opt(U, 0, 2), Opt(S, 0, 1)], Bp)}
if n % 6 == 0: cfgs["panel B, 6x16"] = (panel, [Opt(U, 2, 16), Opt(U, 0, 6), Opt(S, 0, 1)], Bp)
runs = []
for name, (ast, opts, b) in cfgs.items():
  for fma in (0, 1):
    with Context(FMA=fma): spec = get_program(apply_opts(ast, [o for o in opts if o.op is not OptOps.THREAD]), dev.renderer)
    prg = dev.runtime(spec.name, dev.compiler.compile(spec.src))
    bufs = _scratch(ast, "CPU")
    for buf, x in zip(bufs[1:], (A, b)): buf.copyin(memoryview(x.ravel()).cast("B"))
    prg(*[x._buf for x in bufs])
    assert np.allclose(np.frombuffer(bufs[0].as_buffer(), dtype=np.float32).reshape(n, n), A @ B, rtol=1e-3, atol=1e-2), name
    runs.append((f"{name}{', FMA' if fma else ''}", prg, [x._buf for x in bufs]))
best = {r[0]: float("inf") for r in runs}
for _ in range(rounds):
  for name, prg, args in runs:
    st = time.thread_time(); prg(*args); best[name] = min(best[name], time.thread_time() - st)
for name, t in best.items(): print(f"N={n} {name:30s} {2*n**3/t/1e9:6.1f} GFLOP/s")
