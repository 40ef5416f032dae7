"""Reading the lowered linear program the renderers get: which nodes carry no code, and what an END closes."""
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes

# structure left over from scheduling: nothing to run
SKIP = {Ops.SINK, Ops.GROUP, Ops.NOOP}

def loop_of(end:UOp) -> tuple[UOp, UOp|None]:
  """(the RANGE an END closes, the do-while condition or None). END is (RANGE,) or (loop RANGE, cond), optionally after its body"""
  rngs = [s for s in end.src if s.op is Ops.RANGE]
  if len(rngs) != 1: raise RuntimeError(f"END must close exactly one RANGE in a linear program, got sources {[s.op for s in end.src]}")
  cond = end.src[-1] if end.src[-1].op is not Ops.RANGE and end.src[-1].dtype is dtypes.bool else None
  if (cond is None) != (rngs[0].dtype is not dtypes.void):
    raise RuntimeError("a bound-less loop (void RANGE) ends with END(loop, cond), a bounded one with END(range) and no condition")
  return rngs[0], cond

def param_order(uops:list[UOp]) -> tuple[list[UOp], list[UOp]]:
  """kernel arguments: the PARAMs by slot, then the DEFINE_VARs by name"""
  return sorted((u for u in uops if u.op is Ops.PARAM), key=lambda u: u.arg.slot), \
         sorted((u for u in uops if u.op is Ops.DEFINE_VAR), key=lambda u: u.arg.name)
