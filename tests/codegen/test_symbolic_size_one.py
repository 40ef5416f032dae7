"""Loops over a Variable's size of at most 1: Variable("toks", 1, 1) (a KV cache written one token at a time) is one trip, and
Variable("toks", 0, 1) is zero or one. Such a range is 0 wherever it runs, so symbolic folds it out of the body's indices by bounds; its END
then closed a loop nothing in its body depended on: linearize found a cycle, and with a size that may be 0 the store left the loop and ran
when it should not have. The one-trip loop is dropped like a loop of constant size 1; the other becomes one trip gated by 0 < size."""
import numpy as np, pytest
from tinygrad import Tensor, TinyJit
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import UOp, KernelInfo, Variable
from tinygrad.codegen import get_program
from tinygrad.renderer.cstyle import ClangRenderer

A = np.arange(32, dtype=np.float32).reshape(4, 8)
B = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)

def test_program_over_a_pinned_variable_has_no_loop_for_it():
  """out[i*8 + j] = 1 over i < toks, toks pinned to 1: no loop, no argument for toks (before: RuntimeError, cycle in linearize)"""
  toks = Variable("toks", 1, 1)
  i, j = UOp.range(toks, 0), UOp.range(8, 1)
  out = UOp.param(0, dtypes.float, (8,))
  prg = get_program(out[i*8 + j].store(UOp.const(dtypes.float, 1.0)).end(i, j).sink(arg=KernelInfo(name="pinned")), ClangRenderer())
  assert prg.vars == () and "toks" not in prg.src

# each case: an expression over `n` rows and numpy's answer; ROWS have n rows themselves, the others reduce over them
ROWS = {
  "shrink": (lambda n, d: Tensor(A, d).shrink(((0, n), None)) * 2, lambda n: A[:n] * 2),
  "index": (lambda n, d: Tensor.ones(4, 8, device=d)[:n] + 0, lambda n: np.ones((n, 8), np.float32)),
  "matmul": (lambda n, d: Tensor(A, d)[:n] @ Tensor(B, d), lambda n: A[:n] @ B),
}
CASES = {**ROWS,
  "sum over n": (lambda n, d: Tensor(A, d)[:n].sum(0), lambda n: A[:n].sum(0)),
  "matmul over n": (lambda n, d: Tensor(A, d)[:n].T @ Tensor(A, d)[:n], lambda n: A[:n].T @ A[:n]),
}

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
@pytest.mark.parametrize("case", list(CASES))
def test_pinned_variable_matches_numpy(case, device):
  """toks in 1..1. A result of toks rows is written to a fixed-size cache (reading a Variable-shaped tensor back is the tensor layer's)"""
  make, want = CASES[case]
  v = Variable("toks", 1, 1).bind(1)
  got, expect = make(v, device), want(1)
  if case in ROWS:
    cache = Tensor.zeros(2, *got.shape[1:], device=device).contiguous().realize()
    cache[:v].assign(got).realize()
    got, expect = cache, np.concatenate([expect, np.zeros_like(expect)])
  np.testing.assert_allclose(got.numpy(), expect, rtol=1e-5)

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("val", [0, 1])
def test_variable_of_at_most_one_matches_numpy(case, val, device):
  """toks in 0..1 (before: a cycle in linearize, or with 0 rows the row written anyway)"""
  make, want = CASES[case]
  np.testing.assert_allclose(make(Variable("toks", 0, 1).bind(val), device).numpy(), want(val), rtol=1e-5)

@pytest.mark.parametrize("lo, val", [(1, 1), (0, 0), (0, 1)])
def test_kv_cache_write_of_at_most_one_token(lo, val):
  """cache[:, pos:pos+toks] = k for toks tokens, as a decode step writes its keys"""
  v = Variable("toks", lo, 1).bind(val)
  k = np.random.default_rng(1).standard_normal((2, 1, 8)).astype(np.float32)
  cache = Tensor.zeros(2, 4, 8).contiguous().realize()
  cache[:, 2:4].shrink((None, (0, v), None)).assign(Tensor(k).shrink((None, (0, v), None)) * 3).realize()
  expect = np.zeros((2, 4, 8), np.float32)
  expect[:, 2:2 + val] = k[:, :val] * 3
  np.testing.assert_allclose(cache.numpy(), expect, rtol=1e-6)

@pytest.mark.parametrize("lo", [0, 1])
def test_jit_over_a_variable_of_at_most_one(lo):
  @TinyJit
  def step(x:Tensor, n:UOp) -> Tensor: return ((x[:n] * 2).contiguous() @ Tensor(B)).sum(0).realize()
  vals = [1, 1, 1] if lo == 1 else [1, 0, 1, 0]
  for val in vals:
    np.testing.assert_allclose(step(Tensor(A), Variable("toks", lo, 1).bind(val)).numpy(), (A[:val] * 2 @ B).sum(0), rtol=1e-5, atol=1e-6)

def test_rows_of_a_pinned_variable_read_back():
  """a (toks, 8) result read back: its buffer holds 8 elements, toks*8 folded by bounds (it raised "the engine returned RESHAPE instead
  of a buffer"), and a slice buf[:, 1:1+w] (size 1 by bounds) takes a value shaped with w (it raised "assign needs the same shape")"""
  toks, w = Variable("toks", 1, 1).bind(1), Variable("w", 1, 1).bind(1)
  np.testing.assert_array_equal((Tensor(A)[:toks] * 2).numpy(), A[:1] * 2)
  buf = Tensor.zeros(2, 4, 8).contiguous().realize()
  buf[:, 1:1+w].assign(Tensor.ones(2, 1, 8).reshape(2, w, 8)).realize()
  want = np.zeros((2, 4, 8), np.float32)
  want[:, 1] = 1
  np.testing.assert_array_equal(buf.numpy(), want)
