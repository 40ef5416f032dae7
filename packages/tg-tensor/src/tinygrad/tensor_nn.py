"""Tensor's neural-network functions: the training flag and dropout, abs with its gradient convention, one_hot, and the losses.
Mixed into Tensor (tensor.py)."""
from __future__ import annotations
import math
from contextlib import ContextDecorator
from typing import ClassVar
from tinygrad.dtype import dtypes
from tinygrad.helpers import TRAINING

_REDUCTIONS = ("none", "sum", "mean")

_entered = [False]  # Tensor.training as the innermost `with Tensor.train(...)` set it

class train(ContextDecorator):
  """`with Tensor.train():` (or `@Tensor.train()`) sets Tensor.training, and tinygrad 0.14's TRAINING with it, for the block and restores
  both after"""
  def __init__(self, mode:bool=True): self.mode, self.prev = mode, []
  def __enter__(self):
    from tinygrad.tensor import Tensor
    self.prev.append((Tensor.training, TRAINING.value, _entered[0]))  # a stack: a decorated function may recurse
    Tensor.training, TRAINING.value, _entered[0] = self.mode, int(self.mode), self.mode
  def __exit__(self, *exc):
    from tinygrad.tensor import Tensor
    Tensor.training, TRAINING.value, _entered[0] = self.prev.pop()

def is_training() -> bool:
  """training mode, the innermost switch winning: inside `with Tensor.train(m)` (Tensor.training still as it set it) TRAINING says, so a
  `Context(TRAINING=0)` in an eval helper called from a training loop is eval; a Tensor.training assigned directly is OR-ed with it"""
  from tinygrad.tensor import Tensor
  return bool(TRAINING) if Tensor.training == _entered[0] else bool(Tensor.training or TRAINING)

def _check_smoothing(label_smoothing:float):
  if not 0.0 <= label_smoothing <= 1.0: raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing}")

class TensorNNMixin:
  training: ClassVar[bool] = False
  train = train

  def abs(self):
    """|x| with torch's gradient sign(x), 0 at 0 (the shared mixin's one select would pass 1 there). Tensor only: the codegen's own
    uses of UOp.abs need no gradient and keep the single select"""
    if dtypes.is_unsigned(self.dtype) or self.dtype is dtypes.bool: return self
    return (self < 0).where(-self, self.ne(0).where(self, 0))

  def dropout(self, p:float=0.5):
    """while Tensor.training: zero each element with probability p and scale the rest by 1/(1-p); otherwise the identity"""
    if not 0 <= p <= 1: raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    if not is_training() or p == 0: return self
    # the mask materialised (a byte an element, which backward reads again), drawn in the kernel that writes it
    keep = (type(self)._uniform(self.shape, self.device, dtypes.float32, fused=True) >= p).contiguous()
    return keep.where(self, 0) * (1 / (1 - p) if p < 1 else 0)

  def _class_mask(self, num_classes:int):
    """bool (..., num_classes): True at each index's class; an index outside [0, num_classes) matches nothing"""
    if not dtypes.is_int(self.dtype): raise RuntimeError(f"class indices must be an int tensor, got {self.dtype}: cast with .int() first")
    return self.unsqueeze(-1).eq(self._arange(num_classes))
  def one_hot(self, num_classes:int=-1):
    """int tensor (..., num_classes) of 0s with a 1 at each index; num_classes=-1 takes max()+1 (reads the data)"""
    if isinstance(num_classes, int) and num_classes == -1: num_classes = int(self.max().item()) + 1 if self.numel() else 0
    if not isinstance(num_classes, int): raise NotImplementedError(f"one_hot does not support a symbolic num_classes ({num_classes.render()})")
    if num_classes < 0: raise ValueError(f"one_hot needs num_classes >= 0 (or -1 to infer it), got {num_classes}")
    return self._class_mask(num_classes).where(1, 0)

  # *** losses ***
  def _do_reduction(self, reduction:str="mean"):
    if reduction not in _REDUCTIONS: raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    return self if reduction == "none" else self.sum() if reduction == "sum" else self.mean()
  def _class_axis_mask(self, Y, what:str):
    """Y's class mask with the class axis where self has it: axis 1 (or 0 for a single unbatched sample), like torch"""
    axis = 1 if self.ndim > 1 else 0
    if tuple(Y.shape) != tuple(self.shape[:axis]) + tuple(self.shape[axis+1:]):
      raise ValueError(f"{what}: class indices of shape {tuple(Y.shape)} don't fit input {tuple(self.shape)} with classes on axis {axis}")
    m = Y._class_mask(self.shape[axis])
    return axis, (m.permute((0, m.ndim-1) + tuple(range(1, m.ndim-1))) if axis else m)

  def binary_crossentropy(self, Y, reduction:str="mean"):
    """self holds probabilities; each log is clamped at -100 like torch, so a probability of exactly 0 or 1 gives a finite loss, and a
    finite gradient: where a log clamps it takes the log of 1 instead (log's 1/p at 0 is inf, and the clamp's 0 times it is nan)"""
    def clamped_log(p):
      clamps = p < math.exp(-100)  # false for nan, which stays nan
      return clamps.where(-100.0, clamps.where(1.0, p).log())
    return -(Y * clamped_log(self) + (1 - Y) * clamped_log(1 - self))._do_reduction(reduction)
  def binary_crossentropy_logits(self, Y, reduction:str="mean", pos_weight=None):
    """self holds logits: computed from logsigmoid, so large logits don't overflow"""
    pos = Y if pos_weight is None else pos_weight * Y
    return -(pos * self.logsigmoid() + (1 - Y) * (-self).logsigmoid())._do_reduction(reduction)
  def _smoothed_nll(self, picked, logp, axis:int, label_smoothing:float):
    """-(1-s) * picked - s * mean(logp): the loss against targets mixed with the uniform distribution; s=0 adds no term (-inf*0 is nan)"""
    return -(1 - label_smoothing) * picked - label_smoothing * logp.mean(axis) if label_smoothing else -picked
  def cross_entropy(self, Y, reduction:str="mean", label_smoothing:float=0.0, ignore_index:int|None=None):
    """self holds logits with classes on axis 1 (axis 0 unbatched); Y holds class indices (one dim less) or class probabilities (same shape).
    With class indices, samples whose index is ignore_index don't count, also in the mean (torch's ignore_index)"""
    _check_smoothing(label_smoothing)
    axis = 1 if self.ndim > 1 else 0
    logp = self.log_softmax(axis)
    if Y.ndim == self.ndim - 1: picked = self._class_axis_mask(Y, "cross_entropy")[1].where(logp, 0).sum(axis)  # where: -inf*0 is nan
    elif tuple(Y.shape) == tuple(self.shape): picked = (logp * Y).sum(axis)
    else: raise ValueError(f"cross_entropy: target {tuple(Y.shape)} must be class indices of shape {tuple(self.shape[:axis]) + tuple(self.shape[axis+1:])} "
                           f"or probabilities of the input's shape {tuple(self.shape)}")
    loss = self._smoothed_nll(picked, logp, axis, label_smoothing)
    if ignore_index is None: return loss._do_reduction(reduction)
    if Y.ndim != self.ndim - 1: raise ValueError("cross_entropy: ignore_index needs class indices as the target, not probabilities")
    counted = Y.ne(ignore_index)
    loss = counted.where(loss, 0)
    return loss.sum() / counted.sum() if reduction == "mean" else loss._do_reduction(reduction)
  def sparse_categorical_crossentropy(self, Y, ignore_index:int=-1, label_smoothing:float=0.0, reduction:str="mean"):
    """self holds logits with classes on the last axis, Y class indices; samples whose index is ignore_index don't count (also in the mean)"""
    _check_smoothing(label_smoothing)
    if tuple(Y.shape) != tuple(self.shape[:-1]):
      raise ValueError(f"sparse_categorical_crossentropy: indices of shape {tuple(Y.shape)} don't fit logits {tuple(self.shape)} (classes last)")
    logp, counted = self.log_softmax(-1), Y.ne(ignore_index)
    picked = Y._class_mask(self.shape[-1]).where(logp, 0).sum(-1)
    loss = counted.where(self._smoothed_nll(picked, logp, -1, label_smoothing), 0)
    return loss.sum() / counted.sum() if reduction == "mean" else loss._do_reduction(reduction)
  def nll_loss(self, Y, weight=None, ignore_index:int|None=None, reduction:str="mean"):
    """self holds log-probabilities with classes on axis 1 (axis 0 unbatched); the mean is weighted by weight[Y], like torch"""
    axis, mask = self._class_axis_mask(Y, "nll_loss")
    if ignore_index is not None: mask = mask & Y.ne(ignore_index).unsqueeze(axis)
    w = mask if weight is None else mask.where(weight.reshape((-1,) + (1,)*(self.ndim-axis-1)), 0)
    loss = -mask.where(self, 0).mul(w).sum(axis)
    return loss.sum() / w.sum() if reduction == "mean" else loss._do_reduction(reduction)
