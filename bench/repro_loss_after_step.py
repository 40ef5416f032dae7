"""Reproduction (no xfail): a loss read after opt.step() mixes values from before and after the update when the step's realize turned
some forward intermediates into buffers (BatchNorm's deferred statistics here).

Upstream tinygrad 0.14 recomputes the whole lazy loss from the updated parameters (loss.item() after the step = the loss of the new
parameters); torch would give the value of the forward pass. tg's realize substitutes the buffers the step materialised (the batch
statistics, Linear outputs) into the loss's graph, the rest is recomputed from the new parameters, and the number printed is neither.
The fix belongs in tensor.py's realize (_Realized); nn/ cannot see the loss.

  python bench/repro_loss_after_step.py     # exits 1 while loss.item() after the step matches neither the old nor the new parameters"""
import sys
import numpy as np
from tinygrad import Tensor, nn

rng = np.random.default_rng(0)
l1, bn, l2 = nn.Linear(4, 8), nn.BatchNorm(8), nn.Linear(8, 3)
for p in (l1.weight, l1.bias, l2.weight, l2.bias): p.assign(Tensor(rng.standard_normal(p.shape).astype(np.float32) * 0.5))
opt = nn.optim.Adam([l1.weight, l1.bias, bn.weight, bn.bias, l2.weight, l2.bias], lr=0.05)
X, Y = Tensor(rng.standard_normal((16, 4)).astype(np.float32)), Tensor(np.arange(16) % 3)
f = lambda: l2(bn(l1(X)).relu()).cross_entropy(Y)
with Tensor.train():
  old = f().item()
  loss = f()
  loss.backward()
  opt.step()
  got, new = loss.item(), f().item()
ok = np.isclose(got, old, rtol=1e-5) or np.isclose(got, new, rtol=1e-5)
print(f"loss before the step {old:.6f}, after {new:.6f}; loss.item() read after the step {got:.6f}: {'ok' if ok else 'FAIL (a mixture)'}")
sys.exit(0 if ok else 1)
