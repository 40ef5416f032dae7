"""The loader tests measure what a load allocates (tracemalloc): the default device is used once first, so that the runtime it imports
on first use (megabytes of modules) is not counted against whichever load comes first."""
import pytest

@pytest.fixture(scope="session", autouse=True)
def _device_in_use():
  from tinygrad import Tensor
  Tensor([1]).realize()
