"""A concatenation of many pieces realized into memory (Tensor.cat or stack of a list, along an axis with nothing but size-1 axes before
it): each piece is one run of the output's elements, so it is computed into a view of the output by a kernel of its own, whose AST holds
no offset: pieces of one shape and computation share one compiled program. As one kernel, each output element chose among N gated loads
(codegen's peel cuts that into N loops, but the kernel is still N inputs' worth of code to compile: LLVM took ~80 ms per input, a stack of
128 images 4.6 s on its first call)."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.helpers import all_int, prod

# fewer pieces are one kernel: a launch each costs more than the gated loads save, and a few compile fast
PIECES_MIN = 8
# a view's first byte is a multiple of this: the widest alignment a renderer assumes of its buffers (LLVM's BUFFER_ALIGN); a kernel
# given a view off it runs on an aligned copy (runtime/ops_cpu.py)
VIEW_ALIGN = 64

def _leaves(u:UOp) -> list[UOp]:
  """the terms of u's tree of the op at its root (cat joins its padded pieces with ADD, bool ones with OR)"""
  out, stack = [], [u]
  while stack:
    if (x := stack.pop()).op is u.op: stack.extend(reversed(x.src))
    else: out.append(x)
  return out

def cat_pieces(u:UOp) -> list[tuple[UOp, int]]|None:
  """[(piece, its first element in u)] where u is a cat of at least PIECES_MIN pieces that each are one aligned run of u's elements:
  zero-padded along one axis, only size-1 axes before it, the pieces tiling it; else None"""
  if u.op not in (Ops.ADD, Ops.OR) or u._shape is None or not all_int(u.shape): return None
  if len(leaves := _leaves(u)) < PIECES_MIN or any(x.op is not Ops.PAD for x in leaves): return None
  axes = {i for x in leaves for i, (b, a) in enumerate(x.marg) if b or a}
  if len(axes) != 1 or prod(u.shape[:(axis := axes.pop())]) != 1: return None
  row = prod(u.shape[axis + 1:])
  # an empty piece has nothing to write (and starts where the next one does)
  pieces = sorted(((x.marg[axis][0], x.src[0]) for x in leaves if x.shape[axis] != x.marg[axis][0] + x.marg[axis][1]), key=lambda p: p[0])
  at = 0
  for start, piece in pieces:  # in order along the axis, each beginning where the last one ended: a tiling, no overlap, no gap
    if start != at or start * row * u.dtype.itemsize % VIEW_ALIGN: return None
    at += piece.shape[axis]
  return [(piece, start * row) for start, piece in pieces] if at == u.shape[axis] else None
