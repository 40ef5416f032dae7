"""hcq2 selection: a queue program of abstract commands (tinygrad.uop.queue) becomes a queue program of vendor packets by a vendor
PatternMatcher, one rule per command, and the packets' words become a command buffer recorded once (constant words) with patches
(the words that are expressions of the submission's Variables)."""
from __future__ import annotations
import array
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, PatternMatcher, graph_rewrite, sym_infer
from tinygrad.uop.queue import packet_words
from tinygrad.uop.spec import check_graph

def packets(vendor:str, *pkts:tuple[str, list]) -> UOp:
  """a command's packets, grouped until select() splices them into the queue: (name, words) each"""
  from tinygrad.uop.queue import packet
  return UOp(Ops.LINEAR, src=tuple(packet(vendor, name, words) for name, words in pkts), arg="packets")

def select(q:UOp, pm:PatternMatcher, ctx=None) -> UOp:
  """the queue program with every command replaced by its packets; a command no rule selects is an error naming it"""
  out = graph_rewrite(q, pm, ctx=ctx)
  flat = tuple(p for c in out.src for p in (c.src if c.op is Ops.LINEAR else (c,)))
  if left := [c.arg for c in flat if not isinstance(c.arg, tuple)]: raise RuntimeError(f"queue {q.arg}: no packet rule for commands {left}")
  ret = q.replace(src=flat)
  check_graph(ret, "queue")
  return ret

class CommandBuffer:
  """the words of a selected queue program: constants written once, each symbolic word a patch evaluated at every submit"""
  def __init__(self, q:UOp):
    words = packet_words(q)
    self.words = array.array("I", [w.arg if w.op is Ops.CONST else 0 for w in words])
    self.patches: list[tuple[int, UOp]] = [(i, w) for i, w in enumerate(words) if w.op is not Ops.CONST]
    self.variables = sorted({v.arg.name for _, w in self.patches for v in w.variables()})
  def __len__(self): return len(self.words)
  def patch(self, var_vals:dict[str, int]) -> array.array:
    """the words with this submission's values (in place: a recorded buffer is patched, not rebuilt)"""
    if missing := [v for v in self.variables if v not in var_vals]: raise RuntimeError(f"command buffer needs values for {missing}")
    for i, w in self.patches: self.words[i] = int(sym_infer(w, var_vals)) & 0xffffffff
    return self.words
