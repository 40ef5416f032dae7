"""A training program written the way tinygrad 0.14's examples are (nn.datasets.mnist, Muon over get_parameters, a TinyJit step under
Context(TRAINING=1) that returns loss.realize(*opt.schedule_step()), trange with set_description, GlobalCounters), run unchanged on
MNIST-format files made here and served locally: the digits are a bright block whose place is the label, so a working step learns them."""
import gzip, http.server, struct, threading
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, nn, GlobalCounters
from tinygrad.helpers import Context, trange
from tinygrad.nn import datasets

def _idx(arr:np.ndarray) -> bytes:
  return gzip.compress(struct.pack(">I", 0x800 | arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.astype(np.uint8).tobytes())

def _digits(n:int, rng) -> tuple[np.ndarray, np.ndarray]:
  y = rng.integers(0, 10, n)
  x = rng.integers(0, 60, (n, 28, 28))
  for i, k in enumerate(y): x[i, (k // 5) * 14 + 4:(k // 5) * 14 + 10, (k % 5) * 5 + 1:(k % 5) * 5 + 5] = 255
  return x, y

@pytest.fixture
def served_mnist(tmp_path, monkeypatch):
  root = tmp_path / "www"
  root.mkdir()
  rng = np.random.default_rng(0)
  for split, n in (("train", 600), ("t10k", 200)):
    x, y = _digits(n, rng)
    (root / f"{split}-images-idx3-ubyte.gz").write_bytes(_idx(x))
    (root / f"{split}-labels-idx1-ubyte.gz").write_bytes(_idx(y))
  handler = lambda *a, **k: type("H", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *_: None})(*a, directory=str(root), **k)
  srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
  threading.Thread(target=srv.serve_forever, daemon=True).start()
  monkeypatch.setenv("CACHEDIR", str(tmp_path / "cache"))
  monkeypatch.setattr(datasets, "MNIST_URL", f"http://127.0.0.1:{srv.server_address[1]}/")
  yield
  srv.shutdown()
  srv.server_close()

class Model:
  def __init__(self):
    self.layers = [nn.Conv2d(1, 8, 3, stride=2), Tensor.relu, nn.BatchNorm(8), Tensor.max_pool2d, lambda x: x.flatten(1), nn.Linear(288, 10)]
  def __call__(self, x:Tensor) -> Tensor: return x.sequential(self.layers)

def test_a_tinygrad_training_program_runs_unchanged(served_mnist, capsys):
  Tensor.manual_seed(0)
  X_train, Y_train, X_test, Y_test = nn.datasets.mnist()
  assert X_train.shape == (600, 1, 28, 28) and Y_test.shape == (200,)
  model = Model()
  opt = nn.optim.Muon(nn.state.get_parameters(model), lr=0.02)

  @TinyJit
  @Context(TRAINING=1)
  def train_step() -> Tensor:
    opt.zero_grad()
    samples = Tensor.randint(32, high=X_train.shape[0])
    loss = model(X_train[samples].float() / 255).sparse_categorical_crossentropy(Y_train[samples]).backward()
    return loss.realize(*opt.schedule_step())

  @TinyJit
  def test_acc() -> Tensor: return (model(X_test.float() / 255).argmax(axis=1) == Y_test).mean() * 100

  losses = []
  for i in (t := trange(40)):
    GlobalCounters.reset()
    losses.append(train_step().item())
    t.set_description(f"loss: {losses[-1]:6.2f}")
  acc = test_acc().item()
  assert "loss:" in capsys.readouterr().err
  assert np.isfinite(losses).all() and np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5]), losses
  assert acc > 90, acc
