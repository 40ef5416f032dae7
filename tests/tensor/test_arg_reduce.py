"""argmax/argmin against numpy: the first index of the extreme value, or of the first NaN. Rows long enough for LLVM's loop vectorizer
to run the index pass in vectors with a scalar tail (widths no vector divides), many ties (values from a short range), NaN in some
rows, narrow and wide int dtypes, axis 0 and 1, keepdim, every axis. Oracle: numpy."""
import numpy as np
import pytest
from tinygrad import Tensor

def sample(shape, npdt, seed:int, nans:bool) -> np.ndarray:
  rng = np.random.default_rng(seed)
  x = rng.integers(-20, 20, shape).astype(npdt)  # 40 values in thousands of elements: ties everywhere
  if nans:
    flat = x.reshape(-1)
    flat[rng.integers(0, flat.size, max(1, flat.size // 3000))] = np.nan  # a NaN in some rows and columns, not in others
  return x

@pytest.mark.parametrize("shape", [(37, 1037), (5, 4099), (4, 20000)])  # the last: longer than a row chain keeps in one kernel
@pytest.mark.parametrize("npdt", [np.float32, np.float16, np.int32, np.int8, np.uint8])
def test_long_rows_match_numpy(shape, npdt):
  x = sample(shape, npdt, sum(shape), nans=np.issubdtype(npdt, np.floating))
  t = Tensor(x)
  for axis in (1, 0):
    np.testing.assert_array_equal(t.argmax(axis).numpy(), np.argmax(x, axis).astype(np.int32), err_msg=f"argmax axis {axis}")
    np.testing.assert_array_equal(t.argmin(axis).numpy(), np.argmin(x, axis).astype(np.int32), err_msg=f"argmin axis {axis}")
  np.testing.assert_array_equal(t.argmax(1, keepdim=True).numpy(), np.argmax(x, 1, keepdims=True).astype(np.int32))
  assert t.argmax().item() == np.argmax(x) and t.argmin().item() == np.argmin(x)

def test_max_at_either_end_and_all_equal(device):
  x = np.zeros((4, 1027), np.float32)
  x[0, 0], x[1, -1], x[2, 1026] = 1, 1, -1  # first, last, a row whose maximum is everywhere but its end; row 3 all ties
  t = Tensor(x, device=device)
  np.testing.assert_array_equal(t.argmax(1).numpy(), np.array([0, 1026, 0, 0], np.int32))
  np.testing.assert_array_equal(t.argmin(1).numpy(), np.array([1, 0, 1026, 0], np.int32))

def test_small_shapes_every_backend(device):
  x = sample((3, 5, 7), np.float32, 1, nans=False)
  x[1, 2, 3] = np.nan
  t = Tensor(x, device=device)
  for axis in (0, 1, 2, -1, None):
    np.testing.assert_array_equal(t.argmax(axis).numpy(), np.argmax(x, axis).astype(np.int32), err_msg=f"axis {axis}")
    np.testing.assert_array_equal(t.argmin(axis, keepdim=True).numpy(), np.argmin(x, axis, keepdims=True).astype(np.int32))
