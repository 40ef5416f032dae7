"""Queue programs (hcq2): what a device's command queue runs, spelled in UOps.

A queue program is LINEAR(INS, ...) with the queue's name as arg. Abstract commands are INS nodes whose arg is the command:
  wait(signal, value)      the queue stalls until the 64-bit value at address `signal` is >= value
  store(signal, value)     writes value to the signal once everything before it has finished
  barrier()                later commands see the memory writes of earlier ones (cache invalidate + flush)
  timestamp(dest)          writes the device clock to address dest
  exec(program, kernargs, gx, gy, gz, lx, ly, lz)   launches the kernel at address `program` over gx*gy*gz groups of lx*ly*lz
  copy(dest, src, size)    copies size bytes
Every source is an int scalar UOp: a constant, or an expression of Variables whose values are patched into the recorded command
buffer at each submit (timeline values, input addresses). A vendor matcher selects each command into packets: INS nodes with arg
(vendor, packet name) and dtype uint32 whose sources are the packet's words."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, sym_infer
from tinygrad.dtype import dtypes

def as_word(x, dtype=dtypes.uint64) -> UOp:
  """an int (or int UOp) as a command operand of `dtype`"""
  if isinstance(x, UOp): return x if x.dtype is dtype else x.cast(dtype)
  if isinstance(x, bool) or not isinstance(x, int): raise TypeError(f"a queue operand is an int or an int UOp, got {type(x).__name__} {x!r}")
  if not 0 <= x < 1 << 8*dtype.itemsize: raise ValueError(f"queue operand {x:#x} does not fit {dtype}")
  return UOp.const(dtype, x)

def _ins(name:str, *srcs) -> UOp: return UOp(Ops.INS, dtypes.void, tuple(as_word(s) for s in srcs), name)
def wait(signal, value) -> UOp: return _ins("wait", signal, value)
def store(signal, value) -> UOp: return _ins("store", signal, value)
def barrier() -> UOp: return _ins("barrier")
def timestamp(dest) -> UOp: return _ins("timestamp", dest)
def exec_kernel(program, kernargs, global_size, local_size) -> UOp:
  if len(global_size) != 3 or len(local_size) != 3: raise ValueError(f"a launch has 3 global and 3 local sizes, got {global_size} {local_size}")
  return _ins("exec", program, kernargs, *global_size, *local_size)
def copy(dest, src, size) -> UOp: return _ins("copy", dest, src, size)
def queue(*cmds:UOp, name:str="COMPUTE") -> UOp:
  if bad := [c.op for c in cmds if c.op is not Ops.INS]: raise TypeError(f"a queue program holds INS commands only, got {bad}")
  return UOp(Ops.LINEAR, dtypes.void, tuple(cmds), name)

def _packet_word(w) -> UOp:
  if not isinstance(w, UOp): return as_word(w, dtypes.uint32)
  # a word without Variables folds now (an address plus an offset is one constant word); the others are patched at submit
  if w.op is Ops.CONST or not w.variables(): return as_word(int(sym_infer(w, {})) & 0xffffffff, dtypes.uint32)
  return (w & 0xffffffff if w.dtype.itemsize > 4 else w).cast(dtypes.uint32)

def packet(vendor:str, name:str, words:list) -> UOp:
  """a vendor packet: its 32-bit words in order (ints, or int UOps masked to their low 32 bits)"""
  return UOp(Ops.INS, dtypes.uint32, tuple(_packet_word(w) for w in words), (vendor, name))

def packet_words(q:UOp) -> list[UOp]:
  """the words of a selected queue program, in order"""
  if (bad := [c.arg for c in q.src if not isinstance(c.arg, tuple)]): raise RuntimeError(f"queue program still holds commands {bad}: select it first")
  return [w for c in q.src for w in c.src]

def _operand(u:UOp) -> str:
  return f"{u.arg:#x}" if u.op is Ops.CONST and u.arg >= 0x1000 else str(u.arg) if u.op is Ops.CONST else u.render(simplify=False)

_NAMES = {"wait": ("signal", "value"), "store": ("signal", "value"), "timestamp": ("dest",), "copy": ("dest", "src", "size"), "barrier": ()}
def render_queue(q:UOp) -> str:
  """one line per command or packet, e.g. `  1 wait       signal=0x1000 value=tl_wait`"""
  if q.op is not Ops.LINEAR: raise TypeError(f"render_queue prints a LINEAR queue program, got {q.op}")
  lines = [f"queue {q.arg}:"]
  for i, c in enumerate(q.src):
    ops = [_operand(s) for s in c.src]
    if isinstance(c.arg, tuple): body = f"{c.arg[0]}.{c.arg[1]:<18s} " + " ".join(ops)
    elif c.arg == "exec": body = f"exec       program={ops[0]} kernargs={ops[1]} global=({', '.join(ops[2:5])}) local=({', '.join(ops[5:8])})"
    else: body = f"{c.arg:<10s} " + " ".join(f"{n}={o}" for n, o in zip(_NAMES[c.arg], ops))
    lines.append(f"{i:3d} {body}".rstrip())
  return "\n".join(lines)
