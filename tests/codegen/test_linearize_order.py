"""codegen/linearize.py places what only the code after a loop reads after that loop: a matmul's epilogue loads (a residual, attention's
mask) held across the reduce loop spilled its accumulators. Checked on the linearized program of a matmul with such an epilogue, and the
kernel's result against numpy."""
import numpy as np
from tinygrad import Tensor, Device
from tinygrad.uop import Ops
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen import get_program

def test_epilogue_loads_follow_the_reduce_loop():
  rng = np.random.default_rng(0)
  a, b, c = (rng.standard_normal(s, dtype=np.float32) for s in ((37, 24), (24, 40), (37, 40)))
  ta, tb, tc = Tensor(a).realize(), Tensor(b).realize(), Tensor(c).realize()
  out = (ta @ tb) + tc
  ks = [it for it in create_schedule([out.uop])[0] if it.kind == "kernel"]
  mm = next(it for it in ks if any(u.op is Ops.REDUCE for u in it.ast.toposort()))
  lin = list(get_program(mm.ast, Device["CPU"].renderer).uops)
  # the residual is the buffer the reduce loop does not read: every load of it comes after the END of the loop that reduces (of its own
  # copy of the loop nest, where opt/peel.py split the 40 columns padded to 48 into copies)
  def reduce_loop(u): return u.op is Ops.RANGE and u.src[0].op is Ops.CONST and u.src[0].arg == 24
  opens = [i for i, u in enumerate(lin) if reduce_loop(u)]
  ends = [i for i, u in enumerate(lin) if u.op is Ops.END and any(reduce_loop(r) for r in u.src)]
  resid = next(i for i, bf in enumerate(mm.bufs) if bf is tc.uop.base or bf is tc.uop)
  loads = [i for i, u in enumerate(lin) if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and u.src[0].src[0].op is Ops.PARAM and
           u.src[0].src[0].arg.slot == resid]
  assert loads and opens and all(max((e for e in ends if e < i), default=-1) > max(o for o in opens if o < i) for i in loads)
  np.testing.assert_allclose(out.numpy(), a @ b + c, rtol=1e-5, atol=1e-5)
