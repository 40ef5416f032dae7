"""Invariant checks.
check_uop: what must hold of one node in every stage (dtypes agree, memory through buffers, loops closed right); with SPEC>=2 it runs on
every new node. spec_tensor / spec_kernel / spec_program: which node forms a stage allows, as rule tables that return True (a node no rule
allows is rejected). check_graph: both over a whole graph, after every graph_rewrite with SPEC>=1; a node that passed is remembered, so
re-checking a rewritten graph only looks at its new nodes."""
from __future__ import annotations
from typing import Callable
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, UPat, PatternMatcher, VarArg, ParamArg
from tinygrad.dtype import dtypes

class SpecError(RuntimeError): pass

# *** node-local invariants ***

_TO_BUFFER = {Ops.AFTER, Ops.INDEX, Ops.CAST, Ops.BITCAST, Ops.MULTI} | GroupOp.Movement  # a MULTI of buffers: through its pieces
def _is_buffer(x:UOp) -> bool:
  """x reaches memory: a PARAM or BUFFER, possibly under views, AFTERs, INDEXes and pointer casts"""
  while x.op in _TO_BUFFER and x.src: x = x.src[0]
  return x.op in {Ops.PARAM, Ops.BUFFER}

def _same(u:UOp, srcs) -> bool: return all(s.dtype is u.dtype for s in srcs)
def _is_int(u:UOp) -> bool: return dtypes.is_int(u.dtype)

def _const_ok(u:UOp) -> bool:
  if len(u.src) > 1 or (u.src and u.src[0].op is not Ops.DEVICE): return False
  if u.dtype is dtypes.bool: return type(u.arg) is bool
  return type(u.arg) is int if dtypes.is_int(u.dtype) else dtypes.is_float(u.dtype) and type(u.arg) is float

def _range_ok(u:UOp) -> bool:
  if not (isinstance(u.arg, tuple) and u.arg and type(u.arg[0]) is int): return False
  return not u.src if u.dtype is dtypes.void else _is_int(u) and len(u.src) == 1 and _is_int(u.src[0])

def _end_ok(u:UOp) -> bool:
  # END(body, *ranges) in a graph; a linear program's END has no body: END(range)
  rngs = u.src[1:] if u.src and u.src[0].op is not Ops.RANGE else u.src
  if u.dtype is not dtypes.void or not rngs: return False
  if any(s.op is Ops.RANGE and s.dtype is dtypes.void for s in rngs):
    # a loop has no induction variable to count: it closes alone, with the bool that decides whether to go round again (do-while)
    return len(rngs) == 2 and rngs[0].op is Ops.RANGE and rngs[0].dtype is dtypes.void and rngs[1].dtype is dtypes.bool
  return all(s.op is Ops.RANGE for s in rngs)

def _multi_ok(u:UOp) -> bool:
  devs = [s.device for s in u.src]
  return len(u.src) > 1 and _same(u, u.src) and all(isinstance(d, str) for d in devs) and len(set(devs)) == len(devs) and \
    (u.op is Ops.ALLREDUCE or u.arg is None or type(u.arg) is int)

def _sizes_ok(srcs) -> bool: return all(_is_int(s) and s._shape == () for s in srcs)
def _mem_ok(u:UOp) -> bool: return bool(u.src) and (u.src[0].op is Ops.INDEX or _is_buffer(u.src[0]))

# a queue command: its name -> how many int sources it takes (addresses and values, constants or symbolic)
QUEUE_COMMANDS = {"wait": 2, "store": 2, "barrier": 0, "timestamp": 1, "exec": 8, "copy": 3}
def _ins_ok(u:UOp) -> bool:
  if u.dtype is not dtypes.void and u.dtype is not dtypes.uint32: return False
  if isinstance(u.arg, str): return u.dtype is dtypes.void and QUEUE_COMMANDS.get(u.arg) == len(u.src) and _sizes_ok(u.src)
  # a vendor packet: its words, each a uint32 (a constant, or an expression of the submission's variables patched at submit)
  return isinstance(u.arg, tuple) and len(u.arg) == 2 and all(isinstance(a, str) for a in u.arg) and u.dtype is dtypes.uint32 and \
    all(s.dtype is dtypes.uint32 and s._shape == () for s in u.src)

# (ops, holds, what must hold): one invariant per line
_NODE: list[tuple[set, Callable[[UOp], bool], str]] = [
  (GroupOp.Unary, lambda u: len(u.src) == 1 and _same(u, u.src), "a unary op takes one source of its own dtype"),
  (GroupOp.Binary - GroupOp.Comparison - {Ops.SHL, Ops.SHR}, lambda u: len(u.src) == 2 and _same(u, u.src),
   "a binary op takes two sources of its own dtype (cast one first)"),
  (GroupOp.Comparison, lambda u: u.dtype is dtypes.bool and len(u.src) == 2 and u.src[0].dtype is u.src[1].dtype,
   "a comparison is bool, over two sources of one dtype"),
  ({Ops.SHL, Ops.SHR}, lambda u: len(u.src) == 2 and u.src[0].dtype is u.dtype and _is_int(u.src[1]),
   "a shift keeps its first source's dtype and shifts by an int"),
  ({Ops.CDIV, Ops.CMOD, Ops.SHL, Ops.SHR, Ops.AND, Ops.OR, Ops.XOR}, lambda u: _is_int(u) or u.dtype is dtypes.bool,
   "C division, remainder and bitwise ops are for ints and bools (floats: divide with RECIPROCAL, floor with TRUNC)"),
  ({Ops.WHERE}, lambda u: len(u.src) == 3 and u.src[0].dtype is dtypes.bool and _same(u, u.src[1:]),
   "WHERE is (bool condition, a, b), a and b of its dtype"),
  ({Ops.MULACC}, lambda u: len(u.src) == 3 and _same(u, u.src), "MULACC takes three sources of its own dtype"),
  ({Ops.CAST, Ops.BITCAST}, lambda u: len(u.src) == 1 and u.dtype is not dtypes.void, "a cast has one source and a value dtype"),
  ({Ops.CONST}, _const_ok, "a CONST holds a python value of its dtype's kind (bool, int, float), with at most a DEVICE source"),
  ({Ops.DEFINE_VAR}, lambda u: not u.src and isinstance(u.arg, VarArg) and _is_int(u) and u.arg.vmin <= u.arg.vmax,
   "a Variable is an int with VarArg(name, vmin <= vmax) and no sources"),
  ({Ops.BIND}, lambda u: len(u.src) == 2 and u.src[0].op is Ops.DEFINE_VAR and u.src[1].op is Ops.CONST and _same(u, u.src),
   "BIND is (Variable, CONST of its dtype)"),
  ({Ops.PARAM, Ops.BUFFER}, lambda u: isinstance(u.arg, ParamArg), "PARAM and BUFFER carry a ParamArg"),
  ({Ops.RANGE}, _range_ok,
   "a RANGE counts to one int bound in an int dtype (a bound-less loop: void, no sources); its arg starts with the int axis id"),
  ({Ops.SPECIAL}, lambda u: _is_int(u) and len(u.src) == 1 and _is_int(u.src[0]) and isinstance(u.arg, str),
   "SPECIAL is an int counting to one int bound, with a name"),
  ({Ops.END}, _end_ok, "END is (body, *ranges), or (*ranges) in a linear program; a loop (void RANGE) only as END(body, loop, bool condition)"),
  ({Ops.INDEX}, lambda u: len(u.src) >= 2 and _is_buffer(u.src[0]) and all(_is_int(s) or s.dtype is dtypes.bool for s in u.src[1:]),
   "INDEX is (buffer, *int indices)"),
  ({Ops.LOAD}, lambda u: _mem_ok(u) and u.dtype.base is u.src[0].dtype.base, "LOAD reads an INDEX (or a buffer) of its own dtype"),
  ({Ops.STORE}, lambda u: u.dtype is dtypes.void and len(u.src) >= 2 and _mem_ok(u) and u.src[1].dtype.base is u.src[0].dtype.base,
   "STORE is void, (INDEX or buffer, value of the buffer's dtype, ...)"),
  ({Ops.REDUCE}, lambda u: bool(u.src) and u.arg in GroupOp.Reduce and u.dtype is u.src[0].dtype and all(s.op is Ops.RANGE for s in u.src[1:]),
   "REDUCE is (value, *ranges) with a reduce op (ADD, MUL, MAX) as arg"),
  ({Ops.REDUCE_AXIS}, lambda u: len(u.src) == 1 and _same(u, u.src) and isinstance(u.arg, tuple) and len(u.arg) == 2 and u.arg[0] in GroupOp.Reduce,
   "REDUCE_AXIS is one source with (reduce op, axes) as arg"),
  ({Ops.RESHAPE, Ops.EXPAND}, lambda u: u.arg is None and bool(u.src) and _same(u, u.src[:1]) and _sizes_ok(u.src[1:]),
   "RESHAPE/EXPAND is (source of its dtype, *new sizes as int scalars)"),
  ({Ops.PAD, Ops.SHRINK}, lambda u: u.arg is None and len(u.src) % 2 == 1 and _same(u, u.src[:1]) and _sizes_ok(u.src[1:]),
   "PAD/SHRINK is (source of its dtype, *(begin, end) pairs as int scalars)"),
  ({Ops.PERMUTE, Ops.FLIP}, lambda u: len(u.src) == 1 and _same(u, u.src) and isinstance(u.arg, tuple), "PERMUTE/FLIP: one source of its dtype, tuple arg"),
  ({Ops.AFTER}, lambda u: bool(u.src) and _same(u, u.src[:1]), "AFTER has its first source's dtype"),
  ({Ops.SINK, Ops.GROUP, Ops.BARRIER}, lambda u: u.dtype is dtypes.void, "SINK, GROUP and BARRIER are void"),
  ({Ops.COPY}, lambda u: len(u.src) == 2 and u.src[1].op is Ops.DEVICE and _same(u, u.src[:1]), "COPY is (value, DEVICE)"),
  ({Ops.DEVICE}, lambda u: not u.src, "DEVICE has no sources"),
  ({Ops.MULTI, Ops.ALLREDUCE}, _multi_ok, "MULTI/ALLREDUCE join pieces of one dtype on distinct single devices (MULTI's arg: an axis or None)"),
  ({Ops.MSELECT}, lambda u: len(u.src) == 1 and isinstance(u.src[0].device, tuple) and isinstance(u.arg, tuple) and len(u.arg) == 3,
   "MSELECT is (multi-device value) with (device index, axis, bounds) as arg"),
  ({Ops.IF}, lambda u: bool(u.src) and u.src[0].dtype is dtypes.bool, "IF starts with a bool condition"),
  ({Ops.INS}, lambda u: _ins_ok(u), "INS is a queue command (wait(signal, value), store(signal, value), barrier(), timestamp(dest), "
   "exec(program, kernargs, 3 global, 3 local), copy(dest, src, size): int scalar sources) or a packet ((vendor, name) arg, uint32 words)"),
]
_NODE_BY_OP: dict[Ops, list[tuple[Callable[[UOp], bool], str]]] = {}
for _ops, _fn, _why in _NODE:
  for _o in _ops: _NODE_BY_OP.setdefault(_o, []).append((_fn, _why))

def _fail(u:UOp, why:str, stage:str|None) -> SpecError:
  try: text = u.render(simplify=False)
  except Exception: text = f"arg={u.arg!r}"  # the node may be malformed in any way, the message must still come out
  return SpecError(f"[{stage or 'construction'}] {why}; got {u.op} {u.dtype!r} with sources {[s.op for s in u.src]}: {text[:300]}")

def check_uop(u:UOp, stage:str|None=None) -> None:
  """raise SpecError if u breaks an invariant that holds in every stage"""
  for fn, why in _NODE_BY_OP.get(u.op, ()):
    if not fn(u): raise _fail(u, why, stage)

# *** per stage: the node forms each allows ***

_EVERYWHERE = GroupOp.ALU | {Ops.CAST, Ops.BITCAST, Ops.CONST, Ops.DEVICE, Ops.DEFINE_VAR, Ops.SINK, Ops.GROUP, Ops.NOOP, Ops.AFTER,
                             Ops.CUSTOM, Ops.CUSTOMI, Ops.STACK, Ops.PARAM, Ops.BUFFER}
_KERNEL = {Ops.RANGE, Ops.SPECIAL, Ops.END, Ops.BARRIER, Ops.IF, Ops.ENDIF, Ops.WMMA}
_ok = lambda: True

spec_tensor = PatternMatcher([
  (UPat(_EVERYWHERE | GroupOp.Movement | {Ops.COPY, Ops.CONTIGUOUS, Ops.CONTIGUOUS_BACKWARD, Ops.DETACH, Ops.REDUCE_AXIS, Ops.UNIQUE, Ops.BIND, Ops.CALL,
                                         Ops.FUNCTION, Ops.CUSTOM_FUNCTION, Ops.INDEX, Ops.STORE, Ops.MULTI, Ops.MSELECT, Ops.ALLREDUCE,
                                         Ops.CUSTOM_GRADIENT}), _ok),
])
# a kernel: memory only through INDEX straight on a define (views are gone), loops are RANGEs
_kernel_forms = [
  (UPat(Ops.INDEX, src=(UPat((Ops.PARAM, Ops.BUFFER, Ops.AFTER)),), allow_any_len=True), _ok),
  (UPat((Ops.LOAD, Ops.STORE), src=(UPat(Ops.INDEX),), allow_any_len=True), _ok),
]
spec_kernel = PatternMatcher([(UPat(_EVERYWHERE | _KERNEL | {Ops.REDUCE}), _ok)] + _kernel_forms)
# a linear program: reductions are lowered to loops and accumulators
spec_program = PatternMatcher([(UPat(_EVERYWHERE | _KERNEL | {Ops.LINEAR, Ops.PROGRAM, Ops.SOURCE, Ops.BINARY}), _ok)] + _kernel_forms)

# a queue program: LINEAR(INS...) whose command sources are int scalars (constants, Variables patched at submit, and their math)
spec_queue = PatternMatcher([
  (UPat(GroupOp.ALU | {Ops.CONST, Ops.DEFINE_VAR, Ops.CAST, Ops.INS}), _ok),
  (UPat(Ops.LINEAR, src=UPat(Ops.INS)), _ok),
])

# stage name (graph_rewrite's name=) -> its spec; a pass may add its own names here
SPECS: dict[str, PatternMatcher] = {"tensor": spec_tensor, "kernel": spec_kernel, "program": spec_program, "queue": spec_queue}

# a graph of one stage can hold a graph of another: a tensor graph's CALL runs a custom kernel, its first source
NESTED: dict[str, dict[Ops, str]] = {"tensor": {Ops.CALL: "kernel"}}

def check_graph(sink:UOp, stage:str|None=None) -> None:
  """raise SpecError naming the first node of sink's graph that breaks check_uop or, for a stage in SPECS, is no form the stage allows"""
  pending = [(sink, stage)]
  while pending:
    root, stage = pending.pop()
    spec = SPECS.get(stage) if stage is not None else None
    key, nested = (stage if spec is not None else None), NESTED.get(stage, {})
    todo = [u for u in root.toposort(lambda u: u.op not in nested and key not in u.__dict__.get("_spec", ()))
            if key not in u.__dict__.get("_spec", ())]
    for u in todo:
      check_uop(u, stage)
      if spec is not None and spec.rewrite(u) is not True: raise _fail(u, f"{u.op} in this form is not part of the {stage} stage", stage)
      if u.op in nested: pending += [(u.src[0], nested[u.op])] + [(s, stage) for s in u.src[1:]]
    for u in todo: u.__dict__.setdefault("_spec", set()).add(key)
