"""Pickling tensors: the graph (UOps pickle structurally) plus the device Buffer of every allocated BUFFER in it, whose contents go
out of band with protocol 5. Unpickled BUFFERs are renumbered, so they never collide with the receiving process's own buffers."""
from __future__ import annotations
import weakref
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import AddrSpace
from tinygrad.engine.realize import adopt_buffer, existing_buffer

def tensor_reduce(t) -> tuple:
  u = t.uop
  bufs = [(b, existing_buffer(b)) for b in u.toposort() if b.op is Ops.BUFFER and b.arg.addrspace is AddrSpace.GLOBAL]
  return _unpickle_tensor, (u, bufs, t.requires_grad)

# unpickled device Buffer -> its BUFFER UOp, both weakly (the UOp holds the Buffer): tensors unpickled together that shared a buffer share it
_adopted: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

def _renumbered(u:UOp, buf) -> UOp:
  if buf is None: return UOp.new_buffer(u.arg.device, u.arg.shape[0], u.dtype)
  if (ref := _adopted.get(buf)) is not None and (new := ref()) is not None: return new
  _adopted[buf] = weakref.ref(new := adopt_buffer(UOp.new_buffer(buf.device, buf.size, buf.dtype), buf))
  return new

def _unpickle_tensor(u:UOp, bufs:list, requires_grad:bool|None):
  from tinygrad.tensor import Tensor
  return Tensor(u.substitute({b: _renumbered(b, buf) for b, buf in bufs}), requires_grad=requires_grad)
