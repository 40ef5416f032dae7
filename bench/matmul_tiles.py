"""Register tiles for the packed matmul kernel (A row-major, B in the panel-major copy schedule/pack.py writes: (N/16, K, 16)): the
heuristic's 8x2x16 tile (16 accumulators, kernel.MAX_LANES = 256 lanes) against tiles of 24 accumulators (384 lanes: the cap raised here,
for this script only). The kernel alone, at the heuristic's thread split, wall time, best of `rounds`; each result checked against numpy.
A tile that does not divide the sizes is left out (power-of-two sizes need padding for 24 accumulators: use N = 1536 or 3072).
Usage: python bench/matmul_tiles.py N rounds"""
import pathlib, sys, time
sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "tests" / "codegen"))  # the test kernels' builder
import numpy as np
from test_opt import kernel
from tinygrad import Device
from tinygrad.uop import Ops, AxisType
from tinygrad.uop.ops import UOp
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import apply_opts, Opt, OptOps, hand_coded_opts
from tinygrad.codegen.opt.search import _scratch
import tinygrad.codegen.opt.kernel as opt_kernel

n, rounds, W = int(sys.argv[1]), int(sys.argv[2]), 16
TILES = [(8, 2), (8, 3), (6, 4), (12, 2), (4, 6)]  # (rows of A, panels of B) x 16 columns

def panel_matmul(m:int, nn:int, k:int) -> UOp:
  """out[i, j] = sum_r a[i, r] * packed[j//16, r, j%16], j split as the optimizer splits it (codegen/opt/split_ranges.py)"""
  def body(out, a, b):
    i, jo, ji, r = UOp.range(m, 0), UOp.range(nn//W, 1), UOp.range(W, 2), UOp.range(k, 3, AxisType.REDUCE)
    return i*nn + jo*W + ji, (a[i*k + r].load() * b[jo*(k*W) + r*W + ji].load()).reduce(r, op=Ops.ADD), (i, jo, ji)
  return kernel((m, nn, k), body, 2, [m*k, k*nn], m*nn, "mmp")[0]

if __name__ == "__main__":
  ast, dev = panel_matmul(n, n, n), Device["CPU"]
  heuristic = hand_coded_opts(ast, dev.renderer)
  threads = [o for o in heuristic if o.op is OptOps.THREAD]
  print(f"heuristic: {heuristic}")
  opt_kernel.MAX_LANES = 384
  A, B = np.random.rand(n, n).astype(np.float32), np.random.rand(n, n).astype(np.float32)
  packed = np.ascontiguousarray(B.reshape(n, n//W, W).transpose(1, 0, 2))
  runs = []
  for rows, panels in TILES:
    if n % rows or (n // W) % panels: continue
    opts = [Opt(OptOps.UPCAST, 2, W), Opt(OptOps.UPCAST, 1, panels), Opt(OptOps.UPCAST, 0, rows), Opt(OptOps.SWAP, 0, 1)] + threads
    spec = get_program(apply_opts(ast, opts), dev.renderer)
    prg, bufs = dev.runtime(spec.name, dev.compiler.compile(spec.src)), _scratch(ast, "CPU")
    for buf, x in zip(bufs[1:], (A, packed)): buf.copyin(memoryview(x.ravel()).cast("B"))
    run = lambda prg=prg, bufs=bufs, gs=spec.launch_dims({})[0]: prg(*[x._buf for x in bufs], global_size=gs)
    run()
    assert np.allclose(np.frombuffer(bufs[0].as_buffer(), dtype=np.float32).reshape(n, n), A @ B, rtol=1e-3, atol=1e-2), (rows, panels)
    runs.append((f"{rows}x{panels}x{W} ({rows * panels} accumulators)", run))
  best = {name: float("inf") for name, _ in runs}
  for _ in range(rounds):
    for name, run in runs:
      st = time.perf_counter(); run(); best[name] = min(best[name], time.perf_counter() - st)
  for name, t in best.items(): print(f"N={n} {name:32s} {2*n**3/t/1e9:6.1f} GFLOP/s")
