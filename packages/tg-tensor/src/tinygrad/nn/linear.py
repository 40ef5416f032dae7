"""nn.Linear and nn.Embedding: the layers that map features (or token ids) through one weight matrix."""
from __future__ import annotations
import math
from tinygrad.tensor import Tensor

class Linear:
  """y = x @ weight.T + bias; weight (out_features, in_features) and bias uniform in +-1/sqrt(in_features), as torch and upstream"""
  def __init__(self, in_features:int, out_features:int, bias:bool=True):
    bound = 1 / math.sqrt(in_features)
    self.weight = Tensor.uniform(out_features, in_features, low=-bound, high=bound)
    self.bias = Tensor.uniform(out_features, low=-bound, high=bound) if bias else None
  def __call__(self, x:Tensor) -> Tensor:
    if x.shape[-1] != self.weight.shape[1]:
      raise ValueError(f"Linear({self.weight.shape[1]}, {self.weight.shape[0]}) got input of shape {tuple(x.shape)}: its last axis must be {self.weight.shape[1]}")
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
