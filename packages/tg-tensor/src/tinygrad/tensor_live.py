"""Every Tensor handle made, held weakly: backward() with no requires_grad=True tensor in the graph fills .grad of each live float tensor
in it, as tinygrad 0.14 does (it has no requires_grad), and an in-place write first computes the live values that read the old contents."""
from __future__ import annotations
import weakref
from tinygrad.uop import Ops
from tinygrad.uop.ops import BufferClock
from tinygrad.tensor_multi import is_multi_buffer
from tinygrad.tensor_views import torch_view

class LiveTensors:
  """id -> weak reference, with no callback: a plain weakref.ref is the cheapest to make, and every op makes a handle. A dead entry stays
  until its id is reused (then overwritten) or the dict has doubled since the last sweep, so the dict stays within twice the live count"""
  MIN_LIMIT = 1 << 12
  def __init__(self):
    # lazy: id -> (weak reference, the newest buffer's number when the handle got its graph), in that order: the handles that may
    # hold a graph still to compute (not a view of a buffer), every new one and one given a new graph (Tensor.uop's setter).
    # computing_from() drops those it finds realized, so an in-place write looks at the lazy ones alone, and only the newer ones
    self.refs, self.lazy, self.limit = {}, {}, self.MIN_LIMIT
  def add(self, t):
    self.refs[id(t)] = r = weakref.ref(t)
    self._lazy(id(t), r)
    if len(self.refs) > self.limit: self.sweep()
  def may_be_lazy(self, t):
    if (r := self.refs.get(id(t))) is not None and r() is t: self._lazy(id(t), r)
  def _lazy(self, key:int, r):
    self.lazy.pop(key, None)  # to the end, keeping the order by buffer number (an id is reused after its handle dies)
    self.lazy[key] = (r, BufferClock.last)
  def sweep(self):
    self.refs = {k: r for k, r in self.refs.items() if r() is not None}
    self.lazy = {k: e for k, e in self.lazy.items() if e[0]() is not None}
    self.limit = max(self.MIN_LIMIT, 2 * len(self.refs))
  def alive(self) -> list:
    return [t for r in list(self.refs.values()) if (t := r()) is not None]
  def computing_from(self, bufs:set, skip:set[int], caught_up:bool) -> list:
    """the live handles (but those whose ids are in skip) whose values are still to be computed from bufs; a handle found realized is
    forgotten here until it gets a new graph. caught_up=False looks at each graph as its handle last saw it, and only at handles given
    their graphs after the oldest of bufs was made: right unless a node in a graph was realized into bufs since (the caller knows), as
    catching up only puts buffers in place of nodes, and costs a walk of each graph after every realize"""
    oldest = min([b.arg.slot for b in bufs]) if bufs and not caught_up else -1
    ret, done = [], []
    # catching a handle up (its uop) refiles it at the end of lazy (Tensor.uop): that walk goes over a copy
    for k, (r, made) in reversed(list(self.lazy.items()) if caught_up else self.lazy.items()):
      if made < oldest: break
      if (t := r()) is None or _is_view(t.uop if caught_up else t._uop): done.append(k)
      elif k not in skip: ret.append(t)
    for k in done: self.lazy.pop(k, None)
    return computing_from(ret, bufs, caught_up) if ret else ret

  def made_after(self, t) -> list:
    """the live handles given their graphs after t was (views taken of t's value since, among others)"""
    ret = []
    for k, (r, _) in reversed(self.lazy.items()):
      if k == id(t): break
      if (h := r()) is not None: ret.append(h)
    return ret
  def viewing(self, base) -> list:
    """the live handles whose graph is base, or movement ops over it (each caught up: a node realized since is its buffer)"""
    return [t for r, _ in list(self.lazy.values()) if (t := r()) is not None and t.uop.base is base]

def _is_view(u) -> bool:
  """u reads memory through movement ops that torch makes a view: an in-place write into the memory shows in it, so it is not
  computed before the write. A flip, a pad, a repeat or a reshape needing a copy is computed first, with the old contents"""
  return ((b := u.base).op is Ops.BUFFER or is_multi_buffer(b)) and torch_view(u)

def computing_from(tensors:list, bufs:set, caught_up:bool=True) -> list:
  """the tensors whose values are still to be computed from one of bufs (buffer nodes). A view of a buffer (movement ops over it) is
  not one: it reads the buffer's memory, and an in-place write shows in it, as in a torch view"""
  want, memo = _bits_of(bufs), {}
  def reads(root) -> bool:  # exact, one walk for all of them: the nodes already answered are not descended into again
    for u in root.toposort(lambda u: u not in memo):
      if u not in memo: memo[u] = u in bufs or any([memo[s] for s in u.src])
    return memo[root]
  return [t for t in tensors if read_bits(u := t.uop if caught_up else t._uop) & want and not _is_view(u) and reads(u)]

def reads_buffer(root, bufs:set) -> bool:
  """root's graph reads one of bufs (buffer nodes), through a view of it or not"""
  return bool(read_bits(root) & _bits_of(bufs)) and any(u in bufs for u in root.toposort())

def _bits_of(bufs:set) -> int:
  """the filter bits of a set of buffer nodes (read_bits)"""
  want = 0
  for b in bufs: want |= read_bits(b)
  return want

BITS = "_read_bits"
def read_bits(root) -> int:
  """a filter kept on each node (a graph never changes): one bit per buffer it reads, of 1021 (the buffer's id modulo 1021). A graph whose
  bits miss a buffer's does not read it, so a write looks no further into the many small graphs that read other buffers"""
  if (m := root.__dict__.get(BITS)) is not None: return m
  for u in root.toposort(lambda u: BITS not in u.__dict__):
    if BITS not in u.__dict__:
      m = 1 << (id(u) % 1021) if u.op is Ops.BUFFER else 0
      for s in u.src: m |= s.__dict__[BITS]
      u.__dict__[BITS] = m
  return root.__dict__[BITS]
