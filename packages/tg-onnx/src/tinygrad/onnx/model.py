"""A parsed ONNX model: the graph's nodes with python attribute values, opsets per domain, inputs/outputs with their types."""
from __future__ import annotations
import math, os
from dataclasses import dataclass, field
from typing import Any
from tinygrad.onnx.wire import ProtobufError, Msg
from tinygrad.onnx.proto import parse
from tinygrad.onnx.tensor_data import TensorData, OnnxType, tensor_data, onnx_type, checked_shape

MAX_DENSE_BYTES = 1 << 30

@dataclass
class ValueType:
  """the declared type of a graph input/output: kind "tensor", "sequence" or "optional"; shape entries are ints, names (str) or None"""
  kind: str
  elem: OnnxType|None = None
  shape: tuple|None = None
  inner: ValueType|None = None

@dataclass
class Node:
  op: str
  domain: str
  inputs: list[str]
  outputs: list[str]
  attrs: dict[str, Any]
  name: str = ""

@dataclass
class Graph:
  nodes: list[Node]
  inputs: dict[str, ValueType|None]     # graph inputs that are not initializers
  outputs: dict[str, ValueType|None]
  initializers: dict[str, TensorData]
  name: str = ""

@dataclass
class Model:
  graph: Graph
  opsets: dict[str, int]                 # domain ("" is ai.onnx) -> version
  ir_version: int = 0
  producer: str = ""
  functions: dict[tuple[str, str], Msg] = field(default_factory=dict)

def _domain(d:str) -> str: return "" if d == "ai.onnx" else d

def value_type(tp:Msg|None, where:str) -> ValueType|None:
  if tp is None: return None
  if tp.tensor_type is not None or tp.sparse_tensor_type is not None:
    tt = tp.tensor_type or tp.sparse_tensor_type
    shape = None if tt.shape is None else \
      tuple(d.dim_param if d.has("dim_param") else d.dim_value if d.has("dim_value") else None for d in tt.shape.dim)
    return ValueType("tensor", onnx_type(tt.elem_type, where) if tt.elem_type else None, shape)
  if tp.sequence_type is not None: return ValueType("sequence", inner=value_type(tp.sequence_type.elem_type, where))
  if tp.optional_type is not None: return ValueType("optional", inner=value_type(tp.optional_type.elem_type, where))
  return None

def attribute_value(a:Msg, base_dir:str|None, budget:DenseBudget, where:str) -> Any:
  where = f"{where} attribute {a.name!r}"
  match a.type:
    case 1: return a.f
    case 2: return a.i
    case 3: return bytes(a.s).decode("utf-8", errors="replace")
    case 4: return tensor_data(a.t, base_dir, where) if a.t is not None else None
    case 5: return graph(a.g, base_dir, budget, where) if a.g is not None else None
    case 6: return list(a.floats)
    case 7: return list(a.ints)
    case 8: return [bytes(s).decode("utf-8", errors="replace") for s in a.strings]
    case 9: return [tensor_data(t, base_dir, where) for t in a.tensors]
    case 10: return [graph(g, base_dir, budget, where) for g in a.graphs]
    case 11: return a.sparse_tensor
    case 13: return value_type(a.tp, where)
    case 14: return [value_type(t, where) for t in a.type_protos]
  raise ProtobufError(f"{where}: unsupported attribute type {a.type}")

def graph(g:Msg, base_dir:str|None, budget:DenseBudget, where:str="GraphProto") -> Graph:
  inits = {t.name: tensor_data(t, base_dir, f"{where} initializer") for t in g.initializer}
  for i, s in enumerate(g.sparse_initializer):
    td = sparse_to_dense(s, base_dir, f"{where} sparse_initializer {i}", budget)
    inits[td.name] = td
  nodes = []
  for i, n in enumerate(g.node):
    at = f"{where} node {i} ({n.op_type} {n.name!r})"
    nodes.append(Node(n.op_type, _domain(n.domain), list(n.input), list(n.output),
                      {a.name: attribute_value(a, base_dir, budget, at) for a in n.attribute}, n.name))
  return Graph(nodes, {v.name: value_type(v.type, f"{where} input {v.name!r}") for v in g.input if v.name not in inits},
               {v.name: value_type(v.type, f"{where} output {v.name!r}") for v in g.output}, inits, g.name)

class DenseBudget:
  """the bytes one model's sparse tensors may densify to, all together: the dense tensors are not in the file, so its size bounds
  nothing, and a per-tensor limit alone lets many small sparse initializers each ask for it"""
  def __init__(self): self.left = MAX_DENSE_BYTES
  def take(self, nbytes:int, where:str):
    if nbytes > self.left:
      raise ProtobufError(f"{where}: densifies to {nbytes} bytes, more than the {self.left} left of the {MAX_DENSE_BYTES}-byte limit "
                          "on all sparse tensors of a model")
    self.left -= nbytes

def _coordinate_positions(ix:list[int], nnz:int, dims:tuple[int, ...], where:str) -> list[int]:
  """row-major positions of [nnz, rank] coordinates, each checked against its own dim (a coordinate past its dim would alias another)"""
  rank, strides = len(dims), [math.prod(dims[k+1:]) for k in range(len(dims))]
  out = []
  for r in range(nnz):
    coord = ix[r*rank:(r+1)*rank]
    if not all(0 <= c < d for c, d in zip(coord, dims)): raise ProtobufError(f"{where}: sparse index {coord} is outside dims {dims}")
    out.append(sum(c * st for c, st in zip(coord, strides)))
  return out

def sparse_to_dense(s:Msg, base_dir:str|None, where:str, budget:DenseBudget|None=None) -> TensorData:
  """a SparseTensorProto as a dense TensorData: values [nnz] scattered to indices [nnz] (row-major positions) or [nnz, rank]
  (coordinates), as ONNX specifies; `budget` is shared by the sparse tensors of one model"""
  if s.values is None: raise ProtobufError(f"{where}: a sparse tensor needs values (field 1)")
  where = f"{where} {s.values.name!r}"
  if s.indices is None: raise ProtobufError(f"{where}: a sparse tensor needs indices (field 2)")
  vals, idx = tensor_data(s.values, base_dir, f"{where} values"), tensor_data(s.indices, base_dir, f"{where} indices")
  if vals.dtype is None: raise ProtobufError(f"{where}: sparse values of type {vals.onnx_type.name} have no tinygrad dtype")
  if idx.onnx_type.name != "INT64": raise ProtobufError(f"{where}: sparse indices are {idx.onnx_type.name}; ONNX requires INT64")
  if len(vals.shape) != 1: raise ProtobufError(f"{where}: sparse values have shape {vals.shape}; ONNX requires [nnz]")
  dims, nnz, item = checked_shape(s.dims, where), vals.shape[0], vals.dtype.itemsize
  if idx.shape not in ((nnz,), (nnz, len(dims))):
    raise ProtobufError(f"{where}: sparse indices have shape {idx.shape}; {nnz} values in dims {dims} need [{nnz}] or [{nnz}, {len(dims)}]")
  n = math.prod(dims)
  (budget or DenseBudget()).take(n * item, where)
  positions = idx.to_list() if len(idx.shape) == 1 else _coordinate_positions(idx.to_list(), nnz, dims, where)
  if not all(0 <= i < n for i in positions): raise ProtobufError(f"{where}: a sparse index is outside the {n} elements of dims {dims}")
  dense = bytearray(n * item)
  for r, i in enumerate(positions): dense[i*item:(i+1)*item] = vals.data[r*item:(r+1)*item]
  return TensorData(s.values.name, vals.onnx_type, dims, dense)

def load_model(src:str|os.PathLike|bytes|memoryview) -> Model:
  """Parse an ONNX file (a path: external data resolves next to it) or its bytes."""
  if isinstance(src, (str, os.PathLike)):
    with open(src, "rb") as f: buf, base_dir = f.read(), os.path.dirname(os.path.abspath(src))
  else: buf, base_dir = src, None
  m = parse("ModelProto", buf)
  if m.graph is None: raise ProtobufError("ModelProto: the model has no graph (field 7)")
  opsets = {_domain(o.domain): o.version for o in m.opset_import} or {"": 1}
  return Model(graph(m.graph, base_dir, DenseBudget(), "ModelProto.graph"), opsets, m.ir_version, m.producer_name,
               {(f.domain, f.name): f for f in m.functions})
