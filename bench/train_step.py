"""One training step of the MNIST-sized CNN (conv 1->32 3x3, relu, maxpool, conv 32->64 3x3, relu, maxpool, linear 1600->128, relu,
linear 128->10; batch 64 of 28x28; cross-entropy, backward, Adam): tg under TinyJit beside torch's eager step when torch is importable.
Random data (the figure is time, not accuracy). Prints one JSON line per figure and a table.
Usage: python bench/train_step.py [steps to time, default 20]"""
import json, statistics, sys, time
import numpy as np
from tinygrad import Tensor, TinyJit, nn

BS = 64

class TgNet:
  def __init__(self):
    self.c1, self.c2 = nn.Conv2d(1, 32, 3), nn.Conv2d(32, 64, 3)
    self.l1, self.l2 = nn.Linear(1600, 128), nn.Linear(128, 10)
  def __call__(self, x:Tensor) -> Tensor:
    x = self.c1(x).relu().max_pool2d(2)
    x = self.c2(x).relu().max_pool2d(2)
    return self.l2(self.l1(x.flatten(1)).relu())
  def parameters(self): return [t for l in (self.c1, self.c2, self.l1, self.l2) for t in (l.weight, l.bias)]

def tg_train_step() -> TinyJit:
  """a fresh net and Adam, and their training step under TinyJit"""
  net = TgNet()
  opt = nn.optim.Adam(net.parameters(), lr=1e-3)
  @TinyJit
  def step(x:Tensor, y:Tensor) -> Tensor:
    with Tensor.train():
      loss = net(x).sparse_categorical_crossentropy(y)
      opt.zero_grad()
      loss.backward()
      Tensor.realize(loss, *[t.grad for t in opt.params])
      opt.step()
      return loss
  return step

def tg_step_ms(steps:int) -> list[float]:
  step = tg_train_step()
  rng = np.random.default_rng(0)
  times = []
  for i in range(steps + 3):  # call 1 runs, call 2 captures, the rest replay: time the replays
    x, y = Tensor(rng.random((BS, 1, 28, 28), dtype=np.float32)), Tensor(rng.integers(0, 10, BS, dtype=np.int32))
    st = time.perf_counter()
    step(x, y).item()
    if i >= 3: times.append((time.perf_counter() - st) * 1e3)
  return times

def torch_step_ms(steps:int) -> list[float]|None:
  try: import torch
  except ImportError: return None
  net = torch.nn.Sequential(torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(),
                            torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(1600, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
  opt = torch.optim.Adam(net.parameters(), lr=1e-3)
  times = []
  for i in range(steps + 3):
    x, y = torch.rand(BS, 1, 28, 28), torch.randint(0, 10, (BS,))
    st = time.perf_counter()
    loss = torch.nn.functional.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    loss.item()
    if i >= 3: times.append((time.perf_counter() - st) * 1e3)
  return times

if __name__ == "__main__":
  steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
  rows = [("tg (TinyJit)", tg_step_ms(steps))]
  if (t := torch_step_ms(steps)) is not None:
    import torch
    rows.append((f"torch {torch.__version__} eager, {torch.get_num_threads()} threads", t))
  for name, times in rows:
    print(json.dumps({"bench": "train_step", "who": name, "ms_median": round(statistics.median(times), 2), "ms_best": round(min(times), 2),
                      "steps": steps}))
  print(f"\n{'':40s} | {'median ms':>9} | {'best ms':>8}\n{'-'*40}-|-{'-'*9}-|-{'-'*8}")
  for name, times in rows: print(f"{name:40s} | {statistics.median(times):9.2f} | {min(times):8.2f}")
  if len(rows) > 1: print(f"tg / torch (median): {statistics.median(rows[0][1]) / statistics.median(rows[1][1]):.2f}x")
