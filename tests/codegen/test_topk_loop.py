"""a top-k loop as llama's sampler writes it: k max reduces, each over the previous step's masked vector, realized together"""
import numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.uop import Ops
from tinygrad.schedule.rangeify import create_schedule
from tinygrad.codegen.opt.heuristic import hand_coded_opts
from tinygrad.codegen.opt.kernel import OptOps
from tinygrad.renderer.llvmir import LLVMRenderer

def topk_loop(x:np.ndarray, k:int):
  V = len(x)
  t = Tensor(x).realize()
  ids, rev = Tensor.arange(V).contiguous().realize(), Tensor.arange(V - 1, -1, -1).contiguous().realize()
  vals, idxs = Tensor.zeros(k).contiguous().realize(), Tensor.zeros(k, dtype=dtypes.int32).contiguous().realize()
  for i in range(k):
    at = (V - ((t == (m := t.max())) * rev).max() - 1).cast(dtypes.int32)
    vals, idxs = vals + m.unsqueeze(0).pad(((i, k - i - 1),)), idxs + at.unsqueeze(0).pad(((i, k - i - 1),))
    t = (ids == at).where(0, t)
  return vals, idxs

def test_topk_loop_masks_are_not_recomputed_by_every_later_kernel():
  # fused, step i's masked vector is a chain of i selects that the max and the index pass of every later step recompute: 2k different
  # kernels, each longer than the one before (k=40 took minutes to compile); as buffers, a kernel holds a few steps' selects at most
  k = 16
  x = np.random.default_rng(0).standard_normal(4096).astype(np.float32)
  vals, idxs = topk_loop(x, k)
  items, _ = create_schedule([vals.uop, idxs.uop])
  reduces = [it.ast.toposort() for it in items if it.kind == "kernel" and any(u.op is Ops.REDUCE for u in it.ast.toposort())]
  assert max(sum(u.op is Ops.WHERE for u in nodes) for nodes in reduces) < k // 2
  ref = np.argsort(-x, kind="stable")[:k]
  Tensor.realize(vals, idxs)
  np.testing.assert_allclose(vals.numpy(), x[ref])
  np.testing.assert_equal(idxs.numpy(), ref)

def test_int_max_of_loaded_ids_is_not_unrolled_for_llvm():
  # the index pass of a top-k step, max of (t == m) * ids over a buffer of ids: LLVM loop-vectorizes an int reduce itself; 32 unrolled
  # lanes it vectorized again across the loop's trips, a gather per lane (1.7k lines of IR became 19k)
  renderer = LLVMRenderer()
  x = Tensor(np.random.default_rng(1).standard_normal(32000).astype(np.float32)).realize()
  ids = Tensor.arange(32000).contiguous().realize()
  out = ((x == x.max().realize()) * ids).max()
  (it,) = [it for it in create_schedule([out.uop])[0] if it.kind == "kernel"]
  assert not [o for o in hand_coded_opts(it.ast, renderer) if o.op is OptOps.UNROLL]
  assert out.item() == int(np.argmax(x.numpy()))
