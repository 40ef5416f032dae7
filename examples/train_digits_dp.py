"""Data-parallel training of examples/train_digits.py's CNN over several devices (CPU:0, CPU:1, ... by default): the parameters are
replicated on every device, each batch is split along its first axis, every device runs the forward and backward pass on its part, and
the gradients are summed across devices by the reductions over the batch axis (an allreduce the scheduler inserts). The optimizer then
updates every device's copy of the parameters with the same summed gradient, so the copies stay equal.
  pip install scikit-learn && python examples/train_digits_dp.py        NDEV=2 (devices), DEV_BASE=CPU, and train_digits.py's STEPS=, BS=, LR=, SEED="""
import statistics, time
from tinygrad import Tensor, nn
from tinygrad.helpers import getenv
from train_digits import Model, load_digits_split, make_train_step, accuracy

def replicate(model:Model, devices:tuple) -> Model:
  """every parameter replicated on `devices`, in place (the handles the optimizer will hold point at the copies)"""
  for p in model.parameters(): p.shard_(devices).realize()
  return model

def train(devices:tuple, steps:int, bs:int, lr:float, seed:int) -> tuple[Model, list[float], list[float]]:
  """(model, losses, seconds of each step after the first two, which schedule, compile and capture) trained from seed on the digits;
  devices of one entry: no data parallelism"""
  Tensor.manual_seed(seed)
  X_train, Y_train, _, _ = (Tensor(a, device=devices[0]) for a in load_digits_split(seed))
  model = Model()
  if len(devices) > 1: replicate(model, devices)
  opt = nn.optim.Adam(model.parameters(), lr=lr)
  step = make_train_step(model, opt, X_train, Y_train, bs, devices if len(devices) > 1 else None)
  losses, times = [], []
  for i in range(steps):
    if i == steps * 2 // 3: opt.lr.assign(opt.lr * 0.1)
    st = time.perf_counter()
    losses.append(step().item())
    if i >= 2: times.append(time.perf_counter() - st)
  return model, losses, times

if __name__ == "__main__":
  base, ndev, seed = getenv("DEV_BASE", "CPU"), getenv("NDEV", 2), getenv("SEED", 42)
  name, _, renderer = base.partition(":")  # DEV_BASE=CPU:C: devices CPU:0:C, CPU:1:C (the index comes right after the name)
  devices = tuple(f"{name}:{i}" + (f":{renderer}" if renderer else "") for i in range(ndev))
  steps, bs = getenv("STEPS", 200), getenv("BS", 128)
  model, losses, times = train(devices, steps, bs, getenv("LR", 1e-2), seed)
  _, _, X_test, Y_test = (Tensor(a, device=devices[0]) for a in load_digits_split(seed))
  print(f"{ndev} devices {devices}: {steps} steps of {bs} ({bs // ndev} per device), final loss {losses[-1]:.3f}, "
        f"{statistics.median(times)*1000 if times else float('nan'):.1f} ms/step (median)")
  print(f"accuracy: {accuracy(model, X_test.shard(devices, 0) if ndev > 1 else X_test, Y_test.shard(devices, 0) if ndev > 1 else Y_test):.1f}%")
