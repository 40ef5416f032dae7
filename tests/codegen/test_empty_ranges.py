"""Kernels with a loop of no iterations (an empty index on a multi-dimensional tensor schedules one): opt/merge_ranges.py must not merge
it. Merged as the outer loop, 0 * B == 0 made the merged loop the same UOp as the old one, and the rewrite that replaced it never ended.
The end-to-end cases run in a child process with a time limit, so that a regression fails here instead of hanging the suite (conftest's
watchdog only stops the whole run, after TEST_TIMEOUT)."""
import json, os, subprocess, sys
import numpy as np
import pytest
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import UOp, KernelInfo
from tinygrad.codegen.opt.merge_ranges import _neighbours, merge_adjacent_ranges

def elementwise(h:int, w:int) -> UOp:
  """out[i*w + j] = a[i*w + j] * 2 over an (h, w) grid of loops"""
  out, a = UOp.param(0, dtypes.float, (max(h*w, 1),)), UOp.param(1, dtypes.float, (max(h*w, 1),))
  i, j = UOp.range(h, 0), UOp.range(w, 1)
  return out[i*w + j].store(a[i*w + j].load() * 2.0).end(i, j).sink(arg=KernelInfo(name="ew"))

@pytest.mark.parametrize("h, w", [(0, 3), (3, 0), (0, 0)])
def test_empty_loop_is_not_merged(h, w):
  ast = elementwise(h, w)
  assert _neighbours(ast) == []  # checked first: before the fix the merge below never returned
  assert merge_adjacent_ranges(ast) is ast

def test_nonempty_loops_still_merge():
  ast = elementwise(2, 3)
  assert len(_neighbours(ast)) == 1 and merge_adjacent_ranges(ast) is not ast

# each case: a tensor expression and numpy's answer for it
PROGRAM = r"""
import json
from tinygrad import Tensor
base = [[1., 2., 3.], [3., 4., 5.]]
def setitem(t, idx, v):
  t[idx] = v
  return t
empty = lambda: Tensor([], dtype='int32')
cases = {
  "all_false_mask": lambda: setitem(Tensor(base), Tensor([False, False]), 0.0),
  "empty_row_index": lambda: setitem(Tensor(base), empty(), 0.0),
  "empty_column_index": lambda: setitem(Tensor(base), (slice(None), empty()), 0.0),
  "all_false_mask_3d": lambda: setitem(Tensor.arange(24.).reshape(2, 3, 4).contiguous(), Tensor([False, False]), 7.0),
  "sum_of_empty_columns": lambda: Tensor.ones(2, 3).contiguous()[:, empty()].sum(),
  "sum_of_empty_middle_axis": lambda: Tensor.ones(2, 3, 4).contiguous()[:, empty()].sum(axis=1),
  "sum_of_empty_rows_plus_one": lambda: (Tensor(base)[empty()] + 1).sum(axis=0),
}
print(json.dumps({k: f().tolist() for k, f in cases.items()}))
"""
EXPECTED = {
  "all_false_mask": [[1., 2., 3.], [3., 4., 5.]], "empty_row_index": [[1., 2., 3.], [3., 4., 5.]],
  "empty_column_index": [[1., 2., 3.], [3., 4., 5.]], "all_false_mask_3d": np.arange(24.).reshape(2, 3, 4).tolist(),
  "sum_of_empty_columns": 0.0, "sum_of_empty_middle_axis": np.zeros((2, 4)).tolist(), "sum_of_empty_rows_plus_one": [0., 0., 0.],
}

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_empty_index_matches_numpy(device):
  try: r = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120, env={**os.environ, "DEV": device})
  except subprocess.TimeoutExpired: pytest.fail(f"an empty index on {device} did not finish in 120 s (a hang in codegen)")
  assert r.returncode == 0, r.stderr[-4000:]
  got = json.loads(r.stdout.strip().splitlines()[-1])
  for k, want in EXPECTED.items(): np.testing.assert_allclose(np.array(got[k]), np.array(want), err_msg=k)
