"""nn.Conv1d/Conv2d and nn.ConvTranspose1d/2d: weights and bias uniform in +-1/sqrt(fan_in), as torch and upstream."""
from __future__ import annotations
from tinygrad.tensor import Tensor
from tinygrad.helpers import prod
from tinygrad.tensor_conv import _padding_mode, _ints, _groups, _per_axis
from tinygrad.nn.linear import _size, _uniform

def _kernel(kernel_size:int|tuple[int, ...]) -> tuple[int, ...]:
  k = _ints(kernel_size, "kernel_size")
  return _per_axis(k, 2 if isinstance(k, int) else len(k), "kernel_size", 1)

class Conv2d:
  """a cross-correlation over as many spatial axes as kernel_size has (an int means two); padding may be 'same' or 'valid', in any case"""
  def __init__(self, in_channels:int, out_channels:int, kernel_size:int|tuple[int, ...], stride=1, padding:int|tuple[int, ...]|str=0,
               dilation=1, groups:int=1, bias:bool=True):
    in_channels, out_channels, groups = _size(in_channels, "in_channels"), _size(out_channels, "out_channels"), _groups(groups)
    if in_channels % groups or out_channels % groups:
      raise ValueError(f"Conv2d: in_channels={in_channels} and out_channels={out_channels} must both be divisible by groups={groups}")
    self.kernel_size = _kernel(kernel_size)
    # a padding string is checked here, as tinygrad's Conv2d does, and so are the sizes' types, rather than at the first call
    self.padding = _padding_mode(padding) if isinstance(padding, str) else _ints(padding, "padding")
    self.stride, self.dilation, self.groups = _ints(stride, "stride"), _ints(dilation, "dilation"), groups
    fan_in = in_channels * prod(self.kernel_size)
    self.weight = _uniform(out_channels, in_channels//groups, *self.kernel_size, fan_in=fan_in)
    self.bias = _uniform(out_channels, fan_in=fan_in) if bias else None
  def __call__(self, x:Tensor) -> Tensor:
    return x.conv2d(self.weight, self.bias, groups=self.groups, stride=self.stride, dilation=self.dilation, padding=self.padding)

def Conv1d(in_channels:int, out_channels:int, kernel_size:int, stride=1, padding:int|str=0, dilation=1, groups:int=1, bias:bool=True) -> Conv2d:
  """a Conv2d with a one-axis kernel: input (N, C, L)"""
  return Conv2d(in_channels, out_channels, (kernel_size,), stride, padding, dilation, groups, bias)

class ConvTranspose2d(Conv2d):
  """the transpose (input gradient) of Conv2d; weight is (in_channels, out_channels//groups, *kernel_size)"""
  def __init__(self, in_channels:int, out_channels:int, kernel_size:int|tuple[int, ...], stride=1, padding=0, output_padding=0,
               dilation=1, groups:int=1, bias:bool=True):
    super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)
    self.weight = _uniform(in_channels, out_channels//groups, *self.kernel_size, fan_in=in_channels * prod(self.kernel_size))
    self.output_padding = output_padding
  def __call__(self, x:Tensor) -> Tensor:
    return x.conv_transpose2d(self.weight, self.bias, groups=self.groups, stride=self.stride, dilation=self.dilation, padding=self.padding,
                              output_padding=self.output_padding)

def ConvTranspose1d(in_channels:int, out_channels:int, kernel_size:int, stride=1, padding=0, output_padding=0, dilation=1, groups:int=1,
                    bias:bool=True) -> ConvTranspose2d:
  """a ConvTranspose2d with a one-axis kernel: input (N, C, L)"""
  return ConvTranspose2d(in_channels, out_channels, (kernel_size,), stride, padding, output_padding, dilation, groups, bias)
