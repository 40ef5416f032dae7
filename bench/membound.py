"""The memory-bound rows of bench/suite.py (sum of 16M floats, softmax and an elementwise chain on 4096x4096), measured so that a busy
machine still gives comparable figures: CPU time (time.process_time; run with THREADS=1) as well as wall time.
Usage: python bench/membound.py MODE [ROWS, default sum,softmax,ew] [runs, default 8]
  wall         best wall time of whole realizes (schedule, launch, kernels)
  cpu          best CPU time of whole realizes
  kernels      best CPU time of each kernel of each row, launched directly (no scheduling)
  nontemporal  the elementwise kernel as rendered, and the same LLVM IR with !nontemporal stores (outputs compared), wall and CPU"""
import re, sys, time
import numpy as np
from tinygrad import Tensor, Device

MODE = sys.argv[1] if len(sys.argv) > 1 else "wall"
ROWS = (sys.argv[2] if len(sys.argv) > 2 else "sum,softmax,ew").split(",")
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else 8
ta = Tensor(np.random.default_rng(0).standard_normal((4096, 4096), dtype=np.float32)).realize()
WORK = {"sum": (lambda: ta.reshape(-1).sum(), ta.nbytes()), "softmax": (lambda: ta.softmax(1), 2 * ta.nbytes()),
        "ew": (lambda: (ta * ta + ta).relu() * 0.5, 2 * ta.nbytes())}

def best(fn, clock) -> float:
  fn()
  ts = []
  for _ in range(RUNS):
    st = clock(); fn(); ts.append(clock() - st)
  return min(ts)

def realizes(clock):
  for name in ROWS:
    make, nbytes = WORK[name]
    t = best(lambda: (make().realize(), Device[Device.DEFAULT].synchronize()), clock)
    print(f"{name}: {t*1e3:.2f} ms ({nbytes/t/1e9:.1f} GB/s)", end="  ")
  print()

def kernel_items(make):
  from tinygrad.schedule.rangeify import create_schedule
  from tinygrad.engine.realize import prepare_kernel, buffer_of
  for it in create_schedule([make().uop])[0]:
    yield it, *prepare_kernel(it.ast, "CPU"), [buffer_of(b) for b in it.bufs]

def kernels():
  from tinygrad.engine.realize import launch
  for name in ROWS:
    total = 0.0
    for it, spec, prg, bufs in kernel_items(WORK[name][0]):
      total += (t := best(lambda: launch(spec, prg, bufs, it.var_vals, "CPU"), time.process_time))
      print(f"{name:8s} {spec.name:20s} {t*1e3:8.2f} ms CPU")
    print(f"{name:8s} {'total':20s} {total*1e3:8.2f} ms CPU")

def nontemporal():
  it, spec, prg, bufs = next(kernel_items(WORK["ew"][0]))
  dev = Device["CPU"]
  src = re.sub(r"(store [^\n]*)", r"\1, !nontemporal !0", spec.src) + "\n!0 = !{i32 1}\n"
  nt = dev.compiler.load(spec.name, dev.compiler.compile(src))
  gs, ls = spec.launch_dims({})
  outs = []
  for name, p in (("as rendered", prg), ("nontemporal", nt)) * 2:
    run = lambda: p(*[b._buf for b in bufs], global_size=gs, local_size=ls)
    run()
    outs.append(np.frombuffer(bufs[0].copyout(memoryview(bytearray(bufs[0].nbytes))), np.float32).copy())
    print(f"{name:12s} wall {best(run, time.perf_counter)*1e3:6.2f} ms  CPU {best(run, time.process_time)*1e3:6.2f} ms")
  assert all(np.array_equal(o, outs[0]) for o in outs), "the non-temporal kernel computed something else"

{"wall": lambda: realizes(time.perf_counter), "cpu": lambda: realizes(time.process_time), "kernels": kernels, "nontemporal": nontemporal}[MODE]()
