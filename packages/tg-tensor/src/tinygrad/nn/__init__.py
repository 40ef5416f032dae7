"""tinygrad.nn: layers as plain classes holding Tensors (found by nn.state's get_parameters), and the optimizers in nn.optim."""
# tinygrad.nn spans distributions (tg-onnx ships tinygrad/nn/onnx.py): gather every tinygrad/nn folder
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

from tinygrad.nn import optim, state, datasets  # noqa: F401  (upstream code writes nn.optim.Adam, nn.state.get_parameters, nn.datasets.mnist())
from tinygrad.nn.linear import Linear, Embedding  # noqa: F401
from tinygrad.nn.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d  # noqa: F401
from tinygrad.nn.norm import BatchNorm, BatchNorm1d, BatchNorm2d, BatchNorm3d, LayerNorm, LayerNorm2d, GroupNorm, InstanceNorm, RMSNorm  # noqa: F401
from tinygrad.nn.recurrent import LSTMCell  # noqa: F401
