"""UOp construction rate and graph_rewrite throughput on a fixed corpus. Only API that upstream tinygrad 0.14 has too, so the same file runs
against either: python bench/uop.py (tg, with PYTHONPATH=packages/tg-uop/src or the dev venv) or /path/to/upstream/python bench/uop.py.
(a) symbolic: index expressions of reshapes, flattens and bound checks, each built on its own Variables, then .simplify()
(b) elementwise: a 10k-node chain of MUL/ADD rewritten by a two-rule matcher (x*2 -> x+x, x+0 -> x), default and bottom_up
Best of 3 rounds, nodes counted with toposort (so hash-consed sharing counts once)."""
import time, gc, sys
from tinygrad.uop.ops import UOp, Ops, UPat, PatternMatcher, graph_rewrite
from tinygrad.dtype import dtypes

def best(fn, rounds=3):
  times = []
  for _ in range(rounds):
    gc.collect()
    st = time.perf_counter()
    ret = fn()
    times.append(time.perf_counter() - st)
  return min(times), ret

# *** construction: fresh nodes straight through the constructor (hash-consing included) ***

def construct(n=200_000):
  def run():
    e = UOp(Ops.CONST, dtypes.weakint, arg=-1)
    for i in range(n): e = UOp(Ops.ADD, dtypes.weakint, (e, UOp(Ops.CONST, dtypes.weakint, arg=i)))
    return e
  t, e = best(run)
  return len(e.toposort()) / t

# *** (a) symbolic index expressions ***

def index_corpus(k:int) -> list:
  r0, r1, r2, r3 = [UOp.variable(f"r{j}_{k}", 0, n-1) for j, n in enumerate((5, 3, 4, 6))]
  flat = r0*12 + r1*4 + r2
  return [(flat // 4) % 3, flat // 12, flat % 4, (flat // 4) * 4 + flat % 4, ((r1*4 + r2) // 6) * 6 + (r1*4 + r2) % 6,
          ((r0*4 + r2) % 8) // 4, ((r0 + 1)*4 + r2 - 4) // 4, ((r0*3 + r1) // 3) % 5, (r0*4 + r2) < 12, ((r3*8 + r2) // 4) % 2,
          (((r0*6 + r1*2 + r3 % 2) // 2) % 3)*2 + r3 % 2, (r0*12 + r1*4 + r2 + 1) // 4, ((r0*24 + r3*4 + r2) % 24) // 4, (r3 + 1)*(r2 + 2) - r2*r3]

def symbolic(k=300):
  def run():
    exprs = [e for i in range(k) for e in index_corpus(i)]  # rebuilt each round: fresh nodes, nothing cached from the last round
    st = time.perf_counter()
    out = [e.simplify() for e in exprs]
    return time.perf_counter() - st, len(exprs), sum(len(e.toposort()) for e in exprs), sum(len(o.toposort()) for o in out)
  t, n_expr, n_in, n_out = min(run() for _ in range(3))
  return n_in / t, n_expr, n_in, n_out

# *** (b) a 10k-node elementwise graph and a small matcher ***

pm = PatternMatcher([
  (UPat(Ops.MUL, src=(UPat.var("x"), UPat(Ops.CONST, arg=2))), lambda x: UOp(Ops.ADD, x.dtype, (x, x))),
  (UPat(Ops.ADD, src=(UPat.var("x"), UPat(Ops.CONST, arg=0))), lambda x: x),
])

def elementwise(n=2500):
  vs = [UOp.variable(f"e{i}", 0, 100) for i in range(4)]
  two, zero = UOp(Ops.CONST, dtypes.weakint, arg=2), UOp(Ops.CONST, dtypes.weakint, arg=0)
  e = vs[0]
  for i in range(n):  # 4 nodes a step: x*2, +v, +0, max
    e = UOp(Ops.MAX, dtypes.weakint, (UOp(Ops.ADD, dtypes.weakint, (UOp(Ops.ADD, dtypes.weakint, (UOp(Ops.MUL, dtypes.weakint, (e, two)), vs[i % 4])),
                                                                  zero)), vs[(i+1) % 4]))
  nodes = len(e.toposort())
  ret = {}
  for bottom_up in (False, True):
    t, out = best(lambda: graph_rewrite(e, pm, bottom_up=bottom_up))
    assert not any(u.op is Ops.MUL for u in out.toposort())
    ret[bottom_up] = nodes / t
  return nodes, ret

if __name__ == "__main__":
  import tinygrad
  print(f"python {sys.version.split()[0]}, tinygrad from {tinygrad.__path__[0] if hasattr(tinygrad, '__path__') else '?'}")
  print(f"construction:            {construct():>12,.0f} nodes/s  (UOp(...) of 200k fresh nodes)")
  rate, n_expr, n_in, n_out = symbolic()
  print(f"(a) symbolic simplify:   {rate:>12,.0f} nodes/s  = {rate * n_expr / n_in:,.0f} expressions/s  "
        f"({n_expr:,} index expressions, {n_in:,} nodes -> {n_out:,} nodes)")
  nodes, rates = elementwise()
  print(f"(b) elementwise rewrite: {rates[False]:>12,.0f} nodes/s  default, {rates[True]:,.0f} nodes/s bottom_up  ({nodes:,}-node graph)")
