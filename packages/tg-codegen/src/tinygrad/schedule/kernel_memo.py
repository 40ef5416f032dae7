"""Kernels built once per structure within one schedule: a region (a node's fused graph down to the buffers and realized nodes it reads)
whose buffers are numbered in walk order is the same key for every kernel that differs only in which buffers it reads (a model's
layers, a list of initialisers' rand kernels: 200 uniforms of 100 Linear layers took ~17 ms each in the indexing pass). A repeat takes
the first one's PARAM AST and reads its own buffers in the order the first read theirs."""
from __future__ import annotations
import dataclasses
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp

def _numbered(b:UOp, n:int) -> UOp:
  """buffer b as the n-th buffer of a region: its size, dtype and device kept, its identity (slot) not"""
  return b.replace(arg=dataclasses.replace(b.arg, slot=-1-n))

@dataclasses.dataclass
class KernelMemo:
  """per create_schedule: normalized region -> (the kernel's PARAM AST, its inputs as numbers of the region's buffers, its Variables)"""
  built: dict[UOp, tuple[UOp, list[int], tuple[str, ...]]] = dataclasses.field(default_factory=dict)

  def region(self, u:UOp, realized:dict[UOp, UOp]) -> tuple[UOp, list[UOp]]:
    """u's region with its buffers numbered (a realized node as its buffer or view of one, numbered), and those buffers in number order"""
    bufs: dict[UOp, UOp] = {}
    def number(b:UOp) -> UOp:
      if b not in bufs: bufs[b] = _numbered(b, len(bufs))
      return bufs[b]
    new: dict[UOp, UOp] = {}
    for x in u.toposort(lambda x: x is u or not (x.op is Ops.BUFFER or x in realized)):
      if x is not u and x.op is Ops.BUFFER: new[x] = number(x)
      elif x is not u and x in realized:
        r = realized[x]
        new[x] = r.substitute({b: number(b) for b in r.toposort(lambda b: b.op is not Ops.BUFFER) if b.op is Ops.BUFFER})
      else: new[x] = x if all(new[s] is s for s in x.src) else x.replace(src=tuple(new[s] for s in x.src))
    return new[u], list(bufs)
