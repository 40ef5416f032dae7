"""examples/train_digits.py, shortened: a few Adam steps on the digits lower the loss on a fixed set of training images."""
import importlib.util, pathlib
import pytest
from tinygrad import Tensor, nn

pytest.importorskip("sklearn", reason="the digits data set ships in scikit-learn: pip install -r examples/requirements.txt")
PATH = pathlib.Path(__file__).resolve().parents[2] / "examples" / "train_digits.py"

@pytest.mark.slow
def test_a_few_steps_lower_the_loss():
  spec = importlib.util.spec_from_file_location("train_digits", PATH)
  spec.loader.exec_module(td := importlib.util.module_from_spec(spec))
  Tensor.manual_seed(0)
  X, Y, _, _ = (Tensor(a) for a in td.load_digits_split(0))
  model = td.Model()
  opt = nn.optim.Adam(model.parameters(), lr=1e-2)
  def loss() -> float: return model(X[:256]).sparse_categorical_crossentropy(Y[:256]).item()
  before, step = loss(), td.make_train_step(model, opt, X, Y, 64)
  losses = [step().item() for _ in range(8)]
  assert all(l == l for l in losses), losses  # no NaN
  assert loss() < 0.9 * before, (before, losses)
