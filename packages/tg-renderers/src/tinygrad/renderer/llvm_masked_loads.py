"""Runs of gated loads for the LLVM renderer: the lanes of an upcast read of one buffer under one gate (a cat's source, a pad's interior),
consecutive elements. The renderer gives a gated load of a buffer known to hold elements straight-line code, its address selected
between its own and the buffer's start; a lane of a run instead addresses off the first lane's selected pointer, so a false gate reads
the buffer's first elements and every lane's address is the first's plus a constant. LLVM's SLP vectorizer merges such loads into one
vector load; an address selected per lane, each falling back to the same element, it could not (a cat ran scalar, 4x torch's time)."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.helpers import prod

SCOPES = (Ops.RANGE, Ops.END, Ops.IF, Ops.ENDIF)  # a value made inside a block does not reach the code after it

def buffer_elements(buf:UOp) -> int:
  """how many elements a PARAM or BUFFER is known to hold (0 when not known)"""
  if buf.op not in (Ops.PARAM, Ops.BUFFER) or not isinstance(buf.arg.shape, tuple) or not buf.arg.shape: return 0
  n = prod(buf.arg.shape)
  return n if isinstance(n, int) else 0

def _offset_of(i:UOp) -> tuple[UOp, int]:
  """an index as (what it adds a constant to, the constant)"""
  return (i.src[0], i.src[1].arg) if i.op is Ops.ADD and i.src[1].op is Ops.CONST else (i, 0)

def gated_runs(uops:list[UOp]) -> dict[UOp, tuple[UOp, int]]:
  """{gated LOAD: (the first gated LOAD of its run, how many elements past that one's address it reads)}: loads of one buffer under the
  same gate whose indices differ by a constant from the first such load of the same block, at 1 up to the buffer's size past it (the
  first's fallback, the buffer's start, plus that offset stays inside the buffer)"""
  first: dict[tuple[UOp, UOp, UOp], tuple[UOp, int]] = {}  # (buffer, gate, index less its constant) -> (first load, its constant)
  out: dict[UOp, tuple[UOp, int]] = {}
  for u in uops:
    if u.op in SCOPES: first.clear()
    if u.op is not Ops.LOAD or len(u.src) != 3 or not (n := buffer_elements(buf := u.src[0].src[0])): continue
    base, c = _offset_of(u.src[0].src[1])
    if (head := first.get(key := (buf, u.src[2], base))) is None: first[key] = (u, c)
    elif 0 < c - head[1] < n: out[u] = (head[0], c - head[1])
  return out
