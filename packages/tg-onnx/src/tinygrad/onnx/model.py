"""A parsed ONNX model: the graph's nodes with python attribute values, opsets per domain, inputs/outputs with their types."""
from __future__ import annotations
import os
from dataclasses import dataclass, field
from typing import Any
from tinygrad.onnx.wire import ProtobufError, Msg
from tinygrad.onnx.proto import parse
from tinygrad.onnx.tensor_data import TensorData, OnnxType, tensor_data, onnx_type

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

def attribute_value(a:Msg, base_dir:str|None, where:str) -> Any:
  where = f"{where} attribute {a.name!r}"
  match a.type:
    case 1: return a.f
    case 2: return a.i
    case 3: return bytes(a.s).decode("utf-8", errors="replace")
    case 4: return tensor_data(a.t, base_dir, where) if a.t is not None else None
    case 5: return graph(a.g, base_dir, where) if a.g is not None else None
    case 6: return list(a.floats)
    case 7: return list(a.ints)
    case 8: return [bytes(s).decode("utf-8", errors="replace") for s in a.strings]
    case 9: return [tensor_data(t, base_dir, where) for t in a.tensors]
    case 10: return [graph(g, base_dir, where) for g in a.graphs]
    case 11: return a.sparse_tensor
    case 13: return value_type(a.tp, where)
    case 14: return [value_type(t, where) for t in a.type_protos]
  raise ProtobufError(f"{where}: unsupported attribute type {a.type}")

def graph(g:Msg, base_dir:str|None, where:str="GraphProto") -> Graph:
  inits = {t.name: tensor_data(t, base_dir, f"{where} initializer") for t in g.initializer}
  for s in g.sparse_initializer:
    if s.values is not None: inits[s.values.name] = sparse_to_dense(s, base_dir, f"{where} sparse_initializer")
  nodes = []
  for i, n in enumerate(g.node):
    at = f"{where} node {i} ({n.op_type} {n.name!r})"
    nodes.append(Node(n.op_type, _domain(n.domain), list(n.input), list(n.output),
                      {a.name: attribute_value(a, base_dir, at) for a in n.attribute}, n.name))
  return Graph(nodes, {v.name: value_type(v.type, f"{where} input {v.name!r}") for v in g.input if v.name not in inits},
               {v.name: value_type(v.type, f"{where} output {v.name!r}") for v in g.output}, inits, g.name)

def sparse_to_dense(s:Msg, base_dir:str|None, where:str) -> TensorData:
  """a SparseTensorProto as a dense TensorData: values scattered to flat (1-D) or coordinate (2-D) indices"""
  vals, idx = tensor_data(s.values, base_dir, where), tensor_data(s.indices, base_dir, where)
  n, dims, item = 1, tuple(s.dims), vals.dtype.itemsize
  for d in dims: n *= d
  if any(d < 0 for d in dims): raise ProtobufError(f"{where}: negative dimension in sparse dims {dims}")
  # the dense tensor is not in the file, so its size is not bounded by it: refuse what no real model needs
  if n * item > MAX_DENSE_BYTES: raise ProtobufError(f"{where}: sparse dims {dims} densify to {n*item} bytes (limit {MAX_DENSE_BYTES})")
  flat, ix = bytearray(n * item), idx.to_list()
  count = len(vals.data) // item
  if len(idx.shape) == 2:
    strides = [1] * len(dims)
    for k in range(len(dims) - 2, -1, -1): strides[k] = strides[k+1] * dims[k+1]
    ix = [sum(ix[r*len(dims) + k] * strides[k] for k in range(len(dims))) for r in range(count)]
  if len(ix) != count or any(not 0 <= i < n for i in ix): raise ProtobufError(f"{where}: sparse indices do not match the values or dims {dims}")
  for r, i in enumerate(ix): flat[i*item:(i+1)*item] = vals.data[r*item:(r+1)*item]
  return TensorData(s.values.name, vals.onnx_type, dims, bytes(flat))

def load_model(src:str|os.PathLike|bytes|memoryview) -> Model:
  """Parse an ONNX file (a path: external data resolves next to it) or its bytes."""
  if isinstance(src, (str, os.PathLike)):
    with open(src, "rb") as f: buf, base_dir = f.read(), os.path.dirname(os.path.abspath(src))
  else: buf, base_dir = src, None
  m = parse("ModelProto", buf)
  if m.graph is None: raise ProtobufError("ModelProto: the model has no graph (field 7)")
  opsets = {_domain(o.domain): o.version for o in m.opset_import} or {"": 1}
  return Model(graph(m.graph, base_dir, "ModelProto.graph"), opsets, m.ir_version, m.producer_name,
               {(f.domain, f.name): f for f in m.functions})
