import pytest
from tinygrad.uop.ops import UOp, Ops, Variable, VarArg, UPat, PatternMatcher, graph_rewrite
from tinygrad.uop.spec import check_uop, check_graph, SpecError, spec_tensor, spec_kernel, spec_program, SPECS
from tinygrad.dtype import dtypes
from tinygrad.helpers import Context

@pytest.fixture(autouse=True)
def _no_construction_checks():
  with Context(SPEC=0): yield  # these tests build invalid nodes on purpose and check them explicitly

def c(v, dt=dtypes.weakint): return UOp.const(dt, v)
f32, i32 = dtypes.float32, dtypes.int32
buf = UOp.param(0, f32, (16,), name="buf")
r = UOp.range(16, 0)
x = Variable("x", 0, 10)
fv = UOp.param(1, f32, name="fv")

def kernel():
  return buf.index(r).store(buf.index(r).load() * 2.0).end(r).sink()

# *** node-local checks: accepted forms ***

ACCEPT = [
  lambda: x + 1, lambda: (x < 3).where(x, 0), lambda: fv.sqrt(), lambda: (fv < 1.0), lambda: UOp(Ops.SHL, i32, (c(1, i32), c(2))),
  lambda: c(1.5, f32).cast(i32), lambda: c(3, i32), lambda: UOp.const(f32, 1.0, "CPU"), lambda: x.bind(3), lambda: r, lambda: UOp.loop(3),
  lambda: UOp.special(8, "gidx0"), lambda: buf.index(r), lambda: buf.index(r).load(), lambda: buf.index(r).store(1.0), lambda: buf.store(c(1.0, f32)),
  lambda: buf.index(r).store(1.0).end(r), lambda: UOp(Ops.END, dtypes.void, (r,)), lambda: buf.reshape(4, 4).index(x % 4, 1),
  lambda: buf.after(buf.store(c(0.0, f32))).index(r), lambda: buf.index(r).load().reduce(r), lambda: buf.sum(), lambda: buf.reshape(2, 8),
  lambda: buf.copy_to_device("CPU"), lambda: kernel(), lambda: UOp(Ops.MULACC, f32, (fv, fv, fv)), lambda: UOp(Ops.IF, dtypes.void, (x < 3,)),
]

@pytest.mark.parametrize("build", ACCEPT)
def test_accepts(build):
  check_uop(build())
  check_graph(build())

# *** node-local checks: rejected forms, and the message names what was wrong ***

REJECT = [
  (lambda: UOp(Ops.ADD, i32, (c(1, i32), c(1))), "two sources of its own dtype"),  # int32 + weakint: cast first
  (lambda: UOp(Ops.MUL, f32, (fv, fv, fv)), "two sources"),
  (lambda: UOp(Ops.CMPLT, i32, (x, x)), "comparison is bool"),
  (lambda: UOp(Ops.CMPNE, dtypes.bool, (x, fv)), "comparison is bool"),
  (lambda: UOp(Ops.SQRT, f32, (x,)), "unary op"),
  (lambda: UOp(Ops.WHERE, i32, (x < 3, c(1, i32), c(1))), "WHERE"),
  (lambda: UOp(Ops.SHL, i32, (c(1, i32), fv)), "shift"),
  (lambda: UOp(Ops.CONST, i32, arg=1.5), "CONST"),
  (lambda: UOp(Ops.CONST, dtypes.bool, arg=1), "CONST"),
  (lambda: UOp(Ops.CONST, i32, (x,), 1), "CONST"),
  (lambda: UOp(Ops.DEFINE_VAR, i32, arg=VarArg("bad", 5, 1)), "Variable"),
  (lambda: UOp(Ops.RANGE, dtypes.weakint, (fv,), (0,)), "RANGE"),
  (lambda: UOp(Ops.RANGE, f32, (c(4),), (0,)), "RANGE"),
  (lambda: UOp(Ops.RANGE, dtypes.weakint, (c(4),), "r"), "RANGE"),
  (lambda: UOp(Ops.RANGE, dtypes.void, (c(4),), (0,)), "RANGE"),
  (lambda: UOp(Ops.INDEX, f32, (fv.sqrt(), r)), "INDEX"),
  (lambda: UOp(Ops.INDEX, f32, (buf, fv)), "INDEX"),
  (lambda: UOp(Ops.INDEX, f32, (buf,)), "INDEX"),
  (lambda: UOp(Ops.STORE, dtypes.void, (fv.sqrt(), c(1.0, f32))), "STORE"),
  (lambda: UOp(Ops.STORE, dtypes.void, (buf.index(r), c(1, i32))), "STORE"),
  (lambda: UOp(Ops.LOAD, i32, (buf.index(r),)), "LOAD"),
  (lambda: UOp(Ops.END, dtypes.void, (buf.index(r).store(1.0), x)), "END"),
  (lambda: UOp(Ops.REDUCE, f32, (fv, x), Ops.ADD), "REDUCE"),
  (lambda: UOp(Ops.REDUCE, f32, (fv, r), Ops.FDIV), "REDUCE"),
  (lambda: UOp(Ops.SINK, f32, (fv,)), "void"),
  (lambda: UOp(Ops.COPY, f32, (fv, fv)), "COPY"),
  (lambda: UOp(Ops.RESHAPE, f32, (buf,), "4x4"), "RESHAPE"),
  (lambda: UOp(Ops.RESHAPE, f32, (buf, fv)), "RESHAPE"),
  (lambda: UOp(Ops.SHRINK, f32, (buf, UOp.const(dtypes.weakint, 0))), "SHRINK"),
]

@pytest.mark.parametrize("build,why", REJECT)
def test_rejects(build, why):
  u = build()
  with pytest.raises(SpecError, match=why) as e: check_uop(u)
  assert str(u.op) in str(e.value) and repr(u.dtype) in str(e.value)
  with pytest.raises(SpecError, match="kernel"): check_graph(u.sink() if u.dtype is not dtypes.void else u, stage="kernel")

def test_error_names_node_and_stage():
  bad = UOp(Ops.ADD, i32, (c(1, i32), c(2)))
  with pytest.raises(SpecError) as e: check_graph(UOp.sink(bad + c(0, i32)), stage="my pass")
  msg = str(e.value)
  assert msg.startswith("[my pass]") and "Ops.ADD dtypes.int" in msg and "(1+2)" in msg and "cast one first" in msg

def test_errors_on_malformed_args_still_print():
  with pytest.raises(SpecError, match="ParamArg"): check_uop(UOp(Ops.PARAM, f32, arg="not a ParamArg"))

# *** stage specs ***

def test_stage_specs():
  assert spec_kernel.rewrite(buf.index(r)) is True and spec_kernel.rewrite(buf.reshape(4, 4)) is None
  assert spec_tensor.rewrite(buf.reshape(4, 4)) is True and spec_tensor.rewrite(r) is None and spec_program.rewrite(r) is True
  assert spec_kernel.rewrite(buf.index(r).load().reduce(r)) is True and spec_program.rewrite(buf.index(r).load().reduce(r)) is None
  assert set(SPECS) == {"tensor", "kernel", "program", "queue"}
  check_graph(kernel(), "kernel")
  check_graph((buf.reshape(4, 4).sum(1) + 1.0).sink(), "tensor")
  with pytest.raises(SpecError, match=r"\[kernel\] Ops.RESHAPE in this form is not part of the kernel stage"):
    check_graph(buf.reshape(4, 4).index(1, 2).store(1.0).sink(), "kernel")
  with pytest.raises(SpecError, match="not part of the tensor stage"): check_graph(kernel(), "tensor")
  with pytest.raises(SpecError, match="REDUCE in this form is not part of the program stage"):
    check_graph(buf.index(r).load().reduce(r).sink(), "program")
  with pytest.raises(SpecError, match="LOAD in this form"): check_graph(buf.load().sink(), "kernel")  # memory through INDEX only

def test_check_graph_remembers_checked_nodes():
  k = kernel()
  check_graph(k, "kernel")
  assert all("kernel" in u.__dict__["_spec"] for u in k.toposort())
  bigger = UOp.sink(k.src[0], buf.index(r).store(1.0).end(r))
  check_graph(bigger, "kernel")  # only the new nodes are looked at; the result is the same
  assert "kernel" in bigger.__dict__["_spec"]

# *** switching the checks on ***

_break_it = PatternMatcher([(UPat(Ops.MUL, name="m"), lambda m: UOp(Ops.ADD, i32, (c(1, i32), c(2))))])

def test_spec1_checks_every_graph_rewrite():
  e = (x * 2).sink()
  assert graph_rewrite(e, _break_it, name="breaker").src[0].op is Ops.ADD  # SPEC=0 (default here): not checked
  with Context(SPEC=1):
    with pytest.raises(SpecError, match=r"^\[breaker\]"): graph_rewrite(e, _break_it, name="breaker")
    with pytest.raises(SpecError, match="not part of the kernel stage"): graph_rewrite(buf.reshape(4, 4).sink(), PatternMatcher([]), name="kernel")
    assert graph_rewrite(kernel(), PatternMatcher([]), name="kernel") is kernel()

def test_spec2_checks_every_new_node():
  with Context(SPEC=2):
    with pytest.raises(SpecError, match=r"^\[construction\]"): UOp(Ops.ADD, i32, (c(1, i32), c(12345)))
    with pytest.raises(SpecError, match="END"): buf.index(r).store(2.0).end(UOp.loop(77))
    assert (x * 3 + 1).simplify() is x * 3 + 1  # valid graphs build and rewrite as before

def test_int_only_ops_reject_floats():
  import pytest
  from tinygrad.uop.ops import UOp, Ops
  from tinygrad.dtype import dtypes
  from tinygrad.uop.spec import check_uop, SpecError
  a, b = UOp.variable("a", 0, 9, dtypes.int32), UOp.const(dtypes.int32, 2)
  for op in (Ops.CDIV, Ops.CMOD, Ops.AND): check_uop(UOp(op, dtypes.int32, (a, b)))
  x = UOp.const(dtypes.float32, 1.5)
  for op in (Ops.CDIV, Ops.CMOD, Ops.AND, Ops.XOR):
    with pytest.raises((SpecError, RuntimeError), match="ints and bools"): check_uop(UOp(op, dtypes.float32, (x, x)))
