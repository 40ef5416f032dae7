"""Non-temporal loads A/B on the sum of 16M floats: the heuristic's partial-sum kernel compiled twice, with the LLVM renderer's streamed
loads (vmovntdqa) and without, called on the same buffers in interleaved rounds beside torch's sum; after each kernel call a 64K sum's
eager realize is timed too (the python a memory stream leaves with cold caches). Best and median in us.
Usage: CACHELEVEL=0 python bench/stream_loads_ab.py [rounds, default 40]   (THREADS=1 for one core)"""
import statistics, sys, time
import numpy as np
import torch
from tinygrad import Tensor, Device
from tinygrad.uop.ops import KernelInfo, graph_rewrite
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.engine.realize import prepare_kernel, buffer_of
from tinygrad.codegen.opt import hand_coded_opts
from tinygrad.codegen.opt.split_ranges import split_divided_ranges
from tinygrad.codegen.prefix_scan import mark_scans
from tinygrad.uop.symbolic import symbolic

n = 1 << 24
a = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
pa = torch.from_numpy(a)
items = create_schedule([Tensor(a).realize().sum().uop])[0]
kernels = [it for it in items if it.kind == "kernel"]
it = kernels[0]
bufs, ast = [buffer_of(b) for b in it.bufs], split_divided_ranges(mark_scans(graph_rewrite(it.ast, symbolic), Device["CPU"].renderer))
for b in bufs: b.ensure_allocated()
renderer, host = Device["CPU"].renderer, Device["CPU"].renderer.stream_loads
progs = {}
for name, stream in (("nt", True), ("plain", False)):
  renderer.stream_loads = stream
  opts = hand_coded_opts(ast, renderer)
  progs[name] = prepare_kernel(ast.replace(arg=KernelInfo(ast.arg.name + name, opts_to_apply=tuple(opts))), "CPU")
renderer.stream_loads = host
print(f"opts {opts}; this host streams loads by default: {host}")
small = Tensor(np.ones(1<<16, np.float32)).realize(); small.sum().realize()
times = {k: [] for k in [x + y for x in progs for y in ("", "+py", " total")] + ["torch"]}
for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 40):
  for k, (spec, prg) in progs.items():
    gs, ls = spec.launch_dims({})
    for _ in range(5):
      st = time.perf_counter()
      prg(*[b._buf for b in bufs[:spec.nbufs]], vals=(), global_size=gs, local_size=ls, wait=True)
      m = time.perf_counter(); small.sum().realize(); e = time.perf_counter()
      times[k].append(m - st); times[k + "+py"].append(e - m); times[k + " total"].append(e - st)
  for _ in range(5):
    st = time.perf_counter(); pa.sum(); times["torch"].append(time.perf_counter() - st)
for k, v in times.items(): print(f"{k:6s} best {min(v)*1e6:.0f} us median {statistics.median(v)*1e6:.0f} us")
