"""Differential test of the public Tensor / nn API: runs the same small programs under tg and under another tinygrad (upstream 0.14)
in subprocesses and compares results, shapes, dtypes and whether an error was raised.

  python bench/api_diff.py                               # tg (this interpreter) vs /tmp/upvenv/bin/python (DEV=CPU)
  python bench/api_diff.py --other /path/python -k pad,pool   # only cases whose name contains 'pad' or 'pool'
  python bench/api_diff.py --run out.json                # internal: run every case in this interpreter, write JSON

Differences that stay (tg's deliberate choices, upstream's bugs) are listed in KNOWN with the reason and reported apart.

Each case is a function of (Tensor, nn, dtypes, rng) returning a Tensor or a list/tuple of Tensors (or python numbers). The inputs
come from a numpy generator seeded per case, so both sides see the same values."""
import json, os, subprocess, sys, tempfile, traceback
import numpy as np

CASES = {}
def case(fn):
  CASES[fn.__name__] = fn
  return fn

def r(rng, *shape): return rng.standard_normal(shape).astype(np.float32)

# ---- indexing / setitem
@case
def idx_basic(T, nn, dt, rng): x = T(r(rng, 4, 5, 6)); return [x[1], x[-1, 2:], x[:, None, ::2], x[..., 1], x[1:3, ..., None], x[::-1], x[:, ::-2,
        1::3]]
@case
def idx_tensor(T, nn, dt, rng):
  x = T(r(rng, 5, 6)); i = T(np.array([0, 4, -1, 2], np.int32))
  return [x[i], x[:, i], x[i, i], x[T(np.array([[1, 2], [3, 0]], np.int32))], x[1:, i]]
@case
def idx_list(T, nn, dt, rng): x = T(r(rng, 5, 6)); return [x[[0, 2]], x[[1, 3], [2, 4]], x[[-1]]]
@case
def idx_bool_mask_where(T, nn, dt, rng): x = T(r(rng, 5, 6)); return [(x > 0).where(x, 0), x * (x < 0)]
@case
def idx_out_of_range(T, nn, dt, rng): x = T(r(rng, 5, 6)); return x[7]
@case
def idx_too_many(T, nn, dt, rng): x = T(r(rng, 5, 6)); return x[1, 2, 3]
@case
def setitem_slice(T, nn, dt, rng):
  x = T(r(rng, 4, 5)).contiguous(); x[1:3, ::2] = 7.0; x[0] = T(np.arange(5, dtype=np.float32)); return x
@case
def setitem_tensor_idx(T, nn, dt, rng):
  x = T.zeros(6).contiguous(); x[T([1, 3])] = T([5.0, 6.0]); return x
@case
def setitem_neg_step(T, nn, dt, rng):
  x = T.zeros(6).contiguous(); x[::-2] = T([1.0, 2.0, 3.0]); return x
@case
def setitem_int_scalar(T, nn, dt, rng):
  x = T.zeros(3, 3, dtype=dt.int32).contiguous(); x[1, 1] = 5; x[2] = 7; return x

# ---- gather / scatter
@case
def gather(T, nn, dt, rng):
  x = T(r(rng, 4, 5)); i = T(rng.integers(0, 4, (3, 5)).astype(np.int32)); j = T(rng.integers(0, 5, (4, 2)).astype(np.int32))
  return [x.gather(0, i), x.gather(1, j), x.gather(-1, j)]
@case
def scatter(T, nn, dt, rng):
  x = T.zeros(4, 5); i = T(np.array([[0, 1, 2, 3, 0]], np.int32)); s = T(r(rng, 1, 5))
  return [x.scatter(0, i, s), x.scatter(0, i, 2.0), T.ones(3, 4).scatter(1, T([[0], [2], [3]]), 9.0)]
@case
def scatter_reduce(T, nn, dt, rng):
  x = T(r(rng, 3, 4)); i = T(np.array([[0, 0, 1, 2], [1, 1, 0, 0]], np.int32)); s = T(r(rng, 2, 4))
  return [x.scatter_reduce(0, i, s, "sum"), x.scatter_reduce(0, i, s, "prod"), x.scatter_reduce(0, i, s, "amax"),
          x.scatter_reduce(0, i, s, "amin"), x.scatter_reduce(0, i, s, "mean"), x.scatter_reduce(0, i, s, "mean", include_self=False),
          x.scatter_reduce(0, i, s, "sum", include_self=False)]

# ---- reductions
@case
def reduce_sum_mean(T, nn, dt, rng):
  x = T(r(rng, 3, 4, 5))
  return [x.sum(), x.sum(1), x.sum((0, 2), keepdim=True), x.mean(-1), x.mean((0, 1)), x.sum(axis=None, keepdim=True)]
@case
def reduce_var_std(T, nn, dt, rng):
  x = T(r(rng, 3, 4, 5))
  return [x.var(), x.var(1), x.var(1, correction=0), x.std(-1, keepdim=True), x.std(correction=2), x.var_mean(1)[0], x.var_mean(1)[1],
          x.std_mean()[0]]
@case
def reduce_max_arg(T, nn, dt, rng):
  x = T(np.array([[1, 3, 3, 0], [5, 5, -1, 2], [0, 0, 0, 0]], np.float32))
  return [x.max(), x.max(1), x.min(0, keepdim=True), x.argmax(), x.argmax(1), x.argmin(0), x.argmax(1, keepdim=True), x.argmin()]
@case
def reduce_int(T, nn, dt, rng):
  x = T(rng.integers(-5, 5, (3, 4)).astype(np.int32)); b = T(rng.integers(0, 2, (3, 4)).astype(bool))
  return [x.sum(), x.mean(), x.max(1), x.prod(0), b.sum(), b.any(1), b.all(0), x.sum(dtype=dt.int64) if hasattr(x, "sum") else x]
@case
def reduce_logsumexp(T, nn, dt, rng): x = T(r(rng, 3, 4) * 30); return [x.logsumexp(1), x.logsumexp(0, keepdim=True), x.logsumexp()]
@case
def cumulative(T, nn, dt, rng):
  x = T(r(rng, 3, 5))
  return [x.cumsum(1), x.cumsum(0), x.cumprod(1), x.cummax(1)[0], x.cummax(1)[1], x.cumsum(), T([1, 2, 3]).cumsum(0)]
@case
def sort_topk(T, nn, dt, rng):
  x = T(r(rng, 3, 6))
  return [x.sort()[0], x.sort()[1], x.sort(0, descending=True)[0], x.topk(2)[0], x.topk(2)[1], x.topk(3, dim=0, largest=False)[0], x.argsort(1)]
@case
def einsum(T, nn, dt, rng):
  a, b, c = T(r(rng, 3, 4)), T(r(rng, 4, 5)), T(r(rng, 2, 3, 4))
  return [T.einsum("ij,jk->ik", a, b), T.einsum("ij->ji", a), T.einsum("ii->i", T(r(rng, 3, 3))), T.einsum("bij,jk->bik", c, b),
          T.einsum("ij,ij->", a, a), T.einsum("i,j->ij", T(r(rng, 3)), T(r(rng, 2))), T.einsum("...ij,jk->...ik", c, b), T.einsum("ij", a)]

# ---- pad / interpolate
@case
def pad_modes(T, nn, dt, rng):
  x = T(r(rng, 1, 2, 4, 5))
  return [x.pad((1, 2, 0, 1)), x.pad((1, 2, 2, 1), value=3.0), x.pad((2, 1, 1, 2), mode="reflect"), x.pad((2, 1, 1, 2), mode="replicate"),
          x.pad((2, 1, 1, 3), mode="circular"), x.pad(((0, 0), (0, 0), (1, 1), (2, 0))), x.pad((-1, 1, 0, -2))]
@case
def pad_reflect_too_big(T, nn, dt, rng): return T(r(rng, 1, 3)).pad((3, 0), mode="reflect")
@case
def interpolate(T, nn, dt, rng):
  x = T(r(rng, 1, 2, 4, 5))
  return [x.interpolate((8, 10)), x.interpolate((3, 7), mode="linear"), x.interpolate((3, 7), mode="linear", align_corners=True),
          x.interpolate((6, 3), mode="nearest"), x.interpolate((6, 3), mode="nearest-exact"), T(r(rng, 1, 1, 5)).interpolate((9,), mode="linear")]

# ---- conv / pool
@case
def conv2d_variants(T, nn, dt, rng):
  x = T(r(rng, 2, 4, 9, 8)); w = T(r(rng, 6, 2, 3, 3)); b = T(r(rng, 6)); w1 = T(r(rng, 5, 4, 3, 2))
  return [x.conv2d(w1), x.conv2d(w1, stride=2), x.conv2d(w1, padding=1, dilation=2), x.conv2d(w, b, groups=2, stride=(2, 1)),
          x.conv2d(w1, padding=(1, 0)), x.conv2d(w1, padding=(1, 2, 0, 1))]
@case
def conv2d_bad_channels(T, nn, dt, rng): return T(r(rng, 1, 3, 5, 5)).conv2d(T(r(rng, 2, 4, 3, 3)))
@case
def conv_transpose2d(T, nn, dt, rng):
  x = T(r(rng, 2, 4, 5, 6)); w = T(r(rng, 4, 3, 3, 3)); wg = T(r(rng, 4, 2, 3, 2))
  return [x.conv_transpose2d(w), x.conv_transpose2d(w, stride=2), x.conv_transpose2d(w, stride=2, padding=1, output_padding=1),
          x.conv_transpose2d(w, dilation=2), x.conv_transpose2d(wg, groups=2, stride=(2, 1)), x.conv_transpose2d(w, T(r(rng, 3)), padding=(1, 0))]
@case
def conv1d_3d(T, nn, dt, rng):
  return [T(r(rng, 2, 3, 10)).conv2d(T(r(rng, 4, 3, 3)), padding=1, stride=2), T(r(rng, 1, 2, 4, 5, 6)).conv2d(T(r(rng, 3, 2, 2, 3, 2)), padding=1)]
@case
def pools(T, nn, dt, rng):
  x = T(r(rng, 1, 2, 7, 8))
  return [x.max_pool2d(), x.max_pool2d(3, stride=2), x.max_pool2d(3, stride=2, ceil_mode=True), x.max_pool2d(3, 2, padding=1),
          x.avg_pool2d(), x.avg_pool2d(3, stride=2, padding=1), x.avg_pool2d(3, stride=2, padding=1, count_include_pad=False),
          x.avg_pool2d(3, stride=2, ceil_mode=True), x.avg_pool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
          x.max_pool2d(2, dilation=2), x.avg_pool2d((2, 3), stride=(1, 2))]
@case
def pool_return_indices(T, nn, dt, rng):
  x = T(r(rng, 1, 2, 6, 6)); v, i = x.max_pool2d(2, return_indices=True); return [v, i, T.max_unpool2d(v, i, 2)]

# ---- losses
@case
def losses(T, nn, dt, rng):
  x = T(r(rng, 5, 4)); y = T(np.array([0, 3, 1, 2, 1], np.int32)); yi = T(np.array([0, -1, 1, 2, -1], np.int32))
  p = T(rng.random((5, 4)).astype(np.float32)); t = T(rng.integers(0, 2, (5, 4)).astype(np.float32))
  return [x.cross_entropy(y), x.cross_entropy(y, label_smoothing=0.1), x.cross_entropy(yi, ignore_index=-1), x.cross_entropy(y, reduction="sum"),
          x.cross_entropy(y, reduction="none"), x.log_softmax().nll_loss(y), x.log_softmax().nll_loss(yi, ignore_index=-1),
          x.log_softmax().nll_loss(y, weight=T([1.0, 2, 3, 4])), p.binary_crossentropy(t), x.binary_crossentropy_logits(t),
          x.binary_crossentropy_logits(t, reduction="sum"), x.sparse_categorical_crossentropy(y), x.sparse_categorical_crossentropy(yi,
                  ignore_index=-1),
          x.cross_entropy(x.softmax())]
@case
def cross_entropy_nd(T, nn, dt, rng):
  x = T(r(rng, 2, 4, 3, 3)); y = T(rng.integers(0, 4, (2, 3, 3)).astype(np.int32)); return [x.cross_entropy(y), x.log_softmax(1).nll_loss(y)]

# ---- nn layers
def training(T):
  """tinygrad before 0.14 spells training mode `with Tensor.train():`, 0.14 `with Context(TRAINING=1):`"""
  if hasattr(T, "train"): return T.train()
  from tinygrad import Context
  return Context(TRAINING=1)
@case
def nn_linear_conv(T, nn, dt, rng):
  lin = nn.Linear(4, 3); lin.weight.assign(T(r(rng, 3, 4))); lin.bias.assign(T(r(rng, 3)))
  c = nn.Conv2d(2, 4, 3, stride=2, padding=1); c.weight.assign(T(r(rng, 4, 2, 3, 3))); c.bias.assign(T(r(rng, 4)))
  ct = nn.ConvTranspose2d(2, 3, 3, stride=2); ct.weight.assign(T(r(rng, 2, 3, 3, 3))); ct.bias.assign(T(r(rng, 3)))
  x = T(r(rng, 2, 2, 6, 6))
  return [lin(T(r(rng, 5, 4))), c(x), ct(x), lin.weight.shape == (3, 4), c.weight.shape, nn.Linear(4, 3, bias=False).bias is None]
@case
def nn_batchnorm(T, nn, dt, rng):
  bn = nn.BatchNorm2d(3); bn.weight.assign(T(r(rng, 3))); bn.bias.assign(T(r(rng, 3)))
  x = T(r(rng, 4, 3, 2, 2))
  with training(T): y = bn(x); y.realize()
  y2 = bn(x)
  return [y, y2, bn.running_mean, bn.running_var, bn.num_batches_tracked]
@case
def nn_batchnorm_1d(T, nn, dt, rng):
  bn = nn.BatchNorm(4, momentum=0.3); x = T(r(rng, 5, 4))
  with training(T): y = bn(x); y.realize()
  return [y, bn.running_mean, bn.running_var]
@case
def nn_norms(T, nn, dt, rng):
  x = T(r(rng, 2, 6, 3, 4))
  ln = nn.LayerNorm(4); ln.weight.assign(T(r(rng, 4))); ln.bias.assign(T(r(rng, 4)))
  ln2 = nn.LayerNorm((3, 4), elementwise_affine=False)
  gn = nn.GroupNorm(2, 6); gn.weight.assign(T(r(rng, 6))); gn.bias.assign(T(r(rng, 6)))
  rms = nn.RMSNorm(4); rms.weight.assign(T(r(rng, 4)))
  return [ln(x), ln2(x), gn(x), rms(x), x.layernorm(), x.layernorm(axis=(1, 2)), x.batchnorm(None, None, x.mean((0, 2, 3)), x.var((0, 2,
          3)).add(1e-5).rsqrt())]
@case
def nn_embedding(T, nn, dt, rng):
  e = nn.Embedding(10, 3); e.weight.assign(T(r(rng, 10, 3)))
  return [e(T(np.array([[1, 2], [9, 0]], np.int32))), e(T([5]))]

def _train(T, nn, rng, make_opt, steps=3):
  from tinygrad.nn.state import get_parameters
  lin = nn.Linear(4, 3); lin.weight.assign(T(r(rng, 3, 4))); lin.bias.assign(T(r(rng, 3)))
  opt = make_opt(get_parameters(lin)); x = T(r(rng, 6, 4)); y = T(np.array([0, 1, 2, 0, 1, 2], np.int32))
  with training(T):
    for _ in range(steps):
      opt.zero_grad(); loss = lin(x).cross_entropy(y); loss.backward(); opt.step()
  return [lin.weight, lin.bias]
@case
def optim_sgd(T, nn, dt, rng): return _train(T, nn, rng, lambda p: nn.optim.SGD(p, lr=0.1))
@case
def optim_sgd_momentum(T, nn, dt, rng): return _train(T, nn, rng, lambda p: nn.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01))
@case
def optim_sgd_nesterov(T, nn, dt, rng): return _train(T, nn, rng, lambda p: nn.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1))
@case
def optim_adam(T, nn, dt, rng): return _train(T, nn, rng, lambda p: nn.optim.Adam(p, lr=0.01))
@case
def optim_adamw(T, nn, dt, rng): return _train(T, nn, rng, lambda p: nn.optim.AdamW(p, lr=0.01, weight_decay=0.1))
@case
def optim_lamb(T, nn, dt, rng): return _train(T, nn, rng, lambda p: nn.optim.LAMB(p, lr=0.01, weight_decay=0.1))

# ---- dtypes / arithmetic
@case
def promotion(T, nn, dt, rng):
  i = T([1, -2, 3]); f = T([1.5, 2.5, -3.5]); b = T([True, False, True]); h = T([1.0, 2.0, 3.0], dtype=dt.half)
  u8 = T([1, 2, 250], dtype=dt.uint8); i8 = T([1, -2, 3], dtype=dt.int8)
  return [i + f, i + 1.5, i * 2, b + b, b + 1, b * 2.5, h + f, h + 1, u8 + 10, u8 + i8, i / 2, i // 2, b & b, i8 * 100,
          u8.float(), i ** 2, 2 ** i, f ** 2, i.float() ** -1, (i > 0) + (i < 0), T([1, 2]) == T([1.0, 2.5]), i.max() + 0.5, -b if False else ~b]
@case
def int_div_mod(T, nn, dt, rng):
  a = T([7, -7, 7, -7, 0, 5]); b = T([2, 2, -2, -2, 3, -3])
  return [a // b, a % b, a.div(b, rounding_mode="trunc"), a.div(b, rounding_mode="floor"), a / b, a // 3, a % 3, -7 // T([2]), 7 % T([-3]),
          T([7.5, -7.5]) % 2, T([7.5, -7.5]) // 2, T([-7.0, 7.0]).fmod(T([2.0, -2.0])) if hasattr(T, "fmod") else a]
@case
def where_masked_fill(T, nn, dt, rng):
  x = T(r(rng, 3, 4)); m = x > 0
  return [m.where(x, -1), m.where(1, 0), m.where(1.5, x), x.masked_fill(m, 0.0), T.where(m, x, x * 2) if False else m.where(x, x * 2),
          m.where(T([1, 2, 3, 4]), 0)]
@case
def clamp_misc(T, nn, dt, rng):
  x = T(r(rng, 3, 4))
  return [x.clamp(-0.5, 0.5), x.clip(0, None), x.clamp(max_=0.1), x.abs(), x.sign(), x.round(), x.floor(), x.ceil(), x.trunc(),
          T([0.5, 1.5, 2.5, -0.5, -1.5]).round(), x.lerp(T.ones(3, 4), 0.3), x.maximum(0), x.minimum(T(r(rng, 4))), T([-3, 4]).clamp(-1, 2)]

# ---- shape ops
@case
def stack_cat_split(T, nn, dt, rng):
  a, b = T(r(rng, 3, 4)), T(r(rng, 3, 4))
  return [T.stack(a, b), T.stack(a, b, dim=-1), a.cat(b, dim=1), T.cat(a, b), a.split(2), a.split([1, 3], dim=1), a.chunk(2, 1),
          a.chunk(3), a.chunk(5, 1)]  # no unbind: upstream has none
@case
def repeat_expand(T, nn, dt, rng):
  a = T(r(rng, 2, 3))
  return [a.repeat(2, 1), a.repeat(1, 2, 2), a.expand(4, 2, 3), a[:, None].expand(-1, 2, -1), a.repeat_interleave(2), a.repeat_interleave(2, dim=1),
          a.flip(0), a.flip((0, 1)), a.roll(1, 1), a.roll((1, -1), (0, 1)), a.permute(1, 0), a.T, a.transpose(), a.reshape(-1), a.view(3, -1),
          a.flatten(), a.unflatten(1, (3, 1)), a.squeeze(), a[None].squeeze(0), a.unsqueeze(-1), a.shrink(((0, 1),
                  None))]  # no movedim: upstream has none
@case
def tril_triu_onehot(T, nn, dt, rng):
  a = T(r(rng, 4, 5))
  return [a.tril(), a.triu(), a.tril(1), a.triu(-1), a.tril(-2), T([0, 3, 1]).one_hot(4), T([[1], [2]]).one_hot(3)]
@case
def creation(T, nn, dt, rng):
  return [T.arange(5), T.arange(2, 10, 3), T.arange(5.0), T.arange(0, 1, 0.25), T.arange(10, 0, -3), T.linspace(0, 1, 5), T.linspace(-2, 2, 1),
          T.eye(3), T.eye(2, 4), T.full((2, 3), 7), T.full((2,), 1.5), T.full((2,), True), T.zeros(2, 3, dtype=dt.int32), T.ones((2, 2)),
          T.rand(3, 4).shape, T.randn(2, 2, dtype=dt.half).dtype, T.randint(2, 3, low=0, high=5).dtype, T.empty(2, 3).shape,
          T.zeros_like(T([1, 2])), T.full_like(T([1.0, 2]), 3), T.ones_like(T([True])), T.arange(3, dtype=dt.float32), T([]).shape, T(3.5),
          T([[1, 2], [3, 4]], dtype=dt.int8), T(np.array([1, 2], np.int64)), T([1.5, 2]).dtype, T.uniform(2, 2, low=1, high=2).shape]
@case
def activations(T, nn, dt, rng):
  x = T(r(rng, 3, 4) * 3)
  return [x.relu(), x.sigmoid(), x.tanh(), x.gelu(), x.quick_gelu(), x.silu(), x.elu(), x.leaky_relu(0.2), x.softplus(), x.mish(), x.relu6(),
          x.hardswish(), x.hardsigmoid(), x.hardtanh(), x.softmax(), x.softmax(0), x.log_softmax(-1), x.logsigmoid(), x.celu(), x.selu(),
          x.softsign(),
          x.swish(), x.exp2(), x.square(), x.reciprocal(), x.abs().sqrt(), x.abs().rsqrt(), x.abs().log2(), x.sin(), x.cos(), x.tan(),
          x.erf() if hasattr(x, "erf") else x]
@case
def matmul_dot(T, nn, dt, rng):
  a, b = T(r(rng, 2, 3, 4)), T(r(rng, 4, 5)); v = T(r(rng, 4))
  return [a @ b, a.matmul(b), a @ v, v @ b, v.dot(v), a.linear(b, T(r(rng, 5))), T([1, 2]) @ T([[1, 2], [3, 4]]), T(r(rng, 3, 4)) @ T(r(rng, 3, 4)).T]
@case
def matmul_bad(T, nn, dt, rng): return T(r(rng, 3, 4)) @ T(r(rng, 3, 4))
@case
def autograd(T, nn, dt, rng):
  x = T(r(rng, 3, 4)); w = T(r(rng, 4, 2))
  return ((x @ w).relu().sum() + x.max() + x.std() + x.sort(1)[0][:, 0].sum()).gradient(x, w)
@case
def autograd_gather_index(T, nn, dt, rng):
  x = T(r(rng, 4, 5))
  return (x[T([1, 1, 3])].sum() + x.gather(1, T([[0], [1], [1], [4]])).sum() * 2 + x[:, ::-2].mean() + x.cumsum(1).logsumexp(1).sum()).gradient(x)
@case
def context_training(T, nn, dt, rng):
  from tinygrad import Context
  bn = nn.BatchNorm(3); x = T(r(rng, 4, 3))
  with Context(TRAINING=1): y = bn(x); y.realize()
  return [y, bn.running_mean]
@case
def safetensors_roundtrip(T, nn, dt, rng):
  from tinygrad.nn.state import safe_save, safe_load, torch_load
  d = {"a": T(r(rng, 2, 3)), "b": T([1, 2, 3], dtype=dt.int8), "c": T([1.5, 2], dtype=dt.half), "d": T([True, False]), "e": T([1, 2], dtype=dt.int64)}
  with tempfile.TemporaryDirectory() as tmp:
    fn = os.path.join(tmp, "x.safetensors"); safe_save(d, fn); back = safe_load(fn)
    return [back[k].to("CPU") if False else back[k] for k in sorted(back)] + [sorted(back)]
@case
def state_dict(T, nn, dt, rng):
  from tinygrad.nn.state import get_state_dict, load_state_dict, get_parameters
  class M:
    def __init__(self): self.l1, self.bn, self.layers = nn.Linear(2, 3), nn.BatchNorm(3), [nn.Linear(3, 1)]
  m = M(); sd = get_state_dict(m)
  m2 = M(); load_state_dict(m2, {k: T(rng.standard_normal(v.shape).astype(np.float32)) if v.dtype == dt.float32 else v for k, v in sd.items()})
  return [sorted(sd.keys()), len(get_parameters(m)), m2.l1.weight, m2.layers[0].bias]
@case
def state_dict_missing(T, nn, dt, rng):
  from tinygrad.nn.state import load_state_dict
  m = nn.Linear(2, 3); load_state_dict(m, {"weight": T.zeros(3, 2)}); return m.weight
@case
def state_dict_bad_shape(T, nn, dt, rng):
  from tinygrad.nn.state import load_state_dict
  m = nn.Linear(2, 3); load_state_dict(m, {"weight": T.zeros(2, 3), "bias": T.zeros(3)}); return m.weight


# ---- edge cases
@case
def idx_bool_tensor(T, nn, dt, rng): x = T(r(rng, 5)); return x[x > 0]
@case
def idx_misc(T, nn, dt, rng):
  x = T(r(rng, 3, 4)); s = T(2.5)
  return [x[None, ..., None], x[...], s[()], s[None], x[1][2], x[-3:-1, -1], x[5:], x[:, 10:20], x[::3, ::5], x[2:0], x[T(1)], x[T([True, False,
          True])] if False else x]
@case
def setitem_broadcast(T, nn, dt, rng):
  x = T.zeros(3, 4).contiguous(); x[:, 1] = T([1.0, 2, 3]); x[0, :] = T([9.0]); x[1:, 2:] = T([[4.0, 5]]); x[..., -1] = 6; return x
@case
def setitem_tensor_slice(T, nn, dt, rng):
  x = T.zeros(4, 3).contiguous(); x[T([0, 2]), 1:] = T([[1.0, 2], [3, 4]]); return x
@case
def setitem_dtype_cast(T, nn, dt, rng):
  x = T.zeros(3, dtype=dt.int32).contiguous(); x[1] = 2.7; return x
@case
def reduce_dtypes(T, nn, dt, rng):
  i8 = T([100, 100, 100], dtype=dt.int8); u8 = T([200, 200], dtype=dt.uint8); h = T([1.0, 2.0], dtype=dt.half); b = T([True, True])
  return [i8.sum(), u8.sum(), h.sum(), b.sum(), i8.mean(), b.mean(), i8.max(), b.max(), b.argmax(), T([1, 2, 3]).prod(), h.mean(), u8.cumsum(0),
          b.cumsum(0), i8.prod()]
@case
def reduce_empty(T, nn, dt, rng):
  e = T.zeros(0, 3)
  return [e.sum(), e.sum(0), e.mean(0), e.prod(0), e.sum(1).shape, e.cumsum(0).shape]
@case
def reduce_empty_max(T, nn, dt, rng): return T.zeros(0, 3).max(0)
@case
def var_small(T, nn, dt, rng):
  x = T([[1.0], [2.0]]); return [x.var(1), x.std(1), x.var(0, correction=2), x.var(0, correction=0)]
@case
def ties(T, nn, dt, rng):
  x = T([[3.0, 1, 3, 1, 2], [0, 0, 0, 0, 0]])
  return [x.argmax(1), x.argmin(1), x.sort(1)[1], x.sort(1, descending=True)[1], x.topk(2)[1], x.topk(2, largest=False)[1], x.cummax(1)[1]]
@case
def pow_edge(T, nn, dt, rng):
  x = T([-2.0, -1.5, 0.0, 0.0, 2.0, -0.0])
  return [x ** 2, x ** 3, x ** 0.5, x ** 0, x ** -1, T([0.0]) ** T([0.0]), 2.0 ** x, (-2.0) ** T([2.0, 3.0, 0.5]), T([2, -3]) ** 3, T([2,
          3]) ** T([-1, 0]),
          T([-8.0]) ** (1/3), x.pow(T([2.0, 3, 2, 0, -1, 3])), T([4]) ** 0.5]
@case
def int_edge(T, nn, dt, rng):
  a = T([5, -5, 0, 7])
  return [a << 2, a >> 1, T([-5]) >> 1, a & 3, a | 8, a ^ 1, ~a, a.bitwise_not() if hasattr(a, "bitwise_not") else a, T([True, False]) ^ True,
          T([-1.7, 2.9, 300.5]).cast(dt.int32), T([-1.0, 255.0]).cast(dt.uint8), T([1.5]).cast(dt.bool), T([0.0, -0.0, 0.1]).cast(dt.bool),
          T([1.0]).bitcast(dt.int32), T([3, -3]).abs(), T([-3]).sign(), a.float().reciprocal()]
@case
def int_div_zero(T, nn, dt, rng): return [T([1.0, -1.0, 0.0]) / 0, T([5, 6]) // T([2, 4]), T([1.0]) / T([0.0])]
@case
def nan_inf(T, nn, dt, rng):
  x = T([float("nan"), float("inf"), -float("inf"), 1.0])
  return [x.isnan(), x.isinf(), x.isinf(detect_negative=False), x.isfinite() if hasattr(x, "isfinite") else x, x.max(), x.relu(), x.sigmoid(),
          x.exp(),
          T([0.0, -1.0]).log(), T([-1.0]).sqrt(), x.clamp(-1, 1), x == x, x.softmax()]
@case
def logic(T, nn, dt, rng):
  a, b = T([True, False, True]), T([True, True, False])
  return [a.logical_not(), a & b, a | b, a ^ b, ~a, a == b, a != b, a < b, T([1, 2, 3]) != 2, T([1.0, 2.0]) >= T([1, 3]), a.where(a, b), (T([1,
          2]) == 1).any()]
@case
def shape_props(T, nn, dt, rng):
  x = T(r(rng, 2, 3, 4))
  return [x.ndim, x.numel(), x.size(), x.size(1), x.size(-1), x.element_size(), x.nbytes(), len(x), x.shape, x.dtype,
          x[0].tolist()[0][:2] == x.numpy()[0][0][:2].tolist(), T([3]).item(), T(2).item(), T([1, 2]).tolist()]
@case
def item_bad(T, nn, dt, rng): return T([1, 2]).item()
@case
def cat_mixed(T, nn, dt, rng):
  return [T([1, 2]).cat(T([1.5])), T.cat(T([1, 2]), T.zeros(0)), T([True]).cat(T([2])), T.stack(T([1])), T([[1, 2]]).cat(T([[3, 4]]), dim=-2)]
@case
def cat_bad_shape(T, nn, dt, rng): return T.zeros(2, 3).cat(T.zeros(2, 4))
@case
def split_bad(T, nn, dt, rng): return T.zeros(5).split([2, 2])
@case
def reshape_bad(T, nn, dt, rng): return T.zeros(2, 3).reshape(4, 2)
@case
def expand_bad(T, nn, dt, rng): return T.zeros(2, 3).expand(2, 4)
@case
def broadcast_bad(T, nn, dt, rng): return T.zeros(2, 3) + T.zeros(4)
@case
def einsum_more(T, nn, dt, rng):
  a, b = T(r(rng, 2, 3)), T(r(rng, 3, 3))
  return [T.einsum("ij, jk -> ik", a, b), T.einsum("ii", b), T.einsum("ij->", a), T.einsum("ij,kj->ik", a, T(r(rng, 4, 3))), T.einsum("bi,bi->b", a,
          a),
          T.einsum("ijk->kji", T(r(rng, 2, 3, 4))), T.einsum("i,i,i->", T([1.0, 2]), T([3.0, 4]), T([5.0, 6]))]
@case
def einsum_bad(T, nn, dt, rng): return T.einsum("ij,jk->ik", T.zeros(2, 3), T.zeros(4, 5))
@case
def nn_conv_more(T, nn, dt, rng):
  c1 = nn.Conv1d(2, 3, 3, padding=1); c1.weight.assign(T(r(rng, 3, 2, 3))); c1.bias.assign(T(r(rng, 3)))
  c2 = nn.Conv2d(2, 4, (3, 1), padding="same", bias=False); c2.weight.assign(T(r(rng, 4, 2, 3, 1)))
  c3 = nn.Conv2d(4, 4, 3, groups=4, dilation=2); c3.weight.assign(T(r(rng, 4, 1, 3, 3))); c3.bias.assign(T(r(rng, 4)))
  x = T(r(rng, 1, 2, 7, 7))
  return [c1(T(r(rng, 2, 2, 9))), c2(x), c3(c2(x)), c2.weight.shape, c3.bias.shape]
@case
def nn_layers_misc(T, nn, dt, rng):
  x = T(r(rng, 2, 3, 4))
  return [nn.LayerNorm(4).weight.numpy().sum() == 4 and x.shape, nn.BatchNorm(3).running_var, nn.GroupNorm(1, 3, affine=False)(x),
          nn.InstanceNorm(3)(x[..., None]) if hasattr(nn, "InstanceNorm") else x]
@case
def linear_init_shapes(T, nn, dt, rng):
  l = nn.Linear(5, 7); c = nn.Conv2d(3, 8, (3, 2)); e = nn.Embedding(11, 4); ct = nn.ConvTranspose2d(3, 8, 3, groups=1)
  return [l.weight.shape, l.bias.shape, c.weight.shape, c.bias.shape, e.weight.shape, ct.weight.shape, l.weight.dtype, e.weight.dtype,
          abs(l.weight.numpy()).max() <= 1 / 5 ** 0.5 + 1e-6, abs(l.bias.numpy()).max() <= 1 / 5 ** 0.5 + 1e-6]
@case
def dropout_eval(T, nn, dt, rng): x = T(r(rng, 3, 4)); return [x.dropout(0.5), x.dropout(0.0)]
@case
def losses_more(T, nn, dt, rng):
  x = T(r(rng, 4, 3)); y = T(np.array([0, 2, 1, 2], np.int32)); t = T(rng.integers(0, 2, (4, 3)).astype(np.float32))
  return [x.cross_entropy(y, label_smoothing=0.2, reduction="sum"), x.cross_entropy(x.softmax(1), label_smoothing=0.1), x.log_softmax().nll_loss(y,
          reduction="none"),
          x.log_softmax().nll_loss(y, reduction="sum"), x.binary_crossentropy_logits(t, pos_weight=T([1.0, 2, 3])) if True else x,
          x.sigmoid().binary_crossentropy(t, reduction="none"), x.sparse_categorical_crossentropy(y,
                  label_smoothing=0.1), x.log_softmax().nll_loss(y, weight=T([1.0, 2, 3]), reduction="sum")]
@case
def interpolate_more(T, nn, dt, rng):
  x = T(r(rng, 1, 1, 3, 4))
  return [x.interpolate((5, 9), mode="linear", align_corners=False), x.interpolate((2, 2), mode="linear"), x.interpolate((2, 2)), x.interpolate((7,
          5), mode="nearest-exact"),
          T(r(rng, 1, 1, 2, 3, 4)).interpolate((3, 4, 5), mode="linear")]
@case
def pool_more(T, nn, dt, rng):
  x = T(r(rng, 1, 1, 5, 5))
  y1, y2 = T(r(rng, 1, 2, 9)), T(r(rng, 1, 2, 9))
  return [lambda: x.max_pool2d(2, ceil_mode=True), lambda: x.avg_pool2d(2, ceil_mode=True), lambda: x.avg_pool2d(2, stride=3, ceil_mode=True),
          lambda: x.avg_pool2d(4, stride=2, padding=2, ceil_mode=True), lambda: x.max_pool2d((2, 3), stride=(1, 2), padding=(1, 1)),
          lambda: y1.max_pool2d((3,)), lambda: y2.avg_pool2d((3,), stride=2, padding=1), lambda: x.max_pool2d(3, stride=1, padding=1, dilation=1),
          lambda: x.avg_pool2d(3, stride=1, padding=1)]
@case
def pad_more(T, nn, dt, rng):
  x = T(r(rng, 2, 3, 4))
  return [x.pad((1, 1)), x.pad((0, 0, 0, 0, 1, 0)), x.pad((3, 3), mode="reflect"), x.pad((3, 3), mode="replicate"), x.pad((4, 4), mode="circular"),
          x.pad((None, (1, 2), None)), x.pad((1, -1, -1, 1), mode="constant", value=-2), T([1, 2, 3]).pad((1, 1), value=9), T([True]).pad((1, 0))]
@case
def pad_circular_too_big(T, nn, dt, rng): return T(r(rng, 1, 3)).pad((4, 0), mode="circular")
@case
def gather_bad(T, nn, dt, rng): return T.zeros(3, 4).gather(0, T.zeros(3, 5, dtype=dt.int32))
@case
def scatter_more(T, nn, dt, rng):
  x = T.zeros(3, 4, dtype=dt.int32); i = T([[0, 1], [2, 0]]); s = T([[1, 2], [3, 4]])
  return [x.scatter(1, i, s), x.scatter(0, i, s), T.zeros(2, 3).scatter(1, T([[2], [0]]), 4.0, reduce="add"), T.ones(2, 3).scatter(1, T([[2, 2], [0,
          0]]), 4.0, reduce="multiply"),
          x.scatter_reduce(1, i, s, "sum"), T.zeros(5).scatter_reduce(0, T([0, 0, 4]), T([1.0, 2, 3]), "amax", include_self=False)]
@case
def optim_sgd_classic(T, nn, dt, rng): return _train(T, nn, rng, lambda p: nn.optim.SGD(p, lr=0.05, momentum=0.5))
@case
def optim_adam_wd(T, nn, dt, rng): return _train(T, nn, rng, lambda p: nn.optim.Adam(p, lr=0.02, b1=0.8, b2=0.95, eps=1e-6), steps=4)
@case
def optim_lars_ol(T, nn, dt, rng):
  return _train(T, nn, rng, lambda p: nn.optim.OptimizerGroup(nn.optim.SGD(p[:1], lr=0.1), nn.optim.Adam(p[1:], lr=0.1)) if hasattr(nn.optim,
          "OptimizerGroup") else nn.optim.SGD(p))
@case
def arange_edge(T, nn, dt, rng):
  return [T.arange(0), T.arange(-3), T.arange(1, 2, 0.3), T.arange(5, 1), T.arange(0.5, 3), T.arange(3, dtype=dt.int64), T.linspace(0, 10, 4,
          dtype=dt.int32),
          T.linspace(1, 0, 3), T.eye(1), T.eye(0).shape, T.full((), 2), T.zeros(()), T.ones(0, 2).shape]
@case
def arange_zero_step(T, nn, dt, rng): return T.arange(0, 5, 0)
@case
def triu_more(T, nn, dt, rng):
  a = T(r(rng, 2, 3, 4))
  return [a.tril(), a.triu(2), a.tril(-5), T.ones(3, 3, dtype=dt.bool).tril(), T([[1, 2], [3, 4]]).triu()]
@case
def onehot_bad(T, nn, dt, rng): return T([0.0, 1.0]).one_hot(3)
@case
def softmax_dtype(T, nn, dt, rng):
  return [T([1, 2, 3]).softmax(), T([1.0, 2.0], dtype=dt.half).softmax(), T([1, 2]).sigmoid(), T([1, 4]).sqrt(), T([1, 2]).exp(), T([True]).float(),
          T([1, 2]).mean(), T([1, 2]).std()]
@case
def state_dict_bn_torch_style(T, nn, dt, rng):
  from tinygrad.nn.state import load_state_dict
  bn = nn.BatchNorm2d(2)
  load_state_dict(bn, {"weight": T([1.0, 2]), "bias": T([0.0, 1]), "running_mean": T([0.5, -0.5]), "running_var": T([2.0, 3]),
          "num_batches_tracked": T(7, dtype=dt.int64)})
  return [bn(T(r(rng, 1, 2, 2, 2))), bn.num_batches_tracked]
@case
def state_dict_dtype_mismatch(T, nn, dt, rng):
  from tinygrad.nn.state import load_state_dict
  m = nn.Linear(2, 1); load_state_dict(m, {"weight": T([[1.0, 2.0]], dtype=dt.half), "bias": T([0.5], dtype=dt.half)}); return [m.weight, m(T([[1.0,
          1.0]]))]
@case
def optim_group_order(T, nn, dt, rng): return _train(T, nn, rng, lambda p: nn.optim.OptimizerGroup(nn.optim.Adam(p[1:], lr=0.1), nn.optim.SGD(p[:1],
        lr=0.1)))
@case
def api_surface(T, nn, dt, rng):
  x = T(r(rng, 2, 3, 4)); q, k, v = T(r(rng, 1, 2, 4, 8)), T(r(rng, 1, 2, 5, 8)), T(r(rng, 1, 2, 5, 8)); m = T(rng.integers(0, 2, (4,
          5)).astype(bool))
  return [lambda: T.stack([x, x]), lambda: T.cat([x, x]), lambda: x.reshape((6, 4)), lambda: x.permute((2, 0, 1)), lambda: x.expand((2, 2, 3, 4)),
          lambda: x.sum(axis=(-1, -2)), lambda: x.max(axis=1, keepdim=True), lambda: x.std(1, True, 0), lambda: x.mean(axis=-1, keepdim=True),
          lambda: x.avg_pool2d(kernel_size=(2, 2)), lambda: x[None].max_pool2d(kernel_size=2, stride=1),
          lambda: x[None].conv2d(weight=T(r(rng, 5, 2, 2, 2)), bias=None, groups=1, stride=1, dilation=1, padding=0),
          lambda: q.scaled_dot_product_attention(k, v), lambda: q.scaled_dot_product_attention(q, q, is_causal=True),
          lambda: q.scaled_dot_product_attention(k, v, attn_mask=m), lambda: q.scaled_dot_product_attention(k, v, attn_mask=m.where(0.0, -1.0)),
          lambda: x.layernorm(axis=-1, eps=1e-3), lambda: x.sequential([lambda t: t + 1, lambda t: t * 2]), lambda: T.normal(2, 3, mean=1).shape,
          lambda: T.kaiming_uniform(4, 3).shape, lambda: T.glorot_uniform(2, 5).shape, lambda: x.rearrange("a b c -> c (a b)"),
          lambda: x.cumsum(-1), lambda: x.logcumsumexp(1), lambda: x.cummin(1)[0] if hasattr(x, "cummin") else x, lambda: x.any(), lambda: x.all(),
          lambda: (x > 0).any(1), lambda: x.half().sigmoid(), lambda: x.softmax(dtype=dt.half) if True else x, lambda: x.clip(T(r(rng, 4)), T(r(rng,
                  4)) + 5),
          lambda: x.gelu(), lambda: x.fmod(T([1.5])) if hasattr(x, "fmod") else x, lambda: x.ravel() if hasattr(x, "ravel") else x.flatten(),
          lambda: x.diagonal() if hasattr(x, "diagonal") else x, lambda: T(r(rng, 3, 3)).diag() if hasattr(T, "diag") else x, lambda: T([1.0, 2,
                  3]).diag(),
          lambda: T(r(rng, 3, 3)).trace() if hasattr(T, "trace") else x, lambda: T.meshgrid(T([1, 2]), T([3, 4, 5])) if hasattr(T, "meshgrid") else x,
          lambda: x.isclose(x + 1e-9), lambda: x.allclose(x) if hasattr(x,
                  "allclose") else x, lambda: x.contiguous().detach().clone(), lambda: x.long() if hasattr(x, "long") else x,
          lambda: x.int(), lambda: x.bool(), lambda: x.half(), lambda: x.double(), lambda: x.bfloat16().float(),
          lambda: x.asin() if False else x.clamp(-1, 1).asin(),
          lambda: x.clamp(-1, 1).acos(), lambda: x.atan(), lambda: x.sinh(), lambda: x.cosh(), lambda: x.asinh(), lambda: x.clamp(-0.9,
                  0.9).atanh(), lambda: (x.abs() + 1).acosh(),
          lambda: x.log1p() if hasattr(x, "log1p") else x, lambda: x.expm1() if hasattr(x,
                  "expm1") else x, lambda: x.cast(dt.float16).bitcast(dt.int16),
          lambda: T([3, 1, 2, 3, 3]).bincount() if hasattr(T, "bincount") else x, lambda: x.masked_select(x > 0) if hasattr(x,
                  "masked_select") else x,
          lambda: x.nonzero() if hasattr(x, "nonzero") else x, lambda: T([[1, 2], [3, 4]]).outer(T([1, 2])) if False else T([1, 2]).outer(T([3, 4,
                  5])) if hasattr(T, "outer") else x,
          lambda: x.argmax(-1,
                  keepdim=True), lambda: x.pow(2).mean().sqrt(), lambda: x.unsqueeze(-2).shape, lambda: x.square().sum(1).rsqrt(),
                  lambda: x.idiv(2) if False else (x * 10).int() // 3,
          lambda: x.polyN([1.0, 2.0, 3.0]), lambda: x.max(1)[0] if False else x.min(1), lambda: x.split(1, dim=0)[1], lambda: x.chunk(3,
                  dim=2)[-1], lambda: x.var(axis=(0, 2)),
          lambda: x.to("CPU").device == x.device or True, lambda: x.numel(), lambda: x.mean(dtype=dt.half) if False else x.cast(dt.half).mean(),
          lambda: x.cast(dt.half).sum().dtype,
          lambda: x.erf() if hasattr(x, "erf") else x, lambda: x.sort(descending=True)[0], lambda: x.std_mean(axis=0, correction=0)[1]]
@case
def creation_dtypes(T, nn, dt, rng):
  return [lambda: T(np.array([1.5, 2.0])), lambda: T(np.array([1, 2], np.int64)), lambda: T(np.array([1, 2], np.uint16)), lambda: T(np.array([True])),
          lambda: T([1, 2.5]), lambda: T([True, 2]), lambda: T([2**31]), lambda: T([2**40]), lambda: T([[1, 2], [3]]), lambda: T(np.float32(2.5)),
          lambda: T([1, 2], dtype="float32") if True else None, lambda: T([1.7], dtype=dt.int32), lambda: T([-1],
                  dtype=dt.uint8), lambda: T(np.zeros((2, 0))),
          lambda: T([[]]), lambda: T(np.array([1.5, 2.0], np.float16)), lambda: T(range(4)) if True else None, lambda: T((1,
                  2)), lambda: T(b"\x01\x02"),
          lambda: T([1.0, 2.0]).numpy().dtype.str, lambda: T(3).numpy(), lambda: T(np.arange(6).reshape(2, 3)[:, ::2])]
@case
def setitem_more(T, nn, dt, rng):
  def f1():
    x = T.arange(6).reshape(2, 3).contiguous(); x[x > 2] = 0; return x
  def f2():
    x = T.zeros(5).contiguous(); x[1:3] += 1; return x
  def f3():
    x = T.zeros(2, 3).contiguous(); x[:, T([0, 2])] = T([[1.0, 2], [3, 4]]); return x
  def f4():
    x = T.zeros(4); x[1] = 3; return x
  def f5():
    x = T.ones(3).contiguous(); y = x[1:]; y[0] = 5; return [x, y]
  def f6():
    x = T.zeros(3).contiguous(); x += 1; x *= 3; return x
  def f7():
    x = T.zeros(2, 2).contiguous(); x.assign(T([[1, 2], [3, 4]])); return x
  def f8():
    x = T.zeros(3).contiguous(); x[[0, 2]] = 1.0; return x
  def f9():
    x = T.zeros(3).contiguous(); x[T([0, 0])] = T([1.0, 2.0]); return x
  def f10():
    x = T.zeros(2, 3).contiguous(); x[0] = T([1, 2]); return x
  def f11():
    x = T.zeros(3).contiguous(); x[1] = T([1.0, 2.0]); return x
  def f12():
    x = T.zeros(2, 3).contiguous(); x[None, 1, ..., 1:] = 7; return x
  return [lambda: f() for f in (f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12)]
@case
def default_float_half(T, nn, dt, rng):
  old = dt.default_float; dt.default_float = dt.half
  try: return [T([1.5]).dtype, T.ones(2).dtype, T.arange(3.0).dtype, T([1, 2]).mean().dtype, (T([1]) / 2).dtype, T.rand(2).dtype,
          T([1]).float().dtype]
  finally: dt.default_float = old
@case
def index_select_misc(T, nn, dt, rng):
  x = T(r(rng, 4, 5)); i = T([[0, 1], [2, 3]])
  return [lambda: x[i], lambda: x[i, 1:3], lambda: x[..., i], lambda: x[i, i], lambda: x[T([0, 1]), :, None], lambda: x[:, None, T([1, 2])],
          lambda: x[T(2)],
          lambda: x[T([-1, -4])], lambda: x[T([4])], lambda: x[T([1.0])], lambda: x[T([0, 1]), T([0, 1, 2])], lambda: x[1, T([0,
                  4])], lambda: x[T([1, 2]), 0],
          lambda: x[1:3][T([0])], lambda: x[::-1, T([0, 1])], lambda: x[T([[True, False, True, False, True]] * 4)] if False else x[:, T([0])]]
@case
def grads(T, nn, dt, rng):
  x = T(r(rng, 1, 2, 6, 6)); w = T(r(rng, 4, 1, 3, 3)); t = T([[1.0, 3, 3], [2, 2, 0]]); v = T(r(rng, 2, 5))
  g = lambda f, *a: (lambda: f(*a).sum().gradient(*a) if False else (f(*a) * T(np.linspace(0.5, 1.5, f(*a).numel(),
          dtype=np.float32).reshape(f(*a).shape))).sum().gradient(*a))
  return [g(lambda a, b: a.conv2d(b, groups=2, stride=2, padding=1), x, w), g(lambda a, b: a.conv2d(b, groups=2, dilation=2), x, w),
          g(lambda a: a.max_pool2d(3, 2, padding=1), x), g(lambda a: a.avg_pool2d(3, 2, padding=1, count_include_pad=False), x),
          g(lambda a: a.max_pool2d(3, 2, ceil_mode=True), x), g(lambda a: a.interpolate((9, 4), mode="linear"), x), g(lambda a: a.interpolate((9,
                  4)), x),
          g(lambda a: a.pad((2, 1, 1, 2), mode="reflect"), x), g(lambda a: a.pad((2, 1, 1, 2), mode="replicate"), x), g(lambda a: a.pad((2, 1, 1,
                  3), mode="circular"), x),
          g(lambda a: a.max(), t), g(lambda a: a.max(1), t), g(lambda a: a.min(0), t), g(lambda a: a.cummax(1)[0], t), g(lambda a: a.sort(1)[0], v),
          g(lambda a: a.topk(2)[0], v), g(lambda a: a.cumsum(1), v), g(lambda a: a.cumprod(1), v), g(lambda a: a.logsumexp(1),
                  v), g(lambda a: a.std(1), v),
          g(lambda a: a.gather(1, T([[0, 0, 4], [1, 2, 2]])), v), g(lambda a, b: a.scatter(1, T([[0, 1], [2, 3]]), b), v, T(r(rng, 2, 2))),
          g(lambda a: a.scatter_reduce(1, T([[0, 0], [2, 2]]), T([[1.0, 2], [3, 4]]), "amax"), v), g(lambda a: (a > 0).where(a, a * 2), v),
          g(lambda a: a.abs().sqrt(), v), g(lambda a: a.relu(), T([0.0, 1, -1])), g(lambda a: a.clamp(-0.5, 0.5), T([-0.5, 0.5, 0.0, 1.0])),
          g(lambda a: a.maximum(T([1.0, 1, 1])), T([1.0, 2, 0])), g(lambda a: a.abs(), T([0.0, -1, 1])), g(lambda a: a.sign(),
                  v), g(lambda a: a ** 2.5, v.abs()),
          g(lambda a: a.norm() if hasattr(a, "norm") else a.square().sum().sqrt(), v), g(lambda a: a.var(), v), g(lambda a: a[T([1, 1, 0])], v),
          g(lambda a: a.softmax(1).log(), v), g(lambda a: a.layernorm(), v), g(lambda a: a.cross_entropy(T([1, 3]), label_smoothing=0.2), v),
          g(lambda a: a.sigmoid().binary_crossentropy(T(r(rng, 2, 5)).sigmoid()), v), g(lambda a, b: a.conv_transpose2d(b, stride=2, padding=1,
                  output_padding=1), x, T(r(rng, 2, 2, 3, 3))),
          g(lambda a: a.einsum("ij,kj->ik", a, a) if False else T.einsum("ij,kj->ik", a, a), v), g(lambda a: a.repeat(2, 3),
                  v), g(lambda a: a.flip(1)[:, ::2], v)]

# ---- whole programs in tinygrad 0.14's idiom (model class, get_parameters, optimizer, Context(TRAINING=1), a few seeded steps)
def _init(T, model, rng):
  """every weight/bias of a model set from the case's generator, so both sides start from the same values"""
  from tinygrad.nn.state import get_state_dict
  for k, v in sorted(get_state_dict(model).items()):
    if k.endswith(("weight", "bias")): v.assign(T(rng.standard_normal(v.shape).astype(np.float32) * 0.5))
  return model
def _steps(T, model, opt, x, y, n=4, loss_fn=None, read="before"):
  """n steps; read: when the loss is read -- "before" opt.step(), "schedule" (`loss.realize(*opt.schedule_step())`, 0.14's idiom),
  "discard" (before `opt.schedule_step()`, whose writes nobody realizes: they land when the parameters are next used) or "after"
  opt.step() (see KNOWN)"""
  from tinygrad import Context
  losses = []
  with Context(TRAINING=1):
    for _ in range(n):
      opt.zero_grad()
      loss = loss_fn(model(x), y) if loss_fn else model(x).sparse_categorical_crossentropy(y)
      loss.backward()
      if read in ("before", "discard"): losses.append(loss.item())
      if read == "schedule": loss.realize(*opt.schedule_step())
      elif read == "discard": opt.schedule_step()
      else: opt.step()
      if read in ("schedule", "after"): losses.append(loss.item())
  return losses
class _MLP:
  def __init__(self, nn):
    self.l1, self.ln, self.l2 = nn.Linear(6, 16), nn.LayerNorm(16), nn.Linear(16, 4)
  def __call__(self, x): return self.l2(self.ln(self.l1(x)).relu())
class _CNN:
  def __init__(self, nn):
    self.c1, self.bn, self.c2, self.fc = nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.Conv2d(4, 8, 3, stride=2), nn.Linear(8 * 3 * 3, 3)
  def __call__(self, x): return self.fc(self.c2(self.bn(self.c1(x)).relu()).relu().flatten(1))
class _LM:
  def __init__(self, nn): self.emb, self.ln, self.out = nn.Embedding(11, 8), nn.LayerNorm(8), nn.Linear(8, 11, bias=False)
  def __call__(self, tok): return self.out(self.ln(self.emb(tok)).gelu())
def _prog(T, nn, rng, make_model, make_opt, x, y, **kw):
  from tinygrad.nn.state import get_parameters
  m = _init(T, make_model(nn), rng); opt = make_opt(get_parameters(m))
  return [_steps(T, m, opt, x, y, **kw)] + [p for p in get_parameters(m)]
@case
def prog_mlp_adam(T, nn, dt, rng):
  return _prog(T, nn, rng, _MLP, lambda p: nn.optim.Adam(p, lr=0.01), T(r(rng, 8, 6)), T(rng.integers(0, 4, 8).astype(np.int32)))
@case
def prog_mlp_adam_loss_after_step(T, nn, dt, rng):
  return _prog(T, nn, rng, _MLP, lambda p: nn.optim.Adam(p, lr=0.01), T(r(rng, 8, 6)), T(rng.integers(0, 4, 8).astype(np.int32)), read="after")
@case
def prog_mlp_adam_schedule_step(T, nn, dt, rng):
  return _prog(T, nn, rng, _MLP, lambda p: nn.optim.Adam(p, lr=0.01), T(r(rng, 8, 6)), T(rng.integers(0, 4, 8).astype(np.int32)), read="schedule")
@case
def prog_mlp_adam_schedule_step_discarded(T, nn, dt, rng):
  return _prog(T, nn, rng, _MLP, lambda p: nn.optim.Adam(p, lr=0.01), T(r(rng, 8, 6)), T(rng.integers(0, 4, 8).astype(np.int32)), read="discard")
@case
def prog_mlp_sgd_schedule_step_discarded(T, nn, dt, rng):
  return _prog(T, nn, rng, _MLP, lambda p: nn.optim.SGD(p, lr=0.05, momentum=0.9), T(r(rng, 8, 6)), T(rng.integers(0, 4, 8).astype(np.int32)),
               read="discard")
@case
def grad_creation_constants(T, nn, dt, rng):
  # backward() with no requires_grad anywhere (0.14 has none): Tensor.full/zeros/ones/*_like leaves get gradients, arange/linspace none
  x = T(r(rng, 3))
  a, b, z, f, o = T.ones(3), T.ones(3), T.zeros(3), T.full((3,), 2.0), x.ones_like()
  c, ar = a * 3, T.arange(3.0)
  (a * x * 2 + b * 5 + a * 1.0 + z * x + f * f + o * c + ar * x).sum().backward()
  return [a.grad, b.grad, z.grad, f.grad, o.grad, c.grad, x.grad, ar.grad is None]
@case
def prog_mlp_adamw(T, nn, dt, rng):
  return _prog(T, nn, rng, _MLP, lambda p: nn.optim.AdamW(p, lr=0.01, b1=0.85, weight_decay=0.05), T(r(rng, 8, 6)), T(rng.integers(0, 4,
          8).astype(np.int32)))
@case
def prog_mlp_lamb(T, nn, dt, rng):
  return _prog(T, nn, rng, _MLP, lambda p: nn.optim.LAMB(p, lr=0.01, weight_decay=0.01), T(r(rng, 8, 6)), T(rng.integers(0, 4, 8).astype(np.int32)))
@case
def prog_mlp_sgd_mse(T, nn, dt, rng):
  return _prog(T, nn, rng, _MLP, lambda p: nn.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True), T(r(rng, 8, 6)), T(r(rng, 8, 4)),
               loss_fn=lambda out, y: (out - y).square().mean())
@case
def prog_cnn_bn_sgd(T, nn, dt, rng):
  from tinygrad.nn.state import get_parameters
  m = _init(T, _CNN(nn), rng); opt = nn.optim.SGD(get_parameters(m), lr=0.02, momentum=0.9, weight_decay=1e-4)
  x, y = T(r(rng, 4, 1, 7, 7)), T(rng.integers(0, 3, 4).astype(np.int32))
  losses = _steps(T, m, opt, x, y, n=3, loss_fn=lambda out, y: out.cross_entropy(y))
  return [losses, m.bn.running_mean, m.bn.running_var, m.bn.num_batches_tracked, m(x), m.c1.weight, m.fc.bias]
@case
def prog_lm_embedding(T, nn, dt, rng):
  tok = T(rng.integers(0, 11, (3, 5)).astype(np.int32)); tgt = T(rng.integers(0, 11, (3, 5)).astype(np.int32))
  return _prog(T, nn, rng, _LM, lambda p: nn.optim.AdamW(p, lr=0.02), tok, tgt,
               loss_fn=lambda out, y: out.sparse_categorical_crossentropy(y, label_smoothing=0.1))
def _jit_train(T, nn, rng, body):
  from tinygrad import TinyJit, Context
  from tinygrad.nn.state import get_parameters
  m = _init(T, _MLP(nn), rng); opt = nn.optim.Adam(get_parameters(m), lr=0.01)
  X, Y = T(r(rng, 5, 8, 6)), T(rng.integers(0, 4, (5, 8)).astype(np.int32))
  step = TinyJit(Context(TRAINING=1)(lambda x, y: body(m, opt, x, y)))
  losses = [step(X[i].contiguous().realize(), Y[i].contiguous().realize()).item() for i in range(5)]
  return [losses, m.l1.weight, m.l2.bias]
@case
def prog_jit_train_schedule_step(T, nn, dt, rng):
  def body(m, opt, x, y):
    opt.zero_grad(); loss = m(x).sparse_categorical_crossentropy(y).backward(); return loss.realize(*opt.schedule_step())
  return _jit_train(T, nn, rng, body)
@case
def prog_jit_train_step(T, nn, dt, rng):
  def body(m, opt, x, y):
    opt.zero_grad(); loss = m(x).sparse_categorical_crossentropy(y).backward(); opt.step(); return loss.realize()
  return _jit_train(T, nn, rng, body)
@case
def prog_jit_eval(T, nn, dt, rng):
  from tinygrad import TinyJit
  m = _init(T, _MLP(nn), rng)
  jf = TinyJit(lambda x: m(x).softmax().realize())
  xs = [T(r(rng, 4, 6)) for _ in range(4)]
  return [jf(x) for x in xs] + [m(xs[-1]).softmax()]
@case
def prog_train_eval_switch(T, nn, dt, rng):
  """a BatchNorm model trained a step, then evaluated: eval uses the running statistics"""
  from tinygrad import Context
  from tinygrad.nn.state import get_parameters
  bn, lin = nn.BatchNorm(4), nn.Linear(4, 2); _init(T, lin, rng)
  opt = nn.optim.SGD(get_parameters([bn, lin]), lr=0.1)
  x = T(r(rng, 6, 4) * 2 + 1)
  with Context(TRAINING=1):
    for _ in range(2): opt.zero_grad(); (l := lin(bn(x)).square().mean()).backward(); l.realize(); opt.step()
  return [l, lin(bn(x)), bn.running_mean, bn.running_var, bn.weight, _training_flag(T)]
def _training_flag(T):
  from tinygrad import Context
  from tinygrad.helpers import TRAINING
  with Context(TRAINING=1): inside = bool(TRAINING)
  return [inside, bool(TRAINING)]
@case
def prog_randint_batches(T, nn, dt, rng):
  """the 0.14 mnist idiom: random batches by Tensor.randint indices into a dataset tensor"""
  X = T(r(rng, 20, 3)); Y = T(np.arange(20, dtype=np.int32))
  T.manual_seed(7); s1 = T.randint(6, high=20); b1 = X[s1]; y1 = Y[s1]
  T.manual_seed(7); s2 = T.randint(6, high=20)
  n = s1.numpy()
  return [s1.shape, s1.dtype, bool((n >= 0).all() and (n < 20).all()), (s1 == s2).all().item(), b1.shape, (y1 == s1).all().item(),
          T.randint(2, 3, low=5, high=7).shape, bool(((v := T.randint(50, low=-3, high=2).numpy()) >= -3).all() and (v < 2).all())]
@case
def prog_manual_seed(T, nn, dt, rng):
  T.manual_seed(123); a = [T.rand(4, 3).numpy(), T.randn(5).numpy(), T.uniform(3, low=2, high=4).numpy()]
  T.manual_seed(123); b = [T.rand(4, 3).numpy(), T.randn(5).numpy(), T.uniform(3, low=2, high=4).numpy()]
  T.manual_seed(124); c = T.rand(4, 3).numpy()
  return [all((x == y).all() for x, y in zip(a, b)), bool((a[0] != c).any()), bool((a[0] >= 0).all() and (a[0] < 1).all()),
          bool((a[2] >= 2).all() and (a[2] < 4).all()), T.rand(2, 2).dtype, T.randn(3, dtype=dt.half).dtype, T.rand(0).shape,
          T.randperm(6).sort()[0], T.randn_like(T.zeros(2, 3)).shape, T.rand_like(T.zeros(2, dtype=dt.half)).dtype]
@case
def prog_dropout_train(T, nn, dt, rng):
  from tinygrad import Context
  x = T.ones(200, 50)
  with Context(TRAINING=1): y = x.dropout(0.25).numpy()
  kept = (y != 0).mean()
  return [bool(0.7 < kept < 0.8), bool(np.allclose(y[y != 0], 1 / 0.75)), x.dropout(0.25)]
@case
def prog_realize_many(T, nn, dt, rng):
  a, b = T(r(rng, 3, 4)), T(r(rng, 4))
  c, d, e = a + b, (a * b).sum(1), a.max()
  out = c.realize(d, e)
  return [out is c, c, d, e]
@case
def prog_realize_static(T, nn, dt, rng):
  a = T(r(rng, 3)); x, y = a + 1, a * 2
  T.realize(x, y)
  return [x, y]
@case
def prog_state_roundtrip(T, nn, dt, rng):
  from tinygrad.nn.state import get_state_dict, load_state_dict, safe_save, safe_load, get_parameters
  m = _init(T, _CNN(nn), rng); x = T(r(rng, 2, 1, 7, 7))
  with tempfile.TemporaryDirectory() as tmp:
    fn = os.path.join(tmp, "m.safetensors"); safe_save(get_state_dict(m), fn)
    m2 = _CNN(nn); load_state_dict(m2, safe_load(fn))
    return [sorted(get_state_dict(m2)), m2(x), m(x), len(get_parameters(m2)), m2.bn.num_batches_tracked.dtype]
@case
def prog_state_strict(T, nn, dt, rng):
  from tinygrad.nn.state import get_state_dict, load_state_dict
  m = _MLP(nn); sd = get_state_dict(m); sd.pop("l2.bias")
  m2 = _MLP(nn); ret = load_state_dict(m2, sd, strict=False)
  return [sorted(sd), m2.l1.weight.shape, len(ret), ret[0].shape]
@case
def prog_state_extra_keys(T, nn, dt, rng):
  """a checkpoint with more than the model holds (optimizer state, a head the model lacks) loads with strict=True"""
  from tinygrad.nn.state import load_state_dict
  lin = nn.Linear(2, 2)
  load_state_dict(lin, {"weight": T([[1.0, 2], [3, 4]]), "bias": T([0.5, 0.5]), "head.weight": T.zeros(3)}, strict=True)
  return lin(T([[1.0, 1.0]]))
@case
def prog_state_scalar_vs_1(T, nn, dt, rng):
  """a () value loads into a (1,) tensor and back (torch checkpoints store counters as 0-d)"""
  from tinygrad.nn.state import load_state_dict
  class M:
    def __init__(self): self.a, self.b = T.zeros(1).contiguous().realize(), T.zeros(()).contiguous().realize()
  m = M(); load_state_dict(m, {"a": T(3.0), "b": T([4.0])}, realize=False); return [m.a, m.b]
@case
def prog_torch_load(T, nn, dt, rng):
  sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "tensor", "state"))
  from torch_writer import FakeStorage, FakeTensor, zip_checkpoint
  from tinygrad.nn.state import torch_load, load_state_dict
  w = FakeStorage("FloatStorage", "f", [float(v) for v in r(rng, 12)]); b = FakeStorage("FloatStorage", "f", [0.5, -0.5, 1.0])
  with tempfile.TemporaryDirectory() as tmp:
    fn = os.path.join(tmp, "m.pth")
    with open(fn, "wb") as f: f.write(zip_checkpoint({"weight": FakeTensor(w, 0, (3, 4), (4, 1)), "bias": FakeTensor(b, 0, (3,), (1,))}))
    sd = torch_load(fn); lin = nn.Linear(4, 3); load_state_dict(lin, sd)
    return [sorted(sd), sd["weight"], lin(T.ones(1, 4))]
@case
def prog_global_counters(T, nn, dt, rng):
  from tinygrad import GlobalCounters
  GlobalCounters.reset(); z = [GlobalCounters.kernel_count, GlobalCounters.global_ops, GlobalCounters.global_mem]
  out = (T(r(rng, 16, 16)) @ T(r(rng, 16, 16))).realize()
  from tinygrad import Device
  return [out, z, GlobalCounters.kernel_count > 0, GlobalCounters.global_ops > 0, GlobalCounters.global_mem > 0, type(GlobalCounters.time_sum_s).__name__,
          type(GlobalCounters.mem_used).__name__, GlobalCounters.mem_used_per_device[Device.DEFAULT] > 0]
@case
def prog_context_getenv(T, nn, dt, rng):
  from tinygrad import Context, getenv, Device
  from tinygrad.helpers import DEBUG
  os.environ["TG_API_DIFF_X"] = "5"
  with Context(DEBUG=0): inner = DEBUG.value
  return [getenv("TG_API_DIFF_X"), getenv("TG_API_DIFF_X", 1), getenv("TG_API_DIFF_NOPE", 3), getenv("TG_API_DIFF_NOPE", "s"), inner,
          Device.DEFAULT, T([1]).device, T([1]).to(Device.DEFAULT).device, isinstance(Device.DEFAULT, str)]
@case
def prog_dtypes_helpers(T, nn, dt, rng):
  from tinygrad.dtype import DType
  return [dt.is_float(dt.half), dt.is_float(dt.int32), dt.is_int(dt.uint8), dt.is_unsigned(dt.uint8), dt.is_unsigned(dt.int8), dt.is_bool(dt.bool),
          dt.float32.itemsize, dt.half.itemsize, dt.int64.itemsize, dt.float32 == dt.float, dt.int32 == dt.int, dt.default_float, dt.default_int,
          dt.from_py(1.5), dt.from_py(2), dt.from_py(True), dt.finfo(dt.half), dt.finfo(dt.float32), isinstance(dt.float32, DType),
          dt.float32.name, dt.bool.name, str(dt.float32), T([1, 2], dtype="int16").dtype, T([1.0]).cast("half").dtype, dt.float32.fmt, dt.int8.fmt]
@case
def prog_api_names(T, nn, dt, rng):
  """names tinygrad 0.14 programs import besides Tensor: each True where the module has it"""
  import importlib
  names = {"tinygrad": "Tensor TinyJit Device dtypes GlobalCounters Context getenv fetch", "tinygrad.helpers": "fetch tqdm trange Timing prod "
           "dedup flatten colored all_int getenv Context DEBUG GlobalCounters argfix make_tuple round_up ceildiv partition unwrap polyN",
           "tinygrad.nn.optim": "Optimizer OptimizerGroup SGD Adam AdamW LAMB LARS Muon", "tinygrad.nn.state": "get_state_dict get_parameters "
           "load_state_dict safe_load safe_save safe_load_metadata torch_load", "tinygrad.nn": "Linear Conv1d Conv2d ConvTranspose1d ConvTranspose2d "
           "BatchNorm BatchNorm2d BatchNorm3d LayerNorm LayerNorm2d GroupNorm InstanceNorm RMSNorm Embedding LSTMCell optim state",
           "tinygrad.dtype": "DType dtypes least_upper_dtype least_upper_float to_dtype sum_acc_dtype ConstType DTypeLike",
           "tinygrad.engine.jit": "TinyJit", "tinygrad.device": "Device Buffer"}
  return [f"{m}.{n}" for m, ns in names.items() for n in ns.split() if not hasattr(importlib.import_module(m), n)]
@case
def prog_lars_muon(T, nn, dt, rng):
  return [_prog(T, nn, rng, _MLP, lambda p: nn.optim.LARS(p, lr=0.1, momentum=0.9, weight_decay=0.01, tcoef=0.01), T(r(rng, 8, 6)),
                T(rng.integers(0, 4, 8).astype(np.int32))),
          _prog(T, nn, rng, _MLP, lambda p: nn.optim.Muon(p, lr=0.02), T(r(rng, 8, 6)), T(rng.integers(0, 4, 8).astype(np.int32)))]
@case
def prog_helpers(T, nn, dt, rng):
  from tinygrad.helpers import argfix, make_tuple, polyN, trange
  return [argfix((1, 2)), argfix(3, 4), make_tuple(2, 3), polyN(2.0, [1.0, -1.0, 0.5]), sum(trange(5, disable=True)),
          polyN(T([1.0, 2.0]), [2.0, 1.0])]

# ---- documented Tensor methods called with keyword arguments and at their edges
@case
def doc_kwargs_processing(T, nn, dt, rng):
  x = T(r(rng, 1, 2, 6, 7)); w = T(r(rng, 2, 3, 3, 2))
  return [lambda: x.conv_transpose2d(weight=w, bias=T(r(rng, 3)), groups=1, stride=(2, 1), dilation=(1, 2), padding=(1, 0), output_padding=(1, 0)),
          lambda: x.max_pool2d(kernel_size=(3, 2), stride=2, dilation=(2, 1), padding=1, ceil_mode=True),
          lambda: x.avg_pool2d(kernel_size=3, stride=(2, 3), dilation=1, padding=(1, 1), ceil_mode=True, count_include_pad=True),
          lambda: x.avg_pool2d(kernel_size=(2, 2), dilation=2), lambda: x.max_pool2d(kernel_size=3, dilation=2, ceil_mode=True),
          lambda: x.interpolate(size=(3, 14), mode="linear", align_corners=True), lambda: x.interpolate(size=(12, 3), mode="nearest"),
          lambda: x.pad(padding=(1, 1, 2, 0), mode="constant", value=-1.0), lambda: x.pad(padding=((0, 0), (0, 0), (2, 1), (0, 3)), mode="reflect"),
          lambda: x.pad(padding=(3, 3), mode="replicate"), lambda: x.pad((1, 0, 0, 0, 1, 0)), lambda: x.conv2d(weight=T(r(rng, 4, 2, 1, 1)), padding=(1, 1)),
          lambda: T(r(rng, 2, 3, 5)).conv_transpose2d(T(r(rng, 3, 2, 3)), stride=2),
          lambda: T(r(rng, 1, 1, 4, 4)).interpolate((2, 2), mode="nearest-exact"), lambda: T(r(rng, 1, 3, 5)).avg_pool2d(kernel_size=(2,)),
          lambda: x.max_pool2d(kernel_size=2, return_indices=True)[1].dtype]
@case
def doc_kwargs_select(T, nn, dt, rng):
  x = T(r(rng, 3, 5)); i = T([[0, 2], [1, 1], [4, 0]]); m = T(rng.integers(0, 2, (3, 5)).astype(bool))
  return [lambda: x.gather(dim=1, index=i), lambda: x.gather(dim=-1, index=i), lambda: T.zeros(3, 5).scatter(dim=1, index=i, src=T(r(rng, 3, 2))),
          lambda: T.zeros(3, 5).scatter(dim=1, index=i, src=2.5, reduce="add"),
          lambda: x.scatter_reduce(dim=1, index=i, src=T(r(rng, 3, 2)), reduce="prod", include_self=False),
          lambda: x.scatter_reduce(dim=-1, index=i, src=T(r(rng, 3, 2)), reduce="mean"),
          lambda: x.sort(dim=0, descending=True)[0], lambda: x.sort(dim=-1)[1], lambda: x.topk(k=2, dim=0, largest=False, sorted_=True)[0],
          lambda: x.topk(3)[1], lambda: x.argsort(dim=0, descending=True), lambda: x.masked_fill(mask=m, value=-9.0), lambda: x.masked_fill(m, T(2.0)),
          lambda: x.masked_fill(T([True, False, True, False, False]), 0), lambda: T([2, 0]).one_hot(num_classes=3),
          lambda: x.triu(diagonal=1), lambda: x.tril(diagonal=-1), lambda: T.einsum("ij,kj->ik", x, x), lambda: T.einsum("ij,kj->ik", [x, x]),
          lambda: T.einsum("i j , k j -> i k", x, x), lambda: T.einsum("ij->j", x),
          lambda: x.masked_select(m) if hasattr(x, "masked_select") else x]
@case
def doc_scan_reduce_edges(T, nn, dt, rng):
  x = T(r(rng, 3, 4)); i = T(rng.integers(-4, 5, (3, 4)).astype(np.int32)); b = T(rng.integers(0, 2, (3, 4)).astype(bool))
  return [lambda: x.cumsum(axis=-1), lambda: x.cumsum(axis=0), lambda: x.cummax(axis=-1)[0], lambda: x.cummax(axis=0)[1], lambda: i.cumsum(1),
          lambda: b.cumsum(1), lambda: i.cummax(0)[0], lambda: i.cumprod(1), lambda: x.cummin(1)[0], lambda: x.logcumsumexp(axis=-1),
          lambda: T.zeros(0, 3).cumsum(0), lambda: T.zeros(2, 0).cumsum(1), lambda: T.zeros(0, 3).sort(0)[0], lambda: T.zeros(2, 0).sum(1),
          lambda: T.zeros(2, 0).sum(0), lambda: T.zeros(0).mean(), lambda: i.sort(0)[0], lambda: i.topk(2)[0],
          lambda: b.sort(1)[0], lambda: i.max(axis=-1, keepdim=True), lambda: i.min(), lambda: b.any(axis=-1, keepdim=True), lambda: b.all(),
          lambda: i.argmax(axis=0, keepdim=True), lambda: b.argmax(1), lambda: i.sum(axis=(0, 1), keepdim=True), lambda: i.mean(axis=-1),
          lambda: i.var(axis=0), lambda: x.std(axis=(0, 1), keepdim=True, correction=0), lambda: x.prod(axis=-2), lambda: i.prod(1, dtype=dt.int64),
          lambda: x.sum(axis=-1, dtype=dt.half), lambda: x.max(axis=(-1, -2)), lambda: x.logsumexp(axis=(0, 1), keepdim=True)]
@case
def doc_elementwise_dtypes(T, nn, dt, rng):
  i = T([3, -2, 0, 7]); u = T([3, 2, 0, 250], dtype=dt.uint8); b = T([True, False, True, False]); f = T([1.5, -2.25, 0.0, 3.0])
  return [lambda: i.maximum(f), lambda: u.maximum(b), lambda: i.minimum(2), lambda: b.where(i, f), lambda: b.where(2, 3.5), lambda: i.clamp(min_=0),
          lambda: u.clamp(1, 100), lambda: i.abs(), lambda: u - 5, lambda: u * u, lambda: i.relu(), lambda: b.logical_not(), lambda: i.square(),
          lambda: (i * 2).sign(), lambda: i.exp(), lambda: u.sqrt(), lambda: b.float() + i, lambda: f.lerp(T([0.0]*4), 0.25),
          lambda: i.isnan(), lambda: i.bitwise_and(6), lambda: i.bitwise_or(T([1, 1, 1, 1])), lambda: u.bitwise_xor(255),
          lambda: i.lshift(1), lambda: i.rshift(1), lambda: u.rshift(2), lambda: i.mod(T([2, 3, 4, 5])),
          lambda: i.div(2), lambda: i.div(T([2, 3, 4, 5]), rounding_mode="floor"), lambda: f.pow(i), lambda: i.pow(2), lambda: i.xor(b) if
          hasattr(i, "xor") else i, lambda: T([1, 2, 3]).cast(dt.float16) * T([0.5]), lambda: T([1.0, 2.0], dtype=dt.bfloat16) + 1, lambda:
          T([1, 2], dtype=dt.int64) * T([3, 4], dtype=dt.int32), lambda: T([True]) + T([True])]
@case
def doc_movement_edges(T, nn, dt, rng):
  x = T(r(rng, 2, 3, 4))
  return [lambda: x.permute(2, 0, 1), lambda: x.transpose(dim0=-1, dim1=0), lambda: x.flatten(start_dim=1),
          lambda: x.flatten(start_dim=-2, end_dim=-1), lambda: x.unflatten(dim=-1, sizes=(2, 2)), lambda: x.squeeze(dim=0), lambda: x[:, :1].squeeze(1),
          lambda: x.unsqueeze(dim=0).shape, lambda: x.repeat((1, 2, 1)), lambda: x.expand(2, -1, -1, -1).shape,
          lambda: x.shrink(((0, 1), (1, 3), None)), lambda: x.flip(axis=-1), lambda: x.roll(shifts=2, dims=-1), lambda: x.roll(shifts=(1, 1), dims=(0,
          2)), lambda: x.split(sizes=2, dim=-1), lambda: x.chunk(chunks=2, dim=-1), lambda: x.reshape(-1, 6),
          lambda: x.view((4, 6)), lambda: x.repeat_interleave(repeats=2, dim=-1), lambda: x.unfold(2, 2, 1), lambda: x.pad_to(3, 4, 5) if hasattr(x, "pad_to") else x, lambda: x.shrink_to(1, 2, 2) if hasattr(x, "shrink_to") else x,
          lambda: T.zeros(0, 4).reshape(2, 0, 2).shape, lambda: T.zeros(3, 0).expand(2, 3, 0).shape, lambda: T.zeros(0, 3).T.shape,
          lambda: T.cat(T.zeros(0, 3), T.ones(2, 3), dim=0), lambda: T.stack(T.zeros(0), T.zeros(0), dim=1).shape, lambda: x.flip((0, -1)),
          lambda: x[0].triu(1), lambda: x.transpose(), lambda: x.mT if hasattr(x, "mT") else x, lambda: x.swapaxes(0, 2) if
          hasattr(x, "swapaxes") else x]
@case
def doc_creation_kwargs(T, nn, dt, rng):
  return [lambda: T.arange(start=1, stop=7, step=2), lambda: T.arange(5, dtype=dt.float16), lambda: T.linspace(start=0, stop=1, steps=4, dtype=dt.float16),
          lambda: T.eye(n=2, m=3, dtype=dt.int32), lambda: T.full(shape=(2, 2), fill_value=3, dtype=dt.uint8), lambda: T.zeros((2, 3), dtype=dt.bool),
          lambda: T.ones(2, 2, dtype="int8"), lambda: T.full_like(T([1, 2]), fill_value=2.5), lambda: T.ones_like(T([1.0]), dtype=dt.int32),
          lambda: T.zeros_like(T([[1, 2]]), dtype=dt.float16), lambda: T.empty(2, 2, dtype=dt.int16).shape, lambda: T.arange(0, 10, 3, dtype=dt.int8),
          lambda: T.linspace(0, 1, 0).shape, lambda: T.eye(3, 1), lambda: T(5, dtype=dt.float32), lambda: T([[1, 2]], dtype=dt.float64),
          lambda: T(np.array(3.5, np.float32)), lambda: T([[True], [False]]).dtype, lambda: T.arange(-1, -6, -2), lambda: T.arange(3.5)]

# Differences that stay, with the reason: a key is a case or one of its items ("case[i]"); main() lists them apart from the others
KNOWN = {
  "llm_state_files[12][5]": "torch_load of a strided view with an offset (torch.save of w[1:, 2:] of a 3x4 w): tg reads [[6, 7], [10, 11]] "
                            "(torch's values), upstream [[6, 7], [8, 9]] (the storage read contiguously from the offset)",
  "llm_topk_topp_filter[7]": "topk(sorted_=False): tg returns the k values (in an unspecified order, like torch), upstream raises NotImplementedError",
  "llm_jit_variable[2]": "a TinyJit called with another input shape than it captured: tg raises ValueError naming the argument and both "
                         "shapes, upstream replays the capture on the first element and returns a wrong-shaped result ([12.0] for [2, 3])",
  "llm_rng_stream": "the values a seed gives: tg's counter-based generator is its own (rand/randn/multinomial match numpy's distributions, "
                    "llm_sampling checks them), not upstream's bit stream; a seeded program gets other tokens, the same on every run",
  "losses": "cross_entropy's ignore_index: tg takes torch's keyword, upstream 0.14 has none (TypeError)",
  "idx_bool_tensor": "boolean-mask indexing (numpy's and torch's x[mask]): tg has it, upstream raises IndexError",
  "ties[6]": "cummax's index on ties: tg gives the last position of the running max (torch's), upstream the first",
  "pow_edge": "upstream's CPU backend fails to compile one of these kernels (clang error: int2 from float2)",
  "softmax_dtype[7]": "std of an int tensor: upstream gives 0.0 for [1, 2] (it truncates an int division), tg 0.7071 (numpy's)",
  "state_dict_dtype_mismatch[0]": "a float16 checkpoint into a float32 model: tg casts into the model's buffer (torch's rule), upstream replaces the "
                                  "parameter and its dtype",
  "api_surface[1]": "Tensor.cat of a list: tg accepts torch's form, upstream needs *args",
  "creation_dtypes[6]": "Tensor([2**31]): tg raises OverflowError naming a wider dtype, upstream silently wraps into int32",
  "creation_dtypes[7]": "Tensor([2**40]): as creation_dtypes[6] (upstream gives 0)",
  "creation_dtypes[9]": "Tensor(np.float32(2.5)): tg takes a numpy scalar, upstream raises",
  "creation_dtypes[12]": "Tensor([-1], dtype=uint8): tg raises OverflowError, upstream wraps to 255",
  "default_float_half": "tg lets a program set dtypes.default_float; upstream 0.14 reads it from an environment variable only",
  "doc_scan_reduce_edges[27]": "var of an int tensor: upstream truncates (12.0 for numpy's 12.33), tg gives numpy's value",
  "doc_elementwise_dtypes[32]": "bfloat16 on upstream's CPU backend: its clang rejects __bf16 for this target",
  "prog_mlp_adam_loss_after_step[0]": "a loss read after opt.step(): tg gives the forward's value (torch's rule: the loss backward() ran on is "
                                      "realized before the parameters change), upstream recomputes it from the updated weights (each entry is tg's next one)",
  "prog_jit_train_schedule_step": "upstream's own TinyJit run leaves its un-jitted one from the first replay (3rd call) on, even for SGD on one Linear; "
                                  "tg's jitted run equals its un-jitted one, which equals upstream's un-jitted one (prog_mlp_adam_schedule_step)",
  "doc_dtype_edges[1]": "dtypes.uint32's name: 'uint' here, upstream 'unsigned int' (its C type); str() is dtypes.uint on both",
  "doc_dtype_edges[21]": "upstream leaves some results in its weak dtypes (weakint, weakfloat: one_hot, an int tensor's pow(0.5), a 0-d "
                         "Tensor(2.0)), tg in the default dtype (int, float). A tensor made from a python number joins later mixed ops as "
                         "upstream's does (half * Tensor(2.0) is half on both, int8 * Tensor(2) int8); results of ops on it, one_hot's and "
                         "pow's do not (half * (Tensor(2.0) * 3) is float32 in tg, int8 * one_hot(...) int32; upstream half, int8)",
  "doc_dtype_edges[39]": "as doc_dtype_edges[21]",
  "prog_files[1]": "as doc_dtype_edges[1]: dtypes.uint8's name is 'uchar' here, 'unsigned char' upstream",
  "doc_ties_and_ints[13]": "round of an int tensor: tg returns the ints (torch's), upstream a float tensor of the same values",
  "doc_ties_and_ints[27]": "scatter_reduce 'mean' into an int tensor: tg keeps the int dtype, flooring (torch's), upstream returns floats",
  "doc_interp_pad_conv_edges[1]": "interpolate to size 1 with align_corners=True: upstream divides by size-1 = 0 and gives NaN, tg the first "
                                  "sample (torch's)",
  "prog_state_order_and_reads[11]": "as doc_elementwise_dtypes[32]: upstream's clang rejects __bf16",
  "prog_jit_train_step": "as prog_jit_train_schedule_step, with opt.step() inside the jitted function",
  "prog_mlp_adam_schedule_step_discarded": "the last step's writes, left pending, land as each parameter is read: upstream's parameters "
                                           "then depart from its own run that realizes the writes with the loss (prog_mlp_adam_schedule_step, "
                                           "same losses); tg's equal its own such run exactly, and so upstream's",
  "prog_mlp_sgd_schedule_step_discarded": "as prog_mlp_adam_schedule_step_discarded",
}
def is_known(diff:str) -> bool: return any(diff.startswith(k) and diff[len(k)] in ":[" for k in KNOWN)

@case
def doc_dtype_edges(T, nn, dt, rng):
  i8 = T([100, -100, 7], dtype=dt.int8); u8 = T([200, 100, 7], dtype=dt.uint8); b = T([True, False, True]); i = T([[3, 1], [2, 2]])
  return [lambda: u8.sum(), lambda: u8.sum().dtype, lambda: i8.max(), lambda: b.argmax(), lambda: b.mean(), lambda: b.sum(), lambda: i8.mean(),
          lambda: u8.cumsum(0), lambda: i.sort(0, descending=True)[0], lambda: i.sort(1)[1], lambda: b.sort(0)[0], lambda: i.topk(1, dim=0)[0],
          lambda: i.argsort(1, descending=True), lambda: b.cumsum(0).dtype, lambda: i.cumprod(0), lambda: i.cummax(1)[0], lambda: b.cummax(0)[0],
          lambda: i.gather(1, T([[1], [0]])), lambda: i.scatter(1, T([[0], [1]]), 9), lambda: i.scatter_reduce(0, T([[1, 0]]), T([[5, 6]]), "amax"),
          lambda: i.one_hot(4), lambda: T([[0], [2]]).one_hot(3).dtype, lambda: i.triu(), lambda: i.tril(-1),
          lambda: i.masked_fill(i > 2, 0), lambda: i.masked_fill(i > 2, 0.5), lambda: b.masked_fill(b, False), lambda: i.pad((1, 1), value=-1),
          lambda: i.pad((1, 1), mode="reflect"), lambda: b.pad((1, 0), value=True), lambda: i.float().interpolate((3, 3)).dtype,
          lambda: i.reshape(1, 1, 2, 2).avg_pool2d((1, 2)), lambda: i.reshape(1, 1, 2, 2).max_pool2d((1, 2)),
          lambda: T.einsum("ij,jk->ik", i, i), lambda: T.einsum("ii->", i), lambda: i.clip(2, 2),
          lambda: i.square().dtype, lambda: i.abs().dtype, lambda: (i / i).dtype, lambda: i.pow(0.5).dtype, lambda: i.sqrt().dtype,
          lambda: u8.float().mean(), lambda: i.std(), lambda: i8.cast(dt.uint8), lambda: u8.cast(dt.int8), lambda: T([300]).cast(dt.uint8)]
@case
def doc_shape_edges(T, nn, dt, rng):
  x = T(r(rng, 2, 3)); z = T.zeros(0, 3); s = T(4.0)
  return [lambda: x.sum(axis=()), lambda: x.max(axis=-2), lambda: x.argmax(axis=-1, keepdim=True), lambda: z.sum(1), lambda: z.max(1),
          lambda: z.cumsum(1), lambda: z.sort(1)[0].shape, lambda: z.topk(2, dim=1)[0].shape, lambda: z.argmax(1).shape, lambda: z.mean(0),
          lambda: z.var(0), lambda: s.sum(), lambda: s.max(), lambda: s.argmax(), lambda: s.reshape(1, 1), lambda: s[None, None], lambda: s.expand(2, 2),
          lambda: s.unsqueeze(0), lambda: s.flatten(), lambda: s.cumsum(), lambda: s.softmax(), lambda: s.item(),
          lambda: T.stack(x, x, dim=-1), lambda: x.split([1, 2], dim=-1)[1], lambda: x.chunk(4, dim=1)[-1],
          lambda: x.unsqueeze(-3).shape, lambda: x.reshape(2, 3, 1).squeeze(-1), lambda: x.squeeze(0),
          lambda: x.expand(4, -1, -1).shape, lambda: x.repeat(2, 1, 1).shape, lambda: x.flip(-1), lambda: x.roll(-1, 0), lambda: x.transpose(-1, -2),
          lambda: x.permute(-1, 0), lambda: x.pad(((1, 0), None)), lambda: x.shrink((None, (1, 2))), lambda: x.reshape(-1, 1, 3).shape,
          lambda: x.view(6), lambda: x.flatten(0, -1), lambda: x.unflatten(0, (1, 2)).shape, lambda: x.T.contiguous(), lambda: x.mT.shape if hasattr(
          x, "mT") else x.shape, lambda: x[:, [0, 2]], lambda: x[[1, 0]][:, 1:], lambda: x[..., None, :].shape, lambda: x[-1, -1], lambda: x[1:, :-1]]
@case
def doc_nn_layers_kwargs(T, nn, dt, rng):
  x = T(r(rng, 2, 3, 6, 6))
  def mk(layer):
    _init(T, layer, rng); return layer
  c = mk(nn.Conv2d(in_channels=3, out_channels=4, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=1, groups=1, bias=True))
  ct = mk(nn.ConvTranspose2d(in_channels=3, out_channels=2, kernel_size=3, stride=2, padding=1, output_padding=1, dilation=1, groups=1))
  ln = mk(nn.LayerNorm(normalized_shape=6, eps=1e-3, elementwise_affine=True)); gn = mk(nn.GroupNorm(num_groups=3, num_channels=3, eps=1e-4))
  rms = mk(nn.RMSNorm(dim=6, eps=1e-5)); emb = mk(nn.Embedding(vocab_size=7, embed_size=3)); lin = mk(nn.Linear(in_features=6, out_features=2))
  c1 = mk(nn.Conv1d(3, 2, kernel_size=3, padding="same")); ct1 = mk(nn.ConvTranspose1d(3, 2, 3, stride=2))
  inorm = mk(nn.InstanceNorm(3)); ln2 = mk(nn.LayerNorm2d(3))
  return [c(x), ct(x), ln(x), gn(x), rms(x), emb(T([[1, 6], [0, 0]])), lin(x), c1(x[:, :, 0]), ct1(x[:, :, 0]), inorm(x), ln2(x), lin(x[0, 0, 0]),
          emb(T([3], dtype=dt.int64)), nn.Linear(3, 2, bias=False)(T.ones(1, 3)).shape]
@case
def doc_attention_and_misc(T, nn, dt, rng):
  q, k, v = T(r(rng, 2, 3, 4, 8)), T(r(rng, 2, 3, 6, 8)), T(r(rng, 2, 3, 6, 8))
  x = T(r(rng, 3, 5))
  return [lambda: q.scaled_dot_product_attention(k, v, attn_mask=None, dropout_p=0.0, is_causal=False),
          lambda: q.scaled_dot_product_attention(k, v, is_causal=True), lambda: q.scaled_dot_product_attention(k, v, attn_mask=T.ones(4, 6).tril().cast(
          dt.bool)), lambda: x.softmax(axis=0), lambda: x.log_softmax(axis=-1), lambda: x.logsumexp(axis=-1, keepdim=True), lambda: x.cross_entropy(
          T([1, 0, 4]), reduction="mean", label_smoothing=0.0), lambda: x.sparse_categorical_crossentropy(T([1, 0, 4]), ignore_index=0, reduction="sum"),
          lambda: x.binary_crossentropy_logits(x.sigmoid(), reduction="none"), lambda: x.log_softmax().nll_loss(
          T([1, 0, 4]), reduction="none"), lambda: x.dot(x.T), lambda: x.matmul(x.T, dtype=dt.float32), lambda: x.linear(T(r(rng, 5, 2))),
          lambda: x.sequential([nn.Linear(5, 5, bias=False)]).shape, lambda: x.layernorm(axis=0, eps=1e-6), lambda: x.batchnorm(None, None, x.mean(0),
          x.var(0).add(1e-5).rsqrt(), axis=1), lambda: x.lerp(x.flip(0), T([0.1] * 5)), lambda: x.softmax().multinomial(2, replacement=True).shape, lambda: x.softmax().multinomial().dtype, lambda: x.rearrange("a b -> b a"),
          lambda: x.rearrange("a (b c) -> a b c", c=1).shape, lambda: x.pad_to(4, 6) if hasattr(x, "pad_to") else x]

@case
def prog_jit_details(T, nn, dt, rng):
  from tinygrad import TinyJit
  @TinyJit
  def f(x, y, scale=2.0): return (x * scale + y).realize(), (x - y).sum().realize()
  xs = [(T(r(rng, 3)), T(r(rng, 3))) for _ in range(4)]
  outs = [f(a, b) for a, b in xs]
  @TinyJit
  def noisy(x): return (x + T.rand(3)).realize()
  T.manual_seed(3); ns = [noisy(T.zeros(3).contiguous().realize()).numpy() for _ in range(4)]
  w = T(r(rng, 3))
  @TinyJit(prune=True)
  def pruned(x): return (x * w.exp()).realize()
  ps = [pruned(T(r(rng, 3))) for _ in range(4)]
  return [[o[0] for o in outs], [o[1] for o in outs], all(((n >= 0) & (n < 1)).all() for n in ns), len({tuple(n.tolist()) for n in ns}) == 4, ps]
@case
def prog_randint_in_jit_train(T, nn, dt, rng):
  """beautiful_mnist's shape: batches drawn by randint inside the jitted step; losses differ from upstream's (its random stream), so only the
  shapes, the loss falling and the samples staying in range are compared"""
  from tinygrad import TinyJit, Context
  from tinygrad.nn.state import get_parameters
  X, Y = T(r(rng, 64, 6)), T((rng.standard_normal(64) > 0).astype(np.int32))
  m = _init(T, _MLP(nn), rng); opt = nn.optim.Adam(get_parameters(m), lr=0.02)
  @TinyJit
  @Context(TRAINING=1)
  def step():
    opt.zero_grad(); s = T.randint(16, high=64)
    loss = m(X[s]).sparse_categorical_crossentropy(Y[s]).backward()
    return loss.realize(*opt.schedule_step()), s.realize()
  T.manual_seed(0); hist = [step() for _ in range(12)]
  losses, samples = [h[0].item() for h in hist], [h[1].numpy() for h in hist]
  return [losses[-1] < losses[0], all(((sm >= 0) & (sm < 64)).all() for sm in samples), len({tuple(sm.tolist()) for sm in samples}) > 1]

def _now(fns):
  """each of fns run now (a Tensor realized), for cases whose inputs vanish before encode() runs: a lambda giving its result or its error"""
  def one(f):
    try: v = f(); v = v.realize() if hasattr(v, "realize") else v
    except Exception as e: return lambda e=e: (_ for _ in ()).throw(e)
    return lambda: v
  return [one(f) for f in fns]
@case
def prog_files(T, nn, dt, rng):
  """files as tinygrad programs read them: Tensor(pathlib.Path), safe_load of a path and of a Tensor, safe_load_metadata"""
  import pathlib
  from tinygrad.nn.state import safe_save, safe_load, safe_load_metadata
  with tempfile.TemporaryDirectory() as tmp:
    raw = pathlib.Path(tmp) / "raw.bin"; raw.write_bytes(bytes(range(16)))
    fn = os.path.join(tmp, "m.safetensors"); safe_save({"w": T([[1.0, 2.0]]), "n": T([3], dtype=dt.int16)}, fn, metadata={"epoch": "3"})
    t = T(raw)
    return _now([lambda: t.shape, lambda: t.dtype, lambda: t.to("CPU")[4:8], lambda: t.to("CPU").reshape(4, 4)[1],
                 lambda: sorted(safe_load(pathlib.Path(fn))), lambda: safe_load(pathlib.Path(fn))["w"].to("CPU"),
                 lambda: safe_load(T(pathlib.Path(fn)))["n"].to("CPU"), lambda: json.dumps(safe_load_metadata(fn)[2], sort_keys=True),
                 lambda: T(pathlib.Path(fn)).shape])

@case
def doc_ties_and_ints(T, nn, dt, rng):
  t = T([[2.0, 1, 2, 1], [0, 0, 3, 3]]); i8 = T([100, 100, -7], dtype=dt.int8); i = T([[5, -3], [2, 7]])
  return [lambda: t.sort(1, descending=True)[1], lambda: t.topk(2, largest=False)[1], lambda: t.argmax(0), lambda: t.argmin(1),
          lambda: t.max(1), lambda: t.cummax(0)[1], lambda: i8.cumsum(0), lambda: i8.cumsum(0).dtype, lambda: i8.sum().dtype, lambda: i8.prod(dtype=dt.int32),
          lambda: i.clamp(0.5, 4.5), lambda: i.clamp(0, 4).dtype, lambda: i.floor(), lambda: i.round().dtype, lambda: i.ceil(), lambda: i.trunc(),
          lambda: T([-7.5, 7.5, -0.5]) % 2, lambda: T([-7.5, 7.5]) % -2, lambda: i % T([2, -3]), lambda: i // T([2, -3]), lambda: i.div(T([2, -3]),
          rounding_mode="trunc"), lambda: (i > 0).where(i, 0.5), lambda: (i > 0).where(True, False), lambda: T.stack(i, i.float()),
          lambda: T.cat(i8, T([1.5])), lambda: i.gather(0, T([[1, 0]], dtype=dt.int64)), lambda: i[T([1], dtype=dt.uint8)],
          lambda: i.scatter_reduce(1, T([[0, 0], [1, 1]]), T([[1, 2], [3, 4]]), "mean", include_self=False),
          lambda: i.scatter_reduce(0, T([[1, 1]]), T([[10, 20]]), "prod"), lambda: i.float().scatter_reduce(1, T([[1, 1]]), T([[10.0, 20.0]]), "amin"),
          lambda: T([3, 1, 2]).argsort(), lambda: T([True, False, True]).argsort(descending=True), lambda: i.max(0, keepdim=True)]
@case
def doc_interp_pad_conv_edges(T, nn, dt, rng):
  x = T(r(rng, 1, 2, 5, 4)); w = T(r(rng, 3, 2, 2, 2))
  return [lambda: x.interpolate((1, 1)), lambda: x.interpolate((1, 1), align_corners=True), lambda: x.interpolate((10, 8), mode="nearest"),
          lambda: x.interpolate((5, 4)), lambda: x.interpolate((2, 9), mode="linear", align_corners=True), lambda: x[:, :, 0].interpolate((7,),
          mode="nearest-exact"), lambda: x.pad((2, 2, 0, 0), mode="circular"), lambda: x.pad((0, 0, 4, 4), mode="replicate"),
          lambda: x.pad((-1, -1, -2, 0)), lambda: x.pad((1, 1), mode="constant", value=float("inf")).max(), lambda: x.int().pad((1, 1), mode="reflect"),
          lambda: x.conv2d(w, padding=(1, 0, 0, 1)), lambda: x.conv2d(w, stride=(3, 2), dilation=(2, 1)),
          lambda: x.conv2d(T(r(rng, 4, 1, 3, 3)), groups=2, padding=1), lambda: x.conv_transpose2d(w.permute(1, 0, 2, 3), output_padding=0, stride=1),
          lambda: x.conv_transpose2d(T(r(rng, 2, 1, 3, 3)), groups=2, stride=3, output_padding=2), lambda: x.max_pool2d(kernel_size=(5, 4)),
          lambda: x.max_pool2d(kernel_size=3, stride=3, ceil_mode=True), lambda: x.avg_pool2d(kernel_size=3, stride=3, ceil_mode=True),
          lambda: x.avg_pool2d(kernel_size=2, padding=1, count_include_pad=False), lambda: x.max_pool2d(2, padding=1).shape,
          lambda: x.int().max_pool2d(2), lambda: x.int().avg_pool2d(2)]

@case
def prog_state_order_and_reads(T, nn, dt, rng):
  """orders programs rely on (state-dict keys zipped with a checkpoint, parameters matched to optimizer state) and python reads of values"""
  from tinygrad.nn.state import get_state_dict, get_parameters
  class Block:
    def __init__(self): self.norm, self.fc = nn.LayerNorm(4), nn.Linear(4, 4)
  class Net:
    def __init__(self):
      self.embed, self.blocks, self.head = nn.Embedding(5, 4), [Block(), Block()], {"out": nn.Linear(4, 2), "bn": nn.BatchNorm(2)}
  m = Net(); x = T([[1.5, -2.0], [3.0, 4.0]])
  return [list(get_state_dict(m)), [p.shape for p in get_parameters(m)], [p.shape for p in get_parameters([m.head["out"], m.blocks])],
          lambda: float(x[0, 0]), lambda: int(T(7)), lambda: T(True).item(), lambda: type(T(3).item()).__name__,
          lambda: type(T(3.0).item()).__name__, lambda: type(T(True).item()).__name__, lambda: x.tolist(), lambda: T([1], dtype=dt.half).tolist(),
          lambda: T(2.5, dtype=dt.bfloat16).item(), lambda: x.numpy().dtype.str, lambda: T([1, 2], dtype=dt.half).numpy().dtype.str,
          lambda: T([1, 2], dtype=dt.int64).numpy().dtype.str, lambda: T([True]).numpy().dtype.str, lambda: len(x), lambda: x.shape == (2, 2),
          lambda: type(x.shape).__name__, lambda: x.data().tolist() if hasattr(x, "data") else None, lambda: x.size(0), lambda: x.ndim]

@case
def prog_device_context(T, nn, dt, rng):
  from tinygrad import Device, Context
  from tinygrad.helpers import DEBUG
  old = Device.DEFAULT
  with Context(DEBUG=0):
    with Context(DEBUG=0, BEAM=0): inner = DEBUG.value
    after = DEBUG.value
  x = T([1.0, 2.0]); y = x.clone(); z = x.detach(); w = x.to(Device.DEFAULT).contiguous()
  x.to_(Device.DEFAULT)
  return [inner, after, y, z, w, x.device == Device.DEFAULT, Device.canonicalize(None) == Device.DEFAULT, old == Device.DEFAULT,
          T.zeros(2, device=Device.DEFAULT.lower()).device == Device.DEFAULT]

# ---- transformer inference (bench/api_diff_llm.py)
import api_diff_llm  # noqa: E402  (bench/ is on sys.path: this file runs as a script)
api_diff_llm.register(case)

# ---- runner
def encode(v):
  if callable(v) and getattr(v, "__name__", "") == "<lambda>":  # a list of lambdas: each element may raise on its own
    try: return encode(v())
    except Exception as e: return {"error": type(e).__name__, "msg": str(e).splitlines()[0][:200] if str(e) else "",
            "tb": traceback.format_exc()[-600:]}
  mod = type(v).__module__ or ""
  if hasattr(v, "numpy") and mod.startswith("tinygrad"):
    a = v.numpy()
    # numpy's dtype names the storage type on both sides (upstream's python-scalar tensors are "weak" dtypes of the same storage)
    return {"shape": [s if isinstance(s, int) else str(s) for s in v.shape], "dtype": a.dtype.str, "value": a.astype(np.float64).tolist()}
  if isinstance(v, (list, tuple)): return {"list": [encode(x) for x in v]}
  if hasattr(v, "name") and mod.startswith("tinygrad"): return {"py": str(v.name)}
  if isinstance(v, float): return {"num": v}  # compared with the tolerance of tensor values
  return {"py": repr(v)}

def run_all(out, only):
  import tinygrad
  from tinygrad import Tensor, nn, dtypes
  res = {}
  for name, fn in CASES.items():
    if only and not any(k in name for k in only.split(",")): continue
    try: res[name] = encode(fn(Tensor, nn, dtypes, np.random.default_rng(abs(hash(name)) % 2**32 if False else sum(map(ord, name)))))
    except Exception as e: res[name] = {"error": type(e).__name__, "msg": str(e).splitlines()[0][:200] if str(e) else "",
            "tb": traceback.format_exc()[-600:]}
  with open(out, "w") as f: json.dump(res, f)

def compare(a, b, path=""):
  """list of differences between two encoded values"""
  if "error" in a or "error" in b:
    if ("error" in a) != ("error" in b):
      return [f"{path}: error mismatch: tg={a.get('error', 'ok')} {a.get('msg', '')!r} other={b.get('error', 'ok')} {b.get('msg', '')!r}"]
    return []
  if "list" in a or "list" in b:
    if "list" not in a or "list" not in b or len(a["list"]) != len(b["list"]): return [f"{path}: structure differs: {str(a)[:120]} vs {str(b)[:120]}"]
    return [d for i, (x, y) in enumerate(zip(a["list"], b["list"])) for d in compare(x, y, f"{path}[{i}]")]
  if "num" in a and "num" in b:
    return [] if np.isclose(a["num"], b["num"], rtol=2e-3, atol=2e-3, equal_nan=True) else [f"{path}: {a['num']} vs {b['num']}"]
  if "py" in a or "py" in b:
    return [] if a.get("py") == b.get("py") else [f"{path}: {a.get('py', a.get('dtype'))} vs {b.get('py', b.get('dtype'))}"]
  out = []
  if a["shape"] != b["shape"]: return [f"{path}: shape {a['shape']} vs {b['shape']}"]
  if a["dtype"] != b["dtype"]: out.append(f"{path}: dtype {a['dtype']} vs {b['dtype']}")
  x, y = np.array(a["value"], dtype=np.float64), np.array(b["value"], dtype=np.float64)
  if not np.allclose(x, y, rtol=2e-3, atol=2e-3, equal_nan=True):
    bad = np.argwhere(~np.isclose(x, y, rtol=2e-3, atol=2e-3, equal_nan=True))[:3].tolist()
    out.append(f"{path}: values differ at {bad}: {[x[tuple(i)] for i in bad] if x.ndim else x} vs {[y[tuple(i)] for i in bad] if y.ndim else y}")
  return out

def main():
  args = sys.argv[1:]
  only = args[args.index("-k") + 1] if "-k" in args else ""
  if "--run" in args: return run_all(args[args.index("--run") + 1], only)
  other = args[args.index("--other") + 1] if "--other" in args else "/tmp/upvenv/bin/python"
  with tempfile.TemporaryDirectory() as tmp:
    outs = {}
    api_diff_llm.write_torch_checkpoint(tmp)  # with real torch where some interpreter has it; the case reads it on both sides
    for tag, py, env in (("tg", sys.executable, {}), ("other", other, {"DEV": os.environ.get("OTHER_DEV", "CPU"),
            "PATH": "/tmp/upclang/bin:" + os.environ["PATH"]})):
      outs[tag] = os.path.join(tmp, tag + ".json")
      subprocess.run([py, __file__, "--run", outs[tag]] + (["-k", only] if only else []), env={**os.environ, **env}, check=True, cwd=tmp)
    a, b = (json.load(open(outs[t])) for t in ("tg", "other"))
  ndiff, known = 0, []
  for name in a:
    diffs = compare(a[name], b[name], name)
    known += [d for d in diffs if is_known(d)]
    for d in (diffs := [d for d in diffs if not is_known(d)]): print(d)
    if diffs and "error" in a[name]: print("   tg:", a[name]["tb"].strip().splitlines()[-1])
    ndiff += bool(diffs)
  both = [n for n in a if "error" in a[n] and "error" in b[n]]
  keys = sorted({k for d in known for k in KNOWN if d.startswith(k) and d[len(k)] in ":["})
  print(f"{len(known)} known differences, under {len(keys)} KNOWN entries (this file says why): " + ", ".join(keys))
  print(f"{ndiff} of {len(a)} cases differ otherwise; both raise in {len(both)}: " + ", ".join(f"{n} ({a[n]['error']}: {a[n]['msg'][:60]})"
                                                                                              for n in both))

if __name__ == "__main__": main()
