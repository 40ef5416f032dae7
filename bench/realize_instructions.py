"""The python of a repeated eager realize in instructions (deterministic, unlike this VM's wall clock): run a case N times after a warm-up
(compiled kernels in the disk cache, schedules in the schedule cache), under callgrind twice, and take the difference per call:
  for n in 10 110; do PYTHONHASHSEED=0 THREADS=1 OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    python bench/realize_instructions.py sum $n; done          # (Collected at 110 - at 10) / 100
Run it once without valgrind first, so that neither counted run compiles. Cases:
  sum  t.sum().realize() on 1024 realized floats (one kernel)
  sum2 t.sum().realize() on 65536 floats: split in two kernels, partial sums then their sum, as the suite's `sum, 16M` row is
  ew   ((a*b+c).relu()*0.5).realize() on 1024 floats (the suite's elementwise row)
  mlp  a 64-32-10 MLP's forward, backward and Adam step on a batch of 16 (nn.Linear, nn.optim.Adam), realized eagerly"""
import sys
import numpy as np
from tinygrad import Tensor, Device, nn

def case(name:str):
  rng = np.random.default_rng(0)
  if name in ("sum", "sum2"):
    t = Tensor(rng.standard_normal(1024 if name == "sum" else 65536, dtype=np.float32)).realize()
    return lambda: t.sum().realize()
  if name == "ew":
    a, b, c = (Tensor(rng.standard_normal(1024, dtype=np.float32)).realize() for _ in range(3))
    return lambda: ((a * b + c).relu() * 0.5).realize()
  if name == "mlp":
    l1, l2 = nn.Linear(64, 32), nn.Linear(32, 10)
    opt = nn.optim.Adam(nn.state.get_parameters([l1, l2]), lr=1e-3)
    x = Tensor(rng.standard_normal((16, 64), dtype=np.float32)).realize()
    y = Tensor(rng.integers(0, 10, 16).astype(np.int32)).realize()
    def step():
      with Tensor.train():
        opt.zero_grad()
        loss = l2(l1(x).relu()).sparse_categorical_crossentropy(y)
        loss.backward()
        opt.step()
      return loss
    return step
  raise SystemExit(f"unknown case {name!r}: sum, sum2, ew or mlp")

if __name__ == "__main__":
  f, n = case(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 100
  dev = Device[Device.DEFAULT]
  for _ in range(5): f()
  dev.synchronize()
  for _ in range(n): f()
  dev.synchronize()
