"""Losses, one_hot and dropout against hand-written numpy formulas (torch's definitions), on CPU."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

rng = np.random.default_rng(0)
LOGITS = rng.standard_normal((5, 4)).astype(np.float32) * 3
LABELS = np.array([0, 3, 1, 3, 2], dtype=np.int32)

def log_softmax(x, axis): return x - x.max(axis, keepdims=True) - np.log(np.exp(x - x.max(axis, keepdims=True)).sum(axis, keepdims=True))
def reduce(loss, reduction): return {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]
def close(got:Tensor, want, tol=1e-5): np.testing.assert_allclose(got.numpy(), np.asarray(want, np.float32), rtol=tol, atol=tol)

@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_indices(reduction, smoothing):
  lp = log_softmax(LOGITS.astype(np.float64), 1)
  loss = -(1 - smoothing) * lp[np.arange(5), LABELS] - smoothing * lp.mean(1)
  close(Tensor(LOGITS).cross_entropy(Tensor(LABELS), reduction=reduction, label_smoothing=smoothing), reduce(loss, reduction))

def test_cross_entropy_probabilities_and_spatial():
  probs = np.abs(rng.standard_normal((5, 4))).astype(np.float32)
  probs /= probs.sum(1, keepdims=True)
  close(Tensor(LOGITS).cross_entropy(Tensor(probs)), (-(log_softmax(LOGITS.astype(np.float64), 1) * probs).sum(1)).mean())
  x, y = rng.standard_normal((2, 3, 4, 5)).astype(np.float32), rng.integers(0, 3, (2, 4, 5)).astype(np.int32)
  lp = log_softmax(x.astype(np.float64), 1)
  want = -np.take_along_axis(lp, y[:, None], 1)[:, 0]
  close(Tensor(x).cross_entropy(Tensor(y), reduction="none"), want)

@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_sparse_categorical_crossentropy(reduction, smoothing):
  labels = LABELS.copy()
  labels[2] = -1  # ignored: no loss, and not counted in the mean
  lp = log_softmax(LOGITS.astype(np.float64), 1)
  loss = np.where(labels != -1, -(1 - smoothing) * lp[np.arange(5), labels] - smoothing * lp.mean(1), 0)
  want = loss.sum() / (labels != -1).sum() if reduction == "mean" else reduce(loss, reduction)
  close(Tensor(LOGITS).sparse_categorical_crossentropy(Tensor(labels), label_smoothing=smoothing, reduction=reduction), want)

def test_sparse_categorical_crossentropy_ignore_index():
  lp = log_softmax(LOGITS.astype(np.float64), 1)
  keep = LABELS != 3
  close(Tensor(LOGITS).sparse_categorical_crossentropy(Tensor(LABELS), ignore_index=3), -lp[np.arange(5), LABELS][keep].mean())

def test_sparse_categorical_crossentropy_with_minus_inf_logit():
  """a class with logit -inf is never picked: it must not turn the loss into nan"""
  x = LOGITS.copy()
  x[:, 2] = -np.inf
  y = np.array([0, 3, 1, 3, 0], np.int32)
  lp = log_softmax(x.astype(np.float64), 1)
  close(Tensor(x).sparse_categorical_crossentropy(Tensor(y)), -lp[np.arange(5), y].mean())

@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_nll_loss(reduction):
  lp = log_softmax(LOGITS.astype(np.float64), 1)
  close(Tensor(lp.astype(np.float32)).nll_loss(Tensor(LABELS), reduction=reduction), reduce(-lp[np.arange(5), LABELS], reduction))

def test_nll_loss_weight_and_ignore_index():
  lp, w = log_softmax(LOGITS.astype(np.float64), 1), np.array([0.5, 2.0, 1.0, 3.0], np.float32)
  keep = LABELS != 1
  wy = w[LABELS] * keep
  close(Tensor(lp.astype(np.float32)).nll_loss(Tensor(LABELS), weight=Tensor(w), ignore_index=1), (-lp[np.arange(5), LABELS] * wy).sum() / wy.sum())
  close(Tensor(lp.astype(np.float32)).nll_loss(Tensor(LABELS), weight=Tensor(w), reduction="sum"), (-lp[np.arange(5), LABELS] * w[LABELS]).sum())

@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_binary_crossentropy(reduction):
  p, y = np.array([0.1, 0.5, 0.9, 0.999], np.float32), np.array([0.0, 1.0, 1.0, 0.3], np.float32)
  p64 = p.astype(np.float64)
  close(Tensor(p).binary_crossentropy(Tensor(y), reduction=reduction), reduce(-(y * np.log(p64) + (1 - y) * np.log(1 - p64)), reduction), 1e-4)

def test_binary_crossentropy_clamps_log():
  """like torch, log is clamped at -100: p of exactly 0 or 1 gives 100, not inf or nan"""
  close(Tensor([0.0, 1.0]).binary_crossentropy(Tensor([1.0, 0.0]), reduction="none"), [100.0, 100.0])

def test_binary_crossentropy_gradient_is_finite_where_a_log_clamps():
  """a saturated sigmoid (20.0 -> exactly 1.0 in float32) with the right label gave a nan gradient: the clamp's 0 times log's 1/0.
  The finite-difference oracle: the loss's derivative -y/p + (1-y)/(1-p) where the log it takes is not clamped"""
  t = Tensor([20.0, -20.0, 0.5], requires_grad=True)
  t.sigmoid().binary_crossentropy(Tensor([1.0, 0.0, 1.0]), reduction="sum").backward()
  close(t.grad, [0.0, 0.0, 1 / (1 + np.exp(0.5)) * -1], 1e-6)
  p = Tensor([1.0, 0.0, 0.25], requires_grad=True)
  p.binary_crossentropy(Tensor([1.0, 0.0, 1.0]), reduction="sum").backward()
  close(p.grad, [-1.0, 1.0, -4.0], 1e-6)

@pytest.mark.parametrize("pos_weight", [None, 3.0])
def test_binary_crossentropy_logits(pos_weight):
  x, y = np.array([-50.0, -2.0, 0.0, 1.5, 80.0], np.float32), np.array([0.0, 1.0, 0.5, 1.0, 0.0], np.float32)
  x64, pw = x.astype(np.float64), 1.0 if pos_weight is None else pos_weight
  want = -(pw * y * -np.logaddexp(0, -x64) + (1 - y) * -np.logaddexp(0, x64))  # finite for large |x|
  pwt = None if pos_weight is None else Tensor([pos_weight])
  close(Tensor(x).binary_crossentropy_logits(Tensor(y), reduction="none", pos_weight=pwt), want, 1e-4)

def test_loss_errors():
  with pytest.raises(ValueError, match="reduction"): Tensor(LOGITS).cross_entropy(Tensor(LABELS), reduction="avg")
  with pytest.raises(ValueError, match="label_smoothing"): Tensor(LOGITS).cross_entropy(Tensor(LABELS), label_smoothing=1.5)
  with pytest.raises(ValueError, match=r"\(3,\)"): Tensor(LOGITS).sparse_categorical_crossentropy(Tensor([0, 1, 2]))
  with pytest.raises(ValueError, match=r"\(5, 4\)"): Tensor(LOGITS).cross_entropy(Tensor.ones(5, 3))
  with pytest.raises(RuntimeError, match="int tensor"): Tensor(LOGITS).nll_loss(Tensor(LABELS).float())

def test_one_hot():
  y = np.array([[0, 2], [1, 4]], np.int8)
  got = Tensor(y).one_hot(5)
  assert got.dtype is dtypes.default_int and got.shape == (2, 2, 5)
  np.testing.assert_array_equal(got.numpy(), np.eye(5, dtype=np.int32)[y])
  np.testing.assert_array_equal(Tensor([3, 0]).one_hot().numpy(), np.eye(4, dtype=np.int32)[[3, 0]])
  with pytest.raises(RuntimeError, match="int tensor"): Tensor([1.0]).one_hot(2)
  with pytest.raises(ValueError, match="num_classes"): Tensor([1]).one_hot(-3)

def test_dropout_only_in_training():
  x = Tensor.ones(1000)
  assert Tensor.training is False
  assert x.dropout(0.5) is x
  with Tensor.train():
    assert Tensor.training is True
    got = x.dropout(0.25).numpy()
    assert set(np.unique(got)) <= {0.0, np.float32(1 / 0.75)} and 0.6 < (got > 0).mean() < 0.9
    assert not x.dropout(1.0).numpy().any()
    assert x.dropout(0.0) is x
    with Tensor.train(False): assert x.dropout(0.5) is x
  assert Tensor.training is False
  with pytest.raises(ValueError, match=r"\[0, 1\]"): x.dropout(1.5)

def test_train_as_decorator():
  @Tensor.train()
  def step(): return Tensor.training
  assert step() is True and Tensor.training is False

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_ignore_index(reduction):
  # torch's cross_entropy(ignore_index=): ignored samples add nothing and are not counted in the mean, smoothing included
  x = np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0], [2.0, 0.0, -2.0], [0.3, 0.2, 0.1]], np.float32)
  y = np.array([0, -1, 2, 1])
  logp = x - np.log(np.exp(x).sum(1, keepdims=True))
  per = np.array([-(0.9 * logp[i, c] + 0.1 * logp[i].mean()) if c != -1 else 0.0 for i, c in enumerate(y)])
  want = {"mean": per.sum() / 3, "sum": per.sum(), "none": per}[reduction]
  got = Tensor(x).cross_entropy(Tensor(y), reduction=reduction, label_smoothing=0.1, ignore_index=-1).numpy()
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
  with pytest.raises(ValueError, match="ignore_index needs class indices"): Tensor(x).cross_entropy(Tensor(x), ignore_index=-1)
