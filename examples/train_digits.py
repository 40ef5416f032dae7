"""Train a small CNN on scikit-learn's 8x8 digits (1,797 images, shipped inside scikit-learn: no download) on the default device.
  pip install scikit-learn && python examples/train_digits.py        STEPS=, BS=, LR=, SEED= override the defaults below"""
import os, tempfile, time
import numpy as np
from tinygrad import Tensor, TinyJit, nn
from tinygrad.nn.state import get_state_dict, load_state_dict, safe_load, safe_save
from tinygrad.helpers import getenv

def load_digits_split(seed:int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
  """(X_train, Y_train, X_test, Y_test): images (N, 1, 8, 8) scaled to [0, 1], a fixed 80/20 split"""
  try: from sklearn.datasets import load_digits
  except ImportError: raise SystemExit("this example needs scikit-learn for its data set: pip install scikit-learn") from None
  digits = load_digits()
  X, Y = (digits.images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8), digits.target.astype(np.int32)
  order = np.random.default_rng(seed).permutation(len(X))
  cut = len(X) * 4 // 5
  return X[order[:cut]], Y[order[:cut]], X[order[cut:]], Y[order[cut:]]

class Model:
  def __init__(self):
    # (N, 1, 8, 8) -> conv -> (N, 16, 8, 8) -> pool -> (N, 16, 4, 4) -> conv -> (N, 32, 4, 4) -> linear -> (N, 10)
    self.layers = [nn.Conv2d(1, 16, 3, padding=1), Tensor.relu, Tensor.max_pool2d, nn.Conv2d(16, 32, 3, padding=1), Tensor.relu,
                   lambda x: x.flatten(1), nn.Linear(32*4*4, 10)]
  def __call__(self, x:Tensor) -> Tensor: return x.sequential(self.layers)
  def parameters(self) -> list[Tensor]: return [t for l in self.layers if isinstance(l, (nn.Conv2d, nn.Linear)) for t in (l.weight, l.bias)]

def make_train_step(model:Model, opt:nn.optim.Optimizer, X:Tensor, Y:Tensor, bs:int, devices:tuple|None=None):
  # captured on the second call, then replayed: no scheduling or compiling per step (the batch indices come from the RNG, whose key
  # buffer the replay advances, so every step draws a new batch). With `devices`, each batch is split over them (data parallel)
  @TinyJit
  def train_step() -> Tensor:
    with Tensor.train():
      samples = Tensor.randint(bs, high=X.shape[0], device=X.device)
      xb, yb = (X[samples], Y[samples]) if devices is None else (X[samples].shard(devices, 0), Y[samples].shard(devices, 0))
      loss = model(xb).sparse_categorical_crossentropy(yb)
      opt.zero_grad()
      loss.backward()
      Tensor.realize(loss, *[t.grad for t in opt.params])  # the loss with the gradients, before step() writes the parameters
      opt.step()
      return loss
  return train_step

def save_and_reload(model:Model, path:str) -> Model:
  """the weights through a safetensors file into a freshly initialised model"""
  safe_save(get_state_dict(model), path)
  fresh = Model()
  load_state_dict(fresh, safe_load(path), verbose=False)
  return fresh

def accuracy(model:Model, X:Tensor, Y:Tensor) -> float: return (model(X).argmax(axis=1) == Y).mean().item() * 100

if __name__ == "__main__":
  Tensor.manual_seed(seed := getenv("SEED", 42))
  X_train, Y_train, X_test, Y_test = (Tensor(a) for a in load_digits_split(seed))
  model = Model()
  opt = nn.optim.Adam(model.parameters(), lr=getenv("LR", 1e-2))
  train_step = make_train_step(model, opt, X_train, Y_train, bs := getenv("BS", 128))
  steps, start = getenv("STEPS", 200), time.perf_counter()
  for i in range(steps):
    if i == steps * 2 // 3: opt.lr.assign(opt.lr * 0.1)  # lr is a Tensor: a schedule writes into it, the step reads it
    t0 = time.perf_counter()
    loss = train_step().item()
    print(f"\rstep {i+1:4d}/{steps}  loss {loss:6.3f}  {(time.perf_counter()-t0)*1000:6.1f} ms/step", end="", flush=True)
  print(f"\ntrained {steps} steps of {bs} in {time.perf_counter()-start:.1f} s")
  print(f"accuracy: {accuracy(model, X_test, Y_test):.1f}%")
  path = os.path.join(tempfile.mkdtemp(), "digits.safetensors")
  print(f"saved to {path} and reloaded: accuracy {accuracy(save_and_reload(model, path), X_test, Y_test):.1f}%")
