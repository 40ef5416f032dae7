"""Column reduces (v @ A, A.sum(0), A.mean(0)) with the row fold (codegen/row_fold.py) against the tiled form, the kernels alone,
alternating in rounds in one process (a shared host's load falls on both alike; at THREADS=1 CPU time): best and median ms of each, the
plain sum of the same matrix beside them, results checked against numpy. Usage: python bench/row_fold_ab.py [rounds, default 40] [name
filter]"""
import os, sys, time, statistics, numpy as np
from tinygrad import Tensor, Device
from tinygrad.schedule.cache import create_schedule_cached
from tinygrad.engine import realize
from tinygrad.codegen import get_program, row_fold

_rng = np.random.default_rng(0)
def R(*shape) -> Tensor: return Tensor(_rng.standard_normal(shape, dtype=np.float32)).realize()

def cases():
  v, A = R(4096), R(4096, 4096)
  yield "vecmat 4096 @ 4096x4096", v @ A, v.numpy() @ A.numpy()
  yield "sum(0) 4096x4096", A.sum(0), A.numpy().sum(0)
  yield "sum 4096x4096 (reference)", A.sum(), A.numpy().sum()
  b, b8, W = R(4, 4096), R(8, 4096), R(4096, 11008)
  yield "vecmat 4 x 4096 @ 4096x4096", b @ A, b.numpy() @ A.numpy()
  yield "vecmat 8 x 4096 @ 4096x4096", b8 @ A, b8.numpy() @ A.numpy()
  yield "vecmat 1x4096 @ 4096x11008", b[:1] @ W, b.numpy()[:1] @ W.numpy()
  A1, A2 = R(4096, 4095), R(4095, 4096)
  yield "vecmat 4096 @ 4096x4095", v @ A1, v.numpy() @ A1.numpy()
  yield "vecmat 4095 @ 4095x4096", v[:4095] @ A2, v.numpy()[:4095] @ A2.numpy()
  C = R(1024, 16384)
  yield "sum(0) 1024x16384", C.sum(0), C.numpy().sum(0)
  yield "max(0) 4096x4096", A.max(0), A.numpy().max(0)
  yield "mean(0) 4096x4096", A.mean(0), A.numpy().mean(0)
  for n, m in ((512, 1024), (1024, 1024), (2048, 1024), (2048, 2048)):
    F = R(n, m)
    yield f"sum(0) {n}x{m}", F.sum(0), F.numpy().sum(0)
  D = R(64, 8, 512)
  yield "max(1) 64x8x512", D.max(1), D.numpy().max(1)
  E = R(16, 256, 2048)
  yield "sum(1) 16x256x2048", E.sum(1), E.numpy().sum(1)
  yield "matvec 4096x4096 @ 4096", A @ v, A.numpy() @ v.numpy()

def kernels(t:Tensor, fold:bool):
  original = row_fold.fold_rows
  if not fold: row_fold.fold_rows = lambda ast, renderer=None: ast
  try:
    items, _ = create_schedule_cached([t.uop])
    dev = Device["CPU"]
    runs = []
    for it in items:
      spec = get_program(it.ast, dev.renderer)
      runs.append((spec, realize._runtime(spec, "CPU", dev), [realize.buffer_of(b) for b in it.bufs]))
  finally: row_fold.fold_rows = original
  def go():
    for spec, prg, bufs in runs:
      gs, ls = spec.launch_dims({})
      prg(*[b._buf for b in bufs[:spec.nbufs]], vals=(), global_size=gs, local_size=ls)
  return go, runs[-1][2][0]

# at THREADS=1 the CPU time of the call: a core taken by another process for a while then costs nothing (wall time at more threads)
clock = time.process_time if os.environ.get("THREADS") == "1" else time.perf_counter

if __name__ == "__main__":
  rounds, only = int(sys.argv[1]) if len(sys.argv) > 1 else 40, sys.argv[2] if len(sys.argv) > 2 else ""
  for name, t, ref in cases():
    if only not in name: continue
    variants = {"tiled": kernels(t, False), "folded": kernels(t, True)}
    times: dict[str, list[float]] = {k: [] for k in variants}
    for r in range(rounds):
      for k, (go, out) in variants.items():
        t0 = clock(); go(); times[k].append(clock() - t0)
        if r == 0 and ref is not None:
          got = np.frombuffer(bytes(out.as_buffer()), dtype=np.float32).reshape(np.shape(ref))
          np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-2, err_msg=f"{name} {k}")
    print(name + ": " + "  ".join(f"{k} {min(v)*1e3:.2f}/{statistics.median(v)*1e3:.2f}" for k, v in times.items()), flush=True)
