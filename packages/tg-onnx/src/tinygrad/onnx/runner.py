"""OnnxRunner: runs a parsed model's graph node by node on Tensors. Everything stays lazy except the few values ONNX passes as
tensors but that must be python numbers to build the graph (shapes, axes, pads): those are read once and cached, from the model's
constants and Shape outputs without running anything, so wrapping the runner in TinyJit compiles the whole model."""
from __future__ import annotations
import contextlib, os
from typing import Any, Callable
from tinygrad.tensor import Tensor, reads_in_capture_allowed
from tinygrad.device import Device
from tinygrad.engine.jit import TinyJit
from tinygrad.helpers import JIT_CAPTURE, getenv
from tinygrad.uop.ops import UOp, Ops, Variable
from tinygrad.onnx.model import Model, Graph, load_model, ValueType
from tinygrad.onnx.tensor_data import TensorData, ONNX_TYPES
from tinygrad.onnx.ops import resolve, OpImpl
from tinygrad.onnx.ops.registry import check_node
from tinygrad.onnx.fold import fold

class RunContext:
  """What an op sees beyond its inputs: python values of inputs, its output count, subgraphs, the model's opsets."""
  def __init__(self, runner:OnnxRunner):
    self.runner, self.n_outputs = runner, 1
    self.opsets = runner.model.opsets
    self.index, self.node, self.args = -1, None, []  # the node running now, for errors
  def known(self, t:Tensor, values:list) -> Tensor:
    """remember the python values of a tensor built from them (Shape, Constant): later ops read them without running anything"""
    self.runner._vals[t.uop] = list(values)
    return t
  def known_vals(self, t:Tensor) -> list|None:
    """t's python values where they are known without running anything (small constants, shapes, their folds), else None"""
    return self.runner._vals.get(t.uop)
  def vals(self, t:Tensor) -> list:
    """t's values as python numbers: known ones (constants, shapes, their folds) as they are, others read (a sync). Under a TinyJit
    capture a value computed from the model's inputs is refused: the replays would build nothing and keep this call's values"""
    if (v := self.runner._vals.get(t.uop)) is None:
      if JIT_CAPTURE and self.runner._reads_inputs(t): raise RuntimeError(self._frozen(t))
      with reads_in_capture_allowed(): v = self.runner._vals[t.uop] = list(_flat(t.tolist()))  # the same every call: read, in a capture too
    return v
  def describe(self) -> str:
    """the running node as errors name it: its index, op and name"""
    return f"ONNX node {self.index} {self.node.op} {self.node.name!r}" if self.node is not None else "ONNX node"
  def _frozen(self, t:Tensor) -> str:
    what = next((f"input {n!r}" for n, a in zip(self.node.inputs, self.args) if a is t), "a value computed from its inputs")
    return (f"{self.describe()} reads {what} as python numbers to build the graph (a shape, an index, a count), and it comes from the "
            "model's inputs or a dynamic= size: under OnnxRunner.jit() the capture would keep this call's values for every later call. "
            "Run the model without jit(), or make that input a constant (an initializer)")
  def onnx_type_id(self, t:Tensor) -> int:
    """the ONNX data type a tensor was declared with (constants and inputs keep theirs; 4-bit ints and float8 compute wider)"""
    if (tid := self.runner._onnx_types.get(t.uop)) is not None: return tid
    return next(k for k, v in ONNX_TYPES.items() if v.dtype is t.dtype and v.fmt is not None)
  def ints(self, t:Tensor) -> list[int]: return [int(v) if not isinstance(v, UOp) else v for v in self.vals(t)]
  def tensor_of(self, td:TensorData) -> Tensor: return self.runner._const(td)
  def run_graph(self, g:Graph, inputs:list, scope:dict) -> list:
    """a subgraph (If/Loop/Scan body): its inputs bound in order, the enclosing scope visible"""
    env = dict(scope)
    for name, v in zip(g.inputs, inputs): env[name] = v
    return self.runner._run_graph(g, env)

def _flat(x):
  if isinstance(x, list):
    for v in x: yield from _flat(v)
  else: yield x

class OnnxRunner:
  """OnnxRunner(path | bytes | Tensor of the file's bytes | Model)(inputs: {name: Tensor | numpy array | list}) -> {output name: Tensor}.
  A graph input with a named dimension ("batch") accepts any size there; dynamic={"batch": 64} makes that dimension a Variable
  bound to each call's size (at most 64), so one compiled model serves every batch size."""
  def __init__(self, model:Model|Tensor|str|os.PathLike|bytes, device:str|None=None, dynamic:dict[str, int]|None=None):
    self.model = model if isinstance(model, Model) else load_model(_file_bytes(model) if isinstance(model, Tensor) else model)
    self.debug = 0  # DEBUGONNX: 1 prints each node as it runs, 2 its inputs and outputs too
    self.device = device
    self.graph = self.model.graph
    self.variables = {name: Variable(name, 1, mx) for name, mx in (dynamic or {}).items()}
    # python values by UOp: the constants' for the runner's life, plus what one run computed (dropped when the next starts)
    self._pyvals: dict[UOp, list] = {}
    self._vals: dict[UOp, list] = {}
    self._inputs: set[UOp] = set()  # the running call's model inputs: a value read from them is per call
    self._consts: dict[int, Tensor] = {}
    self._onnx_types: dict[UOp, int] = {}
    self.initializers = {name: self._const(td) for name, td in self.graph.initializers.items()}
    self._impls: dict[int, OpImpl] = {}

  def _const(self, td:TensorData) -> Tensor:
    if (t := self._consts.get(id(td))) is not None: return t
    if td.dtype is None: raise TypeError(f"constant {td.name!r} is {td.onnx_type.name}: tinygrad tensors hold numbers only")
    t = Tensor(bytes(td.data), device=self.device, dtype=td.dtype).reshape(td.shape) if len(td.data) else \
        Tensor.zeros(*td.shape, dtype=td.dtype, device=self.device)
    self._consts[id(td)] = t
    self._onnx_types[t.uop] = next(k for k, v in ONNX_TYPES.items() if v is td.onnx_type)
    if len(td.data) <= 8 * 64: self._pyvals[t.uop] = self._vals[t.uop] = td.to_list()  # small constants: shapes and axes, usually
    return t

  def _input(self, name:str, value:Any, vt:ValueType|None, dims:dict) -> Any:
    if vt is not None and vt.kind == "sequence": return [self._input(name, v, vt.inner, {}) for v in value]  # elements differ in shape
    if vt is not None and vt.kind == "optional":
      return None if value is None else self._input(name, value, vt.inner, dims)
    t = value if isinstance(value, Tensor) else Tensor(value, device=self.device) if not isinstance(value, list) else Tensor(value)
    if vt is None or vt.elem is None: return t
    if vt.elem.dtype is not None and t.dtype is not vt.elem.dtype:
      if type(value).__module__ == "numpy" or isinstance(value, Tensor):
        raise TypeError(f"input {name!r} is {t.dtype}, the model declares {vt.elem.name} ({vt.elem.dtype})")
      t = t.cast(vt.elem.dtype)
    if vt.shape is not None:
      if len(vt.shape) != t.ndim: raise ValueError(f"input {name!r} has shape {tuple(t.shape)}, the model declares rank {len(vt.shape)}: {vt.shape}")
      for want, got in zip(vt.shape, t.shape):
        if isinstance(want, int) and want != got: raise ValueError(f"input {name!r} has shape {tuple(t.shape)}, the model declares {vt.shape}")
        if isinstance(want, str):
          if dims.setdefault(want, got) != got:
            raise ValueError(f"dimension {want!r} is {dims[want]} in one input and {got} in input {name!r}")
      if any(isinstance(s, str) and s in self.variables for s in vt.shape):
        # a dynamic dimension: the data sits in a buffer sized by the Variable's maximum, seen through a bound view of it
        # (contiguous: a view of a larger input buffer is not what TinyJit replays)
        pads, view = [], []
        for want, got in zip(vt.shape, t.shape):
          v = self.variables.get(want) if isinstance(want, str) else None
          if v is not None and got > v.arg.vmax: raise ValueError(f"input {name!r}: dimension {want!r} is {got}, above its maximum {v.arg.vmax}")
          pads.append((0, v.arg.vmax - got) if v is not None else None)
          view.append((0, v.bind(got)) if v is not None else None)
        t = t.pad(pads).shrink(tuple(view)).contiguous()
    if vt.elem.fmt is None: self._onnx_types[t.uop] = next(k for k, v in ONNX_TYPES.items() if v is vt.elem)
    return t

  def __call__(self, inputs:dict[str, Any]|None=None, debug:int|None=None, **kw) -> dict[str, Any]:
    self.debug = getenv("DEBUGONNX", 0) if debug is None else debug
    return dict(zip(self.graph.outputs, self._run_model(self.prepare(inputs, **kw))))

  def _run_model(self, inputs:dict[str, Any]) -> list:
    self._vals = dict(self._pyvals)
    self._inputs = {t.uop for v in inputs.values() for t in (v if isinstance(v, list) else [v]) if isinstance(t, Tensor)}
    with _default_device(self.device): return self._run_graph(self.graph, {**self.initializers, **inputs})

  def prepare(self, inputs:dict[str, Any]|None=None, **kw) -> dict[str, Any]:
    """inputs as Tensors, checked against the model's declared dtypes and shapes, dynamic dimensions bound"""
    inputs = {**(inputs or {}), **kw}
    if missing := [n for n in self.graph.inputs if n not in inputs and n not in self.initializers]:
      raise ValueError(f"missing model inputs {missing}; the model takes {list(self.graph.inputs)}")
    if extra := [n for n in inputs if n not in self.graph.inputs and n not in self.initializers]:
      raise ValueError(f"unknown inputs {extra}; the model takes {list(self.graph.inputs)}")
    dims: dict[str, int] = {}
    return {name: self._input(name, v, self.graph.inputs.get(name), dims) for name, v in inputs.items()}

  def jit(self) -> Callable[..., dict[str, Any]]:
    """the model under TinyJit: call 1 runs it, call 2 captures its kernels, later calls replay them. Inputs are prepared outside
    the capture, so with dynamic= dimensions one capture serves every size up to the maximum"""
    names = list(self.graph.inputs)
    core = TinyJit(lambda *ts: tuple(self._run_model(dict(zip(names, ts)))))
    def run(inputs:dict[str, Any]|None=None, **kw) -> dict[str, Any]:
      prepared = self.prepare(inputs, **kw)
      return dict(zip(self.graph.outputs, core(*[prepared[n] for n in names])))
    return run

  def _reads_inputs(self, t:Tensor) -> bool:
    # a bound Variable (a dynamic size, e.g. through Shape) is per call too: reading it freezes the capture's size
    return any(u in self._inputs or u.op is Ops.BIND for u in t.uop.toposort())

  def _run_graph(self, g:Graph, env:dict[str, Any]) -> list:
    for name, td in g.initializers.items(): env.setdefault(name, self._const(td))
    ctx = RunContext(self)
    for i, node in enumerate(g.nodes):
      if (impl := self._impls.get(id(node))) is None:
        impl = self._impls[id(node)] = _checked(node, i, resolve(node.domain, node.op, self.model.opsets))
      if (missing := next((n for n in node.inputs if n and n not in env), None)) is not None: raise _undefined(g, i, missing)
      args = [env[n] if n else None for n in node.inputs]
      while args and args[-1] is None: args.pop()
      ctx.n_outputs, ctx.scope, ctx.index, ctx.node, ctx.args = len(node.outputs), env, i, node, args
      if self.debug: print(f"{f'[{g.name}] ' if g is not self.graph else ''}{i}: {node.op} {node.name!r} {_brief(node.attrs)}")
      try: ret = impl.fn(ctx, *args, **node.attrs) if impl.ctx else impl.fn(*args, **node.attrs)
      except Exception as e:
        if hasattr(e, "add_note"): e.add_note(f"in ONNX node {i} {node.op} {node.name!r} (inputs {node.inputs}, outputs {node.outputs})")
        raise
      rets = ret if isinstance(ret, tuple) else (ret,)
      if self.debug >= 2: print(f"\tinputs  {dict(zip(node.inputs, args))}\n\toutputs {dict(zip(node.outputs, rets))}")
      if len(rets) == 1 and isinstance(ret, Tensor) and ret.uop not in self._vals and \
         (vals := fold(node.op, args, lambda t: self._vals.get(t.uop), node.attrs, ret.dtype)) is not None:
        self._vals[ret.uop] = vals
      for name, v in zip(node.outputs, rets):
        if name: env[name] = v
    if (missing := next((n for n in g.outputs if n not in env), None)) is not None:
      raise ValueError(f"graph {g.name!r} output {missing!r} is not a graph input, an initializer or the output of any node")
    return [env[n] for n in g.outputs]

def _file_bytes(t:Tensor) -> bytes:
  """a model file held in a Tensor (upstream's OnnxRunner(Tensor(pathlib.Path(...)))): its bytes, whatever the device"""
  if t.dtype.itemsize != 1 or t.ndim != 1:
    raise TypeError(f"OnnxRunner takes a Tensor of the model file's bytes (1-D uint8), not {t.dtype} of shape {t.shape}")
  return bytes(t.data())

def _checked(node, i:int, impl:OpImpl) -> OpImpl:
  """impl, once the node's input count and attributes fit it: a clear error here instead of a python one from inside the op"""
  n_inputs = len(node.inputs) - next((k for k, n in enumerate(reversed(node.inputs)) if n), len(node.inputs))  # trailing "" are absent
  if (problem := check_node(impl, node.op, n_inputs, node.attrs)) is not None:
    raise ValueError(f"ONNX node {i} {node.op} {node.name!r}: {problem}")
  return impl

def _brief(attrs:dict) -> dict:
  # constants and subgraphs by name: their contents would flood the trace
  return {k: f"<{type(v).__name__} {getattr(v, 'name', '')!r}>" if isinstance(v, (TensorData, Graph)) else v for k, v in attrs.items()}

def _undefined(g:Graph, i:int, name:str) -> ValueError:
  """node i reads a name nothing before it defines: a later node's output (the nodes are not in topological order, or form a cycle)
  or nothing's at all"""
  node = g.nodes[i]
  later = next((f"node {j} {n.op} {n.name!r}" for j, n in enumerate(g.nodes) if j >= i and name in n.outputs), None)
  why = f"it is produced by {later}: the nodes must be in topological order, without cycles" if later else \
        "it is not a graph input, an initializer or the output of any node"
  return ValueError(f"ONNX node {i} {node.op} {node.name!r} reads input {name!r} before it is defined: {why}")

@contextlib.contextmanager
def _default_device(device:str|None):
  """the runner's device as Device.DEFAULT while a model runs: the tensors ops make from nothing (an arange, an identity, a constant's
  broadcast) land beside the model's own, not on the process's default device"""
  if device is None or (want := Device.canonicalize(device)) == (prev := Device.DEFAULT):
    yield
    return
  Device.DEFAULT = want
  try: yield
  finally: Device.DEFAULT = prev
