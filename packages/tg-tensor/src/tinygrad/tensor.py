"""Tensor: the stateful handle users hold. Every op builds UOps lazily (the math lives in tinygrad.mixin, shared with UOp);
realize() hands the graph to the engine and retargets the handle to the resulting buffer."""
from __future__ import annotations
import contextlib, functools, itertools, math, numbers, operator, os, pathlib, struct, time, weakref
from typing import Any, Callable, ClassVar, Sequence
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, sym_infer, ssimplify, fill_memo, _device_node
from tinygrad.dtype import DType, dtypes, to_dtype, least_upper_dtype, truncate
from tinygrad.helpers import prod, all_int, sint_eq
from tinygrad.mixin import OpMixin
from tinygrad.mixin.movement import _show_shape
from tinygrad.mixin.elementwise import _unwrap_numpy
from tinygrad.device import Device
from tinygrad.tensor_index import TensorIndexMixin
from tinygrad.tensor_conv import TensorConvMixin
from tinygrad.tensor_pool import TensorPoolMixin
from tinygrad.tensor_resize import TensorResizeMixin
from tinygrad.tensor_bitcast import bitcast_resized
from tinygrad.tensor_attention import TensorAttentionMixin
from tinygrad.tensor_nn import TensorNNMixin
from tinygrad.tensor_random import TensorRandomMixin
from tinygrad.tensor_create import TensorCreateMixin
from tinygrad.tensor_linalg import TensorLinalgMixin
from tinygrad.tensor_multi import TensorMultiMixin, is_multi_buffer, is_symbolic_prefix
from tinygrad.uop.multi import shard_of
from tinygrad.tensor_live import LiveTensors, computing_from, reads_buffer, read_bits, BITS as _BITS

def _shape_arg(shape:tuple) -> tuple:
  """Tensor.zeros(2, 3) and Tensor.zeros((2, 3)) mean the same; every size is an int >= 0 (or a symbolic int UOp)"""
  ret = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)
  for s in ret:
    if isinstance(s, UOp): continue
    # anything with __index__ (numpy ints too) is an int; a float, even 2.0, is not
    if isinstance(s, bool) or not hasattr(s, "__index__"): raise TypeError(f"sizes must be ints, got {s!r} ({type(s).__name__}) in shape {ret}")
    if s < 0: raise ValueError(f"sizes must be >= 0, got {s} in shape {ret}")
  return tuple(s if isinstance(s, UOp) else s.__index__() for s in ret)

def _nested(data:Any) -> tuple[tuple, list]:
  """(shape, flat values) of a nested list; a ragged list names the rows that disagree. numpy scalars and arrays inside it count as the
  python numbers and lists they hold (torch.tensor([np.float32(1.5), 2]) works too)"""
  if type(data).__module__ == "numpy" and hasattr(data, "tolist"): data = data.tolist()
  if not isinstance(data, (list, tuple)): return (), [data]
  if not data: return (0,), []
  parts = [_nested(d) for d in data]
  for i, (s, _) in enumerate(parts):
    if s != parts[0][0]:
      raise ValueError(f"ragged nested list: item {i} has shape {s} but item 0 has shape {parts[0][0]}; every row needs the same shape")
  return (len(data),) + parts[0][0], [v for _, f in parts for v in f]

def _unflatten(flat:list, shape:tuple, off:int=0) -> Any:
  if not shape: return flat[off]
  step = prod(shape[1:])
  return [_unflatten(flat, shape[1:], off + i*step) for i in range(shape[0])]

def _from_np_dtype(npdt) -> DType:
  try: return to_dtype(npdt.name)
  except ValueError: raise TypeError(f"numpy dtype {npdt} has no tinygrad dtype") from None

def _creates(fn):
  """creation functions take requires_grad= and set it on the tensor they return"""
  @functools.wraps(fn)
  def wrapper(*args, requires_grad:bool|None=None, **kwargs) -> Tensor:
    (ret := fn(*args, **kwargs)).requires_grad = requires_grad
    return ret
  return wrapper

def _below(high:float, dt:DType, acc:DType) -> float:
  """the largest value of dt under high (as a value of acc, where it is compared)"""
  if (h := truncate[dt](high)) < high: return h
  ebits, mbits = dtypes.finfo(dt)
  # a step of dt's spacing at h (the smallest subnormal at 0), then half and a quarter of it: the largest that rounds below high
  step = 2.0 ** (math.frexp(h)[1] - 1 - mbits) if h else 2.0 ** (2 - 2 ** (ebits - 1) - mbits)
  return truncate[acc](max(c for k in range(3) if (c := truncate[dt](h - step / 2 ** k)) < high))

class Tensor(TensorIndexMixin, TensorConvMixin, TensorPoolMixin, TensorResizeMixin, TensorAttentionMixin, TensorNNMixin, TensorRandomMixin,
             TensorCreateMixin, TensorLinalgMixin, TensorMultiMixin, OpMixin):
  """A lazily evaluated n-dimensional array on one device. Nothing runs until realize(), numpy(), tolist(), item() or data()."""
  _seed: ClassVar[int] = int(time.time())
  _rng_state: ClassVar[dict[str, Tensor]] = {}  # device -> its uint32 (seed, counter) buffer
  # elementwise ==, so identity hashing (a Tensor in a set or dict key is that handle)
  def __hash__(self): return id(self)
  # numpy's operators give way: np.float64(2) - t is t.__rsub__ (numpy would make an object array of 0-d tensors)
  __array_ufunc__ = None
  def __array__(self, dtype=None, copy=None):
    """np.asarray(t): its values (numpy's array protocol; a realize)"""
    return self.numpy() if dtype is None else self.numpy().astype(dtype)
  def __reduce__(self):
    from tinygrad.tensor_pickle import tensor_reduce
    return tensor_reduce(self)

  def __init__(self, data:Any, device:str|tuple|None=None, dtype:DType|str|None=None, requires_grad:bool|None=None):
    dtype = to_dtype(dtype) if dtype is not None else None
    self._requires_grad, self.grad = None, None
    if isinstance(device, (tuple, list)) and not isinstance(data, (UOp, bool, int, float)) and isinstance(devs := Device.canonicalize(device), tuple):
      uop = Tensor(data, devs[0], dtype).uop.copy_to_device(devs)  # data on several devices: made on the first, copied to every one
    elif isinstance(data, UOp) and data.device is None and data.op is not Ops.CONST and any(u.op is Ops.BIND for u in data.toposort()):
      # a bound Variable or an expression of them: a 0-d tensor of its value, which a TinyJit replay takes from the new binding
      uop = (Tensor(0, device, dtype or dtypes.strong(data.dtype)) + data).uop
    elif isinstance(data, UOp):
      if dtype is not None and dtype is not data.dtype: raise TypeError(f"Tensor of a {data.dtype} UOp asked for dtype {dtype}; use .cast()")
      uop = data if device is None or data.device == (dev := Device.canonicalize(device)) else data.copy_to_device(dev)
    elif data is None or isinstance(data, (bool, int, float, list, tuple)):
      dev = Device.canonicalize(device)
      if isinstance(data, (bool, int, float)):
        dt = dtype or dtypes.strong(dtypes.from_py(data))
        if type(data) is int and dtypes.is_int(dt): _check_fits((data,), dt)  # as Tensor([data]) does: 2**40 is no int32
        uop = UOp.const(dt, data, dev)
        if dtype is None and type(data) is not bool: self._weak = data
      else:
        shape, flat = _nested([] if data is None else data)
        dt = dtype or dtypes.strong(dtypes.from_py(flat))
        uop = _buffer_from(dev, dt, shape, flat)
    elif isinstance(data, os.PathLike):
      # a file's bytes on its DISK device, read when something copies them (mapped, not loaded); moved to `device` when one is given
      dt, size, disk = dtype or dtypes.uint8, pathlib.Path(data).stat().st_size, Device.canonicalize(f"DISK:{pathlib.Path(data).resolve()}")
      if size % dt.itemsize: raise ValueError(f"{data}: {size} bytes are not a whole number of {dt} elements ({dt.itemsize} bytes each)")
      uop = UOp.new_buffer(disk, size // dt.itemsize, dt) if size else _no_elements(disk, dt, (0,))
      if device is not None: uop = uop.copy_to_device(Device.canonicalize(device))
    elif isinstance(data, (bytes, bytearray)):
      dt = dtype or dtypes.uint8
      if len(data) % dt.itemsize: raise ValueError(f"{len(data)} bytes are not a whole number of {dt} elements ({dt.itemsize} bytes each)")
      uop = _buffer_from(Device.canonicalize(device), dt, (len(data)//dt.itemsize,), bytes(data))
    elif type(data).__module__ == "numpy":  # ndarray or numpy scalar; numpy is imported only by whoever made it
      import numpy as np
      arr = np.asarray(data)
      dt = dtype or _from_np_dtype(arr.dtype)
      mid = dt if dt.fmt is not None else dtypes.float32  # numpy has no bfloat16/fp8: go through float32
      raw = arr.astype(np.dtype(mid.fmt), copy=False).tobytes()  # row-major
      uop = _buffer_from(Device.canonicalize(device), mid, arr.shape, raw).cast(dt)
    else: raise TypeError(f"can't make a Tensor from {type(data).__name__}: pass a python scalar, (nested) list, bytes, a file path, "
                          f"numpy array or UOp")
    self.uop = uop
    uop.shape  # shape errors (a bad broadcast, reshape, ...) surface where the op is written, not at realize
    self.requires_grad = requires_grad
    _live.add(self)

  # *** the graph, caught up lazily with what realize() turned into buffers since this handle last looked ***
  @property
  def uop(self) -> UOp:
    if (looked := self._epoch) != _realized.epoch:
      built, (self._uop, self._epoch) = self._uop, (_realized.since(self._uop, looked), _realized.epoch)
      if self._uop is not built:
        _keep_for_autograd(self, built, read=_realized.last_read > looked)
        # its graph now reads buffers newer than it may have been filed under: an in-place write into one looks at it (tensor_live.py)
        _live.may_be_lazy(self)
        # its whole graph was realized for another handle: an equal graph (x * 2 built twice is one node), a value of its own, no view
        # (not a write's result: every handle of it holds the written buffer itself, an optimizer's parameter and the write it returned).
        # A graph realized inside another's (a layer's lazy weight, made by the first forward) is the first handle's to catch up to it
        if (r := _realized.get(built)) is not None and r[1] is self._uop and not _is_write(built) and not _claim(built, self):
          _equal_values.setdefault(self._uop.base, []).append(weakref.ref(self))
    return self._uop
  @uop.setter
  def uop(self, u:UOp):
    self._uop, self._epoch = u, _realized.epoch
    _live.may_be_lazy(self)

  # *** the core the op mixins build on: delegate to the UOp, wrap the result ***
  def alu(self, op:Ops, *src:Tensor) -> Tensor:
    # the nodes' devices, read once each (a Tensor's device is two property calls), in a plain loop: every elementwise op comes here
    u, srcs = self.uop, [s.uop for s in src]
    # a symbolic scalar (a Variable's value) has no device: it is a kernel argument, usable on any device
    if (dev := u.device) is not None:
      for x in srcs:
        if (d := x.device) is not None and d != dev:
          u, *srcs = _on_one_device(op.name, [u, *srcs])
          break
    ret = u.alu(op, *srcs)
    if not dtypes.is_weak(ret.dtype): return _handle(ret)
    # two python scalars (x.where(1, 2)) leave a weak result: it becomes the default dtype, never a buffer dtype. As in Tensor(2**40),
    # an int that doesn't fit it is an error, not a silent wraparound (no tensor operand here whose dtype the scalar adapts to)
    if dtypes.is_int(strong := dtypes.strong(ret.dtype)):
      _check_fits([x.arg for x in srcs if x.op is Ops.CONST], strong, "make one of them a tensor of a wider dtype (e.g. Tensor(v, dtype=dtypes.int64))")
    return _handle(ret.cast(strong))
  def _binop(self, op:Ops, y:Any, reverse:bool) -> Tensor:
    # with a python number (a GRU's 1 - z, a loss's * 0.5, x < 0) the mixin's graph, built on the nodes: the number's constant made a
    # handle of its own and went through alu() as a tensor (a * 2.0 21 us against a * b's 9.5). sigmoid, tanh and the other _ON_NODE
    # ops build theirs on the node already
    if (nodes := self._with_number(y)) is None: return super()._binop(op, y, reverse)
    x, c = nodes
    return _handle(c.alu(op, x) if reverse else x.alu(op, c))
  def _sub(self, y:Any, reverse:bool) -> Tensor:
    if (nodes := self._with_number(y)) is None or nodes[0].dtype is dtypes.bool: return super()._sub(y, reverse)  # bool: its error
    a, b = nodes[::-1] if reverse else nodes
    return _handle(a.alu(Ops.ADD, b.alu(Ops.NEG)))
  def _with_number(self, y:Any) -> tuple[UOp, UOp]|None:
    """self's node and the python number y's constant, both in their joined dtype (the mixin's _broadcasted), or None for any other y"""
    if type(y) not in _PY_SCALARS: return None
    out = least_upper_dtype((u := self.uop).dtype, dtypes.from_py(y))
    return u.cast(out), UOp.const(out, y, u.device)
  def const_like(self, b:Any, dtype:DType|None=None) -> Tensor:
    """b in self's shape, dtype and device, as tinygrad's"""
    return self._scalar_like(b, dtype).reshape((1,) * len(self.shape)).expand(self.shape)
  def _scalar_like(self, b:Any, dtype:DType|None=None) -> Tensor: return _handle(UOp.const(dtype or self.dtype, b, self.device))
  # _weak: made from a python int or float without a dtype, the number. In an op with a tensor of a dtype of its kind or wider it takes
  # that dtype, as the python number would (half * Tensor(2.0) is half, int8 + Tensor(3) int8: tinygrad's weakfloat and weakint, torch's
  # 0-d tensors). Its own dtype is the default one (tinygrad 0.14 reports the weak dtype itself)
  @staticmethod
  def _join_weak(x:Tensor, y:Tensor) -> tuple[Tensor, Tensor]:
    """x and y in their joined dtype, where one or both were made from a python number; two of them join in the default dtype (a weak
    dtype is for constants, never a tensor's)"""
    def weak(t:Tensor) -> DType: return t.dtype if t._weak is None else dtypes.weakfloat if dtypes.is_float(t.dtype) else dtypes.weakint
    out = dtypes.strong(least_upper_dtype(weak(x), weak(y)))
    # a python number's tensor not realized yet is that number in the joined dtype (0.1 in float64 is not float32's 0.1 widened)
    def joined(t:Tensor) -> Tensor:
      if t._weak is not None and out is not t.dtype and (u := t.uop).op is Ops.CONST: return _handle(UOp.const(out, t._weak, u.device))
      return t.cast(out)
    return joined(x), joined(y)
  def cast(self, dtype:DType|str) -> Tensor:
    return self if (dt := dtype if type(dtype) is DType else to_dtype(dtype)) is self.dtype else _handle(self.uop.cast(dt))
  def bitcast(self, dtype:DType|str) -> Tensor:
    if (dt := to_dtype(dtype)).itemsize != self.dtype.itemsize:
      # on a device that runs no kernels (DISK) the bytes are read again as dt, a view (its last axis rescaled); elsewhere computed
      if not Device.runs_kernels(self.device):
        if not self.shape: raise ValueError(f"bitcast of a 0-d {self.dtype} to {dt}: item sizes differ, so it needs a last axis to rescale")
        return _handle(self.uop.bitcast(dt))
      return bitcast_resized(self, dt)
    return self if dt is self.dtype else _handle(self.uop.bitcast(dt))
  # joined by pads and adds: a device mismatch is reported as the call the user made, before the add's. Built on the nodes, one handle
  # for the result (as _ON_NODE's ops): a handle per pad and add cost as much again as the node (a stack of 100: 3000 handles)
  def cat(self, *args, dim:int=0) -> Tensor:
    if not (nodes := _on_one_device("cat", _joined_nodes("cat", self, args))): return OpMixin.cat(self, *args, dim=dim)  # its error
    return _handle(OpMixin.cat(nodes[0], *nodes[1:], dim=dim))
  def stack(self, *args, dim:int=0) -> Tensor:
    if not (nodes := _on_one_device("stack", _joined_nodes("stack", self, args))): return OpMixin.stack(self, *args, dim=dim)
    return _handle(OpMixin.stack(nodes[0], *nodes[1:], dim=dim))
  def _mop(self, op:Ops, arg:Any) -> Tensor: return _handle(self.uop._mop(op, arg))
  def _arange(self, n:int, dtype:DType|None=None) -> Tensor: return _handle(self.uop._arange(n, dtype))  # the UOp's, built once
  def _rop(self, op:Ops, axis:tuple[int, ...]) -> Tensor: return _handle(self.uop._rop(op, axis))
  def _reduce(self, op:Ops, axis=None, keepdim=False) -> Tensor:
    # over every axis to a scalar (x.sum(), x.max(), a loss): the reduce and its reshape to () as nodes, one handle for both (the mixin
    # makes one per step); a reshape of all-1 sizes to () needs no size check
    if axis is None and not keepdim and (shape := (u := self.uop).shape):
      return _handle(u._rop(op, tuple(range(len(shape))))._mop(Ops.RESHAPE, ()))
    return super()._reduce(op, axis, keepdim)

  # *** properties ***
  # the handle's node read inline when it is caught up (the usual case): these are asked for by every op
  @property
  def device(self) -> str|tuple[str, ...]: return (self._uop if self._epoch == _realized.epoch else self.uop).device
  @property
  def dtype(self) -> DType: return (self._uop if self._epoch == _realized.epoch else self.uop).dtype
  @property
  def shape(self) -> tuple: return (self._uop if self._epoch == _realized.epoch else self.uop).shape
  @property
  def ndim(self) -> int: return len(self.shape)
  def numel(self) -> int: return prod(self.shape)
  @property
  def max_shape(self) -> tuple[int, ...]:
    """the shape with each Variable at its maximum: the size of the buffer a symbolic shape is allocated with"""
    return tuple(int(s.vmax) if isinstance(s, UOp) else s for s in self.shape)
  def max_numel(self) -> int: return prod(self.max_shape)
  def element_size(self) -> int: return self.dtype.itemsize
  def nbytes(self) -> int: return self.numel() * self.element_size()
  def size(self, dim:int|None=None): return self.shape if dim is None else self.shape[self._resolve_dim(dim)]
  def __len__(self) -> int:
    if not self.shape: raise TypeError("len() of a 0-d tensor")
    return self.shape[0]
  def __iter__(self): return (self[i] for i in range(len(self)))
  def __repr__(self): return f"<Tensor {self.uop.op.name} {self.shape} {self.dtype} on {self.device}, requires_grad={self.requires_grad}>"
  def __bool__(self): raise TypeError("the truth value of a Tensor is ambiguous: use .item(), .any() or .all()")
  def __eq__(self, x) -> Tensor: return self.eq(x)  # type: ignore[override]
  def __getitem__(self, indices) -> Tensor: return self._getitem(indices if isinstance(indices, tuple) else (indices,))

  # *** creation ***
  @staticmethod
  @_creates
  def empty(*shape, device:str|tuple|None=None, dtype:DType|str|None=None) -> Tensor:
    """uninitialised memory: a fresh buffer, allocated when first used (on several devices: one buffer each, replicated)"""
    shape, dt, dev = _shape_arg(shape), to_dtype(dtype or dtypes.default_float), Device.canonicalize(device)
    if isinstance(dev, tuple): return Tensor(UOp.multi([Tensor.empty(*shape, device=d, dtype=dt).uop for d in dev], None))
    if not isinstance(n := ssimplify(prod(shape)), UOp): return Tensor(UOp.new_buffer(dev, n, dt).reshape(shape) if n else _no_elements(dev, dt, shape))
    # a symbolic size: a buffer for the Variables' maximum, of which this tensor is the prefix
    return Tensor(UOp.new_buffer(dev, max(int(n.vmax), 1), dt).shrink(((0, n),)).reshape(shape))
  @staticmethod
  @_creates
  def full(shape, fill_value, dtype:DType|str|None=None, device:str|None=None, buffer:bool=True) -> Tensor:
    """shape filled with fill_value: a constant of its own, which becomes memory where it is written (assign, an optimizer's state);
    buffer=False (tinygrad's switch) the plain broadcast constant, one node with every equal constant"""
    shape = _shape_arg((shape,))
    if isinstance(fill_value, UOp): return Tensor(fill_value, device, dtype).reshape((1,)*len(shape)).expand(shape)  # a bound Variable
    fill_value = _unwrap_numpy(fill_value)  # a numpy scalar: its python value
    dt = to_dtype(dtype or dtypes.strong(dtypes.from_py(fill_value)))
    if type(fill_value) is int and dtypes.is_int(dt): _check_fits((fill_value,), dt)
    const = UOp.const(dt, fill_value, Device.canonicalize(device))
    return Tensor(_own_constant(const) if buffer else const).reshape((1,)*len(shape)).expand(shape)
  @staticmethod
  @_creates
  def from_blob(ptr:int, shape, dtype:DType|str|None=None, device:str|None=None) -> Tensor:
    """a tensor of `shape` copied from host memory at address ptr (e.g. a numpy array's ctypes.data). Upstream wraps device memory
    without a copy; here the bytes are copied once, so the memory may be freed afterwards"""
    import ctypes
    shape, dt = _shape_arg((shape,)), to_dtype(dtype or dtypes.default_float)
    if not isinstance(ptr, int) or ptr <= 0: raise ValueError(f"from_blob needs a host address (a positive int), got {ptr!r}")
    return Tensor(ctypes.string_at(ptr, prod(shape) * dt.itemsize), device, dt).reshape(shape)
  @staticmethod
  @_creates
  def from_url(url:str, gunzip:bool=False, **kwargs) -> Tensor:
    """the bytes at url (any scheme urllib opens: https, file, ...) as a uint8 tensor, or the dtype= given; gunzip decompresses. The
    download is kept in tinygrad's cache (helpers.fetch): a second call reads it from disk"""
    from tinygrad.helpers import fetch
    return Tensor(fetch(url, gunzip=gunzip).read_bytes(), **kwargs)
  @staticmethod
  def zeros(*shape, **kwargs) -> Tensor: return Tensor.full(_shape_arg(shape), 0.0, **{"dtype": dtypes.default_float, **kwargs})
  @staticmethod
  def ones(*shape, **kwargs) -> Tensor: return Tensor.full(_shape_arg(shape), 1.0, **{"dtype": dtypes.default_float, **kwargs})
  # the *_like creations keep a sharded tensor's layout (tensor_multi.py: _like)
  def full_like(self, fill_value, dtype:DType|str|None=None, device:str|None=None, buffer:bool=True, **kwargs) -> Tensor:
    return self._like(lambda shape, dev: Tensor.full(shape, fill_value, dtype=dtype or self.dtype, device=dev, buffer=buffer), device, **kwargs)
  def zeros_like(self, **kwargs) -> Tensor: return self.full_like(0, **kwargs)
  def empty_like(self, dtype:DType|str|None=None, device:str|None=None) -> Tensor:
    return self._like(lambda shape, dev: Tensor.empty(shape, dtype=dtype or self.dtype, device=dev), device)
  def ones_like(self, **kwargs) -> Tensor: return self.full_like(1, **kwargs)
  @staticmethod
  @_creates
  def arange(start, stop=None, step=1, dtype:DType|str|None=None, device:str|None=None) -> Tensor:
    """like numpy: values start + i*step for i < ceil((stop-start)/step)"""
    if stop is None: start, stop = 0, start
    if step == 0: raise ValueError("arange step must not be 0")
    if dtype is not None: dt = to_dtype(dtype)
    # a float of any kind (numpy's float32 is no python float): numbers.Real that is not Integral
    elif any(isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral) for v in (start, stop, step)): dt = dtypes.default_float
    # ints past the default int's range count in int64 (as tinygrad does) rather than wrap
    else: dt = dtypes.int64 if any(isinstance(v, int) and not dtypes.min(dtypes.default_int) <= v <= dtypes.max(dtypes.default_int)
                                   for v in (start, stop, step)) else dtypes.default_int
    if isinstance(span := ssimplify(stop - start), UOp):  # a length over a bound Variable (a KV cache's start_pos + T): a symbolic axis
      if not (isinstance(step, int) and step > 0):
        raise ValueError(f"arange of the symbolic length {span.render()} needs an int step > 0, got {step}")
      n = span if step == 1 else (span + (step - 1)) // step
    else: n = max(0, math.ceil(span / step))
    acc = dtypes.sum_acc_dtype(dt)
    return (Tensor(0, device, acc)._arange(n, acc) * step + start).cast(dt)
  @staticmethod
  @_creates
  def linspace(start, stop, steps:int, dtype:DType|str|None=None, device:str|None=None) -> Tensor:
    if not isinstance(steps, numbers.Integral): raise TypeError(f"linspace's steps must be an int, got {steps!r}")
    if steps < 0: raise ValueError(f"linspace needs steps >= 0, got {steps}")
    dt = to_dtype(dtype or dtypes.default_float)
    if steps == 1: return Tensor([start], device, dt)
    acc = least_upper_dtype(dt, dtypes.float32)  # float64 steps in float64, everything else in float32
    # the first half counts up from start, the second down from stop (torch's rule): both ends are exact, an int stop included
    i, step = Tensor.arange(steps, device=device, dtype=acc), (stop - start) / (steps - 1)
    return (i < steps // 2).where(i * step + start, stop - (steps - 1 - i) * step).cast(dt)
  @staticmethod
  @_creates
  def eye(n:int, m:int|None=None, dtype:DType|str|None=None, device:str|None=None) -> Tensor:
    _shape_arg((n,) if m is None else (n, m))
    x = Tensor(0, device)
    return x._arange(n).reshape(n, 1).eq(x._arange(n if m is None else m)).cast(to_dtype(dtype or dtypes.default_float))

  # *** random: threefry2x32 of a counter, keyed by (seed, call number); deterministic after manual_seed ***
  @staticmethod
  def manual_seed(seed:int=0):
    if not isinstance(seed, numbers.Real): raise TypeError(f"manual_seed takes a number, not {type(seed).__name__}")
    Tensor._seed, Tensor._rng_state = int(seed), {}  # a float seed truncates, as torch's
  @staticmethod
  def _random_bits(n:int, device:str|None, fused:bool=False) -> Tensor:
    """n uint32 random words: both output words of threefry over counters 0..ceil(n/2)-1. fused: left lazy, for a caller that
    materialises a result reading each word once (the words' kernel is then that result's)"""
    # the key (seed, call number) is a kernel input, not a constant: every seed and call runs the same compiled kernel. It lives in one
    # buffer per device that a kernel advances after each call, so a TinyJit replay of the call draws new numbers too; each call reads
    # a snapshot taken before the advance (its rand kernel runs later, when realized)
    if isinstance(dev := Device.canonicalize(device), tuple): return Tensor._random_bits(n, dev[0]).to(dev)  # drawn once, replicated
    if (state := Tensor._rng_state.get(dev)) is None:
      state = Tensor._rng_state[dev] = Tensor([Tensor._seed & 0xffffffff, 0], dev, dtypes.uint32)
    # the snapshot and the advance in one run (its write lands after the snapshot's read): two realizes cost twice the python
    from tinygrad.nn.inplace import pending_write
    key = state.contiguous()
    Tensor.realize(key, pending_write(state, state + state._arange(2, dtypes.uint32)))
    half = (n + 1) // 2
    # one Ops.THREEFRY per counter (uop/threefry.py): counter i's words (i, 0), the key's (seed, call), as uint64s; its ~120 ops of rounds
    # are codegen's (built here, each an op of its own, they took ~200 nodes and 2.6-4.8 ms of python a call)
    ctr = Tensor(0, device, dtypes.uint64)._arange(half, dtypes.uint64).uop
    k0, k1 = (key[i].cast(dtypes.uint64).uop for i in (0, 1))
    words = ctr.alu(Ops.THREEFRY, ((k1 << 32) | k0).reshape((1,)).expand((half,)))
    x0, x1 = Tensor(words.cast(dtypes.uint32)), Tensor((words >> 32).cast(dtypes.uint32))
    # materialised unless fused: fused into a consumer that reads a word more than once, the 20 rounds would be recomputed for each read
    bits = x0.stack(x1, dim=1).flatten().shrink(((0, n),))
    return bits if fused else bits.contiguous()
  @staticmethod
  @_creates
  def rand(*shape, device:str|None=None, dtype:DType|str|None=None, contiguous:bool=True) -> Tensor:
    """uniform in [0, 1). contiguous=False leaves the last step (bits to floats) lazy, to fuse into the consumer"""
    shape, dt = _shape_arg(shape), _float_dtype("rand", dtype)
    # materialised here, the words need no buffer of their own: one kernel draws and converts them
    return Tensor._uniform(shape, device, dt, fused=True).contiguous() if contiguous else Tensor._uniform(shape, device, dt, fused=False)
  @staticmethod
  def _uniform(shape:tuple, device:str|None, dt:DType, fused:bool) -> Tensor:
    """uniform in [0, 1), lazy: random mantissa bits under the exponent of 1.0 give [1, 2); minus 1. fused: see _random_bits"""
    ebits, mbits = dtypes.finfo(dt)
    ut = {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[dt.itemsize]
    bits = Tensor._random_bits(prod(shape), device, fused)
    m = (bits >> (32 - mbits)).cast(ut) if mbits <= 32 else bits.cast(ut) << (mbits - 32)
    return ((m | (((1 << (ebits-1)) - 1) << mbits)).bitcast(dt) - 1).reshape(shape)
  @staticmethod
  def _randn(shape:tuple, device:str|None) -> Tensor:
    """standard normal float32 by Box-Muller, lazy over words not materialised (each read once): its caller materialises it. 1-u is in
    (0, 1], so the log is finite. Element i takes both words of counter i (angle, radius): one threefry per element, where words i and
    n+i took two, each computing a pair and using one word (randn 4096x4096: 212 -> 129 ms)"""
    u = Tensor._uniform((*shape, 2), device, dtypes.float32, fused=True)
    return (u[..., 0] * (2*math.pi)).cos() * ((1 - u[..., 1]).log() * -2).sqrt()
  @staticmethod
  @_creates
  def randn(*shape, device:str|None=None, dtype:DType|str|None=None) -> Tensor:
    """standard normal by Box-Muller"""
    return Tensor._randn(_shape_arg(shape), device).cast(_float_dtype("randn", dtype)).contiguous()
  @staticmethod
  @_creates
  def normal(*shape, mean=0.0, std=1.0, device:str|None=None, dtype:DType|str|None=None) -> Tensor:
    if not std >= 0: raise ValueError(f"normal needs std >= 0, got {std}")
    return (std * Tensor._randn(_shape_arg(shape), device).cast(_float_dtype("normal", dtype)) + mean).contiguous()
  @staticmethod
  @_creates
  def uniform(*shape, low=0.0, high=1.0, device:str|None=None, dtype:DType|str|None=None, contiguous:bool=True) -> Tensor:
    """uniform in [low, high): computed in float32, or float64 for float64; an int dtype takes the whole numbers in it. contiguous=False
    leaves it lazy, as rand's"""
    if not low < high: raise ValueError(f"uniform needs low < high, got [{low}, {high})")
    dt = to_dtype(dtype or dtypes.default_float)
    u = Tensor._uniform(_shape_arg(shape), device, acc := least_upper_dtype(dt, dtypes.float32) if dtypes.is_float(dt) else dtypes.float32,
                        fused=contiguous)
    if not dtypes.is_float(dt):
      # the whole numbers in [low, high), each as likely (low itself for a whole low, as tinygrad's: low + int(span * u))
      if (lo := math.ceil(low)) >= (hi := math.ceil(high)): raise ValueError(f"uniform of {dt} needs a whole number in [{low}, {high})")
      ret = ((hi - lo) * u).cast(dt) + lo
    # rounding (span * u + low, then to a narrower dtype) can reach high itself: the largest value below it is the top
    else: ret = ((high - low) * u + low).cast(dt).minimum(_below(high, dt, acc))
    return ret.contiguous() if contiguous else ret
  @staticmethod
  @_creates
  def randint(*shape, low:int=0, high:int=10, device:str|None=None, dtype:DType|str=dtypes.int32) -> Tensor:
    """integers in [low, high), uniform: random words modulo the span (one 32-bit word for a span up to 2**16, two as a uint64 past it,
    so the bias is at most span / 2**32 or span / 2**64). A float span*u would skip values past 2**24 and overflow int32's whole range"""
    if not all(isinstance(v, numbers.Integral) for v in (low, high)): raise TypeError(f"randint's low={low!r} and high={high!r} must be integers")
    if high <= low: raise ValueError(f"randint needs low < high, got [{low}, {high})")
    if not dtypes.is_int(dt := to_dtype(dtype)): raise TypeError(f"randint makes integers: dtype={dt} must be an int dtype (cast the result)")
    if low < dt.min or high - 1 > dt.max: raise OverflowError(f"randint's [{low}, {high}) does not fit in {dt} [{dt.min}, {dt.max}]")
    shape, span = _shape_arg(shape), high - low
    if span <= 1 << 16: r = Tensor._random_bits(n := prod(shape), device, fused=True) % span
    else:
      w = Tensor._random_bits(2 * (n := prod(shape)), device, fused=True).cast(dtypes.uint64)
      r = ((w[:n] << 32) | w[n:]) % span
    # in dt's width r + low wraps around exactly as far as r's cast did: the sum is the value in [low, high)
    return (r.cast(dt) + low).reshape(shape).contiguous()
  def rand_like(self, device:str|tuple|None=None, dtype:DType|str|None=None, requires_grad:bool|None=None, **kwargs) -> Tensor:
    return self._like(lambda shape, dev: Tensor.rand(shape, device=dev, dtype=dtype or self.dtype, **kwargs), device, requires_grad,
                      drawn=True)
  def randn_like(self, dtype:DType|str|None=None, device:str|tuple|None=None, requires_grad:bool|None=None) -> Tensor:
    return self._like(lambda shape, dev: Tensor.randn(shape, device=dev, dtype=dtype or self.dtype), device, requires_grad, drawn=True)

  # *** graph-level ops ***
  def contiguous(self) -> Tensor:
    # of constants alone: a node of its own (_own_contiguous), so realize() may keep its buffer for every graph built on this tensor
    return _handle(u if _reads_memory(u := self.uop.contiguous()) else _own_contiguous(u))
  def detach(self) -> Tensor: return _handle(self.uop.detach())
  def _scan_serially(self) -> bool:  # mixin/scan.py's form choice: the compiler's, for this device
    from tinygrad.codegen.prefix_scan import serial_scan
    return serial_scan(self.device)
  def _grad_flows(self) -> bool: return bool(self.requires_grad) or _on_grad_path(self.uop)  # the scans' form choice (mixin/scan.py)
  def contiguous_backward(self) -> Tensor:
    """self unchanged; the gradient flowing back through it is materialized (a kernel boundary in the backward graph)"""
    return Tensor(self.uop.contiguous_backward())
  def _custom_gradient(self, inputs:tuple[Tensor, ...], backward:Callable[[Tensor], tuple[Tensor|None, ...]]) -> Tensor:
    """self's value, whose gradient flows into self's graph as usual and also gives each of `inputs` backward(that gradient)'s entry (None:
    nothing): self is built on inputs.detach() where only backward's gradient should reach them (conv2d's input gradient as one conv).
    Internal, as torch's autograd.Function is to torch (tinygrad has none); realize() takes the node out before scheduling"""
    def fn(ctx:UOp) -> tuple[UOp|None, ...]: return tuple(None if g is None else g.uop for g in backward(Tensor(ctx)))
    return Tensor(self.uop._custom_gradient(tuple(t.uop for t in inputs), fn))
  def replace(self, x:Tensor) -> Tensor:
    """self becomes x (its graph, no copy): the same shape; the dtype and device may change (a model cast to half in place). Views of
    self taken before keep the old value"""
    if x.shape != self.shape: raise ValueError(f"replace needs the same shape: self is {self.shape}, x is {x.shape}")
    self.uop = x.uop
    if self.requires_grad: _mark_wants_grad(self.uop)  # still a leaf that wants a gradient, now at its new node
    return self
  def to(self, device:str|tuple|None) -> Tensor:
    """a copy on `device`; a tuple of devices replicates it on each, and a multi-device tensor moved to one device is gathered there"""
    if (dev := Device.canonicalize(device)) == self.device: return self
    if isinstance(dev, tuple) and isinstance(self.device, tuple): return self.to(self.device[0]).to(dev)
    if not Device.runs_kernels(self.device) and Device.runs_kernels(dev) and (split := _split_off_moves(self.uop)) is not None and split[1]:
      u = split[0].copy_to_device(dev)  # its bytes, then the moves on the device that computes (tinygrad's disk_t.T.to("CPU"))
      for op, arg in split[1]: u = u._mop(op, arg)
      return Tensor(u, requires_grad=_derived_grad(self))
    return Tensor(self.uop.copy_to_device(dev), requires_grad=_derived_grad(self))
  def to_(self, device:str|tuple|None) -> Tensor:
    """move in place: this handle now points at the copy on `device` (a leaf that wants a gradient still is one, there)"""
    return self.replace(self.to(device))
  def custom_kernel(self, *lst:Tensor, fxn:Callable[..., UOp]) -> list[Tensor]:
    """fxn gets one PARAM per tensor and returns a SINK (arg: KernelInfo) that writes them; the results read the written buffers"""
    ts = (self,) + lst
    call = fxn(*[UOp.param(i, t.dtype, t.shape) for i, t in enumerate(ts)]).call(*[t.uop for t in ts])
    return [Tensor(t.uop.after(call)) for t in ts]

  # *** autograd: the rules are tinygrad.uop.gradient's table ***
  @property
  def requires_grad(self) -> bool|None: return self._requires_grad
  @requires_grad.setter
  def requires_grad(self, v:bool|None):
    self._requires_grad = v
    if not v: return
    _needs_grad[id(self)] = self
    # equal constant graphs are one node (hash-consing): two Tensor(1.0) would share one gradient. A constant leaf gets a buffer of its own,
    # unless its constant is its own already (Tensor.full, ones, zeros): graphs built from it before this (a loss built before the
    # optimizer that sets requires_grad) still reach it
    if not any(u.op is Ops.BUFFER for u in self.uop.toposort()) and not _holds_own_constant(self.uop): self.uop = _private_buffer(self.uop)
    _mark_wants_grad(self.uop)
  def requires_grad_(self, requires_grad:bool=True) -> Tensor:
    self.requires_grad = requires_grad
    return self
  # tinygrad 0.14's marking of what an optimizer updates: every tensor is a parameter unless marked (BatchNorm's running statistics).
  # Here that is requires_grad=False: an optimizer given such a tensor realizes it with each step and never updates it
  @property
  def is_param(self) -> bool: return self.requires_grad is not False
  def is_param_(self, is_param:bool=True) -> Tensor:
    if not is_param: self.requires_grad = False
    elif self.requires_grad is False: self.requires_grad = None
    return self
  def gradient(self, *targets:Tensor, gradient:Tensor|None=None, materialize_grads:bool=False) -> list[Tensor]:
    """d(self)/d(target) for each target, as new lazy tensors (.grad is left alone). self must be 0-d unless `gradient`, the gradient
    of some loss with respect to self, is given. A target no gradient reaches (not in the graph, or only through detach()) raises,
    or gives zeros with materialize_grads=True. requires_grad is not needed on the targets."""
    return self._gradient(targets, self._root_gradient(gradient), materialize_grads)
  def _gradient(self, targets:tuple[Tensor, ...], gradient:Tensor, materialize_grads:bool, root:UOp|None=None,
                brought:list[UOp]|None=None, at:list[UOp]|None=None) -> list[Tensor]:
    """gradient(); root: self's graph as built (see unrealized), where the caller has it already, with the nodes it brought back; at:
    each target's node in root, where it is not the target's own (_implicit_targets)"""
    if not dtypes.is_float(self.dtype):
      raise RuntimeError(f"only float tensors have gradients: the tensor differentiated, of shape {self.shape}, is {self.dtype}; cast it to a float")
    # requires_grad=True is taken on any dtype (an int tensor's shows only here, in some later backward): name the tensor
    if bad := [t for t in targets if not dtypes.is_float(t.dtype)]:
      which = "; ".join(f"a tensor of shape {t.shape} {t.dtype} " + ("has requires_grad=True" if t.requires_grad else "is a gradient() target")
                        for t in bad)
      raise RuntimeError(f"{which}: only float tensors have gradients (cast it to a float dtype, or don't ask for its gradient)")
    from tinygrad.uop.gradient import compute_gradient  # autograd loads with the first backward, not with the first computation
    # a realize since the graph was built (reading an intermediate, a module's statistics update) put buffers in it: the gradient goes
    # through the nodes they replaced, and the gradients read those buffers again instead of recomputing them
    keep = _kept(targets)
    if root is None: _refuse_cut_paths((root := _realized.unrealized(self.uop, keep, brought := [])).toposort())
    grads = compute_gradient(root, gradient.uop.cast(self.dtype), set(keep.values()) if at is None else set(at))
    if root is not self.uop and grads:  # one walk for all; a buffer written since its node was realized no longer holds it
      grads = dict(zip(grads, _realized.since(UOp.sink(*grads.values()), 0, self.uop.toposort(), unwritten=True).src))
    if brought: _realized.refuse_stale_reads(brought, list(grads.values()))
    ret = []
    for t, node in zip(targets, [t.uop for t in targets] if at is None else at):
      if (g := grads.get(node)) is None and not materialize_grads:
        if any((wr := u.__dict__.get(_REALIZED_FROM)) is not None and wr() is None for u in root.toposort()):
          raise RuntimeError(f"no gradient reaches the {t.shape} {t.dtype} target from this {self.shape} tensor: part of its graph was realized "
                             f"(item(), numpy(), realize()) with no requires_grad=True tensor in it, and such a graph is not kept: take the "
                             f"gradient first, or give the target requires_grad=True before building the graph")
        raise RuntimeError(f"no gradient reaches the {t.shape} {t.dtype} target from this {self.shape} tensor: it is not in its graph, or only "
                           f"through detach(); pass materialize_grads=True for zeros")
      ret.append(t.zeros_like() if g is None else Tensor(g))
    return ret
  def _root_gradient(self, gradient:Tensor|None) -> Tensor:
    """the gradient self starts with: given (of self's shape), or 1 for a 0-d self"""
    if gradient is None:
      if self.shape != (): raise RuntimeError(f"gradient of a tensor of shape {self.shape} needs gradient= (d loss/d self, of that shape); "
                                              f"without one only a 0-d (scalar) tensor can be differentiated: take .sum() or .mean() first")
      return Tensor(1.0, self.device, self.dtype)
    if gradient.shape != self.shape: raise ValueError(f"gradient= has shape {gradient.shape}, but the tensor it is for has shape {self.shape}")
    return gradient
  def backward(self, gradient:Tensor|None=None) -> Tensor:
    """add d(self)/d(t) to t.grad for every live tensor t with requires_grad=True in self's graph (zeros where only detach() leads to t).
    With none in the graph, as in tinygrad 0.14 (which has no requires_grad): every live float tensor in it, save those given
    requires_grad=False, self and the intermediates included"""
    gradient = self._root_gradient(gradient)  # a shape error first: it is the likelier mistake
    wanted = [t for t in list(_needs_grad.values()) if t.requires_grad]
    nodes = (root := _realized.unrealized(self.uop, keep := _kept(wanted), brought := [])).toposort()
    _refuse_cut_paths(nodes)
    _refuse_dropped_graphs(nodes, root, keep)
    at = None
    if not (ts := [t for t in wanted if t.uop in nodes]):
      if brought: _realized.refuse_stale_reads(brought, [])  # a write cut the path to them: an error, not a graph with no gradient for them
      ts, at, root = self._implicit_targets(brought := [])
    for t, g in zip(ts, self._gradient(tuple(ts), gradient, True, root, brought, at)): t.grad = g if t.grad is None else t.grad + g
    from tinygrad.nn.inplace import defer
    defer(self)  # realized before the next in-place write (nn/inplace.py): a loss read after the optimizer step is the forward's value
    return self
  def _implicit_targets(self, brought:list[UOp]) -> tuple[list[Tensor], list[UOp], UOp]:
    """(the tensors backward() fills when none in the graph has requires_grad=True, their nodes in self's graph as built, that graph);
    brought: see unrealized. Every graph a tensor kept (_keep_for_autograd) is brought back, and none ends the path: the gradient goes
    through a value read back mid-forward to the tensors below, as through the lazy value tinygrad 0.14 leaves"""
    if (wr := self.uop.__dict__.get(_REALIZED_FROM)) is not None and wr() is None:  # a graph with no requires_grad is not kept
      raise RuntimeError(f"backward: this {self.shape} tensor was realized (realize()) before backward(), and with no requires_grad=True "
                         f"tensor in it its graph was not kept: call backward() first, or give the tensors you want gradients for "
                         f"requires_grad=True")
    maybe = [t for t in _live.alive() if t.requires_grad is None and dtypes.is_float(t.dtype)]
    nodes = set((root := _realized.unrealized(self.uop, {}, brought)).toposort())
    # a value read back whose handle died (read inside a function that returned): the tensors behind it would silently get no gradient
    if any(u.__dict__.get(_READ_BACK) and (wr := u.__dict__.get(_REALIZED_FROM)) is not None and wr() is None for u in nodes):
      raise RuntimeError(f"backward: this {self.shape} tensor's graph reads a value that was read back (item(), numpy(), tolist()) and whose "
                         f"graph went with the tensor that held it, so the tensors behind it would get no gradient: keep that tensor alive "
                         f"until backward(), or give the tensors you want gradients for requires_grad=True and keep it alive")
    # a handle's node as built: its own with the kept graphs brought back (a leaf, the usual case, is itself; a value read back is the
    # graph it kept, but not after a write into its buffer: an updated parameter is the buffer again)
    ts = [(t, n) for t in maybe if (n := t.uop) in nodes or (n := _realized.unrealized(n, {})) in nodes]
    # hash-consing makes equal constants one node (Tensor(1.0) and the 1.0 broadcast in x * 1.0): a gradient there mixes them all. They get
    # none, as python numbers and arange get none in tinygrad 0.14; Tensor.full's constant is a node of its own (a buffer in 0.14)
    ts = [(t, n) for t, n in ts if n is root or _reads_memory(n) or _holds_own_constant(n)]  # self among them: its own graph holds it
    return [t for t, _ in ts], [n for _, n in ts], root

  # *** realization and reading back ***
  def _is_buffer(self) -> bool:
    """realized: a whole buffer seen through reshapes only, so its memory is this tensor in row-major order"""
    u = self.uop
    if u.op is Ops.MULTI: return is_multi_buffer(u)
    while u.op is Ops.RESHAPE: u = u.src[0]
    if is_symbolic_prefix(u): return True  # a symbolic size lives in a buffer sized for its Variables' maximum: a prefix of it
    # a size of Variables whose bounds pin it (Variable("toks", 1, 1) * 8) is that number, as the scheduler sized the buffer
    return u.op is Ops.BUFFER and u.arg.shape == ((n if isinstance(n := self.numel(), int) else ssimplify(n)),)
  def realize(self, *lst:Tensor, do_update_stats:bool=True) -> Tensor:
    """run everything self (and lst) need, together; each tensor then points at its buffer (one without elements has none).
    do_update_stats is tinygrad's: accepted, and GlobalCounters are updated either way. Where they write into buffers (an optimizer's
    step, an assign), the live values still to be computed from the old contents are computed in the same run, before the writes"""
    _realize((self,) + lst)
    return self

  def assign(self, x:Any) -> Tensor:
    """write x's values into self's buffer, now: every view of that buffer, taken before or after, reads the new values; a value still
    to be computed from the old contents (b = a + 1 before a.assign(0)) keeps the old ones, as an eager library's would"""
    return self._assign(x, value_private=False)
  def _assign(self, x:Any, value_private:bool) -> Tensor:
    """assign; value_private: x is the caller's own (an in-place operator's result), no handle but this call's reads it after"""
    if not isinstance(x, Tensor): x = Tensor(x, _compute_device(self.device), self.dtype)
    # the value broadcasts to the target's shape (tinygrad's rule: cache.assign(0), a (1, T, D) row into (B, T, D)); held: the caller's
    held, x = x, x._broadcast_for_assign(self.shape)
    # a device that runs no kernels (DISK) is written by a copy: the value comes from wherever it is (tinygrad's disk_t.assign(cpu_t))
    if bytes_only := not Device.runs_kernels(self.device): x = x.to(self.device)
    for what, mine, theirs in (("shape", _pinned(self.shape), _pinned(x.shape)), ("dtype", self.dtype, x.dtype), ("device", self.device, x.device)):
      if not (mine is theirs or mine == theirs):
        raise ValueError(f"assign needs the same {what}: target is {self.shape} {self.dtype} on {self.device}, value is {held.shape} {x.dtype} "
                         f"on {held.device}" + (" (or a shape that broadcasts to the target's)" if what == "shape" else ""))
    if 0 in self.shape: return self
    if held is self: return self  # its own value: nothing changes (a lazy self's new buffer, read as the value, held nothing yet)
    _own_if_equal(self)
    if _is_write(self.uop): self.realize()  # a write left pending (Optimizer.schedule_step) lands first, in the buffer it writes
    # a lazy target gets a buffer of its own first, its old value not computed: the write below fills all of it. A view of a lazy value
    # (out.T[0] *= 10) writes into the buffer that value and its other views get
    # a bitcast view of a buffer is written through: the value goes in as the buffer's dtype. On a device that runs no kernels the target
    # is a run of bytes whatever it is (the scheduler says where it is not)
    if not bytes_only and (plain := _bitcasts_outside(self.uop)) is not None: target, x = plain, x.bitcast(plain.dtype)
    else:
      if self.uop.base.op is not Ops.BUFFER and not is_multi_buffer(self.uop.base) and not _share_with_views(self) and not bytes_only:
        self.uop = _private_buffer(self.uop, keep_value=False)
      target = self.uop
    moves = [u.op for u in target.toposort()]
    if Ops.EXPAND in moves: raise ValueError(f"cannot assign into an expanded view of shape {self.shape}: several elements share an address")
    if Ops.PAD in moves:
      if target.base.op is not Ops.BUFFER: raise ValueError(f"cannot assign into a padded view of shape {self.shape} of a multi-device tensor")
      return self._assign_through_pad(x)
    from tinygrad.nn.inplace import take_deferred
    if pending := take_deferred(): Tensor.realize(*pending)  # a loss backward() ran on keeps its value (nn/inplace.py)
    # x itself, when the caller keeps it and it computes from the old contents: on a gradient path it gets a buffer of its own in the
    # same run (the path goes on through it); else it reads a copy of what it wrote, made only if read before the next write
    bufs = {b for b in target.base.toposort() if b.op is Ops.BUFFER}
    x_reads_target = not value_private and bool(computing_from([held], bufs))
    # a broadcast value is no copy of what was written: the caller's gets a buffer in the same run
    x_own_buffer = x_reads_target and (held is not x or x._grad_flows())
    value = x.uop if not _reads_elsewhere(x.uop, target) else x.contiguous().uop
    _realize([Tensor(target.after(target.store(value)))] + ([held] if x_own_buffer else []), skip=(held, self))
    # (unless the write's run already gave x a buffer: a contiguous() value is computed into one before it is stored)
    if x_reads_target and not x_own_buffer and computing_from([x], bufs): x.uop = _own_contiguous(target.contiguous())
    return self
  def _broadcast_for_assign(self, shape:tuple) -> Tensor:
    """self expanded to `shape` where its shape broadcasts to it (leading axes added, axes of 1 expanded), else self"""
    if len(self.shape) > len(shape) or all(sint_eq(a, b) for a, b in zip(self.shape, shape)) and len(self.shape) == len(shape): return self
    mine = (1,) * (len(shape) - len(self.shape)) + tuple(self.shape)
    if not all(isinstance(a, int) and a == 1 or sint_eq(a, b) for a, b in zip(mine, shape)): return self
    return self.reshape(mine).expand(shape)
  def _assign_through_pad(self, x:Tensor) -> Tensor:
    """self a view of a buffer built with a pad (a step: a[:, ::2] pads, reshapes and shrinks): the view's elements each name their
    buffer position (the same view of the positions, counted from 1, so padding reads -1), and the whole buffer is rewritten with x at
    them, as setitem does through index tensors"""
    buf = self.uop.base
    n = buf.shape[0]
    whole = Tensor(buf)
    chain = _view_chain(self.uop, buf)
    pos = (whole._arange(n) + 1).uop
    for v in reversed(chain): pos = pos._mop(v.op, v.marg)  # the same movement ops, on ints
    pos = Tensor(pos).flatten() - 1
    last = whole._last_write(pos._one_hot_at(n, 1), 0)
    Tensor(buf)._assign(last.ge(0).where(x.flatten().gather(0, last.maximum(0)), whole), value_private=True)
    return self
  def _data(self) -> memoryview:
    """the raw bytes, row-major"""
    if _engine().capturing is not None and not _reads_in_capture_allowed:
      from tinygrad.engine.jit import JitError
      raise JitError("cannot read tensor data (item, numpy, tolist, data) in a TinyJit capture: the replays would keep this value. "
                     "Return the tensor from the jitted function and read it outside")
    if not (n := prod(self.concrete_shape)): return memoryview(bytearray(0))
    if isinstance(self.device, tuple): return self.to(self.device[0])._data()  # gathered on the first device
    # a realized tensor may still be a view (permuted, shrunk, ...) of its buffer: then copy it out through a contiguous one
    _realize((t := self,), read=True)
    if not t._is_buffer(): t = t.contiguous().realize()
    if not t._is_buffer(): raise RuntimeError(f"the engine returned {t.uop.op} instead of a buffer for {t.shape} {t.dtype}")
    from tinygrad.engine.realize import buffer_of
    buf = buffer_of(t.uop.base)
    return buf.copyout(memoryview(bytearray(buf.nbytes)))[:n*self.dtype.itemsize]  # a Variable-sized buffer: the used prefix
  @property
  def concrete_shape(self) -> tuple[int, ...]:
    """the shape with each bound Variable replaced by its value"""
    if all_int(self.shape): return tuple(self.shape)
    vals = {v.arg.name: val for s in self.shape if isinstance(s, UOp) for v, val in (b.unbind() for b in s.toposort() if b.op is Ops.BIND)}
    try: return tuple(int(sym_infer(s, vals)) for s in self.shape)
    except KeyError as e: raise ValueError(f"shape {self.shape} holds an unbound Variable: bind it to read the data ({e})") from None
  def data(self) -> memoryview:
    """a memoryview in the tensor's format and shape (python's memoryview has no float16, bfloat16 or fp8 and no size 0 shapes)"""
    if self.dtype.fmt is None or self.dtype.fmt == "e": raise TypeError(f"memoryview cannot hold {self.dtype}: use .numpy() or .tolist()")
    return self._data().cast(self.dtype.fmt, self.concrete_shape) if prod(self.concrete_shape) else self._data().cast(self.dtype.fmt)
  def tolist(self) -> Any:
    if self.dtype.fmt is None: return self._computable().float().tolist()
    return _unflatten(list(struct.unpack(f"{prod(self.concrete_shape)}{self.dtype.fmt}", self._data())), self.concrete_shape)
  def _computable(self) -> Tensor:
    """self, or its copy on the default device where its own runs no kernels (DISK): a bfloat16 read back is converted by a kernel"""
    return self if Device.runs_kernels(self.device) else self.to(Device.DEFAULT)
  def item(self) -> Any:
    if all_int(self.shape):
      if self.numel() != 1: raise ValueError(f"item() needs a tensor with exactly one element, not shape {self.shape} ({self.numel()} elements)")
      _realize((self,), read=True)
      return self.reshape(()).tolist()
    # a shape of bound Variables counts with their values (an unbound one raises in concrete_shape)
    if (n := prod(self.concrete_shape)) != 1:
      raise ValueError(f"item() needs a tensor with exactly one element, not shape {_show_shape(self.shape)} ({n} elements)")
    v = self.tolist()
    while isinstance(v, list): v = v[0]
    return v
  def numpy(self):
    try: import numpy as np
    except ImportError: raise ImportError("Tensor.numpy() needs numpy: pip install numpy, or use .tolist()") from None
    if self.dtype.fmt is None: return self._computable().float().numpy()  # numpy has no bfloat16/fp8
    return np.frombuffer(self._data(), dtype=np.dtype(self.dtype.fmt)).reshape(self.concrete_shape)

_realize_module = None
def _engine():
  """tinygrad.engine.realize: imported with the first realize, not with tinygrad, then a global read (an import statement costs ~1 us)"""
  global _realize_module
  if _realize_module is None:
    from tinygrad.engine import realize as _realize_module
    _realize_module.before_write, _realize_module.capture_starts = _before_replay_write, _note_state_constants
  return _realize_module

# a TinyJit capture folds constants into its kernels. The Tensor.full handles made before it (a LayerNorm's weight) are state: one the
# capture reads becomes memory first, outside the capture, so the replays read its buffer and see what an optimizer or assign later
# writes there, where they read the folded 1.0 (upstream's Tensor.full is memory from the start). Handles made in the call stay constants
_state_constants: list[weakref.ref] = []
_captures_started = [0]
_reads_in_capture_allowed = False
@contextlib.contextmanager
def reads_in_capture_allowed():
  """tensor data read in a TinyJit capture, for a caller that has checked the values are the same every call (the ONNX runner's
  shapes and constants); anywhere else a read there raises JitError"""
  global _reads_in_capture_allowed
  before, _reads_in_capture_allowed = _reads_in_capture_allowed, True
  try: yield
  finally: _reads_in_capture_allowed = before
def current_capture() -> int|None:
  """the number of the TinyJit capture running now, None outside one"""
  return _captures_started[0] if _engine().capturing is not None else None
def _note_state_constants():
  """a capture starts: the live handles holding a graph of their own constants become their lazy contiguous() (no memory yet)"""
  _captures_started[0] += 1
  _state_constants.clear()
  for t in _live.alive():
    if (u := t.uop).op is not Ops.CONTIGUOUS and not _reads_memory(u) and _holds_own_constant(u):
      t.uop = _own_contiguous(u.contiguous())
      _state_constants.append(weakref.ref(t))

def _state_constants_read_by(ts:Sequence[Tensor]) -> None:
  """realize, outside the capture, the state constants (_note_state_constants) that ts's graphs read"""
  nodes = set(UOp.sink(*[t.uop for t in ts]).toposort())
  if not (held := [t for r in _state_constants if (t := r()) is not None and t.uop in nodes]): return
  mine = {id(t) for t in held}
  _state_constants[:] = [r for r in _state_constants if (t := r()) is not None and id(t) not in mine]
  engine = _engine()
  log, engine.capturing = engine.capturing, None
  try: _realize(held)
  finally: engine.capturing = log

def _float_dtype(what:str, dtype:DType|str|None) -> DType:
  """the dtype a sampler of real numbers makes: a float one (an int one would truncate every sample, mostly to 0 and -1)"""
  if not dtypes.is_float(dt := to_dtype(dtype or dtypes.default_float)): raise TypeError(f"{what} makes floats, not {dt}: use randint for ints")
  return dt

def _realize(ts:Sequence[Tensor], skip:tuple[Tensor, ...]=(), read:bool=False):
  """Tensor.realize; skip: handles left out of the readers of old contents (an assign's value, which the assign deals with); read: to
  read the values back (_keep_for_autograd)"""
  if _state_constants and _engine().capturing is not None: _state_constants_read_by(ts)
  todo = [t for t in ts if not t._is_buffer() and 0 not in t.shape]
  if _deferred: todo += _deferred_writes_read_by(ts, todo)  # a view of a buffer, realized already, reads a pending write's target too
  if not todo: return
  if any([_memo_any(t.uop, _WRITES, _WRITE_OPS, None) for t in todo]): todo += _old_value_readers(todo, skip)
  runs, becomes = _prepare(olds := [t.uop for t in todo])
  # constant-only graphs are not kept: two Tensor.arange(4) + 1 are one node (hash-consing), and a write into one must not show in the
  # other; recomputing a constant is cheap. A contiguous() of constants is a node of its own (_own_contiguous): it is kept, and so is a
  # graph a gradient flows through (over an empty leaf, which holds no memory): backward goes back from its buffer to the leaf.
  # The gradient path first: record() asks it of every node kept, and a training graph's nodes are on it (no walk for memory reads),
  # while the interpreter's caches are warm (an LSTM step's two walks took 11 of its 90 ms, one after its kernels)
  realized = {o: n for o, n in becomes.items() if o is not n and (_on_grad_path(o) or _reads_memory(o))}
  results = [becomes[o] for o in olds]
  # the bookkeeping is done (and the schedule dropped) before the kernels run: after a big one the interpreter's caches are cold
  del becomes
  for run in runs: run()
  _realized.record(realized)
  if read:
    _realized.last_read = _realized.epoch
    for o, n in realized.items():
      if dtypes.is_float(o.dtype): n.__dict__[_READ_BACK] = True  # autograd may want its graph (_implicit_targets)
  epoch, first_holder = _realized.epoch, {}
  for t, o, n in zip(todo, olds, results):
    _keep_for_autograd(t, o, read)
    t._uop, t._epoch = n, epoch  # the uop setter's work, without its call
    # equal graphs realized together (Tensor.realize(x * 2, x * 2): one node) got one buffer: the later handles hold equal values
    if o is not n and first_holder.setdefault(o, t) is not t and not _is_write(o): _equal_values.setdefault(n.base, []).append(weakref.ref(t))
  for o, t in first_holder.items(): _claim(o, t)

_WRITES, _WRITE_OPS = "_holds_write", frozenset({Ops.AFTER})  # AFTER: a buffer's value after a store or a custom kernel
def _old_value_readers(todo:list[Tensor], skip:tuple[Tensor, ...]) -> list[Tensor]:
  """the live tensors, not in todo or skip, whose values are still to be computed from the buffers todo's graphs write into: computed
  in the same run, whose kernels that read a buffer run before the ones that write it"""
  bufs: set[UOp] = set()
  for t in todo:
    for u in t.uop.toposort(lambda u: u.__dict__.get(_WRITES, True)):
      if u.op is Ops.AFTER: bufs.update(b for b in u.src[0].base.toposort() if b.op is Ops.BUFFER)
  mine = {id(t) for t in (*todo, *skip)}
  readers = _live.computing_from(bufs, mine, caught_up=_realized.any_into(bufs)) if bufs else []
  _copy_moved(readers)
  # after that search, which caught the handles up: those holding an equal value in a written buffer get copies, read before the write
  return [t for t in readers + _copy_equal_values(bufs, mine) if not t._is_buffer() and 0 not in t.shape]

# nn/inplace.defer's tensors, left to the next optimizer step: writes a module left pending (BatchNorm's running statistics) and losses
# backward() ran on
_deferred: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()

def _deferred_writes_read_by(ts:Sequence[Tensor], todo:list[Tensor]) -> list[Tensor]:
  """the deferred writes into buffers that ts's graphs read (a view of a running statistic taken before the forward reads it too), but
  those in todo: they land in the same run, before those reads, as reading the module's own handle would land them"""
  mine = {id(t) for t in todo}
  writes = [t for t in list(_deferred.values()) if id(t) not in mine and _memo_any(t.uop, _WRITES, _WRITE_OPS, None)]
  bufs = {b for t in writes for u in t.uop.toposort() if u.op is Ops.AFTER for b in u.src[0].base.toposort() if b.op is Ops.BUFFER}
  return writes if bufs and any(reads_buffer(t.uop, bufs) for t in ts) else []

def _before_replay_write(nodes:list[UOp]):
  """a TinyJit replay (which runs no python) is about to write into the buffers `nodes`: the live values still to be computed from their
  old contents are computed first, as _realize does for the writes it schedules"""
  if not (bufs := {u for u in nodes if u.op is Ops.BUFFER}): return
  readers = _copy_moved(_live.computing_from(bufs, set(), caught_up=_realized.any_into(bufs)))
  if readers := [t for t in readers if not t._is_buffer() and 0 not in t.shape]: _realize(readers)

def _copy_moved(readers:list[Tensor]) -> list[Tensor]:
  """readers of a buffer about to be written that are movement ops alone, which torch copies (a flip, a pad: tensor_views.py), become
  copies to compute: realized as they are, they would be the same view of the buffer"""
  for t in readers:
    if (b := t.uop.base).op is Ops.BUFFER or is_multi_buffer(b): t.uop = _own_contiguous(t.uop.contiguous())
  return readers

def _memo_any(u:UOp, key:str, ops:frozenset, mark:str|None, tagged:Ops|None=None) -> bool:
  """whether some node of u's graph has an op in `ops`, the attribute `mark`, or is a `tagged` op with a tag, kept on each node under
  `key`: graphs share their weights and inputs, so a walk stops at what an earlier one saw (fill_memo: a node decided once its sources
  are; this runs on every realize)"""
  if (ret := u.__dict__.get(key)) is not None: return ret
  def rule(x:UOp) -> bool:  # plain loops: a comprehension is a frame per node
    if x.op in ops or mark in x.__dict__ or (x.op is tagged and x.tag is not None): return True
    for s in x.src:
      if s.__dict__[key]: return True
    return False
  return fill_memo(u, key, rule)

_READS, _READ_OPS = "_reads_memory", frozenset({Ops.BUFFER, Ops.CALL})
def _reads_memory(u:UOp) -> bool:
  """u's graph reads a buffer, runs a custom kernel or holds a contiguous() of its own (a buffer once realized, that no graph built
  elsewhere shares); else it computes from constants alone"""
  return _memo_any(u, _READS, _READ_OPS, None, Ops.CONTIGUOUS)

_CUSTOM, _CUSTOM_OPS = "_holds_custom_gradient", frozenset({Ops.CUSTOM_GRADIENT})
# no graph is walked for them before UOp._custom_gradient made one (a program without conv2d's gradient or a sort never does). One made
# by hand is still taken out by the scheduler (rangeify): only the schedule cache misses it
def _prepare(olds:list[UOp]) -> tuple[list, dict[UOp, UOp]]:
  """prepare_uops(olds) on their graphs without CUSTOM_GRADIENT nodes (each is its value; only autograd reads the rest), its results
  keyed by the nodes of the graphs as built: the schedule cache sees the same graph on every step, not a new gradient function"""
  if not UOp.custom_gradients_made or not any([_memo_any(u, _CUSTOM, _CUSTOM_OPS, None) for u in olds]): return _engine().prepare_uops(olds)
  # only the nodes above a CUSTOM_GRADIENT change (each node's memo says whether one is below): a sort's values hold one at the top
  new: dict[UOp, UOp] = {}
  stack = [o for o in olds if o.__dict__[_CUSTOM]]
  while stack:
    x = stack[-1]
    if x in new:
      stack.pop()
      continue
    below = x.src[:1] if x.op is Ops.CUSTOM_GRADIENT else x.src  # a custom gradient's inputs are autograd's alone
    if todo := [s for s in below if s.__dict__[_CUSTOM] and s not in new]:
      stack.extend(todo)
      continue
    stack.pop()
    new[x] = new.get(x.src[0], x.src[0]) if x.op is Ops.CUSTOM_GRADIENT else x.replace(src=tuple([new.get(s, s) for s in x.src]))
  runs, becomes = _engine().prepare_uops([new.get(o, o) for o in olds])
  # keyed by the graphs as built (a node made here too: it is in no other graph)
  return runs, becomes | {o: becomes[n] for o, n in new.items() if n in becomes}

_GRAD_PATH, _WANTS_GRAD = "_on_grad_path", "_wants_grad"  # memo per node; the mark requires_grad=True leaves on its tensor's node
_grad_marks_made = False  # before the first mark no graph is on a gradient path: inference never walks for one
def _on_grad_path(u:UOp) -> bool:
  """u's graph holds the node of a tensor that was given requires_grad=True"""
  return _grad_marks_made and _memo_any(u, _GRAD_PATH, frozenset(), _WANTS_GRAD)

def _memos(u:UOp) -> dict[str, bool]:
  """u's memos of the walks realize() makes: a node built from u by movement and ALU ops alone (no buffer, custom gradient, mark or
  tag of its own, tensor_template.py) has the same"""
  return {_GRAD_PATH: _on_grad_path(u), _READS: _reads_memory(u), _CUSTOM: _memo_any(u, _CUSTOM, _CUSTOM_OPS, None)}

def _mark_wants_grad(u:UOp):
  """u is the node of a tensor with requires_grad=True: graphs built on it are on a gradient path (kept over a realize)"""
  global _grad_marks_made
  _grad_marks_made = True
  u.__dict__.update({_WANTS_GRAD: True, _GRAD_PATH: True})  # a memo made before the mark (an earlier realize's walk) is stale

def _is_write(u:UOp) -> bool:
  """u reads a buffer after an in-place write into it (assign, nn.inplace.pending_write): AFTER(target, STORE(target, value))"""
  return (b := u.base).op is Ops.AFTER and len(b.src) > 1 and b.src[1].op is Ops.STORE

def _derived_grad(t:Tensor) -> bool|None:
  """requires_grad of a copy of t (to(), shard()): a gradient reaches t through it, as through any op (torch: not a leaf of its own;
  one marked as a leaf kept its realized buffer as the end of the graph, and t got no gradient), and no gradient where t wants none"""
  return None if t.requires_grad else t.requires_grad

def _keep_for_autograd(t:Tensor, built:UOp, read:bool=False):
  """a handle whose graph a realize replaced by buffers keeps the graph it had (the first one), when a gradient may be wanted through
  it: backward() goes back through the nodes the buffers replaced (_Realized.unrealized), and they live as long as this handle does,
  as torch keeps a loss's graph. Graphs no gradient needs are not kept, nor a write: autograd never goes back into one (_Realized).
  read: the realize read values back (item(), numpy(), tolist()), which in tinygrad 0.14 leaves the tensor lazy, so a later backward()
  with no requires_grad anywhere goes through it to every tensor below: a float graph over memory is kept for that"""
  if "_built" in t.__dict__ or _is_write(built): return
  if _on_grad_path(built) or read and dtypes.is_float(built.dtype) and _reads_memory(built): t._built = built

def _kept(ts:Sequence[Tensor]) -> dict[UOp, UOp]:
  """the nodes autograd keeps for tensors that want gradients (_Realized.unrealized), each also under the node its handle had before a
  realize caught it up (a lazy sharded tensor given requires_grad, realized with its user's graph: a graph brought back holds that one)"""
  ret = {t.uop: t.uop for t in ts}  # each handle caught up first: that is when it keeps the node it had (_keep_for_autograd)
  return ret | {b: t.uop for t in ts if (b := t.__dict__.get("_built")) is not None and b not in ret}

def _joined_nodes(what:str, first, rest:tuple) -> list[UOp]:
  """the nodes of the tensors cat or stack joins (called on one, or on a list of them as Tensor.cat(ts)), each checked to be a Tensor"""
  ts = [*first, *rest] if isinstance(first, (list, tuple)) else [first, *rest]
  if (bad := next((i for i, t in enumerate(ts) if not isinstance(t, Tensor)), None)) is not None:
    raise TypeError(f"{what} joins Tensors, but operand {bad} is of type {type(ts[bad]).__name__}: wrap it with Tensor(...)")
  return [t.uop for t in ts]

def _on_one_device(what:str, nodes:list[UOp]) -> list[UOp]:
  """nodes on one device: a graph of constants alone (Tensor(2.0), an arange: no memory of its own) is made on the device of the
  others, as tinygrad 0.14 lets it; values in memory on different devices are an error"""
  if len({n.device for n in nodes if n.device is not None}) < 2: return nodes
  held = list(dict.fromkeys(n.device for n in nodes if n.device is not None and (_reads_memory(n) or _holds_own_constant(n))))
  if len(held) > 1: raise RuntimeError(f"{what} of tensors on different devices: {[n.device for n in nodes]}; move them with .to(device)")
  dev = held[0] if held else next(n.device for n in nodes if n.device is not None)
  return [n if n.device in (None, dev) else n.substitute({d: _device_node(dev) for d in n.toposort() if d.op is Ops.DEVICE}) for n in nodes]

def _private_buffer(u:UOp, keep_value:bool=True) -> UOp:
  """a new buffer holding u's value (or nothing yet, keep_value=False: a write of every element follows), for this handle alone (written
  now): realize() would share one buffer among every tensor whose graph is the same node, and an in-place write would show in all"""
  if 0 in u.shape: return u  # no elements: no memory to hold, nothing a write could show
  if (sh := shard_of(u)) is not None:  # laid out like u: each device's buffer holds its piece
    target = UOp.multi([Tensor.empty(*[n if i == sh[0] else s for i, s in enumerate(u.shape)], device=d, dtype=u.dtype).uop
                        for n, d in zip(sh[1], u.device)], sh[0])
  else: target = Tensor.empty(*u.shape, device=u.device, dtype=u.dtype).uop
  if keep_value: Tensor(target.after(target.store(u))).realize()
  return target

def _refuse_cut_paths(nodes) -> None:
  """autograd's graph reads no buffer in which an in-place write replaced a value a gradient flowed through (h = (w * w).realize(); h += 1):
  the path through it is cut, and a gradient that should reach w would silently not (torch differentiates the write)"""
  if _realized.last_write < 0: return
  if (cut := next((u for u in nodes if u.op is Ops.BUFFER and u.__dict__.get(_CUT)), None)) is not None:
    raise RuntimeError(f"backward: this graph reads a {cut.dtype} buffer of {cut.arg.shape[0]} elements {_CUT_PATH}")

def _refuse_dropped_graphs(nodes:list[UOp], root:UOp, keep:dict[UOp, UOp]) -> None:
  """autograd's graph reads no buffer a realize put in place of a value a gradient flows through whose graph is gone: its handle, which
  kept it, died (logits realized by an accuracy read inside a loss function that returned): the gradients behind it would silently be
  missing. The graph is kept by the handle that was realized or caught up to the buffer (_keep_for_autograd), and only by it. A tensor
  that wants a gradient (in keep: a parameter realized from its initializer) ends the path there, and so does an in-place write (an
  optimizer step's: the values behind it, its gradients and moments, pass no gradient on): neither's own graph is needed"""
  # one pass over root's nodes; only a candidate found (rare) pays for the walk that stops at writes and kept targets
  if not (dead := [u for u in nodes if u.__dict__.get(_GRAD_PATH) and (wr := u.__dict__.get(_REALIZED_FROM)) is not None and wr() is None]):
    return
  kept = set(keep.values())
  reached = set(root.toposort(lambda x: x not in kept and not _is_write(x)))
  for u in dead:
    if u not in kept and u in reached:
      raise RuntimeError(f"backward: this graph reads a {u.dtype} value of shape {u.shape} that was realized (item(), numpy(), realize() of it "
                         f"or of something computed from it) and whose graph is gone with the tensor that held it: gradients behind it "
                         f"cannot be computed. Keep that tensor alive until backward(), or realize after backward()")

# buffer node -> the handles that caught up to it because another handle's equal graph was realized into it (hash-consing makes two
# equal graphs one node): values equal to the buffer's when realized, not views of it. Weak both ways: dies with the buffer node
_equal_values: weakref.WeakKeyDictionary[UOp, list] = weakref.WeakKeyDictionary()
# realized graph -> the handle that holds it as its own value (the one realized, or the first to catch up to it), weakly: a graph that
# outlives its handle is claimed again by the next one
_claimed: weakref.WeakKeyDictionary[UOp, weakref.ref] = weakref.WeakKeyDictionary()
def _claim(u:UOp, t:Tensor) -> bool:
  """whether t holds the realized graph u as its own value: it is the first live handle to"""
  if (r := _claimed.get(u)) is not None and (h := r()) is not None: return h is t
  _claimed[u] = weakref.ref(t)
  return True

def _copy_equal_values(bufs:set[UOp], mine:set[int]) -> list[Tensor]:
  """before a write into bufs: the handles (but those whose ids are in mine: the writer's) that share one of them only as an equal value
  (a = x * 2; b = x * 2; a realized, b caught up to its buffer) each become a copy of the contents, to compute in the write's run
  before it, so the write shows in the writer's views alone"""
  ret = []
  for b in bufs:
    for r in _equal_values.pop(b, []):
      if (h := r()) is not None and id(h) not in mine and h.uop.base is b:
        h.uop = _own_contiguous(h.uop.contiguous())
        ret.append(h)
  return ret

def _own_if_equal(t:Tensor) -> None:
  """t caught up to another handle's buffer as an equal value (_equal_values): a write into t goes into a copy of its own"""
  if (refs := _equal_values.get(t.uop.base)) and any(r() is t for r in refs):
    refs[:] = [r for r in refs if r() is not t]
    t.uop = _private_buffer(t.uop)

def _share_with_views(t:Tensor) -> bool:
  """a write into t, which has no buffer yet, follows. Where t is movement ops over a lazy value that reads memory, or such a value with
  live views of it taken since, the value's handle and every live view of it now share one new buffer holding it, so the write shows in
  all of them, as in torch. Not where several handles hold the value itself: equal graphs are one node (hash-consing: base * 2 built
  twice), and each of those tensors is its own. Nor a value of constants alone: equal ones are one node wherever they were built; but a
  Tensor.full's constant is its own (_own_constant), and its broadcast to the full shape is the value its views share (a KV cache made
  with Tensor.zeros, written through cache[:, a:b].assign)"""
  if (base := t.uop.base).op is Ops.BUFFER or is_multi_buffer(base): return False
  if not _reads_memory(base):
    if base.op is not Ops.CONST or base.tag is None or t.uop is base: return False
    const, chain = base, _view_chain(t.uop, base)
    base = next((u for u in reversed(chain) if u.op is Ops.EXPAND), chain[-1])
    holders = [h for h in _live.viewing(const) if base in _view_chain(h.uop, const)]
  elif t.uop is not base: holders = _live.viewing(base)
  elif len(holders := [h for h in _live.made_after(t) if h.uop.base is base] + [t]) == 1: return False  # no view of it: its own buffer
  if len([h for h in holders if h.uop is base]) > 1: return False
  buf = _private_buffer(base)
  # each graph as found above: catching up across the realize just made would file the value's handle as an equal value of buf, not
  # its holder, and a write into buf would give it a copy of its own
  for h in holders: h.uop = h._uop.substitute({base: buf})
  return True

def _view_chain(view:UOp, base:UOp) -> list[UOp]:
  """the movement ops from view down to base, view first"""
  chain = []
  while view is not base: chain, view = chain + [view], view.src[0]
  return chain

def _reads_elsewhere(value:UOp, target:UOp) -> bool:
  """value reads target's buffer at some other index than the one being written (through another view, a reduce): writing in place
  would read elements the same kernel already overwrote"""
  buf, moves = target.base, {Ops.REDUCE_AXIS} | GroupOp.Movement
  # target a view that moves elements (a flip, a slice): value reading the buffer itself, at the written element's own index, reads
  # another element than the one written (a[::-1] = a gave [0 1 2 2 1 0])
  moved = not _reshapes_of(target, buf)
  if moved and value is buf: return True
  reads: set[UOp] = set()  # the nodes that read it; sources come first, so a node reads it when one of its sources is in here
  # the walk stops at target and at the nodes whose buffer filter (kept on each node) misses buf: an optimizer's state write reads its
  # state directly, beside a gradient whose whole graph reads other buffers (each of an MNIST CNN's 26 Adam writes walked it: 7 of 134 ms)
  bit = read_bits(buf)
  if not read_bits(value) & bit: return False
  for u in value.toposort(lambda u: u is not target and u.__dict__[_BITS] & bit):
    if u is target or u is buf or not reads.isdisjoint(u.src):
      if u is not target and (u.op in moves or (moved and buf in u.src)): return True
      reads.add(u)
  return False

def _reshapes_of(view:UOp, buf:UOp) -> bool:
  """view is buf only reshaped: every element keeps its flat position"""
  while view is not buf:
    if view.op is not Ops.RESHAPE: return False
    view = view.src[0]
  return True

_made = itertools.count()
def _own_constant(c:UOp) -> UOp:
  """a constant that is a node of its own, not one with every equal constant (hash-consing), so backward() gives it a gradient of its own
  as tinygrad 0.14 gives its Tensor.full buffer one. Only the tag differs: the schedule cache numbers tags by their order in the graph
  (schedule/cache.py), and a kernel's constants are made anew from the value, so it folds as an untagged one does"""
  return c.replace(tag=("full", next(_made))) if c.op is Ops.CONST else c

def _own_contiguous(c:UOp) -> UOp:
  """a contiguous() of constants alone as a node of its own: realize() keeps the buffer it becomes (tinygrad's llama builds its rotary
  table this way, once, and reads it in every step), and an equal graph built elsewhere (another Tensor.arange(n).contiguous()) is
  another node, so a write through one never shows in the other. The schedule cache numbers the tag as it does a constant's"""
  return c.replace(tag=("contiguous", next(_made)))

def _holds_own_constant(u:UOp) -> bool:
  """u's graph holds a constant of its own (_own_constant): a graph of constants alone that is no other graph's node"""
  return any(x.op is Ops.CONST and x.tag is not None for x in u.toposort())

def _no_elements(device:str, dtype:DType, shape:tuple) -> UOp:
  """a tensor without elements holds no memory (a buffer can't have 0 bytes): a constant viewed as shape"""
  return UOp.const(dtype, 0, device).reshape((1,)*len(shape)).expand(shape)

class _Realized:
  """What realize() turned into buffers: old node -> (epoch, buffer view). A live tensor whose graph holds a realized node reads the buffer
  from then on, so no work is done twice (an in-place custom kernel must not run again when another handle on its result is realized).
  A realize only records and bumps the epoch: its cost does not depend on how many tensors are alive. Each handle catches up on its next
  use, applying only what was realized after it last looked (a node built again after its realize, like a second in-place kernel call,
  is new work). Weak on the old nodes: an entry, and the buffer it holds, lives only while some graph still holds the node.
  An in-place write ends a gradient path: the buffer it leaves holds new values, a leaf whose gradient is its own (a parameter's after an
  optimizer step), not the written value's graph, so autograd never goes back into a write, realized or not (a STORE has no gradient)."""
  # id(old node) -> (epoch, buffer view, weak reference to the old node): a lookup is a dict read by id, with no weak reference made
  # per lookup (WeakKeyDictionary makes one, and its python-level methods run on every realize). The reference's death drops the entry
  def __init__(self):
    self.epoch, self.nodes, self._ids = 0, {}, {}  # _ids: weak reference -> the id it is the entry of
    self.last_write = -1  # the epoch of the last in-place write
    self.last_read = -1  # the epoch of the last realize that read values back (_keep_for_autograd)
    nodes, ids = self.nodes, self._ids
    # one callback for every reference; it holds the dicts, not self, so it still works while the interpreter tears down
    self._on_death = lambda wr: nodes.pop(ids.pop(wr), None)
  def record(self, becomes:dict[UOp, UOp]):
    if not becomes: return
    self.epoch += 1
    for old, new in becomes.items():
      if (r := self.nodes.get(key := id(old))) is not None: self.nodes[key] = (self.epoch, new, r[2])  # recorded again: same reference
      else:
        self.nodes[key] = (self.epoch, new, wr := weakref.ref(old, self._on_death))
        self._ids[wr] = key
      # for autograd (unrealized): the node, while something keeps it; none for a write, and a link from before it is stale. The written
      # buffers keep the epoch of the write: a graph realized before it (in an earlier run or earlier in this one) read other contents
      if _is_write(old):
        # a value a gradient could flow through, not a leaf that wants one (a parameter's step): a graph over the buffer gets no gradient
        cut = (wr := new.__dict__.pop(_REALIZED_FROM, None)) is not None and (was := wr()) is not None and _on_grad_path(was) and \
              _WANTS_GRAD not in was.__dict__ and _WANTS_GRAD not in new.base.__dict__
        for b in old.base.src[0].toposort():
          if b.op is Ops.BUFFER: b.__dict__.update({_WRITTEN: self.epoch, _CUT: cut or b.__dict__.get(_CUT, False)})
        self.last_write = self.epoch
      else:
        new.__dict__[_REALIZED_FROM] = self.nodes[key][2]
        # a buffer holding a value on a gradient path is on it too: a graph built on it is kept over its own realize (h = x.exp(); h
        # realized, then h * 2 realized: without, backward lost the path through h * 2)
        if _on_grad_path(old): new.__dict__[_GRAD_PATH] = True
  def any_into(self, bufs:set[UOp]) -> bool:
    """a node still alive was realized into one of bufs (a graph holding it reads that buffer once caught up)"""
    return any([new.base in bufs for _, new, _ in self.nodes.values()])
  def get(self, u:UOp) -> tuple[int, UOp]|None:
    """(epoch, buffer view) of the realize that last recorded u, or None"""
    return None if (r := self.nodes.get(id(u))) is None else r[:2]
  def unrealized(self, u:UOp, keep:dict[UOp, UOp], brought:list[UOp]|None=None) -> UOp:
    """u with each buffer view a realize put in place of a node that is still alive replaced by that node (again inside it, for a node
    built on an earlier realize's buffer): the graph as it was built, which autograd differentiates. Nodes in `keep` (the tensors that
    want gradients, each the value of its own key) stay, and a key that is a node such a tensor had before a realize caught it up
    becomes its kept node. A write in a graph brought back becomes its buffer again (the leaf a parameter's handle now is); one that u
    itself holds is work still to do, even where an equal node (an optimizer step's write, the same each step) was realized before"""
    nodes, built = self.nodes, None
    for _ in range(self.epoch + 1):  # each round goes back at least one realize; the last one only renames what it brought back
      topo = u.toposort()
      undo = {x: old for x in topo if x not in keep and (wr := x.__dict__.get(_REALIZED_FROM)) is not None and (old := wr()) is not None}
      if self.last_write >= 0: self._refuse_overwritten(undo)
      if built is None: built = topo  # round one brings no graph back: the writes u holds are all still to do
      else: undo |= {x: r[1] for x in topo if x.op is Ops.AFTER and x not in built and x not in keep and x not in undo and
                     (r := nodes.get(id(x))) is not None and _is_write(x)}
      # a kept node stays as it is even where its sources were realized too (a sharded parameter: its MULTI and each device's piece)
      kept = {x: keep[x] for x in topo if x in keep}
      if not undo and all(k is x for x, k in kept.items()): break
      if brought is not None: brought += undo.values()
      u = u.substitute(kept | undo)
    return u
  def _refuse_overwritten(self, undo:dict[UOp, UOp]) -> None:
    """no buffer view in undo (each to be replaced by the node a realize computed into it) was written in place since: it holds other
    values now, and a gradient through the node would be the old value's (a view realized in its own layout, then written: y[0] = 5)"""
    for x, old in undo.items():
      if (r := self.nodes.get(id(old))) is not None and _written_since(x, r[0]) and _on_grad_path(old):
        raise RuntimeError(f"backward: this graph reads a {x.dtype} buffer {_CUT_PATH}")
  def refuse_stale_reads(self, brought:list[UOp], grads:list[UOp]) -> None:
    """raise where the gradients read a buffer that a graph brought back (`brought`, from unrealized) read before it was written in place:
    the gradient would read the new contents where the value was computed from the old (torch: "modified by an inplace operation").
    Without this it did so silently, or, where the write cut the link to the graph below, gave no gradient at all. The reads under an
    in-place write are not walked: autograd never goes into one, and it reads as written (a parameter after its optimizer step)"""
    since: dict[UOp, int] = {}  # node -> the earliest realize of a graph brought back that holds it
    for o in brought:
      if (r := self.nodes.get(id(o))) is not None: since[o] = min(since.get(o, r[0]), r[0])
    if not since or self.last_write < min(since.values()): return  # no write since the oldest of them (a training step's loss)
    stale: set[UOp] = set()
    for u in reversed(UOp.sink(*since).toposort()):
      if (e := since.get(u)) is None or u.op is Ops.AFTER: continue
      if u.op is Ops.BUFFER and _written_since(u, e): stale.add(u)
      for x in u.src: since[x] = min(since.get(x, e), e)
    if not stale: return
    # the gradient reads it, or it held a value a gradient flowed through: the write cut that path, and a graph from before it gets none
    if (hit := next((b for b in stale if b.__dict__.get(_CUT)), None)) is None:
      hit = next((b for b in UOp.sink(*grads).toposort() if b in stale), None)
    if hit is not None:
      raise RuntimeError(f"backward: a {hit.dtype} buffer of {hit.arg.shape[0]} elements was written in place (assign, +=, setitem, an optimizer "
                         f"step) after this graph's value was computed from it, and its gradient would read the new contents: call "
                         f"backward() before the write, or compute the value again after it")
  def since(self, u:UOp, epoch:int, pending:dict|None=None, unwritten:bool=False) -> UOp:
    """u with each node realized after `epoch` replaced; again on the result, as a node built on a replacement may have been realized later.
    Nodes in `pending` stay: a caught-up handle's graph, where a realized node is one built again since, work still to do. unwritten: only
    nodes whose buffer was not written in place since (autograd's: the buffer no longer holds the node's value, which it recomputes)"""
    nodes, last_write = self.nodes, self.last_write if unwritten else -1
    # a node realized itself (a parameter reading its optimizer write, realized with the loss) is its buffer view, with no walk
    while (r := nodes.get(id(u))) is not None and r[0] > epoch and (pending is None or u not in pending) and \
          not (last_write >= r[0] and _outdated(u, r)): u = r[1]
    if not u.src: return u  # a leaf (a buffer: every realized input or weight, after each realize) has nothing below it to replace
    while nodes:
      hits: dict[UOp, UOp] = {}
      def realized(x:UOp) -> bool:
        # a realized node is replaced whole, so the walk stops there: an optimizer's update reads the moments it realized, not the
        # backward graph below them
        if (r := nodes.get(id(x))) is None or r[0] <= epoch or (pending is not None and x in pending): return True
        if last_write >= r[0] and _outdated(x, r): return True  # the buffer no longer holds x's value
        hits[x] = r[1]
        return False
      topo = u.toposort(realized)
      if not hits: break
      new: dict[UOp, UOp] = {}
      for x in topo:  # substitute's rebuild, on the walk just made
        new[x] = hits[x] if x in hits else x if all([new[s] is s for s in x.src]) else x.replace(src=tuple([new[s] for s in x.src]))
      u = new[u]
    return u

_REALIZED_FROM = "_realized_from"  # on a buffer view a realize substituted: a weak reference to the node it replaced
_READ_BACK = "_read_back"  # on such a view of a float value, when the realize read values back (item(), numpy(), tolist())
_WRITTEN = "_written_epoch"  # on a BUFFER node: the epoch of the realize that last wrote into it in place
def _written_since(view:UOp, epoch:int) -> bool:
  """the buffer under view was written in place by the realize of `epoch` or a later one"""
  return view.base.__dict__.get(_WRITTEN, -1) >= epoch
def _outdated(x:UOp, r:tuple) -> bool:
  """the buffer a realize of epoch r[0] computed x into (r[1]) holds another value than x's now: it was written in place since, or a
  buffer x reads was (a parameter's optimizer step: the matmul over it realized by the last step's backward is not this step's)"""
  return _written_since(r[1], r[0]) or any(_written_since(b, r[0]) for b in x.toposort() if b.op is Ops.BUFFER)
_CUT = "_cut_gradient_path"  # on a BUFFER node: an in-place write replaced a value in it that a gradient could flow through
_CUT_PATH = ("that held a value a gradient flows through (realized) and was then written in place (+=, setitem, assign): the path back "
             "through that value is cut. Write before realizing it, or build the new value out of place (h = h + 1)")
_realized = _Realized()
_PY_SCALARS = frozenset({int, float, bool})  # the python numbers an op takes as a constant (Tensor._binop)

def _handle(u:UOp) -> Tensor:
  """Tensor(u) for the node an op just built from tensors (no argument to check): the constructor's work on a UOp, without its branches"""
  t = Tensor.__new__(Tensor)
  t._requires_grad, t.grad, t._uop, t._epoch = None, None, u, _realized.epoch
  u.shape  # shape errors (a bad broadcast, reshape, ...) surface where the op is written, not at realize
  _live.add(t)
  return t

# the mixins' ops of one tensor that take several steps, built on its node and wrapped in one handle: a handle per step costs as much
# again as the step (a fresh softmax graph: 43 -> 32 us of python, var 58 -> 45). The node built is the same one (hash-consing, the same
# mixin code), so autograd and realize see no difference; not the ops that reach Tensor.abs (its gradient convention differs from the
# mixin's). An argument that is a tensor (hardtanh's bounds) takes the step-by-step way
_ON_NODE = ("softmax", "softmin", "log_softmax", "mean", "var", "std", "var_mean", "std_mean", "sigmoid", "tanh", "cos", "tan", "sinh",
            "cosh", "acosh", "atanh", "relu6", "hardtanh", "leaky_relu", "hardsigmoid", "hardswish", "elu", "celu", "selu", "silu", "swish",
            "quick_gelu", "gelu", "relu", "exp", "log", "sign", "isinf", "clip", "round", "floor", "ceil", "argmax", "argmin", "min", "all",
            "sort", "topk")  # the sorts: a few hundred nodes (topk 16 of a row: ~240 handles, 1.5 ms of python against 2 ms of kernels)

def _on_node(fn:Callable) -> Callable:
  @functools.wraps(fn)
  def op(self:Tensor, *args, **kwargs):
    if any([isinstance(a, Tensor) for a in args]) or any([isinstance(a, Tensor) for a in kwargs.values()]): return fn(self, *args, **kwargs)
    ret = fn(self.uop, *args, **kwargs)
    return tuple(_handle(r) for r in ret) if isinstance(ret, tuple) else _handle(ret)
  return op

for _name in _ON_NODE: setattr(Tensor, _name, _on_node(getattr(OpMixin, _name)))

# in-place operators: on a buffer or a view of one, the result is written into it (assign), as tinygrad's do: `w -= lr * w.grad` updates
# w's buffer and every view of it, a view's `v += 1` writes into its base. A lazy value (no buffer of its own yet) takes the result as
# its graph instead (its handle changes, as every name bound to it sees), and a gradient flows on through it as through torch's `h += x`;
# assign would write it now and cut the path. Without them python rebinds the name and a buffer never changes
_IN_PLACE = {"__iadd__": operator.add, "__isub__": operator.sub, "__imul__": operator.mul, "__itruediv__": operator.truediv,
             "__ifloordiv__": operator.floordiv, "__ipow__": operator.pow, "__imatmul__": operator.matmul, "__iand__": operator.and_,
             "__ior__": operator.or_, "__ixor__": operator.xor, "__ilshift__": operator.lshift, "__irshift__": operator.rshift}
def _in_place(op:Callable) -> Callable:
  def method(self:Tensor, x) -> Tensor:
    if not self._grad_flows() and not (isinstance(x, Tensor) and x._grad_flows()): _share_with_views(self)
    value = op(self, x)
    if (b := self.uop.base).op is Ops.BUFFER or is_multi_buffer(b): return self._assign(value, value_private=True)
    if value.shape != self.shape or value.dtype != self.dtype:
      raise ValueError(f"in-place {op.__name__} of {self.shape} {self.dtype} gives {value.shape} {value.dtype}: it must keep the shape and dtype")
    return self.replace(value)
  return method

for _name, _op in _IN_PLACE.items(): setattr(Tensor, _name, _in_place(_op))

# every live tensor that was given requires_grad=True, by id: backward fills in .grad of those in the loss's graph
_needs_grad: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()
_live = LiveTensors()  # every handle: backward() with no requires_grad=True tensor in the graph works as tinygrad 0.14's

def _check_fits(values:Sequence, dtype:DType, fix:str="pass dtype= a wider type (e.g. dtypes.int64)"):
  """like numpy and torch: a python int that doesn't fit an int dtype is an error, never a silent wraparound; a float is truncated
  toward zero first, as the cast does (255.5 is 255 in uint8)"""
  def whole(v): return math.trunc(v) if isinstance(v, float) and math.isfinite(v) else v
  if (bad := next((v for v in values if not dtype.min <= whole(v) <= dtype.max), None)) is not None:
    raise OverflowError(f"{bad} does not fit in {dtype} [{dtype.min}, {dtype.max}]; {fix}")

def _compute_device(device):
  """where a value for `device` is computed: the device itself, or the default one for a device that runs no kernels"""
  return device if Device.runs_kernels(device) else Device.DEFAULT

def _bitcasts_outside(u:UOp) -> UOp|None:
  """u, a chain of movement ops and same-size bitcasts down to a buffer, with its bitcasts left out (they commute with movement: each
  element keeps its bytes' place), where it has any; else None. An assign through it writes the value bitcast to the buffer's dtype"""
  ops, x, seen = [], u, False
  while x.op is not Ops.BUFFER:
    if x.op is Ops.BITCAST and x.dtype.itemsize == x.src[0].dtype.itemsize: seen = True
    elif x.op in GroupOp.Movement: ops.append((x.op, x.marg))
    else: return None
    x = x.src[0]
  for op, arg in reversed(ops): x = x._mop(op, arg)
  return x if seen else None

def _split_off_moves(u:UOp) -> tuple[UOp, list]|None:
  """u (on a device that runs no kernels) as (a run of its buffer's bytes, the movement ops on top of it), or None where no such split
  exists: the run is copied to another device, and the moves (a transpose, a flip, a strided slice) made there"""
  from tinygrad.schedule.byte_views import byte_range
  ops = []
  while byte_range(u, {}) is None:
    if u.op not in GroupOp.Movement: return None
    ops.append((u.op, u.marg))
    u = u.src[0]
  return u, ops[::-1]

def _pinned(shape:tuple) -> tuple:
  """shape with each size whose Variables' bounds pin it to one number (Variable("toks", 1, 1)) as that number: a slice buf[:, 1:1+v]
  folds to it, while v itself stays a Variable"""
  return shape if all_int(shape) else tuple(s.vmin if isinstance(s, UOp) and s.vmin == s.vmax else s for s in shape)

def _buffer_from(device:str, dtype:DType, shape:tuple, data:Sequence|bytes) -> UOp:
  """a BUFFER filled now from python values (converted like dtype holds them) or raw bytes, viewed as shape"""
  if not all_int(shape): raise ValueError(f"data needs a concrete shape, got {shape}")
  if not prod(shape): return _no_elements(device, dtype, shape)
  if dtype.fmt is None:  # struct has no bfloat16/fp8: raw bytes go in as same-size uints, values as float32, converted lazily
    if isinstance(data, bytes): return _buffer_from(device, {1: dtypes.uint8, 2: dtypes.uint16}[dtype.itemsize], shape, data).bitcast(dtype)
    return _buffer_from(device, dtypes.float32, shape, data).cast(dtype)
  if not isinstance(data, bytes) and dtypes.is_int(dtype): _check_fits(data, dtype)
  raw = data if isinstance(data, bytes) else struct.pack(f"{len(data)}{dtype.fmt}", *[dtypes.as_const(v, dtype) for v in data])
  buf = UOp.new_buffer(device, prod(shape), dtype)
  if raw:
    from tinygrad.engine.realize import buffer_of
    buffer_of(buf).copyin(memoryview(bytearray(raw)))
  return buf.reshape(shape)
