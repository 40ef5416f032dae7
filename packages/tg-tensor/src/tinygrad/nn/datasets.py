"""Datasets tinygrad programs train on: MNIST and Fashion-MNIST, downloaded once into the cache (helpers.fetch) and read from their IDX
files, whose header (magic number, sizes) is checked against the bytes that follow."""
from __future__ import annotations
import struct
from tinygrad.tensor import Tensor
from tinygrad.helpers import fetch, prod

MNIST_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
FASHION_MNIST_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"

def _idx_ubyte(url:str, ndim:int, device) -> Tensor:
  """an IDX file of unsigned bytes (magic 0x0000080N, N dims as big-endian uint32) as a uint8 Tensor of its shape"""
  data = fetch(url, gunzip=True).read_bytes()
  head = 4 + 4 * ndim
  if len(data) < head or data[:4] != bytes((0, 0, 8, ndim)):
    raise ValueError(f"{url}: not an IDX file of {ndim}-d unsigned bytes (starts {data[:4].hex()}, want 000008{ndim:02x})")
  shape = struct.unpack(f">{ndim}I", data[4:head])
  if len(data) - head != prod(shape): raise ValueError(f"{url}: header says {shape}, {prod(shape)} bytes, but {len(data) - head} follow")
  return Tensor(data[head:], device=device).reshape(shape)

def mnist(device=None, fashion:bool=False) -> tuple[Tensor, Tensor, Tensor, Tensor]:
  """(train images (60000, 1, 28, 28), train labels (60000,), test images (10000, 1, 28, 28), test labels (10000,)), all uint8"""
  base = FASHION_MNIST_URL if fashion else MNIST_URL
  def images(name:str) -> Tensor: return (x := _idx_ubyte(base + name, 3, device)).reshape(x.shape[0], 1, *x.shape[1:])
  return (images("train-images-idx3-ubyte.gz"), _idx_ubyte(base + "train-labels-idx1-ubyte.gz", 1, device),
          images("t10k-images-idx3-ubyte.gz"), _idx_ubyte(base + "t10k-labels-idx1-ubyte.gz", 1, device))
