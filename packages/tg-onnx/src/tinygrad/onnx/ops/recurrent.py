"""RNN, GRU and LSTM, unrolled over the sequence (layout 0: (seq, batch, ...); layout 1: (batch, seq, ...)), both directions."""
from __future__ import annotations
from tinygrad.tensor import Tensor
from tinygrad.onnx.ops.registry import op

_ACT = {"Relu": lambda x, a, b: x.relu(), "Tanh": lambda x, a, b: x.tanh(), "Sigmoid": lambda x, a, b: x.sigmoid(),
        "Affine": lambda x, a, b: x * a + b, "LeakyRelu": lambda x, a, b: (x >= 0).where(x, x * a),
        "ThresholdedRelu": lambda x, a, b: (x > a).where(x, 0), "ScaledTanh": lambda x, a, b: (x * b).tanh() * a,
        "HardSigmoid": lambda x, a, b: (x * a + b).clip(0, 1), "Elu": lambda x, a, b: (x > 0).where(x, (x.exp() - 1) * a),
        "Softsign": lambda x, a, b: x / (1 + x.abs()), "Softplus": lambda x, a, b: (x.exp() + 1).log()}
# (alpha, beta) of the activations that take them, as the standalone ONNX ops default them (None: that op has no default);
# activation_alpha / activation_beta are consumed in order by these only, as onnxruntime reads them
_PARAMS = {"Affine": (1.0, 0.0), "LeakyRelu": (0.01, 0.0), "ThresholdedRelu": (1.0, 0.0), "ScaledTanh": (None, None),
           "HardSigmoid": (0.2, 0.5), "Elu": (1.0, 0.0)}
_TAKES_BETA = ("Affine", "ScaledTanh", "HardSigmoid")

def _acts(op_name, names, alphas, betas, default, n_dirs):
  names = names or default * n_dirs
  if len(names) < len(default) * n_dirs:  # extra names are ignored, as onnxruntime does
    raise ValueError(f"{op_name}: activations {names} has {len(names)} names; {n_dirs} direction(s) need {len(default) * n_dirs}")
  alphas, betas = iter(alphas or []), iter(betas or [])
  return [_act(op_name, n, alphas, betas) for n in names]

def _act(op_name, name, alphas, betas):
  if name not in _ACT: raise NotImplementedError(f"{op_name}: activation {name!r} is not one ONNX defines ({', '.join(_ACT)})")
  a, b = _PARAMS.get(name, (0.0, 0.0))
  if name in _PARAMS: a = next(alphas, a)
  if name in _TAKES_BETA: b = next(betas, b)
  if a is None or b is None:
    raise ValueError(f"{op_name}: activation {name} needs its alpha and beta in activation_alpha/activation_beta (ONNX has no default)")
  return lambda x, f=_ACT[name], a=a, b=b: f(x, a, b)

def _run(cell, x, W, R, B, seq_lens, h0, c0, direction, hidden_size, layout, n_gates, clip=None, **kw):
  if layout: x = x.transpose(0, 1)
  seq, batch = x.shape[:2]
  n_dirs = 2 if direction == "bidirectional" else 1
  h0 = Tensor.zeros(n_dirs, batch, hidden_size, dtype=x.dtype) if h0 is None else (h0.transpose(0, 1) if layout else h0)
  c0 = None if c0 is None and n_gates != 4 else (Tensor.zeros(n_dirs, batch, hidden_size, dtype=x.dtype) if c0 is None else
                                                 (c0.transpose(0, 1) if layout else c0))
  B = Tensor.zeros(n_dirs, 2 * n_gates * hidden_size, dtype=x.dtype) if B is None else B
  ys, hs, cs = [], [], []
  for d in range(n_dirs):
    backward = direction == "reverse" or d == 1
    h, c = h0[d], None if c0 is None else c0[d]
    out = [None] * seq
    for step in range(seq):
      t = seq - 1 - step if backward else step
      h_new, c_new = cell(x[t], h, c, W[d], R[d], B[d][:n_gates * hidden_size], B[d][n_gates * hidden_size:], d, clip, **kw)
      if seq_lens is not None:  # past a batch entry's length the state is carried unchanged and the output is 0
        live = (Tensor(t) < seq_lens).reshape(-1, 1)
        h_new, c_new = live.where(h_new, h), None if c is None else live.where(c_new, c)
        out[t] = live.where(h_new, 0)
      else: out[t] = h_new
      h, c = h_new, c_new
    ys.append(Tensor.stack(*out))
    hs.append(h)
    cs.append(c)
  y = Tensor.stack(*ys, dim=1)  # (seq, dirs, batch, hidden)
  yh, yc = Tensor.stack(*hs), (Tensor.stack(*cs) if cs[0] is not None else None)
  if layout: y, yh, yc = y.permute(2, 0, 1, 3), yh.transpose(0, 1), None if yc is None else yc.transpose(0, 1)
  return y, yh, yc

def _clip(x, clip): return x if clip is None else x.clip(-clip, clip)

def _rnn_cell(x, h, c, W, R, Wb, Rb, d, clip, acts):
  return acts[d](_clip(x @ W.T + h @ R.T + Wb + Rb, clip)), None

def _gru_cell(x, h, c, W, R, Wb, Rb, d, clip, acts, linear_before_reset):
  f, g = acts[2 * d], acts[2 * d + 1]
  hs = h.shape[-1]
  gx = x @ W.T + Wb
  z = f(_clip(gx[:, :hs] + h @ R[:hs].T + Rb[:hs], clip))
  r = f(_clip(gx[:, hs:2*hs] + h @ R[hs:2*hs].T + Rb[hs:2*hs], clip))
  if linear_before_reset: n = g(_clip(gx[:, 2*hs:] + r * (h @ R[2*hs:].T + Rb[2*hs:]), clip))
  else: n = g(_clip(gx[:, 2*hs:] + (r * h) @ R[2*hs:].T + Rb[2*hs:], clip))
  return (1 - z) * n + z * h, None

def _lstm_cell(x, h, c, W, R, Wb, Rb, d, clip, acts, P, input_forget):
  f, g, hact = acts[3 * d], acts[3 * d + 1], acts[3 * d + 2]
  hs = h.shape[-1]
  gates = x @ W.T + h @ R.T + Wb + Rb
  gi, go, gf, gc = (gates[:, k*hs:(k+1)*hs] for k in range(4))
  p = P[d] if P is not None else None
  i = f(_clip(gi + (c * p[:hs] if p is not None else 0), clip))
  fo = f(_clip(gf + (c * p[2*hs:] if p is not None else 0), clip))
  if input_forget: fo = 1 - i
  c_new = fo * c + i * g(_clip(gc, clip))
  o = f(_clip(go + (c_new * p[hs:2*hs] if p is not None else 0), clip))
  return o * hact(c_new), c_new

@op("RNN")
def rnn(x, W, R, B=None, sequence_lens=None, initial_h=None, activation_alpha=None, activation_beta=None, activations=None, clip=None,
        direction="forward", hidden_size=None, layout=0):
  n_dirs = 2 if direction == "bidirectional" else 1
  acts = _acts("RNN", activations, activation_alpha, activation_beta, ["Tanh"], n_dirs)
  y, yh, _ = _run(_rnn_cell, x, W, R, B, sequence_lens, initial_h, None, direction, hidden_size or W.shape[1], layout, 1, clip, acts=acts)
  return y, yh

@op("GRU")
def gru(x, W, R, B=None, sequence_lens=None, initial_h=None, activation_alpha=None, activation_beta=None, activations=None, clip=None,
        direction="forward", hidden_size=None, layout=0, linear_before_reset=0):
  n_dirs = 2 if direction == "bidirectional" else 1
  acts = _acts("GRU", activations, activation_alpha, activation_beta, ["Sigmoid", "Tanh"], n_dirs)
  y, yh, _ = _run(_gru_cell, x, W, R, B, sequence_lens, initial_h, None, direction, hidden_size or W.shape[1] // 3, layout, 3, clip,
                  acts=acts, linear_before_reset=linear_before_reset)
  return y, yh

@op("LSTM")
def lstm(x, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, activation_alpha=None, activation_beta=None,
         activations=None, clip=None, direction="forward", hidden_size=None, input_forget=0, layout=0):
  n_dirs = 2 if direction == "bidirectional" else 1
  acts = _acts("LSTM", activations, activation_alpha, activation_beta, ["Sigmoid", "Tanh", "Tanh"], n_dirs)
  return _run(_lstm_cell, x, W, R, B, sequence_lens, initial_h, initial_c, direction, hidden_size or W.shape[1] // 4, layout, 4, clip,
              acts=acts, P=P, input_forget=input_forget)
