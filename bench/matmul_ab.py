"""matmul kernels in one process, THREADS=1, timed in CPU time (time.thread_time: what this thread ran, so other processes' load does not
count), rounds interleaved, best of each: fused multiply-add or not x huge pages or 4 KB x the 4x16 or 8x16 tile (both with SWAP).
A machine shared with other jobs still moves every figure by 10-30% (shared L3); compare rows of one run. Usage: THREADS=1 python
bench/matmul_ab.py N rounds"""
import itertools, pathlib, sys, time
sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "tests" / "codegen"))  # the test kernels: one matmul AST
from test_opt import matmul
from tinygrad import Device
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import apply_opts, Opt, OptOps
from tinygrad.codegen.opt.search import _scratch
from tinygrad.renderer.llvmir import LLVMRenderer
import tinygrad.runtime.ops_cpu as ops_cpu
import numpy as np
n, rounds = int(sys.argv[1]), int(sys.argv[2])
(ast, _), _ = matmul(n, n, n)
dev = Device["CPU"]
def fill(bufs):
  for b in bufs: b.copyin(memoryview(np.random.rand(b.size).astype(np.float32).data).cast("B"))
  return bufs
thp = fill(_scratch(ast, "CPU"))
ops_cpu.HUGE_PAGE = 1 << 62  # the second set of buffers: plain 4 KB pages
small = fill(_scratch(ast, "CPU"))
renderers = {"fma": dev.renderer, "nofma": LLVMRenderer("znver3")}  # a named CPU model: the renderer forms no MULACC
assert "llvm.fma" not in get_program(ast, renderers["nofma"]).src
tiles = {"4x16": [Opt(OptOps.UPCAST, 1, 16), Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.SWAP, 0, 1)],
         "8x16": [Opt(OptOps.UPCAST, 1, 16), Opt(OptOps.UPCAST, 0, 8), Opt(OptOps.SWAP, 0, 1)]}
cfgs = []
for (rn, r), (tn, t) in itertools.product(renderers.items(), tiles.items()):
  spec = get_program(apply_opts(ast, t), r)
  prg = dev.runtime(spec.name, dev.compiler.compile(spec.src))
  for bn, bufs in (("thp", thp), ("4k", small)): cfgs.append((f"{rn:5s} {tn} {bn:3s}", prg, [b._buf for b in bufs]))
best = {c[0]: float("inf") for c in cfgs}
for _ in range(rounds):
  for name, prg, args in cfgs:
    st = time.thread_time(); prg(*args); best[name] = min(best[name], time.thread_time() - st)
for name, t in best.items(): print(f"N={n} {name} {2*n**3/t/1e9:6.1f} GFLOP/s")
