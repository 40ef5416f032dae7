"""Normalisation layers: BatchNorm (train/eval, running statistics), LayerNorm, LayerNorm2d, GroupNorm, InstanceNorm, RMSNorm."""
from __future__ import annotations
from tinygrad.tensor import Tensor, current_capture
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import smax  # max of ints or of a symbolic batch size (a Variable)
from tinygrad.nn.inplace import buffer_of, pending_write, defer
from tinygrad.tensor_nn import is_training
from tinygrad.helpers import JIT_CAPTURE

def _affine(x:Tensor, weight:Tensor|None, bias:Tensor|None) -> Tensor:
  """x * weight + bias per channel (axis 1)"""
  if weight is None: return x
  shape = (1, -1) + (1,)*(x.ndim-2)
  return x * weight.reshape(shape) + bias.reshape(shape)

class _Pending:
  """the last training call's statistics handles, whether a gradient flowed through its batch statistics, and the buffers it wrote into:
  slots, no __dict__, so get_state_dict and get_parameters do not walk into it (its tensors are no state of the module)"""
  __slots__ = ("stats", "grad", "targets")
  def __init__(self, stats:tuple, grad:bool, targets:tuple): self.stats, self.grad, self.targets = stats, grad, targets

class BatchNorm:
  """normalise each channel (axis 1) by the batch's statistics while Tensor.training, by the running ones otherwise; a training call
  updates running_mean/running_var (unbiased variance) in place with weight `momentum`, and counts num_batches_tracked"""
  def __init__(self, sz:int, eps:float=1e-5, affine:bool=True, track_running_stats:bool=True, momentum:float=0.1):
    self.eps, self.track_running_stats, self.momentum = eps, track_running_stats, momentum
    self._written_in: int|None = None  # the TinyJit capture the last training call's pending writes were made in (None: none)
    self._pending: _Pending|None = None
    self.weight = Tensor.ones(sz) if affine else None
    self.bias = Tensor.zeros(sz) if affine else None
    if track_running_stats:  # in tinygrad's order (state-dict keys, parameters): the counter first
      self.num_batches_tracked = buffer_of(Tensor.zeros((), dtype=dtypes.int64, requires_grad=False))  # a scalar, as in torch checkpoints
      self.running_mean = buffer_of(Tensor.zeros(sz, requires_grad=False))
      self.running_var = buffer_of(Tensor.ones(sz, requires_grad=False))

  def calc_stats(self, x:Tensor) -> tuple[Tensor, Tensor]:
    """(mean, biased variance) per channel: the running ones in eval mode, the batch's otherwise"""
    if self.track_running_stats and not is_training(): return self.running_mean, self.running_var
    axes = tuple(i for i in range(x.ndim) if i != 1)
    if x.dtype in (dtypes.half, dtypes.bfloat16): x = x.float()  # as torch: y*y overflows half past 256
    mean = x.mean(axes)
    y = x - mean.detach().reshape((1, -1) + (1,)*(x.ndim-2))  # the mean's gradient through the variance is zero: skip it
    return mean, (y*y).mean(axes)

  def __call__(self, x:Tensor) -> Tensor:
    if x.ndim < 2 or x.shape[1] != (sz := self.running_mean.shape[0] if self.track_running_stats else x.shape[1]):
      raise ValueError(f"BatchNorm({sz}) got input of shape {tuple(x.shape)}: axis 1 must hold the {sz} channels")
    stats = (self.running_mean, self.running_var, self.num_batches_tracked) if self.track_running_stats else ()
    # the module applied again in one forward (a siamese net) while a gradient flows through the earlier call's batch statistics: this
    # update goes on top of that call's pending one, still lazy. Realizing it here would put buffers in place of those statistics in the
    # loss's graph and silently cut their gradient path
    if stack := (is_training() and self._pending is not None and self._pending.grad and self._written_in == current_capture() and
                 all(t is p and not t._is_buffer() for t, p in zip(stats, self._pending.stats))):
      targets = self._pending.targets
    # else the previous training call's update, if nothing realized it yet: a new write needs its target in a buffer
    elif any(not t._is_buffer() for t in stats):
      # inside a TinyJit capture, a write left by an earlier call would be recorded reading that call's intermediates, which the replays
      # overwrite. One this call made (the module applied twice in a step) is recorded in order, reading this call's
      if JIT_CAPTURE and self._written_in != current_capture():
        raise RuntimeError("BatchNorm in training mode under TinyJit: the jitted function must end with the optimizer step, which writes "
                           "the running statistics (or realize bn.running_mean, running_var, num_batches_tracked)")
      Tensor.realize(*stats)
    mean, var = self.calc_stats(x)
    if self.track_running_stats and is_training():
      if not stack: targets = tuple(Tensor(t.uop, requires_grad=False) for t in stats)  # the buffers, which the handles read as written
      n, m = x.numel() // x.shape[1], self.momentum
      # the batch's statistics are float32 for a half x: the running ones keep their own dtype
      writes = (pending_write(targets[0], ((1-m)*self.running_mean + m*mean.detach()).cast(self.running_mean.dtype)),
                pending_write(targets[1], ((1-m)*self.running_var + var.detach()*m*n/smax(n-1, 1)).cast(self.running_var.dtype)),
                pending_write(targets[2], self.num_batches_tracked + 1))
      # lazy, like upstream's assign: reading a statistic realizes its write, and so does the next optimizer step (inplace.defer)
      for t, w in zip(stats, writes): t.uop = w.uop
      defer(*stats)
      self._written_in, self._pending = current_capture(), _Pending(stats, x._grad_flows(), targets)
    out = x.batchnorm(self.weight, self.bias, mean, (var + self.eps).rsqrt())
    return out.cast(x.dtype) if x.dtype in (dtypes.half, dtypes.bfloat16) else out  # float32 statistics: the output keeps x's dtype

# upstream names: the channel axis is 1 whatever the rank
BatchNorm1d = BatchNorm2d = BatchNorm3d = BatchNorm

class LayerNorm:
  """normalise over the trailing axes given by normalized_shape, then weight * x + bias (shape normalized_shape)"""
  def __init__(self, normalized_shape:int|tuple[int, ...], eps:float=1e-5, elementwise_affine:bool=True):
    self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    self.axis, self.eps, self.elementwise_affine = tuple(-1-i for i in range(len(self.normalized_shape))), eps, elementwise_affine
    self.weight = Tensor.ones(*self.normalized_shape) if elementwise_affine else None
    self.bias = Tensor.zeros(*self.normalized_shape) if elementwise_affine else None
  def __call__(self, x:Tensor) -> Tensor:
    if tuple(x.shape[-len(self.normalized_shape):]) != self.normalized_shape:
      raise ValueError(f"LayerNorm{self.normalized_shape} got input of shape {tuple(x.shape)}: its trailing axes must be {self.normalized_shape}")
    x = x.layernorm(eps=self.eps, axis=self.axis)
    return x * self.weight + self.bias if self.elementwise_affine else x

class LayerNorm2d(LayerNorm):
  """LayerNorm over the channels of an (N, C, H, W) input"""
  def __call__(self, x:Tensor) -> Tensor: return super().__call__(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

class GroupNorm:
  """normalise each of num_groups groups of channels (with their spatial axes) per sample, then a per-channel affine"""
  def __init__(self, num_groups:int, num_channels:int, eps:float=1e-5, affine:bool=True):
    if num_channels % num_groups: raise ValueError(f"GroupNorm: {num_channels} channels do not split into {num_groups} groups")
    self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
    self.weight = Tensor.ones(num_channels) if affine else None
    self.bias = Tensor.zeros(num_channels) if affine else None
  def __call__(self, x:Tensor) -> Tensor:
    if x.ndim < 2 or x.shape[1] != self.num_channels:
      raise ValueError(f"GroupNorm({self.num_groups}, {self.num_channels}) got input of shape {tuple(x.shape)}: axis 1 must hold {self.num_channels}")
    return _affine(x.reshape(x.shape[0], self.num_groups, -1).layernorm(eps=self.eps).reshape(x.shape), self.weight, self.bias)

class InstanceNorm(GroupNorm):
  """normalise each channel of each sample over its spatial axes, then a per-channel affine: a GroupNorm with one channel per group"""
  def __init__(self, num_features:int, eps:float=1e-5, affine:bool=True):
    super().__init__(num_features, num_features, eps, affine)
    self.num_features = num_features
  def __call__(self, x:Tensor) -> Tensor:
    if x.ndim < 3 or x.shape[1] != self.num_features:
      raise ValueError(f"InstanceNorm({self.num_features}) got input of shape {tuple(x.shape)}: needs (N, {self.num_features}, *spatial)")
    return super().__call__(x)

class RMSNorm:
  """x / sqrt(mean(x^2 over the last axis) + eps), computed in float32, times weight (dim)"""
  def __init__(self, dim:int, eps:float=1e-6, elementwise_affine:bool=True):
    self.eps, self.weight = eps, Tensor.ones(dim) if elementwise_affine else None
  def _norm(self, x:Tensor) -> Tensor: return x * (x.square().mean(-1, keepdim=True) + self.eps).rsqrt()
  def __call__(self, x:Tensor) -> Tensor:
    x = self._norm(x.float()).cast(x.dtype)
    return x if self.weight is None else x * self.weight
