"""hcq2 IR: queue programs of INS commands are checked by the spec and print one command per line."""
import pytest
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.uop.spec import check_graph, SpecError
from tinygrad.uop.queue import queue, wait, store, barrier, timestamp, exec_kernel, copy, render_queue, packet
from tinygrad.dtype import dtypes

TL = UOp.variable("tl", 0, 2**32, dtypes.uint64)

def test_queue_program_prints_readably():
  q = queue(wait(0x7000_1000, TL), barrier(), exec_kernel(0x2000, 0x3000, (4, 1, 1), (32, 1, 1)), store(0x7000_1000, TL + 1),
            timestamp(0x7000_1010), copy(0x8000, 0x9000, 64))
  check_graph(q, "queue")
  assert render_queue(q) == "\n".join([
    "queue COMPUTE:",
    "  0 wait       signal=0x70001000 value=tl",
    "  1 barrier",
    "  2 exec       program=0x2000 kernargs=0x3000 global=(4, 1, 1) local=(32, 1, 1)",
    "  3 store      signal=0x70001000 value=(tl+1)",
    "  4 timestamp  dest=0x70001010",
    "  5 copy       dest=0x8000 src=0x9000 size=64"])

def test_spec_rejects_malformed_commands():
  with pytest.raises(SpecError, match="INS is a queue command"): check_graph(UOp(Ops.INS, dtypes.void, (UOp.const(dtypes.uint64, 1),), "wait"))
  with pytest.raises(SpecError, match="INS is a queue command"): check_graph(UOp(Ops.INS, dtypes.void, (), "jump"))
  # a packet's words are uint32
  with pytest.raises(SpecError, match="INS is a queue command"):
    check_graph(UOp(Ops.INS, dtypes.uint32, (UOp.const(dtypes.uint64, 1),), ("PM4", "NOP")))
  with pytest.raises(TypeError, match="INS commands only"): queue(UOp.const(dtypes.uint64, 1))
  with pytest.raises(ValueError, match="does not fit"): wait(1 << 64, 0)

def test_packet_words_fold_constants_and_keep_variables():
  p = packet("PM4", "X", [0x1000 + 8, UOp.const(dtypes.uint64, 0x1_0000_0010) >> 32, TL])
  assert [w.op for w in p.src] == [Ops.CONST, Ops.CONST, Ops.CAST] and [w.arg for w in p.src[:2]] == [0x1008, 1]
