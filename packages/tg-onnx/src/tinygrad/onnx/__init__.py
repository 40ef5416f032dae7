"""ONNX models on tinygrad: a protobuf reader of its own (no onnx/protobuf needed), the op set by opset version, and OnnxRunner.
`python -m tinygrad.onnx model.onnx` describes and runs a model."""
from tinygrad.onnx.wire import ProtobufError
from tinygrad.onnx.model import load_model, Model
from tinygrad.onnx.runner import OnnxRunner
from tinygrad.onnx.ops import UnsupportedOp

__all__ = ["OnnxRunner", "load_model", "Model", "ProtobufError", "UnsupportedOp"]
