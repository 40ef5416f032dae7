"""Gradients through the composite Tensor methods (conv, pooling, losses, attention, indexing, sort, ...) against central differences
in float64: every op they emit has a gradient rule, and the rules compose."""
import numpy as np, pytest
from tinygrad import Tensor, dtypes

CASES = {
  "conv2d": (lambda x, w: x.conv2d(w, padding=1).sum(), [(1, 2, 4, 4), (3, 2, 3, 3)]),
  "conv2d weight, stride": (lambda w, x: x.conv2d(w, stride=2).square().sum(), [(3, 2, 3, 3), (1, 2, 5, 5)]),
  "conv_transpose2d": (lambda x, w: x.conv_transpose2d(w, stride=2).square().sum(), [(1, 2, 3, 3), (2, 1, 2, 2)]),
  "gelu": (lambda x: x.gelu().sum(), [(5,)]),
  "erf": (lambda x: x.erf().sum(), [(4,)]),
  "atan": (lambda x: x.atan().sum(), [(4,)]),
  "cross_entropy": (lambda x: x.cross_entropy(Tensor([1, 0, 2])), [(3, 4)]),
  "layernorm": (lambda x: x.layernorm().square().sum(), [(2, 5)]),
  "gather": (lambda x: x.gather(1, Tensor([[0, 2], [1, 1]])).square().sum(), [(2, 3)]),
  "max_pool2d": (lambda x: x.max_pool2d(2).sum(), [(1, 1, 4, 4)]),
  "avg_pool2d": (lambda x: x.avg_pool2d(2, stride=1).square().sum(), [(1, 1, 3, 3)]),
  "interpolate": (lambda x: x.interpolate((5, 5), mode="linear").square().sum(), [(1, 1, 3, 3)]),
  "attention": (lambda q: q.scaled_dot_product_attention(q*2, q+1, is_causal=True).square().sum(), [(1, 3, 4)]),
  "fancy index": (lambda x: x[Tensor([0, 2, 2])].square().sum(), [(3, 2)]),
  "cumsum": (lambda x: x.cumsum(0).square().sum(), [(4,)]),
  "sort": (lambda x: (x.sort()[0] * Tensor([1., 2., 3., 4.], dtype=dtypes.float64)).sum(), [(4,)]),
  "einsum": (lambda a, b: Tensor.einsum("ij,jk->ik", a, b).square().sum(), [(2, 3), (3, 2)]),
  "gelu exact": (lambda x: x.gelu(approximate="none").sum(), [(5,)]),
  "log10": (lambda x: (x.square() + 1).log10().sum(), [(4,)]),
  "softmin": (lambda x: (x.softmin(-1) * Tensor([1., 2., 3.], dtype=dtypes.float64)).sum(), [(2, 3)]),
  "normalize": (lambda x: (x.normalize(dim=1) * Tensor([[1., 2., 3.]], dtype=dtypes.float64)).sum(), [(2, 3)]),
  "unfold": (lambda x: x.unfold(1, 3, 2).square().sum(), [(2, 7)]),
  "rearrange": (lambda x: (x.rearrange("a (b c) -> c a b", c=2) * Tensor.arange(12, dtype=dtypes.float64).reshape(2, 2, 3)).sum(), [(2, 6)]),
  "fmod": (lambda x: x.fmod(0.7).square().sum(), [(5,)]),
  "contiguous_backward": (lambda x: (x.contiguous_backward() * x).sum(), [(3,)]),
  "masked_select size": (lambda x: x.masked_select(Tensor([True, False, True]), size=3).square().sum(), [(3,)]),
  "qr": (lambda x: x.qr()[1].triu().abs().sum(), [(3, 3)]),
}

@pytest.mark.parametrize("name", list(CASES))
def test_gradient_matches_central_differences(name):
  fn, shapes = CASES[name]
  rng = np.random.default_rng(sum(map(ord, name)))
  xs = [rng.standard_normal(s) for s in shapes]
  x = Tensor(xs[0], dtype=dtypes.float64, requires_grad=True)
  rest = [Tensor(v, dtype=dtypes.float64) for v in xs[1:]]
  fn(x, *rest).backward()
  eps, fd = 1e-6, np.zeros_like(xs[0])
  for i in np.ndindex(xs[0].shape):
    for sign in (1, -1):
      moved = xs[0].copy()
      moved[i] += sign * eps
      fd[i] += sign * fn(Tensor(moved, dtype=dtypes.float64), *rest).item() / (2 * eps)
  np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-5, atol=1e-6)
