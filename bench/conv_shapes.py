"""conv2d forward over ResNet-50's shapes (batch 8) beside torch: the suite times one conv shape; these show the others (1x1, strided,
small spatial sizes, the 7x7 stride-2 stem). Each result is checked against torch first. Best of `runs` after a warm-up.
Usage: python bench/conv_shapes.py [runs, default 5]   (needs torch)"""
import sys
import numpy as np
import torch
from tinygrad import Tensor, Device
from sampling import best

SHAPES = [  # (batch, in channels, height = width, out channels, kernel, stride, padding)
  (8, 3, 224, 64, 7, 2, 3), (8, 64, 56, 64, 1, 1, 0), (8, 64, 56, 256, 1, 1, 0), (8, 64, 56, 64, 3, 1, 1), (8, 128, 28, 128, 3, 1, 1),
  (8, 256, 14, 256, 3, 1, 1), (8, 512, 7, 512, 3, 1, 1), (8, 256, 56, 512, 1, 2, 0)]
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 5

if __name__ == "__main__":
  print("| shape | tg GFLOP/s | torch GFLOP/s | tg / torch |\n|---|---:|---:|---:|")
  for n, ci, hw, co, k, s, p in SHAPES:
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((n, ci, hw, hw), dtype=np.float32), rng.standard_normal((co, ci, k, k), dtype=np.float32)
    tx, tw, px, pw = Tensor(x).realize(), Tensor(w).realize(), torch.from_numpy(x), torch.from_numpy(w)
    want = torch.nn.functional.conv2d(px, pw, stride=s, padding=p).numpy()
    np.testing.assert_allclose(tx.conv2d(tw, stride=s, padding=p).numpy(), want, rtol=1e-3, atol=1e-3 * np.abs(want).max())
    flop = 2 * n * co * ci * k * k * want.shape[2] * want.shape[3]
    tg = best(lambda: (tx.conv2d(tw, stride=s, padding=p).realize(), Device["CPU"].synchronize()), RUNS)
    pt = best(lambda: torch.nn.functional.conv2d(px, pw, stride=s, padding=p), RUNS)
    print(f"| {n}x{ci}x{hw}x{hw} -> {co}, {k}x{k} s{s} p{p} | {flop/tg/1e9:.1f} | {flop/pt/1e9:.1f} | {pt/tg:.2f} |", flush=True)
