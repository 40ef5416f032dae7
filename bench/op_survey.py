"""Common operations at the shapes models use, beside torch: the suite times a handful of workloads; this looks for the slow ones
elsewhere (transposed and batched matmuls, attention, norms, pooling, gathers, reductions along either axis, copies, random numbers).
Each result is checked against torch first (random ones by shape and dtype); figures are the best of `runs` eager calls (realized,
device synchronized) after a warm-up.
Usage: python bench/op_survey.py [runs, default 5] [name filter]   (needs torch)"""
import sys
import numpy as np
import torch
from tinygrad import Tensor, Device
from sampling import best

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
FILTER = sys.argv[2] if len(sys.argv) > 2 else ""

def rand(*shape, lo=None, hi=None):
  rng = np.random.default_rng(len(shape))
  return rng.integers(lo, hi, shape).astype(np.int32) if lo is not None else rng.standard_normal(shape, dtype=np.float32)

B, T, H, D, C = 8, 256, 8, 64, 512  # a small transformer's batch, sequence, heads, head size, width
CASES = {  # name: (inputs as numpy arrays, tg function, torch function)
  "matmul a @ b.T 1024": ((rand(1024, 1024), rand(1024, 1024)), lambda a, b: a @ b.T, lambda a, b: a @ b.T),
  "matmul a.T @ b 1024": ((rand(1024, 1024), rand(1024, 1024)), lambda a, b: a.T @ b, lambda a, b: a.T @ b),
  "linear 2048x512 -> 2048": ((rand(B * T, C), rand(4 * C, C), rand(4 * C)), lambda x, w, b: x.linear(w.T, b),
                              lambda x, w, b: torch.nn.functional.linear(x, w, b)),
  "matmul fp16 1024": ((rand(1024, 1024).astype(np.float16), rand(1024, 1024).astype(np.float16)), lambda a, b: a @ b, lambda a, b: a @ b),
  "matvec 4096x4096 @ 4096": ((rand(4096, 4096), rand(4096)), lambda a, v: a @ v, lambda a, v: a @ v),
  "vecmat 4096 @ 4096x4096": ((rand(4096), rand(4096, 4096)), lambda v, a: v @ a, lambda v, a: v @ a),
  "batched q @ k.T (8x8x256x64)": ((rand(B, H, T, D), rand(B, H, T, D)), lambda q, k: q @ k.transpose(-1, -2), lambda q, k: q @ k.transpose(-1, -2)),
  "attention (8x8x256x64)": ((rand(B, H, T, D), rand(B, H, T, D), rand(B, H, T, D)),
                             lambda q, k, v: q.scaled_dot_product_attention(k, v, is_causal=True),
                             lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)),
  "rand 4096x4096": ((), lambda: Tensor.rand(4096, 4096), lambda: torch.rand(4096, 4096)),
  "randn 4096x4096": ((), lambda: Tensor.randn(4096, 4096), lambda: torch.randn(4096, 4096)),
  "rand 64x1024 (a dropout mask's)": ((), lambda: Tensor.rand(64, 1024), lambda: torch.rand(64, 1024)),
  "softmax last axis 2048x512": ((rand(B * T, C),), lambda x: x.softmax(-1), lambda x: x.softmax(-1)),
  "softmax axis 0 2048x512": ((rand(B * T, C),), lambda x: x.softmax(0), lambda x: x.softmax(0)),
  "layernorm 2048x512": ((rand(B * T, C),), lambda x: x.layernorm(), lambda x: torch.nn.functional.layer_norm(x, (C,))),
  "gelu 2048x2048": ((rand(B * T, 4 * C),), lambda x: x.gelu(), lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
  "sum axis 0 4096x4096": ((rand(4096, 4096),), lambda x: x.sum(0), lambda x: x.sum(0)),
  "sum axis 1 4096x4096": ((rand(4096, 4096),), lambda x: x.sum(1), lambda x: x.sum(1)),
  "max axis 1 4096x4096": ((rand(4096, 4096),), lambda x: x.max(1), lambda x: x.max(1).values),
  "argmax axis 1 4096x4096": ((rand(4096, 4096),), lambda x: x.argmax(1), lambda x: x.argmax(1)),
  "mean/var axis (0,2,3) 32x64x56x56": ((rand(32, 64, 56, 56),), lambda x: x.var((0, 2, 3)), lambda x: x.var((0, 2, 3))),
  "transpose copy 4096x4096": ((rand(4096, 4096),), lambda x: x.T.contiguous(), lambda x: x.T.contiguous()),
  "permute 0,2,1,3 8x256x8x64": ((rand(B, T, H, D),), lambda x: x.permute(0, 2, 1, 3).contiguous(), lambda x: x.permute(0, 2, 1, 3).contiguous()),
  "cat axis 1 2x(4096x2048)": ((rand(4096, 2048), rand(4096, 2048)), lambda a, b: a.cat(b, dim=1), lambda a, b: torch.cat([a, b], 1)),
  "embedding 32000x512, 2048 ids": ((rand(32000, C), rand(B * T, lo=0, hi=32000)), lambda w, i: w[i], lambda w, i: w[i.long()]),
  "embedding grad 32000x512, 2048 ids": ((rand(32000, C), rand(B * T, lo=0, hi=32000), rand(B * T, C)),
                                         lambda w, i, g: (w[i] * g).sum().gradient(w)[0],
                                         lambda w, i, g: torch.ops.aten.embedding_dense_backward(g, i.long(), w.shape[0], -1, False)),
  "scatter_reduce sum 4096x128 <- 65536x128": ((rand(4096, 128), rand(65536, 128, lo=0, hi=4096), rand(65536, 128)),
                                                lambda z, i, s: z.scatter_reduce(0, i, s, "sum"), lambda z, i, s: z.scatter_reduce(0, i.long(), s, "sum")),
  "scatter_reduce amax 4096x128 <- 65536x128": ((rand(4096, 128), rand(65536, 128, lo=0, hi=4096), rand(65536, 128)),
                                                 lambda z, i, s: z.scatter_reduce(0, i, s, "amax"), lambda z, i, s: z.scatter_reduce(0, i.long(), s, "amax")),
  "scatter 4096x128 <- 65536x128 (last write)": ((rand(4096, 128), rand(65536, 128, lo=0, hi=4096), rand(65536, 128)),
                                                 lambda z, i, s: z.scatter(0, i, s), lambda z, i, s: z.scatter(0, i.long(), s)),
  "cumsum axis 1 1024x1024": ((rand(1024, 1024),), lambda x: x.cumsum(1), lambda x: x.cumsum(1)),
  "cumsum axis 0 1024x1024": ((rand(1024, 1024),), lambda x: x.cumsum(0), lambda x: x.cumsum(0)),
  "cummax axis 1 1024x1024 (values, indices)": ((rand(1024, 1024),), lambda x: x.cummax(1)[1], lambda x: x.cummax(1).indices.int()),
  "max_pool2d 3x3 s2 8x64x112x112": ((rand(8, 64, 112, 112),), lambda x: x.max_pool2d(3, 2, padding=1),
                                     lambda x: torch.nn.functional.max_pool2d(x, 3, 2, padding=1)),
  "avg_pool2d 2x2 8x64x112x112": ((rand(8, 64, 112, 112),), lambda x: x.avg_pool2d(2), lambda x: torch.nn.functional.avg_pool2d(x, 2)),
  "cross_entropy 2048x32000": ((rand(B * T, 32000), rand(B * T, lo=0, hi=32000)), lambda x, y: x.sparse_categorical_crossentropy(y),
                               lambda x, y: torch.nn.functional.cross_entropy(x, y.long())),
  "where mask 4096x4096": ((rand(4096, 4096), rand(4096, 4096)), lambda x, y: (x > 0).where(x, y), lambda x, y: torch.where(x > 0, x, y)),
  "conv1d 8x256x1024 k3": ((rand(8, 256, 1024), rand(256, 256, 3)), lambda x, w: x.conv2d(w, padding=1),
                           lambda x, w: torch.nn.functional.conv1d(x, w, padding=1)),
  "depthwise 3x3 8x256x28x28": ((rand(8, 256, 28, 28), rand(256, 1, 3, 3)), lambda x, w: x.conv2d(w, groups=256, padding=1),
                                lambda x, w: torch.nn.functional.conv2d(x, w, groups=256, padding=1)),
  "conv_transpose2d s2 8x64x28x28": ((rand(8, 64, 28, 28), rand(64, 32, 4, 4)), lambda x, w: x.conv_transpose2d(w, stride=2, padding=1),
                                     lambda x, w: torch.nn.functional.conv_transpose2d(x, w, stride=2, padding=1)),
  "interpolate x2 8x64x56x56": ((rand(8, 64, 56, 56),), lambda x: x.interpolate((112, 112), mode="linear"),
                                lambda x: torch.nn.functional.interpolate(x, (112, 112), mode="bilinear")),
  "topk 16 of 1024x4096": ((rand(1024, 4096),), lambda x: x.topk(16)[0], lambda x: x.topk(16).values),
  "topk 50 of 1x32000 (a sampler's)": ((rand(1, 32000),), lambda x: x.topk(50)[0], lambda x: x.topk(50).values),
  "sort axis 1 256x4096": ((rand(256, 4096),), lambda x: x.sort(1)[0], lambda x: x.sort(1).values),
  "argsort axis 1 256x4096": ((rand(256, 4096),), lambda x: x.argsort(1), lambda x: torch.argsort(x, dim=1, stable=True)),
  "sort 1-D 1M": ((rand(1 << 20),), lambda x: x.sort(0)[0], lambda x: x.sort(0).values),
}

if __name__ == "__main__":
  torch.set_num_threads(len(Device["CPU"].pool_cores) if hasattr(Device["CPU"], "pool_cores") else torch.get_num_threads())
  print(f"torch threads {torch.get_num_threads()}\n| op | tg ms | torch ms | tg / torch speed |\n|---|---:|---:|---:|")
  for name, (arrays, tg_fn, torch_fn) in CASES.items():
    if FILTER not in name: continue
    tgs, pts = [Tensor(a).realize() for a in arrays], [torch.from_numpy(a) for a in arrays]
    want, got = torch_fn(*pts).numpy(), tg_fn(*tgs).numpy()
    if not arrays: assert got.shape == want.shape and got.dtype == want.dtype, name  # random: no values to compare
    elif got.dtype.kind == "f": np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3 * max(1.0, float(np.abs(want).max())), err_msg=name)
    else: np.testing.assert_array_equal(got, want, err_msg=name)
    tg = best(lambda: (tg_fn(*tgs).realize(), Device["CPU"].synchronize()), RUNS)
    pt = best(lambda: torch_fn(*pts), RUNS)
    print(f"| {name} | {tg*1e3:.3f} | {pt*1e3:.3f} | {pt/tg:.2f} |", flush=True)
