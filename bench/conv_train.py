"""conv2d with gradients (the weight and the input require grad, as in a training step) against torch: the forward alone, then the
forward and both gradients of sum(conv * g), best of `runs` realizes each, torch at as many threads as tg's THREADS. The gradients are
checked against torch's once. Usage: python bench/conv_train.py N CIN HW COUT K STRIDE PAD [runs]
(ResNet's 3x3s: 8 128 28 128 3 1 1; 8 256 14 256 3 1 1; 8 64 56 64 3 1 1)"""
import sys, time
import numpy as np
from tinygrad import Tensor, Device
from tinygrad.codegen.opt import THREADS
try: import torch
except ImportError: torch = None
n, ci, hw, co, k, s, p = map(int, sys.argv[1:8])
runs = int(sys.argv[8]) if len(sys.argv) > 8 else 4
rng = np.random.default_rng(0)
xn = rng.standard_normal((n, ci, hw, hw), dtype=np.float32)
wn = (rng.standard_normal((co, ci, k, k), dtype=np.float32) / np.sqrt(ci * k * k)).astype(np.float32)
o = (hw + 2*p - k) // s + 1
gn = rng.standard_normal((n, co, o, o), dtype=np.float32)
flop = 2 * n * co * o * o * ci * k * k

def best(fn):
  ts = []
  for _ in range(runs):
    st = time.perf_counter(); fn(); ts.append(time.perf_counter() - st)
  return min(ts)

tx, tg = Tensor(xn).realize(), Tensor(gn).realize()
tw = Tensor(wn, requires_grad=True).realize()
def tg_fwd():
  tx.conv2d(tw, stride=s, padding=p).realize()
  Device["CPU"].synchronize()
grads = []
def tg_step():
  x = Tensor(xn, requires_grad=True).realize()
  tw.grad = None
  out = x.conv2d(tw, stride=s, padding=p)
  (out * tg).sum().backward()
  Tensor.realize(out, x.grad, tw.grad)
  Device["CPU"].synchronize()
  grads[:] = [x.grad, tw.grad]
f, b = best(tg_fwd), best(tg_step)
print(f"tg    fwd {f*1e3:6.1f} ms ({flop/f/1e9:4.0f} GFLOP/s)  fwd+bwd {b*1e3:6.1f} ms ({3*flop/b/1e9:4.0f} GFLOP/s)")
if torch:
  torch.set_num_threads(THREADS.value)
  x, w, g = torch.tensor(xn, requires_grad=True), torch.tensor(wn, requires_grad=True), torch.tensor(gn)
  def torch_step():
    x.grad = w.grad = None
    (torch.nn.functional.conv2d(x, w, stride=s, padding=p) * g).sum().backward()
  with torch.no_grad(): f = best(lambda: torch.nn.functional.conv2d(x, w, stride=s, padding=p))
  b = best(torch_step)
  print(f"torch fwd {f*1e3:6.1f} ms ({flop/f/1e9:4.0f} GFLOP/s)  fwd+bwd {b*1e3:6.1f} ms ({3*flop/b/1e9:4.0f} GFLOP/s)")
  np.testing.assert_allclose(grads[0].numpy(), x.grad.numpy(), atol=1e-3, rtol=1e-3)
  np.testing.assert_allclose(grads[1].numpy(), w.grad.numpy(), atol=1e-2, rtol=1e-3)
