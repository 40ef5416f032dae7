"""Creation functions reject bad sizes where the tensor is made, tril/triu against numpy, and .numpy() without numpy installed."""
import os, subprocess, sys
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

CREATORS = [lambda *s: Tensor.empty(*s), lambda *s: Tensor.zeros(*s), lambda *s: Tensor.ones(*s), lambda *s: Tensor.full(s, 2),
            lambda *s: Tensor.rand(*s), lambda *s: Tensor.randn(*s), lambda *s: Tensor.randint(*s), lambda *s: Tensor.normal(*s),
            lambda *s: Tensor.uniform(*s), lambda *s: Tensor.kaiming_uniform(*s), lambda *s: Tensor.scaled_uniform(*s)]

@pytest.mark.parametrize("make", CREATORS)
def test_negative_size_rejected(make):
  with pytest.raises(ValueError, match=r"got -1 in shape \(2, -1\)"): make(2, -1)

@pytest.mark.parametrize("make", CREATORS)
@pytest.mark.parametrize("bad", [2.5, 2.0, "3", True])
def test_non_int_size_rejected(make, bad):
  with pytest.raises(TypeError, match="sizes must be ints"): make(bad)

def test_good_sizes():
  assert Tensor.ones(np.int64(2), 3).shape == (2, 3) and Tensor.zeros((0, 4)).shape == (0, 4) and Tensor.rand(()).shape == ()
  assert Tensor.ones(-1 + 1).tolist() == []
  with pytest.raises(ValueError, match="-2"): Tensor.eye(-2)
  with pytest.raises(ValueError, match="-1"): Tensor.eye(2, -1)

def test_like_functions():
  x = Tensor([[1, 2, 3]], dtype=dtypes.int16)
  for t, v in ((x.zeros_like(), 0), (x.ones_like(), 1), (x.full_like(7), 7)):
    assert t.dtype is dtypes.int16 and t.shape == (1, 3) and t.tolist() == [[v]*3]
  assert x.full_like(2.5, dtype=dtypes.float32).tolist() == [[2.5]*3]
  assert x.float().rand_like().shape == (1, 3) and x.float().randn_like().dtype is dtypes.float32
  np.testing.assert_array_equal(Tensor.eye(3, 4, dtype=dtypes.int32).numpy(), np.eye(3, 4, dtype=np.int32))

@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 5, 3)])
@pytest.mark.parametrize("diagonal", [-2, -1, 0, 1, 3])
def test_tril_triu(shape, diagonal):
  x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 1
  np.testing.assert_array_equal(Tensor(x).tril(diagonal).numpy(), np.tril(x, diagonal))
  np.testing.assert_array_equal(Tensor(x).triu(diagonal).numpy(), np.triu(x, diagonal))

def test_tril_keeps_dtype_and_needs_2d():
  b = Tensor.ones(3, 3, dtype=dtypes.bool)
  assert b.tril().dtype is dtypes.bool and b.triu().numpy().tolist() == np.triu(np.ones((3, 3), bool)).tolist()
  with pytest.raises(ValueError, match=r"at least 2 dims.*\(3,\)"): Tensor([1, 2, 3]).tril()

def test_numpy_missing_says_pip_install(tmp_path):
  (tmp_path / "sitecustomize.py").write_text(
    "import sys\nclass _NoNumpy:\n  def find_spec(self, name, path=None, target=None):\n"
    "    if name == 'numpy' or name.startswith('numpy.'): raise ImportError('numpy is blocked')\nsys.meta_path.insert(0, _NoNumpy())\n")
  code = ("from tinygrad import Tensor\nt = Tensor([1, 2])\nassert t.tolist() == [1, 2]\n"
          "try: t.numpy()\nexcept ImportError as e: print(e)\n")
  env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
  assert out.returncode == 0, out.stderr
  assert "pip install numpy" in out.stdout and ".tolist()" in out.stdout

def test_cast_helpers():
  x = Tensor([1.5, -2.0])
  assert x.short().dtype is dtypes.int16 and x.short().tolist() == [1, -2]
  assert x.bfloat16().dtype is dtypes.bfloat16 and x.bfloat16().tolist() == [1.5, -2.0]
  assert x.is_floating_point() and not x.int().is_floating_point() and not x.bool().is_floating_point()

def test_arange_with_numpy_float_scalars_is_float():
  for args in [(np.float32(0.5), 3), (0, 2, np.float32(0.5)), (np.float16(2.5),)]:
    t = Tensor.arange(*args)
    assert t.dtype == dtypes.default_float
    np.testing.assert_allclose(t.numpy(), np.arange(*[float(a) for a in args]))

@pytest.mark.parametrize("start,stop,steps,dtype", [(0, 50, 100, dtypes.int32), (0, 7, 100, dtypes.int32), (0, 100, 100, dtypes.float32),
                                                    (0.1, 0.7, 7, dtypes.float32), (-3, 5, 9, dtypes.float64), (2, -1, 6, dtypes.float32)])
def test_linspace_ends_at_stop(start, stop, steps, dtype):
  """both ends exact (torch's rule: the second half counts back from stop); an int dtype's last value was stop - 1"""
  got, want = Tensor.linspace(start, stop, steps, dtype=dtype).numpy(), np.linspace(start, stop, steps)
  assert got[0] == want[0].astype(got.dtype) and got[-1] == want[-1].astype(got.dtype)
  np.testing.assert_allclose(got, want.astype(got.dtype), rtol=1e-6, atol=1 if dtypes.is_int(dtype) else 1e-6)
