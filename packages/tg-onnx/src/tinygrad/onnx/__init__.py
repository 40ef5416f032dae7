"""ONNX models on tinygrad: protobuf reader, op set and runner. Not in this version yet; it lands in a later one."""
