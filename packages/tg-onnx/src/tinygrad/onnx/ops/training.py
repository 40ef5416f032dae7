"""The ai.onnx.preview.training optimizers: one update step for n tensors, inputs (R, T, X1..Xn, G1..Gn, state1..., state2...)."""
from __future__ import annotations
from tinygrad.onnx.ops.registry import op

TRAINING = "ai.onnx.preview.training"

def _groups(data, n_state):
  r, t, rest = data[0], data[1], data[2:]
  n = len(rest) // (2 + n_state)
  return r, t, [rest[i::n] for i in range(n)]  # per tensor: (x, g, *states)

@op("Adagrad", domain=TRAINING, ctx=True)
def adagrad(ctx, *data, decay_factor=0.0, epsilon=1e-6, norm_coefficient=0.0):
  r, t, groups = _groups(data, 1)
  lr = r / (1 + t.cast(r.dtype) * decay_factor)
  xs, hs = [], []
  for x, g, h in groups:
    g = g + x * norm_coefficient
    h = h + g * g
    xs.append((x - lr * g / (h.sqrt() + epsilon)).cast(x.dtype)); hs.append(h)
  return tuple(xs + hs)

@op("Momentum", domain=TRAINING, ctx=True)
def momentum(ctx, *data, alpha, beta, mode, norm_coefficient):
  r, t, groups = _groups(data, 1)
  b = beta if ctx.ints(t)[0] > 0 else 1.0  # the first step takes the whole gradient
  xs, vs = [], []
  for x, g, v in groups:
    g = g + x * norm_coefficient
    v = v * alpha + g * b
    xs.append(x - r * (g + v * alpha if mode == "nesterov" else v)); vs.append(v)
  return tuple(xs + vs)

@op("Adam", domain=TRAINING, ctx=True)
def adam(ctx, *data, alpha=0.9, beta=0.999, epsilon=1e-6, norm_coefficient=0.0, norm_coefficient_post=0.0):
  r, t, groups = _groups(data, 2)
  step = ctx.ints(t)[0]
  lr = r * ((1 - beta ** step) ** 0.5 / (1 - alpha ** step)) if step > 0 else r  # bias correction from the second step on
  xs, vs, hs = [], [], []
  for x, g, v, h in groups:
    g = g + x * norm_coefficient
    v, h = v * alpha + g * (1 - alpha), h * beta + g * g * (1 - beta)
    xs.append((x - lr * v / (h.sqrt() + epsilon)) * (1 - norm_coefficient_post)); vs.append(v); hs.append(h)
  return tuple(xs + vs + hs)
