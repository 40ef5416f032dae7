"""qr, svd and newton_schulz against numpy.linalg: reconstruction, orthogonality, singular values, batches, rank deficiency."""
import numpy as np, pytest
from tinygrad import Tensor, dtypes

def _orthonormal_columns(u, atol):
  np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],)*2), atol=atol)

@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 3), (1, 1)])
def test_qr(shape):
  a = np.random.default_rng(len(shape) * 10 + shape[-1]).standard_normal(shape).astype(np.float32)
  q, r = (t.numpy() for t in Tensor(a).qr())
  assert q.shape == shape[:-2] + (shape[-2],)*2 and r.shape == shape
  np.testing.assert_allclose(q @ r, a, atol=1e-5)
  _orthonormal_columns(q, 1e-5)
  np.testing.assert_array_equal(np.tril(r, -1), 0)

@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 3, 2), (7, 5)])
@pytest.mark.parametrize("full", [True, False])
def test_svd(shape, full):
  a = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
  u, s, vh = (t.numpy() for t in Tensor(a).svd(full_matrices=full))
  nu, ns, nvh = np.linalg.svd(a, full_matrices=full)
  assert (u.shape, s.shape, vh.shape) == (nu.shape, ns.shape, nvh.shape)
  np.testing.assert_allclose(s, ns, rtol=1e-5, atol=1e-5)
  k = s.shape[-1]
  np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, atol=1e-5)
  _orthonormal_columns(u, 1e-5)
  _orthonormal_columns(np.swapaxes(vh, -1, -2), 1e-5)

def test_svd_rank_deficient_and_int():
  a = np.array([[1, 2, 3], [2, 4, 6], [1, 1, 1]])
  u, s, vh = (t.numpy() for t in Tensor(a).svd())
  np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.float64), compute_uv=False), atol=1e-5)
  _orthonormal_columns(u, 1e-5)  # also where S is 0
  np.testing.assert_allclose(u * s @ vh, a, atol=1e-5)

def test_svd_float64():
  a = np.random.default_rng(3).standard_normal((5, 4))
  s = Tensor(a, dtype=dtypes.float64).svd()[1].numpy()
  np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)

def test_newton_schulz_orthogonalizes():
  g = np.random.default_rng(4).standard_normal((6, 4)).astype(np.float32)
  x = Tensor(g).newton_schulz(30, (1.5, -0.5, 0.0)).numpy()  # the cubic iteration converges to the polar factor U V^T
  u, _, vh = np.linalg.svd(g, full_matrices=False)
  np.testing.assert_allclose(x, u @ vh, atol=1e-5)

@pytest.mark.parametrize("fn", [lambda t: t.qr(), lambda t: t.svd(), lambda t: t.newton_schulz(1, (1, 0, 0))])
def test_needs_a_matrix(fn):
  with pytest.raises(ValueError, match=r"needs a matrix .* shape \(3,\)"): fn(Tensor([1.0, 2.0, 3.0]))
