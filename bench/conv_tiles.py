"""Register tiles for the suite's direct conv kernel (b8 64->64 56x56 3x3, pad 1; the scheduler's AST: channels-last output, the weight in
16-channel panels): the heuristic's opts against other tiles, the kernel alone at the heuristic's thread split, wall time, best of
`rounds`; every result checked against the first. Axes: (N, H, W, channel panels, 16 channels; Cin, KH, KW).
Usage: python bench/conv_tiles.py [rounds, default 5]"""
import sys, time
import numpy as np
from tinygrad import Tensor, Device
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import apply_opts, Opt, OptOps, hand_coded_opts
from tinygrad.codegen.opt.split_ranges import split_divided_ranges
from tinygrad.codegen.opt.search import _scratch

U, P, T, S = OptOps.UPCAST, OptOps.PADTO, OptOps.THREAD, OptOps.SWAP
TILES = {"8 pixels x 2 images": [Opt(U, 4, 16), Opt(U, 2, 8), Opt(U, 0, 2), Opt(T, 0, 2), Opt(S, 2, 3)],
         "2 panels x 8 pixels": [Opt(U, 4, 16), Opt(U, 3, 2), Opt(U, 2, 8), Opt(T, 0, 2)],
         "2 panels x 8 images": [Opt(U, 4, 16), Opt(U, 3, 2), Opt(U, 0, 8), Opt(T, 0, 2), Opt(S, 1, 2)],
         "4 panels x 4 pixels": [Opt(U, 4, 16), Opt(U, 3, 4), Opt(U, 2, 4), Opt(T, 0, 2)],
         "4 panels x 6 pixels (padded)": [Opt(U, 4, 16), Opt(U, 3, 4), Opt(P, 2, 6), Opt(U, 2, 6), Opt(T, 0, 2)]}

if __name__ == "__main__":
  rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
  out = Tensor.empty(8, 64, 56, 56).conv2d(Tensor.empty(64, 64, 3, 3), padding=1)
  ast = split_divided_ranges(next(it.ast for it in create_schedule([out.uop])[0] if it.kind == "kernel" and it.ast.arg.name.startswith("r_")))
  dev, ref, runs = Device["CPU"], None, []
  for name, opts in ({"heuristic": hand_coded_opts(ast, dev.renderer)} | TILES).items():
    spec = get_program(apply_opts(ast, opts), dev.renderer)
    prg, bufs = dev.runtime(spec.name, dev.compiler.compile(spec.src)), _scratch(ast, "CPU")
    rng = np.random.default_rng(0)
    for b in bufs[1:]: b.copyin(memoryview(rng.standard_normal(b.size, dtype=np.float32)).cast("B"))
    run = lambda prg=prg, bufs=bufs, gs=spec.launch_dims({})[0]: prg(*[x._buf for x in bufs], global_size=gs)
    run()
    got = np.frombuffer(bufs[0].as_buffer(), dtype=np.float32).copy()
    if ref is None: ref = got
    assert np.allclose(got, ref, rtol=1e-3, atol=1e-3), name
    runs.append((f"{name} {opts}" if name == "heuristic" else name, run))
  best = {name: float("inf") for name, _ in runs}
  for _ in range(rounds):
    for name, run in runs:
      st = time.perf_counter(); run(); best[name] = min(best[name], time.perf_counter() - st)
  for name, t in best.items(): print(f"{t*1e3:6.2f} ms {2*8*64*64*56*56*9/t/1e9:6.1f} GFLOP/s  {name}")
