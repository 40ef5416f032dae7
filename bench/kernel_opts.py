"""One kernel under several opt lists: the last reduce kernel of an expression (the kernels before it, a pack copy, run once), each opt
list compiled once and timed in interleaved rounds (a shared host's load then falls on all of them alike); best and median wall time of
the kernel alone, its result checked against the heuristic's. Opts as OP,axis,amount separated by spaces, lists by ';', H for the
heuristic's own. R(*shape, dt=...) is a random tensor.
Usage: python bench/kernel_opts.py 'R(4096) @ R(4096, 4096)' 'UPCAST,0,16 THREAD,0,2;H' [rounds, default 20]"""
import statistics, sys
import numpy as np
from tinygrad import Tensor, Device, dtypes  # noqa: F401  (dtypes: for the expression)
from tinygrad.uop.ops import KernelInfo
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.engine.realize import prepare_kernel, buffer_of, run_schedule
from tinygrad.codegen.opt import hand_coded_opts, Opt, OptOps
from tinygrad.codegen.opt.split_ranges import split_divided_ranges
from tinygrad.codegen.prefix_scan import mark_scans
from tinygrad.uop.ops import graph_rewrite
from tinygrad.uop.symbolic import symbolic

_rng = np.random.default_rng(0)
def R(*shape, dt=dtypes.float32) -> Tensor: return Tensor(_rng.standard_normal(shape, dtype=np.float32)).cast(dt).realize()

def parse(spec:str) -> list[Opt]: return [Opt(OptOps[o.split(",")[0]], int(o.split(",")[1]), int(o.split(",")[2])) for o in spec.split()]

if __name__ == "__main__":
  items = create_schedule([eval(sys.argv[1]).uop])[0]
  kernels = [it for it in items if it.kind == "kernel"]
  it = [k for k in kernels if k.ast.arg.name.startswith("r_")][-1] if any(k.ast.arg.name.startswith("r_") for k in kernels) else kernels[-1]
  for before in items[:items.index(it)]: run_schedule([before])
  # as lowering hands it to the optimizer: simplified, prefix reduces tagged (their ranges are no opt axes)
  bufs, ast = [buffer_of(b) for b in it.bufs], split_divided_ranges(mark_scans(graph_rewrite(it.ast, symbolic), Device["CPU"].renderer))
  progs, dev = {}, Device["CPU"]
  for spec in (s.strip() for s in sys.argv[2].split(";")):
    opts = hand_coded_opts(ast, dev.renderer) if spec == "H" else parse(spec)
    progs[spec] = (prepare_kernel(ast.replace(arg=KernelInfo(ast.arg.name, opts_to_apply=tuple(opts))), "CPU"), opts)
  times: dict[str, list[float]] = {k: [] for k in progs}
  first = None
  for r in range(int(sys.argv[3]) if len(sys.argv) > 3 else 20):
    for k, ((spec, prg), _) in progs.items():
      gs, ls = spec.launch_dims({})
      times[k].append(prg(*[b._buf for b in bufs[:spec.nbufs]], vals=(), global_size=gs, local_size=ls, wait=True))
      if r == 0:  # every opt list computes what the first one does (to float rounding: the sums run in another order)
        got = np.frombuffer(bytes(bufs[0].as_buffer()), dtype=np.dtype(bufs[0].dtype.fmt)).astype(np.float64)
        if first is None: first = got
        np.testing.assert_allclose(got, first, rtol=1e-2, atol=1e-2 * max(1.0, np.abs(first).max()), err_msg=k)
  for k, ((spec, _), opts) in progs.items():
    print(f"{k:45s} best {min(times[k])*1e3:8.3f} ms  median {statistics.median(times[k])*1e3:8.3f} ms  {opts if k == 'H' else ''}")
