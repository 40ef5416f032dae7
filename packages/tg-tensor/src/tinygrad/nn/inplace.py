"""Deferred in-place writes: Tensor.assign writes now, one realize per call; an optimizer step (or a BatchNorm's running statistics)
writes many buffers, so it builds every write first and realizes them together, one schedule for the lot."""
from __future__ import annotations
from tinygrad.tensor import Tensor, _reads_elsewhere, _private_buffer, _deferred

def buffer_of(t:Tensor) -> Tensor:
  """t in a buffer of its own, realized now (a constant or lazy graph becomes memory a write can land in, shared with no other tensor)"""
  return Tensor(_private_buffer(t.uop), requires_grad=t.requires_grad)

def pending_write(target:Tensor, value:Tensor) -> Tensor:
  """a lazy tensor that, when realized, writes value into target's buffer and reads as the written buffer; target must be realized.
  Writes realized together run after every kernel of that schedule that reads their targets' old values; two writes whose values
  read each other's targets directly (not through a reduce or another realized value) would still see each other's new values"""
  if target.shape != value.shape or target.dtype is not value.dtype or target.device != value.device:
    raise ValueError(f"in-place write needs the same shape, dtype and device: target is {target.shape} {target.dtype} on {target.device}, "
                     f"value is {value.shape} {value.dtype} on {value.device}")
  if 0 in target.shape: return target  # nothing to write, and no buffer to write it in (an empty parameter, its optimizer state)
  if not target._is_buffer(): raise RuntimeError(f"in-place write into an unrealized {target.shape} tensor: realize it first")
  # a value that reads the target at other indices (a norm of it, a transpose) is computed whole before the write lands
  v = value.contiguous() if _reads_elsewhere(value.uop, target.uop) else value
  # a multi-device target: each device writes its piece (the scheduler's multi pass splits the write)
  if isinstance(target.device, tuple): return Tensor(target.uop.after(target.uop.store(v.uop)))
  # through the flat buffer: the schedule reads an AFTER of a reshaped view as no buffer at all
  buf = target.uop.base
  return Tensor(buf.after(buf.store(v.reshape(-1).uop))).reshape(target.shape)

# Left to the next optimizer step, which realizes them with the gradients (or to an assign, which realizes them first):
# - writes a module leaves pending (BatchNorm's running statistics): realized in the forward pass they would make one realize per layer;
# - a loss backward() ran on: realized before the parameters change, so reading it after the step gives the forward's value (torch's),
#   not one that mixes old and new parameters (the step's realize materialises part of the forward; the rest would read new weights).
# - a write a realize reads the target of (through a view of it) lands with it (tensor._deferred_writes_read_by).
# Weak: a tensor nobody holds any more needs no realize

def defer(*pending:Tensor) -> None:
  """leave these tensors to be realized by the next take_deferred() caller (or any realize of them)"""
  for t in pending: _deferred[id(t)] = t

def take_deferred() -> list[Tensor]:
  """the deferred tensors, forgotten here: the caller realizes them"""
  ret = list(_deferred.values())
  _deferred.clear()
  return ret
