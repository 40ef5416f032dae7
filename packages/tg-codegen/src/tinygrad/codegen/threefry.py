"""Ops.THREEFRY (uop/threefry.py) becomes its uint32 rounds in the kernel AST, before the optimizer sees it: the opts are chosen for the
~120 integer ops a counter takes, as for any other code. A word read from the uint64 result (Tensor._random_bits casts it for the low
word and shifts it first for the high one) is that word of the rounds, so the two words of one counter share one set of rounds and no
64-bit value is made; elsewhere the op is the two words joined. A key whose halves were joined from two uint32 words (the key buffer's
(seed, call)) is read as those words."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, graph_rewrite
from tinygrad.uop.threefry import threefry2x32
from tinygrad.dtype import dtypes

def _is_word(u:UOp) -> bool: return u.dtype is dtypes.uint32

def _halves(v:UOp) -> tuple[UOp, UOp]:
  """v's (low, high) uint32 words: the words it was joined from (high << 32 | low, either order), else its cast and shifted cast"""
  if v.op is Ops.OR:
    for shifted, low in (v.src, v.src[::-1]):
      if shifted.op is Ops.SHL and shifted.src[1].op is Ops.CONST and shifted.src[1].arg == 32 and \
         (high := shifted.src[0]).op is Ops.CAST and _is_word(high.src[0]) and low.op is Ops.CAST and _is_word(low.src[0]):
        return low.src[0], high.src[0]
  return v.cast(dtypes.uint32), (v >> 32).cast(dtypes.uint32)

def _words(f:UOp) -> tuple[UOp, UOp]:
  """the output words (x0, x1) of THREEFRY node f"""
  (c0, c1), (k0, k1) = _halves(f.src[0]), _halves(f.src[1])
  return threefry2x32(c0, c1, k0, k1)

pm_threefry = PatternMatcher([
  (UPat(Ops.CAST, dtypes.uint32, src=(UPat(Ops.THREEFRY, name="f"),)), lambda f: _words(f)[0]),
  (UPat(Ops.CAST, dtypes.uint32, src=(UPat(Ops.SHR, src=(UPat(Ops.THREEFRY, name="f"), UPat.const(None, 32))),)), lambda f: _words(f)[1]),
  (UPat(Ops.THREEFRY, name="f"), lambda f: (w := _words(f))[1].cast(dtypes.uint64) << 32 | w[0].cast(dtypes.uint64)),
])

def lower_threefry(sink:UOp) -> UOp:
  """sink with every THREEFRY in its rounds; the word rules look at a cast before the op under it (bottom_up: parents first)"""
  if not any(u.op is Ops.THREEFRY for u in sink.toposort()): return sink
  return graph_rewrite(sink, pm_threefry, bottom_up=True, name="threefry")
