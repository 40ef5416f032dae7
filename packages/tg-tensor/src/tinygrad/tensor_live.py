"""Every Tensor handle made, held weakly: backward() with no requires_grad=True tensor in the graph fills .grad of each live float tensor
in it, as tinygrad 0.14 does (it has no requires_grad)."""
from __future__ import annotations
import weakref

class LiveTensors:
  """id -> weak reference, with no callback: a plain weakref.ref is the cheapest to make, and every op makes a handle. A dead entry stays
  until its id is reused (then overwritten) or the dict has doubled since the last sweep, so the dict stays within twice the live count"""
  MIN_LIMIT = 1 << 12
  def __init__(self): self.refs, self.limit = {}, self.MIN_LIMIT
  def add(self, t):
    self.refs[id(t)] = weakref.ref(t)
    if len(self.refs) > self.limit: self.sweep()
  def sweep(self):
    self.refs = {k: r for k, r in self.refs.items() if r() is not None}
    self.limit = max(self.MIN_LIMIT, 2 * len(self.refs))
  def alive(self) -> list:
    return [t for r in list(self.refs.values()) if (t := r()) is not None]
