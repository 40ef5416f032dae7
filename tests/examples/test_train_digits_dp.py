"""examples/train_digits_dp.py, shortened: data-parallel steps on 2 CPU devices give the losses and weights of the same steps on one."""
import importlib.util, pathlib, sys
import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the digits data set ships in scikit-learn: pip install -r examples/requirements.txt")
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

@pytest.mark.slow
def test_two_devices_train_like_one(monkeypatch):
  monkeypatch.syspath_prepend(str(EXAMPLES))  # the example imports train_digits as a sibling module
  spec = importlib.util.spec_from_file_location("train_digits_dp", EXAMPLES / "train_digits_dp.py")
  spec.loader.exec_module(dp := importlib.util.module_from_spec(spec))
  one, losses1, _ = dp.train(("CPU",), steps=5, bs=32, lr=1e-2, seed=3)
  two, losses2, _ = dp.train(("CPU", "CPU:1"), steps=5, bs=32, lr=1e-2, seed=3)  # batches drawn on CPU in both runs: the same
  assert all(p.device == ("CPU", "CPU:1") for p in two.parameters())
  np.testing.assert_allclose(losses2, losses1, rtol=1e-4)
  assert losses1[-1] < losses1[0]
  for p1, p2 in zip(one.parameters(), two.parameters()):
    np.testing.assert_allclose(p2.numpy(), p1.numpy(), rtol=1e-3, atol=1e-5)
    for piece in p2.uop.src:  # every device's copy of the parameter is the same
      np.testing.assert_allclose(np.frombuffer(bytes(sys.modules["tinygrad.engine.realize"].buffer_of(piece.base).as_buffer()),
                                               np.float32).reshape(p1.shape), p1.numpy(), rtol=1e-3, atol=1e-5)
