"""Transposing copies, kernel alone: the heuristic's tile (heuristic.py: transpose_tile, a cache line along the loads' stride-1 axis and 2
along the store's) against the load-sharing tile it replaced (8 along the store, 4 along the loads), THREADS=1, CPU time of this thread,
rounds interleaved, best of each. The shapes: the conv's channels-last result read back as NCHW (schedule/pack.py), x.T of 2048x2048 and
4096x1024. Usage: THREADS=1 python bench/transpose_copy.py [rounds, default 15]"""
import sys, time
from tinygrad import Tensor, Device
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program
from tinygrad.codegen.opt import apply_opts, Opt, OptOps, hand_coded_opts, axes
from tinygrad.codegen.opt.search import _scratch

dev, runs = Device["CPU"], []
for shape, perm in [((8, 56, 56, 64), (0, 3, 1, 2)), ((2048, 2048), (1, 0)), ((4096, 1024), (1, 0))]:
  t = Tensor.randn(*shape).realize()
  ast = [it.ast for it in create_schedule([t.permute(perm).contiguous().uop])[0] if it.kind == "kernel"][-1]
  tile = hand_coded_opts(ast, dev.renderer)
  line = next(o.axis for o in tile if o.op is OptOps.UPCAST and o.amt == 16)
  for name, opts in (("8 x 4 (load-sharing)", [Opt(OptOps.UPCAST, len(axes(ast)) - 1, 8), Opt(OptOps.UPCAST, line, 4)]), ("heuristic", tile)):
    prg = dev.runtime((spec := get_program(apply_opts(ast, opts), dev.renderer)).name, dev.compiler.compile(spec.src))
    runs.append((f"{shape} permute {perm}, {name} {opts}", prg, [b._buf for b in _scratch(ast, "CPU")], 8 * t.numel()))
best = {r[0]: float("inf") for r in runs}
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 15):
  for name, prg, args, _ in runs:
    st = time.thread_time(); prg(*args, global_size=(1, 1, 1), local_size=(1, 1, 1)); best[name] = min(best[name], time.thread_time() - st)
for name, _, _, nbytes in runs: print(f"{name}: {best[name]*1e3:.3f} ms, {nbytes/best[name]/1e9:.1f} GB/s")
