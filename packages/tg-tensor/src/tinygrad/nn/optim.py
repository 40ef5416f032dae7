"""Optimizers: SGD (momentum, nesterov, weight decay), LARS and Muon (LARS with a Newton-Schulz orthogonalised update), LAMB, and
Adam/AdamW as LAMB without the trust ratio. step() writes the new parameters and optimizer state into their own buffers (parameter
handles and their buffers stay the same); lr is a Tensor, so a schedule can assign to it."""
from __future__ import annotations
import numbers
from tinygrad.tensor import Tensor, _private_buffer
from tinygrad.tensor_nn import is_training
from tinygrad.dtype import dtypes
from tinygrad.device import Device
from tinygrad.helpers import dedup
from tinygrad.nn.inplace import buffer_of, defer, pending_write, take_deferred

class Optimizer:
  """holds params (float ones with requires_grad None become True) and lr as a float32 Tensor of shape (1,); tensors passed with
  requires_grad=False are its buffers (a BatchNorm's running statistics among get_parameters), realized by each step, not updated, and
  so are those of other dtypes left at requires_grad None (a model's Tensor.arange among get_parameters): only floats have gradients.
  device, fused and param_dtype are tinygrad 0.14's: device may only name the parameters' device (tg keeps the state beside the
  parameters). fused=True is upstream's one update of all parameters concatenated: tg still updates each parameter in its own buffer,
  but a trust ratio (LAMB, LARS) is then one ratio of norms over all the parameters together, as upstream's over the concatenation
  (other rules are elementwise, the same either way). param_dtype is the state's dtype: float32 (upstream's OPTIM_DTYPE is not read)"""
  def __init__(self, params:list[Tensor], lr:float, device:str|None=None, fused:bool=False):
    if lr < 0: raise ValueError(f"learning rate must be >= 0, got {lr}")
    # a Tensor iterates over its rows and a state_dict over its names: neither is the list of parameters meant
    if isinstance(params, (Tensor, dict)) or not hasattr(params, "__iter__"):
      raise TypeError(f"optimizer params must be an iterable of Tensors, got {type(params).__name__}: pass nn.state.get_parameters(model)")
    for i, t in enumerate(params := list(params)):
      if not isinstance(t, Tensor):
        groups = " (torch's param groups are not supported: one optimizer per group, joined by OptimizerGroup)" if isinstance(t, dict) else ""
        raise TypeError(f"optimizer params must be Tensors, but params[{i}] is of type {type(t).__name__}{groups}: "
                        "pass nn.state.get_parameters(model)")
      if t.requires_grad and not dtypes.is_float(t.dtype):
        raise ValueError(f"optimizer parameter {i} of shape {t.shape} is {t.dtype} with requires_grad=True: only float tensors have gradients")
      if t.requires_grad is None and dtypes.is_float(t.dtype): t.requires_grad_(True)
    self.params = dedup([t for t in params if t.requires_grad])
    self.buffers = dedup([t for t in params if not t.requires_grad])
    self.fused, self.param_dtype = fused, dtypes.float32
    if not self.params:
      raise ValueError(f"the optimizer got no parameters that need gradients (of {len(params)} tensors, none is a float one with requires_grad): "
                       "pass the model's")
    Tensor.realize(*self.params)  # steps write into the parameters' buffers
    self.device = self.params[0].device
    if len(devices := list(dict.fromkeys(t.device for t in self.params))) > 1:
      raise ValueError(f"optimizer parameters on different devices {devices}: its lr and steps live on one (a sharded model's parameters all "
                       f"on its devices: shard or .to() them alike), or make one optimizer per device and join them with OptimizerGroup")
    if device is not None and Device.canonicalize(device) != self.device:
      raise ValueError(f"optimizer device={device!r}: tg keeps the optimizer's state on its parameters' device, {self.device!r}")
    self.lr = buffer_of(Tensor([lr], device=self.device, dtype=dtypes.float32, requires_grad=False))
  def __setattr__(self, name:str, value):
    # lr stays a plain attribute (get_state_dict names it "lr", as tinygrad's), but a later assignment goes through _new_lr
    object.__setattr__(self, name, self._new_lr(value) if name == "lr" and "lr" in self.__dict__ else value)
  def _new_lr(self, lr:Tensor|float) -> Tensor:
    """a number (opt.lr = 0.05, as a schedule sets upstream's) or a Tensor of one element is written into lr's buffer, which the steps,
    and TinyJit's replays of them, read (a Tensor made lr itself was a buffer no captured step reads: the replays kept the old rate)"""
    if isinstance(lr, Tensor):
      if lr.numel() != 1: raise ValueError(f"lr must be a number or a Tensor of one element, got a Tensor of shape {lr.shape}")
      return self.lr.assign(lr.cast(self.lr.dtype).to(self.lr.device).reshape(self.lr.shape))
    if not isinstance(lr, numbers.Real): raise TypeError(f"lr must be a number or a Tensor of one element, got {type(lr).__name__}")
    if lr < 0: raise ValueError(f"learning rate must be >= 0, got {lr}")
    return self.lr.assign(Tensor([lr], device=self.lr.device, dtype=self.lr.dtype).reshape(self.lr.shape))
  def _scalar_lr(self) -> Tensor:
    """lr as a 0-d view of its buffer: times a 0-d parameter's gradient, shape (1,) would broadcast the update to (1,)"""
    return self.lr.reshape(())
  def zero_grad(self):
    for t in self.params: t.grad = None
  def step(self):
    """one update from each parameter's .grad (set by loss.backward()): the gradients and the new state in one realize, then the
    writes of every parameter in a second (schedule_step)"""
    Tensor.realize(*self.schedule_step())
  def schedule_step(self) -> list[Tensor]:
    """the first half of step() now, and the parameter writes that finish it, as lazy tensors to realize (tinygrad's
    `loss.realize(*opt.schedule_step())`): two realizes, as every parameter's gradient may read every other parameter and a kernel
    writing a buffer is not ordered after the other kernels of its schedule that read it. So the gradients and the state are realized
    here, with the modules' pending writes (BatchNorm statistics, a loss backward() ran on: nn/inplace.py), and the writes returned
    read only those. Each parameter's handle reads its write from then on (tinygrad's parameters stay lazy): a write nobody realizes
    lands when the parameter is next used or read, and realizing both the write and the parameter runs it once"""
    if not is_training():
      raise RuntimeError("Optimizer.step() outside training mode: use `with Tensor.train():` or `with Context(TRAINING=1):` "
                         "(or set Tensor.training = True)")
    if missing := [i for i, t in enumerate(self.params) if t.grad is None]:
      raise RuntimeError(f"Optimizer.step(): parameters {missing} have no .grad: call loss.backward() first (each must be in the loss's graph)")
    # the last step's writes, if nobody realized them, land first and alone: they read the state buffers this step writes, and realized
    # together a write is not ordered after another write's value reads of its target (nn/inplace.pending_write)
    if pending := [t for t in self.params if not t._is_buffer() and 0 not in t.shape]:
      Tensor.realize(*pending)
      # a parameter realized as a view of a buffer (w.T, a conv's channels-last result) gets a buffer of its own: a step writes whole buffers
      for t in pending:
        if not t._is_buffer(): t.uop = _private_buffer(t.uop)
    grads = [t.grad for t in self.params]
    updates, state = self._updates(grads)
    Tensor.realize(*grads, *state, *self.buffers, *take_deferred())
    writes = [pending_write(t, (t.detach() - u).cast(t.dtype)) for t, u in zip(self.params, updates)]
    for t, w in zip(self.params, writes): t.replace(w)
    defer(*self.params)  # realized before the next in-place write (an lr schedule's assign): the step reads the values it was made with
    return writes
  def _updates(self, grads:list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """(the amount to subtract from each parameter, pending writes of the optimizer's state that the amounts read)"""
    raise NotImplementedError(f"{type(self).__name__} must define _updates")

# laid out like the parameter: a sharded one's state is sharded too, each device holding its part
def _zeros_like(t:Tensor) -> Tensor: return buffer_of(t.zeros_like(dtype=dtypes.float32, requires_grad=False))

def _check_at_least_zero(**hyper:float) -> None:
  """negative momentum or weight decay makes the step diverge instead of damping it: refused, as torch and tinygrad do"""
  for name, v in hyper.items():
    if v < 0: raise ValueError(f"Invalid {name} value: {v} (must be >= 0)")

def _norms(ts:list[Tensor], fused:bool) -> list[Tensor]:
  """each tensor's L2 norm; fused, the norm of all of them together for each (tinygrad's fused step sees them concatenated)"""
  squares = [t.square().sum() for t in ts]
  if not fused: return [sq.sqrt() for sq in squares]
  return [sum(squares[1:], squares[0]).sqrt()] * len(ts)

class SGD(Optimizer):
  """g = grad + weight_decay * p; with momentum, b = momentum * b + g and the step is lr * (g + momentum * b if nesterov else b);
  without, lr * g (torch's rule). classic=True keeps lr inside the buffer (b = momentum * b + lr * g, the step b, or lr * g + momentum * b
  with nesterov): the same steps while lr is constant, different once a schedule changes it"""
  def __init__(self, params:list[Tensor], lr:float=0.001, momentum:float=0.0, weight_decay:float=0.0, nesterov:bool=False, classic:bool=False,
               device:str|None=None, fused:bool=False):
    _check_at_least_zero(momentum=momentum, weight_decay=weight_decay)
    if nesterov and not momentum: raise ValueError("SGD(nesterov=True) needs momentum > 0")
    super().__init__(params, lr, device, fused)
    self.momentum, self.wd, self.nesterov, self.classic = momentum, weight_decay, nesterov, classic
    self.b = [_zeros_like(t) for t in self.params] if momentum else []
  def _updates(self, grads:list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    gs, lr = [g + self.wd * t.detach() for t, g in zip(self.params, grads)], self._scalar_lr()
    if not self.momentum: return [g * lr for g in gs], []
    if self.classic: gs = [g * lr for g in gs]
    bs = [pending_write(b, self.momentum * b + g) for b, g in zip(self.b, gs)]
    steps = [g + self.momentum * b if self.nesterov else b for g, b in zip(gs, bs)]
    return (steps if self.classic else [s * lr for s in steps]), bs

class LARS(Optimizer):
  """Layer-wise Adaptive Rate Scaling (You et al. 2017), in tinygrad's general form that SGD and Muon are cases of. Per parameter p with
  gradient g: the trust ratio r = tcoef * |p| / (|g| + weight_decay * |p|) (1 where a norm is 0, or with tcoef=0; with fused, the norms
  are over all the parameters and gradients together, one ratio for all); with pre_wd, g += wd * p
  first; classic momentum scales by r * lr before the momentum buffer b = momentum * b + g (the step g + momentum * b with nesterov,
  else b), the other kind after it; ns_coefficients orthogonalise the step (newton_schulz on p's shape flattened to (rows, -1)); without
  pre_wd, lr * wd * p is added last (decoupled, Muon's)"""
  def __init__(self, params:list[Tensor], lr:float=0.001, momentum:float=0.9, weight_decay:float=1e-4, ns_steps:int=0,
               ns_coefficients:tuple|None=None, nesterov:bool=False, classic:bool=True, pre_wd:bool=True, tcoef:float=0.001,
               device:str|None=None, fused:bool=False):
    _check_at_least_zero(momentum=momentum, weight_decay=weight_decay)
    if nesterov and not momentum: raise ValueError("LARS(nesterov=True) needs momentum > 0")
    if fused and ns_coefficients: raise ValueError("the Newton-Schulz step orthogonalises each parameter's step apart: fused=True does not apply")
    super().__init__(params, lr, device, fused)
    self.momentum, self.wd, self.ns_steps, self.ns_coefficients = momentum, weight_decay, ns_steps, ns_coefficients
    self.nesterov, self.classic, self.pre_wd, self.tcoef = nesterov, classic, pre_wd, tcoef
    if ns_coefficients and any(t.ndim == 0 for t in self.params):
      raise ValueError("the Newton-Schulz step orthogonalises each parameter as a (rows, -1) matrix: a 0-d parameter has no rows; give it "
                       "to another optimizer (OptimizerGroup)")
    self.b = [_zeros_like(t) for t in self.params] if momentum else []
  def _trust_ratios(self, ps:list[Tensor], gs:list[Tensor]) -> list[Tensor|float]:
    if not self.tcoef: return [1.0] * len(ps)
    return [((pn > 0) & (gn > 0)).where(self.tcoef * pn / (gn + self.wd * pn), 1.0)
            for pn, gn in zip(_norms(ps, self.fused), _norms(gs, self.fused))]
  def _updates(self, grads:list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    ret, bs, lr = [], [], self._scalar_lr()
    ps, gs = [t.detach().float() for t in self.params], [g.float() for g in grads]
    for i, (p, g, r) in enumerate(zip(ps, gs, self._trust_ratios(ps, gs))):
      if self.pre_wd and self.wd: g = g + self.wd * p
      if self.classic: g = g * r * lr
      if self.momentum:
        bs.append(b := pending_write(self.b[i], self.momentum * self.b[i] + g))
        g = g + self.momentum * b if self.nesterov else b
      if self.ns_coefficients: g = g.reshape(g.shape[0], -1).newton_schulz(self.ns_steps, self.ns_coefficients).reshape(g.shape)
      if not self.classic: g = g * r * lr
      if not self.pre_wd and self.wd: g = g + self.wd * lr * p
      ret.append(g)
    return ret, bs

def Muon(params:list[Tensor], lr:float=0.001, momentum:float=0.95, weight_decay:float=0.1, ns_steps:int=5,
         ns_coefficients:tuple=(3.4445, -4.775, 2.0315), nesterov:bool=True, device:str|None=None, fused:bool=False) -> LARS:
  """Muon (Jordan et al. 2024): SGD with nesterov momentum whose step is orthogonalised by a Newton-Schulz iteration, and decoupled
  weight decay after it. A parameter's step is orthogonalised as a (rows, -1) matrix: a conv weight as (out, in*kh*kw), a bias of n as
  (n, 1), which the iteration scales to a unit vector (as tinygrad does)"""
  return LARS(params, lr, momentum, weight_decay, ns_steps, ns_coefficients, nesterov, classic=False, pre_wd=False, tcoef=0.0, device=device,
              fused=fused)

class LAMB(Optimizer):
  """Adam's moments with bias correction, u = m_hat / (sqrt(v_hat) + eps) + weight_decay * p, scaled per tensor by the trust ratio
  |p| / |u| (1 where either norm is 0; with fused, one ratio of the norms over all the parameters together); adam=True drops the ratio.
  b1_t, b2_t hold b1^t, b2^t"""
  def __init__(self, params:list[Tensor], lr:float=0.001, b1:float=0.9, b2:float=0.999, eps:float=1e-6, weight_decay:float=0.0, adam:bool=False,
               device:str|None=None, fused:bool=False):
    _check_at_least_zero(eps=eps, weight_decay=weight_decay)
    for name, b in (("b1", b1), ("b2", b2)):
      if not 0 <= b < 1: raise ValueError(f"Invalid {name} value: {b} (must be in [0, 1): the moments' decay)")
    super().__init__(params, lr, device, fused)
    self.b1, self.b2, self.eps, self.wd, self.adam = b1, b2, eps, weight_decay, adam
    self.b1_t, self.b2_t = (buffer_of(Tensor.ones(1, dtype=dtypes.float32, device=self.device, requires_grad=False)) for _ in range(2))
    self.m, self.v = [_zeros_like(t) for t in self.params], [_zeros_like(t) for t in self.params]
  def _updates(self, grads:list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    b1_t, b2_t = pending_write(self.b1_t, self.b1_t * self.b1), pending_write(self.b2_t, self.b2_t * self.b2)
    ms = [pending_write(m, self.b1 * m + (1 - self.b1) * g.float()) for m, g in zip(self.m, grads)]
    vs = [pending_write(v, self.b2 * v + (1 - self.b2) * g.float().square()) for v, g in zip(self.v, grads)]
    # 0-d views of the (1,) counters and lr, so that each update keeps its parameter's shape
    c1, c2, ps = 1 - b1_t.reshape(()), 1 - b2_t.reshape(()), [t.detach().float() for t in self.params]
    us = [(m / c1) / ((v / c2).sqrt() + self.eps) + self.wd * p for p, m, v in zip(ps, ms, vs)]
    if not self.adam:
      us = [u * ((pn > 0) & (un > 0)).where(pn / un, 1.0) for u, pn, un in zip(us, _norms(ps, self.fused), _norms(us, self.fused))]
    return [self._scalar_lr() * u for u in us], [b1_t, b2_t, *ms, *vs]

def Adam(params:list[Tensor], lr:float=0.001, b1:float=0.9, b2:float=0.999, eps:float=1e-8, device:str|None=None, fused:bool=False) -> LAMB:
  """Adam (Kingma & Ba) with bias correction"""
  return LAMB(params, lr, b1, b2, eps, 0.0, adam=True, device=device, fused=fused)

def AdamW(params:list[Tensor], lr:float=0.001, b1:float=0.9, b2:float=0.999, eps:float=1e-8, weight_decay:float=0.01, device:str|None=None,
          fused:bool=False) -> LAMB:
  """Adam with decoupled weight decay: lr * weight_decay * p added to each step"""
  return LAMB(params, lr, b1, b2, eps, weight_decay, adam=True, device=device, fused=fused)

class OptimizerGroup(Optimizer):
  """several optimizers (e.g. different rules or learning rates for different parameters) stepped as one: every gradient is computed
  from the parameters before any of them is written, so the order of the optimizers does not change the result"""
  def __init__(self, *optimizers:Optimizer):
    if not optimizers: raise ValueError("OptimizerGroup needs at least one optimizer")
    self.optimizers = list(optimizers)
    self.params = [t for o in self.optimizers for t in o.params]
    if len(dedup(self.params)) != len(self.params): raise ValueError("OptimizerGroup: a parameter is in more than one of the optimizers")
    self.buffers = dedup([t for o in self.optimizers for t in o.buffers])
    self.device = self.params[0].device
  def __getitem__(self, i:int) -> Optimizer: return self.optimizers[i]
  def __setattr__(self, name:str, value):
    if name != "lr": return object.__setattr__(self, name, value)
    for o in self.optimizers: o.lr = value  # the same lr for every optimizer of the group; the group has none of its own
  def __getattr__(self, name:str):
    if name == "lr": raise AttributeError("an OptimizerGroup has no lr of its own: read each optimizer's (group[i].lr)")
    raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
  def zero_grad(self):
    for o in self.optimizers: o.zero_grad()
  def _updates(self, grads:list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    updates: list[Tensor] = []
    state: list[Tensor] = []
    for o in self.optimizers:
      u, s = o._updates(grads[len(updates):len(updates) + len(o.params)])
      updates += u
      state += s
    return updates, state
