"""Python cost of an eager (no TinyJit) training step: an MLP 784-128-10, batch 64, Adam, loss read with .item() each step.
The timed steps run inside eval(), so callgrind counts them alone (the kernels' own instructions, ~7.3M a step at THREADS=1, included):
  PYTHONHASHSEED=0 THREADS=1 valgrind --tool=callgrind --collect-atstart=no --toggle-collect='builtin_eval*' \\
    --callgrind-out-file=/tmp/cg.out python bench/eager_step_instructions.py [steps, default 20]
instructions per step = the `summary:` line of /tmp/cg.out / steps. Without valgrind it prints the last loss (the same in every tree)."""
import sys
import numpy as np
from tinygrad import Tensor, nn

Tensor.manual_seed(0)
l1, l2 = nn.Linear(784, 128), nn.Linear(128, 10)
opt = nn.optim.Adam([l1.weight, l1.bias, l2.weight, l2.bias], lr=1e-3)
rng = np.random.default_rng(0)
X, Y = Tensor(rng.standard_normal((64, 784), dtype=np.float32)).realize(), Tensor(rng.integers(0, 10, 64).astype(np.int32)).realize()

def step() -> float:
  with Tensor.train():
    loss = l2(l1(X).relu()).sparse_categorical_crossentropy(Y)
    opt.zero_grad()
    loss.backward()
    opt.step()
  return loss.item()

for _ in range(3): step()  # compiles and fills the schedule cache
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
print(eval("[step() for _ in range(steps)]")[-1])
