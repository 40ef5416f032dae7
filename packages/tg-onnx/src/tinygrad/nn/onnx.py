"""Compatibility path: upstream tinygrad users import ONNX support from tinygrad.nn.onnx."""
from tinygrad.onnx import *  # noqa: F401,F403
