"""Split a range that index math divides: where an address reads `r // c` or `r % c` (a panel-major buffer's `(j//16)*16K + k*16 + j%16`,
a reshape that merged axes), r of size n with c | n becomes r_outer*c + r_inner, both loops of r's kind, and the division folds away.
The address is then affine in the ranges, which is what the optimizer reads strides from (heuristic._Access): the inner part is the
stride-1 axis a register tile vectorizes. A split is kept only where it makes some address affine that was not. A size c does not
divide is padded to a multiple of c (a panel-major copy's padding, schedule/pack.py)."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, graph_rewrite
from tinygrad.uop.symbolic import symbolic, _linear
from tinygrad.codegen.opt.kernel import pm_split, ranges, size, simplified, _renumber
from tinygrad.codegen.opt.padding import pad_axis
from tinygrad.codegen.prefix_scan import scans

def _affine(idx:UOp) -> bool:
  return (lin := _linear(idx)) is not None and all(b.op in (Ops.RANGE, Ops.DEFINE_VAR) for b in lin[0])

def _addresses(ast:UOp) -> list[UOp]:
  """the address of each memory access, simplified: as views build it, a packed conv weight reads `((r*1)//1 + ...)//16`"""
  return [simplified(u.src[1]) for u in ast.toposort() if u.op is Ops.INDEX and len(u.src) == 2]

def affine_addresses(ast:UOp) -> int:
  """memory accesses whose address is an affine function of the ranges (and variables)"""
  return sum(1 for a in _addresses(ast) if _affine(a))

def stored_unit(ast:UOp) -> set[UOp]:
  """the ranges some store's address walks with stride 1"""
  return {b for u in ast.toposort() if u.op is Ops.STORE and u.src[0].op is Ops.INDEX and len(u.src[0].src) == 2
          and (lin := _linear(simplified(u.src[0].src[1]))) is not None for b, m in lin[0].items() if b.op is Ops.RANGE and m == 1}

def _divided(ast:UOp) -> list[tuple[UOp, int]]:
  """(range, c) for each `range // c` and `range % c` of a constant-size range longer than c"""
  seen: dict[tuple[UOp, int], None] = {}
  serial = {q for pair in scans(ast) for q in pair}  # a prefix reduce's ranges stay whole (codegen/prefix_scan.py)
  for u in UOp.sink(*_addresses(ast)).toposort():
    if u.op not in (Ops.FLOORDIV, Ops.FLOORMOD) or u.src[0].op is not Ops.RANGE or u.src[1].op is not Ops.CONST: continue
    if u.src[0] in serial: continue
    r, c = u.src[0], u.src[1].arg
    if (n := size(r)) is not None and 1 < c < n: seen[(r, c)] = None
  return list(seen)

def split_range(ast:UOp, r:UOp, c:int) -> UOp:
  """r -> r_outer*c + r_inner, r_inner the innermost loop of r's kind, index math simplified. A size c does not divide is padded up
  first (padding.py: the indices past the end store nothing and add the reduce's identity)"""
  if (n := size(r)) % c:
    ast = pad_axis(ast, r, -(-n // c) * c)
    r = next(u for u in ranges(ast) if u.arg == r.arg)
  inner = UOp.range(c, max(u.arg[0] for u in ranges(ast)) + 1, r.arg[1], r.dtype)
  outer = r.replace(src=(r.src[0].const_like(size(r) // c),))
  split = graph_rewrite(ast, pm_split, ctx={r: (outer * c + inner, [outer, inner])}, bottom_up=True, name="split divided range")
  return graph_rewrite(_renumber(split), symbolic, name="split divided range", memo="_simplified")

MAX_JOINT_SPLITS = 4  # ranges split together where no one split alone makes an address affine

def split_divided_ranges(ast:UOp) -> UOp:
  while True:
    before, divided = affine_addresses(ast), _divided(ast)
    for r, c in divided:
      if affine_addresses(new := split_range(ast, r, c)) > before: ast = new; break
    else: return _split_jointly(ast, divided, before) if divided else ast

def _split_jointly(ast:UOp, divided:list[tuple[UOp, int]], before:int) -> UOp:
  """an address that divides several ranges (a 2x2 pool's gradient written channels-last reads the pooled one at (h//2)*13 + w//2) is
  affine only once every one of them is split. Not a range a store walks with stride 1: whole, the tile's vector runs along it and its
  lanes' divisions are constants (the NCHW pool gradient of examples/train_digits.py, (128, 16, 8, 8): 18 us, split 28-40)"""
  new, splits = ast, 0
  while splits < MAX_JOINT_SPLITS:
    stored = stored_unit(new)
    if not (todo := [(r, c) for r, c in (divided if splits == 0 else _divided(new)) if r not in stored]): break
    new, splits = split_range(new, *todo[0]), splits + 1
  return new if splits > 1 and affine_addresses(new) > before else ast
