"""Kernel counts and fusion decisions of the scheduler, checked on tensor-level UOp graphs (no device needed)."""
import pytest
from tinygrad.uop.ops import UOp, Ops
from tinygrad.dtype import dtypes
from tinygrad.helpers import Context
from tinygrad.schedule.rangeify import create_schedule

def buf(*shape, dtype=dtypes.float):
  n = 1
  for s in shape: n *= s
  return UOp.new_buffer("CPU", n, dtype).reshape(shape)

def kernels(*targets): return [it for it in create_schedule(list(targets))[0] if it.kind == "kernel"]

def matmul(a, b): return (a.reshape((a.shape[0], 1, a.shape[1])) * b.T.reshape((1, b.shape[1], b.shape[0]))).sum(2)

def test_elementwise_chain_is_one_kernel():
  a, b, c = buf(3, 4), buf(3, 4), buf(3, 4)
  assert len(kernels((a+b)*c)) == 1

def test_elementwise_into_reduce_is_one_kernel():
  a, b, c = buf(3, 4), buf(3, 4), buf(3, 4)
  assert len(kernels(((a+b)*c).sum())) == 1

def test_matmul_relu_is_one_kernel():
  assert len(kernels(matmul(buf(3, 4), buf(4, 5)).relu())) == 1

def test_softmax_at_most_three_kernels():
  x = buf(8, 16)
  e = (x - x.max(1, keepdim=True)).exp()
  assert len(kernels(e / e.sum(1, keepdim=True))) <= 3

def test_reduce_broadcast_back_is_realized():
  x = buf(3, 4)
  with Context(FUSE_ROWS=0):  # on the host a short row stays in its reader's kernel (test_row_fusion.py)
    ks = kernels(x - x.sum(1, keepdim=True))
  assert len(ks) == 2
  # the first kernel computes the (3,1) sums, the second reads them
  assert ks[0].bufs[0].arg.shape == (3,)

def test_nested_reduce_fuses():
  assert len(kernels(buf(3, 4).sum(1).sum(0))) == 1

def test_reduce_shared_by_two_outputs_is_computed_once():
  x = buf(3, 4)
  s = x.sum(1)
  assert len(kernels(s + 1, s * 2)) == 3

def test_movement_is_index_math_not_copies():
  x = buf(3, 4)
  ks = kernels((x.T.flip(0)[1:3] + 1).pad(((1, 1), (0, 0))).reshape((12,)))
  assert len(ks) == 1
  ast = ks[0].ast
  assert not any(u.op in {Ops.RESHAPE, Ops.PERMUTE, Ops.FLIP, Ops.PAD, Ops.SHRINK, Ops.EXPAND} for u in ast.toposort())

def test_pad_gates_loads():
  ks = kernels(buf(4).pad(((2, 2),)) + 1)
  loads = [u for u in ks[0].ast.toposort() if u.op is Ops.LOAD]
  assert len(loads) == 1 and len(loads[0].src) == 3, "a padded read must be a gated load"

def test_view_of_buffer_needs_no_kernel():
  x = buf(3, 4)
  items, res = create_schedule([x.T])
  assert items == [] and res[x.T] is x.T

def test_contiguous_realizes():
  x = buf(3, 4)
  assert len(kernels(x.T.contiguous())) == 1

def test_const_tensor_gets_a_buffer():
  c = UOp.const(dtypes.float, 1.5, "CPU").reshape((1, 1)).expand((2, 3))
  items, res = create_schedule([c])
  assert len(items) == 1 and res[c].base.op is Ops.BUFFER and res[c].shape == (2, 3)

def test_copy_between_devices():
  x = buf(4)
  items, _ = create_schedule([(x + 1).copy_to_device("PYTHON")])
  assert [it.kind for it in items] == ["kernel", "copy"]
  assert items[1].bufs[0].arg.device == "PYTHON"

def test_kernels_are_parameterised():
  # the same computation on different buffers is the same AST, so it compiles once
  a, b = buf(3, 4), buf(3, 4)
  assert kernels(a + 1)[0].ast is kernels(b + 1)[0].ast

def test_fusion_error_names_the_op():
  from tinygrad.schedule.indexing import build_kernel
  copy = buf(4).copy_to_device("PYTHON")  # a COPY is never fused: asked to, the index rules name it
  with pytest.raises(RuntimeError, match="cannot fuse Ops.COPY"): build_kernel(copy + 1, buf(4).base, {})

# *** an elementwise node several kernels read: recomputed where that is cheap, a buffer where each kernel broadcasts it ***

def relu_mask(n=4, k=8):
  """the shape of a ReLU's backward, (0 < a+b) ? c : 0: three inputs, three ops"""
  a, b, c = buf(n, k), buf(n, k), buf(n, k)
  return (UOp.const(dtypes.float, 0.0, "CPU").reshape((1, 1)).expand((n, k)) < a + b).where(c, 0.0)

def test_shared_broadcast_elementwise_is_realized():
  # like a conv's gradient: the weight- and the input-gradient kernels each read the mask once per output they broadcast it to
  g = relu_mask()
  dw = (g.reshape((4, 1, 8)) * buf(5, 8).reshape((1, 5, 8))).sum(2)
  dx = (g.reshape((4, 8, 1)) * buf(8, 6).reshape((1, 8, 6))).sum(1)
  ks = kernels(dw, dx)
  assert len(ks) == 3
  assert ks[0].bufs[0].arg.shape == (32,), "the mask is computed first, into its own buffer"
  assert all(not any(u.op is Ops.WHERE for u in k.ast.toposort()) for k in ks[1:]), "the reduce kernels load it instead of recomputing"

def test_shared_elementwise_read_once_per_element_stays_fused():
  # both kernels stream every element once: a buffer would only add a write and a read
  g = relu_mask()
  assert len(kernels(g.sum(0), g.sum(1))) == 2

def test_one_input_elementwise_stays_fused():
  # a function of one input costs the load its buffer would; its ops are invariant along the broadcast axes
  g = buf(4, 8).exp2()
  dw = (g.reshape((4, 1, 8)) * buf(5, 8).reshape((1, 5, 8))).sum(2)
  dx = (g.reshape((4, 8, 1)) * buf(8, 6).reshape((1, 8, 6))).sum(1)
  assert len(kernels(dw, dx)) == 2

def test_elementwise_broadcast_by_one_kernel_stays_fused():
  g = relu_mask()
  assert len(kernels((g.reshape((4, 1, 8)) * buf(5, 8).reshape((1, 5, 8))).sum(2))) == 1

def test_reshape_that_splits_a_reduce_realizes_the_reduce():
  # a weight gradient: the sum over the batch in (Cout, Cin*K) form, wanted as (Cout, Cin, KH, KW). The buffer is the same memory either
  # way; computed in the merged form, the kernel loops over one stride-1 axis of Cin*K instead of a run of KW
  g, cols = buf(5, 6), buf(5, 24)
  dw = (g.reshape((5, 6, 1)) * cols.reshape((5, 1, 24))).sum(0).reshape((6, 2, 3, 4))
  (k,) = kernels(dw)
  assert sorted(u.src[0].arg for u in k.ast.toposort() if u.op is Ops.RANGE) == [5, 6, 24]
  items, becomes = create_schedule([dw])
  assert becomes[dw].op is Ops.RESHAPE and becomes[dw].src[0].op is Ops.BUFFER and becomes[dw].shape == (6, 2, 3, 4)
  # a reshape that merges axes (or one of a plain buffer) is left as it was
  merged = (g.reshape((5, 6, 1)) * cols.reshape((5, 1, 24))).sum(0).reshape((144,))
  assert sorted(u.src[0].arg for u in kernels(merged)[0].ast.toposort() if u.op is Ops.RANGE) == [5, 144]

# *** the same counts through the Tensor API, measured by what actually ran ***

def count_kernels(fn) -> int:
  from tinygrad.helpers import GlobalCounters
  GlobalCounters.reset()
  fn().realize()
  return GlobalCounters.kernel_count

@pytest.fixture(params=["CPU", "NULL"])
def t3(request):
  # NULL schedules and compiles every kernel like a real device but runs nothing: the counts must be the same
  from tinygrad import Tensor
  return [Tensor.empty(16, 16, device=request.param) for _ in range(3)]

def test_tensor_kernel_counts(t3):
  a, b, c = t3
  assert count_kernels(lambda: (a+b)*c) == 1
  assert count_kernels(lambda: ((a+b)*c).sum()) == 1
  assert count_kernels(lambda: (a@b).relu()) == 1
  assert count_kernels(lambda: a.softmax(-1)) <= 3
