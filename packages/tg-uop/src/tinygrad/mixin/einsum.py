"""einsum shared by UOp and Tensor: every operand is laid out over all the formula's letters (size 1 where it lacks one), the
operands multiply with implicit broadcasting and one sum removes the letters the output lacks, so it fuses like a matmul."""
from __future__ import annotations
import functools, string
from tinygrad.dtype import least_upper_dtype
from tinygrad.helpers import sint_eq
from tinygrad.mixin.movement import _show

def _parse(formula:str, shapes:list[tuple]) -> tuple[list[str], str]:
  """the formula's input subscripts and output, '...' replaced by letters the formula lacks (numpy's implicit output when there is no '->')"""
  f = formula.replace(" ", "")
  lhs, arrow, out = f.partition("->")
  ins = lhs.split(",")
  if len(ins) != len(shapes): raise ValueError(f"einsum {formula!r} names {len(ins)} operands, but {len(shapes)} were given")
  n_ell = max((len(s) - len(i.replace("...", "")) for i, s in zip(ins, shapes) if "..." in i), default=0)
  # letters the formula doesn't use: an ellipsis dim named like a user's letter would be merged with it
  ell = "".join(c for c in string.ascii_uppercase + string.ascii_lowercase if c not in f)[:n_ell]
  if len(ell) < n_ell: raise ValueError(f"einsum {formula!r}: the ellipsis spans {n_ell} dims, more than the unused letters left")
  ins = [i.replace("...", ell[n_ell - (len(s) - len(i.replace("...", ""))):]) for i, s in zip(ins, shapes)]
  if not arrow: out = ell + "".join(sorted(c for c in set("".join(ins)) if "".join(ins).count(c) == 1 and c not in ell))
  else: out = out.replace("...", ell)
  for i, s in zip(ins, shapes):
    if not all(c.isalpha() for c in i) or len(i) != len(s):
      raise ValueError(f"einsum subscripts {i!r} don't fit an operand of shape {tuple(s)} in {formula!r}")
  if (bad := set(out) - set("".join(ins))) or len(set(out)) != len(out):
    raise ValueError(f"einsum output {out!r} of {formula!r} names a letter twice or one no input has ({sorted(bad)})")
  return ins, out

class EinsumMixin:
  @staticmethod
  def einsum(formula:str, *operands, dtype=None):
    """Einstein summation like numpy: 'ij,jk->ik' is a matmul, 'ii->i' a diagonal, '...ij->...ji' a batched transpose"""
    ops = list(operands[0]) if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else list(operands)
    ins, out = _parse(formula, [tuple(o.shape) for o in ops])
    letters = sorted(set("".join(ins)), key=lambda c: (c not in out, out.index(c) if c in out else c))
    sizes: dict[str, int] = {}
    laid = []
    for sub, x in zip(ins, ops):
      # a letter repeated in one operand takes the diagonal: keep where its indices agree, then sum one copy away
      while (c := next((c for c in sub if sub.count(c) > 1), None)) is not None:
        i, j = sub.index(c), sub.index(c, sub.index(c) + 1)
        n = x.shape[i]
        same = x._arange(n).reshape(tuple(n if d == i else 1 for d in range(len(sub)))).eq(x._arange(n).reshape(tuple(n if d == j else 1 for d in range(len(sub)))))
        x, sub = same.where(x, 0).sum(j, dtype=x.dtype), sub[:j] + sub[j+1:]
      for c, s in zip(sub, x.shape):
        # equal sizes (a symbolic one: the same expression), or 1 broadcasts to the other
        if sint_eq(have := sizes.setdefault(c, s), s) or sint_eq(s, 1): continue
        if not sint_eq(have, 1): raise ValueError(f"einsum letter {c!r} has sizes {_show(have)} and {_show(s)} in {formula!r}")
        sizes[c] = s
      x = x.permute(tuple(sub.index(c) for c in letters if c in sub))
      laid.append(x.reshape(tuple(x.shape[[c for c in letters if c in sub].index(c)] if c in sub else 1 for c in letters)))
    dt = dtype or least_upper_dtype(*[x.dtype for x in laid])
    prod = functools.reduce(lambda a, b: a * b, [x.cast(dt) for x in laid])
    return prod.sum(tuple(range(len(out), len(letters))), dtype=dtype).cast(dt).reshape(tuple(sizes[c] for c in out))
