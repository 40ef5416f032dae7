"""Tensors over several devices. A multi-device tensor's graph is a MULTI node with one piece per device, sharded on an axis or
replicated; ops on it stay logical (full shapes) and the scheduler's multi pass builds each device's piece (tinygrad.schedule.multi)."""
from __future__ import annotations
from typing import Callable, TYPE_CHECKING
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.uop.multi import split_sizes, bounds, shard_of
from tinygrad.device import Device
if TYPE_CHECKING: from tinygrad.tensor import Tensor

def is_multi_buffer(u:UOp) -> bool:
  """a MULTI whose pieces are all whole buffers (a realized multi-device tensor)"""
  if u.op is not Ops.MULTI: return False
  for p in u.src:
    while p.op is Ops.RESHAPE: p = p.src[0]
    if not (p.op is Ops.BUFFER or is_symbolic_prefix(p)): return False
  return True

def is_symbolic_prefix(u:UOp) -> bool:
  """u the part of a buffer that a symbolic size uses (Tensor.empty of one: a buffer for its Variables' maximum, shrunk to the size).
  A shrink to a fixed size is a view of part of another tensor's buffer (a shard of a realized tensor, x[:2]), not a buffer of its own"""
  return u.op is Ops.SHRINK and u.src[0].op is Ops.BUFFER and u.marg[0][0] == 0 and not isinstance(u.marg[0][1], int)

class TensorMultiMixin:
  def shard(self, devices:tuple|list, axis:int|None=None):
    """this tensor split over `devices` along `axis` (device i holds the i-th of a balanced split: 7 rows over 3 devices are 3, 2 and 2),
    or replicated on every device when axis is None. A tensor already on several devices is gathered first."""
    from tinygrad.tensor import Tensor, _derived_grad
    devs = Device.canonicalize(devices if isinstance(devices, str) else tuple(devices))  # a name is one device, not its letters
    if isinstance(self.device, tuple): return self.to(self.device[0]).shard(devs, axis) if self.device != devs or axis != self.uop.axis else self
    if axis is None or isinstance(devs, str): return self.to(devs)
    if not self.shape: raise ValueError(f"cannot shard a 0-d tensor on axis {axis}: it has no axes; shard(devices) replicates it")
    axis = self._resolve_dim(axis)
    if not isinstance(n := self.shape[axis], int): raise ValueError(f"cannot shard axis {axis} of symbolic size {n.render()}: shard a concrete axis")
    if n < len(devs): raise ValueError(f"cannot shard axis {axis} of size {n} (shape {tuple(self.shape)}) over {len(devs)} devices: each needs one")
    pieces = [self.shrink(tuple(b if i == axis else None for i in range(self.ndim))) for b in bounds(split_sizes(n, len(devs)))]
    # Tensor.to: a piece of a DISK tensor that is no run of its bytes (a column block) is copied as its rows, then cut
    return Tensor(UOp.multi([p.uop if p.device == d else p.to(d).uop for p, d in zip(pieces, devs)], axis),
                  requires_grad=_derived_grad(self))
  def shard_(self, devices:tuple|list, axis:int|None=None):
    """shard in place: this handle now points at the sharded tensor (a leaf that wants a gradient still is one, there)"""
    return self.replace(self.shard(devices, axis))
  def shard_like(self, y):
    """this tensor laid out like y: on y's devices, split on y's axis (or replicated), or on y's one device"""
    return self.shard(y.device, y.uop.axis) if isinstance(y.device, tuple) else self.to(y.device)
  def _like(self, make:Callable[[tuple, str|tuple], Tensor], device:str|tuple|None, requires_grad:bool|None=None, drawn:bool=False) -> Tensor:
    """make(shape, device) in self's shape on self's devices (or on `device`): a sharded self gets one piece per device in its shard's
    shape, sharded on its axis (an optimizer's moments of a sharded parameter: each device holds its part, not the whole). drawn: random
    values, made whole on the first device and then sharded, as every device's stream starts from the same seed"""
    from tinygrad.tensor import Tensor
    if (device is None or Device.canonicalize(device) == self.device) and (sh := shard_of(self.uop)) is not None:
      axis, sizes = sh
      if drawn: ret = make(self.shape, self.device[0]).shard(self.device, axis)
      else: ret = Tensor(UOp.multi([make(tuple(n if i == axis else s for i, s in enumerate(self.shape)), d).uop
                                    for n, d in zip(sizes, self.device)], axis))
    else: ret = make(self.shape, self.device if device is None else device)
    ret.requires_grad = requires_grad
    return ret
  @property
  def shard_sizes(self) -> tuple|None:
    """per-device sizes along the shard axis; None when replicated or on one device"""
    return None if (sh := shard_of(self.uop)) is None else sh[1]
