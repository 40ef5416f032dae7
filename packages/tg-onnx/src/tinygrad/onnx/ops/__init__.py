"""The ONNX op set: importing this package registers every op module's implementations in the registry."""
from tinygrad.onnx.ops.registry import op, resolve, supported_ops, OpImpl, UnsupportedOp
from tinygrad.onnx.ops import elementwise, movement, reduce, nn, quant, control, resize, recurrent, misc, microsoft, training  # noqa: F401
from tinygrad.onnx.ops import gridsample, roialign, deformconv, tfidf, flexattention  # noqa: F401  (registration)

__all__ = ["op", "resolve", "supported_ops", "OpImpl", "UnsupportedOp"]
