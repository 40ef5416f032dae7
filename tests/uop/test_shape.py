import pytest
from tinygrad.uop.ops import UOp, Ops, Variable, broadcast_shape, broadcast_axes
from tinygrad.uop import GroupOp
from tinygrad.dtype import dtypes

a = UOp.placeholder((3, 4), dtypes.float32, 0)
col, row = UOp.placeholder((3, 1), dtypes.float32, 1), UOp.placeholder((1, 4), dtypes.float32, 2)
n = Variable("n", 1, 10)

def test_leaves():
  assert UOp.const(dtypes.int32, 1).shape == () and n.shape == () and n.bind(3).shape == () and UOp.range(5, 0).shape == ()
  assert UOp.special(8, "gidx0").shape == () and a.shape == (3, 4) and UOp.param(0, dtypes.float32, 7).shape == (7,)
  assert UOp.new_buffer("CPU", 6, dtypes.int32).shape == (6,)
  assert UOp.loop(0)._shape is None  # a bound-less loop carries no value

def test_no_shape_ops():
  for u in [a.sink(), a.index(0, 0).store(1.0), a.index(0, 0).store(1.0).end(UOp.range(2, 0)), UOp(Ops.DEVICE, arg="CPU"), a.barrier()]:
    assert u._shape is None
    with pytest.raises(RuntimeError, match="has no shape"): u.shape

def test_shape_keeping_ops():
  for u in [a.cast(dtypes.int32), a.bitcast(dtypes.int32), a.contiguous(), a.detach(), a.copy_to_device("CPU"), a.after(a.sink()),
            a.reduce(UOp.range(3, 0)), -a, a.sqrt(), a.exp2()]:
    assert u.shape == (3, 4), u.op

def test_alu_broadcasts_implicitly():
  assert (col + row).shape == (3, 4) and (a * col).shape == (3, 4) and (col < row).shape == (3, 4) and (a < 0.5).where(col, row).shape == (3, 4)
  assert UOp.placeholder((2, 1, 4), dtypes.float32, 3).alu(Ops.ADD, col).shape == (2, 3, 4)  # right-aligned, numpy style
  with pytest.raises(ValueError, match=r"\(3, 4\) and \(4, 3\) cannot be broadcast"): (a + UOp.placeholder((4, 3), dtypes.float32, 4)).shape

def test_scalar_operand_stays_a_direct_source():
  s = UOp.const(dtypes.float32, 2.0)
  m = a.alu(Ops.MUL, s)
  assert m.src == (a, s) and m.shape == (3, 4)
  assert not any(u.op in GroupOp.Movement for u in m.toposort())  # no EXPAND/RESHAPE inserted for the broadcast
  assert (a * 2.0).src[1].op is Ops.CONST and (2.0 * a).src[0].op is Ops.CONST

def test_broadcast_helpers():
  assert broadcast_shape((3, 1), (1, 4)) == (3, 4) and broadcast_shape((), (2, 3)) == (2, 3) and broadcast_shape((5,), (2, 1)) == (2, 5)
  assert broadcast_axes((3, 1), (3, 4)) == (1,) and broadcast_axes((4,), (3, 4)) == (0,) and broadcast_axes((), (2, 3)) == (0, 1)
  assert broadcast_axes((1, 1), (1, 5)) == (1,) and broadcast_axes((3, 4), (3, 4)) == ()
  assert broadcast_shape((n, 1), (1, 4)) == (n, 4) and broadcast_axes((1, 4), (n, 4)) == (0,)
  with pytest.raises(ValueError): broadcast_shape((2,), (3,))
  # two of one rank (the fast path) against numpy's rule, sizes 0 and symbolic ones included, and the mismatches named
  import numpy as np
  for x, y in [((2048, 512), (2048, 1)), ((1, 0), (5, 1)), ((0, 1), (1, 5)), ((1, 1), (1, 1)), ((2, 1, 3), (1, 4, 3))]:
    assert broadcast_shape(x, y) == np.broadcast_shapes(x, y) == broadcast_shape(y, x)
  assert broadcast_shape((n, 1), (n, 4)) == (n, 4) and broadcast_shape((1, n), (3, n)) == (3, n)
  for x, y in [((3, 4), (4, 3)), ((n, 2), (3, 2)), ((2, 0), (2, 3))]:
    with pytest.raises(ValueError, match="cannot be broadcast together"): broadcast_shape(x, y)

def test_index_and_stack():
  i, j = UOp.range(3, 0), UOp.range(4, 1)
  assert a.index(i).shape == (4,) and a.index(i, j).shape == () and a[1].op is Ops.INDEX and a[1, 2].shape == ()
  v = UOp(Ops.STACK, dtypes.weakint, (i, i + 1))  # a vector index gathers a vector
  assert v.shape == (2,) and a.index(v).shape == (2, 4) and a.index(v, j).shape == (2,)
  assert a.index(i, j).load().shape == () and UOp(Ops.STACK, dtypes.float32, (a, a, a)).shape == (3, 3, 4)

def test_movement():
  assert a.reshape(12).shape == (12,) and a.reshape(2, -1).shape == (2, 6) and col.expand(3, 4).shape == (3, 4)
  assert a.permute(1, 0).shape == (4, 3) and a.pad(((1, 1), (0, 2))).shape == (5, 6) and a.shrink(((0, 2), (1, 3))).shape == (2, 2)
  assert a.flip(0).shape == (3, 4) and a.flatten().shape == (12,) and a.unsqueeze(0).shape == (1, 3, 4) and a.T.shape == (4, 3)
  with pytest.raises(ValueError, match="cannot reshape"): a.reshape(5)
  with pytest.raises(ValueError): a.expand(6, 4)
  # the IR re-checks what it is given directly, without the mixin's normalisation
  with pytest.raises(ValueError, match="cannot reshape"): UOp(Ops.RESHAPE, dtypes.float32, (a, UOp.const(dtypes.weakint, 5))).shape
  with pytest.raises(ValueError, match="not a permutation"): UOp(Ops.PERMUTE, dtypes.float32, (a,), (0, 0)).shape

def test_movement_sizes_are_the_same_nodes_past_the_size_cache():
  # sizes are kept as CONST nodes in a bounded cache (ops._size_consts); past its bound it starts over, and every size is still the
  # hash-consed constant a fresh UOp.const would give
  from tinygrad.uop.ops import _size_consts
  rows = [a.reshape(12).reshape(1, 12).pad(((0, 0), (k, 0))) for k in range(5000)]
  assert len(_size_consts) <= 4096 and all(r.shape == (1, 12 + k) for k, r in enumerate(rows))
  assert rows[4321].src[3] is UOp.const(dtypes.weakint, 4321) and rows[7].marg == ((0, 0), (7, 0))
  with pytest.raises(TypeError, match="must be an int"): a.reshape(12, True)
  with pytest.raises(TypeError, match="must be an int"): a.pad(((0, 0), (1.0, 0)))

def test_reduce_axis():
  assert a.sum(1).shape == (3,) and a.sum(1, keepdim=True).shape == (3, 1) and a.max().shape == () and a._rop(Ops.ADD, (0,)).shape == (1, 4)
  with pytest.raises(ValueError, match="out of range"): UOp(Ops.REDUCE_AXIS, dtypes.float32, (a,), (Ops.ADD, (2,))).shape

def test_symbolic_shapes():
  p = UOp.placeholder((n, 4), dtypes.float32, 5)
  assert p.shape == (n, 4) and p.reshape(4, n).shape == (4, n) and p.sum(0).shape == (4,) and p.permute(1, 0).shape == (4, n)
  assert p.numel().render() == "(n*4)" and row.expand(n, 4).shape == (n, 4) and (p + row).shape == (n, 4)
  assert p.pad(((1, 1), (0, 0))).shape[0].render() == "(n+2)" and p.shrink(((1, n), (0, 4))).shape[0].render() == "(n+-1)"
  with pytest.raises(ValueError, match="cannot be broadcast"): (p + UOp.placeholder((Variable("m", 1, 10), 4), dtypes.float32, 6)).shape
  bound = n.bind(3)
  q = UOp.placeholder((bound, 4), dtypes.float32, 7)
  assert q.shape == (bound, 4) and q.shape[0].unbind() == (n, 3) and q.sum(1).shape == (bound,)

def test_fresh_graph_is_worked_out_once_sources_first():
  # a graph built without asking (raw UOps): the first question works out shape and device for every node below, deepest first, with
  # no recursion (a chain far past the recursion limit) and without entering the nodes that know theirs already
  x = UOp.placeholder((3, 4), dtypes.float32, 5, device="CPU").reshape((12,))
  for i in range(30000): x = UOp(Ops.ADD if i % 2 else Ops.MUL, dtypes.float32, (x, x))
  assert x.shape == (12,) and x.device == "CPU"
  assert "_shape_c" in x.src[0].src[0].__dict__ and "_device_c" in x.src[0].__dict__
  # a bad node deep inside raises when the top is asked, naming the shapes
  bad = UOp(Ops.ADD, dtypes.float32, (a, UOp.placeholder((4, 3), dtypes.float32, 6)))
  with pytest.raises(ValueError, match=r"\(3, 4\) and \(4, 3\) cannot be broadcast"): UOp(Ops.NEG, dtypes.float32, (UOp(Ops.EXP2, dtypes.float32, (bad,)),)).shape
  # bounds: the same walk
  v = Variable("k", 2, 5)
  e = v
  for _ in range(3000): e = UOp(Ops.ADD, dtypes.weakint, (e, UOp.const(dtypes.weakint, 1)))
  assert (e.vmin, e.vmax) == (3002, 3005)
