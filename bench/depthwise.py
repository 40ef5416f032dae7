"""Depthwise 3x3 conv2d forward (groups = channels, padding 1) beside torch, with each tg kernel's own time: the pad copy and the conv
kernel. Each result is checked against torch first. Per kernel: median and best of `runs` rounds after a warm-up, the kernels run one
after another as the schedule does; run it on two trees to compare them kernel by kernel.
Usage: python bench/depthwise.py [runs, default 60]   (needs torch)"""
import sys, time
import numpy as np
import torch
from tinygrad import Tensor, Device
from tinygrad.engine.realize import prepare_uops
from sampling import best

SHAPES = [(8, 256, 28), (1, 256, 28), (8, 64, 56), (8, 512, 14), (8, 144, 56)]  # (batch, channels, height = width)
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 60

if __name__ == "__main__":
  torch.set_num_threads(len(Device["CPU"].pool_cores) if hasattr(Device["CPU"], "pool_cores") else torch.get_num_threads())
  print("| shape | tg kernels, median / best ms | tg total best ms | torch best ms | tg / torch speed |\n|---|---|---:|---:|---:|")
  for n, c, hw in SHAPES:
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((n, c, hw, hw), dtype=np.float32), rng.standard_normal((c, 1, 3, 3), dtype=np.float32)
    tx, tw, px, pw = Tensor(x).realize(), Tensor(w).realize(), torch.from_numpy(x), torch.from_numpy(w)
    want = torch.nn.functional.conv2d(px, pw, groups=c, padding=1).numpy()
    np.testing.assert_allclose(tx.conv2d(tw, groups=c, padding=1).numpy(), want, rtol=1e-4, atol=1e-4)
    runs, _ = prepare_uops([tx.conv2d(tw, groups=c, padding=1).uop])
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(RUNS):
      for i, run in enumerate(runs):
        st = time.perf_counter(); run(); times[i].append(time.perf_counter() - st)
    kernels = " + ".join(f"{np.median(t)*1e3:.3f} / {min(t)*1e3:.3f}" for t in times)
    total = min(sum(ts) for ts in zip(*times))
    pt = best(lambda: torch.nn.functional.conv2d(px, pw, groups=c, padding=1), 5)
    print(f"| {n}x{c}x{hw}x{hw} | {kernels} | {total*1e3:.3f} | {pt*1e3:.3f} | {pt/total:.2f} |", flush=True)
