"""bench/train_step.py's tg step timed as this process's CPU time per step (all its threads), beside wall: on a busy machine waiting for
a core inflates the wall, not the CPU time. Usage: [THREADS=1] python bench/train_step_cpu.py [steps, default 20]"""
import os, sys, time, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
from train_step import TgNet, BS
from tinygrad import Tensor, TinyJit, nn
net = TgNet(); opt = nn.optim.Adam(net.parameters(), lr=1e-3)
@TinyJit
def step(x, y):
  with Tensor.train():
    loss = net(x).sparse_categorical_crossentropy(y)
    opt.zero_grad(); loss.backward()
    Tensor.realize(loss, *[t.grad for t in opt.params]); opt.step()
    return loss
rng = np.random.default_rng(0); w, c = [], []
for i in range((int(sys.argv[1]) if len(sys.argv) > 1 else 20) + 3):
  x, y = Tensor(rng.random((BS, 1, 28, 28), dtype=np.float32)), Tensor(rng.integers(0, 10, BS, dtype=np.int32))
  st, ct = time.perf_counter(), time.process_time()
  step(x, y).item()
  if i >= 3: w.append((time.perf_counter() - st) * 1e3); c.append((time.process_time() - ct) * 1e3)
print(f"wall median {statistics.median(w):.2f} best {min(w):.2f} | cpu median {statistics.median(c):.2f} best {min(c):.2f} ms")
