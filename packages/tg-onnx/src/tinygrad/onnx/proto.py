"""The ONNX messages a model uses, as wire-format schemas (field numbers from onnx.proto). Unlisted fields are skipped."""
from tinygrad.onnx.wire import Schema, decode, Msg

R = "repeated"
Schema("StringStringEntryProto", {1: ("key", "string"), 2: ("value", "string")})
Schema("OperatorSetIdProto", {1: ("domain", "string"), 2: ("version", "int")})
Schema("Segment", {1: ("begin", "int"), 2: ("end", "int")})
Schema("TensorProto", {1: ("dims", "int", R), 2: ("data_type", "sint32"), 3: ("segment", "Segment"), 4: ("float_data", "float", R),
                       5: ("int32_data", "sint32", R), 6: ("string_data", "bytes", R), 7: ("int64_data", "int", R), 8: ("name", "string"),
                       9: ("raw_data", "bytes"), 10: ("double_data", "double", R), 11: ("uint64_data", "uint", R),
                       13: ("external_data", "StringStringEntryProto", R), 14: ("data_location", "sint32")})
Schema("SparseTensorProto", {1: ("values", "TensorProto"), 2: ("indices", "TensorProto"), 3: ("dims", "int", R)})
Schema("Dimension", {1: ("dim_value", "int"), 2: ("dim_param", "string")})
Schema("TensorShapeProto", {1: ("dim", "Dimension", R)})
Schema("TypeProto.Tensor", {1: ("elem_type", "sint32"), 2: ("shape", "TensorShapeProto")})
Schema("TypeProto.Sequence", {1: ("elem_type", "TypeProto")})
Schema("TypeProto.Map", {1: ("key_type", "sint32"), 2: ("value_type", "TypeProto")})
Schema("TypeProto.Optional", {1: ("elem_type", "TypeProto")})
Schema("TypeProto", {1: ("tensor_type", "TypeProto.Tensor"), 4: ("sequence_type", "TypeProto.Sequence"), 5: ("map_type", "TypeProto.Map"),
                     9: ("optional_type", "TypeProto.Optional"), 8: ("sparse_tensor_type", "TypeProto.Tensor")})
Schema("ValueInfoProto", {1: ("name", "string"), 2: ("type", "TypeProto")})
Schema("AttributeProto", {1: ("name", "string"), 21: ("ref_attr_name", "string"), 20: ("type", "sint32"), 2: ("f", "float"), 3: ("i", "int"),
                          4: ("s", "bytes"), 5: ("t", "TensorProto"), 6: ("g", "GraphProto"), 22: ("sparse_tensor", "SparseTensorProto"),
                          14: ("tp", "TypeProto"), 7: ("floats", "float", R), 8: ("ints", "int", R), 9: ("strings", "bytes", R),
                          10: ("tensors", "TensorProto", R), 11: ("graphs", "GraphProto", R),
                          23: ("sparse_tensors", "SparseTensorProto", R), 15: ("type_protos", "TypeProto", R)})
Schema("NodeProto", {1: ("input", "string", R), 2: ("output", "string", R), 3: ("name", "string"), 4: ("op_type", "string"),
                     7: ("domain", "string"), 5: ("attribute", "AttributeProto", R)})
Schema("GraphProto", {1: ("node", "NodeProto", R), 2: ("name", "string"), 5: ("initializer", "TensorProto", R),
                      15: ("sparse_initializer", "SparseTensorProto", R), 11: ("input", "ValueInfoProto", R),
                      12: ("output", "ValueInfoProto", R), 13: ("value_info", "ValueInfoProto", R)})
Schema("FunctionProto", {1: ("name", "string"), 4: ("input", "string", R), 5: ("output", "string", R), 6: ("attribute", "string", R),
                         11: ("attribute_proto", "AttributeProto", R), 7: ("node", "NodeProto", R),
                         9: ("opset_import", "OperatorSetIdProto", R), 10: ("domain", "string")})
Schema("ModelProto", {1: ("ir_version", "int"), 8: ("opset_import", "OperatorSetIdProto", R), 2: ("producer_name", "string"),
                      3: ("producer_version", "string"), 4: ("domain", "string"), 5: ("model_version", "int"), 7: ("graph", "GraphProto"),
                      14: ("metadata_props", "StringStringEntryProto", R), 25: ("functions", "FunctionProto", R)})

def parse(name:str, buf:bytes|memoryview) -> Msg:
  """Decode one message by its ONNX name ("ModelProto", "TensorProto", ...)."""
  return decode(Schema.registry[name], buf)
