"""nn.Linear and nn.Embedding: the layers that map features (or token ids) through one weight matrix."""
from __future__ import annotations
import math, operator
from tinygrad.tensor import Tensor

def _size(n, what:str) -> int:
  """a layer's feature or channel count: an int >= 0 (torch allows 0, an empty weight)"""
  try: n = operator.index(n)
  except TypeError: raise TypeError(f"{what} must be an int, got {n!r}") from None
  if n < 0: raise ValueError(f"{what} must be >= 0, got {n}")
  return n

def _uniform(*shape:int, fan_in:int) -> Tensor:
  """uniform in +-1/sqrt(fan_in); with no inputs (fan_in 0) zeros, as torch's bound of 0: the weight is empty and the bias 0"""
  return Tensor.uniform(*shape, low=-(bound := 1 / math.sqrt(fan_in)), high=bound) if fan_in else Tensor.zeros(*shape)

class Linear:
  """y = x @ weight.T + bias; weight (out_features, in_features) and bias uniform in +-1/sqrt(in_features), as torch and upstream"""
  def __init__(self, in_features:int, out_features:int, bias:bool=True):
    in_features, out_features = _size(in_features, "in_features"), _size(out_features, "out_features")
    self.weight = _uniform(out_features, in_features, fan_in=in_features)
    self.bias = _uniform(out_features, fan_in=in_features) if bias else None
  def __call__(self, x:Tensor) -> Tensor:
    if x.ndim == 0 or x.shape[-1] != self.weight.shape[1]:
      raise ValueError(f"Linear({self.weight.shape[1]}, {self.weight.shape[0]}) got input of shape {tuple(x.shape)}: "
                       f"it needs at least 1 dimension, the last of size {self.weight.shape[1]}")
    return x.linear(self.weight.T, self.bias)

class Embedding:
  """rows of weight (vocab_size, embed_size, glorot uniform) picked by integer ids; any id shape, the result adds an embed_size axis"""
  def __init__(self, vocab_size:int, embed_size:int):
    self.vocab_sz, self.embed_sz = vocab_size, embed_size
    self.weight = Tensor.glorot_uniform(vocab_size, embed_size)
  def __call__(self, idx:Tensor) -> Tensor:
    # a one-hot compare summed over the vocabulary: the reduce reads one row per id, and its gradient scatters back into weight
    hit = idx._class_mask(self.vocab_sz).unsqueeze(-1)  # (*idx.shape, vocab, 1)
    return hit.where(self.weight, 0).sum(-2)
