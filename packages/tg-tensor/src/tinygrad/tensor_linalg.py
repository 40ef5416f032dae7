"""Linear algebra over the last two axes (leading axes are a batch): QR by Householder reflections and the SVD by one-sided Jacobi
rotations, both built from matmuls. Each step is realized, so a k-step factorisation is k small kernels, not one graph k deep.
Mixed into Tensor."""
from __future__ import annotations
from tinygrad.dtype import dtypes

def _check_matrix(x, what:str):
  if x.ndim < 2: raise ValueError(f"{what} needs a matrix (at least 2 dims), got shape {tuple(x.shape)}")
  return x if dtypes.is_float(x.dtype) else x.cast(dtypes.default_float)

class TensorLinalgMixin:
  def _eye_like(self, n:int):
    """the n x n identity in self's dtype and device"""
    return self._arange(n).reshape(n, 1).eq(self._arange(n).reshape(1, n)).cast(self.dtype)

  def qr(self):
    """(Q, R) with Q (..., m, m) orthogonal and R (..., m, n) upper triangular, Q @ R == self"""
    from tinygrad.tensor import Tensor
    a = _check_matrix(self, "qr")
    m, n = a.shape[-2:]
    q, r = a._eye_like(m).expand(*a.shape[:-2], m, m), a
    row, col = a._arange(m).reshape(m, 1), a._arange(n).reshape(n, 1)
    for k in range(min(m - 1, n)):
      # step k is a kernel input, not a constant, so every step runs the same compiled kernels
      kk = Tensor([k], device=a.device)
      # the reflection I - 2vv^T/(v^Tv) that zeroes column k below the diagonal; alpha's sign avoids cancellation in v[k]
      x = (row >= kk).where(r @ col.eq(kk).cast(a.dtype), 0)
      xk = (x * row.eq(kk)).sum(-2, keepdim=True)
      alpha = (xk >= 0).where(-1.0, 1.0) * (x * x).sum(-2, keepdim=True).sqrt()
      v = row.eq(kk).where(x - alpha, x)
      vv = (v * v).sum(-2, keepdim=True)
      # a column that is already zero below the diagonal needs no reflection; each result is materialized (contiguous) so the next step
      # reads it instead of recomputing it
      w = (vv > 0).where(v * (2 / vv).sqrt(), 0).contiguous()
      r = (r - w @ (w.transpose(-1, -2) @ r)).contiguous()
      q = (q - (q @ w) @ w.transpose(-1, -2)).contiguous()
    return q, r.triu()

  def newton_schulz(self, steps:int, params:tuple, eps:float=1e-7):
    """the Newton-Schulz iteration X <- aX + (bA + cA^2)X, A = XX^T, from self scaled to Frobenius norm 1 (params = (a, b, c); any
    number of coefficients p is the odd polynomial sum p[i] A^i X): it drives the singular values towards 1, an approximate
    orthogonalisation (Muon's)"""
    if not params: raise ValueError("newton_schulz needs at least one coefficient of its odd polynomial")
    x = _check_matrix(self, "newton_schulz")
    tall = x.shape[-2] > x.shape[-1]
    if tall: x = x.transpose(-1, -2)  # iterate on the smaller Gram matrix
    x = x / ((x * x).sum((-2, -1), keepdim=True).sqrt() + eps)
    for _ in range(steps):
      g = (x @ x.transpose(-1, -2)).contiguous()
      if len(params) == 3: x = (params[0] * x + (params[1] * g + params[2] * (g @ g)) @ x).contiguous()  # the next step reads x thrice
      else:  # Horner: p[0] X + A (p[1] X + A (p[2] X + ...))
        y = params[-1] * x
        for p in reversed(params[:-1]): y = p * x + g @ y
        x = y.contiguous()
    return x.transpose(-1, -2) if tall else x
  def svd(self, full_matrices:bool=True):
    """(U, S, Vh) with self == U @ diag(S) @ Vh, S descending: one-sided Jacobi on the columns, pairs rotated in parallel rounds"""
    a = _check_matrix(self, "svd")
    if a.shape[-2] < a.shape[-1]:  # wide: the SVD of the transpose, with U and V swapped
      u, s, vh = a.transpose(-1, -2).svd(full_matrices)
      return vh.transpose(-1, -2), s, u.transpose(-1, -2)
    m, n = a.shape[-2:]
    batch = tuple(a.shape[:-2])
    u, v = a.contiguous().realize(), a._eye_like(n).expand(*batch, n, n).contiguous().realize()
    eps = 1e-7 if a.dtype.itemsize <= 4 else 1e-14
    rounds = [_pair_masks(u, p, q, n) for p, q in _rounds(n)]
    step = _jacobi_steps.setdefault((u.shape, u.dtype, u.device), _jitted_round())
    for _ in range(60):  # sweeps; Jacobi converges quadratically, a handful is usual
      if max([step(u, v, ep, eq).item() for ep, eq in rounds], default=0.0) <= eps: break
    norms = (u * u).sum(-2).sqrt()  # (..., n): the singular values, in no order yet
    order = norms.argsort(-1, descending=True)
    s = norms.gather(-1, order)
    u = u.gather(-1, order.unsqueeze(-2).expand(*batch, m, n))
    vh = v.gather(-1, order.unsqueeze(-2).expand(*batch, n, n)).transpose(-1, -2)
    u = (s.unsqueeze(-2) > 0).where(u / s.unsqueeze(-2), 0)
    # orthonormal U even where S is 0, and its completion to m x m: Q of U's QR, each column's sign matched to U's
    q, r = u.qr()
    sign = (r.diagonal(0, -2, -1) >= 0).where(1.0, -1.0).cast(q.dtype)
    if not full_matrices: return q[..., :n] * sign.unsqueeze(-2), s, vh
    return q * sign.pad(((0, 0),)*len(batch) + ((0, m - n),), value=1.0).unsqueeze(-2), s, vh

def _rounds(n:int) -> list[tuple[list[int], list[int]]]:
  """a round-robin schedule: n-1 rounds (n even) of n/2 disjoint column pairs, every pair exactly once per sweep"""
  players = list(range(n)) + ([-1] if n % 2 else [])
  k, out = len(players), []
  for _ in range(k - 1):
    pairs = [(players[i], players[k - 1 - i]) for i in range(k // 2) if -1 not in (players[i], players[k - 1 - i])]
    out.append(([min(x) for x in pairs], [max(x) for x in pairs]))
    players = [players[0], players[-1]] + players[1:-1]
  return out

def _pair_masks(u, ps:list[int], qs:list[int], n:int):
  """(n, pairs) one-hot matrices of the first and second column of each pair, in u's dtype"""
  from tinygrad.tensor import Tensor
  return tuple(u._arange(n).reshape(n, 1).eq(Tensor(x, device=u.device).reshape(1, -1)).cast(u.dtype).realize() for x in (ps, qs))

def _jacobi_round(u, v, ep, eq):
  """rotate each pair of columns of u (and of v alike) so they become orthogonal, in place; returns the largest |cos| between a
  pair's columns before the rotation (how far from converged)"""
  up, uq = u @ ep, u @ eq
  alpha, beta, gamma = (up * up).sum(-2), (uq * uq).sum(-2), (up * uq).sum(-2)
  off = ((alpha * beta) > 0).where(gamma.abs() / (alpha * beta).sqrt(), 0).max()
  # the angle that zeroes gamma: t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2)), zeta = (beta - alpha) / (2 gamma)
  zeta = (beta - alpha) / (2 * gamma)
  t = (gamma.abs() > 0).where((zeta >= 0).where(1.0, -1.0) / (zeta.abs() + (1 + zeta * zeta).sqrt()), 0)
  c = (1 / (1 + t * t).sqrt()).unsqueeze(-2)
  s = c * t.unsqueeze(-2)
  keep = 1 - ep.sum(-1) - eq.sum(-1)  # columns in no pair this round (n odd) stay
  # column p becomes c*p - s*q and column q becomes s*p + c*q
  rot = keep.diag() + (ep * c) @ ep.T + (eq * c) @ eq.T + (ep * s) @ eq.T - (eq * s) @ ep.T
  u._assign(u @ rot, value_private=True)
  v._assign(v @ rot, value_private=True)
  return off.realize()

# one compiled round per (shape, dtype, device): a replay launches its kernels without scheduling them again
_jacobi_steps: dict = {}
def _jitted_round():
  from tinygrad.engine.jit import TinyJit
  return TinyJit(_jacobi_round)
