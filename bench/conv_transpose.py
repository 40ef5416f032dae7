"""conv_transpose2d at a GAN/UNet decoder's shapes and the survey's, forward alone and forward with both gradients of sum(out * g),
beside torch (when importable) at as many threads as tg's pool. Figures are the best of `runs` eager calls (realized, synchronized).
Usage: python bench/conv_transpose.py [runs, default 5] [name filter]"""
import sys
import numpy as np
from tinygrad import Tensor, Device
from sampling import best
try: import torch
except ImportError: torch = None

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
FILTER = sys.argv[2] if len(sys.argv) > 2 else ""
SHAPES = {  # name: (input shape, weight shape (Cin, Cout, *kernel), stride, padding, output_padding)
  "survey 8x64x28x28 -> 32 k4 s2 p1": ((8, 64, 28, 28), (64, 32, 4, 4), 2, 1, 0),
  "decoder 8x128x16x16 -> 64 k4 s2 p1": ((8, 128, 16, 16), (128, 64, 4, 4), 2, 1, 0),
  "unet up 8x128x28x28 -> 64 k2 s2": ((8, 128, 28, 28), (128, 64, 2, 2), 2, 0, 0),
  "k3 s2 p1 op1 8x64x28x28 -> 64": ((8, 64, 28, 28), (64, 64, 3, 3), 2, 1, 1),
  "k3 s2 p1 op1 8x128x28x28 -> 64": ((8, 128, 28, 28), (128, 64, 3, 3), 2, 1, 1),
  "s1 8x64x56x56 -> 64 k3 p1": ((8, 64, 56, 56), (64, 64, 3, 3), 1, 1, 0),
}

def rand(shape, seed): return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)

if __name__ == "__main__":
  if torch: torch.set_num_threads(len(Device["CPU"].pool_cores) if hasattr(Device["CPU"], "pool_cores") else torch.get_num_threads())
  print("| shape | tg fwd ms | torch fwd ms | tg fwd+bwd ms | torch fwd+bwd ms |\n|---|---:|---:|---:|---:|")
  for name, (xs, ws, s, p, op) in SHAPES.items():
    if FILTER not in name: continue
    xn, wn = rand(xs, 0), rand(ws, 1) / np.sqrt(ws[0] * np.prod(ws[2:]))
    tx, tw = Tensor(xn).realize(), Tensor(wn.astype(np.float32)).realize()
    out = tx.conv_transpose2d(tw, stride=s, padding=p, output_padding=op)
    gn = rand(out.shape, 2)
    tgr = Tensor(gn).realize()
    def tg_step():
      x, w = Tensor(xn, requires_grad=True), Tensor(wn, requires_grad=True)
      (x.conv_transpose2d(w, stride=s, padding=p, output_padding=op) * tgr).sum().backward()
      Tensor.realize(x.grad, w.grad)
      Device["CPU"].synchronize()
    fwd = best(lambda: (tx.conv_transpose2d(tw, stride=s, padding=p, output_padding=op).realize(), Device["CPU"].synchronize()), RUNS)
    step = best(tg_step, RUNS)
    pf = pb = float("nan")
    if torch:
      xt, wt, gt = torch.from_numpy(xn), torch.from_numpy(wn.astype(np.float32)), torch.from_numpy(gn)
      np.testing.assert_allclose(out.numpy(), torch.nn.functional.conv_transpose2d(xt, wt, stride=s, padding=p, output_padding=op).numpy(),
                                 rtol=1e-3, atol=1e-3, err_msg=name)
      with torch.no_grad(): pf = best(lambda: torch.nn.functional.conv_transpose2d(xt, wt, stride=s, padding=p, output_padding=op), RUNS)
      def torch_step():
        x, w = xt.clone().requires_grad_(), wt.clone().requires_grad_()
        (torch.nn.functional.conv_transpose2d(x, w, stride=s, padding=p, output_padding=op) * gt).sum().backward()
      pb = best(torch_step, RUNS)
    print(f"| {name} | {fwd*1e3:.3f} | {pf*1e3:.3f} | {step*1e3:.3f} | {pb*1e3:.3f} |", flush=True)
