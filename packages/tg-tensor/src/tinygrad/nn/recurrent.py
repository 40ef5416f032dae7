"""nn.LSTMCell: one step of a long short-term memory cell."""
from __future__ import annotations
import math
from tinygrad.tensor import Tensor

class LSTMCell:
  """(h, c) = cell(x, (h, c)); gates i, f, g, o in that order along weight rows, weights uniform in +-1/sqrt(hidden_size), biases zero"""
  def __init__(self, input_size:int, hidden_size:int, bias:bool=True):
    bound = 1 / math.sqrt(hidden_size)
    self.weight_ih = Tensor.uniform(hidden_size*4, input_size, low=-bound, high=bound)
    self.weight_hh = Tensor.uniform(hidden_size*4, hidden_size, low=-bound, high=bound)
    self.bias_ih, self.bias_hh = (Tensor.zeros(hidden_size*4), Tensor.zeros(hidden_size*4)) if bias else (None, None)
  def __call__(self, x:Tensor, hc:tuple[Tensor, Tensor]|None=None) -> tuple[Tensor, Tensor]:
    if hc is None: hc = (Tensor.zeros(x.shape[0], self.weight_hh.shape[1], dtype=x.dtype, device=x.device),)*2
    gates = x.linear(self.weight_ih.T, self.bias_ih) + hc[0].linear(self.weight_hh.T, self.bias_hh)
    i, f, g, o = gates.chunk(4, dim=1)
    c = f.sigmoid()*hc[1] + i.sigmoid()*g.tanh()
    return (o.sigmoid() * c.tanh()).contiguous(), c.contiguous()
